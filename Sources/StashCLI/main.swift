import Foundation
import Stash

// `stash`: look into and edit a Stash disk store from the shell, or take the tour.
// A user of the library's public API only. See `stash --help`.

/// Runs one command line; returns the exit status. Errors become one line on stderr, never a trap.
func runStash(_ arguments: [String]) async -> Int32 {
    do {
        let (arguments, redis) = try RedisOptions.extract(from: arguments)
        let invocation = try Invocation.parse(arguments)
        #if os(watchOS) // RedisStorage is unavailable there (no BSD sockets); the tool is for macOS and Linux
        if redis != nil, invocation.command != .help {
            writeError("stash: Redis stores cannot be reached from watchOS")
            return ExitStatus.failure
        }
        #else
        if let redis, invocation.command != .help { return try RedisCommands(invocation, redis).run() }
        #endif
        switch invocation.command {
        case .help:
            print(helpText + RedisOptions.help)
            return ExitStatus.success
        case .tour:
            try await Tour.run()
            return ExitStatus.success
        default:
            if let status = StoreCommands.answerWithoutStore(invocation) { return status }
            return try StoreCommands(invocation).run()
        }
    } catch StorageError.notAStore(let directory) {
        writeError("stash: " + notAStoreMessage(directory))
        return ExitStatus.failure
    } catch let error as UsageError {
        writeError("stash: \(error.message)")
        writeError(error.usageLine)
        return ExitStatus.usage
    } catch StorageError.inUse(let directory) {
        writeError("stash: the store at \(directory) is open in another process (another stash command "
            + "or an app using it); try again once that process has closed it")
        return ExitStatus.failure
    } catch {
        writeError("stash: \(error)")
        return ExitStatus.failure
    }
}

/// Why `directory` cannot be opened: it is no store; when it holds stores (the `directory` of a
/// `DiskConfig`, given to `--dir` in place of a store), their names and the `--dir` that opens one.
func notAStoreMessage(_ directory: String) -> String {
    let names = DiskConfig.storeNames(in: URL(fileURLWithPath: directory, isDirectory: true))
    guard let first = names.first else {
        return "\(directory) is not empty and is not a Stash store; nothing in it was changed"
    }
    let listed = names.prefix(20).map(displayKey).joined(separator: ", ") + (names.count > 20 ? ", …" : "")
    return "\(directory) is not a store but the folder that holds stores (\(plural(names.count, "store"))): \(listed); "
        + "pass the store itself, for example --dir \(directory)/\(first)"
}

let helpText = """
    stash: look into and edit a Stash disk store (raw bytes per key) from the shell.

    usage: stash [--dir PATH] COMMAND [ARGS...]

    commands:
      set KEY [VALUE]        store VALUE (or all of stdin, byte for byte) for KEY
          --ttl SECONDS      ...expiring SECONDS from now
          --durable          ...flushed to stable storage (fsync) before stash exits
      get KEY                write KEY's value to stdout, byte for byte; a stored HTTP response
                             (StashHTTP) as its status line, headers, a blank line and body
          --stale            ...even when it has expired (a note on stderr says when; exit 0)
          --raw              ...the stored bytes as they are, an HTTP response's too
      rm KEY                 remove KEY (a missing key is no error)
      ls [PREFIX]            list key, size in bytes, expiry and last access (no value is read),
                             sorted by key; with PREFIX only the keys that start with it
          --json             ...as a JSON array of {key, size, expiry, lastAccess, expired}
      stats                  the store's path, entry count, total bytes and expired count
          --json             ...as a JSON object {path, entries, bytes, expired, recoveryIssues}
      trim --max-size BYTES  remove expired, then least recently used values, down to BYTES
      purge-expired          remove every expired value
      clear                  remove every value
      check                  verify every record and value read-only; exit 5 if something is damaged
          --repair           ...and drop what is damaged (exit 0 once the store is clean)
      tour                   a guided session with a temporary Storage<Note> (stores, reads, expires)
      help                   this text

    options (before or after the command):
      --dir PATH   the store folder itself (default: \(DiskConfig(name: "stash-cli").storeURL.path));
                   given the folder that holds stores, stash names them
      -h, --help   this text
      --           end of options: what follows is KEY or VALUE even if it starts with '-'

    exit status: 0 done, 1 storage error, 2 wrong usage, 3 no such key (get), 4 value expired (get),
      5 damage found (check)
    stash works beside a running app: commands that read open the store read-only, and see every
    write that returned before they began; commands that write take the store's lock for each
    change, beside an app that opened it with DiskConfig.allowsWritersInOtherProcesses (an app that
    keeps the store to itself makes them exit 1 with "in use": try again once it has closed it).

    From a package that depends on Stash, or from a clone of it, run the tool as
    `swift run stash COMMAND ...`; `swift build -c release --product stash` builds a binary to copy
    onto your PATH.
    """

exit(await runStash(Array(CommandLine.arguments.dropFirst())))
