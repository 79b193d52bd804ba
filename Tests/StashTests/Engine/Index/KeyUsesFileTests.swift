import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// The key uses file (Docs/Format.md, "Key uses"): what a close after reads alone writes instead of a
/// directory. It is derived data, like the directory: one that is damaged, of another store, of another
/// directory, or whose position the segments do not hold is not taken, and the access records after the
/// directory give the same order; nothing else is lost, and only damage is reported.
@Suite("Key uses file: taken only when it is this directory's, else the access records")
struct KeyUsesFileTests {
    private static let keys = (0..<40).map { "key \($0)" }

    enum Change: String, CaseIterable, CustomTestStringConvertible {
        case flippedBody, cut, otherStore, otherDirectory, positionNotHeld, folderInItsPlace
        var testDescription: String { rawValue }
        /// Whether an open reports it: damage, not a file left from a directory since replaced.
        var isReported: Bool { self != .otherDirectory && self != .folderInItsPlace }
    }

    private func openDisk(_ directory: TemporaryDirectory, clock: TestClock) throws -> DiskStorage<Data> {
        try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData(), now: clock.function)
    }

    /// Sets the header's u64 at `offset` of the uses file `bytes` to `value` and seals the header again.
    private func reseal(_ bytes: inout [UInt8], _ value: UInt64, at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) { bytes.replaceSubrange(offset..<(offset + 8), with: $0) }
        let hash = bytes.withUnsafeBytes { XXH64.hash(UnsafeRawBufferPointer(rebasing: $0[0..<120])) }
        withUnsafeBytes(of: hash.littleEndian) { bytes.replaceSubrange(120..<128, with: $0) }
    }

    @Test("a uses file that is not this directory's is not taken: the order comes from the access records, and only damage is reported",
          arguments: Change.allCases)
    func notTaken(change: Change) throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let usesFile = directory.storePath() + "/" + StoreFolder.usesName
        var random = SeededGenerator(seed: 41)
        try withEngineThresholds(in: directory.path, directoryMinimum: 1) {
            do {
                let disk = try openDisk(directory, clock: clock)
                for key in Self.keys { try disk.setObject(Data(repeating: 1, count: 100), forKey: key) }
            }
            var order = Self.keys // least recently used first
            func use(_ keys: some Sequence<String>) {
                let keys = Array(keys)
                order = order.filter { !keys.contains($0) } + keys
            }
            var stale: [UInt8] = []
            if change == .otherDirectory {
                // The uses file of the directory before: a process read, then a change and a close wrote
                // a new directory (and removed that uses file), which is then put back.
                let read = Self.keys.shuffled(using: &random).prefix(10)
                do {
                    let disk = try openDisk(directory, clock: clock)
                    for key in read {
                        clock.advance(by: 1)
                        _ = try disk.object(forKey: key)
                    }
                }
                use(read)
                stale = try Damage.bytes(usesFile)
            }
            let used = Self.keys.shuffled(using: &random).prefix(10)
            do {
                let disk = try openDisk(directory, clock: clock)
                if change == .otherDirectory {
                    clock.advance(by: 1)
                    try disk.setObject(Data(repeating: 2, count: 100), forKey: Self.keys[1])
                    use([Self.keys[1]])
                }
                for key in used {
                    clock.advance(by: 1)
                    _ = try disk.object(forKey: key)
                }
            }
            use(used)
            // A close after a change writes a directory and removes the uses file; after reads alone, writes one.
            #expect(FileManager.default.fileExists(atPath: usesFile) == (change != .otherDirectory))
            var bytes = change == .otherDirectory ? stale : try Damage.bytes(usesFile)
            switch change {
            case .flippedBody: bytes[bytes.count - 3] ^= 0x40
            case .cut: bytes.removeLast(16)
            case .otherStore: reseal(&bytes, 0x1234_5678, at: 8)
            case .otherDirectory: break
            case .positionNotHeld: reseal(&bytes, 0xdead_beef, at: 40) // the tail hash
            case .folderInItsPlace: break
            }
            if change == .folderInItsPlace {
                try FileManager.default.removeItem(atPath: usesFile)
                try FileManager.default.createDirectory(atPath: usesFile, withIntermediateDirectories: false)
            } else {
                try Damage.write(bytes, to: usesFile)
            }
            let disk = try openDisk(directory, clock: clock)
            let reported = disk.recoveryIssues.contains { "\($0)".contains("key uses file") }
            #expect(reported == change.isReported, "\(disk.recoveryIssues)")
            #expect(disk.recoveryIssues.count == (change.isReported ? 1 : 0), "\(disk.recoveryIssues)")
            #expect(disk.entryInfos.map(\.key) == order)
            var isFolder: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: usesFile, isDirectory: &isFolder)
            if change == .folderInItsPlace {
                #expect(exists && isFolder.boolValue, "a folder in the uses file's place is not the store's")
            } else {
                #expect(!exists, "a writer left a uses file it did not take")
            }
        }
    }
}
