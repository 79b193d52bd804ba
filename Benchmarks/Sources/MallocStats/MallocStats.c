#include "MallocStats.h"
// <stdlib.h> first: it defines __GLIBC__ (through <features.h>), which <stddef.h> alone does not.
#include <stdlib.h>

#if defined(__APPLE__)
#include <malloc/malloc.h>

size_t stash_bench_malloc_in_use(void) {
    malloc_statistics_t stats;
    malloc_zone_statistics(NULL, &stats);
    return stats.size_in_use;
}
#elif defined(__GLIBC__)
#include <malloc.h>

size_t stash_bench_malloc_in_use(void) {
    // uordblks is heap chunks in use, hblkhd the mmapped ones. mallinfo2 reports the main arena only
    // (glibc's documented limit), so callers measure allocations made on the main thread.
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}
#else
size_t stash_bench_malloc_in_use(void) { return 0; }
#endif
