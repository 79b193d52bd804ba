#ifndef STASH_BENCH_CPEER_INTERNAL_H
#define STASH_BENCH_CPEER_INTERNAL_H

#include "CPeerDriver.h"

// One engine behind three calls; `scratch` receives the values read (a reader copies its value
// out, as a caller of Stash gets a copy).
typedef struct {
    void *(*open)(const char *folder, int verify_checksums, char *error, size_t error_size);
    void (*close)(void *store);
    int (*set)(void *store, const char *key, size_t key_size, const char *value, size_t value_size, char *error, size_t error_size);
    /// The value's length (copied into `scratch`), -1 when absent, -2 on failure.
    long (*get)(void *store, const char *key, size_t key_size, char *scratch, size_t scratch_size, char *error, size_t error_size);
    int (*remove)(void *store, const char *key, size_t key_size, char *error, size_t error_size);
} cpeer_engine_calls;

extern const cpeer_engine_calls cpeer_leveldb_calls;
extern const cpeer_engine_calls cpeer_lmdb_calls;
extern const cpeer_engine_calls cpeer_sqlite_calls;

/// Formats a message into `error` (truncated to `error_size`).
void cpeer_fail(char *error, size_t error_size, const char *what, const char *detail);

#endif
