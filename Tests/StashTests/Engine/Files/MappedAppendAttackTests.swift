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
}
