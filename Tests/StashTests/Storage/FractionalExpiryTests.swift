import Foundation
import StashTestSupport
import Testing
@testable import Stash
@testable import StashEngine

/// Contract item 1: an expiry survives a reopen unchanged. The engine stored seconds since 1970,
/// while a `Date` is seconds since 2001: converting rounded, and `.seconds(0.1)` came back ~1e-7 s
/// off (…800.0999999 for …800.1), so `entry.expiry` no longer equalled what was written and
/// `StorageError.expired(date)` differed between a memory hit and a disk read.
@Suite("Fractional expiries")
struct FractionalExpiryTests {
    static let expiries: [Expiry] = [
        .seconds(0.1), .seconds(0.001), .seconds(60.123), .seconds(86_400.999),
        .date(Date(timeIntervalSinceReferenceDate: 1_234_567_890.123_456_7)),
    ]

    /// The date `expiry` resolves to when written at `start`.
    private static func resolved(_ expiry: Expiry, at start: Date) -> Date {
        switch expiry {
        case .seconds(let seconds): return start.addingTimeInterval(seconds)
        case .date(let date): return date
        case .never: return .distantFuture
        }
    }

    private static func keys(_ count: Int) -> [String] { (0..<count).map { "k\($0)" } }

    private func openDisk(_ directory: TemporaryDirectory, _ clock: ManualClock) throws -> DiskStorage<Data> {
        try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData(), now: clock.function)
    }

    private func openStorage(_ directory: TemporaryDirectory, _ clock: ManualClock) throws -> Storage<Data> {
        try Storage(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forData(), now: clock.function)
    }

    /// Every expiry's date, read back through `disk`, is the date written: in `entry`, in
    /// `entryInfos`, and at the exact instant it expires.
    private func expectExact(_ disk: DiskStorage<Data>, _ dates: [Date], _ clock: ManualClock, _ comment: String) throws {
        let infos = Dictionary(uniqueKeysWithValues: disk.entryInfos.map { ($0.key, $0.expiry) })
        for (key, date) in zip(Self.keys(dates.count), dates) {
            clock.set(ManualClock.defaultStart)
            #expect(try disk.entry(forKey: key).expiry == .date(date), "\(comment): \(key)")
            #expect(infos[key] == .date(date), "\(comment): \(key) in entryInfos")
            clock.set(Date(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate.nextDown))
            #expect(try !disk.isExpiredObject(forKey: key), "\(comment): \(key) expired early")
            clock.set(date)
            #expect(try disk.isExpiredObject(forKey: key), "\(comment): \(key) not expired at its date")
            #expect(storageError { _ = try disk.object(forKey: key) } == .expired(date), "\(comment): \(key)")
        }
        clock.set(ManualClock.defaultStart)
    }

    @Test("fractional expiries come back equal after a reopen, through DiskStorage alone", arguments: [false, true])
    func diskStorageReopen(withKeyDirectory: Bool) throws {
        let directory = TemporaryDirectory()
        let clock = ManualClock()
        let dates = Self.expiries.map { Self.resolved($0, at: clock.now) }
        // With a directory minimum of 1 the close writes the key directory, and the reopen reads its slots.
        try withEngineThresholds(in: directory.path, directoryMinimum: withKeyDirectory ? 1 : nil) {
            do {
                let disk = try openDisk(directory, clock)
                for (key, expiry) in zip(Self.keys(dates.count), Self.expiries) {
                    try disk.setObject(Data(key.utf8), forKey: key, expiry: expiry)
                }
                try expectExact(disk, dates, clock, "before the reopen")
            }
            try expectExact(try openDisk(directory, clock), dates, clock, "after the reopen")
        }
    }

    // The key directory holds expiries too: one of the former layout (`STASHKD1`, seconds since 1970)
    // is older, not damaged. The store replays its segments without a recovery issue (which `stash
    // check` would report as damage in every store that had one), and a writer's close replaces it.
    @Test("a key directory of the former layout is no damage: the segments are replayed and a writer replaces it")
    func formerDirectoryLayout() throws {
        let directory = TemporaryDirectory()
        let clock = ManualClock()
        let file = directory.storePath() + "/" + StoreFolder.directoryName
        let dates = Self.expiries.map { Self.resolved($0, at: clock.now) }
        try withEngineThresholds(in: directory.path, directoryMinimum: 1) {
            do {
                let disk = try openDisk(directory, clock)
                for (key, expiry) in zip(Self.keys(dates.count), Self.expiries) {
                    try disk.setObject(Data(key.utf8), forKey: key, expiry: expiry)
                }
            }
            var bytes = try Damage.bytes(file)
            try #require(Array(bytes[0..<8]) == DirectoryFormat.magic, "the close wrote no key directory")
            bytes.replaceSubrange(0..<8, with: DirectoryFormat.formerMagic)
            try Damage.write(bytes, to: file)
            do {
                let disk = try openDisk(directory, clock)
                #expect(disk.recoveryIssues.isEmpty, "\(disk.recoveryIssues)")
                try expectExact(disk, dates, clock, "with a former key directory")
                try disk.setObject(Data("after".utf8), forKey: "after") // a change: the close writes a directory
            }
            #expect(Array(try Damage.bytes(file)[0..<8]) == DirectoryFormat.magic)
            try expectExact(try openDisk(directory, clock), dates, clock, "with the new key directory")
        }
    }

    @Test("fractional expiries come back equal after a compaction and a reopen")
    func afterCompaction() throws {
        let directory = TemporaryDirectory()
        let clock = ManualClock()
        let dates = Self.expiries.map { Self.resolved($0, at: clock.now) }
        do {
            let disk = try openDisk(directory, clock)
            for (key, expiry) in zip(Self.keys(dates.count), Self.expiries) {
                try disk.setObject(Data(key.utf8), forKey: key, expiry: expiry)
            }
            for round in 0..<20 { try disk.setObject(Data("\(round)".utf8), forKey: "churn") }
            try disk.compactNow()
            try expectExact(disk, dates, clock, "after the compaction")
        }
        try expectExact(try openDisk(directory, clock), dates, clock, "after the compaction and a reopen")
    }

    @Test("fractional expiries written in a batch come back equal after a reopen")
    func throughABatch() throws {
        let directory = TemporaryDirectory()
        let clock = ManualClock()
        let dates = Self.expiries.map { Self.resolved($0, at: clock.now) }
        do {
            let storage = try openStorage(directory, clock)
            var batch = StorageBatch<Data>()
            for (key, expiry) in zip(Self.keys(dates.count), Self.expiries) { batch.setObject(Data(key.utf8), forKey: key, expiry: expiry) }
            try storage.write(batch)
            for (key, date) in zip(Self.keys(dates.count), dates) { #expect(try storage.entry(forKey: key).expiry == .date(date)) }
        }
        try expectExact(try openDisk(directory, clock), dates, clock, "after a batch and a reopen")
    }

    @Test("StorageError.expired carries the same date from memory and from disk")
    func expiredErrorIsEqualFromMemoryAndDisk() throws {
        let directory = TemporaryDirectory()
        let clock = ManualClock()
        let dates = Self.expiries.map { Self.resolved($0, at: clock.now) }
        let storage = try openStorage(directory, clock)
        for (key, expiry) in zip(Self.keys(dates.count), Self.expiries) {
            try storage.setObject(Data(key.utf8), forKey: key, expiry: expiry)
        }
        clock.set(.distantFuture.addingTimeInterval(-1))
        let fromMemory = Self.keys(dates.count).map { key in storageError { _ = try storage.object(forKey: key) } }
        storage.hybridStorage.memoryStorage.removeAll()
        let fromDisk = Self.keys(dates.count).map { key in storageError { _ = try storage.object(forKey: key) } }
        #expect(fromMemory == dates.map { .expired($0) })
        #expect(fromDisk == fromMemory)
    }

    // Records written before the engine kept seconds since 2001 (no flag in the kind byte) hold
    // seconds since 1970: they still read as the dates they always meant.
    @Test("a record of seconds since 1970 (written before) reads as the date it meant")
    func recordOfSecondsSince1970() throws {
        let salt: UInt64 = 0x0123_4567_89ab_cdef
        let (time, expiry) = (1_800_000_000.25, 1_800_000_060.123)
        var body: [UInt8] = [SegmentFormat.Kind.setInline.rawValue | SegmentFormat.hasExpiry]
        SegmentFormat.appendInteger(time.bitPattern, to: &body)
        SegmentFormat.appendInteger(expiry.bitPattern, to: &body)
        body += [1] + Array("k".utf8) + Array("value".utf8)
        var access: [UInt8] = [SegmentFormat.Kind.access.rawValue]
        SegmentFormat.appendInteger(UInt32(1), to: &access)
        SegmentFormat.appendInteger(UInt32(80), to: &access)
        SegmentFormat.appendInteger(time.bitPattern, to: &access)
        let bytes = Self.record(body, salt: salt) + Self.record(access, salt: salt)
        try bytes.withUnsafeBytes { raw in
            let (set, length) = try #require(SegmentFormat.record(in: raw, at: 0, salt: salt))
            guard case .set(let key, let info) = set else { Issue.record("not a set record: \(set)"); return }
            #expect(key == "k")
            #expect(StoredTime.date(info.expiry) == Date(timeIntervalSince1970: expiry))
            #expect(StoredTime.date(info.time) == Date(timeIntervalSince1970: time))
            let (used, _) = try #require(SegmentFormat.record(in: raw, at: length, salt: salt))
            #expect(used == .access(segment: 1, offset: 80, time: StoredTime.fromSeconds1970(time), keyHash: nil))
        }
    }

    @Test("a format-2 store whose record holds a fractional expiry since 1970 opens with that date")
    func formatTwoStoreWithFractionalExpiry() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let expiry = 1_800_000_000.1
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        var body: [UInt8] = [SegmentFormat.Kind.setInline.rawValue | SegmentFormat.hasExpiry]
        SegmentFormat.appendInteger(1_799_999_000.0.bitPattern, to: &body)
        SegmentFormat.appendInteger(expiry.bitPattern, to: &body)
        body += [3] + Array("old".utf8) + Array("v2!".utf8)
        try Damage.write(version2SegmentHeader(id: 1, salt: 99) + Self.record(body, salt: 99), to: path + "/" + SegmentFile.name(of: 1))
        try Damage.write(Array("Stash store, format 2\n".utf8), to: path + "/" + StoreFolder.markerName)
        let clock = ManualClock()
        do {
            let disk = try openDisk(directory, clock)
            #expect(try disk.entry(forKey: "old").expiry == .date(Date(timeIntervalSince1970: expiry)))
            try disk.setObject(Data("new".utf8), forKey: "new", expiry: .seconds(0.1))
        }
        let reopened = try openDisk(directory, clock)
        #expect(try reopened.entry(forKey: "old").expiry == .date(Date(timeIntervalSince1970: expiry)))
        #expect(try reopened.entry(forKey: "new").expiry == .date(ManualClock.defaultStart.addingTimeInterval(0.1)))
    }

    /// A record: checksum (XXH64 of the length and body, seeded with the segment's salt) | length | body.
    private static func record(_ body: [UInt8], salt: UInt64) -> [UInt8] {
        var length: [UInt8] = []
        SegmentFormat.appendInteger(UInt32(body.count), to: &length)
        let checksum = (length + body).withUnsafeBytes { UInt32(truncatingIfNeeded: XXH64.hash($0, seed: salt)) }
        var bytes: [UInt8] = []
        SegmentFormat.appendInteger(checksum, to: &bytes)
        return bytes + length + body
    }
}
