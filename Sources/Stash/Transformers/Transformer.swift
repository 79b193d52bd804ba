public import Foundation

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
/// `fromData` as ``StorageError/decodingFailed(_:)`` (a ``StorageError`` is passed on unchanged).
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

    /// Stores `Codable` values as JSON.
    public static func forCodable<U: Codable & Sendable>(ofType: U.Type) -> Transformer<U> {
        forCodable(ofType: U.self, encoder: JSONEncoder(), decoder: JSONDecoder())
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
    /// The transformer keeps both and uses them from several threads at once (Foundation's coders are
    /// thread-safe to use); do not change their settings afterwards. Values already stored with other
    /// settings must still decode with `decoder` (see Docs/ChangingYourModel.md).
    /// - Parameters:
    ///   - ofType: The type of the values.
    ///   - encoder: Encodes each value.
    ///   - decoder: Decodes the stored bytes.
    public static func forCodable<U: Codable & Sendable>(ofType: U.Type, encoder: JSONEncoder, decoder: JSONDecoder) -> Transformer<U> {
        // One encoder and decoder per transformer: they are thread-safe and costly to create.
        let coders = Coders(encoder: encoder, decoder: decoder)
        return Transformer(toData: { try coders.encoder.encode($0) }, fromData: { try coders.decoder.decode(U.self, from: $0) })
    }
}

/// A transformer's JSON coders, shared by its two functions.
private final class Coders: @unchecked Sendable {
    // @unchecked Sendable: Foundation's JSONEncoder and JSONDecoder are thread-safe to use (they are
    // not marked Sendable on every platform); the transformer never changes their settings.
    let encoder: JSONEncoder
    let decoder: JSONDecoder

    init(encoder: JSONEncoder, decoder: JSONDecoder) {
        self.encoder = encoder
        self.decoder = decoder
    }
}
