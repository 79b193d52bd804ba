public import Foundation
import StashEngine

/// Converts values to the bytes stored on disk and back.
///
/// Compose your own from the two functions:
/// ```swift
/// let utf8 = Transformer<String>(
///     toData: { Data($0.utf8) },
///     fromData: { String(decoding: $0, as: UTF8.self) }
/// )
/// ```
/// Errors thrown by `toData` reach the caller as ``StorageError/encodingFailed(_:)`` and those of
/// `fromData` as ``StorageError/decodingFailed(_:key:)`` naming the key read (a ``StorageError`` is passed
/// on, a `decodingFailed` of your own given the key).
public struct Transformer<T>: Sendable {
    /// Encodes a value; the result is stored byte for byte.
    public let toData: @Sendable (T) throws -> Data
    /// Decodes stored bytes.
    public let fromData: @Sendable (Data) throws -> T

    /// Creates a transformer from its two functions.
    public init(toData: @escaping @Sendable (T) throws -> Data, fromData: @escaping @Sendable (Data) throws -> T) {
        self.toData = toData
        self.fromData = fromData
    }

    /// `toData`, with errors as ``StorageError``.
    package func encode(_ object: T) throws -> Data {
        do {
            return try toData(object)
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError.encodingFailed(error)
        }
    }

    /// `fromData`, with errors as ``StorageError``.
    package func decode(_ data: Data) throws -> T {
        do {
            return try fromData(data)
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError.decodingFailed(error)
        }
    }

    /// `fromData` for the value of `key`, with errors as ``StorageError`` naming `key`.
    package func decode(_ data: Data, key: String) throws -> T {
        do {
            return try fromData(data)
        } catch let error as StorageError {
            throw error.naming(key)
        } catch {
            throw StorageError.decodingFailed(error, key: key)
        }
    }
}

/// The transformers Stash ships.
public enum TransformerFactory {
    /// Stores `Data` as it is.
    public static func forData() -> Transformer<Data> {
        Transformer(toData: { $0 }, fromData: { $0 })
    }

    /// Stores encoded image bytes as they are (a PNG stays a PNG); reading bytes that are no image
    /// throws ``StorageError/transformerFail(_:)`` with an ``ImageDataError``.
    public static func forImage() -> Transformer<ImageData> {
        Transformer(toData: { $0.data }, fromData: { data in
            do {
                return try ImageData(data: data)
            } catch {
                throw StorageError.transformerFail(error)
            }
        })
    }

    /// Stores `Codable` values as JSON: the JSON a default `JSONEncoder` writes (keys in declaration
    /// order), written and read by Stash's streaming coder at several times Foundation's speed. It
    /// reads whatever Foundation's coder wrote, and leaves to Foundation what it cannot stream (a
    /// hand-written `encode(to:)` that goes back to a parent container, `superEncoder`, errors, which
    /// keep Foundation's coding paths). ``forFoundationCodable(ofType:encoder:decoder:)`` uses
    /// Foundation's coder for every value.
    public static func forCodable<U: Codable & Sendable>(ofType: U.Type) -> Transformer<U> {
        forStreamingCodable(ofType: U.self)
    }

    /// Stores `Codable` values as JSON with Foundation's `JSONEncoder` and `JSONDecoder` themselves.
    ///
    /// ``forCodable(ofType:)`` writes the same JSON faster; use this one to have Foundation's coder
    /// do every value (to compare, or to rule the coder out while you look for a problem). Both read
    /// what the other wrote.
    /// - Parameters:
    ///   - ofType: The type of the values.
    ///   - encoder: The encoder; a default `JSONEncoder` when omitted.
    ///   - decoder: The decoder; a default `JSONDecoder` when omitted.
    public static func forFoundationCodable<U: Codable & Sendable>(
        ofType: U.Type, encoder: JSONEncoder = JSONEncoder(), decoder: JSONDecoder = JSONDecoder()
    ) -> Transformer<U> {
        Transformer(toData: { try encoder.encode($0) }, fromData: { try decoder.decode(U.self, from: $0) })
    }

    /// Stores `Codable` values as JSON with Stash's streaming coder (``JSONCoder``), configured from
    /// Foundation coders' strategies.
    static func forStreamingCodable<U: Codable & Sendable>(
        ofType: U.Type, encoder: JSONEncoder = JSONEncoder(), decoder: JSONDecoder = JSONDecoder()
    ) -> Transformer<U> {
        let coder = JSONCoder(encoder: encoder, decoder: decoder)
        return Transformer(toData: { try coder.encode($0) }, fromData: { try coder.decode(U.self, from: $0) })
    }

    /// Stores `Codable` values as the JSON of `encoder`, read back with `decoder`: date, key and data
    /// strategies are a parameter.
    ///
    /// ```swift
    /// let encoder = JSONEncoder()
    /// encoder.dateEncodingStrategy = .iso8601
    /// let decoder = JSONDecoder()
    /// decoder.dateDecodingStrategy = .iso8601
    /// let transformer = TransformerFactory.forCodable(ofType: Event.self, encoder: encoder, decoder: decoder)
    /// ```
    ///
    /// Written and read by Stash's streaming coder with the strategies of `encoder` and `decoder` (the
    /// bytes Foundation's coder writes; a strategy it cannot follow is left to Foundation's coder itself):
    /// do not change their settings afterwards. Values already stored with other
    /// settings must still decode with `decoder` (see Docs/ChangingYourModel.md).
    /// - Parameters:
    ///   - ofType: The type of the values.
    ///   - encoder: Encodes each value.
    ///   - decoder: Decodes the stored bytes.
    public static func forCodable<U: Codable & Sendable>(ofType: U.Type, encoder: JSONEncoder, decoder: JSONDecoder) -> Transformer<U> {
        forStreamingCodable(ofType: U.self, encoder: encoder, decoder: decoder)
    }
}
