/*
 * connection.c - what every SQL function and table shares: the state of a
 * connection (its registry of models), the interrupt poll, and the rules
 * every argument follows, so that the scalar functions (functions.c) and
 * the table-valued ones (tables.c) read and report arguments alike.
 */
#include "connection.h"

#include "../base/error.h"
#include "signatures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bert_connection *bert_connection_retain(bert_connection *c)
{
    c->refs++;
    return c;
}

void bert_connection_release(void *p)
{
    bert_connection *c = p;
    if (c && --c->refs == 0) {
        bert_registry_clear(&c->registry);
        sqlite3_free(c);
    }
}

#if SQLITE_VERSION_NUMBER >= 3041000
static int poll_interrupt(void *db)
{
    return sqlite3_is_interrupted((sqlite3 *)db);
}
bert_interrupt_fn bert_glue_interrupt_fn(void) { return poll_interrupt; }
#else
bert_interrupt_fn bert_glue_interrupt_fn(void) { return NULL; }
#endif

void bert_glue_fail(sqlite3_context *ctx, char *msg)
{
    if (msg) sqlite3_result_error(ctx, msg, -1);
    else sqlite3_result_error_nomem(ctx);
    free(msg);
#if SQLITE_VERSION_NUMBER >= 3041000
    /* An abandoned forward pass is reported the way SQLite reports interrupts. */
    if (sqlite3_is_interrupted(sqlite3_context_db_handle(ctx))) sqlite3_result_error_code(ctx, SQLITE_INTERRUPT);
#endif
}

const char *bert_glue_type_name(int t)
{
    switch (t) {
    case SQLITE_INTEGER: return "an INTEGER";
    case SQLITE_FLOAT: return "a REAL";
    case SQLITE_BLOB: return "a BLOB";
    case SQLITE_NULL: return "NULL";
    default: return "TEXT";
    }
}

char *bert_glue_argument_error(const char *fn, int i, const char *problem)
{
    char name[64];
    const bert_signature *sig = bert_signature_find(fn);
    if (sig) bert_signature_argument(sig, i, name, sizeof name);
    return bert_errorf("%s: argument %d (%s) %s; " BERT_SEE_FUNCTIONS, fn, i + 1, sig ? name : "?", problem);
}

char *bert_glue_not_text(const char *fn, int i, int t)
{
    char problem[160];
    snprintf(problem, sizeof problem, "must be TEXT, not %s: %s", bert_glue_type_name(t),
             t == SQLITE_BLOB ? "cast it with CAST(x AS TEXT) if it holds UTF-8"
             : t == SQLITE_NULL ? "give a text" : "write it as a text such as '42', or CAST(x AS TEXT)");
    return bert_glue_argument_error(fn, i, problem);
}

int bert_glue_text(sqlite3_value *v, const char *fn, int i, const char **text, size_t *len, char **err)
{
    *text = NULL;
    *len = 0;
    *err = NULL;
    int t = sqlite3_value_type(v);
    if (t == SQLITE_NULL) return 1;
    if (t != SQLITE_TEXT) {
        *err = bert_glue_not_text(fn, i, t);
        return -1;
    }
    *text = (const char *)sqlite3_value_text(v);
    if (!*text) return -1;   /* out of memory: *err stays NULL */
    *len = (size_t)sqlite3_value_bytes(v);
    return 0;
}

bert_entry *bert_glue_find_model(bert_connection *c, sqlite3_value *name, const char *fn, int i, char **err)
{
    *err = NULL;
    if (!name) return bert_registry_find(&c->registry, NULL, err);
    int t = sqlite3_value_type(name);
    if (t == SQLITE_NULL) {
        /* A NULL name stands for the default model; when there is none, the
         * NULL is what to fix, not the registry. */
        char *why = NULL;
        bert_entry *e = bert_registry_find(&c->registry, NULL, &why);
        if (e) return e;
        free(why);
        *err = bert_glue_argument_error(fn, i, "is NULL, the model name: give the name a model was registered "
                                               "with (SELECT name FROM bert_models), such as "
                                               "'minilm' after SELECT bert_load('minilm', '/path/to/model'), or "
                                               "leave the argument out for the default model");
        return NULL;
    }
    if (t != SQLITE_TEXT) {
        char problem[128];
        snprintf(problem, sizeof problem, "is not a model name: a model name must be TEXT such as 'default', "
                 "not %s", bert_glue_type_name(t));
        *err = bert_glue_argument_error(fn, i, problem);
        return NULL;
    }
    const char *n = (const char *)sqlite3_value_text(name);
    if (!n) return NULL;
    return bert_registry_find(&c->registry, n, err);
}

/* Appends `s` as a JSON string literal. */
void bert_glue_json_string(sqlite3_str *out, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    sqlite3_str_appendchar(out, 1, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': sqlite3_str_append(out, "\\\"", 2); break;
        case '\\': sqlite3_str_append(out, "\\\\", 2); break;
        case '\n': sqlite3_str_append(out, "\\n", 2); break;
        case '\r': sqlite3_str_append(out, "\\r", 2); break;
        case '\t': sqlite3_str_append(out, "\\t", 2); break;
        default:
            if (*p < 0x20) {
                char esc[6] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15]};
                sqlite3_str_append(out, esc, 6);
            } else {
                sqlite3_str_appendchar(out, 1, (char)*p);
            }
        }
    }
    sqlite3_str_appendchar(out, 1, '"');
}

int bert_glue_top_k(sqlite3_value *v, int is_last, const char *fn, const char *leading, int *top_k, char **err)
{
    *top_k = 5;
    *err = NULL;
    if (!v || sqlite3_value_type(v) == SQLITE_NULL) return 0;
    int t = sqlite3_value_type(v);
    sqlite3_int64 k = sqlite3_value_int64(v);
    if (t == SQLITE_TEXT && is_last) {
        *err = bert_errorf("%s: top_k must be a positive INTEGER such as 5, not TEXT; the model "
                           "name goes after it: %s(%s, 5, '%s'); " BERT_SEE_FUNCTIONS, fn, fn, leading,
                           sqlite3_value_text(v));
        return -1;
    }
    if (t != SQLITE_INTEGER || k < 1 || k > 1000000) {
        *err = bert_errorf("%s: top_k must be a positive INTEGER such as 5; " BERT_SEE_FUNCTIONS, fn);
        return -1;
    }
    *top_k = (int)k;
    return 0;
}
