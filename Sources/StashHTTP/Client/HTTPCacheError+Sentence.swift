import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A transport error in words a user may read (the README's offline banner shows it): the same
/// sentence on every platform, never the dump of an `NSError` that Linux's Foundation prints.
enum NetworkErrorText {
    /// `error` as a short clause: "the device is offline (no Internet connection)".
    static func clause(for error: any Error) -> String {
        if let urlError = error as? URLError { return clause(for: urlError) }
        if let posix = error as? POSIXError { return String(cString: strerror(posix.code.rawValue)) }
        // A Swift error describes itself; only a real `NSError` would print its dictionary.
        guard type(of: error) is NSError.Type else { return String(describing: error) }
        let bridged = error as NSError
        // Failable on Linux, not on Apple platforms: the annotation fits both.
        let code: URLError.Code? = URLError.Code(rawValue: bridged.code)
        if bridged.domain == NSURLErrorDomain, let code { return clause(for: URLError(code)) }
        if let reason = bridged.userInfo[NSLocalizedDescriptionKey] as? String { return reason }
        return "\(bridged.domain) error \(bridged.code)"
    }

    private static func clause(for error: URLError) -> String {
        let host = error.failingURL?.host.map { " (\($0))" } ?? ""
        switch error.code {
        case .notConnectedToInternet: return "the device is offline (no Internet connection)"
        case .networkConnectionLost: return "the network connection was lost"
        case .timedOut: return "the request timed out\(host)"
        case .cannotFindHost, .dnsLookupFailed: return "the server's name could not be found\(host)"
        case .cannotConnectToHost: return "the server could not be reached\(host)"
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
             .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid, .clientCertificateRejected,
             .clientCertificateRequired:
            return "a secure connection to the server could not be made\(host)"
        case .cancelled: return "the request was cancelled"
        case .badServerResponse: return "the server sent a response that could not be read\(host)"
        case .httpTooManyRedirects: return "the server redirected too many times\(host)"
        case .internationalRoamingOff, .dataNotAllowed, .callIsActive:
            return "the device may not use the network now (cellular data is off)"
        case .badURL, .unsupportedURL: return "the URL is not one the network can load"
        default: return "the network failed (URL error \(error.code.rawValue))\(host)"
        }
    }
}
