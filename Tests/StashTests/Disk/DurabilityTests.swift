import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// `DiskConfig.durable`: what reaches stable storage, and in which order.
///
/// A power cut cannot be simulated in a test, so the strace tests check the system calls themselves:
/// a durable write appends its record to the segment and flushes it before returning; a large value's
/// file is flushed, then the folder (a new file's name is not durable with its data), and only then is
/// the record that makes the value live appended and flushed; a default write calls no `fsync` at all
/// (issue 4: Foundation's writes `fsync` every time on Linux).
@Suite("Durability")
struct DurabilityTests {
    @Test("a durable store round-trips values through Storage and DiskStorage, also after a reopen")
    func durableRoundTrip() throws {
        let directory = TemporaryDirectory()
        var config = directory.diskConfig()
        config.durable = true
        do {
            let storage = try Storage<Data>(diskConfig: config, transformer: TransformerFactory.forData())
            try storage.setObject(Data("staged".utf8), forKey: "a") // written off the queue, then committed
            let disk = try DiskStorage(config: config, transformer: TransformerFactory.forData())
            try disk.setObject(Data("direct".utf8), forKey: "b")
            try disk.setObject(Data("again".utf8), forKey: "a")
        }
        let reopened = try DiskStorage(config: config, transformer: TransformerFactory.forData())
        #expect(try reopened.object(forKey: "a") == Data("again".utf8))
        #expect(try reopened.object(forKey: "b") == Data("direct".utf8))
        #expect(reopened.recoveryIssues.isEmpty)
    }

    @Test("a durable write appends its record to the segment, then flushes the segment before it returns",
          .enabled(if: Strace.isAvailable))
    func durableWriteOrder() throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        try #require(try traceStash(["set", "--durable", "key", "value"], store: store, in: folder).status == 0)
        let run = try traceStash(["set", "--durable", "key", "newer value"], store: store, in: folder)
        #expect(run.status == 0)
        let calls = run.calls
        let resolved = Self.resolved(store) // strace names files by their real path
        let append = try #require(calls.firstIndex { $0.isWrite && Self.isSegment($0.path, in: resolved) },
                                  "no record appended to a segment: \(calls)")
        #expect(calls[append...].contains { $0.isSync && $0.path == calls[append].path }, "the segment was not flushed after the append: \(calls)")
    }

    @Test("a durable large write flushes the value file, then the folder, then appends and flushes the record naming it",
          .enabled(if: Strace.isAvailable))
    func durableLargeWriteOrder() throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        let input = folder.url.appendingPathComponent("large-value")
        try Data(repeating: 0x61, count: ValueFiles.threshold + 1).write(to: input)
        try #require(try traceStash(["set", "--durable", "key", "value"], store: store, in: folder).status == 0)
        let run = try traceStash(["set", "--durable", "key"], store: store, in: folder, input: input.path)
        #expect(run.status == 0)
        let calls = run.calls
        let resolved = Self.resolved(store)
        let valueSync = try #require(calls.firstIndex { $0.isSync && Self.isValueFile($0.path, in: resolved) },
                                     "the value file was not fsynced: \(calls)")
        let folderSync = try #require(calls[valueSync...].firstIndex { $0.isSync && $0.path == resolved },
                                      "the folder was not fsynced after the value file: \(calls)")
        let append = try #require(calls[folderSync...].firstIndex { $0.isWrite && Self.isSegment($0.path, in: resolved) },
                                  "no record appended after the folder's fsync: \(calls)")
        #expect(calls[append...].contains { $0.isSync && $0.path == calls[append].path }, "the segment was not flushed: \(calls)")
        #expect(!calls[..<folderSync].contains { $0.isWrite && Self.isSegment($0.path, in: resolved) },
                "the record was appended before the value file's name was durable: \(calls)")
    }

    @Test("a durable write into a segment a write without durable started flushes the folder before its record counts",
          .enabled(if: Strace.isAvailable))
    func durableWriteIntoSegmentStartedWithoutDurable() throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        try #require(try traceStash(["set", "key", "value"], store: store, in: folder).status == 0) // its segment's name never flushed
        let run = try traceStash(["set", "--durable", "key", "newer value"], store: store, in: folder)
        #expect(run.status == 0)
        let resolved = Self.resolved(store)
        let append = try #require(run.calls.firstIndex { $0.isWrite && Self.isSegment($0.path, in: resolved) }, "\(run.calls)")
        #expect(run.calls[..<append].contains { $0.isSync && $0.path == resolved },
                "the folder (and so the segment's name) was not flushed before the durable record: \(run.calls)")
    }

    @Test("a default write appends to the segment and calls no fsync", .enabled(if: Strace.isAvailable))
    func defaultWriteDoesNotSync() throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        try #require(try traceStash(["set", "key", "value"], store: store, in: folder).status == 0) // creates the store
        let run = try traceStash(["set", "key", "newer value"], store: store, in: folder)
        #expect(run.status == 0)
        #expect(run.calls.contains { $0.isWrite && Self.isSegment($0.path, in: Self.resolved(store)) }, "\(run.calls)")
        #expect(!run.calls.contains { $0.isSync }, "\(run.calls)")
    }

    @Test("a store that closes after a change writes its key directory without a flush: derived data, which a power cut only makes a replay",
          .enabled(if: Strace.isAvailable))
    func directoryAtCloseIsNotFlushed() throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        do {
            // 1.2 MiB of records: the store keeps a key directory (from 1 MiB).
            let storage = try openDataStore(store)
            for index in 0..<300 { try storage.setObject(Data(repeating: UInt8(index & 0xFF), count: 4_096), forKey: "key \(index)") }
        }
        let run = try traceStash(["set", "key 1", "newer value"], store: store, in: folder)
        #expect(run.status == 0)
        let directory = Self.resolved(store) + "/" + StoreFolder.directoryName
        #expect(run.calls.contains { $0.isWrite && $0.path == directory + ".tmp" }, "the close wrote no directory: \(run.calls)")
        #expect(!run.calls.contains { $0.isSync }, "\(run.calls)")
        let reopened = try openDataStore(store)
        #expect(try reopened.object(forKey: "key 1") == Data("newer value".utf8))
        #expect(reopened.allKeys.count == 300)
    }

    // MARK: Tracing `stash`

    private struct Call: CustomStringConvertible {
        let name: String
        /// The file the call's descriptor names (strace `-y`).
        let path: String
        var description: String { "\(name)(\(path))" }
        var isWrite: Bool { name == "write" || name == "pwrite64" || name == "pwrite" || name == "writev" || name == "pwritev" }
        var isSync: Bool { name == "fsync" || name == "fdatasync" }
    }

    /// Runs `stash --dir store arguments` under strace; returns its status and its calls of fsync,
    /// fdatasync and write on descriptors, in order.
    private func traceStash(_ arguments: [String], store: String, in folder: TemporaryDirectory,
                            input: String? = nil) throws -> (status: Int32, calls: [Call]) {
        let strace = try #require(Strace.executable, "strace is needed (STASH_REQUIRE_STRACE is set): apt-get install strace")
        let stash = try #require(builtExecutable(named: "stash"), "the stash executable was not built next to the tests")
        let trace = folder.url.appendingPathComponent("trace-\(UUID().uuidString)")
        // With `input`, a shell gives stash that file as its stdin (a value too large for an argument).
        let command = input == nil ? [stash.path] : ["/bin/sh", "-c", "exec \"$0\" \"$@\" < \"$STASH_INPUT\"", stash.path]
        let child = try ChildProcess(strace, ["-f", "-qq", "-y", "-o", trace.path,
                                              "-e", "trace=?fsync,fdatasync,write,pwrite64,writev,pwritev",
                                              "-E", "STASH_INPUT=\(input ?? "")", "--"] + command + ["--dir", store] + arguments)
        try #require(child.wait(upTo: TestDeadline.long), "stash did not finish")
        let text = try String(contentsOf: trace, encoding: .utf8)
        // `1234 fsync(5</tmp/…/store>) = 0`: the pid, the call, its descriptor and the file it names.
        let calls = text.split(separator: "\n").compactMap { line -> Call? in
            guard let open = line.firstIndex(of: "("), let start = line[open...].firstIndex(of: "<"),
                  let end = line[start...].firstIndex(of: ">") else { return nil }
            let name = line[..<open].split(separator: " ").last.map(String.init) ?? ""
            return Call(name: name, path: String(line[line.index(after: start)..<end]))
        }
        return (child.status, calls)
    }

    /// `path` with symbolic links resolved (a temporary folder may sit behind one).
    private static func resolved(_ path: String) -> String {
        URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    }

    /// Whether `path` is a segment file (`<8 hex digits>.segment`) of the store at `store`.
    private static func isSegment(_ path: String, in store: String) -> Bool {
        (path as NSString).deletingLastPathComponent == store && SegmentFile.id(ofName: (path as NSString).lastPathComponent) != nil
    }

    /// Whether `path` is a value file (`<16 hex digits>.value`) of the store at `store`.
    private static func isValueFile(_ path: String, in store: String) -> Bool {
        (path as NSString).deletingLastPathComponent == store && DiskStore.isValueFileName((path as NSString).lastPathComponent)
    }
}
