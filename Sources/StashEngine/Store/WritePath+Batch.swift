package import Foundation

/// One change of a batch written to disk (``WritePath/writeBatch(_:now:maxSize:durable:storesValuesAsFiles:)``).
package enum DiskBatchChange {
    case set(key: String, data: Data, expiry: Date)
    case remove(key: String)

    package var key: String {
        switch self {
        case .set(let key, _, _), .remove(let key): return key
        }
    }
}

extension WritePath {
    /// What a committed batch leaves to its caller, off the queue.
    package struct BatchOutcome {
        /// Each change's value file (nil when packed, or for a removal), in the batch's order.
        package var paths: [String?] = []
        /// The value files the batch replaced or removed: removed once the batch is durable.
        package var replaced: [ValueFileRef] = []
        var syncPosition: UInt64?
        var trimError: (any Error)?
    }

    /// Applies `changes` in order, all or none: one `batch` record, then the changes' records, in one
    /// `pwrite` (one `fsync` when `durable`). Replay applies a batch only if every record of it is
    /// there and verifies, so after a crash at any moment a reader sees all of it or none of it.
    /// Values kept in files of their own are written (and flushed, when durable) before the records.
    package func writeBatch(_ changes: [DiskBatchChange], now: Date, maxSize: Int, durable: Bool,
                    storesValuesAsFiles: Bool = false) throws -> BatchOutcome {
        store.assertOnQueue()
        try store.checkWritable()
        for change in changes {
            switch change {
            case .set(let key, let data, _): try DiskStore.validate(key: key, size: data.count, maxSize: maxSize)
            case .remove(let key): try DiskStore.validate(key: key, size: 0, maxSize: 0)
            }
        }
        guard !changes.isEmpty else { return BatchOutcome() }
        store.applyMemoryHits(now: now)
        try store.ensureActive()
        let stored = try storeValues(of: changes, durable: durable, storesValuesAsFiles: storesValuesAsFiles)
        // The previous bytes only for key observers (`KeyChange.edit(before:after:)`): what each change
        // replaced, as if the changes were made one by one, so an earlier change of the same key in
        // this batch (a set, or a removal: nil) wins over the stored value. Keys compare as Swift strings.
        // Nobody observing (the common case): one look under the observers' lock, no lookup per key.
        var earlier: [String: Data?] = [:]
        let previousData: [Data?] = store.client?.hasObservers != true ? [] : changes.map { change in
            guard store.client?.hasKeyObservers(change.key) == true else { return nil }
            let previous: Data? = earlier[change.key] ?? store.record(forKey: change.key).flatMap { try? store.log.load(change.key, $0) }
            switch change {
            case .set(let key, let data, _): earlier[key] = .some(data)
            case .remove(let key): earlier[key] = .some(nil)
            }
            return previous
        }
        let time = StoredTime.seconds(now)
        var places: [(start: Int, length: Int)] = [] // of each change's record, in the appended bytes
        var overhead = 0 // the batch record's and the tombstones' bytes: dead from the start
        let location: (segment: UInt32, offset: Int, length: Int, end: UInt64)
        do {
            location = try store.log.append(durable: durable) { buffer, salt in
                var records: [UInt8] = []
                var relative: [(start: Int, length: Int)] = []
                for (index, change) in changes.enumerated() {
                    let start = records.count
                    switch change {
                    case .set(let key, let data, let expiry):
                        data.withUnsafeBytes { bytes in
                            _ = SegmentFormat.appendSet(key: key, expiry: StoredTime.seconds(expiry), time: time, value: stored[index]!,
                                                        inlineBytes: bytes, salt: salt, to: &records)
                        }
                    case .remove(let key):
                        overhead += SegmentFormat.appendRemove(key: key, salt: salt, to: &records)
                    }
                    relative.append((start, records.count - start))
                }
                overhead += SegmentFormat.appendBatch(count: changes.count, length: records.count, salt: salt, to: &buffer)
                let base = buffer.count
                buffer.append(contentsOf: records)
                places = relative.map { (base + $0.start, $0.length) }
                return relative[relative.count - 1].length
            }
        } catch {
            for case .file(let id, _, _)? in stored { store.log.values.remove(id) }
            throw error
        }
        // Where the appended bytes began in the segment: the last record's offset less its place in them.
        let base = location.offset - places[places.count - 1].start
        store.log.active?.deadBytes += overhead
        var outcome = BatchOutcome(syncPosition: durable ? location.end : nil)
        var overlay = 0 // the entries written since the directory, once the batch is in
        let removed: [Bool] = store.withIndex { index in
            store.invalidateMemory(changes.map(\.key)) // in the index's hold: see `sharedIndex`
            defer { overlay = index.overlayCount }
            return changes.enumerated().map { number, change in
                let old: DiskRecord?
                switch change {
                case .set(let key, _, let expiry):
                    let record = DiskRecord(segment: location.segment, offset: UInt32(base + places[number].start),
                                            length: UInt32(places[number].length), value: stored[number]!,
                                            expiry: StoredTime.seconds(expiry), lastAccess: time, keyHash: store.keyHash(key))
                    old = index.set(key, record)
                    store.totalSize += record.size
                    store.earliestExpiry = min(store.earliestExpiry, record.expiry)
                    outcome.paths.append(store.log.filePath(of: record))
                case .remove(let key):
                    old = index.remove(key)
                    outcome.paths.append(nil)
                }
                if let old {
                    store.forget(old)
                    if let file = store.log.valueFile(of: old) { outcome.replaced.append(file) }
                }
                return old != nil
            }
        }
        store.changesSinceDirectory += 1
        // Asked only once the batch could be due: the ask takes the index's lock again.
        if store.directoryBuilder == nil, overlay >= store.thresholds.directoryBuilderMinimum { store.startDirectoryBuilderIfDue() }
        // One commit, one change to observe: an observer showing a state never shows half a batch.
        // Nobody observing: no events are made. (Asked here, after memory dropped the keys, as
        // `publish` itself asks: an observer registered before a read of memory that still saw the
        // old value is told of the change.)
        if store.client?.hasObservers == true {
            var events: [StoreEvent] = []
            for (number, change) in changes.enumerated() {
                switch change {
                case .set(let key, let data, _):
                    events.append(.set(key: key, value: data, previous: previousData.isEmpty ? nil : previousData[number]))
                case .remove(let key): if removed[number] { events.append(.remove(keys: [key], reason: .removed)) }
                }
            }
            store.client?.publish(events)
        }
        if maxSize > 0, store.totalSize > maxSize {
            do { try trim(toSize: maxSize, now: now) } catch { outcome.trimError = error }
        }
        store.compaction.startIfNeeded()
        return outcome
    }

    /// Where each change's value goes: packed, or a value file written now (all removed again if one fails).
    private func storeValues(of changes: [DiskBatchChange], durable: Bool, storesValuesAsFiles: Bool) throws -> [StoredValue?] {
        var stored: [StoredValue?] = []
        do {
            for change in changes {
                guard case .set(_, let data, _) = change else {
                    stored.append(nil)
                    continue
                }
                if DiskStore.needsFile(size: data.count, storesValuesAsFiles: storesValuesAsFiles) {
                    let file = try store.log.writeValue(data, durable: durable)
                    stored.append(.file(id: file.id, size: data.count, hash: file.hash))
                } else {
                    stored.append(.inline(size: data.count))
                }
            }
        } catch {
            for case .file(let id, _, _)? in stored { store.log.values.remove(id) }
            throw error
        }
        return stored
    }
}
