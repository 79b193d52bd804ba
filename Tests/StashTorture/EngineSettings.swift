import Foundation
@testable import StashEngine // the engine's per-folder settings for tests

/// Makes the stores in `path` append with `pwrite` instead of through a mapping of their active
/// segment (`--pwrite-appends`): the kill tests that stop a write at its `pwrite` need one to stop at.
func appendWithPwrite(in path: String) {
    var thresholds = DiskStore.Thresholds.standard
    thresholds.appendsThroughMapping = false
    DiskStore.thresholdOverrides.withLock { $0[URL(fileURLWithPath: path).standardizedFileURL.path] = thresholds }
}
