import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Appends through a mapping of the active segment (`SegmentWriteWindow`, Linux): the file is grown
/// ahead of the records, so it ends in zeros while a writer has it open. The zeros are never damage and
/// never outlive a segment's sealing or a close; what a crash leaves (the zeros, or a record torn inside
/// them by a kill during its copy) opens as the end of the records, or as a torn write, losing nothing else.
@Suite("Appends through a mapped segment", .serialized)
struct MappedAppendTests: KeyDirectoryScenario {
    /// Whether this platform appends through a mapping (elsewhere every append is a `pwrite`).
    static var mapsAppends: Bool {
        #if os(Linux)
        true
        #else
        false
        #endif
    }

    @Test("an open writer's active segment has room reserved past its records; a close cuts it off")
    func roomReservedWhileOpen() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let segment = Self.segmentPath(path, 1)
        let store = try DiskStore(directory: path, readOnly: false)
        for index in 0..<10 { try Self.set(store, "key \(index)", Self.payload(index)) }
        let records = try Damage.recordsEnd(segment)
        #expect(records == store.log.active?.length)
        if Self.mapsAppends {
            #expect(try Damage.size(segment) > records, "no room reserved: appends are not mapped")
            #expect(try Damage.size(segment) <= records + (16 << 10) + 4096, "more room than the least growth")
        } else {
            #expect(try Damage.size(segment) == records)
        }
        store.close()
        #expect(try Damage.size(segment) == records)
        let reopened = try DiskStore(directory: path, readOnly: false)
        defer { reopened.close() }
        #expect(reopened.recoveryIssues.isEmpty)
        for index in 0..<10 { #expect(Self.value(reopened, "key \(index)") == Self.payload(index)) }
    }

    @Test("sealed segments end where their records do, while the store is open")
    func sealedSegmentsHaveNoRoom() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, compactionMinimum: Int.max / 4, segmentLimit: 4096) {
            let store = try DiskStore(directory: path, readOnly: false)
            defer { store.close() }
            for index in 0..<100 { try Self.set(store, "key \(index)", Self.payload(index)) }
            let ids = store.log.segments.keys.sorted()
            try #require(ids.count > 5)
            for id in ids.dropLast() {
                let path = Self.segmentPath(path, id)
                #expect(try Damage.size(path) == Damage.recordsEnd(path), "segment \(id) was sealed with its room")
            }
            for index in 0..<100 { #expect(Self.value(store, "key \(index)") == Self.payload(index)) }
        }
    }

    @Test("a crash leaves the room: the next open takes the zeros for the end of the records, reports nothing, loses nothing and cuts them off")
    func crashLeavesTheRoom() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let segment = Self.segmentPath(path, 1)
        var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
        for index in 0..<50 { try Self.set(store!, "key \(index)", Self.payload(index)) }
        let records = try Damage.recordsEnd(segment)
        store = nil // a crash: no close
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)")
        #expect(try Damage.size(segment) == records, "the room was not cut off")
        for index in 0..<50 { #expect(Self.value(reopened, "key \(index)") == Self.payload(index)) }
        try Self.set(reopened, "after", Self.payload(99))
        reopened.close()
        let again = try DiskStore(directory: path, readOnly: false)
        defer { again.close() }
        #expect(again.recoveryIssues.isEmpty)
        #expect(Self.value(again, "after") == Self.payload(99))
        #expect(again.withIndex { $0.count } == 51)
    }

    @Test("a record torn inside the room (a kill during its copy) is a torn write: cut off, reported, every record before it kept")
    func recordTornInsideTheRoom() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let segment = Self.segmentPath(path, 1)
        var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
        for index in 0..<20 { try Self.set(store!, "key \(index)", Self.payload(index)) }
        let records = try Damage.recordsEnd(segment)
        let lastRecord = try #require(store!.record(forKey: "key 19"))
        store = nil // a crash: no close
        // The first half of a copy of the last record, written where the next append would go, and
        // zeros after it: what a kill partway through copying a record into the mapping leaves.
        var bytes = try Damage.bytes(segment)
        let copy = Array(bytes[Int(lastRecord.offset)..<(Int(lastRecord.offset) + Int(lastRecord.length) / 2)])
        if bytes.count < records + copy.count + 64 { bytes += [UInt8](repeating: 0, count: records + copy.count + 64 - bytes.count) }
        bytes.replaceSubrange(records..<(records + copy.count), with: copy)
        try Damage.write(bytes, to: segment)
        let reopened = try DiskStore(directory: path, readOnly: false)
        defer { reopened.close() }
        #expect(reopened.recoveryIssues.count == 1, "\(reopened.recoveryIssues)")
        #expect(reopened.recoveryIssues.first.map { "\($0)".contains("torn") } == true, "\(reopened.recoveryIssues)")
        #expect(try Damage.size(segment) == records)
        for index in 0..<20 { #expect(Self.value(reopened, "key \(index)") == Self.payload(index)) }
        try Self.set(reopened, "after", Self.payload(99))
        #expect(Self.value(reopened, "after") == Self.payload(99))
    }

    @Test("zeros inside a sealed segment's records are damage, not room: reported, the records after them kept")
    func zerosBeforeRecordsAreDamage() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let segment = Self.segmentPath(path, 1)
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            for index in 0..<20 { try Self.set(store, "key \(index)", Self.payload(index)) }
            store.close()
        }
        let record = try {
            let store = try DiskStore(directory: path, readOnly: true)
            defer { store.close() }
            return try #require(store.record(forKey: "key 5"))
        }()
        var bytes = try Damage.bytes(segment)
        for offset in Int(record.offset)..<(Int(record.offset) + Int(record.length)) { bytes[offset] = 0 }
        try Damage.write(bytes, to: segment)
        let reopened = try DiskStore(directory: path, readOnly: false)
        defer { reopened.close() }
        #expect(reopened.recoveryIssues.count == 1, "\(reopened.recoveryIssues)")
        for index in 0..<20 where index != 5 { #expect(Self.value(reopened, "key \(index)") == Self.payload(index), "key \(index)") }
        #expect(Self.value(reopened, "key 5") == nil)
    }
}
