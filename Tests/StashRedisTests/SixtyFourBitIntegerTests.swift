import Foundation
import Testing
import Stash
@testable import StashRedis

/// RESP integers and expiries in milliseconds are 64-bit on every platform: milliseconds since 1970
/// passed 2^31 in January 1970, so a 32-bit `Int` (Apple Watch) can hold none of them.
@Suite("64-bit RESP integers and millisecond expiries")
struct SixtyFourBitIntegerTests {
    private func parse(_ wire: String) throws -> RESPValue? {
        var parser = RESPParser()
        Array(wire.utf8).withUnsafeBytes { parser.append($0) }
        return try parser.next()
    }

    @Test("integer replies are read exactly up to the ends of Int64", arguments: [
        (":2147483648\r\n", Int64(2_147_483_648)), (":4102444800000\r\n", 4_102_444_800_000),
        (":9223372036854775807\r\n", .max), (":-9223372036854775808\r\n", .min), (":-1\r\n", -1), (":0\r\n", 0),
    ])
    func integersUpToInt64(wire: String, value: Int64) throws {
        #expect(try parse(wire) == .integer(value))
        #expect(try parse(wire)?.integer == value)
    }

    @Test("an integer outside Int64 is a protocol error, never a wrapped value", arguments: [
        ":9223372036854775808\r\n", ":-9223372036854775809\r\n", ":99999999999999999999\r\n", "$99999999999999999999\r\n",
        "*9223372036854775808\r\n",
    ])
    func integersOutsideInt64AreErrors(wire: String) {
        #expect(throws: RedisError.self) { try parse(wire) }
    }

    @Test("an Int64 argument is sent as its decimal digits")
    func int64Argument() {
        #expect(RESPEncoder.encode([["PEXPIREAT", "k", Int64(253_402_300_799_000)]])
            == Array("*3\r\n$9\r\nPEXPIREAT\r\n$1\r\nk\r\n$15\r\n253402300799000\r\n".utf8))
    }

    @Test("expiry dates far in the future round-trip through milliseconds", arguments: [
        2_147_483.648, 2_147_483_648.0, 4_102_444_800.123, 32_503_680_000.999, Date.distantFuture.timeIntervalSince1970 - 1,
    ])
    func millisecondsRoundTrip(seconds: TimeInterval) {
        let date = Date(timeIntervalSince1970: seconds)
        let milliseconds = RedisStorage<Data>.unixMilliseconds(date)
        // Rounded up (a value must not outlive its expiry); `Date` keeps seconds since 2001, so the
        // product may carry a rounding error of its own: within a millisecond of the exact value.
        #expect(abs(Double(milliseconds) - seconds * 1000) <= 1.01)
        let back = RedisStorage<Data>.date(unixMilliseconds: milliseconds)
        #expect(back >= date || date.timeIntervalSince(back) < 1e-6)
        #expect(back.timeIntervalSince(date) < 0.0011)
    }

    @Test("a Redis expiry in the year 3000 is stored with PXAT and read back",
          .enabled(if: RedisServer.isAvailable, RedisServer.skipReason))
    func farExpiryThroughRedis() throws {
        let server = try RedisServer()
        let store = try RedisStorage(configuration: server.configuration, namespace: "far",
                                     transformer: TransformerFactory.forData())
        let expiry = Date(timeIntervalSince1970: 32_503_680_000) // 3000-01-01, before `Date.distantFuture` (4001)
        try store.setObject(Data("x".utf8), forKey: "k", expiry: .date(expiry))
        let reply = try server.client().send(["PEXPIRETIME", "far:k"])
        #expect(reply == .integer(32_503_680_000_000), "\(reply)")
        #expect(try store.entry(forKey: "k").expiry == .date(expiry))
    }
}
