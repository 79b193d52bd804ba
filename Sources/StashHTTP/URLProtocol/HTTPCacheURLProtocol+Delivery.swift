import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Stash

extension HTTPCacheURLProtocol {
    /// The run-loop modes the client's calls are scheduled in: the default mode, plus the mode the
    /// client's thread ran in at `startLoading` when that was another one. Apple's CustomHTTPProtocol
    /// sample does the same. With the start mode alone, a thread that has gone back to the default
    /// mode meanwhile (or never leaves a modal mode it started in, or the other way round) would not
    /// run the delivery until it entered that mode again: the load would stall.
    static func deliveryModes(current: RunLoop.Mode?) -> [RunLoop.Mode] {
        guard let current, current != .default else { return [.default] }
        return [.default, current]
    }

    /// Hands the cache's answer to the protocol's client, once, and never after `stopLoading`.
    ///
    /// On Apple platforms a protocol must call its client on the thread of `startLoading`; that thread
    /// runs a run loop, so the calls are scheduled on it, in the default mode and in the mode it ran
    /// in at `startLoading` (``deliveryModes(current:)``). On Linux the client may be called from any
    /// thread (it hops to the task's own queue).
    final class Delivery: @unchecked Sendable {
        // @unchecked Sendable: the protocol and its client are only used inside `perform`, whose
        // calls the URL loading system allows from the thread they are scheduled on; `state` locks.
        private struct State {
            var task: Task<Void, Never>?
            var finished = false
        }

        /// Weak: the protocol holds this delivery, and the loading system holds the protocol while it loads.
        private weak var urlProtocol: URLProtocol?
        private let client: (any URLProtocolClient)?
        private let state = Locked(State())
        #if !canImport(FoundationNetworking)
        private let runLoop = RunLoop.current
        private let modes = HTTPCacheURLProtocol.deliveryModes(current: RunLoop.current.currentMode)
        #endif

        init(_ urlProtocol: URLProtocol, client: (any URLProtocolClient)?) {
            self.urlProtocol = urlProtocol
            self.client = client
        }

        func start(_ task: Task<Void, Never>) {
            let finished = state.withLock { state in
                state.task = task
                return state.finished
            }
            if finished { Self.cancel(task) }
        }

        func stop() {
            let task = state.withLock { state in
                state.finished = true
                return state.task
            }
            if let task { Self.cancel(task) }
        }

        /// Cancels `task` from another thread. Not from this one: the loading system calls the
        /// protocol on its own queue, and cancelling runs the task's cancellation handlers at once,
        /// which cancel the transport's data task, which in swift-corelibs-foundation syncs onto
        /// that same queue (a deadlock, trapped by Dispatch).
        private static func cancel(_ task: Task<Void, Never>) {
            DispatchQueue.global().async { task.cancel() }
        }

        /// Sends `response` as an `HTTPURLResponse` with the `Stash-Cache` field, then its body.
        func deliver(_ response: CachedResponse, for request: URLRequest) {
            var fields = response.headers.fields
            fields[HTTPCacheStatus.headerName.lowercased()] = HTTPCacheStatus(response).headerValue
            guard let url = request.url,
                  let http = HTTPURLResponse(url: url, statusCode: response.statusCode, httpVersion: "HTTP/1.1", headerFields: fields) else {
                fail(URLError(.badServerResponse))
                return
            }
            let body = response.body
            perform { urlProtocol, client in
                client.urlProtocol(urlProtocol, didReceive: http, cacheStoragePolicy: .notAllowed)
                if !body.isEmpty { client.urlProtocol(urlProtocol, didLoad: body) }
                client.urlProtocolDidFinishLoading(urlProtocol)
            }
        }

        func fail(_ error: any Error) {
            perform { urlProtocol, client in client.urlProtocol(urlProtocol, didFailWithError: error) }
        }

        /// Runs `calls` once, unless the load was stopped or already answered.
        private func perform(_ calls: @escaping (URLProtocol, any URLProtocolClient) -> Void) {
            let run = { [self] in
                let first = state.withLock { state -> Bool in
                    defer { state.finished = true }
                    return !state.finished
                }
                if first, let client, let urlProtocol = self.urlProtocol { calls(urlProtocol, client) }
            }
            #if canImport(FoundationNetworking)
            run()
            #else
            let work = Work(run: run)
            runLoop.perform(inModes: modes) { work.run() }
            CFRunLoopWakeUp(runLoop.getCFRunLoop())
            #endif
        }
    }
}

#if !canImport(FoundationNetworking)
/// The client calls, carried to the client's run loop.
private struct Work: @unchecked Sendable {
    // @unchecked Sendable: `run` is executed once, on the run loop it is scheduled on.
    let run: () -> Void
}
#endif
