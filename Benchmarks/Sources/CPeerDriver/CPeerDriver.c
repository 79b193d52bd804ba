#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct cpeer {
    const cpeer_engine_calls *calls;
    void *store;
    // Values are copied out here; on the heap, so the copy is visible and cannot be dropped.
    char *scratch;
    size_t scratch_size;
};

static uint64_t sink;

uint64_t cpeer_sink(void) { return sink; }

void cpeer_fail(char *error, size_t error_size, const char *what, const char *detail) {
    if (error != NULL && error_size > 0) snprintf(error, error_size, "%s: %s", what, detail ? detail : "failed");
}

cpeer *cpeer_open(cpeer_engine engine, const char *folder, int verify_checksums, char *error, size_t error_size) {
    const cpeer_engine_calls *calls;
    switch (engine) {
    case CPEER_LEVELDB: calls = &cpeer_leveldb_calls; break;
    case CPEER_LMDB: calls = &cpeer_lmdb_calls; break;
    case CPEER_SQLITE: calls = &cpeer_sqlite_calls; break;
    default: cpeer_fail(error, error_size, "open", "unknown engine"); return NULL;
    }
    cpeer *peer = calloc(1, sizeof *peer);
    if (peer == NULL) { cpeer_fail(error, error_size, "open", "out of memory"); return NULL; }
    peer->scratch_size = 64 * 1024;
    peer->scratch = malloc(peer->scratch_size);
    peer->calls = calls;
    peer->store = peer->scratch ? calls->open(folder, verify_checksums, error, error_size) : NULL;
    if (peer->store == NULL) {
        free(peer->scratch);
        free(peer);
        return NULL;
    }
    return peer;
}

void cpeer_close(cpeer *peer) {
    if (peer == NULL) return;
    peer->calls->close(peer->store);
    free(peer->scratch);
    free(peer);
}

static double now_ns(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec * 1e9 + (double)time.tv_nsec;
}

double cpeer_batch(cpeer *peer, cpeer_op op, const int32_t *indices, size_t count, const cpeer_data *data,
                   char *error, size_t error_size) {
    const cpeer_engine_calls *calls = peer->calls;
    const size_t key_size = data->key_size, value_size = data->value_size;
    const double start = now_ns();
    for (size_t position = 0; position < count; position++) {
        const size_t index = (size_t)indices[position];
        const char *key = data->keys + index * key_size;
        switch (op) {
        case CPEER_SET:
            if (calls->set(peer->store, key, key_size, data->values + (index % data->value_count) * value_size,
                           value_size, error, error_size) != 0) return -1;
            break;
        case CPEER_GET: {
            long length = calls->get(peer->store, key, key_size, peer->scratch, peer->scratch_size, error, error_size);
            if (length < 0) {
                if (length == -1) cpeer_fail(error, error_size, "get", "no value for a stored key");
                return -1;
            }
            sink += (uint64_t)length + (uint8_t)peer->scratch[0];
            break;
        }
        case CPEER_REMOVE:
            if (calls->remove(peer->store, key, key_size, error, error_size) != 0) return -1;
            break;
        }
    }
    return (now_ns() - start) / (double)(count > 0 ? count : 1);
}
