import Foundation

/// Turns request URLs that name the same resource into one string, for cache keys.
///
/// Scheme and host are lower-cased, the default port (80 for http, 443 for https) is dropped, an
/// empty path becomes `/`, the path is otherwise kept as sent, query items are sorted by name
/// (items of one name keep their order) and percent-encoded with one fixed set, and the fragment (never sent to the server) and any user
/// name or password (which must not end up in the store's journal) are dropped. Linux `URLCache`
/// keys by host, port and path only, so `?page=1` would answer `?page=2`; here the query is part
/// of the key.
///
/// The parts are taken from the URL's own text (`absoluteString`, RFC 3986's grammar), not from
/// `URLComponents`, whose parsing changed with macOS 14 and iOS 17 (RFC 3986 instead of RFC 1738/1808:
/// how it decodes an IDN host, reads a port or percent-encodes) and may change again: a key must not
/// change when the OS does, or an update would empty every cache. The keys are the ones
/// `URLComponents` gave on Linux with Swift 6.0–6.3 (pinned by `CacheKeyStabilityTests`): a host is
/// written with its Unicode labels percent-encoded (`xn--bcher-kva.de` and `bücher.de` are both
/// `b%c3%bccher.de`), lower-cased.
enum URLNormalizer {
    private static let defaultPorts = ["http": 80, "https": 443, "ws": 80, "wss": 443]

    /// The normalized form of `url`, or nil when it has no scheme.
    static func normalize(_ url: URL) -> String? {
        let text = url.absoluteString
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let scheme = text[..<colon].lowercased()
        guard let first = scheme.unicodeScalars.first, ("a"..."z").contains(first),
              scheme.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0) })
        else { return nil }
        // RFC 3986 §3: scheme ":" ["//" authority] path ["?" query] ["#" fragment].
        var rest = text[text.index(after: colon)...]
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        var query: Substring?
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        var result = scheme + "://"
        if rest.hasPrefix("//") {
            rest = rest.dropFirst(2)
            let end = rest.firstIndex(of: "/") ?? rest.endIndex
            let (host, port) = hostAndPort(of: rest[..<end])
            result += host
            if let port, port != defaultPorts[scheme].map(String.init) { result += ":" + port }
            rest = rest[end...]
        }
        result += rest.isEmpty ? "/" : rest
        if let query = normalizedQuery(query.map(String.init)) { result += "?" + query }
        return result
    }

    /// The host (lower-cased, Unicode labels percent-encoded) and the port (without leading zeros; nil
    /// when there is none or it is empty) of an authority; user name and password are dropped.
    private static func hostAndPort(of authority: Substring) -> (host: String, port: String?) {
        var hostPort = authority
        if let at = authority.lastIndex(of: "@") { hostPort = authority[authority.index(after: at)...] }
        var host = hostPort
        var port: Substring?
        if hostPort.hasPrefix("["), let close = hostPort.firstIndex(of: "]") { // an IP literal: [v6], its colons are no port
            host = hostPort[...close]
            let after = hostPort[hostPort.index(after: close)...]
            if after.hasPrefix(":") { port = after.dropFirst() }
        } else if let colon = hostPort.lastIndex(of: ":") {
            host = hostPort[..<colon]
            port = hostPort[hostPort.index(after: colon)...]
        }
        var portText: String?
        if let port, !port.isEmpty {
            // Digits as a number (`:0443` is 443); anything else as written.
            let digits = port.drop { $0 == "0" }
            portText = port.allSatisfy(\.isASCIIDigit) ? (digits.isEmpty ? "0" : String(digits)) : String(port)
        }
        return (normalizedHost(host), portText)
    }

    /// `host` with every `xn--` label decoded (IDNA's ASCII form), then every non-ASCII byte
    /// percent-encoded, lower-cased: one spelling for a host written in Unicode, in punycode or
    /// percent-encoded.
    private static func normalizedHost(_ host: Substring) -> String {
        guard !host.hasPrefix("[") else { return host.lowercased() }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false).map { label -> String in
            guard label.lowercased().hasPrefix("xn--"), let decoded = Punycode.decode(label.dropFirst(4)) else { return String(label) }
            return decoded
        }
        var result = ""
        for byte in labels.joined(separator: ".").utf8 {
            if byte < 0x80 {
                result.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                result += "%" + String(byte, radix: 16, uppercase: true)
            }
        }
        return result.lowercased()
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

private extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
