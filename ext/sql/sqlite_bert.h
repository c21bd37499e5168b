/*
 * sqlite_bert.h - the public C interface of the sqlite-bert extension.
 *
 * Most users load the extension at run time (`.load ./bert` in the shell,
 * sqlite3_load_extension() in C) and need no header.  Applications that link
 * the static library (libsqlite_bert.a, built by `make static`) register it
 * for every connection they open:
 *
 *     #include <sqlite3.h>
 *     #include "sqlite_bert.h"
 *
 *     sqlite3_auto_extension((void (*)(void))sqlite3_bert_init);
 *     sqlite3_open(":memory:", &db);      // bert_* functions are there
 *
 * and link with `libsqlite_bert.a -lsqlite3 -lopenblas -lutf8proc -lpthread -lm`.
 */
#ifndef SQLITE_BERT_H
#define SQLITE_BERT_H

#include <sqlite3.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The extension's version, also returned by SQL's bert_version(). */
#define SQLITE_BERT_VERSION "0.2.0"
#define SQLITE_BERT_VERSION_NUMBER 2000   /* major * 1000000 + minor * 1000 + patch */

/* Registers the bert_* functions and tables on `db`.  Loading the extension
 * again on a connection that has it keeps the models it registered. */
int sqlite3_bert_init(sqlite3 *db, char **pzErrMsg, const struct sqlite3_api_routines *pApi);

#ifdef __cplusplus
}
#endif

#endif
