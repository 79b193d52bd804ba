public import Foundation

/// Errors compare by case and by every associated value, so tests can name the error they expect:
///
/// ```swift
/// #expect(throws: StorageError.notFound) { try storage.object(forKey: "missing") }
/// ```
///
/// A case that carries an underlying error (``StorageError/encodingFailed(_:)``,
/// ``StorageError/decodingFailed(_:)``, ``StorageError/transformerFail(_:)``,
/// ``StorageError/io(operation:path:underlying:)``) compares that error as follows: two values of one
/// `Equatable` type (a `POSIXError`, an ``ImageDataError``, a `StorageError`) compare with `==`; any other
/// pair compares by the domain and code it bridges to as an `NSError` (so two `DecodingError`s of the
/// same kind are equal whatever their context). Errors of different types are never equal.
extension StorageError: Equatable {
    public static func == (lhs: StorageError, rhs: StorageError) -> Bool {
        switch (lhs, rhs) {
        case (.notFound, .notFound), (.typeNotMatch, .typeNotMatch), (.deallocated, .deallocated):
            return true
        case (.expired(let a), .expired(let b)):
            return a == b
        case (.encodingFailed(let a), .encodingFailed(let b)), (.decodingFailed(let a), .decodingFailed(let b)),
             (.transformerFail(let a), .transformerFail(let b)):
            return underlyingErrorsMatch(a, b)
        case (.corrupted(let a), .corrupted(let b)), (.invalidName(let a), .invalidName(let b)):
            return a == b
        case (.keyTooLong(let a, let limitA), .keyTooLong(let b, let limitB)):
            return a == b && limitA == limitB
        case (.valueTooLarge(let a, let maxA), .valueTooLarge(let b, let maxB)):
            return a == b && maxA == maxB
        case (.inUse(let a), .inUse(let b)), (.notAStore(let a), .notAStore(let b)), (.readOnly(let a), .readOnly(let b)):
            return a == b
        case (.unsupportedFormat(let a, let formatA), .unsupportedFormat(let b, let formatB)):
            return a == b && formatA == formatB
        case (.invalidExpiry(let a), .invalidExpiry(let b)):
            return a == b
        case (.invalidLimit(let a, let valueA), .invalidLimit(let b, let valueB)):
            return a == b && valueA == valueB
        case (.configurationConflict(let a, let settingA, let inForceA, let requestedA),
              .configurationConflict(let b, let settingB, let inForceB, let requestedB)):
            return a == b && settingA == settingB && inForceA == inForceB && requestedA == requestedB
        case (.io(let operationA, let pathA, let a), .io(let operationB, let pathB, let b)):
            return operationA == operationB && pathA == pathB && underlyingErrorsMatch(a, b)
        // Listed one by one (no `default`), so that a new case cannot compare equal by accident.
        case (.notFound, _), (.typeNotMatch, _), (.deallocated, _), (.expired, _), (.encodingFailed, _),
             (.decodingFailed, _), (.transformerFail, _), (.corrupted, _), (.invalidName, _), (.keyTooLong, _),
             (.valueTooLarge, _), (.inUse, _), (.notAStore, _), (.readOnly, _), (.unsupportedFormat, _),
             (.invalidExpiry, _), (.invalidLimit, _), (.configurationConflict, _), (.io, _):
            return false
        }
    }

    /// `==` for two values of one `Equatable` type; else the bridged `NSError` domain and code.
    private static func underlyingErrorsMatch(_ lhs: any Error, _ rhs: any Error) -> Bool {
        guard type(of: lhs) == type(of: rhs) else { return false }
        if let equatable = lhs as? any Equatable { return isEqual(equatable, rhs) }
        let (a, b) = (lhs as NSError, rhs as NSError)
        return a.domain == b.domain && a.code == b.code
    }

    private static func isEqual<E: Equatable>(_ lhs: E, _ rhs: any Error) -> Bool {
        (rhs as? E) == lhs
    }
}
