import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The storage keys of the HTTP cache, readable strings so that maintenance can select entries by
/// namespace or URL prefix from `Storage.allKeys` without reading any value.
///
/// A response is stored under `http-response <namespace> <METHOD> <normalized URL> <vary values>`, and
/// the `Vary` header names last seen for a (namespace, method, URL) under
/// `http-vary <namespace> <METHOD> <normalized URL>`: `Vary` is only known once a response has
/// arrived, so a lookup first reads the names, then picks the variant by the request's values.
/// Spaces separate the parts; none can occur inside one (the namespace and the vary values are
/// percent-encoded, a normalized URL has no spaces).
///
/// A partition (one user's or one session's responses, see ``HTTPRequestOptions/partition``) follows
/// the namespace after a `|`: `<namespace>|<partition>`. Both are percent-encoded, which always
/// encodes `|`, so no namespace or partition can spell another pair, and keys written before
/// partitions existed read as the empty partition.
struct CacheKey: Hashable, Sendable {
    enum Kind: String, Sendable {
        case response = "http-response"
        case vary = "http-vary"
    }

    var kind: Kind
    var namespace: String
    /// The partition within the namespace; empty for responses every partition shares.
    var partition: String = ""
    var method: String
    /// The normalized URL (see ``URLNormalizer``).
    var url: String
    /// The selected request header values, encoded; empty when the response has no `Vary`.
    var variant: String = ""

    /// The key string stored in the `Storage`.
    var rawValue: String {
        var scope = PercentEncoding.encode(namespace)
        if !partition.isEmpty { scope += "|" + PercentEncoding.encode(partition) }
        var parts = [kind.rawValue, scope, method, url]
        if kind == .response { parts.append(variant) }
        return parts.joined(separator: " ")
    }

    /// The vary-names record of the same (namespace, method, URL).
    var varyRecordKey: CacheKey { CacheKey(kind: .vary, namespace: namespace, partition: partition, method: method, url: url) }

    init(kind: Kind, namespace: String, partition: String = "", method: String, url: String, variant: String = "") {
        self.kind = kind
        self.namespace = namespace
        self.partition = partition
        self.method = method
        self.url = url
        self.variant = variant
    }

    /// Parses a stored key; nil for keys the HTTP cache did not write.
    init?(rawValue: String) {
        let parts = rawValue.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard let first = parts.first, let kind = Kind(rawValue: first) else { return nil }
        guard parts.count == (kind == .response ? 5 : 4) else { return nil }
        let scope = parts[1].split(separator: "|", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard let namespace = PercentEncoding.decode(scope[0]),
              let partition = scope.count > 1 ? PercentEncoding.decode(scope[1]) : "" else { return nil }
        self.init(kind: kind, namespace: namespace, partition: partition, method: parts[2], url: parts[3],
                  variant: kind == .response ? parts[4] : "")
    }

    /// The key of the response to `request` in `namespace` and `partition`, given the `Vary` names of
    /// the stored variant.
    static func response(for request: URLRequest, namespace: String, partition: String = "", varyNames: [String]) -> CacheKey? {
        guard let url = request.url, let normalized = URLNormalizer.normalize(url) else { return nil }
        let method = (request.httpMethod ?? "GET").uppercased()
        let variant = encodeVariant(varyValues(of: request, names: varyNames))
        return CacheKey(kind: .response, namespace: namespace, partition: partition, method: method, url: normalized, variant: variant)
    }

    /// The request's values of the headers called `names`, whitespace normalized (RFC 9111 §4.1
    /// allows folding whitespace); headers the request lacks are left out.
    static func varyValues(of request: URLRequest, names: [String]) -> [String: String] {
        var values: [String: String] = [:]
        for name in names {
            guard let value = request.value(forHTTPHeaderField: name) else { continue }
            values[name] = value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
        }
        return values
    }

    /// `name=value&name=value` in name order, each part percent-encoded, so it is one space-free part.
    static func encodeVariant(_ values: [String: String]) -> String {
        values.sorted { $0.key < $1.key }
            .map { PercentEncoding.encode($0.key) + "=" + PercentEncoding.encode($0.value) }
            .joined(separator: "&")
    }
}

/// Percent-encoding with one fixed allowed set (RFC 3986 unreserved characters), so that equal
/// strings always encode equally, whatever encoding they arrived with.
enum PercentEncoding {
    private static let unreserved = CharacterSet(charactersIn:
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }

    static func decode(_ text: String) -> String? {
        text.removingPercentEncoding
    }
}
