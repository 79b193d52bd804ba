import Foundation
import Testing
import StashTestSupport
@testable import Stash
@testable import StashEngine

/// How a reader tells a write in progress from damage at the end of the active segment: a writer
/// inside an operation holds the folder's lock (a writer that keeps the store to itself holds it for
/// its life), so bytes past the last whole record are a write in progress while the lock is held and
/// damage once it is free (a writer killed inside an operation): never a count of writers kept in a
/// file, which drifts when writers of both kinds come and go or one is killed.
@Suite("A write in progress or damage")
struct WriteInProgressTests {
    typealias Store = FilesChangedInPlaceTests

    /// Bytes appended to the store's newest segment, as a record cut short by a kill leaves them.
    static func appendTornRecord(_ path: String) throws {
        let newest = try #require(try StoreFiles(path).segments.last)
        try Damage.append([0x5A, 0x01, 0x00, 0x40, 0x77, 0x13], to: path + "/" + newest)
    }

    @Test("a writer in several processes inside an operation, after a sole writer opened and closed beside it: a reader opens beside it and reports no damage")
    func writeInProgressAfterASoleWriter() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let writerA = try DiskStore(directory: path, readOnly: false, sharedWriters: true)
        let writerB = try DiskStore(directory: path, readOnly: false, sharedWriters: true)
        defer { writerB.close() }
        try Store.set(writerA, "a", "1")
        try Store.set(writerB, "b", "2")
        try DiskStore(directory: path, readOnly: false).close() // a writer that keeps the store to itself, between two operations
        try Store.set(writerA, "a", "3")
        try Store.set(writerB, "b", "4")
        writerA.close()
        writerB.beginSharedOperation()
        try Self.appendTornRecord(path) // what writer B is writing now
        let reader = try DiskStore(directory: path, readOnly: true)
        writerB.endSharedOperation()
        defer { reader.close() }
        #expect(reader.recoveryIssues.isEmpty, "a write in progress reported as damage: \(reader.recoveryIssues)")
        #expect(Store.get(reader, "a") == "3")
        #expect(Store.get(reader, "b") == "4")
    }

    @Test("a writer in several processes killed inside an operation leaves a torn record: a reader that opens after reports it")
    func killedWriterTailIsReported() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let survivor = try DiskStore(directory: path, readOnly: false, sharedWriters: true)
        defer { survivor.close() }
        try Store.set(survivor, "s", "1")
        let killed = try DiskStore(directory: path, readOnly: false, sharedWriters: true)
        try Store.set(killed, "k", "1")
        killed.beginSharedOperation()
        try Self.appendTornRecord(path)
        killed.log.folder.handle.unlock() // killed: the kernel releases its lock; its "operation in progress" word stays set
        let reader = try DiskStore(directory: path, readOnly: true)
        defer { reader.close() }
        #expect(reader.recoveryIssues.contains { if case .corrupted = $0 { true } else { false } },
                "a killed writer's torn record went unreported: \(reader.recoveryIssues)")
        #expect(Store.get(reader, "k") == "1")
        // The next operation of a writer finds the word set, opens the store from its files and cuts the tail.
        try Store.set(survivor, "s", "2")
        let after = try DiskStore(directory: path, readOnly: true)
        defer { after.close() }
        #expect(after.recoveryIssues.isEmpty, "\(after.recoveryIssues)")
        #expect(Store.get(after, "s") == "2")
        withExtendedLifetime(killed) {}
    }
}
