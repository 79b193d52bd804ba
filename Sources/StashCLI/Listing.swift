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

    init(_ info: DiskEntryInfo, now: Date, dates: DateTexts = DateTexts()) {
        key = info.key
        size = info.size
        if case .date(let date) = info.expiry { expiry = dates.text(date) } else { expiry = nil }
        lastAccess = dates.text(info.lastAccess)
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

    /// ``json(_:)`` written straight into `output`, object by object, in the same form (pretty-printed,
    /// keys sorted, slashes unescaped): `JSONEncoder` took 7 s for a million entries.
    static func writeJSON(_ entries: [ListedEntry], to output: BufferedOutput) {
        guard !entries.isEmpty else {
            output.writeLine("[]")
            return
        }
        output.writeLine("[")
        for (index, entry) in entries.enumerated() {
            output.writeLine("  {")
            output.writeLine("    \"expired\" : \(entry.expired),")
            output.writeLine("    \"expiry\" : " + (entry.expiry.map(jsonString) ?? "null") + ",")
            output.writeLine("    \"key\" : " + jsonString(entry.key) + ",")
            output.writeLine("    \"lastAccess\" : " + jsonString(entry.lastAccess) + ",")
            output.writeLine("    \"size\" : \(entry.size)")
            output.writeLine(index == entries.count - 1 ? "  }" : "  },")
        }
        output.writeLine("]")
    }

    /// `text` as a JSON string: quotes, backslashes and control characters escaped, the rest as it is.
    static func jsonString(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case "\u{08}": result += "\\b"
            case "\u{0C}": result += "\\f"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "\""
    }


    /// The entries as aligned lines: key, size in bytes, expiry, last access, and `expired` when it is.
    /// A key that needs it is quoted and escaped (see ``quoted(_:)``), so one entry is one line.
    /// Written straight into `output` (no string per line: a million of them cost a second).
    static func writeTable(_ entries: [ListedEntry], to output: BufferedOutput) {
        let keys = entries.map { displayKey($0.key) }
        // A character per byte for ASCII keys; counting characters is the slow path.
        let keyWidths = keys.map { key in key.utf8.allSatisfy { $0 < 0x80 } ? key.utf8.count : key.count }
        let keyWidth = min(keyWidths.max() ?? 0, 40)
        let sizes = entries.map { String($0.size) }
        let sizeWidth = sizes.map(\.utf8.count).max() ?? 0
        let expiryWidth = entries.map { $0.expiry?.utf8.count ?? 5 }.max() ?? 0  // 5: "never"
        for index in entries.indices {
            let entry = entries[index]
            let expiry = entry.expiry ?? "never"
            output.append(keys[index])
            output.writeSpaces(keyWidth - keyWidths[index] + 2)
            output.writeSpaces(sizeWidth - sizes[index].utf8.count)
            output.append(sizes[index])
            output.writeSpaces(2)
            output.append(expiry)
            output.writeSpaces(expiryWidth - expiry.utf8.count + 2)
            output.append(entry.lastAccess)
            if entry.expired { output.append("  expired") }
            output.endLine()
        }
    }

}


/// A key as the listing shows it: as it is when that is unambiguous, else ``quoted(_:)``.
func displayKey(_ key: String) -> String {
    let plain = !key.isEmpty && key.unicodeScalars.allSatisfy { scalar in
        // Printable ASCII first, without a lookup of Unicode properties: they cost ~15 ns a scalar,
        // which is seconds for `stash ls` of a million keys.
        if scalar.isASCII { return scalar.value > 0x20 && scalar.value < 0x7F && scalar != "\"" && scalar != "\\" }
        return !needsEscape(scalar) && !scalar.properties.isWhitespace
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

/// ISO 8601 texts of dates, each second formatted once: the entries of a store share few seconds
/// (a million writes take seconds), and `stash ls` writes two dates per entry.
final class DateTexts {
    private var texts: [Int64: String] = [:]

    func text(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard let second = Int64(exactly: seconds) else { return iso8601(date) }
        if let text = texts[second] { return text }
        let text = iso8601(date)
        if texts.count < 100_000 { texts[second] = text }
        return text
    }
}
