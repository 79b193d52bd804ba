// The guarded copies of CStashMappedRead.h: a thread-local landing point, set only for the duration of
// a copy, and a SIGBUS handler that jumps back to it when the fault is inside that copy's mapped range
// (its source for a read, its destination for a write).
#include "CStashMappedRead.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

/// The copy under way on this thread, if any: where to land, and the mapped range it touches.
struct guarded_copy {
    sigjmp_buf landing;
    uintptr_t start;
    uintptr_t end;
};

static _Thread_local struct guarded_copy *volatile current_copy;
static struct sigaction previous_action;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_result = -1;

static void on_bus_error(int signal, siginfo_t *info, void *context) {
    struct guarded_copy *copy = current_copy;
    uintptr_t address = (uintptr_t)info->si_addr;
    if (copy != NULL && address >= copy->start && address < copy->end) {
        current_copy = NULL;
        siglongjmp(copy->landing, 1);
    }
    // Not a guarded copy's fault: what would have happened without this handler.
    if (previous_action.sa_flags & SA_SIGINFO) {
        previous_action.sa_sigaction(signal, info, context);
    } else if (previous_action.sa_handler != SIG_DFL && previous_action.sa_handler != SIG_IGN) {
        previous_action.sa_handler(signal);
    } else {
        // The default action (a fault cannot be ignored): restored, and the faulting instruction,
        // run again on return, faults again under it.
        struct sigaction fallback;
        memset(&fallback, 0, sizeof fallback);
        fallback.sa_handler = SIG_DFL;
        sigemptyset(&fallback.sa_mask);
        sigaction(signal, &fallback, NULL);
    }
}

static void install(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_bus_error;
    sigemptyset(&action.sa_mask);
    // SA_NODEFER: the handler leaves by siglongjmp without restoring the signal mask, so SIGBUS must
    // not be blocked while it runs (a blocked synchronous fault would kill the thread's next copy).
    action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    install_result = sigaction(SIGBUS, &action, &previous_action) == 0 ? 0 : -1;
}

int stash_mapped_read_prepare(void) {
    pthread_once(&install_once, install);
    return install_result;
}

/// Copies forward, every byte stored after the bytes before it (8 at a time once aligned; volatile,
/// so the compiler neither reorders the stores nor makes them a memcpy): whatever stops the copy (a
/// fault, a kill of the process) leaves a prefix of `source` written. memcpy does not: glibc's stores
/// its first 32 to 64 bytes last, and a kill partway through an append then left its first record (a
/// batch's header) zeros before whole records of it, which the next open replayed as plain writes.
static void copy_in_order(void *destination, const void *source, size_t count) {
    volatile unsigned char *to = destination;
    const unsigned char *from = source;
    size_t done = 0;
    for (; done < count && ((uintptr_t)(to + done) & 7) != 0; done++) to[done] = from[done];
    for (; count - done >= 8; done += 8) {
        uint64_t word;
        memcpy(&word, from + done, 8);
        *(volatile uint64_t *)(to + done) = word;
    }
    for (; done < count; done++) to[done] = from[done];
}

/// Copies `count` bytes from `source` to `destination` (in order where `ordered`: ``copy_in_order``),
/// landing back here if a fault hits `guarded` (`count` bytes: the side of the copy that is a mapping).
static int guarded_copy(void *destination, const void *source, size_t count, const void *guarded, int ordered) {
    struct guarded_copy copy;
    copy.start = (uintptr_t)guarded;
    copy.end = copy.start + count;
    if (sigsetjmp(copy.landing, 0) != 0) {
        // Landed from the handler. The signal mask is not restored (that would cost every copy a
        // system call), and SIGBUS may be blocked now: SA_NODEFER keeps it unblocked in this
        // handler, but a handler installed after this one (a crash reporter, a sanitizer's) that
        // hands the fault on to it may run with SIGBUS blocked, and a fault while it is blocked
        // ends the process. Unblocked again here, on this rare path only.
        sigset_t bus;
        sigemptyset(&bus);
        sigaddset(&bus, SIGBUS);
        pthread_sigmask(SIG_UNBLOCK, &bus, NULL);
        return -1;
    }
    current_copy = &copy;
    // Compiler barriers: the copy's loads and stores stay between setting the guard and clearing it.
    atomic_signal_fence(memory_order_seq_cst);
    if (ordered) {
        copy_in_order(destination, source, count);
    } else {
        memcpy(destination, source, count);
    }
    atomic_signal_fence(memory_order_seq_cst);
    current_copy = NULL;
    return 0;
}

int stash_mapped_read(void *destination, const void *source, size_t count) {
    return guarded_copy(destination, source, count, source, 0);
}

int stash_mapped_write(void *destination, const void *source, size_t count) {
    return guarded_copy(destination, source, count, destination, 1);
}
