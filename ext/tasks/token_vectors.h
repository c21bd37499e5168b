/*
 * token_vectors.h - late interaction's token vectors (bert_token_vectors):
 * a text's tokens as ColBERT models saved by PyLate turn them into unit
 * vectors, one per token, for bert_maxsim.  Knows nothing of SQLite; the
 * glue returns the BLOB.
 */
#ifndef BERT_TOKEN_VECTORS_H
#define BERT_TOKEN_VECTORS_H

#include "../base/interrupt.h"
#include "../models/registry.h"

#include <stddef.h>

typedef enum { BERT_TOKENS_QUERY, BERT_TOKENS_DOCUMENT } bert_tokens_side;

/* The token vectors of `text` on model e as a token-vectors BLOB
 * (vectors.h: the BTV1 header, then n x d float32), *blob malloc'd and
 * *bytes long.  Follows PyLate's ColBERT.encode with the settings of the
 * directory's config_sentence_transformers.json (its defaults otherwise):
 * the query or document prefix token after [CLS], truncation to
 * query_length or document_length, queries padded with [MASK] to
 * query_length and those expansion tokens unseen by attention unless
 * attend_to_expansion_tokens, the Dense module's projection (none: vectors
 * of hidden_size), documents without skiplist_words' tokens, every vector
 * L2-normalised.  0, or -1 with *err. */
int bert_pipeline_token_vectors(bert_entry *e, const char *text, size_t len, bert_tokens_side side,
                                unsigned char **blob, size_t *bytes, bert_interrupt_fn interrupted, void *ctx,
                                char **err);

#endif
