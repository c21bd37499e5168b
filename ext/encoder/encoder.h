/*
 * encoder.h - the BERT forward pass on OpenBLAS, pooling and the two
 * pre-training heads.
 *
 * Several sequences are packed back to back, without padding: every matrix
 * product runs over all their tokens at once and attention stays within each
 * sequence.  All temporary memory lives in a bert_scratch that the caller
 * keeps (one per connection) and reuses, so steady-state calls do not allocate.
 */
#ifndef BERT_ENCODER_H
#define BERT_ENCODER_H

#include <stdint.h>
#include "../base/interrupt.h"
#include "model.h"

typedef struct bert_scratch bert_scratch;

bert_scratch *bert_scratch_new(void);
void bert_scratch_free(bert_scratch *s);
/* Threads for each product of this scratch's calls; 0 (the default):
 * bert_threads_default(), OPENBLAS_NUM_THREADS or every core. */
void bert_scratch_set_threads(bert_scratch *s, int threads);


/* Runs the encoder over n_seqs sequences of lengths[i] tokens, packed in
 * ids[] (and type_ids[], or NULL for all segment 0).  Every length must be
 * 1..max_position_embeddings and every id below vocab_size (checked).
 * Returns the last hidden state [total_tokens x hidden_size], owned by the
 * scratch and valid until its next use, or NULL with *err (malloc'd) set. */
const float *bert_encode(const bert_model *m, bert_scratch *s,
                         const int32_t *ids, const int32_t *type_ids,
                         const int *lengths, int n_seqs,
                         bert_interrupt_fn interrupted, void *ctx, char **err);

/* bert_encode where sequence i attends only to its first keys[i] positions
 * (1..lengths[i]; keys NULL: all of them), as an attention mask of ones
 * then zeros does in transformers: the later tokens' outputs are still
 * computed, but no token sees them.  ColBERT's query expansion tokens are
 * such tokens.  Such sequences take the plain attention products. */
const float *bert_encode_keys(const bert_model *m, bert_scratch *s, const int32_t *ids, const int32_t *type_ids,
                              const int *lengths, const int *keys, int n_seqs, bert_interrupt_fn interrupted,
                              void *ctx, char **err);

/* What a forward pass shows of itself besides its last hidden state, for
 * bert_attention and bert_hidden_states; NULL in the normal path.  Each
 * callback may be NULL; one that returns non-zero stops the pass with its
 * *err (malloc'd; NULL when memory ran out). */
typedef struct {
    void *ctx;
    /* Every packed token's hidden state [tokens x hidden]: after the
     * embeddings' LayerNorm (layer 0, transformers' hidden_states[0]) and
     * after each layer l (layer l + 1). */
    int (*hidden_states)(void *ctx, int layer, const float *states, int tokens, int hidden, char **err);
    /* Whether head h of layer l is wanted by `attention` (NULL: every head). */
    int (*wants_head)(void *ctx, int layer, int head);
    /* Head h of layer l on sequence seq: the softmax probabilities
     * probs[len x len], a row for each query (from) position, a column for
     * each key (to); transformers' output_attentions.  They are recomputed
     * from the layer's queries and keys in double precision apart from the
     * fused attention kernels, so they are the same whichever kernel runs:
     * at a reduced precision, those of that precision's queries and keys. */
    int (*attention)(void *ctx, int layer, int head, int seq, const float *probs, int len, char **err);
} bert_observer;

/* bert_encode with an observer (NULL: bert_encode itself). */
const float *bert_encode_observed(const bert_model *m, bert_scratch *s,
                                  const int32_t *ids, const int32_t *type_ids,
                                  const int *lengths, int n_seqs, const bert_observer *observer,
                                  bert_interrupt_fn interrupted, void *ctx, char **err);

/* Pools one sequence's hidden states [len x H] into out[H]
 * (BERT_POOL_POOLER needs the pooler weights: returns -1 without them). */
int bert_pool(const bert_model *m, const float *hidden, int len,
              bert_pooling pooling, int normalize, float *out);

/* Masked-LM logits for the given rows of `hidden`: out[n x vocab_size].
 * -1 with *err when the model has no MLM head or memory ran out. */
int bert_mlm_logits(const bert_model *m, bert_scratch *s, const float *hidden,
                    const int *rows, int n, float *out, char **err);

/* Next-sentence prediction: probability that segment B follows segment A,
 * from the [CLS] row of the hidden state.  -1 when the model lacks the
 * pooler or the NSP head. */
int bert_nsp_probability(const bert_model *m, const float *cls_hidden, double *prob);

/* A sequence-classification head's logits, out[head.num_labels], from one
 * sequence's hidden states [len x H]: BERT's classifier on the pooler's
 * tanh(dense(h0)), DistilBERT's on ReLU(pre_classifier(h0)), RoBERTa's and
 * MPNet's on tanh(dense(h0)), ELECTRA's on gelu(dense(h0)), ModernBERT's on
 * its prediction head over h0 or the mean of every row (classifier_pooling).
 * -1 with *err when the model has no such head or memory ran out. */
int bert_classifier_logits(const bert_model *m, bert_scratch *s, const float *hidden, int len, float *out,
                           char **err);

/* A token-classification head's logits for n consecutive rows of hidden
 * states: out[n x head.num_labels].  -1 with *err without such a head. */
int bert_token_logits(const bert_model *m, bert_scratch *s, const float *hidden, int n, float *out, char **err);

/* A question-answering head's start and end logits for n consecutive rows
 * of hidden states: start[n], end[n].  -1 with *err without such a head. */
int bert_qa_logits(const bert_model *m, bert_scratch *s, const float *hidden, int n, float *start, float *end,
                   char **err);

/* For the tests: bytes currently held by the scratch buffers. */
size_t bert_scratch_bytes(const bert_scratch *s);

#endif
