public import Foundation
import StashEngine

/// Settings of the disk layer.
public struct DiskConfig: Sendable {
    /// The store's folder name inside ``directory``.
    public var name: String
    /// The default expiry of values written without one.
    public var expiry: Expiry
    /// The most bytes of values kept on disk; 0 means no limit. Checked after every write:
    /// expired values go first, then the least recently used. A negative value is refused when the
    /// store is opened (``StorageError/invalidLimit(name:value:)``).
    ///
    /// Every storage of one folder in a process shares one engine, and with it the first opener's
    /// ``maxSize`` and ``durable``: opening the folder again with other values throws
    /// ``StorageError/configurationConflict(directory:setting:inForce:requested:)``.
    public var maxSize: Int
    /// The parent folder; nil means the platform's caches folder (on Linux `$XDG_CACHE_HOME`,
    /// else `~/.cache`).
    ///
    /// On iOS and tvOS the system deletes the contents of the caches folder when storage runs low
    /// (while the app is not running), and a backup leaves it out: keep there only what can be fetched
    /// or computed again. Data that must stay belongs in Application Support
    /// (`FileManager.default.url(for: .applicationSupportDirectory, in: .userDomainMask,
    /// appropriateFor: nil, create: true)`), or, to share it with an app extension, in an App Group
    /// container (`FileManager.default.containerURL(forSecurityApplicationGroupIdentifier:)`). See
    /// Docs/Platforms.md.
    public var directory: URL?
    /// The data protection class of the store's folder and of every file the store creates in it, on
    /// iOS, tvOS, watchOS and visionOS (Cache 5's `protectionType`); nil leaves the system's default
    /// (``FileProtection/completeUntilFirstUserAuthentication`` for an app's files). Elsewhere, macOS
    /// and Linux included, it is kept here and has no effect.
    ///
    /// Applied when the store is opened for writing: to the folder (new files take its class), then to
    /// what is already in it. A store that an app launched in the background must open needs a class
    /// readable while the device is locked; see ``FileProtection`` for which class suits which use.
    /// Ignored for a ``readOnly`` store, which changes nothing in its folder.
    public var protectionType: FileProtection?
    /// Whether each write is flushed to stable storage (`fsync`) before it returns.
    ///
    /// Off by default: writes are still atomic (a crash leaves the old or the new value, never a
    /// torn one), but the last writes before a power loss may be lost. `fsync` costs about a
    /// millisecond per write on typical disks.
    public var durable: Bool
    /// Whether the store is opened for reading only: reads work, every write throws
    /// ``StorageError/readOnly(directory:)``, and nothing in the folder is created or changed
    /// (a missing folder is an error). For another user's store, or one on a read-only file system.
    public var readOnly: Bool
    /// Whether every value is kept in a file of its own, holding exactly the transformer's bytes,
    /// whose path ``Entry/filePath`` gives. Off by default: values under 256 KiB are then packed into
    /// the store's segment files (much less disk space and time per value) and have no path.
    public var storesValuesAsFiles: Bool
    /// Whether processes other than this one may write to the store at the same time (an app and
    /// its extensions in an App Group container, several server processes). Off by default: one
    /// process writes (others may still read, with ``readOnly``), and holds the store's lock for as
    /// long as it has it open.
    ///
    /// On, each operation holds the store's lock only while it runs, and first catches up with what
    /// the other processes changed, so every process sees every write that returned before its call
    /// began. Every writer of the store must turn it on: a process that opens the store without it
    /// keeps it to itself while it has it open, and the others' calls throw
    /// ``StorageError/inUse(directory:)`` meanwhile. Costs three system calls per change (the
    /// lock, and an `fstat` that finds the shared file `stash-shared` still in place) and one per
    /// read or memory hit when nothing changed (the `fstat`; reads take no lock then), values of
    /// 256 KiB and more are written while the lock is held, and compaction runs inside the operation
    /// that starts it. Another process's changes reach observers when this process next calls the
    /// store, and the memory layer drops its copies whenever another process changed it.
    public var allowsWritersInOtherProcesses: Bool

    /// Creates a disk configuration.
    /// - Parameters:
    ///   - name: The store's folder name, created inside `directory`.
    ///   - expiry: The default expiry of values written without one.
    ///   - maxSize: The most bytes of values kept; 0 = unlimited; negative is refused when opening.
    ///   - directory: The parent folder; nil = the platform's caches folder.
    ///   - protectionType: The data protection class of the store's files on Apple's mobile platforms; nil = the system's default.
    ///   - durable: Whether each write is `fsync`ed before it returns.
    ///   - readOnly: Whether the store is opened for reading only.
    ///   - storesValuesAsFiles: Whether every value gets a file of its own (see ``storesValuesAsFiles``).
    ///   - allowsWritersInOtherProcesses: Whether other processes may write to the store at the same
    ///     time (see ``allowsWritersInOtherProcesses``).
    public init(name: String, expiry: Expiry = .never, maxSize: Int = 0, directory: URL? = nil,
                protectionType: FileProtection? = nil, durable: Bool = false, readOnly: Bool = false,
                storesValuesAsFiles: Bool = false, allowsWritersInOtherProcesses: Bool = false) {
        self.name = name
        self.expiry = expiry
        self.maxSize = maxSize
        self.directory = directory
        self.protectionType = protectionType
        self.durable = durable
        self.readOnly = readOnly
        self.storesValuesAsFiles = storesValuesAsFiles
        self.allowsWritersInOtherProcesses = allowsWritersInOtherProcesses
    }

    /// The folder the store lives in: ``directory`` (or the caches folder) joined with ``name``.
    public var storeURL: URL {
        (directory ?? Self.cachesDirectory).appendingPathComponent(name, isDirectory: true)
    }

    /// ``storeURL``, once ``name`` is known to keep it inside ``directory``.
    ///
    /// A name may have several components (`"MyApp/Images"`), but not one that leaves the parent
    /// folder (`".."`), an absolute path, an empty name (the store would be the parent folder
    /// itself, sharing it with whatever else lives there) or a NUL byte (which the file system
    /// would cut the path at).
    /// - Throws: ``StorageError/invalidName(_:)``.
    func checkedStoreURL() throws -> URL {
        let components = name.split(separator: "/").filter { $0 != "." }
        guard !name.hasPrefix("/"), !name.utf8.contains(0), !components.isEmpty, !components.contains("..") else {
            throw StorageError.invalidName(name)
        }
        return storeURL
    }

    /// Refuses settings that cannot be honoured, before anything is opened or created.
    /// - Throws: ``StorageError/invalidLimit(name:value:)`` for a negative ``maxSize``,
    ///   ``StorageError/invalidExpiry(_:)`` for an unusable ``expiry``.
    func validate() throws {
        guard maxSize >= 0 else { throw StorageError.invalidLimit(name: "maxSize", value: maxSize) }
        guard expiry.isValid else { throw StorageError.invalidExpiry(expiry) }
    }

    /// The platform's caches folder: `$XDG_CACHE_HOME` or `~/.cache` on Linux.
    public static var cachesDirectory: URL {
        #if os(Linux) || os(Android) || os(FreeBSD) || os(OpenBSD)
        if let xdg = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg, isDirectory: true)
        }
        return FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache", isDirectory: true)
        #else
        return FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        #endif
    }
}

extension DiskConfig {
    /// The settings every write obeys, as the engine takes them.
    var writeSettings: WriteSettings {
        WriteSettings(maxSize: maxSize, durable: durable, storesValuesAsFiles: storesValuesAsFiles)
    }
}

extension DiskConfig {
    /// How the store shares its folder with other processes, as the engine takes it: ``readOnly``
    /// makes a reader that follows a writer; ``allowsWritersInOtherProcesses`` a writer among several.
    var sharing: SharingMode {
        readOnly ? .follower : allowsWritersInOtherProcesses ? .sharedWriter : .soleWriter
    }
}
