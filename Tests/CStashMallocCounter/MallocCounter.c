// Counts the calling thread's allocations, for the test that holds the JSON encoder to its
// allocation budget. Linked only into the `StashAllocationCount` executable: defining malloc there
// puts these wrappers in front of glibc's allocator for that process alone (the libraries it loads
// bind to the executable's definitions). Each wrapper calls glibc's own entry point.
#include "CStashMallocCounter.h"
#include <stdlib.h> // defines __GLIBC__ where glibc is the C library

#if !defined(__has_feature)
#define __has_feature(feature) 0
#endif

// Not under a sanitizer: ThreadSanitizer and AddressSanitizer bring their own malloc.
#if defined(__GLIBC__) && !__has_feature(thread_sanitizer) && !__has_feature(address_sanitizer)
#include <errno.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

// Thread-local, so threads the runtime starts do not disturb a measuring thread's count.
static __thread unsigned long count __attribute__((tls_model("initial-exec")));

void *malloc(size_t size) { count += 1; return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { count += 1; return __libc_calloc(n, size); }
void *realloc(void *pointer, size_t size) { count += 1; return __libc_realloc(pointer, size); }
void *memalign(size_t alignment, size_t size) { count += 1; return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { count += 1; return __libc_memalign(alignment, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    count += 1;
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *out = pointer;
    return 0;
}
void free(void *pointer) { __libc_free(pointer); }

int stash_malloc_counting(void) { return 1; }
unsigned long stash_malloc_count(void) { return count; }
#else
int stash_malloc_counting(void) { return 0; }
unsigned long stash_malloc_count(void) { return 0; }
#endif
