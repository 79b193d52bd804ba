import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// JSON objects that repeat a key: whatever order a type asks for its keys in, our decoder reads the
/// member Foundation's reads (the first), or leaves the value to Foundation.
@Suite("JSON coder: objects with a repeated key")
struct JSONCoderRepeatedKeyTests {
    private enum Keys: String, CodingKey { case a, b, c }

    /// Asks for `b` before `a`: the reverse of the order the inputs write them in.
    private struct ReadsBThenA: Decodable, Equatable {
        var a: Int, b: Int
        init(a: Int, b: Int) { self.a = a; self.b = b }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            b = try container.decode(Int.self, forKey: .b)
            a = try container.decode(Int.self, forKey: .a)
        }
    }

    /// Synthesized: asks for `a`, `b`, `c` in declaration order.
    private struct InOrder: Decodable, Equatable {
        var a: Int, b: Int, c: Int?
    }

    /// Asks for `a` twice, with `b` between.
    private struct ReadsATwice: Decodable, Equatable {
        var first: Int, b: Int, second: Int
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            first = try container.decode(Int.self, forKey: .a)
            b = try container.decode(Int.self, forKey: .b)
            second = try container.decode(Int.self, forKey: .a)
        }
    }

    /// Our result and Foundation's for `json`: the same value, or both an error.
    private func expectSame<T: Decodable & Equatable>(_ type: T.Type, _ json: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let data = Data(json.utf8)
        let foundation = try? JSONDecoder().decode(type, from: data)
        let ours = try? JSONCoder().decode(type, from: data)
        #expect(ours == foundation, "\(json)", sourceLocation: sourceLocation)
    }

    @Test("a repeated key read out of declaration order gives Foundation's value")
    func outOfOrder() {
        expectSame(ReadsBThenA.self, #"{"a":1,"b":2,"a":3}"#)
        expectSame(ReadsBThenA.self, #"{"b":2,"a":1,"a":3}"#)
        expectSame(ReadsBThenA.self, #"{"a":1,"a":3,"b":2}"#)
        expectSame(ReadsBThenA.self, #"{"b":2,"b":5,"a":1}"#)
        expectSame(ReadsBThenA.self, #"{"a":1,"b":2,"\u0061":3}"#)
    }

    @Test("a repeated key read in declaration order gives Foundation's value")
    func inOrder() {
        expectSame(InOrder.self, #"{"a":1,"a":3,"b":2}"#)
        expectSame(InOrder.self, #"{"a":1,"b":2,"c":3,"a":4,"c":5}"#)
        expectSame(InOrder.self, #"{"a":1,"b":2,"b":7}"#)
        expectSame(InOrder.self, #"{"a":1,"b":2,"c":null,"c":4}"#)
        expectSame(ReadsATwice.self, #"{"a":1,"b":2,"a":3}"#)
        expectSame([String: Int].self, #"{"x":1,"y":2,"x":3}"#)
    }

    @Test("objects without repeated keys still decode without Foundation, in any order")
    func distinctKeysStream() {
        let coder = JSONCoder()
        #expect(coder.decodeStreaming(ReadsBThenA.self, from: Data(#"{"a":1,"b":2}"#.utf8)) == ReadsBThenA(a: 1, b: 2))
        #expect(coder.decodeStreaming(InOrder.self, from: Data(#"{"c":3,"b":2,"a":1}"#.utf8)) == InOrder(a: 1, b: 2, c: 3))
        #expect(coder.decodeStreaming(InOrder.self, from: Data(#"{"a":1,"b":2}"#.utf8)) == InOrder(a: 1, b: 2, c: nil))
        #expect(coder.decodeStreaming(ReadsBThenA.self, from: Data(#"{"a":1,"b":2,"a":3}"#.utf8)) == nil)
    }
}
