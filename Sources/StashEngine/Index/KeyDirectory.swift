/// The store's index: every key, where its record is, and how recently it was used.
///
/// Two parts. The **base** is the key directory file the store opened with (``LoadedDirectory``):
/// read whole into one buffer, not decoded, so opening a store builds nothing per key. The **overlay** holds what
/// changed since: keys written after the directory was, and base keys written or removed since
/// (their base slot is then *shadowed*, one bit each). Writing a new directory (at compaction, and
/// when a large store closes) folds the overlay into a new base.
///
/// Recency is a counter: every use or write takes the next number, and a directory file keeps the
/// numbers of its entries and the next one (one of the layout before numbered its entries 0…n−1).
/// The least recently used entries are found without a list of every key: a queue of the oldest few
/// thousand is built by one pass when eviction needs it, and since numbers only grow, a queued entry
/// is still among the oldest unless it was used since (its number changed: skipped).
package struct KeyDirectory {
    /// The key hash's seed: the store's identity.
    package let seed: UInt64
    package private(set) var base: LoadedDirectory?
    private(set) var shadowed: [UInt64] = []
    private(set) var overlay = KeyTable()
    /// Live entries.
    package private(set) var count = 0
    /// The oldest entries, for eviction (``forEachOldestFirst(_:)``).
    var queue: [(recency: UInt64, reference: Reference)] = []
    var queueStart = 0
    /// Whether base entries were pointed at other records in place: the header's live bytes per segment are stale.
    private(set) var basePositionsMoved = false
    /// The keys in order (``KeyOrder``): nil until the first prefix query asks for it, then kept as keys come and go.
    var order: KeyOrder?
    /// The changes since a ``DirectoryBuilder`` last took them, while one keeps a directory as the store goes.
    var journal: DirectoryJournal?
    /// The uses made (reads off the queue) while a key directory of this index is written to become the
    /// base of the index that replaces it (``DiskStore/writeDirectory(thenLoad:durable:)``), in order: the
    /// new index takes them too, or they would be lost. Nil when no such directory is being written.
    var usesWhileWritten: [(hash: UInt64, segment: UInt32, offset: UInt32, time: Double)]?
    /// Last, away from what every look-up reads: a read off the queue on one thread counts it up
    /// (``touch(_:time:)``) while others look keys up (the cache line would bounce between them).
    private(set) var nextRecency: UInt64 = 0

    package enum Reference: Hashable {
        case slot(Int)
        case key(String)
    }

    /// Where ``locate(_:)`` found an entry, so that removing it does not look it up again: valid
    /// while ``changes`` is what it was (no entry added, removed or moved since).
    package struct Location {
        fileprivate enum Place { case overlay(Int), base(Int) }
        fileprivate let place: Place
        fileprivate let changes: UInt64
    }

    /// Counts the changes that move entries (``Location``), from a start of its own (each index
    /// made counts in its own range of 2³² changes): a location of an index since replaced is stale.
    private var changes = KeyDirectory.instances.incremented() << 32
    private static let instances = AtomicWord()

    package init(seed: UInt64, base: LoadedDirectory? = nil) {
        self.seed = seed
        self.base = base
        if let base {
            count = base.header.count
            nextRecency = base.nextRecency
        }
    }

    package func hash(_ key: String) -> UInt64 { KeyHash.of(key, seed: seed) }

    /// Becomes `new`, whose recencies go on from this index's (a directory loaded goes on from above its
    /// live entries' recencies only, an empty index from 0): the uses noted against this index and not
    /// written yet carry its recencies (``SegmentLog/Access``), and must sort before every use of the new one.
    package mutating func replace(with new: KeyDirectory) {
        let next = max(nextRecency, new.nextRecency)
        self = new
        nextRecency = next
    }

    /// How many entries were written or changed since the base (the overlay's).
    var overlayCount: Int { overlay.count }
    /// The entries written or changed since the base, as they are now (a copy: the index copies its own on its next change).
    var overlaySnapshot: KeyTable { overlay }

    /// Whether a page of the base failed its check (the file changed in place since the open): lookups
    /// that needed it answered nothing, so none of them is an answer, and the store drops the base.
    package var baseFailed: Bool { base?.failed == true }

    // MARK: Lookups

    func isShadowed(_ slot: Int) -> Bool {
        slot >> 6 < shadowed.count && shadowed[slot >> 6] & (1 << UInt64(slot & 63)) != 0
    }

    private mutating func shadow(_ slot: Int) {
        if shadowed.isEmpty, let base { shadowed = Array(repeating: 0, count: (base.slotCount + 63) >> 6) }
        shadowed[slot >> 6] |= 1 << UInt64(slot & 63)
    }

    /// The live base slot of `key` (whose hash is `hash`, if the caller has it).
    ///
    /// On the paths every read takes, the base is reached through `base?` rather than bound with
    /// `guard let base`: the binding copied the optional through the runtime's generic value
    /// witnesses (~200 instructions a read, callgrind).
    private func baseSlot(_ key: String, hash known: UInt64? = nil) -> Int? {
        guard base != nil, let slot = base?.find(key, hash: known ?? hash(key)), !isShadowed(slot) else { return nil }
        return slot
    }

    /// The first live base slot that holds `hash`, its key not compared (``markUsedByHash(_:time:)``).
    private func baseSlot(hash: UInt64) -> Int? {
        base?.find(hash: hash) { !isShadowed($0) }
    }

    /// The hash of `key`, nil when the index is empty (then nothing needs it).
    private func lookupHash(_ key: String) -> UInt64? {
        base == nil && overlay.isEmpty ? nil : hash(key)
    }

    /// The record of `key`, without counting it as use.
    func peek(_ key: String) -> DiskRecord? {
        guard let hash = lookupHash(key) else { return nil }
        if let position = overlay.position(of: key, hash: hash) { return overlay[position].record }
        return baseSlot(key, hash: hash).flatMap { base?.record(at: $0) }
    }

    /// The record of `key` and where it is, without counting it as use.
    func locate(_ key: String) -> (record: DiskRecord, location: Location)? {
        guard let hash = lookupHash(key) else { return nil }
        if let position = overlay.position(of: key, hash: hash) {
            return (overlay[position].record, Location(place: .overlay(position), changes: changes))
        }
        guard let slot = baseSlot(key, hash: hash), let record = base?.record(at: slot) else { return nil }
        return (record, Location(place: .base(slot), changes: changes))
    }

    /// Marks `key` used at `time`; returns its record as it is now, nil if absent.
    @discardableResult
    package mutating func touch(_ key: String, time: Double) -> DiskRecord? {
        markUsed(key, time: time)?.record
    }

    /// Marks `key` used at `time`; returns its record as it is now and the recency that use gave it
    /// (what orders its access record among those of other threads: ``SegmentLog/Access``), nil if absent.
    mutating func markUsed(_ key: String, time: Double) -> (record: DiskRecord, recency: UInt64)? {
        markUsed(key, time: time, comparingKeys: true)
    }

    /// Marks the memory hits `keys` used at `time`, in order (``markUsed(_:time:)``); the entries found.
    /// A loop here rather than a closure over the directory: a closure that captures it copies it (a
    /// retain and a release of each of its buffers), as the memory hits a write takes once did.
    mutating func markHitsUsed(_ keys: [String], time: Double) -> [(record: DiskRecord, recency: UInt64)] {
        var used: [(record: DiskRecord, recency: UInt64)] = []
        used.reserveCapacity(keys.count)
        for key in keys {
            if let found = markUsed(key, time: time, comparingKeys: true) { used.append(found) }
        }
        return used
    }

    /// ``markUsed(_:time:)`` for a read that checks the key of the record it reads (a read off the queue:
    /// ``SegmentLog/loadOffQueue(_:_:use:)``): an entry of the base is taken by its key's hash alone,
    /// without reading the key the directory keeps, whose cache miss was a tenth of a cold read (`perf`).
    /// Of two keys with one hash (a chance of 2⁻⁶⁴ a pair), the read may take the other's entry: the key
    /// in its record then differs, the read is made again on the queue, which compares keys, and the
    /// other entry has counted as used once.
    mutating func markUsedByHash(_ key: String, time: Double) -> (record: DiskRecord, recency: UInt64)? {
        markUsed(key, time: time, comparingKeys: false)
    }

    @inline(__always)
    private mutating func markUsed(_ key: String, time: Double, comparingKeys: Bool) -> (record: DiskRecord, recency: UInt64)? {
        guard let hash = lookupHash(key) else { return nil }
        let recency = nextRecency
        if let position = overlay.position(of: key, hash: hash) {
            nextRecency += 1
            overlay[position].recency = recency
            overlay[position].record.lastAccess = time
            let record = overlay[position].record
            journal?.touch(record, recency: recency, time: time)
            usesWhileWritten?.append((record.keyHash, record.segment, record.offset, time))
            return (record, recency)
        }
        guard let slot = comparingKeys ? baseSlot(key, hash: hash) : baseSlot(hash: hash) else { return nil }
        nextRecency += 1
        base?.touch(slot, recency: recency, time: time)
        guard let record = base?.record(at: slot) else { return nil }
        journal?.touch(record, recency: recency, time: time)
        usesWhileWritten?.append((record.keyHash, record.segment, record.offset, time))
        return (record, recency)
    }

    /// The recency of the live entry whose record is at `offset` of `segment`, found by its key's hash;
    /// nil if no live entry has its record there.
    func recency(hash: UInt64, segment: UInt32, offset: UInt32) -> UInt64? {
        if let position = overlay.position(hash: hash, segment: segment, offset: offset) { return overlay[position].recency }
        guard let base, let slot = base.find(hash: hash, segment: segment, offset: offset), !isShadowed(slot) else { return nil }
        return base.recency(at: slot)
    }

    /// Marks used the base entry whose record is at `offset` of `segment` (an access record replayed),
    /// found by its key's hash; false if the base has no such live entry.
    mutating func touchBase(hash: UInt64, segment: UInt32, offset: UInt32, time: Double) -> Bool {
        guard let base, let slot = base.find(hash: hash, segment: segment, offset: offset), !isShadowed(slot) else { return false }
        base.touch(slot, recency: nextRecency, time: time)
        if journal != nil, let record = base.record(at: slot) { journal?.touch(record, recency: nextRecency, time: time) }
        nextRecency += 1
        return true
    }

    // MARK: Changes

    /// Sets the record of `key`, as its most recent use; returns the one it replaced.
    @discardableResult
    package mutating func set(_ key: String, _ record: DiskRecord) -> DiskRecord? {
        var record = record
        changes &+= 1
        if record.keyHash == 0 { record.keyHash = hash(key) } // the directory, access records and the overlay need it
        assert(record.keyHash == hash(key), "a record's keyHash is of another seed than the index's")
        let recency = nextRecency
        nextRecency += 1
        if let position = overlay.position(of: key, hash: record.keyHash) {
            let old = overlay[position].record
            (overlay[position].record, overlay[position].recency) = (record, recency)
            // Listed in the spelling of its latest write, the one its record holds: a compaction copies the
            // record's, a replay takes it, and a base slot written again takes it too (below).
            if !KeyTable.hasSameBytes(overlay[position].key, key) {
                overlay[position].key = key
                order?.note(key)
            }
            journal?.set(key, record, recency: recency, replacing: old)
            return old
        }
        overlay.insert(KeyTable.Entry(key: key, record: record, recency: recency))
        if let slot = baseSlot(key, hash: record.keyHash) {
            shadow(slot)
            order?.note(key) // now spelled as `key` (the overlay's)
            let old = base?.record(at: slot)
            journal?.set(key, record, recency: recency, replacing: old)
            return old
        }
        count += 1
        order?.note(key)
        journal?.set(key, record, recency: recency, replacing: nil)
        return nil
    }

    /// Removes `key`; returns its record. `knownHash`: the key's hash where the caller has it (the
    /// record it is removing carries it), so that a removal hashes the key once, not twice.
    @discardableResult
    package mutating func remove(_ key: String, knownHash: UInt64? = nil) -> DiskRecord? {
        order?.note(key) // a key that was not there is found so when the order merges
        assert(knownHash == nil || knownHash == hash(key), "a known hash of another seed than the index's")
        guard let hash = knownHash ?? lookupHash(key) else { return nil }
        if let position = overlay.position(of: key, hash: hash) { return removeEntry(at: .overlay(position)) }
        guard let slot = baseSlot(key, hash: hash) else { return nil }
        return removeEntry(at: .base(slot))
    }

    /// Removes `key`, which ``locate(_:)`` found at `location`; where entries moved since, it is
    /// looked up again. Returns its record.
    package mutating func remove(_ key: String, at location: Location, hash: UInt64) -> DiskRecord? {
        guard location.changes == changes else { return remove(key, knownHash: hash) }
        order?.note(key)
        return removeEntry(at: location.place)
    }

    /// Removes the live entry at `place`; returns its record.
    private mutating func removeEntry(at place: Location.Place) -> DiskRecord? {
        changes &+= 1
        count -= 1
        let removed: DiskRecord?
        switch place {
        case .overlay(let position):
            removed = overlay.remove(at: position).record
        case .base(let slot):
            shadow(slot)
            removed = base?.record(at: slot)
        }
        if let removed { journal?.remove(removed) }
        return removed
    }

    /// Changes the record of `key` in place, keeping its recency; false if absent.
    @discardableResult
    package mutating func update(_ key: String, _ change: (inout DiskRecord) -> Void) -> Bool {
        guard let hash = lookupHash(key) else { return false }
        changes &+= 1
        if let position = overlay.position(of: key, hash: hash) {
            let old = overlay[position].record
            change(&overlay[position].record)
            overlay[position].record.keyHash = hash // what the entry is found by
            // Under its spelling in the overlay, which the builder keeps (it replaces the entry in place).
            journal?.set(overlay[position].key, overlay[position].record, recency: overlay[position].recency, replacing: old)
            return true
        }
        guard let base, let slot = baseSlot(key, hash: hash), let old = base.record(at: slot) else { return false }
        var record = old
        change(&record)
        if record.value == old.value, record.expiry == old.expiry, record.lastAccess == old.lastAccess, record.keyHash == old.keyHash {
            moveInPlace(slot, from: old, to: record)
            return true
        }
        shadow(slot)
        record.keyHash = hash
        overlay.insert(KeyTable.Entry(key: key, record: record, recency: base.recency(at: slot)))
        journal?.set(key, record, recency: base.recency(at: slot), replacing: old)
        order?.note(key)
        queue = [] // the queue names the slot: built again when needed
        return true
    }

    /// Points the live entry whose record is `old` at `new`, a copy of that record elsewhere (a
    /// compaction's), keeping its recency and last use. The entry is found by its key's hash and the
    /// record's position, no key read or compared: a position holds one record. Returns the entry's
    /// last use and recency, nil if no live entry has its record at `old`'s position any more (the key
    /// was written or removed since the copy was planned).
    mutating func move(_ old: DiskRecord, to new: DiskRecord) -> (lastAccess: Double, recency: UInt64)? {
        if let position = overlay.position(hash: old.keyHash, segment: old.segment, offset: old.offset) {
            changes &+= 1
            let before = overlay[position].record
            (overlay[position].record.segment, overlay[position].record.offset, overlay[position].record.length) =
                (new.segment, new.offset, new.length)
            journal?.set(overlay[position].key, overlay[position].record, recency: overlay[position].recency, replacing: before)
            return (before.lastAccess, overlay[position].recency)
        }
        guard let base, let slot = base.find(hash: old.keyHash, segment: old.segment, offset: old.offset), !isShadowed(slot),
              let before = base.record(at: slot) else { return nil }
        changes &+= 1
        var moved = before
        (moved.segment, moved.offset, moved.length) = (new.segment, new.offset, new.length)
        moveInPlace(slot, from: before, to: moved)
        return (before.lastAccess, base.recency(at: slot))
    }

    /// Points base slot `slot`, whose record is `old`, at `new`, the same record elsewhere (only its position
    /// changed: a compaction's copy): in place, in the private copy of the page, not shadowed.
    private mutating func moveInPlace(_ slot: Int, from old: DiskRecord, to new: DiskRecord) {
        base?.move(slot, segment: new.segment, offset: new.offset, length: new.length)
        basePositionsMoved = true
        journal?.move(old, to: new)
    }

    package mutating func removeAll() {
        changes &+= 1
        journal = nil // its builder stops: the directory it keeps is of entries gone
        base = nil
        basePositionsMoved = false
        shadowed = []
        overlay.removeAll()
        count = 0
        queue = []
        if order != nil { order = KeyOrder(keys: []) }
    }

    /// The spelling under which the index holds `key`, nil if absent.
    func storedKey(_ key: String) -> String? {
        guard let hash = lookupHash(key) else { return nil }
        if let position = overlay.position(of: key, hash: hash) { return overlay[position].key }
        return baseSlot(key, hash: hash).flatMap { base?.key(at: $0) }
    }
}
