import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Errors say where and how to fix: the key a `notFound` names, the setting an `inUse` points to;
/// Cache 5's spellings still match.
@Suite("Error texts")
struct ErrorTextTests {
    @Test("notFound names the key, and equals StorageError.notFound in tests and catch clauses")
    func notFoundNamesTheKey() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let error = storageError { _ = try storage.object(forKey: "inbox.42") }
        #expect(error == .notFound(key: "inbox.42"))
        #expect(error == StorageError.notFound) // Cache 5's value: every notFound equals it
        #expect("\(error!)".contains("\"inbox.42\""))
        #expect(throws: StorageError.notFound) { try storage.entry(forKey: "inbox.42") }
        do {
            _ = try storage.object(forKey: "inbox.42")
        } catch StorageError.notFound { // Cache 5's catch clause
        }
        if case .notFound(let key)? = storageError({ _ = try storage.isExpiredObject(forKey: "k") }) { #expect(key == "k") }
        #expect(StorageError.notFound != .expired(Date(timeIntervalSince1970: 0)))
    }

    @Test("inUse says that allowsWritersInOtherProcesses shares a store between writers")
    func inUseNamesTheSetting() {
        let text = StorageError.inUse(directory: "/data/Todos").description
        #expect(text.contains("/data/Todos"))
        #expect(text.contains("allowsWritersInOtherProcesses"))
    }
}
