/// Eviction: the least recently used entries first, without a list of every key (``KeyDirectory``'s
/// recency counter and its queue of the oldest few thousand).
extension KeyDirectory {
    /// Calls `body` with entries from the least recently used on, until it returns false.
    mutating func forEachOldestFirst(_ body: (String, DiskRecord) -> Bool) {
        var yielded = Set<Reference>()
        var rebuilds = 0
        while true {
            if queueStart >= queue.count {
                // The oldest eighth (at least 4,096) by one pass, amortised over that many evictions;
                // if a caller wants more in one call, everything.
                guard rebuilds < 2 else { return }
                let all = referencesByRecency()
                guard !all.isEmpty else { return }
                queue = rebuilds == 0 ? Array(all.prefix(max(4096, all.count / 8))) : all
                queueStart = 0
                rebuilds += 1
            }
            var position = queueStart
            while position < queue.count {
                let (recency, reference) = queue[position]
                position += 1
                guard self.recency(of: reference) == recency else {
                    if position - 1 == queueStart { queueStart = position } // gone or used since: never again the oldest
                    continue
                }
                guard !yielded.contains(reference), let (key, record) = entry(reference) else { continue }
                guard body(key, record) else { return }
                yielded.insert(reference)
            }
            queueStart = queue.count // every queued entry was offered: the next round builds the queue again
        }
    }
}
