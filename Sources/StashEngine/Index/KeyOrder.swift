#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The index's keys in order, so that a prefix query costs O(log n + matches), not a pass over every key.
///
/// The order is that of the keys' UTF-8 bytes in Normalization Form C: Unicode scalars of the NFC
/// spelling compared one by one, which is what Swift's `<` on `String` means. (It is not always what
/// Swift's `<` gives: on keys with decomposed Hangul the standard library's comparison is not an order
/// at all — `"\u{1100}\u{1161}" < "\u{AC00}\u{AC00}"` and the reverse are both false — so the bytes
/// are compared here.) Every key whose NFC bytes begin with some bytes `b` then stands in one run,
/// found by a binary search for `b` (``candidates(withPrefix:_:)``).
///
/// Kept by the ``KeyDirectory`` it orders, under the same lock, so it is never out of step with it:
/// built by the first prefix query (one sort), then kept as the index changes. A change only notes
/// the key it touched (a set insertion, and nothing at all while no prefix query was ever made, so
/// writes cost what they did); the next query asks the index what became of each noted key (gone,
/// new, or spelled anew) and merges them: a few keys in place, many in one pass over the run. Replayed
/// changes (another process's writes) reach the index through the same `set`/`remove`, so they are
/// noted the same way.
struct KeyOrder {
    /// A key as the index spells it, with its NFC bytes where they are not its own UTF-8 (non-ASCII).
    struct Key {
        let key: String
        private let nfc: [UInt8]?

        init(_ key: String) {
            self.key = key
            nfc = key.utf8.allSatisfy { $0 < 0x80 } ? nil : KeyOrder.nfcBytes(key)
        }

        func withNFCBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
            if let nfc { return nfc.withUnsafeBufferPointer(body) }
            if let result = key.utf8.withContiguousStorageIfAvailable(body) { return result }
            return Array(key.utf8).withUnsafeBufferPointer(body)
        }
    }

    /// Every key of the index once, in order, as of the last merge.
    private(set) var sorted: [Key]
    /// Keys set or removed since the last merge (canonically equivalent spellings are one element).
    private var touched: Set<String> = []

    /// Sorts `keys` (the index's, each once).
    init(keys: [String]) {
        sorted = keys.map(Key.init).sorted { Self.compare($0, $1) < 0 }
    }

    var hasChanges: Bool { !touched.isEmpty }

    /// The keys in order.
    var keys: [String] { sorted.map(\.key) }

    /// Notes that `key` was added, removed or stored under another spelling since the last merge.
    mutating func note(_ key: String) {
        touched.insert(key)
    }

    /// Brings the order up to the index: `stored` gives the spelling under which the index holds
    /// a key now, nil if it holds none.
    /// - Complexity: O(t log n) for t noted keys, plus one pass over the n keys when t is more than a few.
    mutating func merge(_ stored: (String) -> String?) {
        guard !touched.isEmpty else { return }
        let changes = touched
        touched = []
        // Each noted key: where it stands (or would stand), and what it is now.
        var edits: [(index: Int, found: Bool, now: Key?)] = []
        edits.reserveCapacity(changes.count)
        for key in changes {
            let probe = Key(key)
            let index = lowerBound(probe)
            let found = index < sorted.count && Self.compare(sorted[index], probe) == 0
            let now = stored(key).map(Key.init)
            if found || now != nil { edits.append((index, found, now)) }
        }
        if edits.count <= 16 {
            // Back to front, so the positions found before stay right: an insertion or removal moves
            // only what follows it. At one position, the key there first (replaced or removed), then
            // the new keys before it, the greatest first (each lands in front of the one inserted before).
            edits.sort { first, second in
                if first.index != second.index { return first.index > second.index }
                if first.found != second.found { return first.found }
                guard let one = first.now, let other = second.now else { return false }
                return Self.compare(one, other) > 0
            }
            for edit in edits {
                switch (edit.found, edit.now) {
                case (true, nil): sorted.remove(at: edit.index)
                case (true, let now?): sorted[edit.index] = now
                case (false, let now?): sorted.insert(now, at: edit.index)
                case (false, nil): break
                }
            }
            return
        }
        // Many: one pass, the run's keys and the new keys (sorted) merged.
        let replaced = edits.filter(\.found).sorted { $0.index < $1.index }
        let inserted = edits.compactMap { $0.found ? nil : $0.now }.sorted { Self.compare($0, $1) < 0 }
        var result: [Key] = []
        result.reserveCapacity(sorted.count + inserted.count)
        var nextReplaced = 0
        var nextInserted = 0
        for (index, key) in sorted.enumerated() {
            var kept: Key? = key
            if nextReplaced < replaced.count, replaced[nextReplaced].index == index {
                kept = replaced[nextReplaced].now
                nextReplaced += 1
            }
            guard let kept else { continue }
            while nextInserted < inserted.count, Self.compare(inserted[nextInserted], kept) < 0 {
                result.append(inserted[nextInserted])
                nextInserted += 1
            }
            result.append(kept)
        }
        result.append(contentsOf: inserted[nextInserted...])
        sorted = result
    }

    /// The position of the first key not less than `key`.
    private func lowerBound(_ key: Key) -> Int {
        var low = 0
        var high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if Self.compare(sorted[middle], key) < 0 { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The order of two keys' NFC bytes: negative, zero (the same key) or positive.
    static func compare(_ one: Key, _ other: Key) -> Int {
        one.withNFCBytes { first in
            other.withNFCBytes { second in
                let common = min(first.count, second.count)
                if common > 0, let a = first.baseAddress, let b = second.baseAddress {
                    let result = memcmp(a, b, common)
                    if result != 0 { return Int(result) }
                }
                return first.count - second.count
            }
        }
    }

    /// Calls `body` with every key that may start with `prefix` (`String.hasPrefix`), in order; a
    /// superset: the caller still asks `hasPrefix` (or what stands for it) of each.
    ///
    /// A key that starts with `prefix` begins with the prefix's characters, each canonically
    /// equivalent to the prefix's; normalization never joins two characters, so the key's NFC
    /// spelling begins with the prefix's. Where the prefix's last character is not ASCII, it is left
    /// out of the search (a key whose next character joins it may still spell it another way), so
    /// the run searched is that of the prefix without it: a few more candidates, never one too few.
    /// - Complexity: O(log n) comparisons, plus one test per key of the run.
    func candidates(withPrefix prefix: String, _ body: (String) -> Void) {
        var searched = prefix
        if let last = searched.last, !(last.utf8.count == 1 && last.utf8.first! < 0x80) { searched.removeLast() }
        let bytes = Self.nfcBytes(searched)
        var index = lowerBound(Key(String(decoding: bytes, as: UTF8.self)))
        while index < sorted.count, sorted[index].withNFCBytes({ $0.starts(with: bytes) }) {
            body(sorted[index].key)
            index += 1
        }
    }

    /// The UTF-8 bytes of `string` in Normalization Form C.
    static func nfcBytes(_ string: String) -> [UInt8] {
        if string.utf8.allSatisfy({ $0 < 0x80 }) { return Array(string.utf8) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(string.utf8.count)
        string._withNFCCodeUnits { bytes.append($0) }
        return bytes
    }
}

extension KeyDirectory {
    /// The keys that start with `prefix` (`String.hasPrefix`, asked through `matches`, which must
    /// answer as it does) and that `isIncluded` accepts, in order (NFC bytes). Orders the keys on
    /// the first call (``KeyOrder``) and brings that order up to date on later ones.
    /// - Complexity: O(log n + k) for k keys in the prefix's run, after the first call's sort
    ///   and the merge of the keys changed since the last call.
    package mutating func keys(withPrefix prefix: String, matching matches: (String) -> Bool,
                               where isIncluded: (String) -> Bool = { _ in true }) -> [String] {
        var order = self.order.take() ?? KeyOrder(keys: keys)
        order.merge { storedKey($0) }
        self.order = order
        var result: [String] = []
        order.candidates(withPrefix: prefix) { key in
            if matches(key), isIncluded(key) { result.append(key) }
        }
        return result
    }
}
