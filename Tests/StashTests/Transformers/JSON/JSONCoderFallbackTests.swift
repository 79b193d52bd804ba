import Foundation
import Testing
import StashTestSupport
@testable import Stash
@testable import StashEngine

/// What the streaming coder cannot stream goes to Foundation's coder: the JSON and the errors are
/// Foundation's, never bytes of our own that differ.
@Suite("JSON coder: fallback to Foundation and errors")
struct JSONCoderFallbackTests {
    private enum Keys: String, CodingKey { case a, b, inner, x }

    /// Writes to its parent container after opening a nested one, then to the nested one again.
    private struct Interleaved: Codable, Equatable {
        var a = 1, b = 2, x = 3
        func encode(to encoder: any Encoder) throws {
            var outer = encoder.container(keyedBy: Keys.self)
            var inner = outer.nestedContainer(keyedBy: Keys.self, forKey: .inner)
            try outer.encode(a, forKey: .a)
            try inner.encode(x, forKey: .x)
            try outer.encode(b, forKey: .b)
        }
        init() {}
        init(from decoder: any Decoder) throws {
            let outer = try decoder.container(keyedBy: Keys.self)
            a = try outer.decode(Int.self, forKey: .a)
            b = try outer.decode(Int.self, forKey: .b)
            x = try outer.nestedContainer(keyedBy: Keys.self, forKey: .inner).decode(Int.self, forKey: .x)
        }
    }

    /// Writes one key twice: Foundation keeps the last value.
    private struct TwiceToOneKey: Encodable {
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(1, forKey: .a)
            try container.encode(2, forKey: .b)
            try container.encode(3, forKey: .a)
        }
    }

    /// A class hierarchy that encodes its superclass through `superEncoder()`.
    private struct WithSuper: Codable, Equatable {
        var a = 5
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(a, forKey: .a)
            var parent = container.superEncoder().singleValueContainer()
            try parent.encode("base")
        }
        init() {}
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            a = try container.decode(Int.self, forKey: .a)
            _ = try container.superDecoder().singleValueContainer().decode(String.self)
        }
    }

    private struct Empty: Codable, Equatable {}

    @Test("a container written to after its parent moved on is encoded by Foundation")
    func interleaved() throws {
        let coder = JSONCoder()
        #expect(coder.encodeStreaming(Interleaved()) == nil)
        let data = try coder.encode(Interleaved())
        #expect(try JSONDecoder().decode(Interleaved.self, from: data) == Interleaved())
        #expect(try coder.decode(Interleaved.self, from: data) == Interleaved())
    }

    @Test("a key written twice keeps the last value, as Foundation's")
    func keyWrittenTwice() throws {
        let coder = JSONCoder()
        #expect(coder.encodeStreaming(TwiceToOneKey()) == nil)
        let object = try JSONSerialization.jsonObject(with: try coder.encode(TwiceToOneKey())) as? [String: Int]
        #expect(object == ["a": 3, "b": 2])
    }

    @Test("superEncoder and superDecoder are Foundation's")
    func superCoders() throws {
        let coder = JSONCoder()
        let data = try coder.encode(WithSuper())
        #expect(try coder.decode(WithSuper.self, from: data) == WithSuper())
        #expect(try JSONDecoder().decode(WithSuper.self, from: data) == WithSuper())
    }

    @Test("a value that encodes nothing is an empty object, as Foundation writes it")
    func emptyValues() throws {
        let coder = JSONCoder()
        #expect(try coder.encode(Empty()) == Data("{}".utf8))
        #expect(try coder.encode([Empty(), Empty()]) == Data("[{},{}]".utf8))
        #expect(try coder.decode([Empty].self, from: Data("[{},{\"extra\":[1,{\"a\":null}]}]".utf8)) == [Empty(), Empty()])
    }

    @Test("a type mismatch deep in a value throws Foundation's error, with its coding path")
    func typeMismatchPath() throws {
        let json = Data(#"{"name":"a","age":"not a number"}"#.utf8)
        let ours = Self.caught(DecodingError.self) { _ = try JSONCoder().decode(User.self, from: json) }
        let theirs = Self.caught(DecodingError.self) { _ = try JSONDecoder().decode(User.self, from: json) }
        guard case .typeMismatch(_, let ourContext)? = ours, case .typeMismatch(_, let theirContext)? = theirs else {
            Issue.record("not a type mismatch: \(String(describing: ours))")
            return
        }
        #expect(ourContext.codingPath.map(\.stringValue) == ["age"])
        #expect(ourContext.codingPath.map(\.stringValue) == theirContext.codingPath.map(\.stringValue))
    }

    @Test("a missing key and damaged or unusual JSON give Foundation's result, value or error", arguments: [
        #"{"name":"a"}"#, #"{"name":"a","age":1"#, "", "nul", #"{"name":"a","age":1} x"#, #"{"name":"\ud800","age":1}"#,
        #"{"name":"a","age":01}"#, #"{"name":"a","age":1,}"#, "[", String(repeating: "[", count: 600),
        #"{"name":"a","age":1.0}"#, #"{"name":"a","age":1e2}"#, #"{"name":"a","age":-0}"#, #"{"name":"a","name":"b","age":1}"#,
        "\u{FEFF}{\"name\":\"a\",\"age\":1}", #"{"name":"a","age":99999999999999999999}"#, #" {"age":1,"name":"\u00e9"} "#,
    ])
    func damagedInput(_ json: String) throws {
        let data = Data(json.utf8)
        let ours = Result { try JSONCoder().decode(User.self, from: data) }
        let theirs = Result { try JSONDecoder().decode(User.self, from: data) }
        switch (ours, theirs) {
        case (.success(let ourValue), .success(let theirValue)): #expect(ourValue == theirValue)
        case (.failure(let ourError), .failure(let theirError)): #expect(String(describing: ourError) == String(describing: theirError))
        default: Issue.record("ours \(ours), Foundation's \(theirs)")
        }
    }

    @Test("fields added or removed between versions decode as with Foundation")
    func changedModel() throws {
        let coder = JSONCoder()
        let v1 = try coder.encode(User(name: "Ann", age: 41))
        #expect(throws: DecodingError.self) { try coder.decode(SuiteModels.UserV2.self, from: v1) }
        let v2 = try coder.encode(SuiteModels.UserV2(name: "Ann", email: "a@x"))
        #expect(try coder.decode(SuiteModels.Person1.self, from: Data(#"{"x":[1,{"y":"}"}],"fullName":"A"}"#.utf8)) == SuiteModels.Person1(fullName: "A"))
        #expect(throws: DecodingError.self) { try coder.decode(User.self, from: v2) }
    }

    @Test("a non-finite float with no strategy for it throws Foundation's EncodingError")
    func nonFiniteThrows() throws {
        let error = Self.caught(EncodingError.self) { _ = try JSONCoder().encode([1.0, .nan]) }
        guard case .invalidValue(_, let context)? = error else { return }
        #expect(context.codingPath.map(\.intValue) == [1])
    }

    @Test("keys come in declaration order, so one value is always the same bytes")
    func declarationOrder() throws {
        let data = try JSONCoder().encode(User(name: "Ann", age: 41))
        #expect(String(decoding: data, as: UTF8.self) == #"{"name":"Ann","age":41}"#)
    }

    @Test("a decoder keeps no reference to the input after it returns")
    func decoderKeptByValue() throws {
        struct Keeper: Decodable {
            nonisolated(unsafe) static var kept: (any Decoder)?
            init(from decoder: any Decoder) throws { Keeper.kept = decoder }
        }
        _ = try JSONCoder().decode(Keeper.self, from: Data("{\"a\":1}".utf8))
        // The kept decoder reads nothing now (its text is empty), and never out of bounds.
        #expect(throws: (any Error).self) { try Keeper.kept?.container(keyedBy: Keys.self).decode(Int.self, forKey: .a) }
        Keeper.kept = nil
    }

    /// The error of type `E` that `body` throws; records an issue (and returns nil) for none or another
    /// (what `#expect(throws:)` returns from Swift Testing 6.1 on, written for Swift 6.0).
    static func caught<E: Error>(_ type: E.Type, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) -> E? {
        do {
            try body()
            Issue.record("expected \(E.self), nothing was thrown", sourceLocation: sourceLocation)
        } catch let error as E {
            return error
        } catch {
            Issue.record("expected \(E.self), got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }
}
