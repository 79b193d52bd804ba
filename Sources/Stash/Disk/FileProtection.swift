import Foundation
import StashEngine
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension DiskConfig {
    /// A data protection class (Apple's `FileProtectionType`): when the system lets the app read and
    /// write a file, on iOS, tvOS, watchOS and visionOS. Elsewhere it is kept in the configuration and
    /// has no effect.
    ///
    /// Which to choose:
    /// - ``completeUntilFirstUserAuthentication``: readable from the first unlock after a restart on,
    ///   also while the device is locked. The system's default, and the one for a store that an app
    ///   launched in the background (a push, a background fetch, a location event) must open.
    /// - ``completeUnlessOpen``: a file open while the device locks stays usable, and new files can be
    ///   created while locked; files closed before the lock cannot be opened until the next unlock. Stash
    ///   keeps its active segment open but opens value files and older segments on demand, so reads of
    ///   those fail while locked.
    /// - ``complete``: nothing can be read or written while the device is locked; every store call then
    ///   fails with ``StorageError/io(operation:path:underlying:)``. For secrets only used in the foreground.
    /// - ``noProtection``: readable at any time, even before the first unlock.
    public enum FileProtection: String, Sendable, Hashable, CaseIterable {
        /// Apple's `FileProtectionType.complete`.
        case complete = "NSFileProtectionComplete"
        /// Apple's `FileProtectionType.completeUnlessOpen`.
        case completeUnlessOpen = "NSFileProtectionCompleteUnlessOpen"
        /// Apple's `FileProtectionType.completeUntilFirstUserAuthentication`, the system's default.
        case completeUntilFirstUserAuthentication = "NSFileProtectionCompleteUntilFirstUserAuthentication"
        /// Apple's `FileProtectionType.none` (named apart from `Optional.none`, which
        /// `protectionType: .none` would mean).
        case noProtection = "NSFileProtectionNone"
    }
}

extension DiskConfig.FileProtection {
    /// Whether the store may read its segments from mappings: not under a class that makes files
    /// unreadable while the device is locked, where a mapped page would fault instead of a read
    /// failing with an error (the engine then reads with `pread` alone).
    var allowsMappedReads: Bool {
        switch self {
        case .complete, .completeUnlessOpen: false
        case .completeUntilFirstUserAuthentication, .noProtection: true
        }
    }
}

/// Gives a store's folder, its subfolders and the files in them a protection class, but for the
/// shared file (``SharedState/protection``).
///
/// On Apple platforms an item created in a folder gets that folder's class, so once the folder has it
/// every file the store creates later has it too (segments, value files, key directories, the marker). The
/// folder gets the class first, then what is already in it, so that nothing created meanwhile is
/// missed. A folder that already has the class is taken as done: files keep the class they were
/// created with, and re-reading every file's class at each open would cost a call per file.
enum StoreProtection {
    /// Whether this platform has protection classes (where `apply` does anything).
    static var isSupported: Bool {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        true
        #else
        false
        #endif
    }

    /// Applies `protection` to the store folder at `path` and everything in it, where the platform
    /// has protection classes; does nothing elsewhere, or for nil.
    /// - Throws: ``StorageError/io(operation:path:underlying:)`` when a class cannot be set.
    static func apply(_ protection: DiskConfig.FileProtection?, toFolder path: String) throws {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        guard let protection else { return }
        try apply(protection, toFolder: path, fileSystem: .system)
        #endif
    }

    /// The calls the walk makes, apart so that the walk itself is tested where no class exists.
    struct FileSystem {
        /// The class of the item at a path; nil when it has none (or one Stash does not name).
        var currentClass: (String) throws -> DiskConfig.FileProtection?
        /// Gives the item at a path a class.
        var setClass: (DiskConfig.FileProtection, String) throws -> Void

        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        static var system: FileSystem {
            FileSystem(
            currentClass: { path in
                let attributes = try FileManager.default.attributesOfItem(atPath: path)
                guard let type = attributes[.protectionKey] as? FileProtectionType else { return nil }
                return DiskConfig.FileProtection.allCases.first { foundationType($0) == type }
            },
            setClass: { protection, path in
                try FileManager.default.setAttributes([.protectionKey: foundationType(protection)], ofItemAtPath: path)
            }
            )
        }

        /// Foundation's constant for `protection` (named, not rebuilt from its raw value).
        static func foundationType(_ protection: DiskConfig.FileProtection) -> FileProtectionType {
            switch protection {
            case .complete: return .complete
            case .completeUnlessOpen: return .completeUnlessOpen
            case .completeUntilFirstUserAuthentication: return .completeUntilFirstUserAuthentication
            case .noProtection: return .none
            }
        }
        #endif
    }

    /// The walk: the folder first, then every folder and regular file below it. Symbolic links are
    /// skipped (one planted in the folder must not change the class of a file elsewhere).
    static func apply(_ protection: DiskConfig.FileProtection, toFolder path: String, fileSystem: FileSystem) throws {
        do {
            if try fileSystem.currentClass(path) == protection { return }
            try fileSystem.setClass(protection, path)
            var pending = [path]
            while let folder = pending.popLast() {
                for name in try FileManager.default.contentsOfDirectory(atPath: folder).sorted() {
                    let item = folder + "/" + name
                    var info = stat()
                    guard lstat(item, &info) == 0 else { continue } // removed meanwhile
                    switch info.st_mode & S_IFMT {
                    case S_IFDIR:
                        try set(protection, item, fileSystem)
                        pending.append(item)
                    case S_IFREG:
                        try set(folder == path && name == SharedState.name ? .noProtection : protection, item, fileSystem)
                    default:
                        continue
                    }
                }
            }
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError.io(operation: "set protection class", path: path, underlying: error)
        }
    }

    /// Sets the class of one item; an item removed meanwhile (a segment a compaction just deleted) is skipped.
    private static func set(_ protection: DiskConfig.FileProtection, _ item: String, _ fileSystem: FileSystem) throws {
        do {
            try fileSystem.setClass(protection, item)
        } catch {
            var info = stat()
            if lstat(item, &info) != 0, errno == ENOENT { return }
            throw StorageError.io(operation: "set protection class", path: item, underlying: error)
        }
    }
}
