import Foundation
import Testing
import Stash

@Suite("StorageError is Equatable")
struct StorageErrorEquatableTests {
    private struct Opaque: Error {}

    @Test("#expect(throws: StorageError.notFound) compiles and matches the error thrown")
    func expectThrowsNamesTheError() throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<User>(name: "store", directory: directory.url)
        #expect(throws: StorageError.notFound) { try storage.object(forKey: "missing") }
        let clock = TestClock()
        let timed = try Storage<User>(name: "timed", directory: directory.url, now: clock.function)
        try timed.setObject(User(name: "Ada", age: 36), forKey: "me", expiry: .seconds(10))
        clock.advance(by: 11)
        #expect(throws: StorageError.expired(clock.now.addingTimeInterval(-1))) { try timed.object(forKey: "me") }
        #expect(throws: StorageError.invalidLimit(name: "size", value: -1)) { try storage.trim(toSize: -1) }
    }

    @Test("cases compare by case and by every associated value")
    func casesAndValues() {
        #expect(StorageError.notFound == .notFound)
        #expect(StorageError.notFound != .typeNotMatch)
        #expect(StorageError.corrupted("a") == .corrupted("a"))
        #expect(StorageError.corrupted("a") != .corrupted("b"))
        #expect(StorageError.keyTooLong(byteCount: 5, limit: 4) != .keyTooLong(byteCount: 5, limit: 3))
        #expect(StorageError.invalidExpiry(.seconds(.nan)) != .invalidExpiry(.never))
        #expect(StorageError.configurationConflict(directory: "d", setting: "maxSize", inForce: "1", requested: "2")
            == .configurationConflict(directory: "d", setting: "maxSize", inForce: "1", requested: "2"))
    }

    @Test("underlying errors: Equatable ones compare with ==, others by domain and code, other types never")
    func underlyingErrors() {
        let denied = POSIXError(.EACCES)
        #expect(StorageError.io(operation: "open", path: "/x", underlying: denied)
            == .io(operation: "open", path: "/x", underlying: POSIXError(.EACCES)))
        #expect(StorageError.io(operation: "open", path: "/x", underlying: denied)
            != .io(operation: "open", path: "/x", underlying: POSIXError(.ENOSPC)))
        #expect(StorageError.io(operation: "open", path: "/x", underlying: denied)
            != .io(operation: "open", path: "/y", underlying: denied))
        #expect(StorageError.transformerFail(ImageDataError.notAnImage(byteCount: 3))
            == .transformerFail(ImageDataError.notAnImage(byteCount: 3)))
        #expect(StorageError.transformerFail(ImageDataError.notAnImage(byteCount: 3))
            != .transformerFail(ImageDataError.notAnImage(byteCount: 4)))
        #expect(StorageError.decodingFailed(Opaque()) == .decodingFailed(Opaque()))
        #expect(StorageError.decodingFailed(Opaque()) != .encodingFailed(Opaque()))
        #expect(StorageError.decodingFailed(Opaque()) != .decodingFailed(POSIXError(.EIO)))
        #expect(StorageError.decodingFailed(StorageError.notFound) == .decodingFailed(StorageError.notFound))
    }
}
