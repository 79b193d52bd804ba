// libFuzzer entry point, compiled into one module with the library's sources by `Tests/Fuzz/run`,
// so it reaches the internal parsers. Not part of the package build.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: start, count: count))
    fuzzJournal(bytes)
    fuzzSegment(bytes)
    fuzzSnapshot(bytes)
    // The image header parser.
    let data = Data(bytes)
    _ = ImageData.detectFormat(of: data)
    if let image = try? ImageData(data: data), let size = image.pixelSize {
        precondition(size.width > 0 && size.height > 0)
    }
    return 0
}

/// The version-1 journal replay: any bytes, with and without a valid header in front.
private func fuzzJournal(_ bytes: [UInt8]) {
    let replay = JournalFormat.parse(bytes)
    precondition(replay.validLength <= bytes.count)
    _ = JournalFormat.parse(JournalFormat.magic + bytes)
}

/// The segment parser: the header, and a scan of the bytes as they are and behind a valid header
/// (the input's first 8 bytes, if any, are the salt, so records the fuzzer builds can verify).
private func fuzzSegment(_ bytes: [UInt8]) {
    bytes.withUnsafeBytes { raw in
        if let header = SegmentFormat.parseHeader(raw) { _ = header.id }
        _ = SegmentFormat.record(in: raw, at: 0, salt: 0)
    }
    let salt = bytes.count >= 8 ? bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) } : 1
    let segment = SegmentFormat.header(.init(id: 1, salt: salt, flags: 0, store: 1, floor: 0)) + bytes.dropFirst(min(8, bytes.count))
    segment.withUnsafeBytes { raw in
        guard let header = SegmentFormat.parseHeader(raw) else { preconditionFailure("a valid header did not parse") }
        var end = SegmentFormat.headerLength
        let scan = SegmentFormat.scan(raw, salt: header.salt, from: SegmentFormat.headerLength) { record, offset, length in
            precondition(offset >= end && length >= SegmentFormat.recordHeaderLength && offset + length <= raw.count)
            end = offset + length
            if case .set(_, let info) = record {
                precondition(info.valueOffset <= length)
                if case .inline(let size) = info.value { precondition(info.valueOffset + size == length) }
            }
        }
        precondition(scan.validEnd <= raw.count && scan.validEnd == end)
        for range in scan.damaged { precondition(range.lowerBound >= SegmentFormat.headerLength && range.upperBound <= raw.count) }
    }
}

/// The index snapshot parser: any bytes, and the bytes behind the magic with a valid checksum.
private func fuzzSnapshot(_ bytes: [UInt8]) {
    _ = IndexSnapshot.decode(bytes, begin: { _, _ in }, entry: { _, _ in })
    var sealed = IndexSnapshot.magic + bytes
    sealed += withUnsafeBytes(of: XXH64.hash(sealed).littleEndian) { Array($0) }
    var announced = -1
    var seen = 0
    let intact = IndexSnapshot.decode(sealed, begin: { _, count in announced = count }, entry: { key, record in
        precondition(!record.expiry.isNaN && !record.lastAccess.isNaN && key.utf8.count <= sealed.count)
        seen += 1
    })
    precondition(!intact || seen == announced)
}
