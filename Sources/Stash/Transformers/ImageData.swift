public import Foundation

/// The container format of encoded image bytes, detected from the file header.
public enum ImageFormat: String, Sendable, Hashable, CaseIterable, Codable {
    /// Portable Network Graphics.
    case png
    /// JPEG / JFIF / Exif.
    case jpeg
    /// Graphics Interchange Format (87a or 89a).
    case gif
    /// WebP in a RIFF container (lossy, lossless or extended).
    case webp
    /// HEIF / HEIC in an ISO base media file.
    case heic
    /// AV1 Image File Format in an ISO base media file.
    case avif
    /// Windows / OS/2 bitmap.
    case bmp
    /// Tagged Image File Format, little- or big-endian.
    case tiff
}

/// Width and height in pixels, as read from an image header.
public struct PixelSize: Sendable, Hashable, Codable {
    /// The width in pixels.
    public let width: Int
    /// The height in pixels.
    public let height: Int

    /// Creates a pixel size.
    /// - Parameters:
    ///   - width: The width in pixels.
    ///   - height: The height in pixels.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
}

/// Encoded image bytes (PNG, JPEG, …) kept exactly as given, with the detected format.
public struct ImageData: Sendable, Hashable {
    /// The encoded bytes, unchanged.
    public let data: Data
    /// The container format detected from the header of `data`.
    public let format: ImageFormat
    /// The size in pixels, or nil when the header does not give it cheaply.
    public let pixelSize: PixelSize?

    /// Wraps encoded image bytes after checking their header.
    /// - Parameter data: Encoded image bytes; kept exactly as given.
    /// - Throws: `ImageDataError.notAnImage` when the bytes are not a recognised image.
    public init(data: Data) throws {
        let header = Header(data)
        guard let format = header.format() else {
            throw ImageDataError.notAnImage(byteCount: data.count)
        }
        self.data = data
        self.format = format
        self.pixelSize = header.pixelSize(for: format)
    }

    /// Detects the image format from the header bytes.
    /// - Parameter data: The bytes to inspect; any length, any start index.
    /// - Returns: The format of `data`, or nil when the header is not one of ``ImageFormat``. Never traps.
    public static func detectFormat(of data: Data) -> ImageFormat? {
        Header(data).format()
    }
}

/// Why bytes were rejected as an image.
public enum ImageDataError: Error, Sendable, Equatable {
    /// The bytes do not start with the header of any ``ImageFormat``.
    case notAnImage(byteCount: Int)
}

/// Bounds-checked, offset-from-zero reads over `Data` (which may be a slice with a non-zero start index).
/// Every read returns nil instead of trapping when it would go past the end.
private struct Header {
    let data: Data
    let count: Int

    init(_ data: Data) {
        self.data = data
        self.count = data.count
    }

    /// True when `length` bytes starting at `offset` are all inside the data. Written to avoid overflow.
    func has(_ length: Int, at offset: Int) -> Bool {
        offset >= 0 && length >= 0 && length <= count && offset <= count - length
    }

    func u8(_ offset: Int) -> UInt8? {
        has(1, at: offset) ? data[data.startIndex + offset] : nil
    }

    /// Reads `length` bytes (at most 4) as an unsigned integer.
    func uint(at offset: Int, length: Int, bigEndian: Bool) -> UInt32? {
        guard length <= 4, has(length, at: offset) else { return nil }
        var value: UInt32 = 0
        for k in 0..<length {
            let byte = UInt32(data[data.startIndex + offset + (bigEndian ? k : length - 1 - k)])
            value = value << 8 | byte
        }
        return value
    }

    func u16BE(_ offset: Int) -> Int? { uint(at: offset, length: 2, bigEndian: true).map(Int.init) }
    func u16LE(_ offset: Int) -> Int? { uint(at: offset, length: 2, bigEndian: false).map(Int.init) }
    func u24LE(_ offset: Int) -> Int? { uint(at: offset, length: 3, bigEndian: false).map(Int.init) }

    /// True when the bytes at `offset` equal `expected`.
    func matches(_ expected: [UInt8], at offset: Int) -> Bool {
        guard has(expected.count, at: offset) else { return false }
        return expected.indices.allSatisfy { data[data.startIndex + offset + $0] == expected[$0] }
    }

    func matches(_ ascii: String, at offset: Int) -> Bool {
        matches(Array(ascii.utf8), at: offset)
    }

    // MARK: Format detection

    func format() -> ImageFormat? {
        // PNG requires the IHDR chunk first, so a bare signature is not enough to be an image.
        if matches([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], at: 0), matches("IHDR", at: 12), has(8, at: 16) {
            return .png
        }
        if matches([0xFF, 0xD8, 0xFF], at: 0) { return .jpeg }
        if matches("GIF87a", at: 0) || matches("GIF89a", at: 0) { return .gif }
        if matches("RIFF", at: 0), matches("WEBP", at: 8) { return .webp }
        if matches("II*\0", at: 0) || matches("MM\0*", at: 0) { return .tiff }
        if let isoFormat = isoMediaFormat() { return isoFormat }
        // "BM" alone would match ordinary text, so also require a known DIB header size.
        if matches("BM", at: 0), let dibSize = uint(at: 14, length: 4, bigEndian: false),
           [12, 16, 40, 52, 56, 64, 108, 124].contains(dibSize) {
            return .bmp
        }
        return nil
    }

    /// HEIC or AVIF from the brands of an ISO BMFF `ftyp` box at offset 0.
    private func isoMediaFormat() -> ImageFormat? {
        guard matches("ftyp", at: 4), let major = uint(at: 8, length: 4, bigEndian: true),
              let boxSize = uint(at: 0, length: 4, bigEndian: true) else { return nil }
        // Compatible brands follow the 4-byte minor version, up to the end of the box (clamped to the data).
        // Sizes below 16 (0 = "to end of file", 1 = 64-bit size) are not worth decoding: use the major brand only.
        let end = boxSize >= 16 ? min(Int(exactly: boxSize) ?? count, count) : 16
        var compatible: [UInt32] = []
        var offset = 16
        while offset < end, let brand = uint(at: offset, length: 4, bigEndian: true) {
            compatible.append(brand)
            offset += 4
        }

        let avif = ["avif", "avis"].map(Self.fourCC)
        let heic = ["heic", "heix", "hevc", "hevx"].map(Self.fourCC)
        let heifGeneric = ["mif1", "msf1"].map(Self.fourCC)
        // The major brand decides first. A generic HEIF brand (mif1/msf1) is also used by AVIF files,
        // so a specific compatible brand wins over it before falling back to HEIC.
        if avif.contains(major) { return .avif }
        if heic.contains(major) { return .heic }
        if compatible.contains(where: avif.contains) { return .avif }
        if compatible.contains(where: heic.contains) { return .heic }
        if heifGeneric.contains(major) || compatible.contains(where: heifGeneric.contains) { return .heic }
        return nil
    }

    private static func fourCC(_ code: String) -> UInt32 {
        code.utf8.reduce(0) { $0 << 8 | UInt32($1) }
    }

    // MARK: Pixel size

    func pixelSize(for format: ImageFormat) -> PixelSize? {
        let size: (width: Int, height: Int)?
        switch format {
        case .png:
            guard let w = uint(at: 16, length: 4, bigEndian: true), let h = uint(at: 20, length: 4, bigEndian: true),
                  let width = Int(exactly: w), let height = Int(exactly: h) else { return nil }
            size = (width, height)
        case .gif:
            guard let width = u16LE(6), let height = u16LE(8) else { return nil }
            size = (width, height)
        case .bmp: size = bmpSize()
        case .jpeg: size = jpegSize()
        case .webp: size = webpSize()
        case .heic, .avif, .tiff: size = nil
        }
        // A zero dimension is not a usable size; `Int(exactly:)` above keeps every value non-negative.
        guard let size, size.width > 0, size.height > 0 else { return nil }
        return PixelSize(width: size.width, height: size.height)
    }

    private func bmpSize() -> (width: Int, height: Int)? {
        guard let dibSize = uint(at: 14, length: 4, bigEndian: false) else { return nil }
        if dibSize == 12 {  // OS/2 BITMAPCOREHEADER: unsigned 16-bit width and height.
            guard let width = u16LE(18), let height = u16LE(20) else { return nil }
            return (width, height)
        }
        guard let w = uint(at: 18, length: 4, bigEndian: false), let h = uint(at: 22, length: 4, bigEndian: false)
        else { return nil }
        let width = Int32(bitPattern: w), height = Int32(bitPattern: h)
        // A negative height means a top-down bitmap. `magnitude` avoids the trap of abs(Int32.min).
        guard width > 0, let absHeight = Int(exactly: height.magnitude) else { return nil }
        return (Int(width), absHeight)
    }

    /// Walks JPEG marker segments up to the first start-of-frame. Each step advances past at least
    /// the marker byte, so the walk ends on any input.
    private func jpegSize() -> (width: Int, height: Int)? {
        var offset = 2  // just after SOI (FF D8)
        while offset < count {
            guard u8(offset) == 0xFF else { return nil }  // lost sync: not worth scanning for
            while u8(offset) == 0xFF { offset += 1 }  // 0xFF fill bytes may pad before a marker
            guard let marker = u8(offset) else { return nil }
            offset += 1
            switch marker {
            case 0x01, 0xD0...0xD8:  // TEM, RSTn, SOI: standalone markers without a length
                continue
            case 0xD9, 0xDA:  // EOI, or SOS (entropy-coded data follows): no frame header before it
                return nil
            default:
                break
            }
            // The segment length counts its own two bytes, so anything below 2 is corrupt.
            guard let length = u16BE(offset), length >= 2 else { return nil }
            if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) {
                // SOFn: length(2) precision(1) height(2) width(2)
                guard let height = u16BE(offset + 3), let width = u16BE(offset + 5) else { return nil }
                return (width, height)
            }
            offset += length
        }
        return nil
    }

    /// Reads the canvas size from the first chunk after the RIFF/WEBP header.
    private func webpSize() -> (width: Int, height: Int)? {
        let payload = 20  // "RIFF" size "WEBP" fourCC(4) chunkSize(4)
        if matches("VP8 ", at: 12) {
            // Lossy: 3-byte frame tag, start code 9D 01 2A, then 14-bit width and height (top 2 bits = scale).
            guard matches([0x9D, 0x01, 0x2A], at: payload + 3),
                  let width = u16LE(payload + 6), let height = u16LE(payload + 8) else { return nil }
            return (width & 0x3FFF, height & 0x3FFF)
        }
        if matches("VP8L", at: 12) {
            // Lossless: signature 0x2F, then width-1 and height-1 as 14-bit fields packed little-endian.
            guard u8(payload) == 0x2F, let bits = uint(at: payload + 1, length: 4, bigEndian: false) else { return nil }
            return (Int(bits & 0x3FFF) + 1, Int(bits >> 14 & 0x3FFF) + 1)
        }
        if matches("VP8X", at: 12) {
            // Extended: flags(1) reserved(3), then canvas width-1 and height-1 as 24-bit little-endian.
            guard let width = u24LE(payload + 4), let height = u24LE(payload + 7) else { return nil }
            return (width + 1, height + 1)
        }
        return nil
    }
}
