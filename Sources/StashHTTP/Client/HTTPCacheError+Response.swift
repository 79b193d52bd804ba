import Foundation

extension HTTPCacheError {
    /// The HTTP answer RFC 9111 prescribes for this error, for code that must hand a response on
    /// instead of an error (a `URLProtocol`, a local proxy): for ``notCached(_:)``, a `504 Gateway
    /// Timeout` with an empty body, as a cache answers `only-if-cached` with nothing stored
    /// (RFC 9111 §5.2.1.7). nil for the other cases, which have no such answer.
    ///
    /// The cache itself throws ``notCached(_:)`` rather than returning this response, so that Swift
    /// callers can never mistake it for one the server sent.
    public var equivalentResponse: HTTPTransportResponse? {
        guard case .notCached = self else { return nil }
        return HTTPTransportResponse(statusCode: 504, headers: ["Content-Length": "0", "Cache-Control": "no-store"])
    }
}
