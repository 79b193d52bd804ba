import Foundation

/// Whether a response may be stored by a private cache (RFC 9111 §3) and what an unsafe request
/// invalidates (§4.4).
enum StoringRules {
    /// Statuses that are cacheable by default (RFC 9110 §15.1). A 206 is stored as an incomplete
    /// response, which answers only ranges it holds (RFC 9111 §3.3).
    static let heuristicallyCacheableStatuses: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]

    /// Methods whose responses the cache stores.
    static let cacheableMethods: Set<String> = ["GET", "HEAD"]

    /// Methods that never change the resource (RFC 9110 §9.2.1); any other method invalidates.
    static let safeMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE"]

    /// Why a response is not stored; nil when it may be.
    /// - Parameters:
    ///   - method: The request method, upper-cased.
    ///   - requestCacheControl: The request's `Cache-Control`.
    ///   - response: The response.
    ///   - hasTimeToLive: Whether the caller set a time to live, which overrides the server's
    ///     `no-store`, `no-cache` and the need for explicit freshness.
    static func reasonNotToStore(method: String, requestCacheControl: CacheControl,
                                 response: HTTPTransportResponse, hasTimeToLive: Bool) -> String? {
        guard cacheableMethods.contains(method) else { return "method \(method) is not cached" }
        if requestCacheControl.noStore { return "the request says no-store" }
        let cacheControl = CacheControl(response.headers["cache-control"])
        if cacheControl.noStore, !hasTimeToLive { return "the response says no-store" }
        if StoredResponse.varyNames(response.headers).contains("*") { return "Vary: * matches no later request" }
        let status = response.statusCode
        if status == 206, response.headers["content-range"].flatMap(ContentRange.init)?.completeLength == nil {
            return "a 206 without one Content-Range of known complete length cannot be combined"
        }
        if status == 304 || status < 200 { return "status \(status) is not a complete response" }
        if heuristicallyCacheableStatuses.contains(status) { return nil }
        if hasTimeToLive, (200..<400).contains(status) { return nil }
        let explicit = cacheControl.maxAge != nil || response.headers["expires"] != nil
            || cacheControl.has("public") || cacheControl.has("private")
        return explicit ? nil : "status \(status) needs explicit freshness to be stored"
    }
}
