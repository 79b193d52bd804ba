import CStashMallocCounter
import Foundation
import Stash

// Prints the allocations per encoded and per decoded value of Stash's JSON coder (the default
// `TransformerFactory.forCodable`), counted on this thread by the malloc wrappers of
// `CStashMallocCounter`: `encode N` and `decode N`, or `unavailable` where they do not count.

/// The benchmark's Codable value (`Benchmarks/`, `Payload`): strings, an integer, a double, a Boolean
/// and an array of strings.
struct Payload: Codable, Sendable {
    var id: Int
    var name: String
    var email: String
    var roles: [String]
    var score: Double
    var verified: Bool
    var bio: String
}

guard stash_malloc_counting() != 0 else {
    print("unavailable")
    exit(0)
}

let values = (0..<200).map { id in
    Payload(id: id, name: "User \(id)", email: "user\(id)@example.com", roles: ["reader", "editor"],
            score: Double(id % 1000) / 7, verified: id % 2 == 0,
            bio: "Revision 0. Likes caches that keep their promises, and fast disks.")
}
let transformer = TransformerFactory.forCodable(ofType: Payload.self)
var encoded: [Data] = []
encoded.reserveCapacity(values.count)
// Warm up: the thread's writer, lazily made metadata and the runtime's caches.
for value in values.prefix(20) { _ = try transformer.toData(value) }

let beforeEncoding = stash_malloc_count()
for value in values { encoded.append(try transformer.toData(value)) }
let encoding = stash_malloc_count() - beforeEncoding

for data in encoded.prefix(20) { _ = try transformer.fromData(data) }
var decoded: [Payload] = []
decoded.reserveCapacity(values.count)
let beforeDecoding = stash_malloc_count()
for data in encoded { decoded.append(try transformer.fromData(data)) }
let decoding = stash_malloc_count() - beforeDecoding

print("encode \(Double(encoding) / Double(values.count))")
print("decode \(Double(decoding) / Double(values.count))")
