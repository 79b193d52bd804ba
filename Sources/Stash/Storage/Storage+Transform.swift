public import Foundation

extension Storage {
    /// A view of the same store whose values are `U`, stored with `transformer`.
    ///
    /// The view shares the store's serial queue, memory layer, folder and observers: a write
    /// through any view is seen by every other view.
    public func transform<U: Sendable>(transformer: Transformer<U>) -> Storage<U> {
        Storage<U>(hybridStorage: hybridStorage.transform(transformer: transformer), ownedFolder: ownedFolder)
    }

    /// A view of the same store holding `Codable` values as JSON.
    public func transformCodable<U: Codable & Sendable>(ofType: U.Type) -> Storage<U> {
        transform(transformer: TransformerFactory.forCodable(ofType: U.self))
    }

    /// A view of the same store holding raw `Data`.
    public func transformData() -> Storage<Data> {
        transform(transformer: TransformerFactory.forData())
    }

    /// A view of the same store holding encoded images, stored byte for byte.
    public func transformImage() -> Storage<ImageData> {
        transform(transformer: TransformerFactory.forImage())
    }
}
