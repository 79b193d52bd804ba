import Foundation
import StashHTTP

/// A response StashHTTP stored, as `stash get` shows it: a status line (with the method and URL it
/// answers, and when it was received), the header fields sorted by name, a blank line, then the body
/// byte for byte; rather than the stored form (a binary signature, a JSON header, the body).
struct HTTPResponseText {
    let text: Data

    /// Nil when `data` is no stored HTTP response (then `get` writes it as it is).
    init?(_ data: Data) {
        guard data.starts(with: Array("SHR1".utf8)), let response = try? StoredResponse.transformer.decode(data) else { return nil }
        var head = "HTTP \(response.statusCode) (\(response.method) \(response.url.absoluteString), received \(iso8601(response.responseTime)))\n"
        for (name, value) in response.headers.sorted(by: { $0.key < $1.key }) {
            head += "\(name): \(value)\n"
        }
        if let parts = response.parts {
            let ranges = parts.ranges.map { "\($0.lowerBound)-\($0.upperBound)" }.joined(separator: ", ")
            head += "(incomplete: bytes \(ranges) of \(parts.completeLength))\n"
        }
        var text = Data((head + "\n").utf8)
        text.append(response.body)
        self.text = text
    }
}
