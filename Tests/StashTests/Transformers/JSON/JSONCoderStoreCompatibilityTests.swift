import Foundation
import Testing
import StashTestSupport
@testable import Stash
@testable import StashEngine

/// Stores written before the streaming coder (Foundation's bytes, in Foundation's key order) read
/// back identically through the default transformer, and Foundation reads what it writes now.
@Suite("JSON coder: stores written with Foundation's coder")
struct JSONCoderStoreCompatibilityTests {
    @Test("values Foundation wrote to a store read back equal through Storage(name:) and forCodable")
    func foundationStoreReadsBack() throws {
        let directory = TemporaryDirectory()
        var values = CoderValues(seed: 7)
        let trees = (0..<30).map { _ in values.tree() }
        do {
            let old = try Storage<CoderTree>(diskConfig: DiskConfig(name: "Trees", directory: directory.url), memoryConfig: MemoryConfig(),
                                             transformer: TransformerFactory.forFoundationCodable(ofType: CoderTree.self))
            for (index, tree) in trees.enumerated() { try old.setObject(tree, forKey: "t\(index)") }
        }
        let reopened = try Storage<CoderTree>(name: "Trees", directory: directory.url)
        for (index, tree) in trees.enumerated() { #expect(try reopened.object(forKey: "t\(index)") == tree) }
        let transformer = TransformerFactory.forCodable(ofType: CoderTree.self)
        for tree in trees {
            #expect(try transformer.decode(try JSONEncoder().encode(tree)) == tree)
            #expect(try JSONDecoder().decode(CoderTree.self, from: try transformer.encode(tree)) == tree)
        }
    }

    @Test("what the default transformer writes, Foundation's transformer reads")
    func newStoreReadsWithFoundation() throws {
        let directory = TemporaryDirectory()
        var values = CoderValues(seed: 8)
        let trees = (0..<30).map { _ in values.tree() }
        do {
            let new = try Storage<CoderTree>(name: "Trees", directory: directory.url)
            for (index, tree) in trees.enumerated() { try new.setObject(tree, forKey: "t\(index)") }
        }
        let old = try Storage<CoderTree>(diskConfig: DiskConfig(name: "Trees", directory: directory.url), memoryConfig: MemoryConfig(),
                                         transformer: TransformerFactory.forFoundationCodable(ofType: CoderTree.self))
        for (index, tree) in trees.enumerated() { #expect(try old.object(forKey: "t\(index)") == tree) }
    }
}
