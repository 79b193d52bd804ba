import Foundation

// The checker of `StashTorture soak`: every read against the writers' logs (SoakRoles.swift says what
// the lines are). Times are the monotonic clock's nanoseconds. A write's call runs from its `B` line's
// time to its `A` line's; one without an `A` (its process was killed, or the call threw) may have
// taken effect at any time after it began, or never.
//
// A read of KEY over [start, end] is wrong when it returned
// - a value no writer began to write for KEY (phantom, or torn: not a whole value of the key);
// - a value whose write began after the read ended (from the future);
// - a value superseded before the read began: another write of KEY (a set, a removal, a `removeAll`)
//   began after that value's write returned and itself returned before the read began (stale);
// - nothing, while a set of KEY had returned before the read began and no removal or `removeAll`
//   (returned or not) can have come after it and before the read ended (missing).
// Errors a read throws are counted apart: the contract allows `inUse`, never silence.

/// One write, as the logs tell it.
struct SoakWrite {
    enum Kind: String { case set, remove, clear }
    var kind: Kind
    var key: String?
    var sequence: UInt64
    var start: UInt64
    /// When its call returned; `.max` if it never did (or threw): then it may or may not have landed.
    var end: UInt64 = .max
}

/// One read.
struct SoakRead {
    var source: String
    var key: String
    var start: UInt64
    var end: UInt64
    /// The sequence read; nil: missing.
    var found: UInt64?
    /// Set for reads that returned neither a value nor notFound (`torn`, `error:…`).
    var failure: String?
}

/// What the soak saw and what the checker found.
struct SoakReport {
    var writes = 0, acknowledged = 0, writeErrors = 0, reads = 0, readErrors: [String: Int] = [:]
    var violations: [String: Int] = [:]
    /// Wrong reads by the kind of process that made them (`reader`, `writer`, `cli`), and how many of
    /// them a process made that had the store open across a deletion of `stash-shared`.
    var bySource: [String: Int] = [:]
    var acrossDeletion = 0
    var examples: [String] = []
    /// How many examples each (process, kind) has: a few of each, not one burst.
    var exampleCounts: [String: Int] = [:]
    var worstLag: UInt64 = 0
    var totalViolations: Int { violations.values.reduce(0, +) }
}

struct SoakHistory {
    var writes: [UInt64: SoakWrite] = [:]
    var reads: [SoakRead] = []
    /// When each process that reads opened its store (source → times), and when `stash-shared` was deleted.
    var opened: [String: [UInt64]] = [:]
    var sharedDeletions: [UInt64] = []

    /// Adds the lines of one process's log.
    mutating func add(log text: String, source: String) {
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ").map(String.init)
            switch (fields.first, fields.count) {
            case ("B", 5):
                guard let kind = SoakWrite.Kind(rawValue: fields[1]), let sequence = UInt64(fields[3]), let start = UInt64(fields[4]) else { continue }
                writes[sequence] = SoakWrite(kind: kind, key: kind == .clear ? nil : fields[2], sequence: sequence, start: start)
            case ("A", 3):
                guard let sequence = UInt64(fields[1]), let end = UInt64(fields[2]) else { continue }
                writes[sequence]?.end = end
            case ("R", 5):
                guard let start = UInt64(fields[2]), let end = UInt64(fields[3]) else { continue }
                let found = UInt64(fields[4])
                reads.append(SoakRead(source: source, key: fields[1], start: start, end: end, found: found,
                                      failure: found == nil && fields[4] != "missing" ? fields[4] : nil))
            case ("O", 2):
                if let time = UInt64(fields[1]) { opened[source, default: []].append(time) }
            default:
                continue // `E` (the write stays unacknowledged), `X` (an open that failed)
            }
        }
    }

    /// The writes of one key (and every `removeAll`) arranged for the questions the checker asks.
    private struct KeyWrites {
        /// Acknowledged writes by start, and the least end from each on.
        var byStart: [(start: UInt64, end: UInt64)] = []
        var leastEndFrom: [UInt64] = []
        /// Acknowledged sets by end, and the latest start (and its end) up to each.
        var setsByEnd: [(start: UInt64, end: UInt64)] = []
        var latestSetUpTo: [(start: UInt64, end: UInt64)] = []
        /// Removals and `removeAll`s, acknowledged or not, by start, and the greatest end up to each.
        var removersByStart: [(start: UInt64, end: UInt64)] = []
        var latestRemoverEndUpTo: [UInt64] = []

        init(_ writes: [SoakWrite]) {
            byStart = writes.filter { $0.end != .max }.map { ($0.start, $0.end) }.sorted { $0.start < $1.start }
            leastEndFrom = Array(repeating: .max, count: byStart.count)
            var least = UInt64.max
            for index in byStart.indices.reversed() {
                least = min(least, byStart[index].end)
                leastEndFrom[index] = least
            }
            setsByEnd = writes.filter { $0.kind == .set && $0.end != .max }.map { ($0.start, $0.end) }.sorted { $0.end < $1.end }
            var latest: (start: UInt64, end: UInt64) = (0, 0)
            latestSetUpTo = setsByEnd.map { set in
                if set.start >= latest.start { latest = set }
                return latest
            }
            removersByStart = writes.filter { $0.kind != .set }.map { ($0.start, $0.end) }.sorted { $0.start < $1.start }
            var greatest: UInt64 = 0
            latestRemoverEndUpTo = removersByStart.map { greatest = max(greatest, $0.end); return greatest }
        }

        /// The end of the earliest-returning acknowledged write that began after `time`, if it returned before `before`.
        func superseded(after time: UInt64, before: UInt64) -> UInt64? {
            let first = partition(byStart.count) { byStart[$0].start > time }
            return first < byStart.count && leastEndFrom[first] < before ? leastEndFrom[first] : nil
        }

        /// The latest-starting set that returned before `time`, unless a removal may have followed it before `readEnd`.
        func unremovedSet(before time: UInt64, readEnd: UInt64) -> (start: UInt64, end: UInt64)? {
            let count = partition(setsByEnd.count) { setsByEnd[$0].end >= time }
            guard count > 0 else { return nil }
            let set = latestSetUpTo[count - 1]
            let removers = partition(removersByStart.count) { removersByStart[$0].start >= readEnd }
            return removers > 0 && latestRemoverEndUpTo[removers - 1] > set.start ? nil : set
        }

        /// The first index in 0..<count for which `isAfter` holds (it holds for every later one).
        private func partition(_ count: Int, _ isAfter: (Int) -> Bool) -> Int {
            var (low, high) = (0, count)
            while low < high {
                let middle = (low + high) / 2
                if isAfter(middle) { high = middle } else { low = middle + 1 }
            }
            return low
        }
    }

    func check() -> SoakReport {
        var report = SoakReport()
        report.writes = writes.count
        report.acknowledged = writes.values.filter { $0.end != .max }.count
        let clears = writes.values.filter { $0.kind == .clear }
        var byKey: [String: [SoakWrite]] = [:]
        for write in writes.values { if let key = write.key { byKey[key, default: []].append(write) } }
        let keys = Set(byKey.keys).union(reads.map(\.key))
        let arranged = Dictionary(uniqueKeysWithValues: keys.map { ($0, KeyWrites((byKey[$0] ?? []) + clears)) })
        for read in reads {
            report.reads += 1
            if let failure = read.failure {
                if failure == "torn" { note("torn", read, "not a whole value of its key", lag: 0, &report) }
                let process = read.source.split(separator: "-").first.map(String.init) ?? read.source
                report.readErrors[process + " " + String(failure.prefix(60)), default: 0] += 1
                continue
            }
            let key = arranged[read.key]!
            if let found = read.found {
                guard let write = writes[found], write.kind == .set, write.key == read.key else {
                    note("phantom", read, "#\(found) was never written to \(read.key)", lag: 0, &report)
                    continue
                }
                if write.start > read.end {
                    note("future", read, "#\(found) was written after the read", lag: 0, &report)
                } else if write.end != .max, let end = key.superseded(after: write.end, before: read.start) {
                    note("stale", read, "#\(found) was superseded by a write that returned \(milliseconds(read.start - end)) ms before the read began",
                         lag: read.start - end, &report)
                }
            } else if let set = key.unremovedSet(before: read.start, readEnd: read.end) {
                note("missing", read, "a set that returned \(milliseconds(read.start - set.end)) ms before the read began, and no removal after it",
                     lag: read.start - set.end, &report)
            }
        }
        return report
    }

    private func note(_ kind: String, _ read: SoakRead, _ what: String, lag: UInt64, _ report: inout SoakReport) {
        report.violations[kind, default: 0] += 1
        report.bySource[read.source.split(separator: "-").first.map(String.init) ?? read.source, default: 0] += 1
        report.worstLag = max(report.worstLag, lag)
        let opened = (self.opened[read.source] ?? []).last { $0 <= read.start }
        let deletion = sharedDeletions.last { $0 <= read.start }
        var context = ""
        if let opened, let deletion, deletion > opened {
            report.acrossDeletion += 1
            context = "; its process opened the store before stash-shared was deleted, \(milliseconds(read.start - deletion)) ms before"
        }
        report.exampleCounts[read.source + kind, default: 0] += 1
        guard report.examples.count < 24, report.exampleCounts[read.source + kind]! <= 2 else { return }
        report.examples.append("\(kind): \(read.source) read \(read.key) -> \(read.found.map { "#\($0)" } ?? "missing"): \(what)\(context)")
    }

    private func milliseconds(_ nanoseconds: UInt64) -> String { String(nanoseconds / 1_000_000) }
}
