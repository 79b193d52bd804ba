import Foundation

/// The keys Stash keeps for its own bookkeeping in a store (today: ``StorageMigrator``'s progress),
/// all beginning with U+0001 "stash.".
///
/// They never show: listings (`allKeys`, `allKeys(withPrefix:)`, `objects(withPrefix:)`,
/// `entryInfos`, `counts`, `stash ls` and `stats`) and observers (storage and key observers, the
/// `changes()` streams, ``ObservableCollection``) leave them out. And no app key can be one: a write
/// or removal of a key in the namespace throws ``StorageError/reservedKey(_:)`` before anything is
/// written, so the app can neither overwrite nor reset Stash's bookkeeping. (A control character
/// first: no text a person types, no URL or path, starts with it.)
enum ReservedKeys {
    /// The namespace's beginning.
    static let prefix = "\u{1}stash."

    /// The one key under which ``StorageMigrator`` keeps the progress of every migration of a store.
    static let migrationProgress = prefix + "migrations"

    /// Whether `key` is in the namespace. One byte settles it for nearly every key: U+0001 is a
    /// control character, which no other character is canonically equivalent to or combines with.
    @inline(__always)
    static func contains(_ key: String) -> Bool {
        key.utf8.first == 0x01 && key.hasPrefix(prefix)
    }

    /// Throws ``StorageError/reservedKey(_:)`` for a key in the namespace: what every write and
    /// removal the app makes checks first.
    @inline(__always)
    static func check(_ key: String) throws {
        if contains(key) { throw StorageError.reservedKey(key) }
    }

    /// `keys` without the namespace's.
    static func removing(from keys: [String]) -> [String] {
        keys.contains(where: contains) ? keys.filter { !contains($0) } : keys
    }
}
