import Foundation
@testable import StashEngine // the engine's per-folder settings for tests

/// Makes the stores in `path` append with `pwrite` instead of through a mapping of their active
/// segment (`--pwrite-appends`): the kill tests that stop a write at its `pwrite` need one to stop at.
func appendWithPwrite(in path: String) {
    var thresholds = DiskStore.Thresholds.standard
    thresholds.appendsThroughMapping = false
    DiskStore.thresholdOverrides.withLock { $0[URL(fileURLWithPath: path).standardizedFileURL.path] = thresholds }
}

/// How the key directory is written at close in `path` (`snapshot`): whole, as the kill tests of its
/// write need (`kept` false: no builder, whatever the store's size), or kept as the store goes by a
/// builder from the first few writes of a session on (`--kept`), for the kill tests of its naming. The
/// key uses file likewise: written at close, or written over a file made ready ahead (`--kept`).
func writeDirectories(in path: String, kept: Bool) {
    let folder = URL(fileURLWithPath: path).standardizedFileURL.path
    DiskStore.thresholdOverrides.withLock { overrides in
        var thresholds = overrides[folder] ?? DiskStore.Thresholds.standard
        thresholds.directoryBuilderMinimum = kept ? 32 : .max
        thresholds.keptDirectoryCapacity = kept ? 16 : thresholds.keptDirectoryCapacity
        thresholds.preparedUsesMinimum = kept ? 0 : .max
        overrides[folder] = thresholds
    }
}

/// Lowers the engine's thresholds for the store in `path` (`step --small-thresholds`), as the tests of
/// the key directory do in their own process: compaction once 16 KiB are dead, segments of 64 KiB, a key
/// directory written by every compaction and close, kept as a session goes from its 16th write on, and a
/// uses file made ready for any store that only reads.
func lowerThresholds(in path: String) {
    let folder = URL(fileURLWithPath: path).standardizedFileURL.path
    DiskStore.thresholdOverrides.withLock { overrides in
        var thresholds = overrides[folder] ?? DiskStore.Thresholds.standard
        thresholds.compactionMinimum = 16 << 10
        thresholds.directoryMinimum = 1
        thresholds.segmentLimit = 64 << 10
        thresholds.directoryBuilderMinimum = 16
        thresholds.keptDirectoryCapacity = 16
        thresholds.preparedUsesMinimum = 0
        overrides[folder] = thresholds
    }
}
