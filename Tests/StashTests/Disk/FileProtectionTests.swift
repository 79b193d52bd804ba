import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// `DiskConfig.protectionType`: the walk that gives a store's folder and files a protection class
/// (run here with a recording file system, as Linux has no classes), and the option being a no-op
/// that is still kept where the platform has none.
@Suite("Data protection classes")
struct FileProtectionTests {
    /// Records every class set; `classes` holds each item's current class.
    private final class RecordingFileSystem: @unchecked Sendable {
        // @unchecked Sendable: used by one test on one thread.
        var classes: [String: DiskConfig.FileProtection] = [:]
        var order: [String] = []
        var failing: Set<String> = []
        var removeBeforeSetting: Set<String> = []

        var fileSystem: StoreProtection.FileSystem {
            StoreProtection.FileSystem(
                currentClass: { self.classes[$0] },
                setClass: { protection, path in
                    if self.removeBeforeSetting.contains(path) {
                        unlink(path)
                        throw CocoaError(.fileNoSuchFile)
                    }
                    if self.failing.contains(path) { throw CocoaError(.fileWriteNoPermission) }
                    self.classes[path] = protection
                    self.order.append(path)
                })
        }
    }

    private func makeStoreFolder(in directory: TemporaryDirectory) throws -> String {
        let store = directory.path + "/store"
        try FileManager.default.createDirectory(atPath: store + "/values", withIntermediateDirectories: true)
        for name in ["00000001.segment", "marker", "values/1.value"] {
            try Data("x".utf8).write(to: URL(fileURLWithPath: store + "/" + name))
        }
        try Data("outside".utf8).write(to: directory.url.appendingPathComponent("outside"))
        try FileManager.default.createSymbolicLink(atPath: store + "/link", withDestinationPath: directory.path + "/outside")
        return store
    }

    @Test("the folder gets the class first, then every folder and regular file in it; links are skipped")
    func walkSetsFolderThenContents() throws {
        let directory = TemporaryDirectory()
        let store = try makeStoreFolder(in: directory)
        let recorder = RecordingFileSystem()
        try StoreProtection.apply(.completeUntilFirstUserAuthentication, toFolder: store, fileSystem: recorder.fileSystem)
        #expect(recorder.order.first == store)
        #expect(Set(recorder.order) == [store, store + "/00000001.segment", store + "/marker", store + "/values",
                                        store + "/values/1.value"])
        #expect(!recorder.order.contains(store + "/link"))
        #expect(!recorder.order.contains(directory.path + "/outside"))
        #expect(recorder.classes.values.allSatisfy { $0 == .completeUntilFirstUserAuthentication })
    }

    @Test("the shared file, mapped by every process of the store, gets no protection whatever the store's class")
    func sharedFileIsNeverLockedAway() throws {
        let directory = TemporaryDirectory()
        let store = try makeStoreFolder(in: directory)
        try Data(count: 128).write(to: URL(fileURLWithPath: store + "/" + SharedState.name))
        for protection in [DiskConfig.FileProtection.complete, .completeUnlessOpen] {
            let recorder = RecordingFileSystem()
            try StoreProtection.apply(protection, toFolder: store, fileSystem: recorder.fileSystem)
            #expect(recorder.classes[store + "/" + SharedState.name] == .noProtection)
            #expect(recorder.classes[store + "/00000001.segment"] == protection)
        }
    }

    @Test("a folder that already has the class is left alone (its files were created with it)")
    func folderWithTheClassIsDone() throws {
        let directory = TemporaryDirectory()
        let store = try makeStoreFolder(in: directory)
        let recorder = RecordingFileSystem()
        recorder.classes[store] = .complete
        try StoreProtection.apply(.complete, toFolder: store, fileSystem: recorder.fileSystem)
        #expect(recorder.order.isEmpty)
        // Another class is applied again, to everything.
        try StoreProtection.apply(.completeUnlessOpen, toFolder: store, fileSystem: recorder.fileSystem)
        #expect(recorder.order.count == 5)
    }

    @Test("a file removed during the walk is skipped; a class that cannot be set is an io error naming the file")
    func vanishedAndFailingFiles() throws {
        let directory = TemporaryDirectory()
        let store = try makeStoreFolder(in: directory)
        let recorder = RecordingFileSystem()
        recorder.removeBeforeSetting = [store + "/00000001.segment"]
        try StoreProtection.apply(.complete, toFolder: store, fileSystem: recorder.fileSystem)
        #expect(recorder.order.count == 4)

        let failing = RecordingFileSystem()
        failing.failing = [store + "/marker"]
        #expect {
            try StoreProtection.apply(.complete, toFolder: store, fileSystem: failing.fileSystem)
        } throws: { error in
            guard case StorageError.io(let operation, let path, _) = error else { return false }
            return operation == "set protection class" && path == store + "/marker"
        }
    }

    @Test("the option is kept and a store opens and works with each class where classes do not exist",
          arguments: DiskConfig.FileProtection.allCases)
    func optionIsKeptAndHarmless(protection: DiskConfig.FileProtection) throws {
        let directory = TemporaryDirectory()
        // Cache 5's spelling compiles unchanged.
        let config = DiskConfig(name: "store", expiry: .never, maxSize: 0, directory: directory.url, protectionType: protection)
        #expect(config.protectionType == protection)
        let storage = try DiskStorage(config: config, transformer: TransformerFactory.forData())
        try storage.setObject(Data("v".utf8), forKey: "k")
        #expect(try storage.object(forKey: "k") == Data("v".utf8))
        #expect(storage.config.protectionType == protection)
        #if os(Linux) || os(macOS)
        #expect(!StoreProtection.isSupported) // nothing was set
        #endif
        #expect(DiskConfig(name: "x").protectionType == nil)
    }
}
