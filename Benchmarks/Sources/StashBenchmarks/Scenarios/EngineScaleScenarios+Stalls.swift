import Foundation

extension EngineScaleScenarios {
    static func longestOverwriteLabel(_ count: Int) -> String {
        "longest overwrite while every key is overwritten twice, \(count) entries"
    }

    /// The longest single overwrite while every key of the filled store is overwritten twice, in a
    /// random order, Stash beside LevelDB: what an engine's own housekeeping makes one caller wait.
    /// Stash's dead bytes pass its live ones halfway, so a compaction starts in one overwrite's turn
    /// and finishes in a later one's (what those turns hold grows with the entries); LevelDB's writes
    /// wait when its level 0 fills. One pass each, the clock read around every write. Row
    /// `… vs LevelDB`, no target: a stall is a spike, not a rate.
    static func longestOverwrite(bench: Bench, fixture: EngineFixture, folders: Folders) throws {
        let label = longestOverwriteLabel(fixture.count)
        guard bench.settings.wants("\(label) vs LevelDB") else { return }
        let orders = [fixture.order(seed: 41), fixture.order(seed: 42)]
        var longest: [Double] = []
        for contender in [EngineContender.stash, EngineContender.leveldb] {
            var side: (any EngineSide)? = try contender.open(folders.peer(contender.name), fixture)
            var worst = Duration.zero
            for (revision, order) in orders.enumerated() {
                for index in order {
                    let start = ContinuousClock.now
                    try side!.set(Int(index), revision: revision)
                    worst = max(worst, ContinuousClock.now - start)
                }
            }
            side = nil
            longest.append(worst.nanoseconds)
        }
        print(String(format: "  (longest overwrite: Stash %.2f ms, LevelDB %.2f ms)", longest[0] / 1e6, longest[1] / 1e6))
        bench.add(Row("\(label) vs LevelDB", stash: longest[0], baseline: longest[1], vs: "LevelDB", unit: .ns, target: .none))
    }
}
