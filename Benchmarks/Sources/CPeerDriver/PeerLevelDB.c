#include "internal.h"

#include <leveldb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// LevelDB as its users run it: default options plus create_if_missing, sync=false, default read
// options (verify_checksums off unless asked), one Put/Delete per operation.
typedef struct {
    leveldb_t *db;
    leveldb_options_t *options;
    leveldb_writeoptions_t *write;
    leveldb_readoptions_t *read;
} leveldb_store;

static int failed(char *error, size_t error_size, const char *what, char *message) {
    cpeer_fail(error, error_size, what, message);
    leveldb_free(message);
    return -1;
}

static void *store_open(const char *folder, int verify_checksums, char *error, size_t error_size) {
    leveldb_store *store = calloc(1, sizeof *store);
    if (store == NULL) return NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/leveldb", folder);
    store->options = leveldb_options_create();
    leveldb_options_set_create_if_missing(store->options, 1);
    store->write = leveldb_writeoptions_create();
    store->read = leveldb_readoptions_create();
    leveldb_readoptions_set_verify_checksums(store->read, verify_checksums ? 1 : 0);
    char *message = NULL;
    store->db = leveldb_open(store->options, path, &message);
    if (store->db == NULL || message != NULL) {
        failed(error, error_size, "leveldb_open", message);
        leveldb_options_destroy(store->options);
        leveldb_writeoptions_destroy(store->write);
        leveldb_readoptions_destroy(store->read);
        free(store);
        return NULL;
    }
    return store;
}

static void store_close(void *opaque) {
    leveldb_store *store = opaque;
    leveldb_close(store->db);
    leveldb_options_destroy(store->options);
    leveldb_writeoptions_destroy(store->write);
    leveldb_readoptions_destroy(store->read);
    free(store);
}

static int store_set(void *opaque, const char *key, size_t key_size, const char *value, size_t value_size,
                     char *error, size_t error_size) {
    leveldb_store *store = opaque;
    char *message = NULL;
    leveldb_put(store->db, store->write, key, key_size, value, value_size, &message);
    return message ? failed(error, error_size, "leveldb_put", message) : 0;
}

static long store_get(void *opaque, const char *key, size_t key_size, char *scratch, size_t scratch_size,
                      char *error, size_t error_size) {
    leveldb_store *store = opaque;
    char *message = NULL;
    size_t length = 0;
    // LevelDB's C API hands out a malloc'd copy of the value: that copy is the read's result.
    char *value = leveldb_get(store->db, store->read, key, key_size, &length, &message);
    if (message != NULL) return failed(error, error_size, "leveldb_get", message) - 1;
    if (value == NULL) return -1;
    scratch[0] = length > 0 ? value[0] : 0;
    (void)scratch_size;
    leveldb_free(value);
    return (long)length;
}

static int store_remove(void *opaque, const char *key, size_t key_size, char *error, size_t error_size) {
    leveldb_store *store = opaque;
    char *message = NULL;
    leveldb_delete(store->db, store->write, key, key_size, &message);
    return message ? failed(error, error_size, "leveldb_delete", message) : 0;
}

const cpeer_engine_calls cpeer_leveldb_calls = {store_open, store_close, store_set, store_get, store_remove};
