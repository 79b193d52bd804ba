import Foundation
import Testing
import StashTestSupport

/// The JSON coder's allocations per value, counted (not timed, so the count does not depend on the
/// machine's load) in a child process whose malloc wrappers count each thread's allocations:
/// `StashAllocationCount`, on the benchmark's Codable value.
@Suite("JSON coder: allocations per value")
struct JSONCoderAllocationTests {
#if os(Linux)
    // An optimized build allocates, per value (valgrind's dhat agrees): to encode, the returned `Data`
    // (its storage object and its bytes) and the box Swift's `KeyedEncodingContainer` puts the keyed
    // container in, 3 (Foundation's encoder: 23); to decode, what it returns (the two strings longer
    // than the 15 bytes a `String` holds inline, the `roles` array), the reader, its keyed container
    // and that container's box, and the text of a `Double` of 17 digits for `strtod`, 7 (Foundation's
    // decoder: 25). The tests run a debug build, where unoptimized generic code adds about three
    // allocations per encode and thirty per decode of its own: the budgets allow those, not the
    // coder's writer, buffer, container stack, key cache (five more per encode) or float text coming
    // back.
#if DEBUG
    static let encodeBudget = 6.5
    static let decodeBudget = 45.0
#else
    static let encodeBudget = 3.0
    static let decodeBudget = 7.0
#endif

    @Test("encoding the Codable value allocates the Data and the keyed container's box, no more")
    func encodeAllocations() throws {
        let counts = try measure()
        #expect(counts["encode"] ?? .infinity <= Self.encodeBudget, "allocations per encode: \(counts)")
    }

    @Test("decoding the Codable value allocates no more than its budget")
    func decodeAllocations() throws {
        let counts = try measure()
        #expect(counts["decode"] ?? .infinity <= Self.decodeBudget, "allocations per decode: \(counts)")
    }

    private func measure() throws -> [String: Double] {
        let executable = try #require(builtExecutable(named: "StashAllocationCount"), "StashAllocationCount was not built")
        let run = try ChildProcess.run(executable, [])
        #expect(run.status == 0, "StashAllocationCount failed: \(run.stderr)")
        let lines = run.output.split(separator: "\n")
        try #require(!lines.contains("unavailable"), "the malloc wrappers do not count in this process (not glibc?)")
        var counts: [String: Double] = [:]
        for line in lines {
            let fields = line.split(separator: " ")
            if fields.count == 2, let value = Double(fields[1]) { counts[String(fields[0])] = value }
        }
        return counts
    }
#else
    @Test("allocations per value", .disabled("counting allocations wraps glibc's malloc: Linux only"))
    func allocations() {}
#endif
}
