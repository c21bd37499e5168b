/*
 * sparse_glue.h - what bert_sparse (functions.c) and bert_sparse_terms
 * (tables.c) share: their options_json read, their model found, the terms
 * computed.
 */
#ifndef BERT_SPARSE_GLUE_H
#define BERT_SPARSE_GLUE_H

#include "connection.h"
#include "../tasks/sparse.h"

/* fn(text, options_json): `options` is argument 1 (NULL when absent).  The
 * options are read even for a NULL text (text NULL), so that a bad option
 * is an error whatever the rows.  0 with *out, 1 for a NULL text (no
 * result), -1 with *err (malloc'd; NULL when memory ran out). */
int bert_glue_sparse(bert_connection *c, const char *fn, const char *text, size_t len, sqlite3_value *options,
                     sqlite3 *db, bert_sparse_terms *out, char **err);

#endif
