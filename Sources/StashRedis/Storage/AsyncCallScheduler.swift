import Foundation
import Stash

/// Runs a Redis store's asynchronous calls concurrently, as many at once as its pool has connections,
/// while keeping the submission order of calls that conflict.
///
/// Two calls conflict when one of them changes a key the other touches: a mutation of `k` and any
/// call on `k`, and a call on every key (`removeAll`; `allKeys` against mutations) and any call it
/// overlaps. A call starts once no earlier conflicting call is waiting or running; others pass it.
/// So a read submitted after a write of its key sees the write, and independent callers (other keys,
/// or reads of one key) never wait behind one another's round trips. Calls beyond the pool's size
/// wait here, in order, holding no thread.
///
/// A call blocks its thread for a round trip, so it runs on a lane of its own (a serial queue, which
/// libdispatch serves with a thread of its own whenever it has work), not on the global queue: on
/// Linux that queue has about one thread per core, and calls blocked on a stalled server would keep
/// every other caller (and every completion handler in the process) waiting. A call frees its slot
/// (`done`) before its completion handler runs, and its lane once the handler returns: the handler
/// runs on the lane without another thread hop, and one that blocks holds up no other call (the next
/// call takes another lane, made when none is free).
final class AsyncCallScheduler: Sendable {
    private struct Job {
        let id: UInt64
        let call: AsyncCall
        var lane: Int
        let run: @Sendable (_ done: @escaping @Sendable () -> Void) -> Void
    }

    private struct State {
        var nextID: UInt64 = 0
        /// Submitted, not started, in submission order.
        var waiting: [Job] = []
        var running: [UInt64: AsyncCall] = [:]
        /// Every lane made so far, and those neither a call nor its completion handler uses.
        var lanes: [DispatchQueue] = []
        var freeLanes: [Int] = []
        /// Mutations submitted and not finished, per key; and those on every key.
        var mutations: [String: Int] = [:]
        var mutationsOfAll = 0
    }

    private let state = Locked(State())
    private let limit: Int

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Runs `work` on a lane once the call may start; `work` calls `done` when the call is finished
    /// (its completion handler may run after that, still inside `work`).
    func submit(_ call: AsyncCall, _ work: @escaping @Sendable (_ done: @escaping @Sendable () -> Void) -> Void) {
        let ready: [Job] = state.withLock { state in
            state.nextID += 1
            let id = state.nextID
            if call.kind == .mutation {
                if let key = call.key { state.mutations[key, default: 0] += 1 } else { state.mutationsOfAll += 1 }
            }
            state.waiting.append(Job(id: id, call: call, lane: -1, run: work))
            return startable(&state)
        }
        ready.forEach(start)
    }

    /// Whether a read of `key` may be answered now without overtaking a mutation submitted earlier.
    func mayAnswerAtOnce(_ key: String) -> Bool {
        state.withLock { $0.mutationsOfAll == 0 && $0.mutations[key] == nil }
    }

    private func finish(_ job: Job) {
        let (id, call) = (job.id, job.call)
        let ready: [Job] = state.withLock { state in
            state.running[id] = nil
            if call.kind == .mutation {
                if let key = call.key {
                    state.mutations[key, default: 1] -= 1
                    if state.mutations[key] == 0 { state.mutations[key] = nil }
                } else {
                    state.mutationsOfAll -= 1
                }
            }
            return startable(&state)
        }
        ready.forEach(start)
    }

    private func start(_ job: Job) {
        let lane = state.withLock { $0.lanes[job.lane] }
        lane.async {
            job.run { self.finish(job) }
            self.state.withLock { $0.freeLanes.append(job.lane) }
        }
    }

    /// Takes the jobs that may start now out of `waiting` (in order, up to the limit) into `running`.
    private func startable(_ state: inout State) -> [Job] {
        guard state.running.count < limit, !state.waiting.isEmpty else { return [] }
        var blockers = Blockers()
        for call in state.running.values { blockers.add(call) }
        var ready: [Job] = []
        var kept: [Job] = []
        kept.reserveCapacity(state.waiting.count)
        for (index, job) in state.waiting.enumerated() {
            guard state.running.count < limit else {
                kept += state.waiting[index...] // full: the rest waits as it is
                break
            }
            if !blockers.conflicts(with: job.call) {
                state.running[job.id] = job.call
                var job = job
                if let free = state.freeLanes.popLast() {
                    job.lane = free
                } else {
                    job.lane = state.lanes.count
                    state.lanes.append(DispatchQueue(label: "StashRedis.async.\(job.lane)"))
                }
                ready.append(job)
            } else {
                kept.append(job)
            }
            blockers.add(job.call)
        }
        state.waiting = kept
        return ready
    }

    /// What the calls ahead of a waiting call touch, summed up so each check is O(1).
    private struct Blockers {
        var readKeys: Set<String> = []
        var mutatedKeys: Set<String> = []
        var anyCall = false
        var anyMutation = false
        var readsAll = false
        var mutatesAll = false

        mutating func add(_ call: AsyncCall) {
            anyCall = true
            switch (call.kind, call.key) {
            case (.read, let key?): readKeys.insert(key)
            case (.mutation, let key?): mutatedKeys.insert(key); anyMutation = true
            case (.read, nil): readsAll = true
            case (.mutation, nil): mutatesAll = true; anyMutation = true
            }
        }

        func conflicts(with call: AsyncCall) -> Bool {
            if mutatesAll { return true }
            switch (call.kind, call.key) {
            case (.read, let key?): return mutatedKeys.contains(key)
            case (.mutation, let key?): return readsAll || readKeys.contains(key) || mutatedKeys.contains(key)
            case (.read, nil): return anyMutation
            case (.mutation, nil): return anyCall
            }
        }
    }
}
