/*
 * zero_shot_glue.h - what bert_zero_shot (functions.c) and
 * bert_zero_shot_each (tables.c) share: their labels_json and options_json
 * read, their model found, the labels scored.
 */
#ifndef BERT_ZERO_SHOT_GLUE_H
#define BERT_ZERO_SHOT_GLUE_H

#include "connection.h"
#include "../tasks/zero_shot.h"

/* fn(text, labels_json [, options_json]): labels is argument 1, options
 * argument 2 (NULL when absent).  The arguments are read even for a NULL
 * text, so that a bad one is an error whatever the rows.  0 with *req and
 * *out, 1 for a NULL text or labels_json (no result), -1 with *err
 * (malloc'd; NULL when memory ran out).  Free *req and *out either way. */
int bert_glue_zero_shot(bert_connection *c, const char *fn, const char *text, size_t len, sqlite3_value *labels,
                        sqlite3_value *options, sqlite3 *db, bert_zero_shot_request *req,
                        bert_zero_shot_result *out, char **err);

#endif
