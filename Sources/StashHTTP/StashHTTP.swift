// StashHTTP: an offline-first HTTP response cache built on Stash's `Storage` (being written).
