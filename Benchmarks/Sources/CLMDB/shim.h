// LMDB, the read and open frontier of embedded engines (Debian: liblmdb-dev).
#include <lmdb.h>
