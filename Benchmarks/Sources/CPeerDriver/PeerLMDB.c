#include "internal.h"

#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

// LMDB as the engine rows run it: MDB_WRITEMAP | MDB_NOSYNC (no fsync, like Stash's default
// writes), a 4 GiB map (address space; the file is sparse), one write transaction per operation,
// a read-only transaction around each mdb_get, the value copied out.
typedef struct {
    MDB_env *env;
    MDB_dbi dbi;
} lmdb_store;

static void *store_open(const char *folder, int verify_checksums, char *error, size_t error_size) {
    (void)verify_checksums;
    char path[4096];
    snprintf(path, sizeof path, "%s/lmdb", folder);
    mkdir(path, 0755);
    lmdb_store *store = calloc(1, sizeof *store);
    if (store == NULL) return NULL;
    int code = mdb_env_create(&store->env);
    if (code == 0) code = mdb_env_set_mapsize(store->env, (size_t)4 << 30);
    if (code == 0) code = mdb_env_open(store->env, path, MDB_WRITEMAP | MDB_NOSYNC, 0644);
    MDB_txn *transaction = NULL;
    if (code == 0) code = mdb_txn_begin(store->env, NULL, 0, &transaction);
    if (code == 0) {
        code = mdb_dbi_open(transaction, NULL, 0, &store->dbi);
        code = code == 0 ? mdb_txn_commit(transaction) : (mdb_txn_abort(transaction), code);
    }
    if (code != 0) {
        cpeer_fail(error, error_size, "lmdb open", mdb_strerror(code));
        if (store->env) mdb_env_close(store->env);
        free(store);
        return NULL;
    }
    return store;
}

static void store_close(void *opaque) {
    lmdb_store *store = opaque;
    mdb_env_close(store->env);
    free(store);
}

static int write_one(lmdb_store *store, const char *key, size_t key_size, const char *value, size_t value_size,
                     char *error, size_t error_size) {
    MDB_txn *transaction;
    int code = mdb_txn_begin(store->env, NULL, 0, &transaction);
    if (code != 0) { cpeer_fail(error, error_size, "mdb_txn_begin", mdb_strerror(code)); return -1; }
    MDB_val key_value = {key_size, (void *)key};
    if (value != NULL) {
        MDB_val data = {value_size, (void *)value};
        code = mdb_put(transaction, store->dbi, &key_value, &data, 0);
    } else {
        code = mdb_del(transaction, store->dbi, &key_value, NULL);
        if (code == MDB_NOTFOUND) code = 0;
    }
    if (code != 0) {
        mdb_txn_abort(transaction);
        cpeer_fail(error, error_size, value ? "mdb_put" : "mdb_del", mdb_strerror(code));
        return -1;
    }
    code = mdb_txn_commit(transaction);
    if (code != 0) { cpeer_fail(error, error_size, "mdb_txn_commit", mdb_strerror(code)); return -1; }
    return 0;
}

static int store_set(void *opaque, const char *key, size_t key_size, const char *value, size_t value_size,
                     char *error, size_t error_size) {
    return write_one(opaque, key, key_size, value, value_size, error, error_size);
}

static long store_get(void *opaque, const char *key, size_t key_size, char *scratch, size_t scratch_size,
                      char *error, size_t error_size) {
    lmdb_store *store = opaque;
    MDB_txn *transaction;
    int code = mdb_txn_begin(store->env, NULL, MDB_RDONLY, &transaction);
    if (code != 0) { cpeer_fail(error, error_size, "mdb_txn_begin", mdb_strerror(code)); return -2; }
    MDB_val key_value = {key_size, (void *)key}, data;
    code = mdb_get(transaction, store->dbi, &key_value, &data);
    long length = -1;
    if (code == 0) {
        length = (long)data.mv_size;
        memcpy(scratch, data.mv_data, data.mv_size < scratch_size ? data.mv_size : scratch_size);
    } else if (code != MDB_NOTFOUND) {
        cpeer_fail(error, error_size, "mdb_get", mdb_strerror(code));
        length = -2;
    }
    mdb_txn_abort(transaction);
    return length;
}

static int store_remove(void *opaque, const char *key, size_t key_size, char *error, size_t error_size) {
    return write_one(opaque, key, key_size, NULL, 0, error, error_size);
}

const cpeer_engine_calls cpeer_lmdb_calls = {store_open, store_close, store_set, store_get, store_remove};
