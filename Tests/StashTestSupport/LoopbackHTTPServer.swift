#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
public import Foundation

/// A small HTTP/1.1 server on 127.0.0.1 for the tests: POSIX sockets, a kernel-chosen port, one
/// thread per connection, `Connection: close`. Each path answers with a handler the test sets; the
/// server counts requests per path, keeps the last request's headers, can delay an answer, and
/// ``stop()`` closes the listening socket so that later connections are refused, as when a server is
/// offline. The port stays the server's until the object goes, so no other server answers on it
/// (``LoopbackPort``).
public final class LoopbackHTTPServer: @unchecked Sendable {
    // @unchecked Sendable: mutable state lives in `state`, behind `lock`; `listener`, `reservedPort` and
    // `port` are set once in init; the accept thread owns the listening socket until `stop()` joins it.
    public struct Request: Sendable {
        public var method: String
        /// The request target: path and query.
        public var target: String
        public var path: String { String(target.prefix { $0 != "?" }) }
        /// Lower-cased name → value.
        public var headers: [String: String]
        public var body: Data
    }

    public struct Response: Sendable {
        public var status: Int
        public var headers: [(String, String)] = []
        public var body: Data = Data()
        /// Seconds to wait before answering (a slow server).
        public var delay: TimeInterval = 0
        /// What goes on the wire: a well-formed answer, or one of the ways a connection can fail.
        public var wire: Wire = .answer

        public init(status: Int = 200, headers: [(String, String)] = [], body: String = "", delay: TimeInterval = 0, wire: Wire = .answer) {
            self.status = status
            self.headers = headers
            self.body = Data(body.utf8)
            self.delay = delay
            self.wire = wire
        }
    }

    /// How the server treats a connection after reading the request.
    public enum Wire: Sendable {
        /// The status, headers and body, framed with `Content-Length`.
        case answer
        /// Closes the connection without sending a byte (a crashed or overloaded server).
        case closeWithoutReply
        /// Resets the connection (TCP RST) without sending a byte.
        case reset
        /// Sends these bytes as they are, then closes: for framing the normal answer cannot express.
        case raw(String)
    }

    public typealias Handler = @Sendable (Request) -> Response

    private struct State {
        var routes: [String: Handler] = [:]
        var counts: [String: Int] = [:]
        var lastRequests: [String: Request] = [:]
        var stopping = false
    }

    public let port: UInt16
    private let listener: Int32
    /// Keeps `port` this server's until deinit, after `stop()` too.
    private let reservedPort: LoopbackPort
    private let lock = NSLock()
    private var state = State()
    private let acceptLoopEnded = DispatchSemaphore(value: 0)

    public init() throws {
        (reservedPort, listener) = try LoopbackPort.withListeningSocket()
        port = reservedPort.number
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// Stops the server; `reservedPort` goes after this, once the listener is closed, and gives the port up.
    deinit {
        stop()
    }

    /// The URL of `path` on this server.
    public func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    /// Answers requests for `path` (query ignored) with `handler`.
    public func route(_ path: String, _ handler: @escaping Handler) {
        withState { $0.routes[path] = handler }
    }

    /// Answers requests for `path` with a fixed response.
    public func route(_ path: String, status: Int = 200, headers: [(String, String)] = [], body: String = "", delay: TimeInterval = 0) {
        let response = Response(status: status, headers: headers, body: body, delay: delay)
        route(path) { _ in response }
    }

    /// How many requests reached `path`.
    public func requestCount(_ path: String) -> Int { withState { $0.counts[path] ?? 0 } }

    /// The last request for `path`.
    public func lastRequest(_ path: String) -> Request? { withState { $0.lastRequests[path] } }

    /// Closes the listening socket and waits for the accept loop to end: from then on connections
    /// to the port are refused, for as long as this object lives. Calling it again does nothing.
    public func stop() {
        let first = withState { state -> Bool in
            defer { state.stopping = true }
            return !state.stopping
        }
        if first { acceptLoopEnded.wait() }
    }

    private func withState<T>(_ body: (inout State) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&state)
    }

    /// Polls with a short timeout so that `stop()` is noticed within 20 ms, then closes the socket.
    private func acceptLoop() {
        while !withState({ $0.stopping }) {
            var descriptor = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 20) > 0 else { continue }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            #if canImport(Darwin)
            var one: Int32 = 1
            setsockopt(connection, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
            #endif
            let thread = Thread { [self] in serve(connection) }
            thread.start()
        }
        close(listener)
        acceptLoopEnded.signal()
    }

    private func serve(_ connection: Int32) {
        defer { close(connection) }
        guard let request = readRequest(connection) else { return }
        let handler = withState { state -> Handler? in
            state.counts[request.path, default: 0] += 1
            state.lastRequests[request.path] = request
            return state.routes[request.path]
        }
        let response = handler?(request) ?? Response(status: 404, body: "no route")
        if response.delay > 0 { Thread.sleep(forTimeInterval: response.delay) }
        switch response.wire {
        case .answer: write(response, for: request, to: connection)
        case .closeWithoutReply: break
        case .reset: resetOnClose(connection)
        case .raw(let text): sendAll(Array(text.utf8), to: connection)
        }
    }
}
