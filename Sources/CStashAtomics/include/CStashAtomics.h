// Memory ordering for memory that several processes map (the store's `stash-shared` file).
//
// Swift's own atomics (`Synchronization.Atomic`, `atomicMemoryFence`) need macOS 15, iOS 18, tvOS 18,
// watchOS 11 and visionOS 2, and `Atomic` cannot be placed on a mapping at all. C11's <stdatomic.h> works
// on every platform Stash supports (macOS 13, iOS 16, ... and Linux): these inline functions are all the
// C this package has, compiled into Stash (not a dependency). Docs/Architecture.md says what each load
// and store of the shared file orders.
#ifndef C_STASH_ATOMICS_H
#define C_STASH_ATOMICS_H

#include <stdatomic.h>
#include <stdint.h>

/// Loads the aligned 8-byte word at `address` with acquire ordering: the reads that follow see at
/// least what was written before the release store that wrote the value read.
static inline uint64_t stash_load_acquire_u64(const void *address) {
    return atomic_load_explicit((const _Atomic uint64_t *)address, memory_order_acquire);
}

/// Stores `value` in the aligned 8-byte word at `address` with release ordering: a process that
/// loads it (acquire) then sees every write this thread made before.
static inline void stash_store_release_u64(void *address, uint64_t value) {
    atomic_store_explicit((_Atomic uint64_t *)address, value, memory_order_release);
}

/// An acquire fence: the loads before it are ordered before the loads and stores after it.
static inline uint64_t stash_fetch_add_u64(void *address, uint64_t value) {
    return atomic_fetch_add_explicit((_Atomic uint64_t *)address, value, memory_order_acq_rel);
}

static inline uint64_t stash_fetch_sub_u64(void *address, uint64_t value) {
    return atomic_fetch_sub_explicit((_Atomic uint64_t *)address, value, memory_order_acq_rel);
}

static inline void stash_fence_acquire(void) {
    atomic_thread_fence(memory_order_acquire);
}

/// A release fence: the loads and stores before it are ordered before the stores after it.
static inline void stash_fence_release(void) {
    atomic_thread_fence(memory_order_release);
}

/// Asks for the cache line at `address` ahead of a write to it (a hint: it never faults). Swift has
/// no prefetch of its own; writing a key directory places entries at random in a table of ~70 MB,
/// and asking a few entries ahead lets their cache misses overlap.
static inline void stash_prefetch_for_write(const void *address) {
    __builtin_prefetch(address, 1, 3);
}

#endif
