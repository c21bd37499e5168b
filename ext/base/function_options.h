/*
 * function_options.h - a SQL function's options_json: the object every function
 * with options takes, read the same way and refused with the same words.
 *
 *   json_doc *doc;
 *   if (bert_fn_options_parse(json, len, "bert_sparse", "'{\"top_k\": 64}'", &doc, err) != 0) return -1;
 *   for (int c = bert_fn_options_first(doc); c >= 0; c = doc->nodes[c].next_sibling) {
 *       if (strcmp(doc->nodes[c].key, "model") == 0) { if (bert_fn_options_model(doc, c, fn, &model, err)) ...; }
 *       else { *err = bert_fn_options_unknown(fn, doc->nodes[c].key, "\"model\" and \"top_k\""); ... }
 *   }
 *   bert_json_free(doc);
 */
#ifndef BERT_FUNCTION_OPTIONS_H
#define BERT_FUNCTION_OPTIONS_H

#include "json.h"

#include <stddef.h>

/* Parses options_json of function `fn`.  0 with *doc the object, or NULL
 * when json is NULL or empty (no options); -1 with *err (malloc'd; NULL when
 * memory ran out) when it is not JSON or not an object, the message showing
 * `example`, an options object the function takes. */
int bert_fn_options_parse(const char *json, size_t len, const char *fn, const char *example, json_doc **doc,
                       char **err);

/* The first option's node, or -1 (also for doc NULL). */
int bert_fn_options_first(const json_doc *doc);

/* Option "model" at `node`: *model a malloc'd copy of its text, left NULL
 * for JSON null (the default model).  0, or -1 with *err when it is not a
 * text or memory ran out (*err NULL). */
int bert_fn_options_model(const json_doc *doc, int node, const char *fn, char **model, char **err);

/* The message for an option `fn` does not take; `known` lists those it
 * does, as the message shows them. */
char *bert_fn_options_unknown(const char *fn, const char *key, const char *known);

#endif
