#if canImport(FoundationNetworking)
import Foundation
public import FoundationNetworking
#else
public import Foundation
#endif

extension HTTPCache {
    /// Answers `request` like ``response(for:options:)-(URLRequest,_)``, and when a stale response was
    /// served under `stale-while-revalidate` (RFC 5861 §3), also delivers the refreshed one.
    ///
    /// ```swift
    /// for try await response in cache.responses(for: request) {
    ///     show(try response.decode(Feed.self))   // the stale feed at once, then the new one
    /// }
    /// ```
    /// - Parameters:
    ///   - request: The request.
    ///   - options: Policy, namespace and freshness overrides.
    /// - Returns: A stream of one response, or two when a background refresh ran; it finishes after
    ///   the last. It throws the errors of ``response(for:options:)-(URLRequest,_)``, and the refresh's
    ///   error when the background refresh fails (after the stale response was delivered).
    public func responses(for request: URLRequest, options: HTTPRequestOptions = HTTPRequestOptions())
        -> AsyncThrowingStream<CachedResponse, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    let outcome = try await responder.perform(request, options: options)
                    continuation.yield(outcome.response)
                    if let refresh = outcome.refresh { continuation.yield(try await refresh.value) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Waits until every `stale-while-revalidate` refresh started so far has finished.
    public func waitForBackgroundRefreshes() async {
        await network.waitForBackgroundRefreshes()
    }
}
