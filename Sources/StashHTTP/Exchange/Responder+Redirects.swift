import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Redirects followed by the cache itself, so that each hop is cached by its own rules: a permanent
/// redirect (301, 308) is stored like any response cacheable by default, and is then followed from
/// the store without asking the network (RFC 9110 §15.4, RFC 9111 §3).
///
/// ``URLSessionTransport`` does not follow redirects (its session's delegate declines them), which
/// is what lets the cache see them; a transport that follows redirects itself hides them, and the
/// cache then stores only the final response, under the URL first asked for.
extension Responder {
    /// The most redirects followed for one request, as browsers allow.
    static let maximumRedirects = 20

    /// Answers `request`, following redirects when ``HTTPCacheConfiguration/followsRedirects`` is on.
    func perform(_ request: URLRequest, options: HTTPRequestOptions) async throws -> Outcome {
        var request = request
        var outcome = try await performOneHop(request, options: options)
        guard rules.configuration.followsRedirects else { return outcome }
        for _ in 0..<Self.maximumRedirects {
            guard let next = Self.redirect(from: request, outcome.response) else { return outcome }
            request = next
            outcome = try await performOneHop(request, options: options)
        }
        guard Self.redirect(from: request, outcome.response) == nil else {
            throw HTTPCacheError.network(underlying: URLError(.httpTooManyRedirects))
        }
        return outcome
    }

    /// The request a redirect response leads to, as browsers and `URLSession` make it; nil when the
    /// response is no redirect (or has no usable `Location`).
    ///
    /// 303, and 301/302 after a POST, become a GET without a body; 307 and 308 keep method and body.
    /// `Authorization` and `Cookie` are not carried to another origin.
    static func redirect(from request: URLRequest, _ response: CachedResponse) -> URLRequest? {
        guard [301, 302, 303, 307, 308].contains(response.statusCode), let location = response.headers["location"],
              let current = request.url, let target = URL(string: location, relativeTo: current)?.absoluteURL,
              let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return nil }
        var next = request
        next.url = target
        let method = (request.httpMethod ?? "GET").uppercased()
        if response.statusCode == 303 && method != "HEAD" || (response.statusCode == 301 || response.statusCode == 302) && method == "POST" {
            next.httpMethod = "GET"
            next.httpBody = nil
            for field in ["Content-Type", "Content-Length", "Content-Encoding"] { next.setValue(nil, forHTTPHeaderField: field) }
        }
        let sameOrigin = target.scheme?.lowercased() == current.scheme?.lowercased()
            && target.host?.lowercased() == current.host?.lowercased() && target.port == current.port
        if !sameOrigin {
            for field in ["Authorization", "Cookie"] { next.setValue(nil, forHTTPHeaderField: field) }
        }
        return next
    }
}
