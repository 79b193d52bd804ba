import Foundation
import Testing
@testable import Stash
@testable import StashEngine

// Helpers of the version-2 disk tests: opening a store folder, damaging its files, lowering the
// engine's thresholds so compaction and snapshots happen in small tests.

/// Runs `body` with the engine's thresholds lowered for the stores opened in `folder` (and the
/// folders below it), then restores them. Stores of other folders, which tests running meanwhile
/// open, keep the standard ones.
func withEngineThresholds<Result>(in folder: String, compactionMinimum: Int? = nil, directoryMinimum: Int? = nil,
                                  segmentLimit: Int? = nil, upgradeSegmentLimit: Int? = nil, compactionStep: Int? = nil,
                                  directoryBuilderMinimum: Int? = nil, keptDirectoryCapacity: Int? = nil,
                                  preparedUsesMinimum: Int? = nil, stepDirectoryMaximum: Int? = nil,
                                  _ body: () throws -> Result) rethrows -> Result {
    var thresholds = DiskStore.Thresholds.standard
    if let stepDirectoryMaximum { thresholds.stepDirectoryMaximum = stepDirectoryMaximum }
    if let preparedUsesMinimum { thresholds.preparedUsesMinimum = preparedUsesMinimum }
    if let directoryBuilderMinimum { thresholds.directoryBuilderMinimum = directoryBuilderMinimum }
    if let keptDirectoryCapacity { thresholds.keptDirectoryCapacity = keptDirectoryCapacity }
    if let compactionMinimum { thresholds.compactionMinimum = compactionMinimum }
    if let directoryMinimum { thresholds.directoryMinimum = directoryMinimum }
    if let segmentLimit { thresholds.segmentLimit = segmentLimit }
    if let upgradeSegmentLimit { thresholds.upgradeSegmentLimit = upgradeSegmentLimit }
    if let compactionStep { thresholds.compactionStep = compactionStep }
    DiskStore.thresholdOverrides.withLock { $0[folder] = thresholds }
    defer { DiskStore.thresholdOverrides.withLock { $0[folder] = nil } }
    return try body()
}

/// A `DiskStorage<Data>` on the store folder `path`.
func openDataStore(_ path: String, maxSize: Int = 0, readOnly: Bool = false, valuesAsFiles: Bool = false,
                   now: @escaping @Sendable () -> Date = { Date() }) throws -> DiskStorage<Data> {
    let url = URL(fileURLWithPath: path)
    return try DiskStorage(config: DiskConfig(name: url.lastPathComponent, maxSize: maxSize, directory: url.deletingLastPathComponent(),
                                              readOnly: readOnly, storesValuesAsFiles: valuesAsFiles),
                           transformer: TransformerFactory.forData(), now: now)
}

/// The store's files by kind, sorted by name.
struct StoreFiles {
    var segments: [String] = []
    var values: [String] = []
    var others: [String] = []

    init(_ path: String) throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: path).sorted() {
            if SegmentFile.id(ofName: name) != nil {
                segments.append(name)
            } else if DiskStore.isValueFileName(name) {
                values.append(name)
            } else {
                others.append(name)
            }
        }
    }

    var all: [String] { (segments + values + others).sorted() }
}

/// Byte-level damage to a file, as a crash, a power cut or a bad disk leaves it.
enum Damage {
    static func bytes(_ path: String) throws -> [UInt8] { try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) }

    static func write(_ bytes: [UInt8], to path: String) throws { try Data(bytes).write(to: URL(fileURLWithPath: path)) }

    /// Writes `bytes` over the file at `path` in place, as `dd conv=notrunc` does: the same file (a store
    /// that has it open or mapped sees the change), cut to their length where `truncating`.
    static func overwriteInPlace(_ path: String, with bytes: [UInt8], truncating: Bool = false) throws {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.write(contentsOf: Data(bytes))
        if truncating { try handle.truncate(atOffset: UInt64(bytes.count)) }
    }

    /// Flips bits of the byte at `offset` (never to the same value).
    static func flip(_ path: String, at offset: Int, with mask: UInt8 = 0x5A) throws {
        var bytes = try bytes(path)
        bytes[offset] ^= mask == 0 ? 1 : mask
        try write(bytes, to: path)
    }

    /// Cuts the last `count` bytes off.
    static func cut(_ path: String, last count: Int) throws {
        let bytes = try bytes(path)
        try write(Array(bytes.dropLast(count)), to: path)
    }

    static func append(_ tail: [UInt8], to path: String) throws {
        try write(try bytes(path) + tail, to: path)
    }

    /// Overwrites `count` bytes ending `fromEnd` bytes before the end with zeros (the size stays).
    static func zero(_ path: String, last count: Int) throws {
        var bytes = try bytes(path)
        for index in max(0, bytes.count - count)..<bytes.count { bytes[index] = 0 }
        try write(bytes, to: path)
    }

    static func size(_ path: String) throws -> Int {
        try (FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    /// Where the records of the segment at `path` end: its length, but for the room a writer that has
    /// it open reserves for appends after them (zeros, Docs/Format.md "Room reserved for appends").
    static func recordsEnd(_ path: String) throws -> Int {
        let bytes = try bytes(path)
        return try bytes.withUnsafeBytes { raw in
            let header = try #require(SegmentFormat.parseHeader(raw), "\(path) has no segment header")
            return SegmentFormat.scan(raw, salt: header.salt, from: header.length) { _, _, _ in }.validEnd
        }
    }
}

/// Every file's name and bytes under `path` (recursively), to prove a folder was left untouched.
func folderContents(_ path: String) throws -> [String: Data] {
    var result: [String: Data] = [:]
    guard let walker = FileManager.default.enumerator(atPath: path) else { return result }
    while let name = walker.nextObject() as? String {
        var isDirectory: ObjCBool = false
        _ = FileManager.default.fileExists(atPath: path + "/" + name, isDirectory: &isDirectory)
        result[name] = isDirectory.boolValue ? Data("<folder>".utf8) : try Data(contentsOf: URL(fileURLWithPath: path + "/" + name))
    }
    return result
}

extension DiskStorage {
    /// Compacts every segment now, on the engine's queue (deterministic, unlike the background one).
    func compactNow() throws {
        try engine.sync { try $0.compactNow() }
    }

    /// Whether a background compaction is under way.
    var isCompacting: Bool { engine.sync { $0.isCompacting } }

    /// Waits until the background compaction under way (if any) has finished on the queue.
    func waitForCompaction() {
        while isCompacting { usleep(1_000) } // a background job, not time: bounded by its work
    }

    /// Waits until no background compaction runs and none is due: after each one, the check a write
    /// would make runs again (``Compaction/startIfNeeded()``). What a test measures then does
    /// not depend on when the compactions ran beside its writes (a compaction that copied while the
    /// writes went on leaves dead bytes that only the next write's check would compact).
    func settleCompaction() {
        repeat {
            waitForCompaction()
            engine.sync { $0.compaction.startIfNeeded() }
        } while isCompacting
    }
}

/// A version-2 segment header, as a format-2 store wrote it: two copies of
/// `magic "STASHSG2" | id u64 | salt u64 | flags u32 | checksum u32`.
func version2SegmentHeader(id: UInt64, salt: UInt64) -> [UInt8] {
    var copy = SegmentFormat.version2Magic
    SegmentFormat.appendInteger(id, to: &copy)
    SegmentFormat.appendInteger(salt, to: &copy)
    SegmentFormat.appendInteger(UInt32(0), to: &copy)
    SegmentFormat.appendInteger(UInt32(truncatingIfNeeded: XXH64.hash(copy)), to: &copy)
    return copy + copy
}

/// A store as format 2 wrote it at `path`: its marker, and segment 1 (a version-2 header) with one set
/// record, "old" = "v2!".
func writeFormatTwoStore(_ path: String) throws {
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    var segment = version2SegmentHeader(id: 1, salt: 99)
    Array("v2!".utf8).withUnsafeBytes { bytes in
        _ = SegmentFormat.appendSet(key: "old", expiry: StoredTime.never, time: 1, value: .inline(size: 3),
                                    inlineBytes: bytes, salt: 99, to: &segment)
    }
    try Damage.write(segment, to: path + "/" + SegmentFile.name(of: 1))
    try Damage.write(Array("Stash store, format 2\n".utf8), to: path + "/" + StoreFolder.markerName)
}

/// The file whose calls a kill at `syscall` counts (``Strace/arguments(killAt:occurrence:onlyOn:command:)``):
/// for a kill while the key directory is written (``Strace/writes``), its temporary file in `store`
/// (the close writes it without an `fsync` to kill at); for any other call, none.
func killTarget(_ syscall: String, store: String) -> String? {
    syscall == Strace.writes ? URL(fileURLWithPath: store).resolvingSymlinksInPath().path + "/\(StoreFolder.directoryName).tmp" : nil
}
