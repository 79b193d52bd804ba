import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CStashAtomics

/// The store's shared file, `stash-shared`: 64 bytes that the writer and every reader in other
/// processes map (`MAP_SHARED`), so that a reader learns that the store changed with two loads from
/// memory instead of a system call (SQLite's `-shm` WAL index plays this part for its readers).
///
/// Layout, who writes each word, and the memory-ordering rule: Docs/Format.md, "Shared file".
///
/// Its `mmap` and `flock` are the engine's only system calls on a store's files outside ``FileIO`` and
/// ``FolderHandle``; a store in memory (``MemoryVolume``) has no shared file, as no other process sees it.
///
/// It is a hint, never the truth: a reader that finds it missing, torn, of another store or of an
/// older writer opens the store anew from its files (which are crash-consistent on their own). The
/// writer rewrites it in place when it opens (never replaces the file: readers keep their mapping of
/// this very inode) and holds an exclusive `flock` on it for its life, which tells a reader that the
/// writer keeping the folder's own lock speaks this protocol.
///
/// Memory ordering across processes: every field is loaded with acquire and stored with release
/// ordering (aligned 8-byte atomics, so no reader sees half a field). The writer stores the published
/// length only after its `pwrite` returned, with a release fence between (``publish(length:)``); a
/// reader that sees a new length issues an acquire fence before it reads the bytes (``acquire()``), so
/// it reads at least what was published. `Synchronization`'s atomics need macOS 15 / iOS 18 and its
/// `Atomic` cannot be placed on a mapping, so the loads, stores and fences are C11's, from the package's
/// own `CStashAtomics` target: the same on every supported version (on x86-64 they cost nothing beyond
/// keeping the compiler from reordering; on arm64 they are `ldar`, `stlr` and `dmb`).
package final class SharedState: @unchecked Sendable {
    // @unchecked Sendable: the mapping is written by the writer on its store's queue only, and read
    // with single aligned loads (see above).
    package static let name = "stash-shared"
    package static let length = 64
    /// What a writer grows the file to (the reader's 64 bytes, room to grow).
    static let writerLength = 128
    package static let magic = UInt64(littleEndian: Array("Stash sh".utf8).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) })
    package static let version: UInt64 = 1

    private enum Field: Int {
        case magic = 0, version = 8, store = 16, structure = 24, segment = 32, salt = 40, length = 48, operation = 56, writers = 64
    }

    /// What the file said at one moment: the structure counter and the active segment.
    package struct Structure: Equatable {
        package var counter: UInt64
        package var segment: UInt32
        var salt: UInt64
        /// The active segment's published length, read with the rest (a store that opens reads that
        /// segment no further, ``StoreOpening``).
        var length = 0
    }

    package let fd: Int32
    private let bytes: UnsafeMutableRawPointer
    let isWritable: Bool
    /// The byte this process's mark on the file holds (``markFollowed(_:)``); changed on the store's
    /// queue only.
    var markedByte: Int64?
    private init(fd: Int32, bytes: UnsafeMutableRawPointer, isWritable: Bool) {
        (self.fd, self.bytes, self.isWritable) = (fd, bytes, isWritable)
    }

    deinit {
        munmap(bytes, isWritable ? Self.writerLength : Self.length)
        FileIO.close(fd) // releases the writer's lock
    }

    /// The shared file's protection class, whatever the store's: every process of the store maps it,
    /// and touching a mapped page of a file the locked device keeps closed would kill the process
    /// instead of failing a call. It holds no user data (the store's identity, counters, a length).
    /// (The layer that applies a store's class to its folder keeps this file out of it.)
    #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
    package static let protection = FileProtectionType.none
    #endif

    // MARK: Writer

    /// The writer's side: opens (creating) the shared file of `folder`, takes its lock and maps it.
    /// The counter goes on from the one a previous writer left, so that no reader mistakes this
    /// writer's state for one it has seen.
    ///
    /// A writer of a store shared by several writer processes (`holdingLock` false) takes no lock
    /// on the file: it holds the folder's lock for each operation instead (``SharedWriter/beginOperation(_:)``).
    /// - Throws: ``StorageError/inUse(directory:)`` when another process holds the file's lock (a
    ///   reader probing it holds it for a moment only: waited for).
    static func openForWriting(in folder: FolderHandle, store: UInt64, holdingLock: Bool = true) throws -> SharedState {
        let fd: Int32
        do {
            fd = try folder.open(name, O_RDWR | O_CREAT | O_NONBLOCK, mode: 0o644)
        } catch where [.ELOOP, .EISDIR, .ENXIO].contains(where: { FileIO.isErrno(error, $0) }) {
            // A link or folder planted in its place: not the store's file, and never followed.
            throw StorageError.corrupted("\(folder.filePath(name)) is not a regular file; remove it to open the store for writing")
        }
        do {
            let info = try FileIO.status(fd, folder.filePath(name))
            guard info.st_mode & S_IFMT == S_IFREG else {
                throw StorageError.corrupted("\(folder.filePath(name)) is not a regular file; remove it to open the store for writing")
            }
            if holdingLock { try lock(fd, exclusive: true, path: folder.path) }
            #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            // Made in a folder of a stricter class, a new file has that class (see ``protection``).
            try? FileManager.default.setAttributes([.protectionKey: protection], ofItemAtPath: folder.filePath(name))
            #endif
            // Grown, never shrunk: a reader's mapping of a shorter file would fault past its end.
            if info.st_size < writerLength, FileIO.truncate(fd, to: writerLength) != 0 { throw FileIO.error("ftruncate", folder.filePath(name)) }
            guard let address = mmap(nil, writerLength, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), address != MAP_FAILED else {
                throw FileIO.error("mmap", folder.filePath(name))
            }
            let state = SharedState(fd: fd, bytes: address, isWritable: true)
            let previous = state.load(.magic) == magic && state.load(.version) == version ? state.load(.structure) : 0
            state.store(0, .writers) // no longer used (Docs/Format.md, "Shared file")
            state.store(magic, .magic)
            state.store(version, .version)
            state.store(store, .store)
            // A counter no reader has seen from a previous writer: the next one, or a random one
            // when the file was torn or new (a stale equal value would hide this writer's changes).
            state.store(previous != 0 ? previous &+ 1 : UInt64.random(in: 1...UInt64.max >> 1), .structure)
            return state
        } catch {
            FileIO.close(fd)
            throw error
        }
    }

    /// What a process checks before it believes the file again (Contract, "What a store trusts"):
    /// that it still has a name, and its change time. A writer or a reader that opens after the file
    /// was deleted (or another renamed over it) uses another file, and a process on the old one would
    /// never see their changes; a program that writes the file in place (older bytes put back, say)
    /// moves its change time, which nothing can set back. One `fstat` of the open file, cheaper than
    /// looking the name up (`fstatat`). Stores through a mapping move the change time too (at most once
    /// per page after the system wrote the page out): the process then opens the store anew, needlessly
    /// but correctly.
    package struct Seal: Equatable {
        package var seconds: Int
        package var nanoseconds: Int
    }

    /// The file's ``Seal`` now; nil once it has no name (or cannot be looked at).
    var seal: Seal? { Self.seal(of: fd) }

    /// Whether the folder's `stash-shared` is still this file: not deleted, nor replaced by another file.
    var isAtPath: Bool { seal != nil }

    /// The ``Seal`` of the open file `fd`; nil once it has no name.
    static func seal(of fd: Int32) -> Seal? {
        guard let info = FileIO.fileStatus(fd), info.st_nlink > 0 else { return nil }
        #if canImport(Darwin)
        return Seal(seconds: Int(info.st_ctimespec.tv_sec), nanoseconds: Int(info.st_ctimespec.tv_nsec))
        #else
        return Seal(seconds: Int(info.st_ctim.tv_sec), nanoseconds: Int(info.st_ctim.tv_nsec))
        #endif
    }

    /// Releases the writer's lock (the store is closed; the mapping goes with this object).
    package func unlock() {
        flock(fd, LOCK_UN)
    }

    /// Publishes that `length` bytes of the active segment are written: the one store an append adds.
    @inline(__always)
    package func publish(length: Int) {
        releaseFence()
        store(UInt64(length), .length)
    }

    /// Publishes a change to the store's files, with the active segment as it is now.
    func publishStructure(store id: UInt64, segment: UInt32, salt: UInt64, length: Int) {
        store(id, .store)
        store(UInt64(segment), .segment)
        store(salt, .salt)
        store(UInt64(length), .length)
        releaseFence()
        store(load(.structure) &+ 1, .structure)
    }

    /// Whether a writer of a store shared by several writer processes was inside an operation (it
    /// held the store's lock); one that finds this set when it takes the lock finds a process that
    /// was killed inside one, and opens the store anew from its files.
    var operationInProgress: Bool {
        get { load(.operation) != 0 }
        set {
            if !newValue { releaseFence() }
            store(newValue ? 1 : 0, .operation)
            if newValue { releaseFence() }
        }
    }

    // MARK: Reader

    /// The reader's side: maps the shared file of `folder` read-only; nil if there is none, or it is
    /// not a regular file of 64 bytes or more. Its content is not trusted here: a reader watches its
    /// counter (a writer that opens changes it, whatever the file held) and checks the rest when it
    /// follows the active segment (``structure``).
    static func openForReading(in folder: FolderHandle) -> SharedState? {
        guard let fd = try? folder.open(name, O_RDONLY | O_NONBLOCK) else { return nil }
        guard let info = FileIO.fileStatus(fd), info.st_mode & S_IFMT == S_IFREG, info.st_size >= length,
              let address = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0), address != MAP_FAILED else {
            FileIO.close(fd)
            return nil
        }
        return SharedState(fd: fd, bytes: address, isWritable: false)
    }

    /// Whether the file describes store `store` (a writer of this version wrote it).
    package func describes(store: UInt64) -> Bool {
        load(.magic) == Self.magic && load(.version) == Self.version && load(.store) == store
    }

    /// Tells the processes that still map this file (deleted or replaced under its name) that it is
    /// no longer the store's: its counter moves, so they take the store's lock and find it gone from its name.
    func retire() {
        guard isWritable else { return }
        store(load(.structure) &+ 1, .structure)
    }

    /// Whether a writer that speaks this protocol holds the file's lock now.
    var isHeldByWriter: Bool {
        while true {
            if flock(fd, LOCK_SH | LOCK_NB) == 0 {
                flock(fd, LOCK_UN)
                return false
            }
            if errno != EINTR { return errno == EWOULDBLOCK }
        }
    }

    /// The structure counter: a change means the reader opens the store anew.
    @inline(__always)
    package var counter: UInt64 { load(.structure) }

    /// The published length of the active segment.
    @inline(__always)
    var publishedLength: Int { Int(truncatingIfNeeded: min(load(.length), UInt64(Int.max))) }

    /// The counter and the active segment, read consistently (the counter the same before and after;
    /// a writer killed mid-update leaves them as they are, which a reopen tolerates).
    var structure: Structure {
        var before = load(.structure)
        for _ in 0..<16 {
            acquireFence()
            let read = Structure(counter: before, segment: UInt32(truncatingIfNeeded: load(.segment)), salt: load(.salt), length: publishedLength)
            acquireFence()
            let after = load(.structure)
            if after == before { return read }
            before = after
        }
        return Structure(counter: before, segment: 0, salt: 0)
    }

    /// Orders the reads of the files after the loads of the counter and length that announced them.
    @inline(__always)
    func acquire() { acquireFence() }

    // MARK: Memory

    @inline(__always)
    private func load(_ field: Field) -> UInt64 {
        UInt64(littleEndian: stash_load_acquire_u64(bytes + field.rawValue))
    }

    @inline(__always)
    private func store(_ value: UInt64, _ field: Field) {
        stash_store_release_u64(bytes + field.rawValue, value.littleEndian)
    }

    private static func lock(_ fd: Int32, exclusive: Bool, path: String) throws {
        for attempt in 0..<50 {
            if flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0 { return }
            if errno == EINTR { continue }
            guard errno == EWOULDBLOCK else { throw FileIO.error("flock", path + "/" + name) }
            if attempt < 49 { usleep(2_000) }
        }
        throw StorageError.inUse(directory: path)
    }
}

@inline(__always)
private func releaseFence() {
    stash_fence_release()
}

@inline(__always)
private func acquireFence() {
    stash_fence_acquire()
}
