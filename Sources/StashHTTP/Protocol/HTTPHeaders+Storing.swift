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

    /// Fields a 304 (or a HEAD response, or a new part of a 206) never changes in a stored response:
    /// `Content-Length` describes a body it does not carry, `Content-Range` only its own part, and
    /// `Content-Encoding` the stored bytes, which `URLSession` may already have decoded (RFC 9111 §3.2
    /// lets a cache that stores processed content keep such fields).
    private static let keptOnUpdate: Set<String> = ["content-length", "content-range", "content-encoding"]

    /// The stored fields updated with those of a 304 (RFC 9111 §3.2): every field the 304 carries
    /// replaces the stored one, except hop-by-hop fields (`Transfer-Encoding` among them) and the
    /// fields of ``keptOnUpdate``. An `Age` describes the message it came with: a 304 without one
    /// comes straight from the origin, so the stored `Age` goes.
    func updated(with notModified: HTTPHeaders) -> HTTPHeaders {
        var result = self
        if notModified["age"] == nil { result["age"] = nil }
        for (name, value) in notModified.removingHopByHopFields() where !Self.keptOnUpdate.contains(name) {
            result[name] = value
        }
        return result
    }
}
