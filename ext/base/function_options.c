/*
 * function_options.c - a SQL function's options_json (function_options.h).
 */
#include "function_options.h"

#include "error.h"

#include <stdlib.h>
#include <string.h>

int bert_fn_options_parse(const char *json, size_t len, const char *fn, const char *example, json_doc **doc,
                       char **err)
{
    *doc = NULL;
    *err = NULL;
    if (!json || len == 0) return 0;
    char *why = NULL;
    if (bert_json_parse(json, len, doc, &why) != 0) {
        /* No reason means memory ran out. */
        if (why) *err = bert_errorf("%s: options_json is not valid JSON (%s): pass an object such as %s", fn, why, example);
        free(why);
        return -1;
    }
    if ((*doc)->nodes[0].type != JSON_OBJECT) {
        *err = bert_errorf("%s: options_json must be a JSON object such as %s", fn, example);
        bert_json_free(*doc);
        *doc = NULL;
        return -1;
    }
    return 0;
}

int bert_fn_options_first(const json_doc *doc)
{
    return doc ? doc->nodes[0].first_child : -1;
}

int bert_fn_options_model(const json_doc *doc, int node, const char *fn, char **model, char **err)
{
    const json_node *n = &doc->nodes[node];
    if (n->type == JSON_NULL) return 0;
    if (n->type != JSON_TEXT) {
        *err = bert_errorf("%s: option \"model\" must be the name a model was registered with, a JSON string "
                           "(SELECT name FROM bert_models lists them)", fn);
        return -1;
    }
    free(*model);
    *model = strdup(n->text);
    return *model ? 0 : -1;
}

char *bert_fn_options_unknown(const char *fn, const char *key, const char *known)
{
    return bert_errorf("%s: unknown option \"%s\": the options are %s", fn, key, known);
}
