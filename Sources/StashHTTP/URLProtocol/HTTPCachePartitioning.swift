import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Stash

/// How a session set up with `URLSessionConfiguration.cached(by:partition:)` keeps its
/// stored responses apart from other sessions' and other users': each request is answered only from
/// responses stored under its own partition (``HTTPRequestOptions/partition``).
///
/// ```swift
/// let session = URLSession(configuration: .default.cached(by: cache))                        // by credentials
/// let session = URLSession(configuration: .default.cached(by: cache, partition: .named(userID)))
/// ```
///
/// An unsafe request (POST, PUT, PATCH, DELETE) removes what every partition stores for its URL.
public struct HTTPCachePartitioning: Sendable, Hashable, CustomStringConvertible {
    private enum Kind: Sendable, Hashable {
        case credentials
        case session(UUID)
        case shared
        case named(String)
    }

    private let kind: Kind

    /// A partition per credential (the default): requests carrying an `Authorization` or `Cookie`
    /// field (their own, the session's `httpAdditionalHeaders`, or cookies from its cookie storage)
    /// share stored responses only with requests carrying the same values; requests with neither
    /// share the common partition. The values are kept only as a digest.
    ///
    /// A token that rotates (an OAuth access token) starts a new, empty partition each time: what
    /// was stored under the old one is no longer served, not even offline. Apps with rotating tokens
    /// should name the partition after the signed-in user with ``named(_:)`` instead.
    public static let byCredentials = HTTPCachePartitioning(kind: .credentials)

    /// A partition of its own for every configuration made with it: sessions share nothing, even
    /// over one cache. Each use of `perSession` is a new partition.
    public static var perSession: HTTPCachePartitioning { HTTPCachePartitioning(kind: .session(UUID())) }

    /// One partition for every session that chooses it: for an app with one user, or responses that
    /// are the same for every user. Responses one user was given (`private` ones too) are served to
    /// every other session that chose `shared`.
    public static let shared = HTTPCachePartitioning(kind: .shared)

    /// A partition the app names, for example after the signed-in user's identifier: it survives
    /// token rotation and app restarts, and sessions given the same name share it.
    /// - Parameter name: The partition's name.
    /// - Returns: The partitioning.
    public static func named(_ name: String) -> HTTPCachePartitioning { HTTPCachePartitioning(kind: .named(name)) }

    /// `byCredentials`, `perSession`, `shared` or `named(…)`.
    public var description: String {
        switch kind {
        case .credentials: "byCredentials"
        case .session: "perSession"
        case .shared: "shared"
        case .named(let name): "named(\(name))"
        }
    }

    /// The partition of `request`, once the session's header fields and cookies are in it. Each
    /// kind has a prefix of its own, so no name or digest can spell another kind's partition.
    func partition(for request: URLRequest) -> String {
        switch kind {
        case .shared:
            return ""
        case .named(let name):
            return "named-" + name
        case .session(let id):
            return "session-" + id.uuidString
        case .credentials:
            let authorization = request.value(forHTTPHeaderField: "Authorization")
            let cookie = request.value(forHTTPHeaderField: "Cookie")
            guard authorization != nil || cookie != nil else { return "" }
            // Length-prefixed, so that no split of the two values between the fields spells another.
            let material = [authorization, cookie].map { $0.map { "\($0.utf8.count):\($0)" } ?? "-" }.joined(separator: "\n")
            return "credentials-" + SHA256.hex(of: material, byteCount: 16)
        }
    }
}
