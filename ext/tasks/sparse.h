/*
 * sparse.h - learned sparse vectors (bert_sparse, bert_sparse_terms): a
 * text's weight on every vocabulary term, from a masked-LM head as SPLADE
 * defines them, or, for the queries of document-only models, from the
 * tokens alone.  Knows nothing of SQLite; the glue formats the terms.
 */
#ifndef BERT_SPARSE_H
#define BERT_SPARSE_H

#include "../base/interrupt.h"
#include "../models/registry.h"

#include <stddef.h>
#include <stdint.h>

typedef enum {
    /* SPLADE: w_j = max over positions i of log(1 + relu(logit_ij)). */
    BERT_SPARSE_DOCUMENT,
    /* The query side of document-only ("inference-free") models: each token
     * of the text weighted by the directory's idf.json, or 1 without one. */
    BERT_SPARSE_QUERY
} bert_sparse_mode;

typedef struct {
    char *model;          /* malloc'd; NULL: the default model */
    int top_k;            /* the heaviest top_k terms; 0: every non-zero term */
    double min_weight;    /* terms lighter than this are left out */
    bert_sparse_mode mode;
} bert_sparse_options;

/* Reads bert_sparse's options_json (NULL or empty: the defaults):
 * {"model", "top_k", "min_weight", "mode": "document" | "query"}.
 * `fn` names the function in errors.  0, or -1 with *err (malloc'd; NULL
 * when memory ran out).  Free with bert_sparse_options_free either way. */
int bert_sparse_options_parse(const char *json, size_t len, const char *fn, bert_sparse_options *out,
                              char **err);
void bert_sparse_options_free(bert_sparse_options *o);

typedef struct {
    int32_t id;
    float weight;
    char *token;          /* the vocabulary's token, a copy */
} bert_sparse_term;

typedef struct {
    bert_sparse_term *terms;   /* heaviest first; equal weights by id */
    int n;
} bert_sparse_terms;

/* The non-zero terms of `text` on model e, special tokens ([CLS], [SEP],
 * [PAD], [UNK], [MASK] and their kind) left out.  0, or -1 with *err. */
int bert_pipeline_sparse(bert_entry *e, const char *text, size_t len, const bert_sparse_options *o,
                         bert_sparse_terms *out, bert_interrupt_fn interrupted, void *ctx, char **err);
void bert_sparse_terms_free(bert_sparse_terms *t);

#endif
