import Foundation

/// The least an asynchronous API over the min store can cost: one serial queue for the work,
/// completions delivered on a global queue, and a checked continuation for async/await.
/// (The same plumbing Stash's `AsyncStorage` needs to keep its order and its no-deadlock promise.)
final class AsyncFloor<T: Sendable>: Sendable {
    private let store: MinStore<T>
    private let queue = DispatchQueue(label: "AsyncFloor")

    init(store: MinStore<T>) {
        self.store = store
    }

    func object(forKey key: String, completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        queue.async { [store] in
            let result = Result { try store.object(forKey: key) }
            DispatchQueue.global().async { completion(result) }
        }
    }

    func object(forKey key: String) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { [store] in continuation.resume(with: Result { try store.object(forKey: key) }) }
        }
    }
}
