import CStashAtomics

/// Placing a new directory's entries in its slots (``DirectoryFormat/encode(_:position:store:segmentSalts:forEach:)``).
///
/// An entry's home slot lies at random in a table of ~70 MB at a million entries, so placing an entry
/// written since the directory before is a cache miss, two with its uses; taken one after the other,
/// those misses were a third of writing the directory at close (`perf`). So each slot is asked for
/// (``SlotTable/prefetch(_:)``) when its entry comes in, and the entry is placed ``PendingSlots/depth``
/// entries later, when its lines are there. Entries are placed in the order they come in, so the table
/// is the one placing each at once makes.
extension DirectoryFormat {
    /// An entry to place: its home slot, then its slot's six words (key hash, key reference, segment and
    /// offset, length and flags, size, expiry) and its uses' two (last access, recency), as stored.
    struct PendingSlot {
        typealias Words = (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
        var home: Int
        var words: Words
    }

    /// The six words of the slot of an entry whose record is `record`, whose key lies at `keyAt` of the
    /// arena (`keyLength` bytes, its value file's number and hash after it), then its uses' two.
    static func slotWords(_ record: DiskRecord, keyAt: Int, keyLength: Int, recency: UInt64) -> PendingSlot.Words {
        (record.keyHash, UInt64(keyAt) << 24 | UInt64(keyLength),
         UInt64(record.segment) | UInt64(record.offset) << 32, UInt64(record.length) | UInt64(record.fileID == nil ? 0 : 1) << 32,
         UInt64(record.size), record.expiry.bitPattern, record.lastAccess.bitPattern, recency)
    }

    /// The entries come in and not placed yet, first in first out.
    struct PendingSlots {
        /// How far placing lags behind: enough for the misses of a few entries to overlap.
        static let depth = 16
        private var slots = [PendingSlot](repeating: PendingSlot(home: 0, words: (0, 0, 0, 0, 0, 0, 0, 0)), count: depth)
        private var first = 0
        private var count = 0

        /// Adds `slot`; returns the entry that is due to be placed now, if the queue was full.
        mutating func push(_ slot: PendingSlot) -> PendingSlot? {
            guard count == Self.depth else {
                slots[(first + count) % Self.depth] = slot
                count += 1
                return nil
            }
            let due = slots[first]
            slots[first] = slot
            first = (first + 1) % Self.depth
            return due
        }

        /// The oldest entry not placed yet, nil when none is left.
        mutating func pop() -> PendingSlot? {
            guard count > 0 else { return nil }
            let due = slots[first]
            first = (first + 1) % Self.depth
            count -= 1
            return due
        }
    }

    /// The slots and uses of a directory being written, in `bytes`.
    struct SlotTable {
        let bytes: UnsafeMutableRawBufferPointer
        let slotsStart: Int
        let usesStart: Int
        let slotCount: Int

        /// Asks for the cache lines of `slot` and its uses, to be written soon.
        @inline(__always)
        func prefetch(_ slot: Int) {
            guard let base = bytes.baseAddress else { return }
            stash_prefetch_for_write(base + slotsStart + slot * slotLength)
            stash_prefetch_for_write(base + usesStart + slot * usesLength)
        }

        /// Puts `entry` in the first empty slot from its home on (linear probing, wrapping at the end).
        func place(_ entry: PendingSlot) {
            var slot = entry.home
            while bytes.load(fromByteOffset: slotsStart + slot * slotLength, as: UInt64.self) != 0 {
                slot = slot + 1 == slotCount ? 0 : slot + 1
            }
            write(entry.words, at: slot)
        }

        /// Writes `words` as the slot and uses of `slot`.
        func write(_ words: PendingSlot.Words, at slot: Int) {
            func put(_ value: UInt64, _ offset: Int) { bytes.storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt64.self) }
            let (at, uses) = (slotsStart + slot * slotLength, usesStart + slot * usesLength)
            put(words.0, at)
            put(words.1, at + 8)
            put(words.2, at + 16)
            put(words.3, at + 24)
            put(words.4, at + 32)
            put(words.5, at + 40)
            put(words.6, uses)
            put(words.7, uses + 8)
        }
    }
}
