import Foundation
import Stash

/// The maintenance behind ``HTTPCache/removeResponses(_:)``, ``HTTPCache/trim(toSize:)`` and
/// ``HTTPCache/storedResponseCount``. Store failures are thrown as they are; the facade wraps them.
extension ResponseStore {
    /// Removes the stored responses `selection` names, marking the exchanges in flight for a removed
    /// URL so that they store nothing.
    func removeResponses(_ selection: HTTPCacheSelection) async throws {
        switch selection {
        case .all:
            try await removeKeys(poisoning: true) { _ in true }
        case .namespace(let namespace):
            try await removeKeys(poisoning: true) { $0.namespace == namespace }
        case .url(let url, let namespace):
            let normalized = URLNormalizer.normalize(url)
            try await removeKeys(poisoning: true) { $0.url == normalized && (namespace == nil || $0.namespace == namespace) }
        case .urlPrefix(let prefix, let namespace):
            guard let normalized = Self.normalizedPrefix(prefix) else { return }
            try await removeKeys(poisoning: true) { $0.url.hasPrefix(normalized) && (namespace == nil || $0.namespace == namespace) }
        case .receivedBefore(let date):
            for (key, stored) in try await storedResponses() where stored.responseTime < date {
                try await storage.async.removeObject(forKey: key)
            }
        }
    }

    /// Removes responses, least recently received first, until the store holds at most `size` bytes.
    func trim(toSize size: Int) async throws {
        guard storage.totalSize > size else { return }
        let oldestFirst = try await storedResponses().sorted { $0.response.responseTime < $1.response.responseTime }
        for (key, _) in oldestFirst {
            guard storage.totalSize > size else { return }
            try await storage.async.removeObject(forKey: key)
        }
    }

    /// How many responses are stored, over all namespaces.
    var responseCount: Int {
        storage.allKeys.count { CacheKey(rawValue: $0)?.kind == .response }
    }

    /// Every stored response with its key; one that no longer reads is skipped (Stash drops a damaged
    /// one and keeps an undecodable one, which the next write of its URL replaces).
    private func storedResponses() async throws -> [(key: String, response: StoredResponse)] {
        var result: [(key: String, response: StoredResponse)] = []
        for raw in storage.allKeys where CacheKey(rawValue: raw)?.kind == .response {
            do {
                result.append((raw, try await storage.async.entry(forKey: raw).object))
            } catch StorageError.notFound {
                continue
            } catch StorageError.decodingFailed, StorageError.corrupted {
                continue
            }
        }
        return result
    }

    /// The normalized form of a prefix URL (`https://Example.com` becomes `https://example.com/`,
    /// which every path on the host starts with).
    private static func normalizedPrefix(_ prefix: URL) -> String? {
        URLNormalizer.normalize(prefix)
    }
}
