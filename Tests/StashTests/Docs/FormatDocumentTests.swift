import Foundation
import Testing
import Stash

/// Docs/Format.md is precise enough for a second implementation: a store written through the public
/// API is decoded by the small reader below, written from that page's rules alone (no engine type),
/// and what it finds in the segments and in the key directory is exactly what was stored.
@Suite("Format document")
struct FormatDocumentTests {
    private static let now = Date(timeIntervalSinceReferenceDate: 800_000_000.5)

    /// What the test stored for each key: the value's bytes and its expiry (a time; nil: never).
    private struct Stored: Equatable {
        var value: [UInt8]
        var expiry: Double?
    }

    @Test("a store written through the API decodes by Format.md's rules: keys, values, tombstones, expiries, key directory")
    func storeDecodesByTheDocument() throws {
        let folder = TemporaryDirectory()
        let config = folder.diskConfig()
        var model: [String: Stored] = [:]
        do {
            let storage = try DiskStorage(config: config, transformer: TransformerFactory.forData(), now: { Self.now })
            // 1,000 entries or more (after the removals below): the store writes its key directory when it closes.
            for index in 0..<20_500 {
                let key = "k\(index)"
                let value = [UInt8]("value \(index)".utf8)
                let expiry: Double? = index % 7 == 0 ? Self.now.timeIntervalSinceReferenceDate + 1_000.1 + Double(index) : nil
                try storage.setObject(Data(value), forKey: key, expiry: expiry.map { .date(Date(timeIntervalSinceReferenceDate: $0)) } ?? .never)
                model[key] = Stored(value: value, expiry: expiry)
            }
            for index in stride(from: 0, to: 20_500, by: 97) {
                try storage.removeObject(forKey: "k\(index)") // tombstones
                model["k\(index)"] = nil
            }
            for index in stride(from: 1, to: 500, by: 3) {
                let value = [UInt8]("overwritten \(index)".utf8)
                try storage.setObject(Data(value), forKey: "k\(index)", expiry: .never)
                model["k\(index)"] = Stored(value: value, expiry: nil)
            }
            // A key in decomposed form (its hash is taken of the composed form), and one empty key.
            let decomposed = "cafe\u{301} \u{1100}\u{1161}"
            try storage.setObject(Data([1, 2, 3]), forKey: decomposed, expiry: .seconds(0.1))
            model[decomposed] = Stored(value: [1, 2, 3], expiry: Self.now.timeIntervalSinceReferenceDate + 0.1)
            try storage.setObject(Data([9]), forKey: "", expiry: .never)
            model[""] = Stored(value: [9], expiry: nil)
            // 256 KiB: a value file of its own.
            let large = (0..<(256 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            try storage.setObject(Data(large), forKey: "large", expiry: .never)
            model["large"] = Stored(value: large, expiry: nil)
        }
        // Opened once more and let go: returns once the first instance has closed (and written the directory).
        _ = try DiskStorage(config: config, transformer: TransformerFactory.forData())
        // A process that reads more than an eighth of the keys, and only reads: it writes a key uses file.
        do {
            let reader = try DiskStorage(config: config, transformer: TransformerFactory.forData(), now: { Self.now })
            for index in 1..<4_000 where model["k\(index)"] != nil { _ = try reader.object(forKey: "k\(index)") }
        }
        _ = try DiskStorage(config: config, transformer: TransformerFactory.forData())
        #expect(FileManager.default.fileExists(atPath: folder.storePath() + "/key-uses"))

        let path = folder.storePath()
        let store = try FormatReader.marker(path)
        let replayed = try FormatReader.replaySegments(path, store: store)
        #expect(replayed.damagedBytes == 0)
        #expect(replayed.tombstones >= 20_500 / 97)
        var found: [String: Stored] = [:]
        for (key, entry) in replayed.entries {
            let value = try entry.fileID.map { try FormatReader.valueFile(path, id: $0, size: entry.size, hash: entry.hash) } ?? entry.inline
            found[key] = Stored(value: value, expiry: entry.expiry)
        }
        #expect(found.count == model.count)
        #expect(found == model)

        let directory = try #require(try FormatReader.keyDirectory(path, store: store))
        #expect(directory.entries.count == model.count)
        for (key, stored) in model {
            let entry = try #require(directory.entries[key], "\(key.debugDescription) is not in the key directory")
            #expect(entry.expiry == stored.expiry, "\(key.debugDescription)")
            #expect(entry.size == stored.value.count)
            #expect(entry.isFile == (key == "large"))
            // The slot is where the key hash says: probing from its home slot finds it.
            #expect(directory.probe(key) == entry.slot, "\(key.debugDescription)")
            let record = try #require(replayed.entries[key])
            #expect(entry.segment == record.segment && entry.offset == record.offset && entry.length == record.length)
        }
    }

    @Test("the document's hash is XXH64 as published: the reader's implementation gives the specification's values")
    func referenceHash() {
        #expect(XXH64Reference.hash([], seed: 0) == 0xEF46_DB37_51D8_E999)
        #expect(XXH64Reference.hash(Array("a".utf8), seed: 0) == 0xD24E_C4F1_A98C_6E5B)
        #expect(XXH64Reference.hash(Array("abc".utf8), seed: 0) == 0x44BC_2CF5_AD77_0999)
    }
}

// MARK: - A reader written from Docs/Format.md

/// Reads a store's files by the rules of Docs/Format.md only.
private enum FormatReader {
    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    struct Bytes {
        let bytes: [UInt8]
        var count: Int { bytes.count }
        func u32(_ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(bytes[at + $1]) << (8 * $1) } }
        func u64(_ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * $1) } }
        func f64(_ at: Int) -> Double { Double(bitPattern: u64(at)) }
        subscript(range: Range<Int>) -> [UInt8] { Array(bytes[range]) }
        func hash(_ range: Range<Int>, seed: UInt64 = 0) -> UInt64 { XXH64Reference.hash(self[range], seed: seed) }
    }

    static func read(_ path: String) throws -> Bytes {
        Bytes(bytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    /// "Marker": the store's identity, after the check line verified.
    static func marker(_ folder: String) throws -> UInt64 {
        let text = String(decoding: try read(folder + "/stash-store").bytes, as: UTF8.self)
        let lines = text.split(separator: "\n")
        guard lines.first == "Stash store, format 4", lines.count == 3, lines[1].hasPrefix("id "), lines[2].hasPrefix("check "),
              let id = UInt64(lines[1].dropFirst(3), radix: 16), let check = UInt32(lines[2].dropFirst(6), radix: 16) else {
            throw Failure("marker: \(text.debugDescription)")
        }
        let checked = "\(lines[0])\n\(lines[1])\n"
        guard UInt32(truncatingIfNeeded: XXH64Reference.hash(Array(checked.utf8), seed: 0)) == check else { throw Failure("marker check") }
        return id
    }

    struct SetEntry {
        var segment: UInt32
        var offset: Int
        var length: Int
        var expiry: Double?
        var inline: [UInt8] = []
        var fileID: UInt64?
        var size: Int
        var hash: UInt64 = 0
    }

    struct Replay {
        var entries: [String: SetEntry] = [:]
        var tombstones = 0
        var damagedBytes = 0
    }

    static func varint(_ bytes: Bytes, at offset: Int) -> (value: Int, length: Int)? {
        var value = 0
        for index in 0..<4 where offset + index < bytes.count {
            value |= Int(bytes.bytes[offset + index] & 0x7f) << (7 * index)
            if bytes.bytes[offset + index] & 0x80 == 0 { return (value, index + 1) }
        }
        return nil
    }

    /// "Segments": every segment of the store, in order, records replayed (batches are applied as
    /// they come: the test writes none cut short).
    static func replaySegments(_ folder: String, store: UInt64) throws -> Replay {
        var replay = Replay()
        let names = try FileManager.default.contentsOfDirectory(atPath: folder)
            .filter { $0.count == 16 && $0.hasSuffix(".segment") }.sorted()
        guard !names.isEmpty else { throw Failure("no segment") }
        var headers: [(number: UInt32, salt: UInt64, floor: UInt32, bytes: Bytes)] = []
        for name in names {
            let bytes = try read(folder + "/" + name)
            let copy = [0, 40].first { start in
                bytes.count >= start + 40 && bytes[start..<(start + 8)] == Array("STASHSG3".utf8)
                    && UInt32(truncatingIfNeeded: bytes.hash(start..<(start + 36))) == bytes.u32(start + 36)
            }
            guard let start = copy else { throw Failure("\(name): no valid header") }
            guard bytes.u64(start + 24) == store, bytes.u32(start + 8) == UInt32(name.prefix(8), radix: 16) else {
                throw Failure("\(name): another store's or another number's")
            }
            headers.append((bytes.u32(start + 8), bytes.u64(start + 16), bytes.u32(start + 12), bytes))
        }
        let floor = headers.map(\.floor).max() ?? 0
        for (number, salt, _, bytes) in headers where number >= floor {
            var offset = 80
            while offset < bytes.count {
                guard offset + 9 <= bytes.count, case let length = Int(bytes.u32(offset + 4)), length >= 1, offset + 8 + length <= bytes.count,
                      UInt32(truncatingIfNeeded: bytes.hash((offset + 4)..<(offset + 8 + length), seed: salt)) == bytes.u32(offset) else {
                    replay.damagedBytes += 1
                    offset += 1
                    continue
                }
                try apply(bytes, segment: number, at: offset, bodyLength: length, to: &replay)
                offset += 8 + length
            }
        }
        return replay
    }

    private static func apply(_ bytes: Bytes, segment: UInt32, at offset: Int, bodyLength: Int, to replay: inout Replay) throws {
        let body = offset + 8
        let end = body + bodyLength
        let kindByte = bytes.bytes[body]
        guard kindByte & 0xc0 == 0 else { throw Failure("kind byte \(kindByte)") }
        let hasExpiry = kindByte & 0x10 != 0
        switch kindByte & 0x0f {
        case 1, 2:
            guard kindByte & 0x20 != 0 else { throw Failure("a set record without bit 5") }
            var position = body + 1 + 8 // the time
            var expiry: Double?
            if hasExpiry {
                expiry = bytes.f64(position)
                position += 8
            }
            guard let (keyLength, varintLength) = varint(bytes, at: position) else { throw Failure("varint") }
            position += varintLength
            let key = String(decoding: bytes[position..<(position + keyLength)], as: UTF8.self)
            position += keyLength
            var entry = SetEntry(segment: segment, offset: offset, length: 8 + bodyLength, expiry: expiry, size: 0)
            if kindByte & 0x0f == 1 {
                entry.inline = bytes[position..<end]
                entry.size = entry.inline.count
            } else {
                guard end - position == 24 else { throw Failure("a value file's fields") }
                (entry.fileID, entry.size, entry.hash) = (bytes.u64(position), Int(bytes.u64(position + 8)), bytes.u64(position + 16))
            }
            replay.entries[key] = entry
        case 3:
            replay.entries[String(decoding: bytes[(body + 1)..<end], as: UTF8.self)] = nil
            replay.tombstones += 1
        case 4:
            replay.entries = [:]
        case 5:
            guard bodyLength == 25, kindByte == 0x25 else { throw Failure("access record") }
        case 6:
            guard bodyLength == 9 else { throw Failure("batch record") }
        default:
            throw Failure("kind \(kindByte & 0x0f)")
        }
    }

    /// "Value files": the file's bytes, checked against the record's size and hash.
    static func valueFile(_ folder: String, id: UInt64, size: Int, hash: UInt64) throws -> [UInt8] {
        let digits = String(id, radix: 16)
        let bytes = try read(folder + "/" + String(repeating: "0", count: 16 - digits.count) + digits + ".value")
        guard bytes.count == size, bytes.hash(0..<bytes.count) == hash else { throw Failure("value file \(id)") }
        return bytes.bytes
    }

    struct DirectoryEntry {
        var slot: Int
        var segment: UInt32
        var offset: Int
        var length: Int
        var isFile: Bool
        var size: Int
        var expiry: Double?
    }

    struct Directory {
        var store: UInt64
        var slotCount: Int
        var slotsStart: Int
        var hashes: [UInt64]
        var keys: [String?]
        var entries: [String: DirectoryEntry] = [:]

        /// "Key hash" and "Slots": the slot a lookup of `key` ends at.
        func probe(_ key: String) -> Int? {
            let composed = key.unicodeScalars.allSatisfy(\.isASCII) ? key : key.precomposedStringWithCanonicalMapping
            var hash = XXH64Reference.hash(Array(composed.utf8), seed: store)
            if hash == 0 { hash = 1 }
            var slot = Int(hash.multipliedFullWidth(by: UInt64(slotCount)).high)
            for _ in 0..<slotCount {
                if hashes[slot] == 0 { return nil }
                if hashes[slot] == hash, keys[slot] == key { return slot }
                slot = (slot + 1) % slotCount
            }
            return nil
        }
    }

    /// "Page table": page `index` of the bytes `start..<end`, 4,096 bytes from `start` on (the last
    /// one short).
    static func page(_ index: Int, from start: Int, to end: Int) -> Range<Int> {
        (start + 4096 * index)..<min(start + 4096 * (index + 1), end)
    }

    /// "Key directory": every entry, after the header's hash, the page table's hash and every page's
    /// hash verified.
    static func keyDirectory(_ folder: String, store: UInt64) throws -> Directory? {
        guard FileManager.default.fileExists(atPath: folder + "/key-directory") else { return nil }
        let bytes = try read(folder + "/key-directory")
        guard bytes.count >= 128, bytes[0..<8] == Array("STASHKD5".utf8), bytes.hash(0..<120) == bytes.u64(120),
              bytes.u64(8) == store, bytes.u64(112) == 0 else { throw Failure("key directory header") }
        let segmentCount = Int(bytes.u32(20))
        let (count, slotCount, arenaLength) = (Int(bytes.u64(40)), Int(bytes.u64(48)), Int(bytes.u64(56)))
        let slotsStart = 128 + 24 * segmentCount
        let arenaStart = slotsStart + 48 * slotCount
        let usesStart = arenaStart + arenaLength
        let usesEnd = usesStart + 16 * slotCount
        let bodyPages = (usesStart - 128 + 4095) / 4096
        let usesPages = (16 * slotCount + 4095) / 4096
        guard bytes.count == usesEnd + 8 * (bodyPages + usesPages), count < slotCount else { throw Failure("key directory lengths") }
        // "Page table": its hash at 80, then one hash per body page, then one per uses page.
        guard bytes.hash(usesEnd..<bytes.count) == bytes.u64(80) else { throw Failure("key directory page table hash") }
        let bodyRanges = (0..<bodyPages).map { page($0, from: 128, to: usesStart) }
        let usesRanges = (0..<usesPages).map { page($0, from: usesStart, to: usesEnd) }
        let pages = bodyRanges + usesRanges
        for (index, range) in pages.enumerated() where bytes.hash(range) != bytes.u64(usesEnd + 8 * index) {
            throw Failure("key directory page \(index) of \(pages.count)")
        }
        var directory = Directory(store: store, slotCount: slotCount, slotsStart: slotsStart,
                                  hashes: (0..<slotCount).map { bytes.u64(slotsStart + 48 * $0) }, keys: [])
        // "Key uses": where a process that only read wrote the uses apart, they are of this directory.
        var uses = (bytes: bytes, start: usesStart, next: bytes.u64(104))
        if FileManager.default.fileExists(atPath: folder + "/key-uses") {
            let file = try read(folder + "/key-uses")
            let fileUsesEnd = 128 + 16 * slotCount
            guard file.count == fileUsesEnd + 8 * usesPages, file[0..<8] == Array("STASHKU2".utf8), file.hash(0..<120) == file.u64(120),
                  file.hash(fileUsesEnd..<file.count) == file.u64(112), file.u64(8) == store, file.u64(48) == bytes.u64(120),
                  file.u64(56) == UInt64(slotCount), file.u64(64) >= bytes.u64(104) else { throw Failure("key uses header") }
            // Its page `j` covers the slots of the directory's uses page `j`, and is checked against its own table.
            for index in 0..<usesPages where file.hash(page(index, from: 128, to: fileUsesEnd)) != file.u64(fileUsesEnd + 8 * index) {
                throw Failure("key uses page \(index) of \(usesPages)")
            }
            uses = (file, 128, file.u64(64))
        }
        var totalSize = 0
        for slot in 0..<slotCount {
            let at = slotsStart + 48 * slot
            guard bytes.u64(at) != 0 else {
                directory.keys.append(nil)
                continue
            }
            // "Uses": every recency is below the next recency (the header's, or the uses file's).
            guard uses.bytes.u64(uses.start + 16 * slot + 8) < uses.next else { throw Failure("key directory recency") }
            let reference = bytes.u64(at + 8)
            let keyStart = arenaStart + Int(reference >> 24)
            let key = String(decoding: bytes[keyStart..<(keyStart + Int(reference & 0xff_ffff))], as: UTF8.self)
            directory.keys.append(key)
            let expiry = bytes.f64(at + 40)
            directory.entries[key] = DirectoryEntry(slot: slot, segment: bytes.u32(at + 16), offset: Int(bytes.u32(at + 20)),
                                                    length: Int(bytes.u32(at + 24)), isFile: bytes.u32(at + 28) & 1 != 0,
                                                    size: Int(bytes.u64(at + 32)), expiry: expiry == 63_113_904_000 ? nil : expiry)
            totalSize += Int(bytes.u64(at + 32))
        }
        guard directory.entries.count == count, Int(bytes.u64(64)) == totalSize else { throw Failure("key directory entry count or total") }
        return directory
    }
}

/// XXH64 as published (https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md), kept apart
/// from the engine's so that the format document, not the engine, is what the test checks against.
enum XXH64Reference {
    private static let p1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let p2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let p3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let p4: UInt64 = 0x85EB_CA77_C2B2_AE63
    private static let p5: UInt64 = 0x27D4_EB2F_1656_67C5

    private static func rotl(_ x: UInt64, _ r: UInt64) -> UInt64 { x << r | x >> (64 - r) }
    private static func round(_ acc: UInt64, _ lane: UInt64) -> UInt64 { rotl(acc &+ lane &* p2, 31) &* p1 }
    private static func lane64(_ b: [UInt8], _ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(b[at + $1]) << (8 * UInt64($1)) } }
    private static func lane32(_ b: [UInt8], _ at: Int) -> UInt64 { (0..<4).reduce(0) { $0 | UInt64(b[at + $1]) << (8 * UInt64($1)) } }

    static func hash(_ b: [UInt8], seed: UInt64) -> UInt64 {
        var at = 0
        var h: UInt64
        if b.count >= 32 {
            var v = [seed &+ p1 &+ p2, seed &+ p2, seed, seed &- p1]
            while at + 32 <= b.count {
                for i in 0..<4 { v[i] = round(v[i], lane64(b, at + 8 * i)) }
                at += 32
            }
            h = rotl(v[0], 1) &+ rotl(v[1], 7) &+ rotl(v[2], 12) &+ rotl(v[3], 18)
            for i in 0..<4 { h = (h ^ round(0, v[i])) &* p1 &+ p4 }
        } else {
            h = seed &+ p5
        }
        h = h &+ UInt64(b.count)
        while at + 8 <= b.count {
            h = rotl(h ^ round(0, lane64(b, at)), 27) &* p1 &+ p4
            at += 8
        }
        if at + 4 <= b.count {
            h = rotl(h ^ (lane32(b, at) &* p1), 23) &* p2 &+ p3
            at += 4
        }
        while at < b.count {
            h = rotl(h ^ (UInt64(b[at]) &* p5), 11) &* p1
            at += 1
        }
        h ^= h >> 33
        h = h &* p2
        h ^= h >> 29
        h = h &* p3
        h ^= h >> 32
        return h
    }
}
