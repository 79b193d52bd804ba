import Foundation
import Testing
import StashTestSupport
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Attacks on reads from mapped segments (Contract item 7, "What a store trusts after it checked a
/// file once"): segments cut in place to nothing, to a page boundary or into a record and then grown
/// back with zeros while readers on several threads copy out of their mappings; records past the end
/// of a mapping (a batch larger than the room the segment appended to was mapped with); mappings
/// counted over many folder removals of a store of many segments. Every value is unique to its key, so
/// an answer is right or it is another key's bytes.
@Suite("Reads from mapped segments, attacked")
struct MappedReadAttackTests {
    static func value(_ key: String, size: Int = 150) -> Data {
        var bytes = [UInt8](key.utf8) + [0x7C]
        while bytes.count < size { bytes.append(UInt8(truncatingIfNeeded: bytes.count &* 31 &+ key.utf8.count)) }
        return Data(bytes)
    }

    static var pageSize: Int { Int(sysconf(Int32(_SC_PAGESIZE))) }

    /// Where a segment is cut in place before it is grown back with zeros to its length.
    enum Cut: String, CaseIterable, Sendable {
        case toNothing, toPageBoundary, intoRecord

        func length(of fileLength: Int) -> Int {
            switch self {
            case .toNothing: 0
            case .toPageBoundary: (fileLength / 2) / MappedReadAttackTests.pageSize * MappedReadAttackTests.pageSize
            case .intoRecord: fileLength / 2 + 7
            }
        }
    }

    /// Reads every key from `threads` threads at once; each answer must be the key's own value, or
    /// `corrupted`/`notFound` for a key in `damaged` (never another key's bytes, never a crash).
    static func readAll(_ storage: DiskStorage<Data>, keys: [String], damaged: Set<String>, threads: Int) -> [String] {
        let problems = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for round in 0..<3 {
                for (number, key) in keys.enumerated() where (number + thread + round) % threads == 0 || round == 2 {
                    do {
                        let read = try storage.object(forKey: key)
                        if read != value(key) { problems.withLock { $0.append("\(key): another value (\(read.prefix(12)))") } }
                    } catch StorageError.corrupted, StorageError.notFound {
                        if !damaged.contains(key) { problems.withLock { $0.append("\(key): lost, away from the cut") } }
                    } catch {
                        problems.withLock { $0.append("\(key): \(error)") }
                    }
                }
            }
        }
        return problems.withLock { $0 }
    }

    @Test("a sealed or the active segment cut in place (to nothing, to a page boundary, into a record) and grown back with zeros: reads on 4 threads answer their own value or fail, writes go on, a reopen loses nothing else",
          arguments: Cut.allCases, [false, true])
    func cutAndGrownBackWithZeros(cut: Cut, active: Bool) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let keys = (0..<300).map { "key \($0)" }
        try withEngineThresholds(in: directory.path, segmentLimit: 16 << 10) {
            var damaged = Set<String>()
            do {
                let storage = try openDataStore(path)
                for key in keys {
                    try storage.setObject(Self.value(key), forKey: key)
                    #expect(try storage.object(forKey: key) == Self.value(key)) // read once: mapped
                }
                let segments = storage.engine.store.log.segments
                #expect(segments.count >= 3, "the test meant several segments: \(segments.count)")
                let id = try #require(active ? segments.keys.max() : segments.keys.min())
                let file = try #require(segments[id])
                let length = file.length
                let cutLength = cut.length(of: length)
                // The keys whose record lies (partly) past the cut.
                storage.engine.store.withIndex { index in
                    for key in keys {
                        if let record = index.peek(key), record.segment == id, Int(record.offset) + Int(record.length) > cutLength {
                            damaged.insert(key)
                        }
                    }
                }
                #expect(!damaged.isEmpty, "no record past the cut")
                let segmentPath = path + "/" + SegmentFile.name(of: id)
                #expect(truncate(segmentPath, off_t(cutLength)) == 0)
                let whileCut = Self.readAll(storage, keys: keys, damaged: damaged, threads: 4)
                #expect(whileCut.isEmpty, "while cut: \(whileCut.prefix(5))")
                #expect(truncate(segmentPath, off_t(length)) == 0) // grown back: zeros where records were
                let whileZeroed = Self.readAll(storage, keys: keys, damaged: damaged, threads: 4)
                #expect(whileZeroed.isEmpty, "grown back with zeros: \(whileZeroed.prefix(5))")
                for number in 0..<40 {
                    try storage.setObject(Self.value("after \(number)"), forKey: "after \(number)")
                }
                for number in 0..<40 { #expect(try storage.object(forKey: "after \(number)") == Self.value("after \(number)")) }
            }
            let reopened = try openDataStore(path)
            let afterReopen = Self.readAll(reopened, keys: keys, damaged: damaged, threads: 4)
            #expect(afterReopen.isEmpty, "after a reopen: \(afterReopen.prefix(5))")
            // Writes made after the damage were acknowledged: a damaged active segment may not take them down.
            for number in 0..<40 { #expect(try reopened.object(forKey: "after \(number)") == Self.value("after \(number)")) }
        }
    }

    @Test("a sealed or the active segment replaced through a rename (by a copy of itself, by another store's segment) while mapped: reads answer their own value or fail, writes go on, a reopen gives no other key's bytes",
          arguments: [false, true], [false, true])
    func segmentReplacedByRename(active: Bool, foreign: Bool) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let otherPath = directory.storePath("other")
        let keys = (0..<300).map { "key \($0)" }
        try withEngineThresholds(in: directory.path, segmentLimit: 16 << 10) {
            var replaced = Set<String>()
            do {
                let other = try openDataStore(otherPath)
                for key in keys { try other.setObject(Self.value("other " + key), forKey: key) }
                let storage = try openDataStore(path)
                for key in keys {
                    try storage.setObject(Self.value(key), forKey: key)
                    #expect(try storage.object(forKey: key) == Self.value(key))
                }
                let segments = storage.engine.store.log.segments
                let id = try #require(active ? segments.keys.max() : segments.keys.min())
                storage.engine.store.withIndex { index in
                    for key in keys where index.peek(key)?.segment == id { replaced.insert(key) }
                }
                let name = SegmentFile.name(of: id)
                let source = foreign ? otherPath + "/" + name : path + "/" + name
                try FileManager.default.copyItem(atPath: source, toPath: path + "/replacement")
                #expect(rename(path + "/replacement", path + "/" + name) == 0)
                let whileReplaced = Self.readAll(storage, keys: keys, damaged: replaced, threads: 4)
                #expect(whileReplaced.isEmpty, "while replaced: \(whileReplaced.prefix(5))")
                for number in 0..<40 { try storage.setObject(Self.value("after \(number)"), forKey: "after \(number)") }
                for number in 0..<40 { #expect(try storage.object(forKey: "after \(number)") == Self.value("after \(number)")) }
            }
            let reopened = try openDataStore(path)
            let afterReopen = Self.readAll(reopened, keys: keys, damaged: replaced, threads: 4)
            #expect(afterReopen.isEmpty, "after a reopen: \(afterReopen.prefix(5))")
            for number in 0..<40 { #expect(try reopened.object(forKey: "after \(number)") == Self.value("after \(number)")) }
        }
    }

    @Test("a batch larger than the room its segment was mapped with: records inside, across and past the mapping's end read right, also after a reopen")
    func batchPastTheMapping() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let size = 8 << 10
        let batch = (0..<200).map { "batch \($0)" } // 200 × 8 KiB: past a 4 KiB limit's room of about 1.3 MiB
        try withEngineThresholds(in: directory.path, segmentLimit: 4096) {
            do {
                let storage = try openDataStore(path)
                try storage.setObject(Self.value("before"), forKey: "before")
                try storage.setObjects(Dictionary(uniqueKeysWithValues: batch.map { ($0, Self.value($0, size: size)) }))
                let segments = storage.engine.store.log.segments
                let holding = segments.values.filter { file in (file.mapping?.length ?? .max) < file.length }
                #expect(!holding.isEmpty, "no segment reaches past its mapping: \(segments.values.map { ($0.length, $0.mapping?.length ?? -1) })")
                for key in batch { #expect(try storage.object(forKey: key) == Self.value(key, size: size), "\(key)") }
                #expect(try storage.object(forKey: "before") == Self.value("before"))
                try storage.setObject(Self.value("after"), forKey: "after")
            }
            let reopened = try openDataStore(path)
            for key in batch { #expect(try reopened.object(forKey: key) == Self.value(key, size: size), "\(key) after a reopen") }
            #expect(try reopened.object(forKey: "after") == Self.value("after"))
        }
    }

    @Test("a store opened anew maps its sealed segments as long as they are: only the highest, appended to, with room to grow")
    func reopenedStoreMapsSealedSegmentsAtTheirLength() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: directory.path, segmentLimit: 4096) {
            do {
                let storage = try openDataStore(path)
                for number in 0..<100 { try storage.setObject(Self.value("k\(number)"), forKey: "k\(number)") }
            }
            let reopened = try openDataStore(path)
            let segments = reopened.engine.store.log.segments
            let highest = try #require(segments.keys.max())
            #expect(segments.count > 3, "the test meant several segments: \(segments.count)")
            for (id, file) in segments where id != highest {
                // Each with room to grow would reserve the seal size plus the longest record (1.3 MiB here,
                // 65 MiB by default) of address space for a file that never grows.
                #expect(file.mapping?.length == file.length, "sealed segment \(id): \(file.length) bytes mapped as \(file.mapping?.length ?? -1)")
            }
            #expect(try #require(segments[highest]?.mapping).length > 4096, "the segment appended to has no room to grow")
            for number in 0..<100 { #expect(try reopened.object(forKey: "k\(number)") == Self.value("k\(number)")) }
        }
    }

    #if os(Linux)
    @Test("a SIGBUS handler installed after the store's, which runs with SIGBUS blocked and hands the fault on to it (as crash reporters and sanitizers do): faulting copies on one thread fail one after another, never end the process")
    func faultHandedOnByALaterHandler() throws {
        let directory = TemporaryDirectory()
        let path = directory.url.appendingPathComponent("file").path
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        try Data(repeating: 7, count: page).write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_RDONLY)
        #expect(fd >= 0)
        defer { close(fd) }
        let mapping = try #require(SegmentMapping(fd: fd, length: 4 * page)) // the store's handler is installed by now
        var later = sigaction()
        later.__sigaction_handler.sa_sigaction = { signal, info, context in
            LaterBusHandler.previous.__sigaction_handler.sa_sigaction?(signal, info, context)
        }
        later.sa_flags = SA_SIGINFO // no SA_NODEFER: SIGBUS stays blocked while it runs
        sigemptyset(&later.sa_mask)
        #expect(sigaction(SIGBUS, &later, &LaterBusHandler.previous) == 0)
        defer { sigaction(SIGBUS, &LaterBusHandler.previous, nil) }
        var bytes = [UInt8](repeating: 0, count: 64)
        for attempt in 0..<3 {
            // Past the file's end: the first fault lands back with SIGBUS blocked unless the landing unblocks it,
            // and the next fault on this thread would then end the process.
            #expect(!bytes.withUnsafeMutableBytes { mapping.copy(at: 2 * page, into: $0) }, "attempt \(attempt): a page past the end was copied")
        }
        #expect(bytes.withUnsafeMutableBytes { mapping.copy(at: 0, into: $0) })
        #expect(bytes == [UInt8](repeating: 7, count: 64))
    }
    #endif

    /// The mappings of files under `folder` in this process; nil without `/proc` (not Linux). Read with
    /// `read` until its end (Foundation's readers stopped after the first 4 KB under ThreadSanitizer), and
    /// the most of several reads: a read while other threads map and unmap (tests running beside this
    /// one) can miss entries, never list one twice.
    static func mappings(under folder: String) -> Int? {
        var most: Int?
        for _ in 0..<5 {
            let fd = open("/proc/self/maps", O_RDONLY)
            guard fd >= 0 else { return nil }
            defer { close(fd) }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                bytes += chunk[0..<count]
            }
            let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
            most = max(most ?? 0, lines.filter { $0.contains(folder) }.count)
        }
        return most
    }

    @Test("a store of many segments whose folder is removed and made anew 40 times keeps no mapping of the old segments")
    func folderRemovalsKeepNoMappings() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: directory.path, segmentLimit: 2048) {
            let storage = try openDataStore(path)
            for number in 0..<30 { try storage.setObject(Self.value("k\(number)"), forKey: "k\(number)") }
            guard let before = Self.mappings(under: directory.path) else { return }
            #expect(before >= 3, "the test meant several mapped segments: \(before)")
            for round in 1...40 {
                try FileManager.default.removeItem(atPath: path)
                for number in 0..<30 {
                    let key = "k\(number)"
                    try storage.setObject(Self.value(key + " \(round)"), forKey: key)
                    #expect(try storage.object(forKey: key) == Self.value(key + " \(round)"))
                }
            }
            BackgroundRelease.finish() // large mappings are unmapped on a thread of their own
            let after = try #require(Self.mappings(under: directory.path))
            #expect(after <= before + 4, "mappings: \(before) before, \(after) after 40 removals")
        }
    }
}

#if os(Linux)
/// The handler a later `SIGBUS` handler hands faults on to (the store's), as a crash reporter keeps it.
private enum LaterBusHandler {
    nonisolated(unsafe) static var previous = sigaction()
}
#endif
