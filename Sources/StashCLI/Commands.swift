import Foundation
import Stash

/// The exit statuses of `stash`.
enum ExitStatus {
    static let success: Int32 = 0
    /// A storage or I/O error.
    static let failure: Int32 = 1
    /// Wrong usage.
    static let usage: Int32 = 2
    /// `get`: no value is stored for the key.
    static let notFound: Int32 = 3
    /// `get`: the value is stored but expired.
    static let expired: Int32 = 4
}

/// The commands that work on a store: each opens it as raw bytes, `DiskStorage<Data>`.
struct StoreCommands {
    let invocation: Invocation
    let storage: DiskStorage<Data>
    /// `set` without VALUE: all of stdin, read before the store is opened (and locked).
    private let standardInput: Data?

    /// Opens the store `invocation` names as raw bytes: read-only for the commands that only read,
    /// else creating it if needed.
    init(_ invocation: Invocation) throws {
        self.invocation = invocation
        if invocation.command == .set, invocation.arguments.count == 1 {
            if isatty(STDIN_FILENO) == 1 { writeError("stash: reading the value from stdin (end it with Ctrl-D)") }
            standardInput = try FileHandle.standardInput.readToEnd() ?? Data()
        } else {
            standardInput = nil
        }
        var config = Self.config(forDirectory: invocation.directory)
        config.durable = invocation.durable
        // Commands that only read open the store read-only: they create and change nothing (a
        // mistyped --dir is an error, not a new folder), and work on a store this user cannot write.
        config.readOnly = invocation.opensReadOnly
        // Commands that write take the store's lock for each change only, so they run beside the
        // processes of an app that share the store with writers in other processes (and still get
        // inUse beside one that keeps it to itself).
        config.allowsWritersInOtherProcesses = !config.readOnly
        storage = try DiskStorage(config: config, transformer: TransformerFactory.forData())
    }

    /// `get` of a store that does not exist: no value for the key (exit 3), and nothing is created.
    /// Nil for every other case (the store is opened; `ls` and `stats` of a missing folder are errors).
    static func answerWithoutStore(_ invocation: Invocation) -> Int32? {
        let path = config(forDirectory: invocation.directory).storeURL.path
        guard invocation.command == .get, !FileManager.default.fileExists(atPath: path) else { return nil }
        writeError("stash: no value for key \(quoted(invocation.arguments[0])): there is no store at \(path)")
        return ExitStatus.notFound
    }

    /// The default `stash-cli` store in the caches folder, or the folder `--dir` names.
    static func config(forDirectory path: String?) -> DiskConfig {
        guard let path else { return DiskConfig(name: "stash-cli") }
        let folder = storeFolderURL(path)
        return DiskConfig(name: folder.lastPathComponent, directory: folder.deletingLastPathComponent())
    }

    private var key: String { invocation.arguments[0] }

    /// Runs the command; returns the exit status.
    func run() throws -> Int32 {
        reportRecoveryIssues()
        switch invocation.command {
        case .set: try set()
        case .get: return try get()
        case .rm: try storage.removeObject(forKey: key)
        case .ls: try list()
        case .stats: try stats()
        case .trim: try trim()
        case .purgeExpired: try purgeExpired()
        case .clear: try clear()
        case .check: return try check()
        case .tour, .help: preconditionFailure("\(invocation.command) needs no store")
        }
        return ExitStatus.success
    }

    /// Damage that opening the store found and dropped, on stderr whatever the command (stdout stays
    /// the command's own output; the exit status stays the command's).
    private func reportRecoveryIssues() {
        let issues = storage.recoveryIssues
        guard !issues.isEmpty else { return }
        writeError("stash: opening the store found damaged data and dropped it (\(plural(issues.count, "issue"))):")
        issues.forEach { writeError("stash:   - \($0)") }
    }

    /// `set KEY [VALUE] [--ttl SECONDS] [--durable]`: the value is the argument, else all of stdin.
    private func set() throws {
        let value = standardInput ?? Data(invocation.arguments[1].utf8)
        try storage.setObject(value, forKey: key, expiry: invocation.ttl.map { .seconds($0) })
    }

    /// `get KEY [--stale] [--raw]`: the raw bytes to stdout, nothing added; a stored HTTP response
    /// readable (``HTTPResponseText``) unless `--raw`; an expired value only with `--stale`.
    private func get() throws -> Int32 {
        let value: Data
        do {
            let entry = try storage.entry(forKey: key)
            if entry.isExpired, case .date(let date) = entry.expiry {
                guard invocation.stale else {
                    writeError("stash: the value for key \(quoted(key)) expired at \(iso8601(date)) (get --stale writes it all the same)")
                    return ExitStatus.expired
                }
                writeError("stash: note: the value for key \(quoted(key)) expired at \(iso8601(date)); written as --stale asks")
            }
            value = entry.object
        } catch StorageError.notFound {
            writeError("stash: no value for key \(quoted(key))")
            return ExitStatus.notFound
        }
        if !invocation.raw, let response = HTTPResponseText(value) {
            try FileHandle.standardOutput.write(contentsOf: response.text)
        } else {
            try FileHandle.standardOutput.write(contentsOf: value)
        }
        return ExitStatus.success
    }

    /// `ls [PREFIX] [--json]`: one entry per line (or a JSON array), sorted by key; no value is read.
    /// With PREFIX, only the keys that start with it (`String.hasPrefix`, as `allKeys(withPrefix:)`).
    private func list() throws {
        let now = Date()
        let prefix = invocation.arguments.first ?? ""
        let dates = DateTexts()
        let entries = TerminalProgress.during("listing") {
            storage.entryInfos.filter { prefix.isEmpty || $0.key.hasPrefix(prefix) }
                .sorted { $0.key < $1.key }.map { ListedEntry($0, now: now, dates: dates) }
        }
        let output = BufferedOutput()
        if invocation.json {
            ListedEntry.writeJSON(entries, to: output)
        } else {
            ListedEntry.writeTable(entries, to: output)
        }
    }

    /// `stats [--json]`: where the store is and what it holds.
    private func stats() throws {
        let counts = storage.counts(expiredBy: Date())
        let summary = StoreSummary(path: storage.path, entries: counts.entries, bytes: storage.totalSize,
                                   expired: counts.expired,
                                   recoveryIssues: storage.recoveryIssues.map(\.description))
        if invocation.json {
            print(try summary.json())
            return
        }
        print("path:     \(summary.path)")
        print("entries:  \(summary.entries)")
        print("bytes:    \(summary.bytes)")
        print("expired:  \(summary.expired)")
        if !summary.recoveryIssues.isEmpty {
            print("recovery issues (damaged data dropped when the store was opened): \(summary.recoveryIssues.count)")
            summary.recoveryIssues.forEach { print("  - \($0)") }
        }
    }

    /// `trim --max-size N`: expired values first, then the least recently used.
    private func trim() throws {
        let maxSize = invocation.maxSize ?? 0
        let (countBefore, bytesBefore) = (storage.allKeys.count, storage.totalSize)
        try TerminalProgress.during("trimming") { try storage.trim(toSize: maxSize) }
        let (countAfter, bytesAfter) = (storage.allKeys.count, storage.totalSize)
        print("removed \(plural(countBefore - countAfter, "entry", "entries")) (\(plural(bytesBefore - bytesAfter, "byte"))); "
            + "\(plural(countAfter, "entry", "entries")) (\(plural(bytesAfter, "byte"))) remain, limit \(plural(maxSize, "byte"))")
    }

    /// `purge-expired`: removes every expired value and says how many.
    private func purgeExpired() throws {
        let before = storage.allKeys.count
        try TerminalProgress.during("removing expired entries") { try storage.removeExpiredObjects() }
        print("removed \(plural(before - storage.allKeys.count, "expired entry", "expired entries"))")
    }

    /// `clear`: removes every value.
    private func clear() throws {
        let before = storage.allKeys.count
        try TerminalProgress.during("clearing") { try storage.removeAll() }
        print("removed \(plural(before, "entry", "entries"))")
    }
}

/// `3 entries`, `1 entry`.
func plural(_ count: Int, _ singular: String, _ pluralForm: String? = nil) -> String {
    "\(count) \(count == 1 ? singular : pluralForm ?? singular + "s")"
}

/// Writes one line to stderr.
func writeError(_ line: String) {
    try? FileHandle.standardError.write(contentsOf: Data((line + "\n").utf8))
}
