#ifndef STASH_BENCH_MALLOC_STATS_H
#define STASH_BENCH_MALLOC_STATS_H

#include <stddef.h>

/// Bytes currently allocated through malloc by the whole process (all arenas and mmapped chunks).
size_t stash_bench_malloc_in_use(void);

#endif
