import Foundation
@testable import StashEngine

/// An engine client that observes nothing, has nothing pending and pins nothing: a test's own client
/// (what a catch-up drops from memory, say) writes only the calls it looks at.
protocol QuietEngineClient: EngineClient {}

extension QuietEngineClient {
    var hasObservers: Bool { false }
    func hasKeyObservers(_ key: String) -> Bool { false }
    var hasPendingMutations: Bool { false }
    func publish(_ event: StoreEvent) {}
    func publish(_ events: [StoreEvent]) {}
    var lastPublished: UInt64 { 0 }
    func deliver(through mark: UInt64) {}
    func takeMemoryHits() -> [String] { [] }
    func dropFromMemory(key: String, except layer: AnyObject) { dropFromMemory(key: key) }
    func isPinned(_ key: String) -> Bool { false }
}
