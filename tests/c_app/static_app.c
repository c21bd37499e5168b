/*
 * static_app.c - an application with sqlite-bert linked in (libsqlite_bert.a),
 * not loaded at run time: sqlite3_auto_extension() registers the functions on
 * every connection the application opens.
 *
 *   cc -Iext/sql -o static_app tests/c_app/static_app.c libsqlite_bert.a -lsqlite3 -lopenblas -lutf8proc -lpthread -lm
 *   ./static_app path/to/model
 */
#include <sqlite3.h>
#include <stdio.h>

#include "sqlite_bert.h"

static int embed_once(sqlite3 *db, const char *model, const char *label)
{
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT bert_load('default', ?1), length(bert_embed('hello world'))",
                                -1, &stmt, NULL);
    if (rc == SQLITE_OK) sqlite3_bind_text(stmt, 1, model, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW) {
        printf("%s: %d bytes\n", label, sqlite3_column_int(stmt, 1));
        rc = SQLITE_OK;
    } else {
        fprintf(stderr, "%s: %s\n", label, sqlite3_errmsg(db));
        rc = SQLITE_ERROR;
    }
    sqlite3_finalize(stmt);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODEL_DIRECTORY\n", argv[0]);
        return 2;
    }
    /* Every connection opened from now on has the bert_* functions. */
    if (sqlite3_auto_extension((void (*)(void))sqlite3_bert_init) != SQLITE_OK) return 1;

    sqlite3 *db = NULL;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) return 1;
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db, "SELECT bert_version()", -1, &stmt, NULL) != SQLITE_OK ||
        sqlite3_step(stmt) != SQLITE_ROW) {
        fprintf(stderr, "bert_version(): %s\n", sqlite3_errmsg(db));
        return 1;
    }
    printf("bert_version() = %s (header %s)\n", (const char *)sqlite3_column_text(stmt, 0), SQLITE_BERT_VERSION);
    sqlite3_finalize(stmt);
    int rc = embed_once(db, argv[1], "bert_embed");

    sqlite3 *second = NULL;
    if (rc == SQLITE_OK && sqlite3_open(":memory:", &second) == SQLITE_OK)
        rc = embed_once(second, argv[1], "second connection");
    sqlite3_close(second);
    sqlite3_close(db);
    return rc == SQLITE_OK ? 0 : 1;
}
