/// The index's changes since a ``DirectoryBuilder`` last took them: what the builder applies to the key
/// directory it keeps as the store goes (Docs/Architecture.md, "A directory kept as it goes").
///
/// Kept in the ``KeyDirectory`` and appended to under the index's lock by every change that a key
/// directory holds: a write, a removal, a use, a record moved. An entry already written is named by its
/// key's hash and the position of its record (segment, offset), which is unique to it, so the builder
/// never compares keys: the index has already decided which entry a change is to.
///
/// Applying a change is an assignment (this entry now has this record, these uses; this entry is gone),
/// and a change to an entry the builder does not hold is ignored (a removal) or adds it (a write). So the
/// builder may take the index's entries while changes go on, a part at a time, and apply every change
/// made since it began after them: an entry it took after a change already shows that change, and
/// applying it again leaves it so.
struct DirectoryJournal {
    enum Kind: UInt8 {
        /// An entry written: new, or in place of the one whose record was at the change's position.
        case set
        /// The entry whose record is at the change's position is gone.
        case remove
        /// The entry whose record is at the change's position was used.
        case touch
        /// The entry whose record is at the change's position has its record at `record`'s position now.
        case move
    }

    struct Change {
        var kind: Kind
        var hash: UInt64
        /// The position of the entry's record before the change (a write's: the record it replaced, if any).
        var segment: UInt32
        var offset: UInt32
        /// Whether a write replaced an entry (at `segment`, `offset`).
        var replaces: Bool
        /// A write's or a move's record.
        var record: DiskRecord?
        var recency: UInt64
        var time: Double
        /// A write's key, in ``keys``.
        var keyStart: Int
        var keyLength: Int
    }

    /// The builder the changes are for: an index made anew (a `removeAll`, a compaction's directory, an
    /// open anew) starts without a journal, and its builder stops.
    let owner: UInt64
    /// Asked to take the changes, each time ``batch`` more are waiting (under the index's lock: it must
    /// not wait for anything).
    let wake: @Sendable () -> Void
    private(set) var changes: [Change] = []
    /// The written keys' UTF-8, one after the other.
    private(set) var keys: [UInt8] = []

    /// How many changes wait before the builder is woken.
    static let batch = 1024
    /// At most this many changes wait: a builder that falls this far behind (a machine too busy to run
    /// it) stops, and the store writes its directory whole at close as it would without one.
    static let limit = 1 << 20

    init(owner: UInt64, wake: @escaping @Sendable () -> Void) {
        (self.owner, self.wake) = (owner, wake)
    }

    /// Whether more than ``limit`` changes waited: those were dropped, and no more are kept (its builder stops).
    private(set) var overfull = false

    /// Takes the changes waiting, leaving none.
    mutating func take() -> (changes: [Change], keys: [UInt8]) {
        defer { (changes, keys) = ([], []) }
        return (changes, keys)
    }

    private mutating func append(_ change: Change) {
        guard !overfull else { return }
        guard changes.count < Self.limit else {
            (overfull, changes, keys) = (true, [], [])
            return
        }
        changes.append(change)
        if changes.count % Self.batch == 0 { wake() }
    }

    mutating func set(_ key: String, _ record: DiskRecord, recency: UInt64, replacing old: DiskRecord?) {
        guard !overfull else { return }
        let start = keys.count
        var key = key
        key.withUTF8 { keys.append(contentsOf: $0) }
        append(Change(kind: .set, hash: record.keyHash, segment: old?.segment ?? 0, offset: old?.offset ?? 0, replaces: old != nil,
                      record: record, recency: recency, time: 0, keyStart: start, keyLength: keys.count - start))
    }

    mutating func remove(_ record: DiskRecord) {
        append(Change(kind: .remove, hash: record.keyHash, segment: record.segment, offset: record.offset, replaces: false,
                      record: nil, recency: 0, time: 0, keyStart: 0, keyLength: 0))
    }

    mutating func touch(_ record: DiskRecord, recency: UInt64, time: Double) {
        append(Change(kind: .touch, hash: record.keyHash, segment: record.segment, offset: record.offset, replaces: false,
                      record: nil, recency: recency, time: time, keyStart: 0, keyLength: 0))
    }

    mutating func move(_ old: DiskRecord, to record: DiskRecord) {
        append(Change(kind: .move, hash: old.keyHash, segment: old.segment, offset: old.offset, replaces: false,
                      record: record, recency: 0, time: 0, keyStart: 0, keyLength: 0))
    }
}
