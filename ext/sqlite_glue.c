/*
 * sqlite_glue.c - the SQL surface: registers the extension's functions.
 */
#include "sqlite_api.h"

#ifndef SQLITE_CORE
SQLITE_EXTENSION_INIT1
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
    (void)db;
    (void)pzErrMsg;
    return SQLITE_OK;
}
