public import Foundation
public import Stash

/// Every error StashHTTP throws. Cases with a cause carry it.
public enum HTTPCacheError: Error, Sendable, CustomStringConvertible {
    /// The network failed (no response arrived) and no stored response could stand in; `underlying`
    /// is the transport's error, such as a `URLError` for a refused connection.
    case network(underlying: any Error)
    /// The server answered with an error status. Attached to a ``ResponseSource/stale(because:)``
    /// response when a stored one was served instead.
    case serverError(statusCode: Int)
    /// ``HTTPCachePolicy/cacheOnly`` found nothing stored for the URL.
    case notCached(URL)
    /// A stored response exists but may not be served after the network failed: it says
    /// `must-revalidate` or `no-cache`, or is staler than the limit. `underlying` is the network failure.
    case staleNotAllowed(underlying: any Error)
    /// The request accepted a stale response without asking the network (policy
    /// ``HTTPCachePolicy/returnCacheElseLoad`` or ``HTTPCachePolicy/cacheOnly``, or ``HTTPRequestOptions/maxStale``).
    case staleAccepted
    /// A stale response was served at once under `stale-while-revalidate` while a refresh runs.
    case revalidationInProgress
    /// The request has no URL, or a URL without a scheme.
    case invalidRequest(String)
    /// The store failed; `underlying` is the `StorageError`.
    case storage(underlying: StorageError)
    /// The body did not decode to the requested type; `underlying` is the decoder's error.
    case decoding(underlying: any Error)

    /// A one-line explanation that includes the cause.
    public var description: String {
        switch self {
        case .network(let error): return "The network request failed: \(NetworkErrorText.clause(for: error))"
        case .serverError(let status): return "The server answered with status \(status)"
        case .notCached(let url): return "No stored response for \(url.absoluteString)"
        case .staleNotAllowed(let error): return "The stored response may not be served stale (the network failed: \(NetworkErrorText.clause(for: error)))"
        case .staleAccepted: return "A stale response was accepted without asking the network"
        case .revalidationInProgress: return "A stale response was served while it is being revalidated"
        case .invalidRequest(let reason): return "Invalid request: \(reason)"
        case .storage(let error): return "The response store failed: \(error)"
        case .decoding(let error): return "The body did not decode: \(error)"
        }
    }
}

extension HTTPCacheError: LocalizedError {
    /// The same text as ``description``, for `localizedDescription`.
    public var errorDescription: String? { description }
}
