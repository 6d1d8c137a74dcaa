// Shim for libpq: pkg-config (libpq) supplies the include path and -lpq; macros Swift cannot import
// get wrappers here.
#ifndef CLIBPQ_SHIM_H
#define CLIBPQ_SHIM_H

#include <libpq-fe.h>

// PG_DIAG_SQLSTATE is a character-literal macro.
static inline int clibpq_diag_sqlstate(void) { return PG_DIAG_SQLSTATE; }

#endif
