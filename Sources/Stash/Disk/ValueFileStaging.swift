import Foundation

/// A value file written before its write reaches the store's queue: the generation it was given
/// and where it is.
struct StagedValue: Sendable {
    let generation: UInt64
    let path: String
    let size: Int
    let durable: Bool
}

/// Hands out value file generations, and writes value files off the store's queue.
///
/// A value file is invisible until the journal record that names it is appended (on the queue),
/// so the file itself — creating it and writing its bytes, most of the cost of a write — can be
/// done by the writing thread beforehand, in parallel with other threads' writes (DESIGN
/// "Performance": two threads must not get fewer writes through than one). Linearizability is
/// untouched: the write takes effect at its journal record and index update on the queue.
///
/// The one thing that must not happen is the orphan sweep (on the queue) deleting a file whose
/// record is still to come. So each generation is registered as in flight from the moment it is
/// handed out until its write is done with it, and the sweep skips files whose generation was in
/// flight or not yet handed out when it started (``sweepGuard()``).
struct ValueFileStaging: Sendable {
    private struct State {
        var next: UInt64 = 1
        var inFlight: Set<UInt64> = []
    }

    let directory: String
    private let state = Locked(State())

    init(directory: String) {
        self.directory = directory
    }

    /// The path of `key`'s value file of `generation`.
    func path(forKey key: String, generation: UInt64) -> String {
        DiskStore.valueFilePath(in: directory, forKey: key, generation: generation)
    }

    /// A new generation, not in flight (for writes made on the queue, where no sweep can run meanwhile).
    func allocate() -> UInt64 {
        state.withLock { state in
            defer { state.next += 1 }
            return state.next
        }
    }

    /// Makes every later generation larger than `generation` (replaying the journal; a file seen by a sweep).
    func raise(above generation: UInt64) {
        state.withLock { $0.next = max($0.next, generation &+ 1) }
    }

    /// Writes `data` as `key`'s next value file, from any thread; nil if that failed (the write is
    /// then made on the queue, which reports the error). Pass the result to the store's write,
    /// which ends it (``finish(_:)``).
    func stage(_ key: String, _ data: Data, durable: Bool) -> StagedValue? {
        let generation = state.withLock { state in
            defer { state.next += 1 }
            state.inFlight.insert(state.next)
            return state.next
        }
        let staged = StagedValue(generation: generation, path: path(forKey: key, generation: generation),
                                 size: data.count, durable: durable)
        do {
            try FileIO.writeValueFile(staged.path, in: directory, data, durable: durable)
            return staged
        } catch {
            // writeFile removes what it created when a write fails; nothing else refers to it.
            finish(staged)
            return nil
        }
    }

    /// Ends a staged write: its file is now named by a record, or was removed, or is an orphan.
    func finish(_ staged: StagedValue) {
        _ = state.withLock { $0.inFlight.remove(staged.generation) }
    }

    /// What the sweep must leave alone: files of generations in flight, or handed out after this call.
    func sweepGuard() -> (inFlight: Set<UInt64>, next: UInt64) {
        state.withLock { ($0.inFlight, $0.next) }
    }
}
