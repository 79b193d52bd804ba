/// How a store's folder is shared with other processes: the one setting that selects the store's
/// ``ProcessSharing`` (its configuration maps `DiskConfig.readOnly` and
/// `DiskConfig.allowsWritersInOtherProcesses` to it). The answers that never change while a store is
/// open are here; what an operation does, step by step, is its ``ProcessSharing``'s.
///
/// The protocols themselves are described in Docs/Architecture.md, "Sharing a folder between
/// processes", and the shared file in Docs/Format.md.
package enum SharingMode: Sendable, Equatable {
    /// This process writes and keeps other writers out: the folder's lock is held for the store's
    /// life. Readers in other processes follow it through the shared file.
    case soleWriter
    /// Writers in several processes: each operation holds the folder's lock and catches up with the
    /// other writers first.
    case sharedWriter
    /// A reader: writes nothing, and follows a writer in another process before each operation.
    case follower

    /// Whether the store writes to its files (a follower never does).
    package var writes: Bool { self != .follower }

    /// Whether work on the store's files may happen outside an operation: values written to their
    /// files before their write enters the queue, a compaction copied off the queue, a `removeAll`'s
    /// old files deleted in the background. Only a sole writer: with writers in other processes,
    /// one of them opening the store meanwhile would take a staged value file for a crash's leftover,
    /// or copy beside writes it does not see; every step happens inside an operation, under the lock.
    package var worksOutsideOperations: Bool { self == .soleWriter }

    /// Whether value files are numbered at random rather than in order: writers in several
    /// processes number them without telling each other.
    var numbersValueFilesAtRandom: Bool { self == .sharedWriter }

    /// A new sharing protocol of this mode, for one store.
    func makeSharing() -> any ProcessSharing {
        switch self {
        case .soleWriter: SoleWriter()
        case .sharedWriter: SharedWriter()
        case .follower: Follower()
        }
    }
}
