import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Contract items 6 and 7 for the journal parser: torn or damaged bytes never crash the replay,
/// and whatever precedes the damage is kept.
@Suite("Journal parser fuzzing")
struct JournalFuzzTests {
    private static func sampleRecords(_ random: inout SeededGenerator, count: Int) -> [JournalRecord] {
        (0..<count).map { index in
            let key = index % 7 == 0 ? "ключ/\(index)\n\0" : "k\(random.next() % 50)"
            switch random.next() % 4 {
            case 0: return .remove(key: key)
            case 1: return .access(key: key, time: Double(random.next() % 1_000_000))
            case 2 where index % 11 == 0: return .clear
            default:
                return .set(key: key, V1Record(generation: random.next() % 1000, size: Int(random.next() % 100_000),
                                                 expiry: Double(random.next() % 10_000), lastAccess: Double(index)))
            }
        }
    }

    private static func encode(_ records: [JournalRecord]) -> [UInt8] {
        var bytes = JournalFormat.magic
        for record in records { JournalFormat.append(record, to: &bytes) }
        return bytes
    }

    @Test("a valid journal replays to exactly its records")
    func roundTrip() {
        var random = SeededGenerator(seed: 1)
        let records = Self.sampleRecords(&random, count: 500)
        let replay = JournalFormat.parse(Self.encode(records))
        #expect(replay.records == records)
        #expect(replay.damage == nil)
    }

    // Contract 7: a key is kept only if its bytes are valid UTF-8 exactly as written (decoding would
    // otherwise repair them into another key, which could name another entry).
    @Test("a record whose key is not valid UTF-8 is reported as damage, with the records before it kept", arguments: [
        [0xFF], [0xC3, 0x28], [0x61, 0xE2, 0x82], [0xED, 0xA0, 0x80], [0xEF, 0xBF, 0xBD, 0x80],
    ] as [[UInt8]])
    func invalidUTF8Key(keyBytes: [UInt8]) {
        var bytes = Self.encode([.remove(key: "kept")])
        let validLength = bytes.count
        let body: [UInt8] = [2] + keyBytes // a remove record
        withUnsafeBytes(of: UInt32(body.count).littleEndian) { bytes += $0 }
        bytes += body
        withUnsafeBytes(of: CRC32.checksum(body).littleEndian) { bytes += $0 }
        let replay = JournalFormat.parse(bytes)
        #expect(replay.records == [.remove(key: "kept")])
        #expect(replay.validLength == validLength)
        #expect(replay.damage != nil)
    }

    // Contract 6: a torn last record (a cut at any byte) keeps every whole record before it.
    @Test("a journal cut at any byte keeps every whole record before the cut")
    func everyTruncationKeepsPrefix() {
        var random = SeededGenerator(seed: 2)
        let records = Self.sampleRecords(&random, count: 40)
        let bytes = Self.encode(records)
        var recordEnds: [Int] = []
        var partial = JournalFormat.magic
        for record in records {
            JournalFormat.append(record, to: &partial)
            recordEnds.append(partial.count)
        }
        for cut in JournalFormat.magic.count...bytes.count {
            let replay = JournalFormat.parse(Array(bytes[0..<cut]))
            let whole = recordEnds.filter { $0 <= cut }.count
            #expect(replay.records == Array(records.prefix(whole)), "cut at \(cut)")
            #expect(replay.validLength == (whole == 0 ? JournalFormat.magic.count : recordEnds[whole - 1]))
            #expect((replay.damage == nil) == (cut == replay.validLength))
        }
    }

    // Contract 7: random damage never crashes the parser, and the records it keeps are a prefix
    // of the real ones (a damaged record and everything after it are dropped, never misread).
    @Test("randomly damaged journals never crash and never yield records that were not written")
    func randomDamage() {
        var random = SeededGenerator(seed: 3)
        var inputs = 0
        var damaged = 0
        for round in 0..<400 {
            let records = Self.sampleRecords(&random, count: Int(random.next() % 30) + 1)
            let original = Self.encode(records)
            for _ in 0..<10 {
                var bytes = original
                let edits = Int(random.next() % 4) + 1
                for _ in 0..<edits {
                    switch random.next() % 4 {
                    case 0: // flip a byte
                        let index = Int(random.next() % UInt64(bytes.count))
                        bytes[index] ^= UInt8(random.next() % 255 + 1)
                    case 1: // cut
                        bytes.removeLast(Int(random.next() % UInt64(bytes.count)))
                    case 2: // append garbage
                        bytes += (0..<(random.next() % 64)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                    default: // huge length field at a random place
                        let index = Int(random.next() % UInt64(bytes.count))
                        for offset in 0..<4 where index + offset < bytes.count { bytes[index + offset] = 0xFF }
                    }
                }
                let replay = JournalFormat.parse(bytes)
                inputs += 1
                if replay.damage != nil { damaged += 1 }
                #expect(replay.validLength <= bytes.count)
                // CRC-32 lets a forged record through with odds of 2^-32; none of these inputs is one.
                #expect(replay.records.count <= records.count || bytes.count > original.count, "round \(round)")
                if bytes.starts(with: original.prefix(replay.validLength)) {
                    #expect(replay.records == Array(records.prefix(replay.records.count)), "round \(round)")
                }
            }
        }
        #expect(inputs == 4000)
        #expect(damaged > 3000)
        print("journal fuzz: \(inputs) damaged inputs parsed, \(damaged) reported as damaged, 0 crashes")
    }

    // Contract 7: opening a store on a damaged segment never crashes and leaves a working store.
    @Test("opening stores on damaged segments always gives a working store, every surviving value intact")
    func openDamagedStores() throws {
        var random = SeededGenerator(seed: 4)
        let directory = TemporaryDirectory()
        for round in 0..<100 {
            let config = DiskConfig(name: "s\(round)", directory: directory.url)
            do {
                let disk = try DiskStorage(config: config, transformer: TransformerFactory.forData())
                for index in 0..<10 { try disk.setObject(Data(repeating: UInt8(index), count: index * 3), forKey: "k\(index)") }
            }
            let segment = config.storeURL.appendingPathComponent(try #require(try StoreFiles(config.storeURL.path).segments.last))
            var bytes = try [UInt8](Data(contentsOf: segment))
            let index = Int(random.next() % UInt64(bytes.count))
            bytes[index] ^= UInt8(random.next() % 255 + 1)
            try Data(bytes).write(to: segment)

            let disk = try DiskStorage(config: config, transformer: TransformerFactory.forData())
            #expect(disk.allKeys.count >= 9, "round \(round): one flipped byte lost more than one record")
            for key in disk.allKeys {
                let value = try disk.object(forKey: key) // every key that survived reads intact
                #expect(value == Data(repeating: UInt8(value.count / 3), count: value.count))
            }
            try disk.setObject(Data("after".utf8), forKey: "after")
            #expect(try disk.object(forKey: "after") == Data("after".utf8))
        }
    }
}
