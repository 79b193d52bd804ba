#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
package import Foundation

// The bracket under `update` and `transaction`: a read, the caller's code and a batch, as one step.

extension DiskEngine {
    /// Runs `body` and commits the changes it returns as one batch, in one turn of the queue: no other
    /// write to the store lands between what `body` read and the commit. That holds for every thread
    /// and every storage of the folder in this process (they share this engine and its queue), and,
    /// with writers in several processes, for the other processes too: one call on the queue holds
    /// the folder lock for its whole body (``run(readsWithoutLock:_:)``).
    ///
    /// A `body` that throws commits nothing. The batch is ``WritePath/writeBatch(_:now:maxSize:durable:storesValuesAsFiles:)``,
    /// so a kill at any moment leaves all of it or none; `onCommit` runs on the queue right after it
    /// (a memory layer remembers the values there). As for a batch, a durable bracket returns once the
    /// batch is on stable storage, and only then go the value files it replaced.
    /// - Throws: ``StorageError/reentrantCall(directory:)`` when called from inside another bracket's
    ///   user code on this store; what `body` throws; the batch's errors.
    package func bracket<Result>(now: Date, config: WriteSettings,
                         _ body: (DiskStore) throws -> (changes: [DiskBatchChange], result: Result),
                         onCommit: (DiskStore, Result, _ paths: [String?]) -> Void) throws -> Result {
        try checkOutsideUserCode()
        let (outcome, result) = try sync { store throws -> (WritePath.BatchOutcome, Result) in
            let (changes, result) = try body(store)
            // Nothing to write (a transaction that only read; a read-only one): no commit at all.
            guard !changes.isEmpty else { return (WritePath.BatchOutcome(), result) }
            let outcome = try store.writer.writeBatch(changes, now: now, maxSize: config.maxSize, durable: config.durable,
                                               storesValuesAsFiles: config.storesValuesAsFiles)
            onCommit(store, result, outcome.paths)
            return (outcome, result)
        }
        if let position = outcome.syncPosition { try groupCommit.waitUntilSynced(position) }
        for file in outcome.replaced { file.remove() }
        if let trimError = outcome.trimError { throw trimError }
        return result
    }

    /// The bracket of one key's `update`: as ``bracket(now:config:_:onCommit:)``, but what `body`
    /// returns is committed as one write of `key` (``WritePath/write(_:_:staged:expiry:now:maxSize:durable:storesValuesAsFiles:memoryLayer:putInMemory:)``,
    /// setObject's commit: one record, all or nothing, one change for observers) instead of a batch of
    /// one, whose change list and outcome arrays cost about a sixth of an update.
    ///
    /// Not generic, so the typed layer's generic code around it stays thin: `body` reads the current
    /// value, runs the app's change and returns the new bytes and expiry; `onCommit` runs on the queue
    /// right after the write, with the value file's path.
    package func bracketOne(_ key: String, now: Date, config: WriteSettings, _ body: (DiskStore) throws -> (data: Data, expiry: Date),
                    onCommit: (DiskStore, _ path: String?) -> Void) throws {
        try checkOutsideUserCode()
        let outcome = try sync { store throws -> WritePath.WriteOutcome in
            let (data, expiry) = try body(store)
            let outcome = try store.writer.write(key, data, expiry: expiry, now: now, maxSize: config.maxSize, durable: config.durable,
                                          storesValuesAsFiles: config.storesValuesAsFiles)
            onCommit(store, outcome.path)
            return outcome
        }
        if let position = outcome.syncPosition { try groupCommit.waitUntilSynced(position) }
        outcome.replaced?.remove()
        if let trimError = outcome.trimError { throw trimError }
    }

    /// Runs the app's code of an `update` or `transaction` (its body) inside a bracket, marked on this
    /// thread, so that a call on the store from inside it throws instead of writing beside the
    /// bracket (or waiting for itself).
    package func runUserCode<Result>(_ body: () throws -> Result) rethrows -> Result {
        try OpenBrackets.with(ObjectIdentifier(self), body)
    }

    /// Throws ``StorageError/reentrantCall(directory:)`` when the caller runs inside the app's code of
    /// an `update` or `transaction` of this store. One thread-local load when it does not.
    @inline(__always)
    package func checkOutsideUserCode() throws {
        if OpenBrackets.contains(ObjectIdentifier(self)) { throw StorageError.reentrantCall(directory: directory) }
    }
}

/// The engines whose bracket runs app code on this thread, innermost first, in a thread-local slot:
/// nil (the common case) when none does.
///
/// A thread-local mark rather than a flag on the engine: the app's code runs on the thread that runs
/// the bracket, and only a call from that thread is a call from inside it (another thread's call
/// waits for the queue, as it should).
package enum OpenBrackets {
    private final class Frame {
        package let engine: ObjectIdentifier
        package let outer: Frame?

        package init(engine: ObjectIdentifier, outer: Frame?) {
            self.engine = engine
            self.outer = outer
        }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Whether app code of a bracket of `engine` runs on this thread.
    @inline(__always)
    package static func contains(_ engine: ObjectIdentifier) -> Bool {
        guard let raw = pthread_getspecific(key) else { return false }
        var frame: Frame? = Unmanaged<Frame>.fromOpaque(raw).takeUnretainedValue()
        while let current = frame {
            if current.engine == engine { return true }
            frame = current.outer
        }
        return false
    }

    /// Runs `body` marked as app code of a bracket of `engine` on this thread.
    package static func with<Result>(_ engine: ObjectIdentifier, _ body: () throws -> Result) rethrows -> Result {
        let outerRaw = pthread_getspecific(key)
        let outer = outerRaw.map { Unmanaged<Frame>.fromOpaque($0).takeUnretainedValue() }
        let frame = Frame(engine: engine, outer: outer)
        pthread_setspecific(key, Unmanaged.passUnretained(frame).toOpaque())
        defer {
            pthread_setspecific(key, outerRaw)
            withExtendedLifetime(frame) {}
        }
        return try body()
    }
}
