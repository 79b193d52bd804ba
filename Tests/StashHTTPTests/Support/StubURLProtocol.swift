import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A `URLProtocol` that answers requests to `*.stub` hosts from a table, for unit tests of the
/// `URLSession` transport that need no real server. Each test uses its own host, so tests running
/// in parallel never see each other's answers.
final class StubURLProtocol: URLProtocol {
    // Instances are driven by URLSession on its own threads; the shared table is only touched under `lock`.
    enum Answer: Sendable {
        case response(status: Int, headers: [String: String], body: Data)
        case failure(URLError.Code)
    }

    private struct Table {
        var answers: [String: Answer] = [:]
        var requests: [String: [URLRequest]] = [:]
    }

    nonisolated(unsafe) private static var table = Table()
    private static let lock = NSLock()

    /// A host of its own for one test.
    static func makeHost() -> String { "t\(UUID().uuidString.prefix(8).lowercased()).stub" }

    static func answer(_ host: String, with answer: Answer) {
        lock.withLock { table.answers[host] = answer }
    }

    static func requests(to host: String) -> [URLRequest] {
        lock.withLock { table.requests[host] ?? [] }
    }

    /// A session configuration that routes requests through this protocol.
    static var configuration: URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [StubURLProtocol.self]
        return configuration
    }

    override class func canInit(with request: URLRequest) -> Bool {
        request.url?.host?.hasSuffix(".stub") == true
    }

    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        let host = request.url?.host ?? ""
        let answer = Self.lock.withLock {
            Self.table.requests[host, default: []].append(request)
            return Self.table.answers[host]
        }
        switch answer {
        case .response(let status, let headers, let body)?:
            let response = HTTPURLResponse(url: request.url!, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)!
            client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
            client?.urlProtocol(self, didLoad: body)
            client?.urlProtocolDidFinishLoading(self)
        case .failure(let code)?:
            client?.urlProtocol(self, didFailWithError: URLError(code))
        case nil:
            client?.urlProtocol(self, didFailWithError: URLError(.cannotFindHost))
        }
    }

    override func stopLoading() {}
}
