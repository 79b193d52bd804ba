import Foundation
import Testing
import StashTestSupport
@testable import Stash
@testable import StashEngine

/// Our JSON against Foundation's, value by value: Foundation reads what we write, we read what
/// Foundation writes, to the same value, under each strategy.
@Suite("JSON coder: the same JSON as Foundation's")
struct JSONCoderDifferentialTests {
    /// One setting of both coders.
    struct Setting: CustomTestStringConvertible, Sendable {
        var name: String
        var make: @Sendable () -> (JSONEncoder, JSONDecoder)
        /// Whether the streaming coder does every value itself (no fallback).
        var streams = true
        /// Whether it encodes every value itself (snake case decoding leaves absent keys to Foundation).
        var encodeStreams = true
        var wholeSeconds = false
        var nonFinite = false
        var testDescription: String { name }
    }

    static let settings: [Setting] = [
        Setting(name: "defaults") { (JSONEncoder(), JSONDecoder()) },
        Setting(name: "secondsSince1970, deferredToData") {
            let (encoder, decoder) = (JSONEncoder(), JSONDecoder())
            encoder.dateEncodingStrategy = .secondsSince1970; decoder.dateDecodingStrategy = .secondsSince1970
            encoder.dataEncodingStrategy = .deferredToData; decoder.dataDecodingStrategy = .deferredToData
            return (encoder, decoder)
        },
        Setting(name: "millisecondsSince1970, withoutEscapingSlashes") {
            let (encoder, decoder) = (JSONEncoder(), JSONDecoder())
            encoder.dateEncodingStrategy = .millisecondsSince1970; decoder.dateDecodingStrategy = .millisecondsSince1970
            encoder.outputFormatting = .withoutEscapingSlashes
            return (encoder, decoder)
        },
        Setting(name: "iso8601", make: {
            let (encoder, decoder) = (JSONEncoder(), JSONDecoder())
            encoder.dateEncodingStrategy = .iso8601; decoder.dateDecodingStrategy = .iso8601
            return (encoder, decoder)
        }, wholeSeconds: true),
        Setting(name: "snake case keys", make: {
            let (encoder, decoder) = (JSONEncoder(), JSONDecoder())
            encoder.keyEncodingStrategy = .convertToSnakeCase; decoder.keyDecodingStrategy = .convertFromSnakeCase
            return (encoder, decoder)
        }, streams: false, encodeStreams: true),
        Setting(name: "non-finite floats as strings", make: {
            let (encoder, decoder) = (JSONEncoder(), JSONDecoder())
            encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "+Inf", negativeInfinity: "-Inf", nan: "NaN")
            decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "+Inf", negativeInfinity: "-Inf", nan: "NaN")
            return (encoder, decoder)
        }, nonFinite: true),
        Setting(name: "custom and formatted strategies (Foundation's coder)", make: {
            let (encoder, decoder) = (JSONEncoder(), JSONDecoder())
            let formatter = DateFormatter()
            formatter.dateFormat = "yyyy-MM-dd HH:mm:ss.SSS"
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.locale = Locale(identifier: "en_US_POSIX")
            encoder.dateEncodingStrategy = .formatted(formatter); decoder.dateDecodingStrategy = .formatted(formatter)
            encoder.dataEncodingStrategy = .custom { data, encoder in
                var container = encoder.singleValueContainer()
                try container.encode(data.count)
            }
            decoder.dataDecodingStrategy = .custom { decoder in Data(count: try decoder.singleValueContainer().decode(Int.self)) }
            return (encoder, decoder)
        }, streams: false, encodeStreams: false),
    ]

    /// The value as Foundation reads `data`, written back canonically (sorted keys, so NaN and dates
    /// compare as their JSON does).
    private func canonical<T: Codable>(_ value: T, _ setting: Setting) throws -> Data {
        let (encoder, _) = setting.make()
        encoder.outputFormatting.insert(.sortedKeys)
        return try encoder.encode(value)
    }

    /// Checks one value both ways under one setting.
    private func check<T: Codable & Equatable>(_ value: T, _ setting: Setting, _ label: String) throws {
        let (encoder, decoder) = setting.make()
        let coder = JSONCoder(encoder: encoder, decoder: decoder)
        let foundationBytes = try encoder.encode(value)
        let ours = try coder.encode(value)
        // What Foundation's own round trip gives is the value to reach (dates lose bits through
        // 1970-based strategies, Foundation's as well as ours).
        let expected = try canonical(try decoder.decode(T.self, from: foundationBytes), setting)
        let foundationReadsOurs = try decoder.decode(T.self, from: ours)
        #expect(try canonical(foundationReadsOurs, setting) == expected, "Foundation reads ours: \(label) \(String(decoding: ours, as: UTF8.self))")
        let oursReadsFoundation = try coder.decode(T.self, from: foundationBytes)
        #expect(try canonical(oursReadsFoundation, setting) == expected, "ours reads Foundation's: \(label)")
        if setting.encodeStreams {
            #expect(try coder.encode(value) == ours, "encoding is deterministic: \(label)")
            #expect(coder.encodeStreaming(value) != nil, "streamed: \(label)")
        }
        if setting.streams {
            #expect(coder.decodeStreaming(T.self, from: ours) != nil, "streamed our bytes: \(label)")
            #expect(coder.decodeStreaming(T.self, from: foundationBytes) != nil, "streamed Foundation's bytes: \(label)")
        }
    }

    @Test("generated trees: each way, to an equal value", arguments: settings)
    func generatedTrees(_ setting: Setting) throws {
        for seed in UInt64(1)...40 {
            var values = CoderValues(seed: seed)
            values.wholeSeconds = setting.wholeSeconds
            values.nonFinite = setting.nonFinite
            try check(values.tree(), setting, "seed \(seed)")
        }
    }

    @Test("the test suites' models and single values", arguments: settings)
    func suiteModelsAndScalars(_ setting: Setting) throws {
        try check(User(name: "Ann", age: 41), setting, "User")
        try check(SuiteModels.Profile(name: "Ann", visits: 3), setting, "Profile")
        try check(SuiteModels.Tag(label: "x"), setting, "Tag")
        try check([SuiteModels.Todo(title: "Milk", done: false)], setting, "[Todo]")
        try check(SuiteModels.TitleOnly(title: "a/b"), setting, "TitleOnly")
        try check(SuiteModels.Session(user: "u", cart: ["a", "b"]), setting, "Session")
        try check(SuiteModels.Person1(fullName: "A B"), setting, "Person1")
        try check(SuiteModels.Person2(firstName: "A", lastName: "B"), setting, "Person2")
        try check(SuiteModels.UserV2(name: "n", email: "e@x"), setting, "UserV2")
        for text in CoderValues.specialStrings { try check(text, setting, "string \(text.debugDescription)") }
        for number in CoderValues.specialDoubles { try check(number, setting, "double \(number)") }
        try check([Int.min, Int.max, 0], setting, "Int extremes")
        try check([UInt64.max], setting, "UInt64.max")
        try check([Int8.min, Int8.max], setting, "Int8")
        try check([Float.greatestFiniteMagnitude, Float.leastNonzeroMagnitude, 0.1], setting, "Float")
        try check(Optional<Int>.none, setting, "top-level nil")
        try check([String: [Int]](), setting, "empty dictionary")
        try check([[String]](), setting, "empty array")
    }
}
