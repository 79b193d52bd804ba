#include "internal.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// SQLite as the engine rows run it: one table kv(key TEXT PRIMARY KEY, value BLOB NOT NULL,
// expiry REAL), journal_mode=WAL, synchronous=NORMAL, statements prepared once, one implicit
// transaction per statement, the value copied out of the row.
typedef struct {
    sqlite3 *db;
    sqlite3_stmt *upsert, *select, *delete;
} sqlite_store;

static void store_close(void *opaque) {
    sqlite_store *store = opaque;
    sqlite3_finalize(store->upsert);
    sqlite3_finalize(store->select);
    sqlite3_finalize(store->delete);
    sqlite3_close(store->db);
    free(store);
}

static void *store_open(const char *folder, int verify_checksums, char *error, size_t error_size) {
    (void)verify_checksums;
    char path[4096];
    snprintf(path, sizeof path, "%s/sqlite.db", folder);
    sqlite_store *store = calloc(1, sizeof *store);
    if (store == NULL) return NULL;
    int code = sqlite3_open_v2(path, &store->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (code == SQLITE_OK) code = sqlite3_exec(store->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
    if (code == SQLITE_OK) code = sqlite3_exec(store->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
    if (code == SQLITE_OK) code = sqlite3_exec(store->db, "CREATE TABLE IF NOT EXISTS kv(key TEXT PRIMARY KEY, "
                                                          "value BLOB NOT NULL, expiry REAL)", NULL, NULL, NULL);
    if (code == SQLITE_OK) code = sqlite3_prepare_v2(store->db, "INSERT INTO kv(key, value, expiry) VALUES(?1, ?2, NULL) "
                                                     "ON CONFLICT(key) DO UPDATE SET value = excluded.value, expiry = NULL",
                                                     -1, &store->upsert, NULL);
    if (code == SQLITE_OK) code = sqlite3_prepare_v2(store->db, "SELECT value FROM kv WHERE key = ?1", -1, &store->select, NULL);
    if (code == SQLITE_OK) code = sqlite3_prepare_v2(store->db, "DELETE FROM kv WHERE key = ?1", -1, &store->delete, NULL);
    if (code != SQLITE_OK) {
        cpeer_fail(error, error_size, "sqlite open", store->db ? sqlite3_errmsg(store->db) : sqlite3_errstr(code));
        store_close(store);
        return NULL;
    }
    return store;
}

static int finish(sqlite_store *store, sqlite3_stmt *statement, int code, char *error, size_t error_size) {
    sqlite3_reset(statement);
    sqlite3_clear_bindings(statement);
    if (code == SQLITE_DONE || code == SQLITE_ROW) return 0;
    cpeer_fail(error, error_size, "sqlite3_step", sqlite3_errmsg(store->db));
    return -1;
}

static int store_set(void *opaque, const char *key, size_t key_size, const char *value, size_t value_size,
                     char *error, size_t error_size) {
    sqlite_store *store = opaque;
    sqlite3_bind_text(store->upsert, 1, key, (int)key_size, SQLITE_STATIC);
    sqlite3_bind_blob(store->upsert, 2, value, (int)value_size, SQLITE_STATIC);
    return finish(store, store->upsert, sqlite3_step(store->upsert), error, error_size);
}

static long store_get(void *opaque, const char *key, size_t key_size, char *scratch, size_t scratch_size,
                      char *error, size_t error_size) {
    sqlite_store *store = opaque;
    sqlite3_bind_text(store->select, 1, key, (int)key_size, SQLITE_STATIC);
    int code = sqlite3_step(store->select);
    long length = -1;
    if (code == SQLITE_ROW) {
        length = sqlite3_column_bytes(store->select, 0);
        const void *bytes = sqlite3_column_blob(store->select, 0);
        if (bytes != NULL) memcpy(scratch, bytes, (size_t)length < scratch_size ? (size_t)length : scratch_size);
    }
    if (finish(store, store->select, code, error, error_size) != 0) return -2;
    return length;
}

static int store_remove(void *opaque, const char *key, size_t key_size, char *error, size_t error_size) {
    sqlite_store *store = opaque;
    sqlite3_bind_text(store->delete, 1, key, (int)key_size, SQLITE_STATIC);
    return finish(store, store->delete, sqlite3_step(store->delete), error, error_size);
}

const cpeer_engine_calls cpeer_sqlite_calls = {store_open, store_close, store_set, store_get, store_remove};
