import Foundation

/// The settings of ``JSONCoder``, read from a Foundation `JSONEncoder` and `JSONDecoder` so the same
/// strategies give the same JSON. What the streaming coder cannot do itself (a `.custom` or
/// `.formatted` strategy, pretty printing, sorted keys, JSON5) it leaves to Foundation's coder, which
/// it keeps beside it.
struct JSONCoderOptions {
    enum DateStrategy { case deferredToDate, secondsSince1970, millisecondsSince1970, iso8601 }
    enum DataStrategy { case deferredToData, base64 }
    struct FloatStrings: Equatable { var positiveInfinity: String; var negativeInfinity: String; var nan: String }

    var date: DateStrategy = .deferredToDate
    var data: DataStrategy = .base64
    /// Keys converted to snake case (encoding) or from it (decoding).
    var snakeCase = false
    /// Non-finite floats as these strings; nil: they are an error.
    var floatStrings: FloatStrings?
    var escapeSlashes = true
    /// False when a setting needs Foundation's coder for every value.
    var streamable = true

    /// The settings of a Foundation encoder.
    init(_ encoder: JSONEncoder) {
        switch encoder.dateEncodingStrategy {
        case .deferredToDate: date = .deferredToDate
        case .secondsSince1970: date = .secondsSince1970
        case .millisecondsSince1970: date = .millisecondsSince1970
        case .iso8601: date = .iso8601
        default: streamable = false // .formatted, .custom
        }
        switch encoder.dataEncodingStrategy {
        case .deferredToData: data = .deferredToData
        case .base64: data = .base64
        default: streamable = false // .custom
        }
        switch encoder.keyEncodingStrategy {
        case .useDefaultKeys: snakeCase = false
        case .convertToSnakeCase: snakeCase = true
        default: streamable = false // .custom
        }
        switch encoder.nonConformingFloatEncodingStrategy {
        case .throw: floatStrings = nil
        case .convertToString(let positive, let negative, let nan):
            floatStrings = FloatStrings(positiveInfinity: positive, negativeInfinity: negative, nan: nan)
        @unknown default: streamable = false
        }
        var formatting = encoder.outputFormatting
        if formatting.contains(.withoutEscapingSlashes) {
            escapeSlashes = false
            formatting.remove(.withoutEscapingSlashes)
        }
        if !formatting.isEmpty { streamable = false } // pretty printing, sorted keys
    }

    /// The settings of a Foundation decoder.
    init(_ decoder: JSONDecoder) {
        switch decoder.dateDecodingStrategy {
        case .deferredToDate: date = .deferredToDate
        case .secondsSince1970: date = .secondsSince1970
        case .millisecondsSince1970: date = .millisecondsSince1970
        case .iso8601: date = .iso8601
        default: streamable = false
        }
        switch decoder.dataDecodingStrategy {
        case .deferredToData: data = .deferredToData
        case .base64: data = .base64
        default: streamable = false
        }
        switch decoder.keyDecodingStrategy {
        case .useDefaultKeys: snakeCase = false
        case .convertFromSnakeCase: snakeCase = true
        default: streamable = false
        }
        switch decoder.nonConformingFloatDecodingStrategy {
        case .throw: floatStrings = nil
        case .convertFromString(let positive, let negative, let nan):
            floatStrings = FloatStrings(positiveInfinity: positive, negativeInfinity: negative, nan: nan)
        @unknown default: streamable = false
        }
        if decoder.allowsJSON5 || decoder.assumesTopLevelDictionary { streamable = false }
    }
}

/// Foundation's key conversions, written from their documented behaviour.
enum SnakeCase {
    /// `myURLKey` → `my_url_key`: a word starts at each capital; a run of capitals is one word whose
    /// last capital starts the next word when a lowercase letter follows it.
    static func fromCamelCase(_ key: String) -> String {
        guard !key.isEmpty else { return key }
        var words: [Range<String.Index>] = []
        var wordStart = key.startIndex
        var searchRange = key.index(after: wordStart)..<key.endIndex
        while let upper = key.rangeOfCharacter(from: .uppercaseLetters, options: [], range: searchRange) {
            words.append(wordStart..<upper.lowerBound)
            searchRange = upper.lowerBound..<searchRange.upperBound
            guard let lower = key.rangeOfCharacter(from: .lowercaseLetters, options: [], range: searchRange) else {
                wordStart = searchRange.lowerBound
                break
            }
            if lower.lowerBound == key.index(after: upper.lowerBound) {
                wordStart = upper.lowerBound
            } else {
                let beforeLower = key.index(before: lower.lowerBound)
                words.append(upper.lowerBound..<beforeLower)
                wordStart = beforeLower
            }
            searchRange = lower.upperBound..<searchRange.upperBound
        }
        words.append(wordStart..<searchRange.upperBound)
        return words.map { key[$0].lowercased() }.joined(separator: "_")
    }

    /// `my_url_key` → `myUrlKey`; leading and trailing underscores are kept.
    static func toCamelCase(_ key: String) -> String {
        guard let first = key.firstIndex(where: { $0 != "_" }) else { return key }
        var last = key.index(before: key.endIndex)
        while last > first && key[last] == "_" { key.formIndex(before: &last) }
        let words = key[first...last].split(separator: "_")
        let joined = words.count == 1
            ? String(key[first...last])
            : ([words[0].lowercased()] + words.dropFirst().map { $0.capitalized }).joined()
        return String(key[..<first]) + joined + String(key[key.index(after: last)...])
    }
}
