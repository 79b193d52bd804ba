import Foundation
import Stash

/// The exchanges with the server that may store what they receive, so that an invalidation can
/// overtake them.
///
/// A GET sent before a POST and answered after it carries the state from before the POST; stored,
/// it would undo the POST's invalidation for its whole freshness lifetime (pull-to-refresh
/// overlapping a save). So every exchange takes a ``Ticket`` before it sends, an invalidation marks
/// the tickets of the URLs it removes before it removes them, and a marked exchange stores nothing.
/// The check and the write are not one step, so the ticket also records what its exchange stored,
/// and an exchange that finds itself marked when it ends removes that again: whichever of the
/// write and the invalidation's removal comes last, nothing from before the invalidation remains.
final class InFlightExchanges: Sendable {
    /// The ticket of the exchange the current task runs, read where responses are stored.
    @TaskLocal static var current: Ticket?

    /// One exchange in flight: the key it answers for, whether an invalidation overtook it, and the
    /// keys it stored.
    final class Ticket: Sendable {
        /// The namespace, partition and URL the exchange answers for.
        let key: CacheKey
        private let state = Locked<(invalidated: Bool, stored: [String])>((false, []))

        init(key: CacheKey) {
            self.key = key
        }

        /// Records that the exchange is about to store under `key`; false (store nothing) once
        /// an invalidation overtook the exchange.
        func recordStore(of key: CacheKey) -> Bool {
            state.withLock { state in
                guard !state.invalidated else { return false }
                state.stored.append(key.rawValue)
                return true
            }
        }

        fileprivate func invalidate() {
            state.withLock { $0.invalidated = true }
        }

        /// Whether an invalidation overtook the exchange, and what it stored.
        fileprivate var outcome: (invalidated: Bool, stored: [String]) { state.withLock { $0 } }
    }

    private let tickets = Locked<[ObjectIdentifier: Ticket]>([:])

    /// Registers an exchange for `key`, before its request is sent.
    func begin(_ key: CacheKey) -> Ticket {
        let ticket = Ticket(key: key)
        tickets.withLock { $0[ObjectIdentifier(ticket)] = ticket }
        return ticket
    }

    /// Ends an exchange; returns the keys it stored that an invalidation overtook (to remove again).
    func end(_ ticket: Ticket) -> [String] {
        tickets.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(ticket)) }
        let outcome = ticket.outcome
        return outcome.invalidated ? outcome.stored : []
    }

    /// Marks every exchange in flight whose key `predicate` selects.
    func invalidate(where predicate: (CacheKey) -> Bool) {
        let overtaken = tickets.withLock { $0.values.filter { predicate($0.key) } }
        for ticket in overtaken { ticket.invalidate() }
    }

    /// How many exchanges are in flight (for tests).
    var count: Int { tickets.withLock { $0.count } }
}
