#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Reading a request from and writing a response to a socket: the HTTP/1.1 message syntax of
/// RFC 9112, as much as the tests need (no chunked request bodies, no pipelining).
extension LoopbackHTTPServer {
    func readRequest(_ connection: Int32) -> Request? {
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headerEnd: Int?
        while headerEnd == nil {
            let count = recv(connection, &chunk, chunk.count, 0)
            guard count > 0 else { return nil }
            buffer.append(contentsOf: chunk[0..<count])
            headerEnd = buffer.firstRange(of: separator)?.lowerBound
            if buffer.count > 1_000_000 { return nil }
        }
        guard let headerEnd else { return nil }
        let head = String(decoding: buffer[..<headerEnd], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = headers[name].map { $0 + ", " + value } ?? value
        }
        var body = Array(buffer[(headerEnd + separator.count)...])
        let expected = headers["content-length"].flatMap(Int.init) ?? 0
        while body.count < expected {
            let count = recv(connection, &chunk, chunk.count, 0)
            guard count > 0 else { break }
            body.append(contentsOf: chunk[0..<count])
        }
        return Request(method: String(requestLine[0]), target: String(requestLine[1]), headers: headers, body: Data(body))
    }

    func write(_ response: Response, for request: Request, to connection: Int32) {
        // 204 and 304 have no body, and a HEAD answer announces the body it does not send.
        let bodyAllowed = response.status != 204 && response.status != 304
        var head = "HTTP/1.1 \(response.status) \(Self.reason(response.status))\r\n"
        for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
        if bodyAllowed { head += "Content-Length: \(response.body.count)\r\n" }
        head += "Connection: close\r\n\r\n"
        var bytes = Array(head.utf8)
        if bodyAllowed, request.method != "HEAD" { bytes.append(contentsOf: response.body) }
        sendAll(bytes, to: connection)
    }

    /// Makes the coming `close` send a TCP reset instead of an orderly end (SO_LINGER with a zero timeout).
    func resetOnClose(_ connection: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(connection, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }

    func sendAll(_ bytes: [UInt8], to connection: Int32) {
        var sent = 0
        while sent < bytes.count {
            #if canImport(Glibc)
            let flags = Int32(MSG_NOSIGNAL) // a client that gave up must not kill the test process
            #else
            let flags: Int32 = 0 // SO_NOSIGPIPE is set on the socket instead
            #endif
            let count = bytes[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, flags) }
            guard count > 0 else { return }
            sent += count
        }
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 304: "Not Modified"
        case 404: "Not Found"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }
}
