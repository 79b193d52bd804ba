import Foundation
import Testing
import Stash
@testable import StashTorture // TortureValue and hexKey: the values and key spelling of `StashTorture attack`
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Two writer processes agree: canonically equivalent spellings are one key, `maxSize` and
/// `removeExpiredObjects` in one act on what the other wrote, the async API and the memory layer see
/// the other's changes, and a process that opens and closes over and over beside a busy writer never
/// fails a call.
@Suite("Writers in several processes agree on keys, limits, expiry and values", .serialized)
struct SharedWriterAgreementTests: OtherWriterScenario {
    @Test("canonically equivalent keys across processes: a key written in NFC by one process is read, overwritten and removed in NFD by the other, through replay, reopen and a large value")
    func canonicallyEquivalentKeys() throws {
        let folder = TemporaryDirectory()
        let storage = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
        let other = try attacker(folder, tag: 1)
        defer { other.end() }
        let pairs = [("caf\u{E9}", "cafe\u{301}"), ("\u{D55C}", "\u{1112}\u{1161}\u{11AB}"), ("\u{C5}ngstr\u{F6}m", "A\u{30A}ngstro\u{308}m")]
        for (number, (nfc, nfd)) in pairs.enumerated() {
            try storage.setObject(value(nfc, UInt64(number + 1), size: number == 0 ? 300_000 : 100), forKey: nfc)
            #expect(other.ask("get \(hexKey(nfd))") == "got \(hexKey(nfd)) \(number + 1)", "the other process missed \(nfc) under \(Array(nfd.unicodeScalars))")
            let wrote = other.ask("set \(hexKey(nfd)) 50")
            let written = try #require(wrote.split(separator: " ").last.flatMap { UInt64($0) }, "\(wrote)")
            // The value names the key it was written under (NFD bytes): this process reads it under NFC.
            let read = try storage.object(forKey: nfc)
            #expect(TortureValue.sequence(of: read, key: nfd) == written, "\(nfc) did not read the other's overwrite")
        }
        #expect(storage.allKeys.count == pairs.count, "\(storage.allKeys.map { Array($0.unicodeScalars) })")
        #expect(other.ask("clear") == "cleared") // this process opens the store anew from its files
        try storage.setObject(value(pairs[0].0, 10), forKey: pairs[0].0)
        #expect(other.ask("remove \(hexKey(pairs[0].1))") == "removed \(hexKey(pairs[0].1))")
        #expect(throws: StorageError.notFound) { try storage.object(forKey: pairs[0].0) }
        #expect(storage.allKeys.isEmpty)
    }

    @Test("a process with maxSize trims values another process without one wrote; both then agree on what is left")
    func trimmingBesideAnotherWriter() throws {
        let folder = TemporaryDirectory()
        var config = folder.diskConfig(sharedWriters: true)
        config.maxSize = 200_000
        let storage = try DiskStorage(config: config, transformer: TransformerFactory.forData())
        let other = try attacker(folder, tag: 1)
        defer { other.end() }
        for index in 0..<20 { #expect(other.ask("set \(hexKey("o\(index)")) 50000").hasPrefix("wrote")) }
        #expect(other.ask("count") == "count 20")
        try storage.setObject(value("mine", 1, size: 50_000), forKey: "mine")
        #expect(storage.totalSize <= 200_000)
        let left = Set(storage.allKeys)
        #expect(left.contains("mine") && left.count <= 4, "\(left)")
        #expect(other.ask("count") == "count \(left.count)")
        for index in 0..<20 {
            let key = "o\(index)"
            #expect(other.ask("get \(hexKey(key))").hasSuffix(left.contains(key) ? "\(1_000_000_001 + index)" : "missing"))
        }
    }

    @Test("removeExpiredObjects in one process removes what another process wrote to expire, and keeps the rest")
    func expiryAcrossProcesses() throws {
        let folder = TemporaryDirectory()
        let later = Date().addingTimeInterval(7_200)
        let storage = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData(), now: { later })
        let other = try attacker(folder, tag: 1)
        defer { other.end() }
        #expect(other.ask("expiring \(hexKey("soon")) 10 3600").hasPrefix("wrote"))
        #expect(other.ask("expiring \(hexKey("soonbig")) 300000 3600").hasPrefix("wrote"))
        #expect(other.ask("set \(hexKey("never")) 10").hasPrefix("wrote"))
        #expect(try storage.isExpiredObject(forKey: "soon"))
        try storage.removeExpiredObjects()
        #expect(Set(storage.allKeys) == ["never"])
        #expect(other.ask("get \(hexKey("soon"))") == "got \(hexKey("soon")) missing")
        #expect(other.ask("get \(hexKey("soonbig"))") == "got \(hexKey("soonbig")) missing")
        #expect(other.ask("count") == "count 1")
    }

    @Test("the async API and the memory layer of a Storage see another process's overwrites, large values and removals")
    func asyncAndMemoryAcrossProcesses() async throws {
        let folder = TemporaryDirectory()
        let storage = try Storage(diskConfig: folder.diskConfig(sharedWriters: true), memoryConfig: MemoryConfig(countLimit: 100), transformer: TransformerFactory.forData())
        let other = try attacker(folder, tag: 1, extra: ["--memory"])
        defer { other.end() }
        for step in 1...60 {
            let key = "k\(step % 5)"
            try await storage.async.setObject(value(key, UInt64(step)), forKey: key)
            #expect(sequence(try await storage.async.object(forKey: key), key) == UInt64(step)) // now in memory
            #expect(other.ask("get \(hexKey(key))") == "got \(hexKey(key)) \(step)")
            if step % 4 == 0 {
                #expect(other.ask("remove \(hexKey(key))") == "removed \(hexKey(key))")
                #expect(try await storage.async.existsObject(forKey: key) == false, "step \(step): memory kept a removed \(key)")
                continue
            }
            let answer = other.ask("set \(hexKey(key)) \(step % 10 == 0 ? 300_000 : 100)")
            let written = try #require(answer.split(separator: " ").last.flatMap { UInt64($0) }, "\(answer)")
            #expect(sequence(try await storage.async.object(forKey: key), key) == written, "step \(step): a stale \(key)")
            #expect(sequence(try storage.entry(forKey: key).object, key) == written)
        }
    }

    @Test("a process opens, writes and closes its storage 40 times while another process writes without pause: no call fails, every value is whole")
    func closingWhileTheOtherWrites() throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        let writer = try ChildProcess(try executable("StashTorture"), ["share", store, "--seed", "3", "--tag", "1", "--private", "a"], input: .held)
        let watchdog = Watchdog(writer, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        try #require(writer.waitForOutput(), "\(writer.errors)")
        for round in 1...40 {
            let storage = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
            try storage.setObject(value("mine\(round % 4)", UInt64(round), size: round % 10 == 0 ? 300_000 : 200), forKey: "mine\(round % 4)")
            #expect(sequence(try? storage.object(forKey: "mine\(round % 4)"), "mine\(round % 4)") == UInt64(round))
            _ = storage.allKeys
        }
        writer.closeInput()
        #expect(writer.wait(upTo: TestDeadline.long) && writer.status == 0, "\(writer.errors)")
        let final = try finalState(folder, releasing: nil)
        #expect(final.wrong.isEmpty, "\(final.wrong)")
        for index in 0..<4 { #expect(final.sequences["mine\(index)"] == UInt64(36 + (index == 0 ? 4 : index))) }
    }
}
