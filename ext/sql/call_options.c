/*
 * call_options.c - see call_options.h.
 */
#include "call_options.h"

#include "../base/error.h"
#include "../base/json.h"
#include "../base/function_options.h"
#include "signatures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bert_glue_is_options(sqlite3_value *arg)
{
    if (!arg || sqlite3_value_type(arg) != SQLITE_TEXT) return 0;
    const unsigned char *p = sqlite3_value_text(arg);
    while (p && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p && *p == '{';
}

/* The options object's keys, for the error about an unknown one. */
static const char *known_keys(int keys)
{
    return keys == BERT_OPTION_DIMENSIONS ? "\"model\" and \"dimensions\"" : "\"model\"";
}

int bert_glue_call_options(bert_connection *c, sqlite3_value *arg, const char *fn, int i, int keys,
                           bert_call_options *out, char **err)
{
    *err = NULL;
    memset(out, 0, sizeof *out);
    if (!bert_glue_is_options(arg)) {
        out->model = bert_glue_find_model(c, arg, fn, i, err);
        return out->model ? 0 : -1;
    }
    const char *text = (const char *)sqlite3_value_text(arg);
    if (!text) return -1;
    json_doc *doc = NULL;
    const char *example = keys == BERT_OPTION_DIMENSIONS ? "'{\"model\": \"minilm\", \"dimensions\": 64}'"
                                                         : "'{\"model\": \"minilm\"}'";
    if (bert_fn_options_parse(text, (size_t)sqlite3_value_bytes(arg), fn, example, &doc, err) != 0) return -1;
    char *model = NULL;
    long long dims = 0;
    int rc = 0, dims_given_wrong = 0;
    for (int n = bert_fn_options_first(doc); n >= 0 && rc == 0; n = doc->nodes[n].next_sibling) {
        const json_node *node = &doc->nodes[n];
        if (strcmp(node->key, "model") == 0) {
            rc = bert_fn_options_model(doc, n, fn, &model, err);
        } else if (keys == BERT_OPTION_DIMENSIONS && strcmp(node->key, "dimensions") == 0) {
            /* Checked once the model, and so the range, is known. */
            dims = node->type == JSON_INTEGER ? node->integer : 0;
            if (node->type != JSON_INTEGER) dims_given_wrong = 1;
        } else {
            *err = bert_fn_options_unknown(fn, node->key, known_keys(keys));
            rc = -1;
        }
    }
    if (rc == 0) {
        out->model = bert_registry_find(&c->registry, model, err);
        if (!out->model) rc = -1;
    }
    if (rc == 0 && (dims_given_wrong || dims < 0 || dims > bert_entry_hidden_size(out->model) ||
                    (dims == 0 && bert_json_member(doc, 0, "dimensions") >= 0))) {
        *err = bert_errorf("%s: option \"dimensions\" must be an integer from 1 to %d (the hidden size of model "
                           "'%s'): how many of the embedding's first values to keep", fn,
                           bert_entry_hidden_size(out->model), bert_entry_name(out->model));
        rc = -1;
    }
    if (rc == 0) out->dimensions = (int)dims;
    free(model);
    bert_json_free(doc);
    return rc;
}
