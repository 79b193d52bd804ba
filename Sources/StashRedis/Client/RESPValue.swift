public import Foundation

/// A reply from Redis, in RESP2 or RESP3.
///
/// RESP3 adds maps, sets, doubles, booleans and push messages (the invalidations of `CLIENT TRACKING`);
/// a RESP2 reply uses only the first five cases.
public indirect enum RESPValue: Sendable, Equatable {
    /// `+OK`: a short status text.
    case simpleString(String)
    /// `-ERR …`: an error reply; the text starts with the error's code (`ERR`, `WRONGPASS`, `NOAUTH`).
    case error(String)
    /// `:42`: a signed 64-bit integer on every platform, as RESP defines it (a 32-bit `Int`, on Apple
    /// Watch, could not hold a time in milliseconds or a client id).
    case integer(Int64)
    /// `$5\r\nhello`: the bytes of a string, exactly as stored.
    case bulkString(Data)
    /// `*2 …` (RESP2 and RESP3), `~` (RESP3 set).
    case array([RESPValue])
    /// `$-1`, `*-1` (RESP2) and `_` (RESP3): no value.
    case null
    /// `,3.14` (RESP3).
    case double(Double)
    /// `#t` (RESP3).
    case boolean(Bool)
    /// `%2 …` (RESP3), as its key/value pairs in order.
    case map([(RESPValue, RESPValue)])
    /// `>3 …` (RESP3): an out-of-band message, such as `invalidate`.
    case push([RESPValue])

    public static func == (lhs: RESPValue, rhs: RESPValue) -> Bool {
        switch (lhs, rhs) {
        case let (.simpleString(a), .simpleString(b)), let (.error(a), .error(b)): return a == b
        case let (.integer(a), .integer(b)): return a == b
        case let (.bulkString(a), .bulkString(b)): return a == b
        case let (.array(a), .array(b)), let (.push(a), .push(b)): return a == b
        case (.null, .null): return true
        case let (.double(a), .double(b)): return a == b
        case let (.boolean(a), .boolean(b)): return a == b
        case let (.map(a), .map(b)): return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    /// The text of a simple or bulk string.
    public var string: String? {
        switch self {
        case .simpleString(let text): return text
        case .bulkString(let data): return String(decoding: data, as: UTF8.self)
        default: return nil
        }
    }

    /// The bytes of a bulk string.
    public var data: Data? {
        if case .bulkString(let data) = self { return data }
        return nil
    }

    /// The value of an integer reply.
    public var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The elements of an array, set or push message.
    public var array: [RESPValue]? {
        switch self {
        case .array(let values), .push(let values): return values
        default: return nil
        }
    }
}

/// One argument of a command: Redis receives every argument as a bulk string.
public protocol RESPArgument: Sendable {
    /// The argument's bytes.
    var respBytes: Data { get }
    /// Appends the argument as a RESP bulk string (`$<length>\r\n<bytes>\r\n`) to `out`.
    func appendRESP(to out: inout [UInt8])
}

extension RESPArgument {
    public func appendRESP(to out: inout [UInt8]) {
        let bytes = respBytes
        RESPEncoder.header(UInt8(ascii: "$"), bytes.count, into: &out)
        out.append(contentsOf: bytes)
        out.append(13)
        out.append(10)
    }
}

extension String: RESPArgument {
    public var respBytes: Data { Data(utf8) }

    /// Without a `Data` in between: keys and command names are encoded on every call.
    public func appendRESP(to out: inout [UInt8]) {
        RESPEncoder.header(UInt8(ascii: "$"), utf8.count, into: &out)
        out.append(contentsOf: utf8)
        out.append(13)
        out.append(10)
    }
}

extension Data: RESPArgument {
    public var respBytes: Data { self }
}

extension Int: RESPArgument {
    public var respBytes: Data { Data(String(self).utf8) }
}

extension Int64: RESPArgument {
    public var respBytes: Data { Data(String(self).utf8) }
}

/// Encodes commands in RESP: an array of bulk strings per command.
enum RESPEncoder {
    static func encode(_ commands: [[any RESPArgument]]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(256)
        for command in commands {
            header(UInt8(ascii: "*"), command.count, into: &out)
            for argument in command { argument.appendRESP(to: &out) }
        }
        return out
    }

    /// `*3\r\n`, `$5\r\n`: the digits written directly, without a String in between.
    static func header(_ type: UInt8, _ count: Int, into out: inout [UInt8]) {
        out.append(type)
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var length = 0
        var value = count
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[length] = UInt8(ascii: "0") + UInt8(value % 10)
                value /= 10
                length += 1
            } while value > 0
            for index in stride(from: length - 1, through: 0, by: -1) { out.append(buffer[index]) }
        }
        out.append(13)
        out.append(10)
    }
}
