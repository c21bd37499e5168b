/*
 * call_options.h - the last argument of the functions that take either a
 * model name or an options object: bert_embed and bert_embed_each.  TEXT that starts with '{' is the object
 * ('{"model": "minilm", "dimensions": 64}'); anything else is read as the
 * model name, as before.
 */
#ifndef BERT_CALL_OPTIONS_H
#define BERT_CALL_OPTIONS_H

#include "connection.h"

typedef struct {
    bert_entry *model;
    int dimensions;          /* 1..hidden_size; 0 when not given (all of them) */
} bert_call_options;

/* Which keys the call takes besides "model". */
enum { BERT_OPTION_MODEL_ONLY = 0, BERT_OPTION_DIMENSIONS = 1 };

/* Reads `arg` (argument i of fn; NULL when the call left it out) into *out.
 * 0, or -1 with *err (malloc'd; NULL when memory ran out). */
int bert_glue_call_options(bert_connection *c, sqlite3_value *arg, const char *fn, int i, int keys,
                           bert_call_options *out, char **err);

/* 1 when `arg` is an options object rather than a model name. */
int bert_glue_is_options(sqlite3_value *arg);

#endif
