import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Minimal image headers built byte by byte, just enough for format and size detection.
private enum Sample {
    static func ascii(_ text: String) -> [UInt8] { Array(text.utf8) }
    static func be16(_ v: Int) -> [UInt8] { [UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
    static func be32(_ v: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8(v >> $0 & 0xFF) } }
    static func le32(_ v: UInt32) -> [UInt8] { [0, 8, 16, 24].map { UInt8(v >> $0 & 0xFF) } }
    static func le24(_ v: Int) -> [UInt8] { [0, 8, 16].map { UInt8(v >> $0 & 0xFF) } }

    static func png(width: UInt32, height: UInt32) -> [UInt8] {
        [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + be32(13) + ascii("IHDR")
            + be32(width) + be32(height) + [8, 6, 0, 0, 0] + [0, 0, 0, 0]  // depth, colour type, …, CRC
    }

    /// SOI, an APP0 segment, a DQT segment, a frame header with the given SOF marker, then EOI.
    static func jpeg(width: Int, height: Int, sof: UInt8 = 0xC0) -> [UInt8] {
        let app0: [UInt8] = [0xFF, 0xE0] + be16(16) + ascii("JFIF\0") + [1, 1, 0, 0, 1, 0, 1, 0, 0]
        let dqt: [UInt8] = [0xFF, 0xDB] + be16(67) + [0] + [UInt8](repeating: 1, count: 64)
        let frame: [UInt8] = [0xFF, sof] + be16(11) + [8] + be16(height) + be16(width) + [1, 1, 0x11, 0]
        return [0xFF, 0xD8] + app0 + dqt + frame + [0xFF, 0xD9]
    }

    static func gif(width: Int, height: Int, version: String = "GIF89a") -> [UInt8] {
        ascii(version) + le16(width) + le16(height) + [0, 0, 0] + ascii(";")
    }

    static func riff(_ chunk: String, _ payload: [UInt8]) -> [UInt8] {
        ascii("RIFF") + le32(UInt32(12 + payload.count)) + ascii("WEBP") + ascii(chunk) + le32(UInt32(payload.count)) + payload
    }

    static func webpLossy(width: Int, height: Int) -> [UInt8] {
        riff("VP8 ", [0x30, 0x01, 0x00, 0x9D, 0x01, 0x2A] + le16(width) + le16(height) + [0, 0])
    }

    static func webpLossless(width: Int, height: Int) -> [UInt8] {
        let bits = UInt32(width - 1) | UInt32(height - 1) << 14 | 1 << 28  // alpha hint, version 0
        return riff("VP8L", [0x2F] + le32(bits) + [0, 0, 0])
    }

    static func webpExtended(width: Int, height: Int) -> [UInt8] {
        riff("VP8X", [0x10, 0, 0, 0] + le24(width - 1) + le24(height - 1))
    }

    static func bmp(width: Int32, height: Int32) -> [UInt8] {
        ascii("BM") + le32(70) + [0, 0, 0, 0] + le32(54)  // file header
            + le32(40) + le32(UInt32(bitPattern: width)) + le32(UInt32(bitPattern: height))
            + le16(1) + le16(24) + [UInt8](repeating: 0, count: 24)
    }

    static func bmpCore(width: Int, height: Int) -> [UInt8] {
        ascii("BM") + le32(26) + [0, 0, 0, 0] + le32(26) + le32(12) + le16(width) + le16(height) + le16(1) + le16(24)
    }

    static func tiff(littleEndian: Bool) -> [UInt8] {
        (littleEndian ? ascii("II*\0") + le32(8) : ascii("MM\0*") + be32(8)) + [0, 0]
    }

    static func ftyp(major: String, compatible: [String]) -> [UInt8] {
        let body = ascii(major) + [0, 0, 0, 0] + compatible.flatMap(ascii)
        return be32(UInt32(8 + body.count)) + ascii("ftyp") + body + be32(8) + ascii("meta")
    }
}

/// One well-formed header with what detection should report for it.
struct ImageCase: Sendable, CustomTestStringConvertible {
    let name: String
    let bytes: [UInt8]
    let format: ImageFormat
    let size: PixelSize?
    var testDescription: String { name }

    init(_ name: String, _ bytes: [UInt8], _ format: ImageFormat, _ size: (Int, Int)?) {
        self.name = name
        self.bytes = bytes
        self.format = format
        self.size = size.map { PixelSize(width: $0.0, height: $0.1) }
    }

    static let all: [ImageCase] = [
        ImageCase("PNG", Sample.png(width: 640, height: 480), .png, (640, 480)),
        ImageCase("PNG large", Sample.png(width: 70_000, height: 1), .png, (70_000, 1)),
        ImageCase("JPEG baseline", Sample.jpeg(width: 1920, height: 1080), .jpeg, (1920, 1080)),
        ImageCase("JPEG progressive", Sample.jpeg(width: 3, height: 65_535, sof: 0xC2), .jpeg, (3, 65_535)),
        ImageCase("JPEG SOF15", Sample.jpeg(width: 7, height: 9, sof: 0xCF), .jpeg, (7, 9)),
        ImageCase("GIF89a", Sample.gif(width: 320, height: 200), .gif, (320, 200)),
        ImageCase("GIF87a", Sample.gif(width: 1, height: 65_535, version: "GIF87a"), .gif, (1, 65_535)),
        ImageCase("WebP lossy", Sample.webpLossy(width: 550, height: 368), .webp, (550, 368)),
        ImageCase("WebP lossless", Sample.webpLossless(width: 16_384, height: 3), .webp, (16_384, 3)),
        ImageCase("WebP extended", Sample.webpExtended(width: 1 << 24, height: 1000), .webp, (1 << 24, 1000)),
        ImageCase("BMP bottom-up", Sample.bmp(width: 100, height: 50), .bmp, (100, 50)),
        ImageCase("BMP top-down", Sample.bmp(width: 100, height: -50), .bmp, (100, 50)),
        ImageCase("BMP OS/2", Sample.bmpCore(width: 12, height: 34), .bmp, (12, 34)),
        ImageCase("TIFF little-endian", Sample.tiff(littleEndian: true), .tiff, nil),
        ImageCase("TIFF big-endian", Sample.tiff(littleEndian: false), .tiff, nil),
        ImageCase("HEIC", Sample.ftyp(major: "heic", compatible: ["mif1", "heic"]), .heic, nil),
        ImageCase("HEIF mif1", Sample.ftyp(major: "mif1", compatible: ["heix"]), .heic, nil),
        ImageCase("HEIF msf1 only", Sample.ftyp(major: "msf1", compatible: []), .heic, nil),
        ImageCase("HEVC sequence", Sample.ftyp(major: "isom", compatible: ["hevc"]), .heic, nil),
        ImageCase("AVIF", Sample.ftyp(major: "avif", compatible: ["mif1", "miaf", "heic"]), .avif, nil),
        ImageCase("AVIF sequence", Sample.ftyp(major: "avis", compatible: ["msf1"]), .avif, nil),
        ImageCase("AVIF under mif1", Sample.ftyp(major: "mif1", compatible: ["miaf", "avif"]), .avif, nil),
    ]
}

@Suite("ImageData")
struct ImageDataTests {
    @Test("recognises the format and pixel size of a minimal header", arguments: ImageCase.all)
    func recognisesMinimalHeaders(_ sample: ImageCase) throws {
        let data = Data(sample.bytes)
        #expect(ImageData.detectFormat(of: data) == sample.format)
        let image = try ImageData(data: data)
        #expect(image.format == sample.format)
        #expect(image.pixelSize == sample.size)
        #expect(image.data == data)
    }

    @Test("every format has at least one sample")
    func everyFormatIsCovered() {
        #expect(Set(ImageCase.all.map(\.format)) == Set(ImageFormat.allCases))
    }

    @Test("rejects bytes that are not an image", arguments: [
        ("empty", [UInt8]()),
        ("JSON", Array(#"{"name": "stash", "tags": [1, 2, 3]}"#.utf8)),
        ("random bytes", [0x13, 0x37, 0xC0, 0xDE, 0x42, 0x00, 0x99, 0xAB, 0x7F, 0x01, 0xEE, 0x55]),
        ("RIFF without WEBP", Array("RIFF\u{10}\0\0\0WAVEfmt ".utf8)),
        ("truncated PNG", Array(Sample.png(width: 1, height: 1).prefix(10))),
        ("text starting with BM", Array("BMW is a car maker, not a bitmap header.".utf8)),
        ("ftyp of an MP4 video", Sample.ftyp(major: "isom", compatible: ["iso2", "mp41"])),
    ])
    func rejectsNonImages(_ name: String, _ bytes: [UInt8]) {
        let data = Data(bytes)
        #expect(ImageData.detectFormat(of: data) == nil)
        #expect(throws: ImageDataError.notAnImage(byteCount: bytes.count)) {
            try ImageData(data: data)
        }
    }

    @Test("reads a Data slice whose start index is not zero")
    func readsSliceWithNonZeroStartIndex() throws {
        for sample in ImageCase.all {
            let padded = Data([0xAA, 0xBB, 0xCC] + sample.bytes + [0xDD])
            let slice = padded[3..<(padded.count - 1)]
            #expect(slice.startIndex == 3)
            let image = try ImageData(data: slice)
            #expect(image.format == sample.format, "\(sample.name)")
            #expect(image.pixelSize == sample.size, "\(sample.name)")
            #expect(image.data == slice)
        }
    }

    @Test("JPEG without a frame header or with corrupt segment lengths has no pixel size", arguments: [
        [0xFF, 0xD8, 0xFF],
        [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x00, 0xFF, 0xC0],  // zero-length segment
        [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x01],  // length shorter than itself
        [0xFF, 0xD8, 0xFF, 0xE1, 0xFF, 0xFF, 0x00],  // length past the end
        [0xFF, 0xD8, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],  // only fill bytes
        [0xFF, 0xD8, 0xFF, 0xDA, 0x00, 0x02, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x00, 0x10, 0x00, 0x10],  // SOS first
        [0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x00],  // truncated SOF
        [0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x00, 0x00, 0x00, 0x10],  // height 0 (defined by DNL)
    ] as [[UInt8]])
    func jpegWithoutUsableFrameHasNoSize(_ bytes: [UInt8]) throws {
        let image = try ImageData(data: Data(bytes))
        #expect(image.format == .jpeg)
        #expect(image.pixelSize == nil)
    }

    @Test("JPEG skips DHT, JPG and DAC markers, standalone markers and fill bytes before the frame")
    func jpegSkipsNonFrameMarkers() throws {
        let skipped: [UInt8] = [0xFF, 0xC4] + Sample.be16(4) + [0, 0]
            + [0xFF, 0xC8] + Sample.be16(2) + [0xFF, 0xCC] + Sample.be16(2)
            + [0xFF, 0x01, 0xFF, 0xD0, 0xFF, 0xFF, 0xFF]
        let frame: [UInt8] = [0xC1] + Sample.be16(11) + [8] + Sample.be16(21) + Sample.be16(42) + [1, 1, 0x11, 0]
        let image = try ImageData(data: Data([0xFF, 0xD8] + skipped + frame))
        #expect(image.pixelSize == PixelSize(width: 42, height: 21))
    }

    @Test("hostile dimensions never give a negative size")
    func hostileDimensions() throws {
        let bmpMin = try ImageData(data: Data(Sample.bmp(width: 5, height: .min)))
        #expect(bmpMin.pixelSize == PixelSize(width: 5, height: 2_147_483_648))
        #expect(try ImageData(data: Data(Sample.bmp(width: -5, height: 5))).pixelSize == nil)
        #expect(try ImageData(data: Data(Sample.png(width: 0, height: 5))).pixelSize == nil)
        let pngMax = try ImageData(data: Data(Sample.png(width: .max, height: .max))).pixelSize
        #expect(pngMax == nil || pngMax == PixelSize(width: Int(UInt32.max), height: Int(UInt32.max)))
    }

    @Test("ImageFormat and PixelSize round-trip through JSON")
    func codableRoundTrip() throws {
        let size = PixelSize(width: 3, height: 4)
        #expect(try JSONDecoder().decode(PixelSize.self, from: JSONEncoder().encode(size)) == size)
        let formats = try JSONDecoder().decode([ImageFormat].self, from: JSONEncoder().encode(ImageFormat.allCases))
        #expect(formats == ImageFormat.allCases)
        #expect(String(decoding: try JSONEncoder().encode([ImageFormat.jpeg]), as: UTF8.self) == #"["jpeg"]"#)
    }

    @Test("random mutations of valid headers never crash and never give a negative size")
    func survivesRandomMutations() {
        var rng = SeededGenerator(seed: 0x5EED_1234_ABCD_0042)
        let iterationsPerSample = 20_000 / ImageCase.all.count + 1
        var inputs = 0
        var recognised = 0
        for sample in ImageCase.all {
            for _ in 0..<iterationsPerSample {
                let bytes = Self.mutate(sample.bytes, using: &rng)
                // Every other input is checked as a slice with a non-zero start index.
                let data = inputs.isMultiple(of: 2) ? Data(bytes) : Data([0xEE] + bytes).dropFirst()
                let format = ImageData.detectFormat(of: data)
                let image = try? ImageData(data: data)
                #expect(image?.format == format)
                if let size = image?.pixelSize, size.width < 0 || size.height < 0 {
                    Issue.record("negative size \(size) for \(sample.name): \(bytes)")
                }
                if image != nil { recognised += 1 }
                inputs += 1
            }
        }
        #expect(inputs >= 20_000)
        #expect(recognised > 0)
    }

    /// Flips, overwrites, truncates or extends bytes; sometimes several at once.
    private static func mutate(_ original: [UInt8], using rng: inout SeededGenerator) -> [UInt8] {
        var bytes = original
        for _ in 0...rng.below(3) {
            switch rng.below(5) {
            case 0 where !bytes.isEmpty:  // flip one bit
                bytes[rng.below(bytes.count)] ^= UInt8(1) << UInt8(rng.below(8))
            case 1 where !bytes.isEmpty:  // overwrite a byte, favouring values that make hostile lengths
                let values: [UInt8] = [0x00, 0x01, 0x02, 0x7F, 0x80, 0xFF, UInt8(truncatingIfNeeded: rng.next())]
                bytes[rng.below(bytes.count)] = values[rng.below(values.count)]
            case 2:  // truncate
                bytes.removeLast(rng.below(bytes.count + 1))
            case 3:  // extend with random bytes
                bytes += (0..<rng.below(32)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            default:  // extend with repeated 0xFF (JPEG fill bytes / huge lengths)
                bytes += [UInt8](repeating: 0xFF, count: rng.below(16))
            }
        }
        return bytes
    }
}
