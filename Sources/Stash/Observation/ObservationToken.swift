/// Keeps an observation alive until ``cancel()`` is called.
public final class ObservationToken: Sendable {
    private let cancellationClosure: @Sendable () -> Void

    /// Creates a token that runs `cancellationClosure` when cancelled.
    public init(cancellationClosure: @escaping @Sendable () -> Void) {
        self.cancellationClosure = cancellationClosure
    }

    /// Stops the observation: changes not yet delivered when this returns are never delivered
    /// (a closure call already running finishes), also those another thread is delivering.
    public func cancel() {
        cancellationClosure()
    }
}
