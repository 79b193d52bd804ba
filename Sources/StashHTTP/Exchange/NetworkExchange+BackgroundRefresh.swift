import Foundation
import Stash

/// `stale-while-revalidate` (RFC 5861 §3): the stale response is served at once and revalidated in
/// the background; ``HTTPCache/responses(for:options:)`` delivers the refreshed one too.
extension NetworkExchange {
    /// Starts revalidating `lookup`'s stored response in the background; the refresh stores its
    /// result and is tracked until it ends, so ``waitForBackgroundRefreshes()`` can await it.
    func startRefresh(_ context: RequestContext, _ lookup: Lookup) -> Task<CachedResponse, any Error> {
        let refresh = Task {
            try await load(context, lookup, validating: lookup.stored, fallingBack: false)
        }
        let id = UUID()
        let refreshes = refreshes
        // Registered under the lock that its own removal takes, so a refresh that ends at once
        // cannot be removed before it is registered (and then waited for forever).
        refreshes.withLock { running in
            running[id] = Task {
                _ = try? await refresh.value
                _ = refreshes.withLock { $0.removeValue(forKey: id) }
            }
        }
        return refresh
    }

    /// Waits until every refresh started so far has finished.
    func waitForBackgroundRefreshes() async {
        while let next = refreshes.withLock({ $0.values.first }) {
            await next.value
        }
    }
}
