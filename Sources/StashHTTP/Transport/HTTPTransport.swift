public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Sends one HTTP request and returns the server's response, whatever its status.
///
/// ``URLSessionTransport`` is the real one; tests and apps with their own networking stack can
/// supply another (an in-memory fake, a different client library). A transport must not cache:
/// the ``HTTPCache`` decides what is reused, and must see every conditional exchange itself.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the response.
    /// - Parameter request: The request, with any conditional headers the cache added.
    /// - Returns: The response, including 304 and error statuses.
    /// - Throws: The transport's error when no response arrived (for example a `URLError` for a
    ///   refused connection or a timeout).
    func send(_ request: URLRequest) async throws -> HTTPTransportResponse
}

/// What a transport got back: status, header fields and body.
public struct HTTPTransportResponse: Sendable, Hashable {
    /// The status code.
    public var statusCode: Int
    /// The header fields.
    public var headers: HTTPHeaders
    /// The body (empty for HEAD, 204 and 304).
    public var body: Data

    /// Creates a response.
    /// - Parameters:
    ///   - statusCode: The status code.
    ///   - headers: The header fields.
    ///   - body: The body.
    public init(statusCode: Int, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data()) {
        self.statusCode = statusCode
        self.headers = headers
        self.body = body
    }
}
