import Foundation

/// This benchmark executable started again as a process of its own (`StashBenchmarks --store-process …`),
/// spoken to by lines: the parent writes commands to its standard input and reads its answers, one
/// line each, from its standard output (its standard error is the parent's). Waiting for a child is
/// waiting for its answer, never for time to pass.
final class ChildProcess {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let arguments: [String]
    /// Bytes read from the child but not yet returned as a line.
    private var pending: [UInt8] = []
    private var finished = false

    init(_ arguments: [String]) throws {
        // A child that died must fail the write to its pipe with EPIPE, not kill this process.
        signal(SIGPIPE, SIG_IGN)
        self.arguments = arguments
        process.executableURL = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    deinit {
        if !finished { try? finish() }
    }

    /// Writes `line` and a newline to the child's standard input.
    func send(_ line: String) throws {
        try input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    /// The child's next line of output, without its newline; throws when the child ended first.
    func readLine() throws -> String {
        let fd = output.fileHandleForReading.fileDescriptor
        var chunk = [UInt8](repeating: 0, count: 256)
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return line
            }
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw BenchError("\(description) ended without answering") }
            pending += chunk[..<count]
        }
    }

    /// The words of the child's next line, which must start with `word`.
    @discardableResult
    func expect(_ word: String) throws -> [Substring] {
        let line = try readLine()
        let words = line.split(separator: " ")
        guard words.first == Substring(word) else { throw BenchError("\(description): expected \(word), got \(line)") }
        return Array(words.dropFirst())
    }

    /// Closes the child's standard input (its cue to end), waits for it and checks its exit status.
    func finish() throws {
        guard !finished else { return }
        finished = true
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchError("\(description) exited with status \(process.terminationStatus)")
        }
    }

    private var description: String { "child process " + arguments.joined(separator: " ") }
}

/// The child's side of the conversation: answers on standard output, commands from standard input.
enum ChildIO {
    static func say(_ line: String) {
        print(line)
        fflush(nil) // every stream: `stdout` itself is a global Swift 6 will not touch
    }

    /// The next command, split into words; nil at the end of the input (the parent is done).
    static func command() -> [Substring]? {
        guard let line = Swift.readLine() else { return nil }
        return line.split(separator: " ")
    }

    static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("store-process: \(message)\n".utf8))
        return 1
    }
}
