// SQLite, the peer an app developer picks instead of Stash (Debian: libsqlite3-dev).
#include <sqlite3.h>
