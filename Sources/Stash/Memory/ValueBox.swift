/// A value kept by a ``MemoryCache``, boxed once when it is stored.
///
/// Views of one cache share its items, so items cannot be typed. A hit through a view of the
/// stored type is then a pointer comparison of the box's class (``value(as:)``) instead of a
/// dynamic cast out of `any Sendable`, which costs as much as the rest of a memory hit.
package class AnyValueBox: @unchecked Sendable {
    // @unchecked Sendable: no stored state here; the only subclass holds one immutable Sendable value.

    /// The value as an existential, for a view of another type (the slow path of ``value(as:)``).
    var anyValue: any Sendable { fatalError("AnyValueBox is abstract") }

    /// The value as a `T`, or nil if it is of another type.
    @inline(__always)
    final func value<T: Sendable>(as type: T.Type) -> T? {
        if ObjectIdentifier(Swift.type(of: self)) == ObjectIdentifier(ValueBox<T>.self) {
            return unsafeDowncast(self, to: ValueBox<T>.self).value
        }
        return anyValue as? T
    }

    /// The value of a box that holds a `T`: a `ValueBox<T>`, as every box a transaction reads is
    /// (``CommittedValue``).
    @inline(__always)
    final func unboxed<T: Sendable>(as type: T.Type) -> T {
        guard let value = value(as: T.self) else { preconditionFailure("a \(Swift.type(of: self)) holds no \(T.self)") }
        return value
    }
}

/// The box of one value of type `T`.
package final class ValueBox<T: Sendable>: AnyValueBox, @unchecked Sendable {
    // @unchecked Sendable: `value` is immutable and Sendable.
    package let value: T

    init(_ value: T) {
        self.value = value
    }

    override var anyValue: any Sendable { value }
}
