import Foundation

/// Stash's JSON coder for `Codable` values: the JSON Foundation's `JSONEncoder` and `JSONDecoder`
/// write and read, with the same settings, at several times their speed.
///
/// Encoding writes straight into one buffer as the value's `encode(to:)` runs (no tree of
/// containers); decoding validates the input in one pass, then reads each container in place with a
/// cursor that finds keys in declaration order first. Whatever it cannot stream exactly as Foundation
/// would — a strategy that runs your code (`.custom`, `.formatted`), pretty printing or sorted keys,
/// an `encode(to:)` that writes to a container after its child moved on, `superEncoder`, a key written
/// twice, a number written in another form, any error — is handed to Foundation's coder for that
/// value, so results and errors (with their coding paths) are Foundation's.
struct JSONCoder: Sendable {
    /// Private copies of the caller's coders: used for what cannot be streamed.
    private let foundationEncoder: JSONEncoder
    private let foundationDecoder: JSONDecoder
    private let encoding: JSONCoderOptions
    private let decoding: JSONCoderOptions
    /// The coders' `userInfo`, read once (Foundation's getter takes a lock). Never mutated; its values
    /// are the ones Foundation's coders share between threads (`any Sendable` in today's SDKs, `Any`
    /// in older ones, hence the spelling).
    private nonisolated(unsafe) let encodingUserInfo: [CodingUserInfoKey: Any]
    private nonisolated(unsafe) let decodingUserInfo: [CodingUserInfoKey: Any]

    /// A coder with the settings of `encoder` and `decoder` (copied: later changes to them are not seen).
    init(encoder: JSONEncoder = JSONEncoder(), decoder: JSONDecoder = JSONDecoder()) {
        let encoderCopy = JSONEncoder()
        encoderCopy.outputFormatting = encoder.outputFormatting
        encoderCopy.dateEncodingStrategy = encoder.dateEncodingStrategy
        encoderCopy.dataEncodingStrategy = encoder.dataEncodingStrategy
        encoderCopy.nonConformingFloatEncodingStrategy = encoder.nonConformingFloatEncodingStrategy
        encoderCopy.keyEncodingStrategy = encoder.keyEncodingStrategy
        encoderCopy.userInfo = encoder.userInfo
        let decoderCopy = JSONDecoder()
        decoderCopy.dateDecodingStrategy = decoder.dateDecodingStrategy
        decoderCopy.dataDecodingStrategy = decoder.dataDecodingStrategy
        decoderCopy.nonConformingFloatDecodingStrategy = decoder.nonConformingFloatDecodingStrategy
        decoderCopy.keyDecodingStrategy = decoder.keyDecodingStrategy
        decoderCopy.userInfo = decoder.userInfo
        decoderCopy.allowsJSON5 = decoder.allowsJSON5
        decoderCopy.assumesTopLevelDictionary = decoder.assumesTopLevelDictionary
        foundationEncoder = encoderCopy
        foundationDecoder = decoderCopy
        encoding = JSONCoderOptions(encoderCopy)
        decoding = JSONCoderOptions(decoderCopy)
        encodingUserInfo = encoder.userInfo.mapValues { $0 as Any }
        decodingUserInfo = decoder.userInfo.mapValues { $0 as Any }
    }

    /// Encodes `value` as Foundation's `JSONEncoder` with the same settings would.
    /// - Throws: Foundation's `EncodingError`, or the error the value's `encode(to:)` throws.
    func encode<T: Encodable>(_ value: T) throws -> Data {
        if let data = encodeStreaming(value) { return data }
        return try foundationEncoder.encode(value)
    }

    /// Decodes a `T` from JSON as Foundation's `JSONDecoder` with the same settings would.
    /// - Throws: Foundation's `DecodingError` (with the coding path), or the error the type's
    ///   `init(from:)` throws.
    func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        if let value = decodeStreaming(type, from: data) { return value }
        return try foundationDecoder.decode(type, from: data)
    }

    /// The streaming encoder alone: nil when the value needs Foundation's.
    func encodeStreaming<T: Encodable>(_ value: T) -> Data? {
        guard encoding.streamable else { return nil }
        var writer = JSONWriter.take(options: encoding, userInfo: encodingUserInfo)
        defer { JSONWriter.giveBack(&writer) }
        let slot = writer.makeID()
        writer.openSlot = slot
        do {
            try writer.value(value, key: nil, depth: 0, slot: slot)
        } catch {
            return nil
        }
        guard !writer.fallback else { return nil }
        writer.close(above: -1)
        writer.fallback = true // a container kept by the value writes nothing more
        return writer.data()
    }

    /// The streaming decoder alone: nil when the input or the type needs Foundation's decoder.
    func decodeStreaming<T: Decodable>(_ type: T.Type, from data: Data) -> T? {
        guard decoding.streamable else { return nil }
        return data.withUnsafeBytes { raw -> T? in
            let text = raw.bindMemory(to: UInt8.self)
            guard JSONScanner.validate(text) else { return nil }
            let reader = JSONReader(text: text, options: decoding, userInfo: decodingUserInfo)
            defer { reader.text = UnsafeBufferPointer(start: nil, count: 0) }
            let start = JSONScanner.skipSpace(text, 0)
            var end = start
            guard let value = try? reader.value(type, at: start, key: nil, depth: 0, end: &end), !reader.fallback else { return nil }
            return value
        }
    }
}
