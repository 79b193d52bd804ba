import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// A typed view (`transform…`) is a view of the same store (Contract items 4 and 12, Docs/Contract.md):
/// every typed view shares the queue, memory layer, folder and observers; with Contract items 7 (bad
/// data is an error, the entry dropped) and 9 (value files are the transformer's bytes).
@Suite("Typed views of one store")
struct TypedViewTests {
    private let ann = User(name: "ann", age: 30)
    private let bob = User(name: "bob", age: 40)

    // MARK: Sharing

    // Views (Contract item 4): a view shares queue, memory, folder and observers.
    @Test("every kind of view shares the store's queue, memory layer, folder and observers")
    func viewsShareEverything() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let base = storage.hybridStorage
        func expectShared<U>(_ view: Storage<U>, _ name: String) {
            #expect(view.hybridStorage.engine === base.engine, "\(name): queue and index")
            #expect(view.hybridStorage.engine.queue === base.engine.queue, "\(name): queue")
            #expect(view.hybridStorage.engine.observers === base.engine.observers, "\(name): observers")
            #expect(view.hybridStorage.memoryStorage.cache === base.memoryStorage.cache, "\(name): memory")
            #expect(view.path == storage.path, "\(name): folder")
        }
        expectShared(storage.transform(transformer: Self.prefixedUTF8), "transform(transformer:)")
        expectShared(storage.transformCodable(ofType: [String].self), "transformCodable")
        expectShared(storage.transformData(), "transformData")
        expectShared(storage.transformImage(), "transformImage")
        expectShared(storage.transformData().transformCodable(ofType: User.self), "a view of a view")
    }

    // Views (Contract item 4): a write through any view is read through every other.
    @Test("a Codable value is read through the data view as exactly its JSON, and JSON data is read as the Codable value")
    func codableAndDataViewsAgree() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let data = storage.transformData()
        let codable = storage.transformCodable(ofType: User.self)

        // One key, so the bytes are deterministic (Linux's JSONEncoder varies the order of several keys).
        let tag = Tag(label: "réd")
        try storage.transformCodable(ofType: Tag.self).setObject(tag, forKey: "tag")
        #expect(try data.object(forKey: "tag") == JSONEncoder().encode(tag))
        try storage.setObject(ann, forKey: "ann")
        #expect(try JSONDecoder().decode(User.self, from: data.object(forKey: "ann")) == ann)

        try data.setObject(JSONEncoder().encode(bob), forKey: "bob")
        #expect(try storage.object(forKey: "bob") == bob)
        #expect(try codable.object(forKey: "bob") == bob)
        #expect(try codable.object(forKey: "ann") == ann)
    }

    // Views (Contract item 4): no view reads a stale memory copy of another view's type.
    @Test("a write through one view replaces what another view reads, memory copy included")
    func writeThroughOneViewReplacesForAll() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let data = storage.transformData()
        try storage.setObject(ann, forKey: "k")
        #expect(try storage.object(forKey: "k") == ann) // now a memory hit
        try data.setObject(JSONEncoder().encode(bob), forKey: "k")
        #expect(try storage.object(forKey: "k") == bob)
        storage.async.setObject(ann, forKey: "k") { _ in }
        storage.waitForQueue()
        #expect(try JSONDecoder().decode(User.self, from: data.object(forKey: "k")) == ann)
    }

    // Views (Contract item 4): the key list and the size are the store's, whichever view asks.
    @Test("allKeys and totalSize agree across views")
    func keysAndSizeAgree() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let data = storage.transformData()
        let strings = storage.transform(transformer: Self.prefixedUTF8)
        let images = storage.transformImage()
        let png = Self.pngHeader(width: 2, height: 3)

        try storage.setObject(ann, forKey: "user")
        try data.setObject(Data([1, 2, 3]), forKey: "bytes")
        try strings.setObject("hello", forKey: "string")
        try images.setObject(ImageData(data: png), forKey: "image")

        let expectedKeys: Set<String> = ["user", "bytes", "string", "image"]
        let expectedSize = try JSONEncoder().encode(ann).count + 3 + "s:hello".utf8.count + png.count
        #expect(Set(storage.allKeys) == expectedKeys)
        #expect(Set(data.allKeys) == expectedKeys)
        #expect(Set(strings.allKeys) == expectedKeys)
        #expect(Set(images.allKeys) == expectedKeys)
        #expect(storage.totalSize == expectedSize)
        #expect(data.totalSize == expectedSize)
        #expect(strings.totalSize == expectedSize)
        #expect(images.totalSize == expectedSize)
    }

    // Views (Contract item 4): removing through one view removes for every view, memory included.
    @Test("removeObject, removeExpiredObjects and removeAll through one view remove for every view")
    func removalThroughOneViewRemovesForAll() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeUserStorage(in: directory, clock: clock)
        let data = storage.transformData()
        let codable = storage.transformCodable(ofType: User.self)
        let images = storage.transformImage()

        try storage.setObject(ann, forKey: "a")
        _ = try storage.object(forKey: "a") // in memory as a User
        try data.removeObject(forKey: "a")
        #expect(storageError { _ = try storage.object(forKey: "a") }?.isNotFound == true)
        #expect(storageError { _ = try codable.object(forKey: "a") }?.isNotFound == true)

        try storage.setObject(ann, forKey: "short", expiry: .seconds(1))
        try data.setObject(Data([1]), forKey: "long", expiry: .seconds(100))
        clock.advance(by: 2)
        try codable.removeExpiredObjects()
        #expect(storageError { _ = try storage.entry(forKey: "short") }?.isNotFound == true)
        #expect(Set(data.allKeys) == ["long"])

        try storage.setObject(bob, forKey: "b")
        try images.removeAll()
        #expect(storage.allKeys.isEmpty)
        #expect(storageError { _ = try storage.object(forKey: "b") }?.isNotFound == true)
        #expect(storageError { _ = try data.object(forKey: "long") }?.isNotFound == true)
        #expect(storage.hybridStorage.memoryStorage.count == 0)
    }

    // MARK: Bad data (contract 7)

    // Contract 7: bytes another view wrote that do not decode give decodingFailed, and the entry is kept.
    @Test("reading a key through a view that cannot decode it throws decodingFailed and keeps the entry")
    func undecodableThroughViewIsKept() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory, valuesAsFiles: true) // the file is checked to stay
        let data = storage.transformData()
        try data.setObject(Data("not json".utf8), forKey: "bad")
        try storage.setObject(ann, forKey: "good")
        let path = try #require(try data.entry(forKey: "bad").filePath)
        #expect(FileManager.default.fileExists(atPath: path))

        let error = storageError { _ = try storage.object(forKey: "bad") }
        #expect(error?.isDecodingFailed == true)
        if case .decodingFailed(let cause, _)? = error { #expect(cause is DecodingError) }

        #expect(storage.allKeys.contains("bad"))
        #expect(try data.object(forKey: "bad") == Data("not json".utf8)) // the view that can read it still does
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(try storage.object(forKey: "good") == ann) // the rest keeps working
    }

    // Contract 7: hyperoslo/Cache's migration test (StorageSupportTests "testManageMigration"), on Stash's API:
    // store Person1, fail to read it as Person2, read it as Person1, convert, write Person2.
    @Test("hyperoslo/Cache's migration pattern works: a failed read as the new type keeps the old value")
    func cacheMigrationPattern() throws {
        struct Person1: Codable, Sendable, Equatable { let fullName: String }
        struct Person2: Codable, Sendable, Equatable { let firstName: String; let lastName: String }
        let directory = TemporaryDirectory()
        let person1Storage = try Storage<Person1>(diskConfig: directory.diskConfig(),
                                                  transformer: TransformerFactory.forCodable(ofType: Person1.self))
        let person2Storage = person1Storage.transformCodable(ofType: Person2.self)

        try person1Storage.setObject(Person1(fullName: "John Snow"), forKey: "person")
        // The app looks for the new model first and fails...
        #expect(storageError { _ = try person2Storage.object(forKey: "person") }?.isDecodingFailed == true)
        // ...then reads the old model, converts it and writes the new one.
        let old = try person1Storage.object(forKey: "person")
        let parts = old.fullName.split(separator: " ").map(String.init)
        try person2Storage.setObject(Person2(firstName: parts[0], lastName: parts[1]), forKey: "person")

        #expect(try person2Storage.object(forKey: "person") == Person2(firstName: "John", lastName: "Snow"))
        #expect(storageError { _ = try person1Storage.object(forKey: "person") }?.isDecodingFailed == true)
    }

    // MARK: Custom transformers

    // Contract 9: a transformer built from its public init stores exactly its bytes.
    @Test("a custom Transformer<String> from init(toData:fromData:) stores its bytes and reads them back")
    func customTransformer() throws {
        let directory = TemporaryDirectory()
        var config = directory.diskConfig()
        config.storesValuesAsFiles = true // the file holds exactly the transformer's bytes
        let strings = try Storage<String>(diskConfig: config, transformer: Self.prefixedUTF8)
        try strings.setObject("héllo ✓", forKey: "k")
        #expect(try strings.object(forKey: "k") == "héllo ✓")

        let path = try #require(try strings.entry(forKey: "k").filePath)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("s:héllo ✓".utf8))
        #expect(try strings.transformData().object(forKey: "k") == Data("s:héllo ✓".utf8))

        // Read cold (a second storage on the folder has an empty memory layer), it decodes from disk.
        let cold = try Storage<String>(diskConfig: directory.diskConfig(), transformer: Self.prefixedUTF8)
        #expect(try cold.object(forKey: "k") == "héllo ✓")
        // As a view of a Codable store, too.
        let users = try makeUserStorage(in: directory)
        #expect(try users.transform(transformer: Self.prefixedUTF8).object(forKey: "k") == "héllo ✓")
    }

    // Contract 7: an error thrown by toData surfaces as encodingFailed with the original error; nothing is stored.
    @Test("an error thrown by a custom toData surfaces as encodingFailed carrying it, and nothing is stored")
    func customEncodingError() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(ann, forKey: "k")
        let failing = storage.transform(transformer: Self.failing)

        let error = storageError { try failing.setObject("boom", forKey: "k") }
        guard case .encodingFailed(let cause)? = error else {
            Issue.record("expected encodingFailed, got \(String(describing: error))")
            return
        }
        #expect(cause as? CustomFailure == CustomFailure(code: 1))
        #expect(try storage.object(forKey: "k") == ann) // the old value is untouched
        #expect(storage.allKeys == ["k"])
    }

    // Contract 7: an error thrown by fromData surfaces as decodingFailed with the original error; the entry is kept.
    @Test("an error thrown by a custom fromData surfaces as decodingFailed carrying it, and the entry is kept")
    func customDecodingError() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.transformData().setObject(Data("x".utf8), forKey: "k")
        let failing = storage.transform(transformer: Self.failing)

        let error = storageError { _ = try failing.object(forKey: "k") }
        guard case .decodingFailed(let cause, _)? = error else {
            Issue.record("expected decodingFailed, got \(String(describing: error))")
            return
        }
        #expect(cause as? CustomFailure == CustomFailure(code: 2))
        #expect(storage.allKeys == ["k"])
        #expect(try storage.transformData().object(forKey: "k") == Data("x".utf8))
    }

    // Contract 7: a StorageError thrown inside a transformer is passed on as it is.
    @Test("a StorageError thrown by a transformer reaches the caller unchanged", arguments: [true, false])
    func storageErrorFromTransformerPassesThrough(encoding: Bool) throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.transformData().setObject(Data("x".utf8), forKey: "k")
        let view = storage.transform(transformer: Transformer<String>(
            toData: { _ in throw StorageError.corrupted("from toData") },
            fromData: { _ in throw StorageError.corrupted("from fromData") }
        ))
        let error = encoding
            ? storageError { try view.setObject("v", forKey: "k") }
            : storageError { _ = try view.object(forKey: "k") }
        guard case .corrupted(let reason)? = error else {
            Issue.record("expected corrupted, got \(String(describing: error))")
            return
        }
        #expect(reason == (encoding ? "from toData" : "from fromData"))
    }

    // MARK: Images (contract 9)

    // Contract 9: an image's value file holds exactly its encoded bytes.
    @Test("an image stored through transformImage() is kept byte for byte in its value file",
          arguments: [(1, 1), (640, 480), (4096, 1)] as [(UInt32, UInt32)])
    func imageBytesUnchanged(width: UInt32, height: UInt32) throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory, valuesAsFiles: true)
        let images = storage.transformImage()
        let png = Self.pngHeader(width: width, height: height)
        try images.setObject(ImageData(data: png), forKey: "logo")

        let entry = try images.entry(forKey: "logo")
        #expect(entry.object.data == png)
        #expect(entry.object.format == .png)
        #expect(entry.object.pixelSize == PixelSize(width: Int(width), height: Int(height)))
        let path = try #require(entry.filePath)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == png)
        #expect(try storage.transformData().object(forKey: "logo") == png)

        // Cold, from disk: the same bytes and format.
        let cold = try makeUserStorage(in: directory, valuesAsFiles: true).transformImage()
        let coldImage = try cold.object(forKey: "logo")
        #expect(coldImage.data == png)
        #expect(coldImage.format == .png)
        #expect(try cold.entry(forKey: "logo").filePath == path)
    }

    // Contract 7: bytes that are no image are rejected by the image view, and the entry is kept.
    @Test("JSON read through transformImage() throws, and the entry is kept")
    func jsonThroughImageViewThrows() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(ann, forKey: "k")
        let json = try JSONEncoder().encode(ann)

        let error = storageError { _ = try storage.transformImage().object(forKey: "k") }
        guard case .transformerFail(let cause)? = error else {
            Issue.record("expected transformerFail (as forImage() documents), got \(String(describing: error))")
            return
        }
        #expect(cause as? ImageDataError == .notAnImage(byteCount: json.count))
        #expect(storage.allKeys == ["k"]) // intact bytes of another type are kept
        #expect(try storage.object(forKey: "k") == ann)
    }

    // MARK: Helpers

    /// A custom transformer built only from the public initializer: UTF-8 behind an "s:" prefix.
    private static let prefixedUTF8 = Transformer<String>(
        toData: { Data("s:\($0)".utf8) },
        fromData: { data in
            guard data.starts(with: Data("s:".utf8)) else { throw CustomFailure(code: 3) }
            return String(decoding: data.dropFirst(2), as: UTF8.self)
        }
    )

    /// A transformer whose functions always throw their own error.
    private static let failing = Transformer<String>(
        toData: { _ in throw CustomFailure(code: 1) },
        fromData: { _ in throw CustomFailure(code: 2) }
    )

    /// The smallest PNG that `ImageData` accepts: the signature and an IHDR chunk with its CRC.
    private static func pngHeader(width: UInt32, height: UInt32) -> Data {
        func bigEndian(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        // Type and data: width, height, bit depth 8, colour type 6 (RGBA), compression, filter, interlace.
        let chunk = Array("IHDR".utf8) + bigEndian(width) + bigEndian(height) + [8, 6, 0, 0, 0]
        return Data(signature + bigEndian(13) + chunk + bigEndian(CRC32.checksum(chunk)))
    }
}

/// An error of the test's own, to check it arrives unchanged inside a StorageError.
private struct CustomFailure: Error, Equatable {
    let code: Int
}

/// A one-key Codable value, whose JSON bytes do not depend on key order.
private struct Tag: Codable, Sendable, Equatable {
    var label: String
}
