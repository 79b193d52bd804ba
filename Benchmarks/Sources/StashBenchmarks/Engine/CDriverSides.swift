import CPeerDriver
import Foundation

/// A peer driven by the C driver (`Sources/CPeerDriver`): the whole batch runs and is timed in C,
/// the reference the Swift peers' wrapper overhead is measured against.
final class CDriverSide: EngineSide {
    private let handle: OpaquePointer
    private let fixture: EngineFixture
    private var error = [CChar](repeating: 0, count: 512)

    init(_ engine: cpeer_engine, in folder: URL, _ fixture: EngineFixture) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var error = [CChar](repeating: 0, count: 512)
        guard let handle = cpeer_open(engine, folder.path, 0, &error, error.count) else {
            throw BenchError("C driver: " + String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        self.handle = handle
        self.fixture = fixture
    }

    deinit {
        cpeer_close(handle)
    }

    func batch(_ op: EngineOp, _ indices: UnsafeBufferPointer<Int32>) throws -> Double {
        let (code, revision): (cpeer_op, Int) = switch op {
        case .set(let revision): (CPEER_SET, revision)
        case .get: (CPEER_GET, 0)
        case .remove: (CPEER_REMOVE, 0)
        }
        var data = fixture.cData(revision: revision)
        let ns = cpeer_batch(handle, code, indices.baseAddress, indices.count, &data, &error, error.count)
        guard ns >= 0 else {
            throw BenchError("C driver: " + String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return ns
    }

    func set(_ index: Int, revision: Int) throws { try one(.set(revision: revision), index) }
    func get(_ index: Int) throws -> Int { try one(.get, index); return EngineFixture.valueSize }
    func remove(_ index: Int) throws { try one(.remove, index) }

    private func one(_ op: EngineOp, _ index: Int) throws {
        let indices = [Int32(index)]
        _ = try indices.withUnsafeBufferPointer { try batch(op, $0) }
    }
}

/// A peer through its `Side` (the `String`/`Data` wrappers the app and durable rows use): the
/// third column of the wrapper-overhead table.
final class WrappedSide: EngineSide {
    private let side: any Side<Data>
    private let fixture: EngineFixture

    init(_ side: any Side<Data>, _ fixture: EngineFixture) {
        self.side = side
        self.fixture = fixture
    }

    func set(_ index: Int, revision: Int) throws {
        try side.set(fixture.valueData[revision][index % fixture.valueCount], forKey: fixture.keyStrings[index])
    }

    func get(_ index: Int) throws -> Int { try side.get(fixture.keyStrings[index]).count }
    func remove(_ index: Int) throws { try side.remove(fixture.keyStrings[index]) }
}
