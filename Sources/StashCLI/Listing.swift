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
        // A column per byte for ASCII keys; measuring characters is the slow path.
        let keyWidths = keys.map { key in key.utf8.allSatisfy { $0 < 0x80 } ? key.utf8.count : terminalWidth(of: key) }
        let keyWidth = min(keyWidths.max() ?? 0, 40)
        let sizes = entries.map { String($0.size) }
        let sizeWidth = sizes.map(\.utf8.count).max() ?? 0
        let expiryWidth = entries.map { $0.expiry?.utf8.count ?? 5 }.max() ?? 0  // 5: "never"
        for index in entries.indices {
            let entry = entries[index]
            let expiry = entry.expiry ?? "never"
            output.append(keys[index])
            output.writeSpaces(max(keyWidth - keyWidths[index], 0) + 2) // a longer key: its line is wider, never joined
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


/// The columns `text` takes in a terminal: two for a wide character (East Asian wide and fullwidth
/// forms, emoji), none for a character that is only a format mark (a zero-width space, a joiner),
/// one for the rest; a combining mark belongs to the character before it (one grapheme).
func terminalWidth(of text: String) -> Int {
    var width = 0
    for character in text {
        guard let first = character.unicodeScalars.first else { continue }
        if character.unicodeScalars.allSatisfy({ $0.properties.generalCategory == .format }) { continue }
        width += isWide(first) || character.unicodeScalars.contains(where: { $0.properties.isEmojiPresentation }) ? 2 : 1
    }
    return width
}

/// Whether `scalar` is East Asian wide or fullwidth (Unicode's EastAsianWidth.txt, W and F, by block).
private func isWide(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
         0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6,
         0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
        return true
    default:
        return false
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
