import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Stash

/// Lets concurrent identical requests share one network exchange: the first starts it, the others
/// wait for its result. An exchange is cancelled only when every caller waiting for it is.
final class RequestCoalescer: Sendable {
    private struct Exchange {
        var task: Task<HTTPTransportResponse, any Error>
        var waiters: Int
        /// The cache key it answers for, so an invalidation can detach it.
        var cacheKey: CacheKey
    }

    private let exchanges = Locked<[String: Exchange]>([:])

    /// How many callers wait for the exchange under `key` (for tests).
    func waiters(for key: String) -> Int { exchanges.withLock { $0[key]?.waiters ?? 0 } }

    /// Runs `send` for `key`, or joins the exchange already running for it.
    /// - Parameters:
    ///   - key: What makes two requests identical.
    ///   - cacheKey: The cache key the exchange answers for.
    ///   - send: The exchange, run once for all callers that arrive while it runs.
    /// - Returns: The exchange's response, the same for every caller.
    /// - Throws: The exchange's error, or `CancellationError` semantics of the transport when every caller cancelled.
    func run(_ key: String, cacheKey: CacheKey,
             _ send: @escaping @Sendable () async throws -> HTTPTransportResponse) async throws -> HTTPTransportResponse {
        let task = exchanges.withLock { exchanges -> Task<HTTPTransportResponse, any Error> in
            if var running = exchanges[key] {
                running.waiters += 1
                exchanges[key] = running
                return running.task
            }
            let task = Task { try await send() }
            exchanges[key] = Exchange(task: task, waiters: 1, cacheKey: cacheKey)
            return task
        }
        return try await withTaskCancellationHandler {
            let result = await task.result
            // The first caller to see the result retires the exchange, so later requests start afresh.
            exchanges.withLock { exchanges in
                if exchanges[key]?.task == task { exchanges[key] = nil }
            }
            return try result.get()
        } onCancel: {
            let abandoned = exchanges.withLock { exchanges -> Bool in
                guard var running = exchanges[key], running.task == task else { return false }
                running.waiters -= 1
                exchanges[key] = running.waiters == 0 ? nil : running
                return running.waiters == 0
            }
            if abandoned { task.cancel() }
        }
    }

    /// Lets later requests start an exchange of their own instead of joining one whose key
    /// `predicate` selects: an invalidation overtook it, so its answer may predate the change. The
    /// callers already waiting still get its answer (and do not store it, see ``InFlightExchanges``).
    func detach(where predicate: (CacheKey) -> Bool) {
        exchanges.withLock { exchanges in
            exchanges = exchanges.filter { !predicate($0.value.cacheKey) }
        }
    }

    /// The key of a request: the cache key it answers to (namespace, method, URL, variant) and every
    /// header field it sends, so requests with other credentials or conditions never share.
    static func key(for request: URLRequest, cacheKey: CacheKey) -> String {
        let fields = (request.allHTTPHeaderFields ?? [:]).map { ($0.key.lowercased(), $0.value) }.sorted { $0 < $1 }
        return ([cacheKey.rawValue] + fields.map { "\($0.0): \($0.1)" }).joined(separator: "\n")
    }
}
