#ifndef STASH_BENCH_CPEER_DRIVER_H
#define STASH_BENCH_CPEER_DRIVER_H

// The peers (LevelDB, LMDB, SQLite) driven from C, with no wrapper at all: the reference the Swift
// peers of the engine rows are measured against ("wrapper overhead" in Docs/Benchmarks.md).
// Keys and values are prepared by the caller as flat C buffers before the clock starts; a batch
// runs one operation per key, each as the engine's users run it (one Put/Delete, one write
// transaction, one prepared statement), and times itself with CLOCK_MONOTONIC.

#include <stddef.h>
#include <stdint.h>

typedef enum { CPEER_LEVELDB = 0, CPEER_LMDB = 1, CPEER_SQLITE = 2 } cpeer_engine;
typedef enum { CPEER_SET = 0, CPEER_GET = 1, CPEER_REMOVE = 2 } cpeer_op;

/// The keys and values of a run: key `i` is the `key_size` bytes at `keys + i * key_size`; its value
/// is the `value_size` bytes at `values + (i % value_count) * value_size`.
typedef struct {
    const char *keys;
    size_t key_size;
    const char *values;
    size_t value_size;
    size_t value_count;
} cpeer_data;

typedef struct cpeer cpeer;

/// Opens (creating it) the engine's store in the folder `folder` (which must exist). LevelDB reads
/// verify block checksums when `verify_checksums` is not 0 (its default is off). NULL on failure,
/// with a message in `error`.
cpeer *cpeer_open(cpeer_engine engine, const char *folder, int verify_checksums, char *error, size_t error_size);

/// Closes the store and frees the handle.
void cpeer_close(cpeer *peer);

/// Runs `op` for the keys `indices[0..<count]`, one operation per key, and returns the nanoseconds
/// per operation; -1 after a failure (message in `error`) or when a read finds no value.
double cpeer_batch(cpeer *peer, cpeer_op op, const int32_t *indices, size_t count, const cpeer_data *data,
                   char *error, size_t error_size);

/// What the reads saw (lengths and bytes), so they cannot be optimized away.
uint64_t cpeer_sink(void);

#endif
