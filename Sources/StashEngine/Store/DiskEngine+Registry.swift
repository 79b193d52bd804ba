import Foundation

extension DiskEngine {
    /// The engines open in this process, by folder identity. A folder has at most one engine; while
    /// one is being opened or closed, other openers of that folder wait (not openers of other folders).
    ///
    /// Every strong reference to an engine taken while the lock is held is released only after it is
    /// unlocked (``withLock(_:)``): the last reference going there would run the engine's deinit,
    /// which takes this lock.
    final class Registry: @unchecked Sendable {
        // @unchecked Sendable: `slots` is only touched while `condition` is locked.
        private enum Slot {
            case opening
            /// Open; the engine is nil once its last storage let go, until its deinit has closed it.
            case open(Weak)
        }

        private struct Weak {
            package weak var engine: DiskEngine?
            /// The engine's path, read without taking the engine: a look for an orphan of one path
            /// retains no engine of another (whose last storage, released meanwhile on its own thread,
            /// would then be closed on this one, after that release returned).
            let directory: String
        }

        private let condition = NSCondition()
        private var slots: [FolderIdentity: Slot] = [:]

        /// Runs `body` with the lock held; the engines it puts in `retained` are released after unlocking.
        private func withLock<Result>(_ body: (_ retained: inout [DiskEngine]) throws -> Result) rethrows -> Result {
            var retained: [DiskEngine] = []
            defer { withExtendedLifetime(retained) {} }
            #if DEBUG
            let held = HeldLocks.willTake(.engineRegistry)
            defer { HeldLocks.didRelease(restoring: held) }
            #endif
            condition.lock()
            defer { condition.unlock() }
            return try body(&retained)
        }

        /// The open engine of `identity`, or, for a writer, the writer engine of `directory` whose folder
        /// was removed underneath (the path now names a new folder, which it takes over), or a new one
        /// from `make`. A folder moved away keeps its engine; the path then gets one of its own.
        package func engine(for identity: FolderIdentity, directory: String, writes: Bool, make: () throws -> DiskEngine) throws -> DiskEngine {
            let found: DiskEngine? = withLock { retained in
                while true {
                    switch slots[identity] {
                    case nil:
                        if writes, let orphan = orphanedWriter(of: directory, retained: &retained) { return orphan }
                        slots[identity] = .opening
                        return nil
                    case .open(let weak):
                        if let engine = weak.engine {
                            retained.append(engine)
                            return engine
                        }
                        condition.wait() // being closed: its deinit frees the slot
                    case .opening:
                        condition.wait()
                    }
                }
            }
            if let found { return found }
            do {
                let engine = try make()
                withLock { _ in
                    slots[identity] = .open(Weak(engine: engine, directory: engine.directory))
                    condition.broadcast()
                }
                return engine
            } catch {
                withLock { _ in
                    slots[identity] = nil
                    condition.broadcast()
                }
                throw error
            }
        }

        /// An open writer engine of `directory` whose folder was removed underneath it.
        private func orphanedWriter(of directory: String, retained: inout [DiskEngine]) -> DiskEngine? {
            for slot in slots.values {
                guard case .open(let weak) = slot, weak.directory == directory, let engine = weak.engine else { continue }
                retained.append(engine)
                if engine.isOrphanedWriter { return engine }
            }
            return nil
        }

        /// Called by a closed engine's deinit: frees its slot unless a new engine holds it.
        package func closed(_ identity: FolderIdentity) {
            withLock { retained in
                if case .open(let weak) = slots[identity] {
                    if let engine = weak.engine { retained.append(engine) } else { slots[identity] = nil }
                }
                condition.broadcast()
            }
        }

        /// Registers `engine` under the identity of the folder it opened anew (unless another engine
        /// has that folder already).
        package func move(_ engine: DiskEngine, from old: FolderIdentity, to new: FolderIdentity) {
            withLock { retained in
                if case .open(let weak) = slots[old], let registered = weak.engine {
                    retained.append(registered)
                    if registered === engine { slots[old] = nil }
                }
                if slots[new] == nil { slots[new] = .open(Weak(engine: engine, directory: engine.directory)) }
                condition.broadcast()
            }
        }
    }
}
