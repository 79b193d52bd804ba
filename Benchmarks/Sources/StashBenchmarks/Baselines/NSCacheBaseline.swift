import Foundation

/// Foundation's `NSCache`, the memory cache an app reaches for first: a second baseline for memory hits.
///
/// Keys are bridged to `NSString` once, up front, so this is NSCache at its fastest.
final class NSCacheBaseline<T> {
    private final class Box {
        let value: T

        init(_ value: T) {
            self.value = value
        }
    }

    private let cache = NSCache<NSString, Box>()

    func set(_ value: T, forKey key: NSString) {
        cache.setObject(Box(value), forKey: key)
    }

    func object(forKey key: NSString) -> T? {
        cache.object(forKey: key)?.value
    }
}
