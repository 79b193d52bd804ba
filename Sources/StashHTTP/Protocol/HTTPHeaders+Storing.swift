import Foundation

extension HTTPHeaders {
    /// Hop-by-hop fields (RFC 9110 §7.6.1), which describe one connection and are never stored (RFC 9111 §3.1).
    private static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade", "trailer",
        "proxy-authenticate", "proxy-authorization",
    ]

    /// The fields worth storing: hop-by-hop fields and those named by `Connection` removed.
    func removingHopByHopFields() -> HTTPHeaders {
        let named = Set(listMembers("connection").map { $0.lowercased() })
        var result = HTTPHeaders()
        for (name, value) in fields where !Self.hopByHop.contains(name) && !named.contains(name) {
            result[name] = value
        }
        return result
    }

    /// The stored fields updated with those of a 304 (RFC 9111 §3.2): every field the 304 carries
    /// replaces the stored one, except `Content-Length` (the 304 has no body) and hop-by-hop fields.
    func updated(with notModified: HTTPHeaders) -> HTTPHeaders {
        var result = self
        for (name, value) in notModified.removingHopByHopFields() where name != "content-length" {
            result[name] = value
        }
        return result
    }
}
