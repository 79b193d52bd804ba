package import Foundation

// The values of a prefix query read together: the keys come from the index's ordered keys
// (``KeyOrder``), and the records, read one `pread` each by ``DiskStore/read(_:now:)``, are read here
// a stretch of a segment at a time.

extension DiskStore {
    /// Keys whose use the index marks in one hold of its lock, so that a reader from another thread
    /// (``DiskEngine/record(forKey:)``) never waits long behind a large listing.
    private static let touchesPerHold = 1_024
    /// The most bytes one `pread` takes in; and the largest gap between two records read by one.
    private static let stretchLength = 1 << 20
    private static let stretchGap = 16 << 10

    /// The bytes stored for each of `keys`, verified and counted as use exactly as ``read(_:now:)``
    /// reads one, handed to `body` with its expiry in the order of `keys`; a key that is gone, or whose value is found
    /// damaged (dropped, as every read drops it), is left out.
    ///
    /// Packed records are read in stretches of their segment, in file order, one `pread` for up to
    /// 1 MiB of neighbouring records instead of one per record; each record is verified as ``SegmentLog/load(_:_:in:)``
    /// verifies it (its checksum, its key, its value's kind). Any record that a stretch does not settle
    /// (a value in a file of its own, a record that does not verify) is read again by ``read(_:now:)``,
    /// which decides what its failure means.
    /// - Throws: What ``read(_:now:)`` throws other than ``StorageError/notFound`` and ``StorageError/corrupted(_:)``.
    package func readValues(of keys: [String], now: Date, _ body: (_ key: String, _ data: Data, _ expiry: Double) -> Void) throws {
        assertOnQueue()
        try sharing.checkOperation()
        let time = StoredTime.seconds(now)
        var records: [DiskRecord?] = []
        var recencies: [UInt64] = [] // of each use, for its access record
        records.reserveCapacity(keys.count)
        recencies.reserveCapacity(keys.count)
        var start = 0
        while start < keys.count {
            let end = min(start + Self.touchesPerHold, keys.count)
            withIndex { index in
                for key in keys[start..<end] {
                    let used = index.markUsed(key, time: time)
                    records.append(used?.record)
                    recencies.append(used?.recency ?? 0)
                }
            }
            start = end
        }
        var values = [Data?](repeating: nil, count: keys.count)
        readStretches(keys, records, into: &values)
        for position in keys.indices {
            guard let record = records[position] else { continue } // not stored (any more)
            if let data = values[position] {
                readNoted(record, time: time, recency: recencies[position])
                body(keys[position], data, record.expiry)
                continue
            }
            do {
                let (data, record, _) = try read(keys[position], now: now)
                body(keys[position], data, record.expiry)
            } catch StorageError.corrupted, StorageError.notFound {
                continue
            }
        }
    }

    /// Reads the packed records among `records` a stretch of a segment at a time and puts each one
    /// that verifies as `keys`' value into `values`; leaves the others nil.
    private func readStretches(_ keys: [String], _ records: [DiskRecord?], into values: inout [Data?]) {
        var order: [Int] = []
        order.reserveCapacity(records.count)
        for (position, record) in records.enumerated() {
            if let record, case .inline = record.value { order.append(position) }
        }
        order.sort { records[$0]!.segment != records[$1]!.segment ? records[$0]!.segment < records[$1]!.segment
                                                                   : records[$0]!.offset < records[$1]!.offset }
        var first = 0
        while first < order.count {
            let head = records[order[first]]!
            let from = Int(head.offset)
            var last = first
            var to = from + Int(head.length)
            // Take in the records that follow closely in the same segment, while the stretch fits.
            while last + 1 < order.count {
                let next = records[order[last + 1]]!
                let nextEnd = Int(next.offset) + Int(next.length)
                guard next.segment == head.segment, Int(next.offset) <= to + Self.stretchGap,
                      nextEnd - from <= Self.stretchLength else { break }
                to = max(to, nextEnd)
                last += 1
            }
            defer { first = last + 1 }
            guard let segment = log.segments[head.segment], to - from <= Self.stretchLength else { continue } // one by one
            // Not zeroed: only the bytes `pread` filled are looked at.
            let stretch = UnsafeMutableRawBufferPointer.allocate(byteCount: to - from, alignment: 8)
            defer { stretch.deallocate() }
            guard let read = try? FileIO.read(segment.fd, at: from, into: stretch, path: segment.path) else { continue }
            for position in order[first...last] {
                let record = records[position]!
                let offset = Int(record.offset) - from
                let length = Int(record.length)
                guard offset >= 0, offset + length <= read else { continue }
                let bytes = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(stretch)[offset..<(offset + length)])
                guard let (key, info) = SegmentFormat.setRecord(bytes, salt: segment.salt),
                      info.value == record.value,
                      SegmentLog.isSameKey(UnsafeRawBufferPointer(rebasing: bytes[key]), keys[position]) else { continue }
                values[position] = Data(UnsafeRawBufferPointer(rebasing: bytes[info.valueOffset...]))
            }
        }
    }
}
