// libFuzzer entry point, compiled into one module with the library's sources by `Tests/Fuzz/run`,
// so it reaches the internal parsers. Not part of the package build.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: start, count: count))
    // The journal replay: any bytes, with and without a valid header in front.
    let replay = JournalFormat.parse(bytes)
    precondition(replay.validLength <= bytes.count)
    _ = JournalFormat.parse(JournalFormat.magic + bytes)
    // The image header parser.
    let data = Data(bytes)
    _ = ImageData.detectFormat(of: data)
    if let image = try? ImageData(data: data), let size = image.pixelSize {
        precondition(size.width > 0 && size.height > 0)
    }
    return 0
}
