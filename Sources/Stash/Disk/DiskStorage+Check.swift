import Foundation
import StashEngine

extension DiskStorage {
    /// Verifies the whole store without changing it: every record of every segment and every value
    /// (values in files of their own included) against its checksum.
    ///
    /// - Parameter progress: Called now and then with the entries verified so far and their total.
    /// - Returns: What was found; ``DiskCheckReport/isClean`` when nothing is damaged.
    /// - Complexity: Reads every byte of the store.
    public func check(progress: (@Sendable (Int, Int) -> Void)? = nil) throws -> DiskCheckReport {
        try engine.sync { try $0.check(progress: progress) }
    }

    /// Drops what is damaged: the entries whose values do not verify go (observers are told), and the
    /// live records are rewritten into fresh segments.
    /// - Returns: What ``check(progress:)`` found before the repair.
    /// - Throws: ``StorageError/readOnly(directory:)`` for a read-only store; I/O errors.
    public func repair(progress: (@Sendable (Int, Int) -> Void)? = nil) throws -> DiskCheckReport {
        try engine.sync { try $0.repair(progress: progress) }
    }
}
