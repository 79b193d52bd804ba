#if canImport(FoundationNetworking)
import Foundation
public import FoundationNetworking
#else
public import Foundation
#endif

extension HTTPCachePolicy {
    /// The StashHTTP policy that stands for a Foundation cache policy, as ``HTTPCacheURLProtocol``
    /// applies it to every request of a session set up with
    /// `URLSessionConfiguration.cached(by:partition:)`.
    ///
    /// | `URLRequest.CachePolicy` | ``HTTPCachePolicy`` |
    /// |---|---|
    /// | `.useProtocolCachePolicy` | ``useProtocolRules`` |
    /// | `.returnCacheDataElseLoad` | ``returnCacheElseLoad`` |
    /// | `.returnCacheDataDontLoad` | ``cacheOnly`` |
    /// | `.reloadIgnoringLocalCacheData` | ``reload`` |
    /// | `.reloadIgnoringLocalAndRemoteCacheData` | ``reload`` (the protocol also asks intermediaries with `Cache-Control: no-cache`) |
    /// | `.reloadRevalidatingCacheData` | ``revalidate`` |
    ///
    /// - Parameter policy: The request's cache policy.
    public init(_ policy: URLRequest.CachePolicy) {
        // An if-chain rather than a switch: the enum is imported from Objective-C on Apple platforms
        // (which asks for `@unknown default`) and is a plain Swift enum on Linux (which warns about it).
        if policy == .returnCacheDataElseLoad {
            self = .returnCacheElseLoad
        } else if policy == .returnCacheDataDontLoad {
            self = .cacheOnly
        } else if policy == .reloadIgnoringLocalCacheData || policy == .reloadIgnoringLocalAndRemoteCacheData {
            self = .reload
        } else if policy == .reloadRevalidatingCacheData {
            self = .revalidate
        } else {
            self = .useProtocolRules
        }
    }
}
