// The engine's public vocabulary (`StorageError`, `DiskCheckReport`) is Stash's: an app imports Stash
// alone. Everything else in the engine is `package`, for the layers of this package only.
@_exported import StashEngine
