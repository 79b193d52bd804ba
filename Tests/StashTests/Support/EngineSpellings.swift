import Foundation
@testable import StashEngine

// Older spellings of engine calls the tests keep, so that a moved test keeps its body. The engine
// takes one `SharingMode`; the tests spell it as the configuration does (`readOnly`,
// `sharedWriters`), so that each test reads as the case it is, and the protocol's steps by their names.

extension SharingMode {
    init(readOnly: Bool, sharedWriters: Bool) {
        self = readOnly ? .follower : sharedWriters ? .sharedWriter : .soleWriter
    }
}

extension DiskStore {
    convenience init(directory: String, readOnly: Bool, durable: Bool = false, sharedWriters: Bool = false) throws {
        try self.init(directory: directory, sharing: SharingMode(readOnly: readOnly, sharedWriters: sharedWriters), durable: durable)
    }

    var readOnly: Bool { !writes }
    var sharedWriters: Bool { sharing.mode == .sharedWriter }

    /// A reader's catch-up (``Follower/catchUp(_:)``); nothing for a writer.
    @discardableResult
    func catchUp() -> Bool {
        (sharing as? Follower)?.catchUp(self) ?? false
    }

    /// The steps a writer among several takes around each operation (``SharedWriter``).
    func beginSharedOperation() { sharing.beginOperation(self) }
    func endSharedOperation() { sharing.endOperation(self) }
}

extension DiskEngine {
    static func open(_ url: URL, readOnly: Bool, maxSize: Int = 0, durable: Bool = false, sharedWriters: Bool = false,
                     client: () -> any EngineClient) throws -> DiskEngine {
        try open(url, sharing: SharingMode(readOnly: readOnly, sharedWriters: sharedWriters), maxSize: maxSize, durable: durable, client: client)
    }

    var readOnly: Bool { !sharing.writes }
    var sharedWriters: Bool { sharing == .sharedWriter }
}

extension StoreFolder {
    convenience init(directory: String, readOnly: Bool, sharedWriters: Bool = false) throws {
        try self.init(directory: directory, sharing: SharingMode(readOnly: readOnly, sharedWriters: sharedWriters))
    }
}

extension DiskStore {
    /// A version-1 value file's name (``VersionOneUpgrade/fileName(forKey:generation:)``).
    static func version1FileName(forKey key: String, generation: UInt64) -> String {
        VersionOneUpgrade.fileName(forKey: key, generation: generation)
    }

    static func isVersion1FileName(_ name: String) -> Bool {
        VersionOneUpgrade.isFileName(name)
    }
}

extension DiskStore {
    /// A compaction's copy (``CompactionCopy``).
    static func compact(_ records: [KeyDirectory.LiveRecord], seed: UInt64, victims: [SegmentFile],
                        into first: UInt32, count: UInt32, folder: FolderHandle, store: UInt64) -> CompactionCopy.Result {
        CompactionCopy.compact(records, seed: seed, victims: victims, into: first, count: count, folder: folder, store: store)
    }

    static func copyAlone<Result>(in folder: FolderHandle, _ copy: () -> Result) -> Result {
        CompactionCopy.copyAlone(in: folder, copy)
    }

    static func copyLock(of folder: FolderHandle) -> NSLock? {
        CompactionCopy.copyLock(of: folder)
    }
}

extension FolderLossCheck {
    /// Whether this write must check that the folder is still there (``due()``'s first answer).
    mutating func isDue() -> Bool { due().folder }
}
