import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Standard output written in large blocks: `print` per line costs a lock and a system call per
/// line, which made `stash ls` of a million entries take 17 s. What is left is written when the
/// object is released.
final class BufferedOutput {
    private var buffer: [UInt8] = []
    private let blockSize = 1 << 20

    init() {
        buffer.reserveCapacity(blockSize + 4096)
    }

    /// Appends `line` and a newline; writes a block once one is full.
    func writeLine(_ line: String) {
        append(line)
        endLine()
    }

    /// Appends `text`, no newline.
    func append(_ text: String) {
        buffer.append(contentsOf: text.utf8)
    }

    /// Appends `count` spaces (none when `count` is not positive).
    func writeSpaces(_ count: Int) {
        if count > 0 { buffer.append(contentsOf: repeatElement(UInt8(ascii: " "), count: count)) }
    }

    /// Ends the line; writes a block once one is full.
    func endLine() {
        buffer.append(UInt8(ascii: "\n"))
        if buffer.count >= blockSize { flush() }
    }

    /// Writes what is buffered; stdout is a byte stream, so a short write is continued.
    func flush() {
        var offset = 0
        while offset < buffer.count {
            let written = buffer.withUnsafeBytes { bytes in
                write(STDOUT_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                break  // a closed pipe (`stash ls | head`): the rest has no reader
            }
            offset += written
        }
        buffer.removeAll(keepingCapacity: true)
    }

    deinit {
        flush()
    }
}

/// `date` in ISO 8601, UTC, to the second: `2030-01-01T09:00:00Z`, as `Date.formatted(.iso8601)`
/// writes it, at a small fraction of its cost (it is called twice per entry by `stash ls`).
func iso8601(_ date: Date) -> String {
    let seconds = date.timeIntervalSince1970.rounded(.down)
    var time = time_t(exactly: seconds) ?? 0
    var parts = tm()
    guard seconds.isFinite, (-62_135_596_800...253_402_300_799).contains(seconds), gmtime_r(&time, &parts) != nil else {
        return date.formatted(.iso8601)  // outside years 1–9999: Foundation's own rules
    }
    func digits(_ value: Int32, _ count: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, count - text.count)) + text
    }
    return digits(parts.tm_year + 1900, 4) + "-" + digits(parts.tm_mon + 1, 2) + "-" + digits(parts.tm_mday, 2) + "T"
        + digits(parts.tm_hour, 2) + ":" + digits(parts.tm_min, 2) + ":" + digits(parts.tm_sec, 2) + "Z"
}
