import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import StashHTTP

/// An in-memory transport: answers with the response set for it, records every request, and can
/// be switched off to behave like an unreachable server.
final class FakeTransport: HTTPTransport, @unchecked Sendable {
    // @unchecked Sendable: every stored property is only touched under `lock`.
    private let lock = NSLock()
    private var handler: @Sendable (URLRequest) -> HTTPTransportResponse = { _ in HTTPTransportResponse(statusCode: 200) }
    private var failure: (any Error)?
    private var requests: [URLRequest] = []

    /// Answers every request with `response`.
    func respond(_ status: Int = 200, headers: HTTPHeaders = [:], body: String = "") {
        let response = HTTPTransportResponse(statusCode: status, headers: headers, body: Data(body.utf8))
        respond { _ in response }
    }

    /// Answers with whatever `handler` returns for the request.
    func respond(_ handler: @escaping @Sendable (URLRequest) -> HTTPTransportResponse) {
        lock.lock()
        self.handler = handler
        failure = nil
        lock.unlock()
    }

    /// Fails every request with `error` (a refused connection by default), until the next `respond`.
    func goOffline(_ error: any Error = URLError(.cannotConnectToHost)) {
        lock.lock()
        failure = error
        lock.unlock()
    }

    var sentRequests: [URLRequest] {
        lock.lock()
        defer { lock.unlock() }
        return requests
    }

    var requestCount: Int { sentRequests.count }
    var lastRequest: URLRequest? { sentRequests.last }

    func send(_ request: URLRequest) async throws -> HTTPTransportResponse {
        let (handler, failure) = lock.withLock {
            requests.append(request)
            return (self.handler, self.failure)
        }
        if let failure { throw failure }
        return handler(request)
    }
}
