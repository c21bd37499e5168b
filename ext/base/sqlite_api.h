/*
 * sqlite_api.h - how the SQL layer (ext/sql/) and the JSON reader (json.c)
 * reach SQLite's API.
 *
 * Built as a loadable extension, every call goes through the routine table
 * that SQLite hands to sqlite3_bert_init (defined in sql/extension.c).  Built
 * with -DSQLITE_CORE (tests, fuzzers, static linking) the calls are direct.
 */
#ifndef BERT_SQLITE_API_H
#define BERT_SQLITE_API_H

#include <sqlite3ext.h>

#ifndef SQLITE_CORE
SQLITE_EXTENSION_INIT3
#endif

#endif
