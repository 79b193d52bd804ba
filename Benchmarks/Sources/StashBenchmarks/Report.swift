import Foundation

/// Prints the results as a table, and writes them as JSON and Markdown.
enum Report {
    static let headers = ["scenario", "Stash median", "baseline median", "baseline", "ratio", "target", "met?"]

    static func cells(_ row: Row) -> [String] {
        let met = row.met.map { $0 ? "yes" : "NO" } ?? "—"
        return [row.scenario, Row.format(row.stash, row.unit), Row.format(row.baseline, row.unit),
                row.baselineName, String(format: "%.2f×", row.ratio), row.target.label(row.unit), met]
    }

    /// A fixed-width text table for the terminal.
    static func table(_ rows: [Row]) -> String {
        let lines = [headers] + rows.map(cells)
        let widths = headers.indices.map { column in lines.map { $0[column].count }.max() ?? 0 }
        func render(_ cells: [String]) -> String {
            cells.enumerated().map { column, cell in
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                // Text columns align left, numbers right.
                return [0, 3].contains(column) ? cell + padding : padding + cell
            }.joined(separator: " | ")
        }
        let rule = widths.map { String(repeating: "-", count: $0) }.joined(separator: "-+-")
        return ([render(headers), rule] + rows.map { render(cells($0)) }).joined(separator: "\n")
    }

    /// The same table in Markdown, for Docs/Benchmarks.md.
    static func markdown(_ rows: [Row]) -> String {
        let lines = [headers, headers.map { _ in "---" }] + rows.map(cells)
        return lines.map { "| " + $0.joined(separator: " | ") + " |" }.joined(separator: "\n") + "\n"
    }

    /// Every row that has a target, met or missed, with the ratio and Stash's own figure:
    /// the status column of the issue's targets table, computed.
    static func targets(_ rows: [Row]) -> [[String]] {
        rows.filter { $0.met != nil }.map { row in
            [row.met == true ? "met" : "MISSED", row.scenario, String(format: "%.2f×", row.ratio),
             Row.format(row.stash, row.unit), row.target.label(row.unit)]
        }
    }

    static let targetHeaders = ["status", "scenario", "ratio", "Stash", "target"]

    static func targetsText(_ rows: [Row]) -> String {
        let lines = targets(rows)
        let met = lines.filter { $0[0] == "met" }.count
        let widths = targetHeaders.indices.map { column in ([targetHeaders] + lines).map { $0[column].count }.max() ?? 0 }
        let body = ([targetHeaders] + lines).map { cells in
            cells.enumerated().map { column, cell in
                cell + String(repeating: " ", count: widths[column] - cell.count)
            }.joined(separator: "  ")
        }
        return (["targets: \(met) met, \(lines.count - met) missed, of \(lines.count)"] + body).joined(separator: "\n")
    }

    static func targetsMarkdown(_ rows: [Row]) -> String {
        let lines = [targetHeaders, targetHeaders.map { _ in "---" }] + targets(rows)
        return lines.map { "| " + $0.joined(separator: " | ") + " |" }.joined(separator: "\n") + "\n"
    }

    /// The issue's schema, exactly: an array of `{scenario, stash_ns, baseline_ns, ratio}`.
    /// Rows measured in bytes (disk and index memory per entry) say so in their scenario name,
    /// since their `_ns` fields then hold bytes.
    static func json(_ rows: [Row]) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        func number(_ value: Double) -> String {
            value.isFinite ? String(format: "%.0f", value) : "null"
        }
        let records = try rows.map { row in
            let scenario = row.scenario + (row.unit == .bytes ? " [bytes]" : "")
            let name = String(decoding: try encoder.encode(scenario), as: UTF8.self)
            let ratio = row.ratio.isFinite ? String(format: "%.3f", row.ratio) : "null"
            return "  {\"scenario\": \(name), \"stash_ns\": \(number(row.stash)), "
                + "\"baseline_ns\": \(number(row.baseline)), \"ratio\": \(ratio)}"
        }
        return Data(("[\n" + records.joined(separator: ",\n") + "\n]\n").utf8)
    }

    /// Date, machine and settings: what a reader needs to judge the numbers.
    static func header(quick: Bool, keyCount: Int) -> String {
        let date = ISO8601DateFormatter().string(from: Date())
        let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
        let payload = (try? JSONEncoder().encode(Payload.make(1)).count) ?? 0
        return """
            Stash benchmarks — \(date)
            machine: \(ProcessInfo.processInfo.activeProcessorCount) cores, \(cpu), \(ProcessInfo.processInfo.operatingSystemVersionString)
            mode: \(quick ? "quick (fewer keys and rounds; numbers are a smoke test)" : "full"), \(keyCount) keys, \
            Codable payload \(payload) bytes of JSON, Data values \(Fixtures.dataSize / 1024) KB
            """
    }
}
