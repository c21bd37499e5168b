/*
 * zero_shot_glue.c - see zero_shot_glue.h.
 */
#include "zero_shot_glue.h"

#include "../base/error.h"

#include <string.h>

int bert_glue_zero_shot(bert_connection *c, const char *fn, const char *text, size_t len, sqlite3_value *labels,
                        sqlite3_value *options, sqlite3 *db, bert_zero_shot_request *req,
                        bert_zero_shot_result *out, char **err)
{
    *err = NULL;
    memset(req, 0, sizeof *req);
    memset(out, 0, sizeof *out);
    const char *labels_json = NULL, *options_json = NULL;
    size_t labels_len = 0, options_len = 0;
    int got = bert_glue_text(labels, fn, 1, &labels_json, &labels_len, err);
    if (got != 0) return got;
    if (options && (got = bert_glue_text(options, fn, 2, &options_json, &options_len, err)) < 0) return -1;
    if (bert_zero_shot_parse(labels_json, labels_len, options_json, options_len, fn, req, err) != 0) return -1;
    if (!text) return 1;
    bert_entry *e = bert_registry_find(&c->registry, req->model, err);
    if (!e) return -1;
    return bert_pipeline_zero_shot(e, fn, text, len, req, out, bert_glue_interrupt_fn(), db, err);
}
