/*
 * sparse_glue.c - see sparse_glue.h.
 */
#include "sparse_glue.h"

#include "../base/error.h"

#include <stdio.h>
#include <string.h>

int bert_glue_sparse(bert_connection *c, const char *fn, const char *text, size_t len, sqlite3_value *options,
                     sqlite3 *db, bert_sparse_terms *out, char **err)
{
    *err = NULL;
    memset(out, 0, sizeof *out);
    const char *json = NULL;
    size_t json_len = 0;
    if (options && sqlite3_value_type(options) != SQLITE_NULL) {
        if (sqlite3_value_type(options) != SQLITE_TEXT) {
            char problem[160];
            snprintf(problem, sizeof problem, "must be a JSON object as TEXT, such as '{\"top_k\": 64}', not %s",
                     bert_glue_type_name(sqlite3_value_type(options)));
            *err = bert_glue_argument_error(fn, 1, problem);
            return -1;
        }
        json = (const char *)sqlite3_value_text(options);
        json_len = (size_t)sqlite3_value_bytes(options);
        if (!json) return -1;
    }
    bert_sparse_options o;
    if (bert_sparse_options_parse(json, json_len, fn, &o, err) != 0) return -1;
    int rc = 1;
    if (text) {
        bert_entry *e = bert_registry_find(&c->registry, o.model, err);
        rc = e ? bert_pipeline_sparse(e, text, len, &o, out, bert_glue_interrupt_fn(), db, err) : -1;
    }
    bert_sparse_options_free(&o);
    return rc;
}
