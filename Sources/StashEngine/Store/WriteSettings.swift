/// The settings of a store that every write obeys: the ones of its first opener, which every other
/// opener in the process must share (``DiskEngine/open(_:sharing:maxSize:durable:mapsSegments:client:)``).
package struct WriteSettings: Sendable {
    /// The most bytes the values may take; the least recently used go past it (0: no limit).
    package var maxSize: Int
    /// Whether a write returns only once it is on stable storage.
    package var durable: Bool
    /// Whether every value gets a file of its own, not only the large ones.
    package var storesValuesAsFiles: Bool

    package init(maxSize: Int, durable: Bool, storesValuesAsFiles: Bool) {
        (self.maxSize, self.durable, self.storesValuesAsFiles) = (maxSize, durable, storesValuesAsFiles)
    }
}
