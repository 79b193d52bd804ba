import Foundation

/// A monotonic clock that moves only when told (for ``FolderLossCheck``).
final class ManualNanoseconds: @unchecked Sendable {
    // @unchecked Sendable: `now` only under `lock`.
    private let lock = NSLock()
    private var now: UInt64 = 1_000_000_000

    var read: @Sendable () -> UInt64 { { [self] in lock.withLock { now } } }

    func advance(by nanoseconds: UInt64) {
        lock.withLock { now += nanoseconds }
    }
}
