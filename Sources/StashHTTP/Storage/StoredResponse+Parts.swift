import Foundation

/// Which bytes of a representation an incomplete stored response holds (RFC 9111 §3.3).
public struct PartialContent: Sendable, Hashable, Codable {
    /// The length of the whole representation.
    public var completeLength: Int
    /// Disjoint, non-adjacent ranges in ascending order; the stored body is their bytes, one after the other.
    public var ranges: [ClosedRange<Int>]

    /// Creates a description of stored parts.
    /// - Parameters:
    ///   - completeLength: The length of the whole representation.
    ///   - ranges: The ranges held, ascending and disjoint.
    public init(completeLength: Int, ranges: [ClosedRange<Int>]) {
        self.completeLength = completeLength
        self.ranges = ranges
    }
}

extension StoredResponse {
    /// Whether this is an incomplete response, which only answers ranges it holds.
    var isIncomplete: Bool { parts != nil || statusCode == 206 }

    /// The stored parts as (range, bytes) pairs.
    var partSegments: [(ClosedRange<Int>, Data)] {
        guard let parts else { return [] }
        var offset = body.startIndex
        return parts.ranges.map { range in
            defer { offset += range.count }
            return (range, body[offset..<offset + range.count])
        }
    }

    /// The bytes of `range` when one stored part holds all of them (§3.3: an incomplete response
    /// answers only a range wholly within it).
    func bytes(of range: ClosedRange<Int>) -> Data? {
        guard parts != nil else { return range.upperBound < body.count ? Data(body[body.startIndex + range.lowerBound...body.startIndex + range.upperBound]) : nil }
        for (held, bytes) in partSegments where held.contains(range.lowerBound) && held.contains(range.upperBound) {
            let start = bytes.startIndex + (range.lowerBound - held.lowerBound)
            return Data(bytes[start..<start + range.count])
        }
        return nil
    }

    /// This incomplete response with `segment` added (RFC 9111 §3.4): parts that overlap or touch are
    /// joined, and once they cover the whole representation the result is a complete 200 response.
    /// The caller has checked that both share a strong validator.
    func adding(_ segment: (ClosedRange<Int>, Data), completeLength: Int) -> StoredResponse {
        var segments = partSegments + [segment]
        segments.sort { $0.0.lowerBound < $1.0.lowerBound }
        var joined: [(ClosedRange<Int>, Data)] = []
        for (range, bytes) in segments {
            guard let last = joined.last, range.lowerBound <= last.0.upperBound + 1 else {
                joined.append((range, Data(bytes)))
                continue
            }
            if range.upperBound > last.0.upperBound {
                let overlap = last.0.upperBound + 1 - range.lowerBound
                joined[joined.count - 1] = (last.0.lowerBound...range.upperBound, last.1 + bytes.dropFirst(overlap))
            }
        }
        var result = self
        result.body = joined.reduce(into: Data()) { $0.append($1.1) }
        if joined.count == 1, joined[0].0 == 0...(completeLength - 1) {
            result.statusCode = 200
            result.parts = nil
            result.headers["content-range"] = nil
            result.headers["content-length"] = String(completeLength)
        } else {
            result.statusCode = 206
            result.parts = PartialContent(completeLength: completeLength, ranges: joined.map(\.0))
        }
        return result
    }
}
