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

/// Segments are read from mappings (no system call on a read), and trusted no more than a `pread`'s
/// bytes: a record is copied out and verified on every read, and a file cut short underneath, whose
/// pages past the cut fault when touched, makes the reads there fail with `corrupted` instead of ending
/// the process (Contract item 7, "What a store trusts after it checked a file once").
@Suite("Reads from mapped segments")
struct MappedReadTests {
    static func value(_ index: Int) -> Data { Data("value \(index) ".utf8 + [UInt8](repeating: UInt8(index & 0xff), count: 150)) }

    /// A store of `count` values in segments sealed at 4 KiB, each value read once (so read from its mapping).
    static func filledStore(_ path: String, count: Int) throws -> DiskStorage<Data> {
        let storage = try openDataStore(path)
        for index in 0..<count {
            try storage.setObject(value(index), forKey: "key \(index)")
            #expect(try storage.object(forKey: "key \(index)") == value(index), "a write was not seen by the read after it")
        }
        return storage
    }

    /// Cuts the file at `path` to `length` bytes in place (the inode the store has open and mapped).
    static func cut(_ path: String, to length: Int) throws {
        #expect(truncate(path, off_t(length)) == 0, "truncate \(path): errno \(errno)")
    }

    @Test("every segment is mapped, the one appended to with room to grow: a read after a write finds it in the mapping")
    func segmentsAreMapped() throws {
        let directory = TemporaryDirectory()
        try withEngineThresholds(in: directory.path, segmentLimit: 4096) {
            let storage = try Self.filledStore(directory.storePath(), count: 100)
            let files = storage.engine.store.log.segments
            #expect(files.count > 3, "the test meant several segments: \(files.count)")
            for (id, file) in files {
                let mapping = try #require(file.mapping, "segment \(id) is not mapped")
                #expect(mapping.length >= file.length)
                var bytes = [UInt8](repeating: 0, count: file.length)
                let copied = bytes.withUnsafeMutableBytes { mapping.copy(at: 0, into: $0) }
                #expect(copied)
                #expect(bytes == (try file.read(at: 0, length: file.length)), "segment \(id): the mapping differs from the file")
            }
            let highest = try #require(files.keys.max())
            #expect(try #require(files[highest]?.mapping).length > 4096, "the segment appended to has no room to grow")
        }
    }

    @Test("segments cut short underneath, sealed and active: reads past the cut throw corrupted, the others answer, the store goes on")
    func cutShortUnderneath() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: directory.path, segmentLimit: 4096) {
            let storage = try Self.filledStore(path, count: 100)
            let files = storage.engine.store.log.segments
            let sealed = try #require(files.keys.min())
            let active = try #require(files.keys.max())
            for id in [sealed, active] {
                let file = try #require(files[id])
                try Self.cut(path + "/" + SegmentFile.name(of: id), to: file.length / 2)
            }
            var answered = 0
            var corrupted = 0
            for index in 0..<100 {
                do {
                    let value = try storage.object(forKey: "key \(index)")
                    #expect(value == Self.value(index), "key \(index): another value")
                    answered += 1
                } catch StorageError.corrupted {
                    corrupted += 1
                } catch StorageError.notFound {
                    corrupted += 1 // dropped by an earlier read of the same damage
                }
            }
            #expect(corrupted > 0, "no read met the cut")
            #expect(answered >= 100 - 2 * 4096 / 150, "reads away from the cuts failed: \(answered) answered")
            try storage.setObject(Data("after".utf8), forKey: "after")
            #expect(try storage.object(forKey: "after") == Data("after".utf8))
        }
    }

    @Test("a record changed in place after it was read from the mapping: corrupted, never the changed bytes")
    func changedInPlaceUnderneath() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let storage = try Self.filledStore(path, count: 10)
        let file = try #require(storage.engine.store.log.segments.values.first)
        let segment = try FileHandle(forUpdating: URL(fileURLWithPath: path + "/" + SegmentFile.name(of: file.id)))
        defer { try? segment.close() }
        // The last byte of the last value: every byte of a record is under its checksum.
        try segment.seek(toOffset: UInt64(file.length - 1))
        try segment.write(contentsOf: [0xA5 ^ Self.value(9).last!])
        #expect(throws: StorageError.self) { try storage.object(forKey: "key 9") }
        for index in 0..<9 { #expect(try storage.object(forKey: "key \(index)") == Self.value(index)) }
    }

    @Test("a store under a data protection class that locks files reads with pread alone, and reads the same")
    func lockedProtectionClassesAreNotMapped() throws {
        for protection in DiskConfig.FileProtection.allCases {
            let directory = TemporaryDirectory()
            let config = DiskConfig(name: "store", directory: directory.url, protectionType: protection)
            let storage = try DiskStorage(config: config, transformer: TransformerFactory.forData())
            try storage.setObject(Self.value(1), forKey: "k")
            #expect(try storage.object(forKey: "k") == Self.value(1))
            let mapped = storage.engine.store.log.segments.values.contains { $0.mapping != nil }
            #expect(mapped == protection.allowsMappedReads, "\(protection): mapped \(mapped)")
        }
    }

    @Test("a copy out of a mapping whose file was cut short fails, where the file still is it succeeds")
    func guardedCopy() throws {
        let directory = TemporaryDirectory()
        let path = directory.url.appendingPathComponent("file").path
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        try Data(repeating: 7, count: 4 * page).write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_RDONLY)
        #expect(fd >= 0)
        defer { close(fd) }
        let mapping = try #require(SegmentMapping(fd: fd, length: 8 * page))
        var bytes = [UInt8](repeating: 0, count: 64)
        #expect(bytes.withUnsafeMutableBytes { mapping.copy(at: 4 * page - 64, into: $0) })
        #expect(bytes == [UInt8](repeating: 7, count: 64))
        #expect(!bytes.withUnsafeMutableBytes { mapping.copy(at: 4 * page, into: $0) }, "a page past the file's end was copied")
        try Self.cut(path, to: page)
        #expect(!bytes.withUnsafeMutableBytes { mapping.copy(at: 2 * page, into: $0) }, "a page cut off was copied")
        #expect(!bytes.withUnsafeMutableBytes { mapping.copy(at: page - 32, into: $0) }, "a copy across the cut succeeded")
        #expect(bytes.withUnsafeMutableBytes { mapping.copy(at: 0, into: $0) })
        #expect(!bytes.withUnsafeMutableBytes { mapping.copy(at: 8 * page - 32, into: $0) }, "a copy past the mapping succeeded")
    }
}
