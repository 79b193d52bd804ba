import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Contract items 6 and 7 for the version-2 parsers: a segment or an index snapshot of any bytes
/// (torn, flipped, cut, padded, random) never traps the parser, and a record it returns is always
/// one that was written, byte for byte. Seeded, so a failure names its seed and round.
@Suite("Segment and snapshot parser fuzzing")
struct SegmentFuzzTests {
    /// A segment of random records: its bytes and the exact bytes of each record in it.
    private struct Sample {
        var bytes: [UInt8]
        var salt: UInt64
        var records: [SegmentRecord] = []
        var recordBytes: Set<[UInt8]> = []
    }

    private static func sample(_ random: inout SeededGenerator, count: Int) -> Sample {
        let salt = random.next() | 1
        var sample = Sample(bytes: SegmentFormat.header(.init(id: 7, salt: salt, flags: 0, store: 1, floor: 0)), salt: salt)
        for index in 0..<count {
            let key = index % 5 == 0 ? "ключ/\(index)\n\0caf\u{E9}" : "k\(random.below(40))"
            let start = sample.bytes.count
            switch random.below(6) {
            case 0:
                SegmentFormat.appendRemove(key: key, salt: salt, to: &sample.bytes)
            case 1:
                SegmentFormat.appendAccess(segment: UInt32(random.below(9)), offset: UInt32(random.below(1 << 20)),
                                           time: Double(random.below(1_000_000)), keyHash: random.next(), salt: salt, to: &sample.bytes)
            case 2 where index % 13 == 0:
                SegmentFormat.appendClear(salt: salt, to: &sample.bytes)
            case 3:
                let value = StoredValue.file(id: random.next(), size: random.below(1 << 30), hash: random.next())
                SegmentFormat.appendSet(key: key, expiry: Double(random.below(10_000)), time: Double(index), value: value,
                                        inlineBytes: nil, salt: salt, to: &sample.bytes)
            default:
                let value = (0..<random.below(300)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                let expiry = random.below(2) == 0 ? Date.distantFuture.timeIntervalSince1970 : Double(random.below(10_000))
                value.withUnsafeBytes { raw in
                    _ = SegmentFormat.appendSet(key: key, expiry: expiry, time: Double(index), value: .inline(size: value.count),
                                                inlineBytes: raw, salt: salt, to: &sample.bytes)
                }
            }
            let record = Array(sample.bytes[start...])
            sample.recordBytes.insert(record)
            record.withUnsafeBytes { raw in
                if let (parsed, _) = SegmentFormat.record(in: raw, at: 0, salt: salt) { sample.records.append(parsed) }
            }
        }
        return sample
    }

    /// Scans `bytes` and checks every record it yields against what was written; returns them.
    private static func scanChecked(_ bytes: [UInt8], _ sample: Sample, round: Int) -> (records: [SegmentRecord], scan: SegmentFormat.Scan) {
        var found: [SegmentRecord] = []
        let scan = bytes.withUnsafeBytes { raw in
            SegmentFormat.scan(raw, salt: sample.salt, from: SegmentFormat.headerLength) { record, offset, length in
                let exact = Array(raw[offset..<(offset + length)])
                #expect(sample.recordBytes.contains(exact), "round \(round): a record at \(offset) that was never written")
                found.append(record)
            }
        }
        #expect(scan.validEnd <= bytes.count)
        for range in scan.damaged { #expect(range.lowerBound >= SegmentFormat.headerLength && range.upperBound <= bytes.count) }
        return (found, scan)
    }

    @Test("a valid segment scans to exactly its records, with no damage")
    func roundTrip() {
        var random = SeededGenerator(seed: 31)
        let sample = Self.sample(&random, count: 500)
        #expect(sample.records.count == 500)
        let (records, scan) = Self.scanChecked(sample.bytes, sample, round: 0)
        #expect(records == sample.records)
        #expect(scan.damaged.isEmpty)
        #expect(scan.validEnd == sample.bytes.count)
        let header = sample.bytes.withUnsafeBytes { SegmentFormat.parseHeader($0) }
        #expect(header?.salt == sample.salt)
    }

    @Test("a segment cut at any byte keeps every whole record before the cut")
    func everyTruncationKeepsPrefix() {
        var random = SeededGenerator(seed: 32)
        let sample = Self.sample(&random, count: 30)
        for cut in SegmentFormat.headerLength...sample.bytes.count {
            let (records, scan) = Self.scanChecked(Array(sample.bytes[0..<cut]), sample, round: cut)
            #expect(records == Array(sample.records.prefix(records.count)), "cut at \(cut)")
            #expect(scan.damaged.count <= 1, "cut at \(cut)")
        }
    }

    // Contract 7: a damaged record loses itself, not the records after it (resync).
    @Test("one flipped byte in a record loses at most that record; the scan resyncs after it")
    func flippedByteLosesOneRecord() {
        var random = SeededGenerator(seed: 33)
        for round in 0..<300 {
            let sample = Self.sample(&random, count: 20)
            var bytes = sample.bytes
            let index = SegmentFormat.headerLength + random.below(bytes.count - SegmentFormat.headerLength)
            bytes[index] ^= UInt8(random.below(255) + 1)
            let (records, scan) = Self.scanChecked(bytes, sample, round: round)
            #expect(records.count >= sample.records.count - 1, "round \(round): a flip lost \(sample.records.count - records.count) records")
            #expect(scan.damaged.count == 1, "round \(round)")
        }
    }

    @Test("randomly damaged segments never trap and never yield a record that was not written")
    func randomDamage() {
        var random = SeededGenerator(seed: 34)
        var inputs = 0
        for round in 0..<300 {
            let sample = Self.sample(&random, count: random.below(25) + 1)
            for _ in 0..<8 {
                var bytes = sample.bytes
                for _ in 0..<(random.below(4) + 1) {
                    let index = random.below(bytes.count)
                    switch random.below(6) {
                    case 0: bytes[index] ^= UInt8(random.below(255) + 1)
                    case 1: bytes.removeLast(random.below(bytes.count - SegmentFormat.headerLength + 1))
                    case 2: bytes += (0..<random.below(64)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                    case 3: for offset in 0..<4 where index + offset < bytes.count { bytes[index + offset] = 0xFF } // huge length
                    case 4: bytes.replaceSubrange(index..<min(bytes.count, index + random.below(100)), with: repeatElement(0, count: 100)) // zeroed
                    default: // a record duplicated elsewhere (a copy is a record that was written)
                        let from = SegmentFormat.headerLength + random.below(max(1, bytes.count - SegmentFormat.headerLength))
                        bytes.insert(contentsOf: bytes[from..<min(bytes.count, from + 40)], at: index)
                    }
                    if bytes.count < SegmentFormat.headerLength { bytes = sample.bytes }
                }
                _ = Self.scanChecked(bytes, sample, round: round)
                bytes.withUnsafeBytes { raw in
                    _ = SegmentFormat.parseHeader(raw)
                    for offset in stride(from: -1, through: raw.count + 1, by: 7) { _ = SegmentFormat.record(in: raw, at: offset, salt: sample.salt) }
                }
                inputs += 1
            }
        }
        #expect(inputs == 2400)
    }

    // A record copied from another segment (another salt) never verifies here.
    @Test("a record written with another segment's salt is never accepted")
    func foreignSaltIsRejected() {
        var random = SeededGenerator(seed: 35)
        let sample = Self.sample(&random, count: 50)
        let (records, scan) = sample.bytes.withUnsafeBytes { raw in
            var found = 0
            let scan = SegmentFormat.scan(raw, salt: sample.salt ^ 0x5555, from: SegmentFormat.headerLength) { _, _, _ in found += 1 }
            return (found, scan)
        }
        #expect(records == 0)
        #expect(scan.validEnd == SegmentFormat.headerLength)
    }

    @Test("either header copy alone is enough; both damaged is no header")
    func headerCopies() {
        let header = SegmentFormat.header(.init(id: 9, salt: 77, flags: SegmentFormat.compactionFlag, store: 1, floor: 0))
        for index in 0..<header.count {
            var bytes = header
            bytes[index] ^= 0x40
            let parsed = bytes.withUnsafeBytes { SegmentFormat.parseHeader($0) }
            #expect(parsed?.id == 9 && parsed?.salt == 77 && parsed?.flags == SegmentFormat.compactionFlag, "byte \(index)")
            bytes[(index + 40) % 80] ^= 0x40
            #expect(bytes.withUnsafeBytes { SegmentFormat.parseHeader($0) } == nil, "bytes \(index) and \((index + 40) % 80)")
        }
        #expect(Array(header.prefix(40)).withUnsafeBytes { SegmentFormat.parseHeader($0) }?.id == 9)
        #expect(Array(header.prefix(39)).withUnsafeBytes { SegmentFormat.parseHeader($0) } == nil)
    }
}
