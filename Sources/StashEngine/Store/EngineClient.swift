package import Foundation

/// The one way up from the engine: what the layers above it (memory, observers) are told and asked.
///
/// The engine never names a type above it; the compiler keeps it so, since those types live in
/// another target. Every call comes on the engine's queue, inside the operation it concerns, except
/// ``deliver(through:)``, which comes after it, off the queue.
package protocol EngineClient: AnyObject, Sendable {
    /// Whether anything observes the store: a `removeAll` then lists the keys it removes.
    var hasObservers: Bool { get }

    /// Whether `key` has observers of its own: a write then reads the value it replaces, for them.
    func hasKeyObservers(_ key: String) -> Bool

    /// Whether the layers above submitted a mutation that has not run on the queue yet: a read then
    /// waits for it on the queue instead of reading without it (``DiskEngine/readOffQueue(_:now:)``),
    /// so that no read overtakes a write its caller submitted earlier.
    var hasPendingMutations: Bool { get }

    /// Hands over one change; ``deliver(through:)`` delivers it. (A requirement of its own, so that
    /// a write nobody observes builds no array.)
    func publish(_ event: StoreEvent)

    /// Hands over the changes of one commit (a batch), delivered together, in order.
    func publish(_ events: [StoreEvent])

    /// A mark of everything published so far (it grows with every event).
    var lastPublished: UInt64 { get }

    /// Delivers what was published up to `mark`; called off the queue once the operation is over.
    func deliver(through mark: UInt64)

    /// Drops `keys` (nil: every key) from the memory in front of the store. Called before the index
    /// changes: a reader consults memory before the index (``DiskStore/sharedIndex``).
    func dropFromMemory(_ keys: [String]?)

    /// Drops one key, as ``dropFromMemory(_:)`` does (a write's: no array made for it).
    func dropFromMemory(key: String)

    /// Drops one key from every memory layer but `layer`, the one a write puts its new copy in right
    /// after, in the same hold of the index's lock (``DiskEngine/write(_:_:expiry:now:config:memoryLayer:putInMemory:onCommit:)``):
    /// that layer's old copy is replaced, not dropped and then added again.
    func dropFromMemory(key: String, except layer: AnyObject)

    /// The keys served from memory since the last call: the store counts them as use, as disk reads.
    func takeMemoryHits() -> [String]

    /// Whether `key` is pinned: never chosen when a trim (``WritePath/trim(toSize:now:)``, and the
    /// trim to `maxSize` after a write) evicts least recently used values. The layers above keep
    /// their bookkeeping under such keys (a migration's progress), which losing would undo; the
    /// engine knows no names, only this answer. Pinned values still count in the store's size.
    func isPinned(_ key: String) -> Bool
}

/// What the engine reports of a change; values are still encoded, so that each observer can decode
/// them with its own view's transformer.
package enum StoreEvent: Sendable {
    package enum RemovalReason: Sendable { case removed, expired, evicted }

    case set(key: String, value: Data, previous: Data?)
    case remove(keys: [String], reason: RemovalReason)
    case removeAll(keys: [String])

    /// The keys this event touches.
    package var keys: [String] {
        switch self {
        case .set(let key, _, _): return [key]
        case .remove(let keys, _), .removeAll(let keys): return keys
        }
    }
}
