import Foundation
import Testing
import StashTestSupport
import CStashMappedRead
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Attacks on appends through a mapping of the active segment (`SegmentWriteWindow`, Linux): the
/// active segment cut short by another program where a page of the mapping stays partly inside the
/// file (a copy past the file's end then faults on no page, and its bytes are not the file's); every
/// write acknowledged after such a cut must still be read, before and after a reopen.
@Suite("Appends through a mapped segment, attacked", .serialized)
struct MappedAppendAttackTests: KeyDirectoryScenario {
    static var pageSize: Int { Int(sysconf(Int32(_SC_PAGESIZE))) }

    /// Writes fillers until the active segment's records end far enough from a page boundary that
    /// a few small records fit in the rest of its page (so the cut below lands inside a page).
    static func endInsidePage(_ store: DiskStore) throws {
        var number = 0
        while let length = store.log.active?.length, length % pageSize == 0 || length % pageSize > pageSize - 1024 {
            try set(store, "filler \(number)", Data(repeating: 7, count: 100))
            number += 1
        }
    }

    /// Flushes the file's cached pages as the kernel's writeback does by itself within half a
    /// minute (or any `fsync` of it): the part of a page past the file's end is written as zeros.
    static func writeBack(_ path: String) {
        let fd = open(path, O_RDWR)
        if fd >= 0 { fsync(fd); close(fd) }
    }

    @Test("the active segment cut to the end of its records (its room taken away by another program): the writes after it are read back, also after the page is written back and after a reopen",
          arguments: [false, true])
    func activeSegmentCutToItsRecords(writtenBack: Bool) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let keys = (0..<6).map { "after \($0)" }
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            defer { store.close() }
            for index in 0..<10 { try Self.set(store, "key \(index)", Self.payload(index)) }
            try Self.endInsidePage(store)
            let active = try #require(store.log.active)
            let segment = Self.segmentPath(path, active.id)
            #expect(truncate(segment, off_t(active.length)) == 0)
            for (index, key) in keys.enumerated() { try Self.set(store, key, Data("small \(index)".utf8)) }
            if writtenBack { Self.writeBack(segment) }
            for (index, key) in keys.enumerated() { #expect(Self.value(store, key) == Data("small \(index)".utf8), "\(key) while open") }
        }
        let reopened = try DiskStore(directory: path, readOnly: false)
        defer { reopened.close() }
        for index in 0..<10 { #expect(Self.value(reopened, "key \(index)") == Self.payload(index)) }
        for (index, key) in keys.enumerated() { #expect(Self.value(reopened, key) == Data("small \(index)".utf8), "\(key) after a reopen") }
    }

    @Test("a reader beside a mapped writer of small segments: opened while room is reserved and again after many seals, it reports no damage, its check is clean, and it reads every write, never zeros or a miss")
    func readerBesideMappedWriter() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: directory.path, compactionMinimum: Int.max / 4, segmentLimit: 4096) {
            let writer = try openDataStore(path)
            for number in 0..<10 { try writer.setObject(MappedReadAttackTests.value("k\(number)"), forKey: "k\(number)") }
            let active = try #require(writer.engine.store.log.active)
            let segment = Self.segmentPath(path, active.id)
            if MappedAppendTests.mapsAppends { #expect(try Damage.size(segment) > active.length, "no room reserved") }
            let reader = try openDataStore(path, readOnly: true)
            #expect(reader.recoveryIssues.isEmpty, "a reader opened beside room: \(reader.recoveryIssues)")
            for round in 0..<10 {
                for number in 0..<20 {
                    let key = "k\(round * 20 + number)"
                    try writer.setObject(MappedReadAttackTests.value(key + " \(round)"), forKey: key)
                }
                for number in 0..<((round + 1) * 20) {
                    let key = "k\(number)"
                    #expect(try reader.object(forKey: key) == MappedReadAttackTests.value(key + " \(number / 20)"), "round \(round): \(key)")
                }
            }
            #expect(writer.engine.store.log.segments.count > 5, "the test meant several seals")
            let check = try reader.check()
            #expect(check.isClean, "the reader's check: \(check.problems)")
            let late = try openDataStore(path, readOnly: true)
            #expect(late.recoveryIssues.isEmpty, "a reader opened after many seals: \(late.recoveryIssues)")
            let lateCheck = try late.check()
            #expect(lateCheck.isClean, "a late reader's check: \(lateCheck.problems)")
            for number in 0..<200 { #expect(try late.object(forKey: "k\(number)") == MappedReadAttackTests.value("k\(number) \(number / 20)")) }
        }
    }

    @Test("a reader that opens while a record is being copied into the writer's mapping (zeros where it goes, the next record whole after them, both past the published length) reports nothing and reads only what was published; with a key directory too (its segment read from the directory's position on)",
          arguments: [0, 1_200])
    func readerOpensDuringACopy(entriesBefore: Int) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        if entriesBefore > 0 {
            // A store large enough to keep a key directory, closed: the next open reads it and the records after it.
            let first = try DiskStore(directory: path, readOnly: false)
            for index in 0..<entriesBefore { try Self.set(first, "before \(index)", Self.payload(index)) }
            first.close()
            #expect(FileManager.default.fileExists(atPath: Self.directoryPath(path)))
        }
        let writer = try DiskStore(directory: path, readOnly: false)
        defer { writer.close() }
        for index in 0..<10 { try Self.set(writer, "key \(index)", Self.payload(index)) }
        let active = try #require(writer.log.active)
        let published = active.length
        try Self.set(writer, "copied", Data(repeating: 1, count: 3000))
        let copiedEnd = active.length
        try Self.set(writer, "later", Data("later".utf8))
        // What a read of the file can see while the writer copies: a copy's later pages written and
        // its earlier ones not yet, the length not yet published past them.
        writer.log.folder.shared?.publish(length: published)
        let fd = open(Self.segmentPath(path, active.id), O_WRONLY)
        #expect(fd >= 0)
        let zeros = [UInt8](repeating: 0, count: copiedEnd - published)
        #expect(zeros.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(published)) } == zeros.count)
        close(fd)

        let reader = try DiskStore(directory: path, readOnly: true)
        defer { reader.close() }
        #expect(reader.recoveryIssues.isEmpty, "the reader took a copy in progress for damage: \(reader.recoveryIssues)")
        for index in 0..<10 { #expect(Self.value(reader, "key \(index)") == Self.payload(index)) }
        for index in stride(from: 0, to: entriesBefore, by: 97) { #expect(Self.value(reader, "before \(index)") == Self.payload(index)) }
        #expect(Self.value(reader, "later") == nil, "the reader read a record past the published length")
    }

    @Test("a writer released without a close, 60 times over: each open takes the room left for the end of the records, loses nothing, reports nothing, and no mapping of the folder's files is left")
    func releasedWithoutCloseAgainAndAgain() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        for round in 0..<60 {
            var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
            #expect(store!.recoveryIssues.isEmpty, "round \(round): \(store!.recoveryIssues)")
            if round > 0 { #expect(Self.value(store!, "key \(round - 1)") == Self.payload(round - 1), "round \(round)") }
            try Self.set(store!, "key \(round)", Self.payload(round))
            store = nil // a crash: no close
        }
        BackgroundRelease.finish() // large mappings are unmapped on a thread of their own
        if let left = MappedReadAttackTests.mappings(under: directory.path) { #expect(left == 0, "mappings left: \(left)") }
        let reopened = try DiskStore(directory: path, readOnly: false)
        defer { reopened.close() }
        for round in 0..<60 { #expect(Self.value(reopened, "key \(round)") == Self.payload(round)) }
    }

    @Test("values around the room's growth steps and the largest packed value, in segments sealed at 4 KiB and at 64 MiB: each reads back while open, after a crash and after a close, with nothing reported",
          arguments: [4096, 64 << 20])
    func valuesAroundTheRoomsEdges(segmentLimit: Int) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let sizes = [0, 1, 4095, 4096, 4097, 16 << 10, (16 << 10) + 1, (1 << 20) / 4, ValueFiles.threshold - 1] + (0..<20).map { 1000 + $0 * 97 }
        func value(_ number: Int) -> Data { Data((0..<sizes[number]).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ number) }) }
        try withEngineThresholds(in: path, compactionMinimum: Int.max / 4, segmentLimit: segmentLimit) {
            var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
            for number in sizes.indices {
                try Self.set(store!, "v\(number)", value(number))
                #expect(Self.value(store!, "v\(number)") == value(number), "\(sizes[number]) bytes while open")
            }
            store = nil // a crash: no close
            let reopened = try DiskStore(directory: path, readOnly: false)
            #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)")
            for number in sizes.indices { #expect(Self.value(reopened, "v\(number)") == value(number), "\(sizes[number]) bytes after a crash") }
            for number in sizes.indices { try Self.set(reopened, "w\(number)", value(number)) }
            reopened.close()
            let again = try DiskStore(directory: path, readOnly: false)
            defer { again.close() }
            #expect(again.recoveryIssues.isEmpty, "\(again.recoveryIssues)")
            for number in sizes.indices {
                #expect(Self.value(again, "v\(number)") == value(number) && Self.value(again, "w\(number)") == value(number), "\(sizes[number]) bytes after a close")
            }
        }
    }

    @Test("overwrites that compact again and again (4 KiB segments, compactions on the queue and in the background) beside mapped appends: every value is the last written, no sealed segment keeps room, and a crash's reopen reports nothing")
    func compactionsBesideMappedAppends() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, compactionMinimum: 8 << 10, segmentLimit: 4096) {
            var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
            for round in 0..<30 {
                for index in 0..<40 { try Self.set(store!, "key \(index)", Self.payload(index, round)) }
                if round % 10 == 9 { try store!.compactNow() }
            }
            for index in 0..<40 { #expect(Self.value(store!, "key \(index)") == Self.payload(index, 29)) }
            let highest = try #require(store!.log.segments.keys.max())
            for id in store!.log.segments.keys where id != highest {
                let segment = Self.segmentPath(path, id)
                if FileManager.default.fileExists(atPath: segment) {
                    #expect(try Damage.size(segment) == Damage.recordsEnd(segment), "segment \(id) kept room")
                }
            }
            store = nil // a crash: no close
            let reopened = try DiskStore(directory: path, readOnly: false)
            defer { reopened.close() }
            #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)")
            for index in 0..<40 { #expect(Self.value(reopened, "key \(index)") == Self.payload(index, 29)) }
        }
    }

    #if os(Linux)
    /// A copy into the mapping that stops partway (a fault here; a kill of the process alike) must
    /// leave a prefix of its bytes written. glibc's `memcpy` stores its first 32 to 64 bytes last, so
    /// a kill partway through a batch's copy left its first record (the batch's header) zeros behind
    /// whole records of the batch: the next open replayed those as plain writes, half the batch (8 of
    /// 20 keys in a 4 KB batch, with the header's first 32 bytes and the second half still zeros).
    @Test("a copy into the mapping stopped partway leaves a prefix of its bytes written, never a later part without the first bytes",
          arguments: [100, 3000, 4000])
    func stoppedCopyLeavesAPrefix(start: Int) throws {
        let page = Self.pageSize
        let directory = TemporaryDirectory()
        let path = directory.path + "/file"
        let fd = open(path, O_RDWR | O_CREAT, 0o600)
        try #require(fd >= 0)
        defer { close(fd) }
        #expect(ftruncate(fd, off_t(page)) == 0) // one page: the second faults
        try #require(stash_mapped_read_prepare() == 0)
        let base = try #require(mmap(nil, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0))
        try #require(base != MAP_FAILED)
        defer { munmap(base, 2 * page) }
        let source = (0..<6000).map { UInt8(truncatingIfNeeded: $0 % 251 + 1) }
        let result = source.withUnsafeBytes { stash_mapped_write(base + start, $0.baseAddress!, $0.count) }
        #expect(result == -1, "the copy past the file's end did not fault")
        let written = Array(UnsafeRawBufferPointer(start: base + start, count: page - start))
        #expect(written.elementsEqual(source[0..<(page - start)]),
                "not a prefix: the first written byte is \(written.firstIndex { $0 != 0 } ?? -1), the first unwritten \(written.firstIndex(of: 0) ?? -1)")
    }
    #endif
}
