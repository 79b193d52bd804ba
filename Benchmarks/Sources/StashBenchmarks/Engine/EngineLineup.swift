import Foundation

/// Engines side by side over one ``EngineFixture``, each in a folder of its own under `root`;
/// `reopen()` releases every engine, then opens each again (cold memory, warm OS cache, like a new
/// process).
final class EngineLineup {
    let fixture: EngineFixture
    let root: URL
    let contenders: [EngineContender]
    private(set) var sides: [any EngineSide] = []

    var names: [String] { contenders.map(\.name) }

    init(_ contenders: [EngineContender], fixture: EngineFixture, root: URL) throws {
        self.contenders = contenders
        self.fixture = fixture
        self.root = root
        try reopen()
    }

    func reopen() throws {
        sides = []
        sides = try contenders.map { try $0.open(EngineContender.folder($0.name, under: root), fixture) }
    }

    /// Releases every engine and deletes the folder.
    func close() {
        sides = []
        try? FileManager.default.removeItem(at: root)
    }

    /// `op` over `order` in batches of `batch` keys, one batch per side per round, the sides
    /// interleaved (``Measure/interleaved(rounds:_:)``); each side's ns/op per batch.
    func measure(_ op: EngineOp, order: [Int32], batch: Int, sides: [any EngineSide]? = nil) throws -> [[Double]] {
        let sides = sides ?? self.sides
        let starts = Array(stride(from: 0, to: order.count, by: batch))
        return try order.withUnsafeBufferPointer { all in
            try Measure.interleaved(rounds: starts.count, sides.map { side in
                { round in
                    let start = starts[round]
                    return try side.batch(op, UnsafeBufferPointer(rebasing: all[start..<min(start + batch, all.count)]))
                }
            })
        }
    }

    /// Every key written once, untimed (when `--filter` skips the step that writes them).
    func populate() throws {
        let order = fixture.sequential
        try order.withUnsafeBufferPointer { all in for side in sides { _ = try side.batch(.set(revision: 0), all) } }
    }
}
