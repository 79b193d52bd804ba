import Foundation
import Stash

/// Issue #31: the benchmark's Codable value (`Payload`, ~200 bytes of JSON) encoded and decoded by
/// Stash's JSON coder (the default `TransformerFactory.forCodable`) and by Foundation's
/// (`forFoundationCodable`), through the same `Transformer` API, interleaved. Decoding reads the
/// bytes each coder wrote (a store reads what it wrote).
enum CoderScenarios {
    static let encodeLabel = "encode, codable value"
    static let decodeLabel = "decode, codable value"
    /// The app rows' SQLite side with Stash's JSON coder.
    static let sqliteStashCoder = "SQLite with Stash's JSON coder"

    static func run(bench: Bench) throws {
        guard bench.settings.wants(encodeLabel) || bench.settings.wants(decodeLabel) else { return }
        let ours = TransformerFactory.forCodable(ofType: Payload.self)
        let foundation = TransformerFactory.forFoundationCodable(ofType: Payload.self)
        let values = (0..<1_000).map { Payload.make($0) }
        let rounds = bench.settings.quick ? 20 : 60
        print("== Codable coder: Stash's JSON coder vs Foundation's, \(values.count) values a round, \(rounds) rounds")
        if bench.settings.wants(encodeLabel) {
            let samples = try Measure.interleaved(rounds: rounds, [ours, foundation].map { coder in
                { _ in try Measure.nsPerOp(values.count) { for value in values { consume(try coder.toData(value).count) } } }
            })
            bench.add(Row("\(encodeLabel) vs Foundation JSONEncoder", stash: samples[0], baseline: samples[1],
                          vs: "Foundation JSONEncoder", target: .ratio(0.2)))
        }
        if bench.settings.wants(decodeLabel) {
            let encoded = [ours, foundation].map { coder in values.map { try! coder.toData($0) } }
            let samples = try Measure.interleaved(rounds: rounds, [ours, foundation].enumerated().map { side, coder in
                { _ in try Measure.nsPerOp(values.count) { for data in encoded[side] { consume(try coder.fromData(data).id) } } }
            })
            bench.add(Row("\(decodeLabel) vs Foundation JSONDecoder", stash: samples[0], baseline: samples[1],
                          vs: "Foundation JSONDecoder", target: .ratio(0.25)))
        }
    }
}
