import Foundation
import Stash

/// One line of `stash ls`, and one object of `stash ls --json`.
struct ListedEntry: Encodable {
    let key: String
    let size: Int
    /// ISO 8601, or nil for a value that never expires.
    let expiry: String?
    /// ISO 8601.
    let lastAccess: String
    let expired: Bool

    init(_ info: DiskEntryInfo, now: Date) {
        key = info.key
        size = info.size
        if case .date(let date) = info.expiry { expiry = iso8601(date) } else { expiry = nil }
        lastAccess = iso8601(info.lastAccess)
        expired = info.isExpired(at: now)
    }

    private enum CodingKeys: String, CodingKey {
        case key, size, expiry, lastAccess, expired
    }

    // Written by hand so that a value that never expires has `"expiry": null` (the synthesized
    // encoding would leave the field out).
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(key, forKey: .key)
        try container.encode(size, forKey: .size)
        try container.encode(expiry, forKey: .expiry)
        try container.encode(lastAccess, forKey: .lastAccess)
        try container.encode(expired, forKey: .expired)
    }

    /// The entries as a pretty-printed JSON array.
    static func json(_ entries: [ListedEntry]) throws -> String {
        if entries.isEmpty { return "[]" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(entries), as: UTF8.self)
    }

    /// The entries as aligned lines: key, size in bytes, expiry, last access, and `expired` when it is.
    /// A key that needs it is quoted and escaped (see ``quoted(_:)``), so one entry is one line.
    static func table(_ entries: [ListedEntry]) -> [String] {
        let keys = entries.map { displayKey($0.key) }
        let keyWidth = min(keys.map(\.count).max() ?? 0, 40)
        let sizeWidth = entries.map { String($0.size).count }.max() ?? 0
        let expiryWidth = entries.map { ($0.expiry ?? "never").count }.max() ?? 0
        return zip(keys, entries).map { key, entry in
            let columns = [
                pad(key, to: keyWidth),
                pad(String(entry.size), to: sizeWidth, leading: true),
                pad(entry.expiry ?? "never", to: expiryWidth),
                entry.lastAccess + (entry.expired ? "  expired" : ""),
            ]
            return columns.joined(separator: "  ")
        }
    }

    private static func pad(_ text: String, to width: Int, leading: Bool = false) -> String {
        let padding = String(repeating: " ", count: max(0, width - text.count))
        return leading ? padding + text : text + padding
    }
}


/// A key as the listing shows it: as it is when that is unambiguous, else ``quoted(_:)``.
func displayKey(_ key: String) -> String {
    let plain = !key.isEmpty && key.unicodeScalars.allSatisfy { scalar in
        !needsEscape(scalar) && !scalar.properties.isWhitespace && scalar != "\"" && scalar != "\\"
    }
    return plain ? key : quoted(key)
}

/// `key` in double quotes, with `"` and `\` escaped and every character that could break a line or
/// reorder the terminal's text written as an escape (`\n`, `\t`, `\0`, `\u{1B}`, `\u{2028}`, `\u{202E}`…).
func quoted(_ key: String) -> String {
    var result = "\""
    for scalar in key.unicodeScalars {
        switch scalar {
        case "\"": result += "\\\""
        case "\\": result += "\\\\"
        case "\n": result += "\\n"
        case "\r": result += "\\r"
        case "\t": result += "\\t"
        case "\0": result += "\\0"
        default:
            if needsEscape(scalar) {
                result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
    }
    return result + "\""
}

/// Control characters, line and paragraph separators, and the bidirectional controls.
private func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.properties.generalCategory {
    case .control, .lineSeparator, .paragraphSeparator: return true
    default: return scalar.properties.isBidiControl
    }
}

/// What `stash stats` reports, and the object `stash stats --json` writes.
struct StoreSummary: Encodable {
    let path: String
    let entries: Int
    /// The bytes of all values.
    let bytes: Int
    let expired: Int
    /// Damage that opening the store found and dropped, in words; empty after a clean open.
    let recoveryIssues: [String]

    /// The summary as a pretty-printed JSON object with sorted keys.
    func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }
}
