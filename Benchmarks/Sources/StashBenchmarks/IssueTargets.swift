import Foundation

/// The targets tables of the disk-engine-v3 and "Other processes welcome" issues, computed from a
/// run's rows: for each target, the rows that carry it (by scenario name, `*` standing for an entry
/// count), their figures on every file system, and a status. `run` prints them and `--markdown` writes
/// them, so Docs/Benchmarks.md's targets tables are regenerated from a run rather than copied by hand.
struct IssueTarget {
    var row: String
    var target: String
    /// Scenario names without the file-system tag; `*` matches an entry count.
    var scenarios: [String]
    /// Why a target has no rows in this suite (measured elsewhere).
    var elsewhere: String?

    static let v3: [IssueTarget] = [
        IssueTarget(row: "engine: set new, overwrite, remove vs LevelDB (default options)", target: "≤ 1.0×",
                    scenarios: ["set new key, 200 B data vs LevelDB", "overwrite, 200 B data vs LevelDB",
                                "removeObject, 200 B data vs LevelDB"]),
        IssueTarget(row: "engine: get cold vs LevelDB (default options); vs LMDB", target: "≤ 1.0×; ≤ 2.0×",
                    scenarios: ["disk hit, cold, 200 B data vs LevelDB", "disk hit, cold, 200 B data vs LMDB"]),
        IssueTarget(row: "engine: fill N entries, one write each, vs LevelDB (N = 1M with --scale)", target: "≤ 1.0×",
                    scenarios: ["fill * entries, one write each vs LevelDB"]),
        IssueTarget(row: "open + first get, 100k / 1M entries, access records present", target: "≤ 5 ms / ≤ 5 ms (v4's)",
                    scenarios: ["open + first get, * entries, access records present vs LevelDB"]),
        IssueTarget(row: "close after filling 1M (100k without --scale)", target: "≤ 20 ms",
                    scenarios: ["close after filling * entries vs LevelDB"]),
        IssueTarget(row: "heap growth per entry after opening 1M; RSS after reading every key once", target: "≤ 16 B; ≤ 40 B (v4's)",
                    scenarios: ["heap growth per entry after opening, * entries vs LevelDB",
                                "RSS growth per entry after reading every key once, * entries vs LevelDB"]),
        IssueTarget(row: "disk per 200 B entry, 1M (100k without --scale)", target: "≤ 240 B",
                    scenarios: ["disk allocated per 200 B entry, * entries vs LevelDB"]),
        // v3's "get cold vs SQLite (same JSON coder) ≤ 0.7×" is superseded by issue #31's rows (`codable`):
        // the SQLite side of `… codable vs SQLite` now has Foundation's coder (≤ 0.5×), and the same-coder
        // row (`… with Stash's JSON coder`) is reported beside it without a target.
        IssueTarget(row: "app, small Codable: 80/20 mix, 1 and 2 threads vs SQLite; 2 threads ≥ 1 thread in throughput",
                    target: "≤ 0.5×; ≤ 1.0×",
                    scenarios: ["80/20 read/write, 1 thread vs SQLite", "80/20 read/write, 2 threads vs SQLite",
                                "80/20 read/write, 2 threads vs 1 thread (Stash)"]),
        IssueTarget(row: "`stash get` and `stash stats` on a 1M store, whole process", target: "≤ 100 ms", scenarios: [],
                    elsewhere: "`Benchmarks/cli-scale` (its table's target column)"),
    ]

    /// The "Other processes welcome" issue's targets (writers in several processes, readers beside a writer).
    static let otherProcesses: [IssueTarget] = [
        IssueTarget(row: "single-process rows unchanged by the multi-process work", target: "≤ 1.05×", scenarios: [],
                    elsewhere: "the library before and after it, instructions and alternating runs (Docs/Benchmarks.md)"),
        IssueTarget(row: "a read in a reader process beside an idle writer (nothing changed) vs a single-process read",
                    target: "≤ 1.1×", scenarios: ["disk hit, warm, 200 B data, in a reader process beside a writer vs single-process read"]),
        IssueTarget(row: "a write with writers in other processes allowed (set new, overwrite) vs LevelDB's single-process write",
                    target: "≤ 2.0×", scenarios: ["set new key, 200 B data, writers in other processes allowed vs LevelDB",
                                                 "overwrite, 200 B data, writers in other processes allowed vs LevelDB"]),
        IssueTarget(row: "two processes writing one store vs SQLite, two processes writing one WAL database", target: "≤ 0.5×",
                    scenarios: ["two processes writing, 200 B data vs SQLite two processes"]),
    ]

    /// Issue #31's targets: Stash's JSON coder, and the app rows it speeds up.
    static let codable: [IssueTarget] = [
        IssueTarget(row: "encode; decode the Codable value vs Foundation's JSONEncoder; JSONDecoder", target: "≤ 0.2×; ≤ 0.25×",
                    scenarios: ["encode, codable value vs Foundation JSONEncoder", "decode, codable value vs Foundation JSONDecoder"]),
        IssueTarget(row: "app, Codable: set new, overwrite, get cold vs SQLite with Foundation's coder", target: "≤ 0.5×",
                    scenarios: ["set new key, codable vs SQLite", "overwrite, codable vs SQLite", "disk hit, cold memory, codable vs SQLite"]),
        IssueTarget(row: "app, Codable: the same vs SQLite with Stash's coder (reported)", target: "—",
                    scenarios: ["set new key, codable vs SQLite with Stash's JSON coder", "overwrite, codable vs SQLite with Stash's JSON coder",
                                "disk hit, cold memory, codable vs SQLite with Stash's JSON coder"]),
        IssueTarget(row: "app, Codable: set new, overwrite, get cold vs GRDB 7, a Codable record (DatabaseQueue; DatabasePool)",
                    target: "≤ 0.5×",
                    scenarios: ["set new key, codable record vs GRDB DatabaseQueue", "overwrite, codable record vs GRDB DatabaseQueue",
                                "disk hit, cold memory, codable record vs GRDB DatabaseQueue",
                                "set new key, codable record vs GRDB DatabasePool", "overwrite, codable record vs GRDB DatabasePool",
                                "disk hit, cold memory, codable record vs GRDB DatabasePool"]),
    ]

    /// Issue #34's targets (day two): read-modify-write, transactions and a prefix's values.
    static let dayTwo: [IssueTarget] = [
        IssueTarget(row: "update vs object + setObject on the same storage", target: "≤ 1.1×",
                    scenarios: ["update, codable vs object + setObject"]),
        IssueTarget(row: "update vs SQLite's BEGIN IMMEDIATE; SELECT; UPDATE; COMMIT; vs GRDB 7's write { } (DatabaseQueue)",
                    target: "≤ 0.5×", scenarios: ["update, codable vs SQLite BEGIN IMMEDIATE; SELECT; UPDATE; COMMIT",
                                                 "update, codable vs GRDB DatabaseQueue"]),
        IssueTarget(row: "a 100-value transaction vs SQLite's (100 SELECT + UPDATE); vs GRDB 7's write { }", target: "≤ 1.0×",
                    scenarios: ["transaction of 100 updates, codable vs SQLite transaction of 100 SELECT + UPDATE",
                                "transaction of 100 updates, codable vs GRDB DatabaseQueue"]),
        IssueTarget(row: "objects(withPrefix:) at 100k (10k with --quick), 100 keys and every key, vs SQLite's range scan",
                    target: "≤ 1.0×", scenarios: ["objects(withPrefix:) 100 of * codable vs SQLite",
                                                 "objects(withPrefix:) all * codable vs SQLite"]),
    ]

    /// Issue #32's targets (disk engine v4), every row of its table. Where a row measures a scenario of
    /// v3's table, the bound attached to that scenario is v4's (the tighter one).
    static let v4: [IssueTarget] = [
        IssueTarget(row: "engine: set new, overwrite, delete vs LevelDB (default options), 10k and 1M", target: "≤ 1.0×",
                    scenarios: ["set new key, 200 B data vs LevelDB", "overwrite, 200 B data vs LevelDB",
                                "removeObject, 200 B data vs LevelDB"]),
        IssueTarget(row: "engine: get cold vs LevelDB (default options); vs LMDB", target: "≤ 1.0×; ≤ 2.0×",
                    scenarios: ["disk hit, cold, 200 B data vs LevelDB", "disk hit, cold, 200 B data vs LMDB"]),
        IssueTarget(row: "engine: gets from 2 threads vs 1 thread (throughput ≥ 1.7×); vs LevelDB's 2 threads",
                    target: "≤ 0.59× (time per read); ≤ 1.0×",
                    scenarios: ["gets from 2 threads, 200 B data vs 1 thread (Stash)", "gets from 2 threads, 200 B data vs LevelDB's 2 threads"]),
        IssueTarget(row: "app: sets from 2 threads vs 1 thread through Storage<Data> (throughput ≥ 0.9×)",
                    target: "≤ 1.11× (time per set)", scenarios: ["sets from 2 threads, 200 B data vs 1 thread (Stash)"]),
        IssueTarget(row: "memory hits from 2 threads vs 1 thread through `Storage` (throughput ≥ 1.5×)",
                    target: "≤ 0.67× (time per hit)", scenarios: [ParallelMemoryHitScenario.label]),
        IssueTarget(row: "app 80/20 mix, 2 threads: vs 1 thread (throughput ≥ 1.0×); vs SQLite", target: "≤ 1.0× (time); ≤ 0.5×",
                    scenarios: ["80/20 read/write, 2 threads vs 1 thread (Stash)", "80/20 read/write, 2 threads vs SQLite"]),
        IssueTarget(row: "app get cold, small Codable, vs SQLite with the same coder", target: "≤ 0.7×",
                    scenarios: ["disk hit, cold memory, codable vs SQLite with Stash's JSON coder"]),
        IssueTarget(row: "fill 1M, one write each, vs LevelDB (N = 1M with --scale)", target: "≤ 1.0×",
                    scenarios: ["fill * entries, one write each vs LevelDB"]),
        IssueTarget(row: "close after filling 1M; close of a process that read every key (100k without --scale)",
                    target: "≤ 20 ms; ≤ 20 ms",
                    scenarios: ["close after filling * entries vs LevelDB", "close of a process that read every key, * entries vs LevelDB"]),
        IssueTarget(row: "open + first get at 1M (100k without --scale), access records present; RSS growth of that open per entry",
                    target: "≤ 5 ms; ≤ 4 B",
                    scenarios: ["open + first get, * entries, access records present vs LevelDB",
                                "RSS growth per entry of open + first get, * entries vs LevelDB"]),
        IssueTarget(row: "reopen at 10k", target: "≤ 1 ms", scenarios: ["open + first read, 200 B data, * entries vs LevelDB"]),
        IssueTarget(row: "disk per 200-byte entry at 1M; RSS per entry after reading every key (100k without --scale)",
                    target: "≤ 240 B; ≤ 40 B",
                    scenarios: ["disk allocated per 200 B entry, * entries vs LevelDB",
                                "RSS growth per entry after reading every key once, * entries vs LevelDB"]),
    ]

    /// The targets tables `run` prints and `--markdown` writes, in this order.
    static let groups: [(title: String, targets: [IssueTarget])] = [
        ("disk engine v3 targets", v3), ("disk engine v4 targets", v4), ("other processes welcome targets", otherProcesses),
        ("Codable at the engine's speed targets", codable), ("day two targets", dayTwo),
    ]

    /// Which of this target's scenarios `scenario` (without its tag) is — its index in `scenarios`,
    /// so cells come in the target's order — and the count `*` matched; nil when none.
    func match(_ scenario: String) -> (index: Int, count: String?)? {
        for (index, pattern) in scenarios.enumerated() {
            let parts = pattern.components(separatedBy: "*")
            if parts.count == 1 {
                if scenario == pattern { return (index, nil) }
            } else if scenario.hasPrefix(parts[0]), scenario.hasSuffix(parts[1]),
                      scenario.count > parts[0].count + parts[1].count {
                let middle = scenario.dropFirst(parts[0].count).dropLast(parts[1].count)
                if middle.allSatisfy(\.isNumber) { return (index, String(middle)) }
            }
        }
        return nil
    }
}

extension Report {
    /// `scenario [fs]` → (`scenario`, `fs`).
    static func splitTag(_ scenario: String) -> (String, String) {
        guard scenario.hasSuffix("]"), let open = scenario.range(of: " [", options: .backwards) else { return (scenario, "") }
        return (String(scenario[..<open.lowerBound]), String(scenario[open.upperBound...].dropLast()))
    }

    static let issueHeaders = ["row", "target"]

    /// One targets table (v3's unless told): row, target, one column per file system (the figure each target is on:
    /// the ratio, or Stash's own figure for an absolute bound; the entry count in parentheses), status.
    static func issueTargets(_ rows: [Row], _ targets: [IssueTarget] = IssueTarget.v3) -> [[String]] {
        let tagged = rows.filter { $0.met != nil }.map { (row: $0, parts: splitTag($0.scenario)) }
        var systems: [String] = []
        for item in tagged where !systems.contains(item.parts.1) { systems.append(item.parts.1) }
        let header = issueHeaders + systems.map { $0.isEmpty ? "run" : $0 } + ["status"]
        var lines = [header]
        for target in targets {
            var cells = [target.row, target.target]
            var met = 0, missed = 0
            for system in systems {
                let found = tagged.compactMap { item -> (order: Int, count: Int, cell: String)? in
                    guard item.parts.1 == system, let match = target.match(item.parts.0) else { return nil }
                    if item.row.met == true { met += 1 } else { missed += 1 }
                    let figure: String
                    if case .ratio = item.row.target {
                        figure = String(format: "%.2f×", item.row.ratio)
                    } else {
                        figure = Row.format(item.row.stash, item.row.unit)
                    }
                    let cell = figure + (match.count.map { " (\($0))" } ?? "") + (item.row.met == true ? "" : " ✗")
                    return (match.index, match.count.flatMap { Int($0) } ?? 0, cell)
                }.sorted { ($0.order, $0.count) < ($1.order, $1.count) }.map(\.cell)
                cells.append(found.isEmpty ? "—" : found.joined(separator: ", "))
            }
            let status = target.elsewhere.map { "see \($0)" }
                ?? (met + missed == 0 ? "not run" : missed == 0 ? "met" : met == 0 ? "MISSED" : "MISSED (\(missed) of \(met + missed))")
            lines.append(cells + [status])
        }
        return lines
    }

    /// Every group's table (``IssueTarget/groups``), one after the other.
    static func issueTargetsMarkdown(_ rows: [Row]) -> String {
        IssueTarget.groups.map { group in
            let lines = issueTargets(rows, group.targets)
            let rule = lines[0].map { _ in "---" }
            return ([lines[0], rule] + lines.dropFirst()).map { "| " + $0.joined(separator: " | ") + " |" }
                .joined(separator: "\n") + "\n"
        }.joined(separator: "\n")
    }

    static func issueTargetsText(_ rows: [Row]) -> String {
        IssueTarget.groups.map { group in
            "\(group.title):\n" + issueTargets(rows, group.targets).map { $0.joined(separator: "  |  ") }.joined(separator: "\n")
        }.joined(separator: "\n\n")
    }

    // MARK: The wrapper-overhead table

    static let wrapperHeaders = ["peer", "operation", "C driver", "Swift (engine rows)", "overhead",
                                 "`Side` (String, Data)", "overhead"]

    static func wrapperCells(_ row: WrapperRow) -> [String] {
        func overhead(_ value: Double) -> String {
            String(format: "%+.0f ns (%+.0f%%)", value - row.c, (value - row.c) / row.c * 100)
        }
        return [row.peer + (row.fileSystem.isEmpty ? "" : " " + row.fileSystem), row.operation,
                Row.format(row.c, .nsPerOp), Row.format(row.swift, .nsPerOp), overhead(row.swift),
                Row.format(row.side, .nsPerOp), overhead(row.side)]
    }

    static func wrapperMarkdown(_ rows: [WrapperRow]) -> String {
        guard !rows.isEmpty else { return "" }
        let lines = [wrapperHeaders, wrapperHeaders.map { _ in "---" }] + rows.map(wrapperCells)
        return lines.map { "| " + $0.joined(separator: " | ") + " |" }.joined(separator: "\n") + "\n"
    }

    static func wrapperText(_ rows: [WrapperRow]) -> String {
        guard !rows.isEmpty else { return "" }
        return "wrapper overhead (ns/op; overhead against the C driver):\n"
            + rows.map { wrapperCells($0).joined(separator: "  |  ") }.joined(separator: "\n")
    }
}
