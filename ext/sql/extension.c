/*
 * extension.c - the extension's entry point, sqlite3_bert_init: SQLite calls
 * it when the extension is loaded (or, linked in, from sqlite3_auto_extension)
 * and it registers the scalar functions (functions.c) and the table-valued
 * ones (tables.c) on the connection, over one registry of models.
 */
#include "connection.h"
#include "register.h"
#include "sqlite_bert.h"

#include <string.h>

#ifndef SQLITE_CORE
SQLITE_EXTENSION_INIT1
#endif

/* The version of sqlite-bert already registered on `db` (sqlite3_malloc'd),
 * or NULL when it has none.  Loading the extension again must not replace
 * the functions: their state is the connection's registry of models. */
static char *loaded_version(sqlite3 *db)
{
    sqlite3_stmt *stmt = NULL;
    char *version = NULL;
    if (sqlite3_prepare_v2(db, "SELECT bert_version()", -1, &stmt, NULL) != SQLITE_OK) {
        /* "no such function": the usual answer.  sqlite3_open() reads the
         * connection's last error after running auto-extensions, so a
         * statement that prepares clears it again. */
        if (sqlite3_prepare_v2(db, "SELECT 1", -1, &stmt, NULL) == SQLITE_OK) sqlite3_finalize(stmt);
        return NULL;
    }
    if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0))
        version = sqlite3_mprintf("%s", (const char *)sqlite3_column_text(stmt, 0));
    sqlite3_finalize(stmt);
    return version;
}

#ifdef _WIN32
__declspec(dllexport)
#else
__attribute__((visibility("default")))
#endif
#ifdef _WIN32
__declspec(dllexport)
#else
__attribute__((visibility("default")))
#endif
int sqlite3_bert_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi)
{
#ifndef SQLITE_CORE
    SQLITE_EXTENSION_INIT2(pApi);
#else
    (void)pApi;
#endif
    char *version = loaded_version(db);
    if (version) {
        int same = strcmp(version, SQLITE_BERT_VERSION) == 0;
        if (!same && pzErrMsg)
            *pzErrMsg = sqlite3_mprintf("bert: version %s is already loaded in this connection; open a "
                                        "new connection to use version %s", version, SQLITE_BERT_VERSION);
        sqlite3_free(version);
        return same ? SQLITE_OK : SQLITE_ERROR;
    }
    bert_connection *c = sqlite3_malloc(sizeof *c);
    if (!c) return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    c->refs = 1;   /* held by this function until registration is over */
    int rc = bert_register_functions(db, c);
    if (rc == SQLITE_OK) rc = bert_register_tables(db, c);
    if (rc == SQLITE_OK) rc = bert_register_train(db, c);
    if (rc != SQLITE_OK && pzErrMsg)
        *pzErrMsg = sqlite3_mprintf("bert: cannot register the SQL functions: %s", sqlite3_errmsg(db));
    bert_connection_release(c);
    return rc;
}
