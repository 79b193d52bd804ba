import Foundation

/// The subcommands of `stash`.
enum Command: String, CaseIterable {
    case set, get, rm, ls, stats, trim
    case purgeExpired = "purge-expired"
    case clear, check, tour, help

    /// The one-line usage of this command, shown after a usage error.
    var usage: String {
        switch self {
        case .set: return "usage: stash set KEY [VALUE] [--ttl SECONDS] [--durable] [--dir PATH]"
        case .get: return "usage: stash get KEY [--stale] [--raw] [--dir PATH]"
        case .rm: return "usage: stash rm KEY [--dir PATH]"
        case .ls: return "usage: stash ls [PREFIX] [--json] [--dir PATH]"
        case .stats: return "usage: stash stats [--json] [--dir PATH]"
        case .trim: return "usage: stash trim --max-size BYTES [--dir PATH]"
        case .check: return "usage: stash check [--repair] [--dir PATH]"
        case .tour, .help: return "usage: stash \(rawValue)"
        case .purgeExpired, .clear: return "usage: stash \(rawValue) [--dir PATH]"
        }
    }

    /// How many positional arguments (after the command's name) the command takes.
    var arity: ClosedRange<Int> {
        switch self {
        case .set: return 1...2
        case .get, .rm: return 1...1
        case .ls: return 0...1
        case .help: return 0...Int.max
        case .stats, .trim, .purgeExpired, .clear, .check, .tour: return 0...0
        }
    }
}

/// A wrong command line: reported as `stash: <message>` plus a usage line, exit status 2.
struct UsageError: Error {
    let message: String
    /// The command whose usage line to show; nil for the general one.
    var command: Command?

    static let generalUsage = "usage: stash [--dir PATH] COMMAND [ARGS...]  (commands: "
        + Command.allCases.map(\.rawValue).joined(separator: ", ") + "; see 'stash --help')"

    var usageLine: String { command?.usage ?? Self.generalUsage }
}

/// A command line that parsed: what to run, on which store, with which options.
struct Invocation {
    var command: Command
    /// The positional arguments after the command's name (KEY, VALUE, PREFIX).
    var arguments: [String] = []
    /// `--dir`: the store folder itself; nil for the default store.
    var directory: String?
    /// `--ttl`, in seconds.
    var ttl: TimeInterval?
    /// `--json`.
    var json = false
    /// `--durable`: the write is flushed to stable storage before `stash` exits.
    var durable = false
    /// `--max-size`, in bytes.
    var maxSize: Int?
    /// `check --repair`: drop what is damaged.
    var repair = false
    /// `get --stale`: write an expired value too.
    var stale = false
    /// `get --raw`: the stored bytes, even of an HTTP response.
    var raw = false

    /// Parses `stash`'s arguments (without the program name). Options may come before or after
    /// the command; `--name=value` and `--name value` are both accepted; after `--` every argument
    /// is positional, so a KEY or VALUE may start with `-`.
    static func parse(_ arguments: [String]) throws -> Invocation {
        var options = Invocation(command: .help)  // the command is known once every argument is read
        var positionals: [String] = []
        var wantsHelp = false
        var given: Set<String> = []
        var remaining = arguments[...]

        while let argument = remaining.popFirst() {
            if argument == "--" {
                positionals.append(contentsOf: remaining)
                break
            }
            guard argument.hasPrefix("-"), argument != "-" else {
                positionals.append(argument)
                continue
            }
            let (name, inlineValue) = splitOption(argument)
            if name == "-h" || name == "--help" {
                wantsHelp = true
                continue
            }
            do {
                try options.apply(name, inlineValue: inlineValue, remaining: &remaining)
            } catch var error as UsageError {
                // Show the usage of the command named so far, if any.
                error.command = error.command ?? positionals.first.flatMap(Command.init(rawValue:))
                throw error
            }
            given.insert(name)
        }

        if wantsHelp { return Invocation(command: .help) }
        guard let name = positionals.first else { throw UsageError(message: "missing command") }
        guard let command = Command(rawValue: name) else { throw UsageError(message: "unknown command '\(name)'") }
        var invocation = options
        invocation.command = command
        invocation.arguments = Array(positionals.dropFirst())
        try invocation.validate(given: given)
        return invocation
    }

    /// Sets the option `name` from `inlineValue` (`--name=value`) or the next argument.
    private mutating func apply(_ name: String, inlineValue: String?, remaining: inout ArraySlice<String>) throws {
        func value() throws -> String {
            if let inlineValue { return inlineValue }
            guard let next = remaining.popFirst() else { throw UsageError(message: "\(name) needs a value") }
            return next
        }
        func flag() throws -> Bool {
            guard inlineValue == nil else { throw UsageError(message: "\(name) takes no value") }
            return true
        }
        switch name {
        case "--json":
            json = try flag()
        case "--durable":
            durable = try flag()
        case "--repair":
            repair = try flag()
        case "--stale":
            stale = try flag()
        case "--raw":
            raw = try flag()
        case "--dir":
            let path = try value()
            guard !path.isEmpty, storeFolderURL(path).path != "/" else {
                throw UsageError(message: "--dir needs a store folder path other than '/'")
            }
            directory = path
        case "--ttl":
            let text = try value()
            guard let seconds = TimeInterval(text), seconds.isFinite, seconds >= 0 else {
                throw UsageError(message: "--ttl needs a number of seconds (0 or more), not '\(text)'", command: .set)
            }
            ttl = seconds
        case "--max-size":
            let text = try value()
            guard let bytes = Int(text), bytes >= 0 else {
                throw UsageError(message: "--max-size needs a number of bytes (0 or more), not '\(text)'", command: .trim)
            }
            maxSize = bytes
        default:
            throw UsageError(message: "unknown option '\(name)' (put -- before a KEY or VALUE that starts with '-')")
        }
    }

    /// Checks the positional arguments and that each option belongs to the command.
    private func validate(given options: Set<String>) throws {
        if arguments.count < command.arity.lowerBound {
            throw UsageError(message: "\(command.rawValue) needs a KEY", command: command)
        }
        if arguments.count > command.arity.upperBound {
            let extra = arguments[command.arity.upperBound]
            throw UsageError(message: "unexpected argument '\(extra)' for \(command.rawValue)", command: command)
        }
        let allowed: Set<String>
        switch command {
        case .set: allowed = ["--dir", "--ttl", "--durable"]
        case .ls, .stats: allowed = ["--dir", "--json"]
        case .trim: allowed = ["--dir", "--max-size"]
        case .check: allowed = ["--dir", "--repair"]
        case .tour, .help: allowed = []
        case .get: allowed = ["--dir", "--stale", "--raw"]
        case .rm, .purgeExpired, .clear: allowed = ["--dir"]
        }
        if let stray = options.subtracting(allowed).sorted().first {
            throw UsageError(message: "\(command.rawValue) does not take \(stray)", command: command)
        }
        if command == .trim, maxSize == nil {
            throw UsageError(message: "trim needs --max-size BYTES", command: command)
        }
    }

    /// `--name=value` as (`--name`, `value`); any other argument as (argument, nil).
    private static func splitOption(_ argument: String) -> (String, String?) {
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }
}

/// The folder a `--dir` argument names, absolute (relative paths start at the working directory).
func storeFolderURL(_ path: String) -> URL {
    URL(fileURLWithPath: path, isDirectory: true).standardizedFileURL
}
