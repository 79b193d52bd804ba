// libFuzzer entry point, compiled into one module with the library's sources by `Tests/Fuzz/run`,
// so it reaches the internal parsers. Not part of the package build.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: start, count: count))
    fuzzJournal(bytes)
    fuzzSegment(bytes)
    fuzzDirectory(bytes, magic: DirectoryFormat.magic)
    fuzzDirectory(bytes, magic: DirectoryFormat.wholeHashMagic)
    fuzzDirectory(bytes, magic: DirectoryFormat.inlineUsesMagic)
    fuzzUses(bytes)
    fuzzJSON(bytes)
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

/// The key directory: any bytes, and bytes behind a header and body hash that verify, through
/// every lookup and listing the engine makes.
private func fuzzDirectory(_ bytes: [UInt8], magic: [UInt8]) {
    _ = bytes.withUnsafeBytes { DirectoryFormat.parse($0) }
    var sealed = magic + bytes
    // Its hashes made right wherever the header describes a layout of this length.
    sealed.withUnsafeMutableBytes { bytes in
        guard let layout = DirectoryFormat.layout(UnsafeRawBufferPointer(bytes), fileLength: bytes.count, checkingHash: false) else { return }
        DirectoryFormat.sealHashes(bytes, layout: layout.regions)
    }
    guard let mapped = sealed.withUnsafeBytes({ LoadedDirectory(copying: $0) }) else { return }
    var directory = KeyDirectory(seed: 7, base: mapped)
    for key in directory.keys.prefix(64) {
        _ = directory.peek(key)
        _ = directory.touch(key, time: 1)
    }
    _ = directory.peek("absent")
    _ = directory.liveBytesBySegment()
    directory.forEachValue { precondition(!$0.expiry.isNaN && !$0.lastAccess.isNaN) }
    directory.forEachOldestFirst { _, _ in true }
    if let uses = mapped.usesArray { precondition(uses.count == mapped.slotCount * DirectoryFormat.usesLength) }
}

/// The key uses file's header: any bytes, and the same with the magic and both hashes made right.
private func fuzzUses(_ bytes: [UInt8]) {
    _ = bytes.withUnsafeBytes { UsesFormat.parseHeader($0, fileLength: bytes.count) }
    var sealed = UsesFormat.magic + bytes
    guard sealed.count >= UsesFormat.headerLength else { return }
    let header = sealed[0..<120].withUnsafeBytes { XXH64.hash($0) }
    withUnsafeBytes(of: header.littleEndian) { sealed.replaceSubrange(120..<128, with: $0) }
    if let parsed = sealed.withUnsafeBytes({ UsesFormat.parseHeader($0, fileLength: sealed.count) }) {
        let body = parsed.slotCount * DirectoryFormat.usesLength
        precondition(sealed.count == UsesFormat.headerLength + body + DirectoryFormat.pageCount(body) * 8 && parsed.nextRecency < 1 << 62)
        precondition(parsed.tableStart == UsesFormat.headerLength + body)
    }
}

/// A record that reaches every path of the JSON decoder: keyed, unkeyed and single values, optionals,
/// nested dictionaries, the special types and a hand-written `init(from:)` that asks for keys out of
/// order and inspects the containers.
private struct FuzzRecord: Codable {
    var a: Int
    var b: String?
    var c: [Double]
    var d: [String: FuzzRecord]?
    var e: [Int: Bool]?
    var f: Date?
    var g: Data?
    var h: UUID?
    var i: URL?
    var j: Decimal?
    var k: [[Int8?]]?
    var l: Float?
    var m: UInt64?
}

private struct FuzzOutOfOrder: Decodable {
    enum Keys: String, CodingKey { case a, b, c, d }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        _ = container.allKeys
        _ = try container.decodeIfPresent(String.self, forKey: .d)
        _ = try? container.decode(Int.self, forKey: .b)
        if var list = try? container.nestedUnkeyedContainer(forKey: .c) {
            _ = list.count
            while !list.isAtEnd { _ = try list.decode(FuzzRecord?.self) }
        }
        _ = try container.decodeNil(forKey: .a)
    }
}

/// The JSON decoder's streaming path (no fallback to Foundation): any bytes, as several types.
private func fuzzJSON(_ bytes: [UInt8]) {
    let data = Data(bytes)
    let coder = JSONCoder()
    _ = bytes.withUnsafeBufferPointer { JSONScanner.validate($0) }
    _ = coder.decodeStreaming(FuzzRecord.self, from: data)
    _ = coder.decodeStreaming([FuzzRecord].self, from: data)
    _ = coder.decodeStreaming(FuzzOutOfOrder.self, from: data)
    _ = coder.decodeStreaming([String: [String]].self, from: data)
    _ = coder.decodeStreaming(Double.self, from: data)
    // What decodes encodes again, and reads back.
    if let record = coder.decodeStreaming(FuzzRecord.self, from: data), let again = coder.encodeStreaming(record) {
        precondition(coder.decodeStreaming(FuzzRecord.self, from: again) != nil, "our own output did not decode")
    }
}
