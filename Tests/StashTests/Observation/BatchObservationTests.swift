import Foundation
import Testing
@testable import Stash
@testable import StashEngine

// What key observers hear of a batch (and of a transaction, which commits as one): each change's
// `before` is the value it replaced, as if the calls had been made one by one.

@Suite("Observation of batches: each change's before is the value it replaced")
struct BatchObservationTests {
    @Test("a key set twice, removed and set again in one batch: before is old, A, then nil")
    func beforeFollowsTheBatchsOwnChanges() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let old = User(name: "old", age: 0)
        let (a, b, c) = (User(name: "A", age: 1), User(name: "B", age: 2), User(name: "C", age: 3))
        try storage.setObject(old, forKey: "k")
        let heard = Recorder<KeyChange<User>>()
        let token = storage.addObserver(heard, forKey: "k") { recorder, _, change in recorder.append(change) }
        var batch = StorageBatch<User>()
        batch.setObject(a, forKey: "k")
        batch.setObject(b, forKey: "k")
        batch.removeObject(forKey: "k")
        batch.setObject(c, forKey: "k")
        try storage.write(batch)
        #expect(heard.received == [.edit(before: old, after: a), .edit(before: a, after: b), .remove, .edit(before: nil, after: c)])
        token.cancel()
    }

    @Test("the same changes made one by one are heard the same way")
    func oneByOneAgrees() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let (a, b) = (User(name: "A", age: 1), User(name: "B", age: 2))
        let heard = Recorder<KeyChange<User>>()
        let token = storage.addObserver(heard, forKey: "k") { recorder, _, change in recorder.append(change) }
        try storage.setObject(a, forKey: "k")
        try storage.setObject(b, forKey: "k")
        try storage.removeObject(forKey: "k")
        try storage.setObject(a, forKey: "k")
        #expect(heard.received == [.edit(before: nil, after: a), .edit(before: a, after: b), .remove, .edit(before: nil, after: a)])
        token.cancel()
    }

    @Test("canonically equivalent spellings of a key in one batch are one key to its observer")
    func equivalentSpellingsAreOneKey() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let (a, b) = (User(name: "A", age: 1), User(name: "B", age: 2))
        let heard = Recorder<KeyChange<User>>()
        let token = storage.addObserver(heard, forKey: "caf\u{E9}") { recorder, _, change in recorder.append(change) }
        var batch = StorageBatch<User>()
        batch.setObject(a, forKey: "caf\u{E9}")
        batch.setObject(b, forKey: "cafe\u{301}")
        try storage.write(batch)
        #expect(heard.received == [.edit(before: nil, after: a), .edit(before: a, after: b)])
        token.cancel()
    }
}
