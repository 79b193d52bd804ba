// The functions are `static inline` in include/CStashAtomics.h; a C target needs one source file.
#include "CStashAtomics.h"
