/*
 * connection.h - what the scalar functions (functions.c) and the
 * table-valued ones (tables.c) share: the per-connection state and the
 * argument helpers (connection.c).
 */
#ifndef BERT_CONNECTION_H
#define BERT_CONNECTION_H

#include "../base/sqlite_api.h"
#include "../base/interrupt.h"
#include "../models/registry.h"

#include <stddef.h>

/* sqlite-vec's subtype for a float32 vector BLOB, and SQLite's for JSON text. */
#define BERT_SUBTYPE_FLOAT32 223
#define BERT_SUBTYPE_JSON 74

/* One per connection: its registered models.  Every function and module
 * registered on the connection holds a reference; the last one frees it. */
typedef struct {
    bert_registry registry;
    int refs;
} bert_connection;

bert_connection *bert_connection_retain(bert_connection *c);
void bert_connection_release(void *c);

/* The interrupt poll handed to the encoder: non-zero once sqlite3_interrupt()
 * was called on `db` (where the SQLite version can tell). */
bert_interrupt_fn bert_glue_interrupt_fn(void);

/* Resolves the model named by argument i (0-based) of fn, `name`: the
 * default model when the argument is absent (name NULL) or SQL NULL.  On
 * failure returns NULL with *err (malloc'd; NULL when memory ran out). */
bert_entry *bert_glue_find_model(bert_connection *c, sqlite3_value *name, const char *fn, int i, char **err);

/* Reads argument i (0-based) of fn by the one rule every text argument
 * follows, in scalar and table functions alike: TEXT is read as it is, NULL
 * gives 1 (the function returns NULL, or no rows), and anything else (a
 * number, a BLOB) is an error naming the argument.  0 with *text and *len,
 * 1 for NULL, -1 with *err (malloc'd; NULL when memory ran out). */
int bert_glue_text(sqlite3_value *v, const char *fn, int i, const char **text, size_t *len, char **err);

/* Reports a malloc'd message (NULL meaning out of memory) as the error of
 * a scalar function's call, and frees it. */
void bert_glue_fail(sqlite3_context *ctx, char *msg);

/* "an INTEGER", "a REAL", "a BLOB", "NULL" or "TEXT": an SQL type as errors name it. */
const char *bert_glue_type_name(int sqlite_type);

/* The error for argument i of fn, of SQL type t, where TEXT was wanted. */
char *bert_glue_not_text(const char *fn, int i, int t);

/* "fn: argument i+1 (its name) <problem>; SELECT * FROM bert_functions ...":
 * every error about an argument ends by pointing to bert_functions. */
char *bert_glue_argument_error(const char *fn, int i, const char *problem);

/* The top_k argument `v` of `fn` (absent or NULL: 5) into *top_k: 0, or -1
 * with *err (malloc'd) unless it is a positive INTEGER.  A TEXT top_k that
 * is the call's last argument (is_last) was most likely meant as the model;
 * the error then shows the call with `leading` (the arguments before top_k). */
int bert_glue_top_k(sqlite3_value *v, int is_last, const char *fn, const char *leading, int *top_k, char **err);

/* Appends `s` as a JSON string literal. */
void bert_glue_json_string(sqlite3_str *out, const char *s);

#endif
