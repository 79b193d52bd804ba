public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// The completion-handler API: the same operations as the async one, for code that is not async.
/// Handlers run on an arbitrary thread, never on a store's queue.
extension HTTPCache {
    /// Answers `request`; see ``response(for:options:)-(URLRequest,_)``.
    /// - Parameters:
    ///   - request: The request.
    ///   - options: Policy, namespace and freshness overrides.
    ///   - completion: Receives the response or an ``HTTPCacheError``.
    public func response(for request: URLRequest, options: HTTPRequestOptions = HTTPRequestOptions(),
                         completion: @escaping @Sendable (Result<CachedResponse, any Error>) -> Void) {
        run(completion) { try await self.response(for: request, options: options) }
    }

    /// Answers `request` and decodes its body; see ``decoded(_:for:options:decoder:)``.
    /// - Parameters:
    ///   - type: The type of the body.
    ///   - request: The request.
    ///   - options: Policy, namespace and freshness overrides.
    ///   - decoder: The decoder; a default `JSONDecoder` when omitted.
    ///   - completion: Receives the value with its response, or an ``HTTPCacheError``.
    public func decoded<Value: Decodable & Sendable>(_ type: Value.Type, for request: URLRequest,
                                                     options: HTTPRequestOptions = HTTPRequestOptions(),
                                                     decoder: JSONDecoder = JSONDecoder(),
                                                     completion: @escaping @Sendable (Result<DecodedResponse<Value>, any Error>) -> Void) {
        run(completion) { try await self.decoded(Value.self, for: request, options: options, decoder: decoder) }
    }

    /// Answers `request` and, under `stale-while-revalidate`, delivers the refreshed response too;
    /// see ``responses(for:options:)``.
    /// - Parameters:
    ///   - request: The request.
    ///   - options: Policy, namespace and freshness overrides.
    ///   - handler: Called once per response (once or twice), or once with an error.
    public func responses(for request: URLRequest, options: HTTPRequestOptions = HTTPRequestOptions(),
                          handler: @escaping @Sendable (Result<CachedResponse, any Error>) -> Void) {
        Task {
            do {
                for try await response in responses(for: request, options: options) { handler(.success(response)) }
            } catch {
                handler(.failure(error))
            }
        }
    }

    /// Removes stored responses; see ``removeResponses(_:)``.
    /// - Parameters:
    ///   - selection: Which responses.
    ///   - completion: Receives success or an ``HTTPCacheError``.
    public func removeResponses(_ selection: HTTPCacheSelection, completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        run(completion) { try await self.removeResponses(selection) }
    }

    /// Removes the oldest responses until the store holds at most `size` bytes; see ``trim(toSize:)``.
    /// - Parameters:
    ///   - size: The most bytes to keep.
    ///   - completion: Receives success or an ``HTTPCacheError``.
    public func trim(toSize size: Int, completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        run(completion) { try await self.trim(toSize: size) }
    }

    private func run<Value: Sendable>(_ completion: @escaping @Sendable (Result<Value, any Error>) -> Void,
                                      _ work: @escaping @Sendable () async throws -> Value) {
        Task {
            do {
                completion(.success(try await work()))
            } catch {
                completion(.failure(error))
            }
        }
    }
}
