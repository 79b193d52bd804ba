import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

/// Every way a server can fail to answer counts as "offline": the stored response is served (and
/// `stale-if-error` honoured), on Linux and Apple platforms alike.
@Suite("Transport failures are offline")
struct TransportFailureTests {
    enum Failure: String, CaseIterable, Sendable {
        case closedWithoutReply, reset, refused, timedOut
    }

    /// Stores a response that is stale after one second and may be served stale for ten minutes after
    /// an error even though it says `must-revalidate`, then makes the server fail in `failure`'s way.
    @Test("a stored response is served when the server fails to answer", arguments: Failure.allCases)
    func servedStale(failure: Failure) async throws {
        let fixture = try LoopbackFixture()
        let headers = [("Cache-Control", "max-age=1, must-revalidate, stale-if-error=600")]
        fixture.server.route("/feed", headers: headers, body: "feed v1")
        _ = try await fixture.cache.response(for: fixture.url("/feed"))
        fixture.clock.advance(by: 60)
        var request = fixture.request("/feed")
        switch failure {
        case .closedWithoutReply: fixture.server.route("/feed") { _ in .init(wire: .closeWithoutReply) }
        case .reset: fixture.server.route("/feed") { _ in .init(wire: .reset) }
        case .refused: fixture.server.stop()
        case .timedOut:
            fixture.server.route("/feed", headers: headers, body: "too late", delay: 5)
            request.timeoutInterval = 0.5
        }
        let response = try await fixture.cache.response(for: request)
        #expect(response.text == "feed v1")
        guard case .stale(let error) = response.source else { Issue.record("got \(response.source)"); return }
        #expect(HTTPCacheConfiguration.isConnectionError(error), "\(error)")
    }

    @Test("with nothing stored, a closed connection is a network error that says it was a connection failure")
    func closedWithoutReplyAndNothingStored() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/never") { _ in .init(wire: .closeWithoutReply) }
        let error = await cacheError { _ = try await fixture.cache.response(for: fixture.url("/never")) }
        guard case .network(let underlying) = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(HTTPCacheConfiguration.isConnectionError(underlying))
    }

    @Test("the URLError codes of every connection failure, on either platform, count as offline", arguments: [
        URLError.Code.cannotConnectToHost,  // refused; no route (both platforms)
        .networkConnectionLost,             // reset (both); closed without reply (Apple)
        .badServerResponse,                 // closed without reply (Linux: "Empty reply from server")
        .timedOut,
        .cannotFindHost, .dnsLookupFailed,  // DNS
        .notConnectedToInternet,            // no network (Apple)
        .cannotParseResponse,
    ])
    func offlineURLErrors(code: URLError.Code) {
        #expect(HTTPCacheConfiguration.isConnectionError(URLError(code)))
    }

    @Test("POSIX connection errors from a custom transport count as offline", arguments: [
        POSIXErrorCode.ECONNREFUSED, .ECONNRESET, .ECONNABORTED, .EPIPE, .ETIMEDOUT, .EHOSTUNREACH, .ENETUNREACH, .ENETDOWN,
    ])
    func offlinePOSIXErrors(code: POSIXErrorCode) {
        #expect(HTTPCacheConfiguration.isConnectionError(POSIXError(code)))
        #expect(HTTPCacheConfiguration.isConnectionError(NSError(domain: NSPOSIXErrorDomain, code: Int(code.rawValue))))
    }

    @Test("cancellation and errors that are not about the connection do not count", arguments: [
        URLError.Code.cancelled, .badURL, .unsupportedURL, .cannotDecodeContentData, .userAuthenticationRequired,
    ])
    func notOffline(code: URLError.Code) {
        #expect(!HTTPCacheConfiguration.isConnectionError(URLError(code)))
        #expect(!HTTPCacheConfiguration.isConnectionError(CancellationError()))
    }
}
