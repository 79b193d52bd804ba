import Foundation
import Stash

/// Which ``HTTPCache`` each protocol class answers for.
///
/// A `URLProtocol` learns nothing about the session that runs it: not its configuration, and not
/// `httpAdditionalHeaders` (neither Apple's URL loading system nor swift-corelibs-foundation puts
/// them into the request the protocol sees). The one thing a configuration hands the loading system
/// is the list of protocol *classes*. So every set-up made by
/// `URLSessionConfiguration.cached(by:partition:)` gets a class of its own, bound here to its cache
/// and to the configuration's settings the protocol keeps (``SessionSettings``).
///
/// The classes are specialisations of one generic subclass, `Slot<Number>`, where `Number` spells
/// the slot's number in binary as nested types: distinct numbers give distinct classes at run time
/// without declaring them one by one. A slot is never reused for another cache, so a session that
/// outlives ``HTTPCacheURLProtocol/unbind(_:)`` goes to the network rather than to someone else's cache.
@available(watchOS, unavailable)
final class URLProtocolBindings: Sendable {
    /// What one protocol class answers with.
    struct Binding: Sendable {
        let cache: HTTPCache
        /// The session configuration's settings the protocol keeps.
        let settings: SessionSettings
        /// The session configuration's `httpAdditionalHeaders`, added to requests that lack them.
        var additionalHeaders: [String: String] { settings.additionalHeaders }
    }

    private struct Key: Hashable {
        let cache: ObjectIdentifier
        let settings: SessionSettings
    }

    private struct State {
        var bindings: [ObjectIdentifier: Binding] = [:]
        var classes: [Key: HTTPCacheURLProtocol.Type] = [:]
        var nextNumber = 0
    }

    static let shared = URLProtocolBindings()

    private let state = Locked(State())

    /// The class bound to `cache` and `settings`: the same class for the same pair, so that
    /// sessions set up alike share one.
    func protocolClass(for cache: HTTPCache, settings: SessionSettings) -> HTTPCacheURLProtocol.Type {
        let key = Key(cache: ObjectIdentifier(cache), settings: settings)
        return state.withLock { state in
            if let existing = state.classes[key] { return existing }
            let made = Self.makeClass(number: state.nextNumber)
            state.nextNumber += 1
            state.classes[key] = made
            state.bindings[ObjectIdentifier(made)] = Binding(cache: cache, settings: settings)
            return made
        }
    }

    /// The binding of a protocol class; nil for the base class and for unbound slots.
    func binding(for protocolClass: AnyClass) -> Binding? {
        state.withLock { $0.bindings[ObjectIdentifier(protocolClass)] }
    }

    /// Forgets every class bound to `cache` (their sessions go straight to the network from now on).
    func unbind(_ cache: HTTPCache) {
        let identifier = ObjectIdentifier(cache)
        state.withLock { state in
            for (key, made) in state.classes where key.cache == identifier {
                state.classes[key] = nil
                state.bindings[ObjectIdentifier(made)] = nil
            }
        }
    }

    /// The class for slot `number`: `Slot<One<…<End>>>`, the binary digits of `number` as types.
    static func makeClass(number: Int) -> HTTPCacheURLProtocol.Type {
        func build<Digits>(_ digits: Digits.Type, _ remaining: Int) -> HTTPCacheURLProtocol.Type {
            if remaining == 0 { return Slot<Digits>.self }
            return remaining & 1 == 0 ? build(Zero<Digits>.self, remaining >> 1) : build(One<Digits>.self, remaining >> 1)
        }
        return build(End.self, number)
    }
}

/// One bound protocol class; see ``URLProtocolBindings``.
@available(watchOS, unavailable)
final class Slot<Number>: HTTPCacheURLProtocol {}

/// The binary digits of a slot number, as types.
enum End {}
enum Zero<Rest> {}
enum One<Rest> {}
