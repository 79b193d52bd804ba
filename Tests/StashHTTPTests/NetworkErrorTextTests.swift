import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

/// Network errors read as one sentence, the same on every platform: never an `NSError` dump.
@Suite("Network error text")
struct NetworkErrorTextTests {
    @Test("a refused connection, an offline device and a timeout read as sentences naming the host",
          arguments: [(URLError.Code.cannotConnectToHost, "could not be reached"),
                      (.notConnectedToInternet, "offline"),
                      (.timedOut, "timed out")])
    func urlErrorsReadAsSentences(code: URLError.Code, words: String) {
        let error = URLError(code, userInfo: [NSURLErrorFailingURLErrorKey: URL(string: "https://api.example.com/todos")!])
        let text = HTTPCacheError.network(underlying: error).description
        #expect(text.contains(words), "\(text)")
        #expect(!text.contains("Domain="), "\(text)")
        #expect(!text.contains("UserInfo"), "\(text)")
        #expect(!text.contains("\n"), "\(text)")
        if code != .notConnectedToInternet { #expect(text.contains("api.example.com"), "\(text)") }
    }

    @Test("an NSError of the URL domain reads as the URLError it is; another domain without a dump")
    func bridgedErrors() {
        let bridged = NSError(domain: NSURLErrorDomain, code: URLError.Code.networkConnectionLost.rawValue)
        #expect(HTTPCacheError.network(underlying: bridged).description == "The network request failed: the network connection was lost")
        let other = NSError(domain: "Example", code: 7)
        #expect(HTTPCacheError.staleNotAllowed(underlying: other).description.contains("Example error 7"))
        #expect(HTTPCacheError.network(underlying: POSIXError(.ECONNREFUSED)).description.contains("refused"))
    }
}
