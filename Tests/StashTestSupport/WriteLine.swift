import Foundation

/// Writes `line` and a newline to standard output in one write, for the test executables
/// (`StashTorture`, `StashRedisChild`): the parent reading the pipe then sees whole lines only, and
/// a line it has means the operation it reports was done. Exits with status 1 when standard output
/// is gone (the parent died), rather than running on unobserved.
public func writeLine(_ line: String) {
    do { try FileHandle.standardOutput.write(contentsOf: Data((line + "\n").utf8)) } catch { exit(1) }
}
