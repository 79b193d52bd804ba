#ifndef C_STASH_MALLOC_COUNTER_H
#define C_STASH_MALLOC_COUNTER_H

/// Whether this process counts its allocations (glibc only: the counter wraps glibc's allocator).
int stash_malloc_counting(void);

/// Allocations (malloc, calloc, realloc, aligned forms) made by the calling thread so far.
unsigned long stash_malloc_count(void);

#endif
