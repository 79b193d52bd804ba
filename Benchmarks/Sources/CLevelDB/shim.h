// LevelDB's C API, the per-write frontier of log-structured engines (Debian: libleveldb-dev).
#include <leveldb/c.h>
