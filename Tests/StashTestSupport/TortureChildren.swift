public import Foundation

/// A value `StashTorture` wrote: `STV1`, key length u16, key, sequence u64, payload length u32,
/// payload, checksum u64 (the checksum is not verified here: the engine verified the record).
public struct WrittenValue: Sendable {
    public var sequence: UInt64

    /// Parses `data` as a value written for `key`; nil if it is not one.
    public init?(parsing data: Data, key: String) {
        let keyBytes = Array(key.utf8)
        let bytes = [UInt8](data)
        let header = 4 + 2 + keyBytes.count + 8 + 4
        guard bytes.count >= header + 8, bytes.prefix(4).elementsEqual("STV1".utf8),
              Int(bytes[4]) | Int(bytes[5]) << 8 == keyBytes.count, bytes[6..<(6 + keyBytes.count)].elementsEqual(keyBytes) else { return nil }
        func word(at offset: Int, count: Int) -> UInt64 {
            (0..<count).reduce(0) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
        }
        let count = Int(word(at: 14 + keyBytes.count, count: 4))
        guard bytes.count == header + count + 8 else { return nil }
        sequence = word(at: 6 + keyBytes.count, count: 8)
    }
}

#if os(macOS) || os(Linux) // ChildProcess's platforms
/// Kills a child that has not finished after `seconds`, so that a hung child fails its test instead of hanging it.
public final class Watchdog: @unchecked Sendable {
    // @unchecked Sendable: `isCancelled` is only touched under `lock`.
    private let lock = NSLock()
    private var isCancelled = false

    public init(_ child: ChildProcess, seconds: Double) {
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
            if !lock.withLock({ isCancelled }) { child.kill() }
        }
    }

    public func cancel() {
        lock.withLock { isCancelled = true }
    }
}
#endif
