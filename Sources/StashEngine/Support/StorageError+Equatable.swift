import Foundation

/// Errors compare by case and by every associated value, so tests can name the error they expect:
///
/// ```swift
/// #expect(throws: StorageError.notFound) { try storage.object(forKey: "missing") }
/// ```
///
/// A case that carries an underlying error (``StorageError/encodingFailed(_:)``,
/// ``StorageError/decodingFailed(_:key:)``, ``StorageError/transformerFail(_:)``,
/// ``StorageError/io(operation:path:underlying:)``) compares that error as follows: two values of one
/// `Equatable` type (a `POSIXError`, an ``ImageDataError``, a `StorageError`) compare with `==`; any other
/// pair compares by the domain and code it bridges to as an `NSError` (so two `DecodingError`s of the
/// same kind are equal whatever their context). Errors of different types are never equal. The key a
/// ``StorageError/notFound(key:)``, ``StorageError/expired(_:key:)`` or ``StorageError/decodingFailed(_:key:)``
/// names is context for people, not part of what went wrong: every `notFound` equals ``StorageError/notFound``,
/// and `.expired(date)` equals `.expired(date, key: "k")`.
extension StorageError: Equatable {
    public static func == (lhs: StorageError, rhs: StorageError) -> Bool {
        // One switch over `lhs` (a switch over the pair is too big for the exhaustiveness checker),
        // each case matching `rhs` against itself: a new case cannot compare equal by accident.
        switch lhs {
        case .notFound:
            if case .notFound = rhs { return true }
        case .typeNotMatch:
            if case .typeNotMatch = rhs { return true }
        case .deallocated:
            if case .deallocated = rhs { return true }
        case .expired(let a, _):
            if case .expired(let b, _) = rhs { return a == b }
        case .encodingFailed(let a):
            if case .encodingFailed(let b) = rhs { return underlyingErrorsMatch(a, b) }
        case .decodingFailed(let a, _):
            if case .decodingFailed(let b, _) = rhs { return underlyingErrorsMatch(a, b) }
        case .transformerFail(let a):
            if case .transformerFail(let b) = rhs { return underlyingErrorsMatch(a, b) }
        case .corrupted(let a):
            if case .corrupted(let b) = rhs { return a == b }
        case .invalidName(let a):
            if case .invalidName(let b) = rhs { return a == b }
        case .keyTooLong(let a, let limitA):
            if case .keyTooLong(let b, let limitB) = rhs { return a == b && limitA == limitB }
        case .valueTooLarge(let a, let maxA):
            if case .valueTooLarge(let b, let maxB) = rhs { return a == b && maxA == maxB }
        case .inUse(let a):
            if case .inUse(let b) = rhs { return a == b }
        case .notAStore(let a):
            if case .notAStore(let b) = rhs { return a == b }
        case .readOnly(let a):
            if case .readOnly(let b) = rhs { return a == b }
        case .unsupportedFormat(let a, let formatA):
            if case .unsupportedFormat(let b, let formatB) = rhs { return a == b && formatA == formatB }
        case .invalidExpiry(let a):
            if case .invalidExpiry(let b) = rhs { return a == b }
        case .invalidLimit(let a, let valueA):
            if case .invalidLimit(let b, let valueB) = rhs { return a == b && valueA == valueB }
        case .configurationConflict(let a, let settingA, let inForceA, let requestedA):
            if case .configurationConflict(let b, let settingB, let inForceB, let requestedB) = rhs {
                return a == b && settingA == settingB && inForceA == inForceB && requestedA == requestedB
            }
        case .reentrantCall(let a):
            if case .reentrantCall(let b) = rhs { return a == b }
        case .transactionEnded:
            if case .transactionEnded = rhs { return true }
        case .reservedKey(let a):
            if case .reservedKey(let b) = rhs { return a == b }
        case .locationUnavailable(let a):
            if case .locationUnavailable(let b) = rhs { return a == b }
        case .io(let operationA, let pathA, let a):
            if case .io(let operationB, let pathB, let b) = rhs {
                return operationA == operationB && pathA == pathB && underlyingErrorsMatch(a, b)
            }
        }
        return false
    }

    /// `==` for two values of one `Equatable` type; else the bridged `NSError` domain and code.
    private static func underlyingErrorsMatch(_ lhs: any Error, _ rhs: any Error) -> Bool {
        guard type(of: lhs) == type(of: rhs) else { return false }
        // Through `Any`: cast straight from `any Error`, the compiler wrongly calls the cast certain.
        let value: Any = lhs
        if let equatable = value as? any Equatable { return isEqual(equatable, rhs) }
        let (a, b) = (lhs as NSError, rhs as NSError)
        return a.domain == b.domain && a.code == b.code
    }

    private static func isEqual<E: Equatable>(_ lhs: E, _ rhs: any Error) -> Bool {
        (rhs as? E) == lhs
    }
}
