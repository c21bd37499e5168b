/*
 * train_net.h - the network the trainer differentiates: every parameter of
 * the encoder and of one head in one block, a forward pass that keeps what
 * the backward pass needs, and the backward pass itself (train_net.c,
 * train_layers.c, train_heads.c).  Internal to the trainer (trainer.c) and
 * its tests.
 *
 * The arithmetic is written over `treal`: float in the extension, double
 * when compiled with BERT_TRAIN_DOUBLE, so that the tests check the very
 * same code against finite differences in double precision, where a
 * difference quotient is accurate to 1e-8 instead of 1e-3.  The double
 * build's symbols end in _f64 (TN) so that both builds link into one program.
 */
#ifndef BERT_TRAIN_NET_H
#define BERT_TRAIN_NET_H

#include "../base/workers.h"
#include "model.h"
#include "trainer.h"

#include <stddef.h>
#include <stdint.h>

#ifdef BERT_TRAIN_DOUBLE
typedef double treal;
#define TN(name) name##_f64
#define TGEMM cblas_dgemm
#else
typedef float treal;
#define TN(name) name
#define TGEMM cblas_sgemm
#endif

/* The tensors, in the order of the block: the embeddings, each layer's
 * sixteen (bert_layer_weights' order), then the head's dense layer (BERT's
 * pooler, DistilBERT's pre_classifier, RoBERTa's classifier.dense) and
 * output layer (classifier, out_proj, qa_outputs).  Absent ones have no rows. */
enum {
    TN_WORD, TN_POS, TN_TYPE, TN_EMB_LN_W, TN_EMB_LN_B,
    TN_LAYER0,
    /* within a layer, TN_LAYER0 + 16 * l + k */
    TN_Q_W = 0, TN_Q_B, TN_K_W, TN_K_B, TN_V_W, TN_V_B, TN_O_W, TN_O_B, TN_LN1_W, TN_LN1_B,
    TN_F1_W, TN_F1_B, TN_F2_W, TN_F2_B, TN_LN2_W, TN_LN2_B, TN_PER_LAYER
};
#define TN_HEAD_DENSE_W(layers) (TN_LAYER0 + TN_PER_LAYER * (layers))
/* MPNet's relative position bias [buckets x heads], after the head. */
#define TN_REL(layers) (TN_HEAD_DENSE_W(layers) + 4)
/* ELECTRA's embeddings_project [H x E] and its bias [H], when E != H. */
#define TN_PROJ_W(layers) (TN_HEAD_DENSE_W(layers) + 5)
#define TN_PROJ_B(layers) (TN_HEAD_DENSE_W(layers) + 6)
#define TN_TENSORS(layers) (TN_HEAD_DENSE_W(layers) + 7)

typedef struct {
    size_t off;          /* floats from the block's start */
    int rows, cols;      /* cols 0: a vector of `rows` */
    int decay;           /* AdamW's weight decay applies (not biases, not LayerNorms) */
    int head;            /* trained also with freeze_encoder */
    int pad_row;         /* a row that gets no gradient (padding_idx), or -1 */
    int frozen;          /* never trained nor clipped: DistilBERT's sinusoidal positions (requires_grad False) */
} tn_tensor;

/* What the network computes, from the model's config and the settings. */
typedef struct {
    bert_family family;
    int vocab, H, layers, heads, FF, max_pos, type_vocab;
    int E;                   /* the embeddings' width: ELECTRA's embedding_size, projected to H when it differs; else H */
    float eps;
    bert_activation act;
    int word_pad;            /* word embeddings' padding_idx */
    int pos_pad;             /* RoBERTa, MPNet: position padding_idx, positions from pos_pad + 1; else -1 */
    int rel_buckets;         /* MPNet: rows of the relative position bias; else 0 */
    bert_train_task task;
    int outputs;             /* the head's output rows: labels, 1 (regression), 2 (QA), 0 (EMBED) */
    int seq_head;            /* CLASSIFY, MULTI_LABEL, REGRESSION: the head on the first token */
    int dense_in_dropout;    /* RoBERTa's, MPNet's and ELECTRA's sequence heads: dropout before the dense layer too */
    float p_hidden, p_attention, p_head;
    bert_pooling pooling;    /* EMBED */
    float scale;             /* EMBED */
    int freeze_encoder;
    int fixed_positions;     /* DistilBERT's sinusoidal_pos_embds: the position embeddings are frozen */
} tn_config;

/* A tensor layout for cfg: fills t[TN_TENSORS(layers)], returns the block's floats. */
size_t TN(tn_layout)(const tn_config *cfg, tn_tensor *t);

typedef struct tn_net tn_net;

/* A network over parameters `w` and gradients `g` (blocks laid out by
 * tn_layout, owned by the caller).  workers may be NULL. */
tn_net *TN(tn_net_new)(const tn_config *cfg, const tn_tensor *t, treal *w, treal *g, bert_workers *workers,
                       int threads, uint64_t seed);
void TN(tn_net_free)(tn_net *n);
/* Restarts the dropout draws from `seed`: the same masks again (finite differences). */
void TN(tn_net_reseed)(tn_net *n, uint64_t seed);

/* Forward and backward over one batch: adds scale x the gradient to g.
 * 0; 1 interrupted; -1 with *err. */
int TN(tn_net_accumulate)(tn_net *n, const bert_train_batch *b, double scale, double *loss,
                          bert_interrupt_fn interrupted, void *ctx, char **err);

/* The forward pass alone, without dropout: the head's outputs of each
 * sequence (sequence heads [n x outputs]; TOKENS and QA [n x max_len x
 * outputs]; EMBED the pooled vectors [n x H]) into out, for the tests. */
int TN(tn_net_outputs)(tn_net *n, const bert_train_batch *b, treal *out, char **err);

/* ---- inside the network (train_layers.c, train_heads.c) ---------------------- */

/* C[M x N] = alpha op(A) op(B) + beta C, row-major, shared out by rows of C
 * over the threads. */
typedef struct {
    bert_workers *workers;
    int threads;
} tn_threads;

void TN(tn_gemm)(const tn_threads *th, int trans_a, int trans_b, int M, int N, int K, treal alpha, const treal *A,
                 int lda, const treal *B, int ldb, treal beta, treal *C, int ldc);

/* y[n x rows] = x[n x cols] W^T + b. */
void TN(tn_linear)(const tn_threads *th, treal *y, const treal *x, const treal *w, const treal *b, int n, int rows,
                   int cols);
/* dW += dy^T x, db += column sums of dy (NULLs skip), dx = dy W (+= when accumulate; dx NULL skips). */
void TN(tn_linear_back)(const tn_threads *th, const treal *dy, const treal *x, const treal *w, treal *dw, treal *db,
                        treal *dx, int accumulate, int n, int rows, int cols);

/* y = LayerNorm(x) row by row, keeping xhat and 1/std for the backward. */
void TN(tn_layer_norm)(treal *y, treal *xhat, treal *rstd, const treal *x, const treal *w, const treal *b, int n,
                       int dim, float eps);
/* dx = the gradient through the LayerNorm of dy (dx may be dy); dw, db accumulated (NULL: skipped). */
void TN(tn_layer_norm_back)(treal *dx, const treal *dy, const treal *xhat, const treal *rstd, const treal *w,
                            treal *dw, treal *db, int n, int dim);

void TN(tn_activate)(const tn_threads *th, treal *y, const treal *x, size_t n, bert_activation act);
/* dx = dy * act'(x) (dx may be dy). */
void TN(tn_activate_back)(const tn_threads *th, treal *dx, const treal *dy, const treal *x, size_t n,
                          bert_activation act);

/* The trainer's random numbers: xoshiro256** seeded by splitmix64. */
typedef struct {
    uint64_t s[4];
} tn_rng;
void TN(tn_rng_seed)(tn_rng *r, uint64_t seed);
uint64_t TN(tn_rng_next)(tn_rng *r);
/* Uniform in [0, 1) with 53 bits. */
double TN(tn_rng_uniform)(tn_rng *r);
/* Normal(0, 1) by Box-Muller. */
double TN(tn_rng_normal)(tn_rng *r);

/* Inverted dropout in place: x *= keep / (1 - p), keep[i] drawn with
 * probability 1 - p (keep is where the draws are kept for the backward). */
void TN(tn_dropout)(tn_rng *r, treal *x, uint8_t *keep, size_t n, float p);
void TN(tn_dropout_back)(treal *dx, const uint8_t *keep, size_t n, float p);

/* Self-attention of n sequences of L positions padded, lengths[i] keys
 * each: ctx = dropout(softmax(q k^T / sqrt(dh) + mask)) v, per head.
 * Neither the probabilities nor the dropout draws are kept: the backward
 * computes them again from q and k and from `seed`. */
typedef struct {
    const tn_threads *th;
    int n, L, H, heads;
    const int *lengths;
    float p;              /* attention dropout */
    uint64_t seed;        /* the layer's dropout draws: the same in the forward and the backward */
    const treal *rel;     /* MPNet: the relative position bias [buckets x heads] added to the scores, or NULL */
    treal *drel;          /* its gradient (accumulated), with rel */
} tn_attention;

/* scratch: tn_attention_scratch floats, for this and the backward. */
void TN(tn_attention_forward)(const tn_attention *a, treal *ctx, const treal *q, const treal *k, const treal *v,
                              treal *scratch);
/* dq, dk, dv (overwritten) from dctx. */
size_t TN(tn_attention_scratch)(const tn_attention *a);
void TN(tn_attention_back)(const tn_attention *a, treal *dq, treal *dk, treal *dv, const treal *dctx,
                           const treal *q, const treal *k, const treal *v, treal *scratch);

/* The head and its loss on the last hidden state hidden [n*L x H]:
 * *loss, and dhidden (overwritten, scale x d loss / d hidden) and the head's
 * gradients.  train 0: no dropout, no loss (outputs into out when not NULL). */
size_t TN(tn_head_floats)(const tn_config *c, int n, int L);
/* Bytes of keep (dropout draws) the head needs. */
size_t TN(tn_head_keep)(const tn_config *c, int n, int L);
int TN(tn_head)(const tn_config *c, const tn_tensor *t, const treal *w, treal *g, const tn_threads *th, tn_rng *rng,
                const bert_train_batch *b, const treal *hidden, treal *dhidden, treal *work, uint8_t *keep,
                double scale, int train, double *loss, treal *out, char **err);

#endif
