public import Foundation
import Stash

/// Which stored responses a maintenance call removes.
public enum HTTPCacheSelection: Sendable, Hashable {
    /// Every response the HTTP cache stored (other keys in a shared store are left alone).
    case all
    /// Every response of one namespace.
    case namespace(String)
    /// Every response (all methods and `Vary` variants) for one URL, in one namespace or, when
    /// nil, in all.
    case url(URL, namespace: String? = nil)
    /// Every response whose normalized URL starts with the normalized `prefix` (scheme and host
    /// lower-cased, default port dropped), in one namespace or, when nil, in all.
    case urlPrefix(URL, namespace: String? = nil)
    /// Every response received (or last revalidated) before the date.
    case receivedBefore(Date)
}

extension HTTPCache {
    /// Removes stored responses.
    ///
    /// A request in flight for a removed URL (every selection but ``HTTPCacheSelection/receivedBefore(_:)``)
    /// does not store its answer, so a sign-out that clears a namespace is not undone by a response
    /// that was still arriving.
    ///
    /// ```swift
    /// try await cache.removeResponses(.namespace("staging"))
    /// try await cache.removeResponses(.urlPrefix(URL(string: "https://api.example.com/v1/users/")!))
    /// try await cache.removeResponses(.receivedBefore(Date().addingTimeInterval(-7 * 86_400)))
    /// ```
    /// - Parameter selection: Which responses.
    /// - Throws: ``HTTPCacheError/storage(underlying:)`` when the store fails.
    /// - Complexity: O(n) in the number of stored keys; ``HTTPCacheSelection/receivedBefore(_:)``
    ///   also reads every response.
    public func removeResponses(_ selection: HTTPCacheSelection) async throws {
        do {
            try await store.removeResponses(selection)
        } catch let error as StorageError {
            throw HTTPCacheError.storage(underlying: error)
        }
    }

    /// Removes responses, least recently received first, until the store holds at most `size` bytes.
    ///
    /// The store's own `DiskConfig.maxSize` already bounds it after every write (least recently
    /// used first); this is for shrinking it on demand, say when the app is told memory or disk is low.
    /// - Parameter size: The most bytes of values to keep.
    /// - Throws: ``HTTPCacheError/storage(underlying:)`` when the store fails.
    /// - Complexity: O(n log n) in the number of stored responses, each of which is read once.
    public func trim(toSize size: Int) async throws {
        do {
            try await store.trim(toSize: size)
        } catch let error as StorageError {
            throw HTTPCacheError.storage(underlying: error)
        }
    }

    /// How many responses are stored, over all namespaces.
    public var storedResponseCount: Int {
        store.responseCount
    }
}
