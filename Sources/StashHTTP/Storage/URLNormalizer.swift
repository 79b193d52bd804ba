import Foundation

/// Turns request URLs that name the same resource into one string, for cache keys.
///
/// Scheme and host are lower-cased, the default port (80 for http, 443 for https) is dropped, an
/// empty path becomes `/`, the path is otherwise kept as sent, query items are sorted by name
/// (items of one name keep their order) and percent-encoded with one fixed set, and the fragment (never sent to the server) and any user
/// name or password (which must not end up in the store's journal) are dropped. Linux `URLCache`
/// keys by host, port and path only, so `?page=1` would answer `?page=2`; here the query is part
/// of the key.
enum URLNormalizer {
    private static let defaultPorts = ["http": 80, "https": 443, "ws": 80, "wss": 443]

    /// The normalized form of `url`, or nil when it has no scheme.
    static func normalize(_ url: URL) -> String? {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: true),
              let scheme = components.scheme?.lowercased(), !scheme.isEmpty else { return nil }
        var result = scheme + "://"
        if let host = components.percentEncodedHost?.lowercased() { result += host }
        if let port = components.port, port != defaultPorts[scheme] { result += ":\(port)" }
        let path = components.percentEncodedPath
        result += path.isEmpty ? "/" : path
        if let query = normalizedQuery(components.percentEncodedQuery) { result += "?" + query }
        return result
    }

    /// Query items decoded, re-encoded with the unreserved set and sorted by name. Items that share a
    /// name keep the order they were sent in: `?sort=date&sort=name` is an ordered list to many servers,
    /// and must not share an entry with `?sort=name&sort=date`. An item without `=` stays distinct from
    /// one with an empty value. `+` is kept literally: only HTML form encoding reads it as a space, and
    /// the server decides which it speaks.
    private static func normalizedQuery(_ query: String?) -> String? {
        guard let query, !query.isEmpty else { return nil }
        let items = query.split(separator: "&", omittingEmptySubsequences: true).map { item -> (name: String, value: String?) in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = canonical(String(parts[0]))
            return (name, parts.count > 1 ? canonical(String(parts[1])) : nil)
        }
        guard !items.isEmpty else { return nil }
        // The position breaks ties explicitly, so the order of a repeated name never depends on
        // whether the sort happens to be stable.
        return items.enumerated()
            .sorted { ($0.element.name, $0.offset) < ($1.element.name, $1.offset) }
            .map { _, item in item.value.map { item.name + "=" + $0 } ?? item.name }
            .joined(separator: "&")
    }

    /// A literal `+` stays `+` and an encoded one stays `%2B`: a form-decoding server reads them differently.
    private static func canonical(_ part: String) -> String {
        part.split(separator: "+", omittingEmptySubsequences: false)
            .map { piece in PercentEncoding.encode(String(piece).removingPercentEncoding ?? String(piece)) }
            .joined(separator: "+")
    }
}
