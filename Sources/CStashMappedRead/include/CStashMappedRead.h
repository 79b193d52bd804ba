// Copies out of (and into) a mapped file that another program may truncate underneath (the store's segments).
//
// A page of a mapping that lies past the end of its file faults (`SIGBUS`) when touched. Stash never
// shortens a segment below what it reads, but another program may (a truncation in place), and a read
// must then fail with an error, not end the process. So every copy out of a mapping runs under a
// guard: a fault inside the mapped range of a guarded copy returns the copy as failed; any other
// fault goes on to the handler that was installed before (or the system's default action), as if this
// one did not exist. Swift cannot catch a signal, so this is C (compiled into Stash, no dependency).
#ifndef C_STASH_MAPPED_READ_H
#define C_STASH_MAPPED_READ_H

#include <stddef.h>

/// Installs the fault handler, once per process; later calls return what the first returned.
/// Returns 0, or -1 if it could not be installed: copies out of a mapping are then not safe.
int stash_mapped_read_prepare(void);

/// Copies `count` bytes at `source` (inside a mapping) to `destination`. Returns 0, or -1 if reading
/// the source faulted (the file is shorter than the mapping now). Requires `stash_mapped_read_prepare()`
/// to have returned 0.
int stash_mapped_read(void *destination, const void *source, size_t count);

/// Copies `count` bytes from `source` into `destination` (inside a mapping of a file, writable and
/// shared: the store's active segment). Returns 0, or -1 if writing the destination faulted (the file
/// is shorter than the mapping there, or its page could not be brought in). The bytes are stored in
/// order, so a copy stopped partway (a fault, a kill) has written a prefix of them. Requires
/// `stash_mapped_read_prepare()` to have returned 0.
int stash_mapped_write(void *destination, const void *source, size_t count);

#endif
