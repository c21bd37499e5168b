/*
 * encoder.c - BERT's forward pass on OpenBLAS.
 *
 * The sequences of a call are packed back to back into one [T x H] matrix
 * (T = all their tokens), so every projection is a single sgemm over the
 * whole batch and no work is spent on padding.  Only attention looks at one
 * sequence at a time, which is what keeps the sequences apart.
 *
 * Weights are row-major [out x in] like nn.Linear's, so a projection is
 * x W^T + b (linear.c).
 */
#include "encoder.h"
#include "../base/error.h"
#include "../kernels/cpu.h"
#include "../kernels/fast_math.h"
#include "../kernels/linear.h"
#include "../base/workers.h"
#include "rotary.h"
#include "steps.h"

#include <assert.h>
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bert_scratch {
    float *work;          /* the encoder's activations, see encode_buffers */
    size_t work_cap;      /* floats */
    float *head;          /* the MLM head's rows */
    size_t head_cap;
    bert_workers *workers; /* started when threads > 1 */
    int threads;           /* per product; 0 until set or first used */
    bert_linear_plan plan; /* the kernels and threads of every product, chosen once */
    bert_linear_scratch lowp; /* bfloat16 / int8 products' input rows, kept between calls */
};

bert_scratch *bert_scratch_new(void)
{
    bert_scratch *s = calloc(1, sizeof(bert_scratch));
    if (s) {
        s->plan = bert_linear_plan_for(bert_cpu_isa());
        s->plan.scratch = &s->lowp;
    }
    return s;
}

void bert_scratch_set_threads(bert_scratch *s, int threads)
{
    if (s) s->threads = threads > 0 ? threads : 0;
}

void bert_scratch_free(bert_scratch *s)
{
    if (!s) return;
    free(s->work);
    free(s->head);
    bert_linear_scratch_free(&s->lowp);
    bert_workers_free(s->workers);
    free(s);
}

size_t bert_scratch_bytes(const bert_scratch *s)
{
    return s ? (s->work_cap + s->head_cap) * sizeof(float) + s->lowp.size : 0;
}

/* Makes *buf hold at least `floats`; the old contents are not kept. */
static int reserve(float **buf, size_t *cap, size_t floats)
{
    if (floats <= *cap) return 0;
    free(*buf);
    *buf = malloc(floats * sizeof(float));
    *cap = *buf ? floats : 0;
    return *buf ? 0 : -1;
}

/* The plan's threads: the connection's helper threads, when there is use
 * for them and they can be had (else the calling thread only). */
static const bert_linear_plan *plan_threads(bert_scratch *s)
{
    /* Called in any case: the first call also sets OpenBLAS to one thread. */
    int fallback = bert_threads_default();
    if (!s->threads) s->threads = fallback;
    if (!s->workers && s->threads > 1) s->workers = bert_workers_new();
    s->plan.workers = s->workers;
    s->plan.threads = s->workers ? s->threads : 1;
    return &s->plan;
}

/* ------------------------------------------------------------ building blocks */

/* out = LayerNorm(in + res) row by row (res may be NULL; out may be in).
 * Statistics in double, over eight lanes the compiler vectorizes: the rows
 * are long and their values far from zero-mean after the residual. */
BERT_INLINE void add_layer_norm_body(float *out, const float *in, const float *res, const float *w,
                                     const float *b, int n, int dim, float eps)
{
    for (int i = 0; i < n; i++) {
        const float *x = in + (size_t)i * dim;
        float *y = out + (size_t)i * dim;
        if (res) {
            const float *r = res + (size_t)i * dim;
            for (int j = 0; j < dim; j++) y[j] = x[j] + r[j];
            x = y;
        }
        double lane[8] = {0}, mean = 0, var = 0;
        int j = 0;
        for (; j + 8 <= dim; j += 8)
            for (int l = 0; l < 8; l++) lane[l] += x[j + l];
        for (; j < dim; j++) mean += x[j];
        for (int l = 0; l < 8; l++) mean += lane[l];
        mean /= dim;
        double vlane[8] = {0};
        for (j = 0; j + 8 <= dim; j += 8)
            for (int l = 0; l < 8; l++) vlane[l] += (x[j + l] - mean) * (x[j + l] - mean);
        for (; j < dim; j++) var += (x[j] - mean) * (x[j] - mean);
        for (int l = 0; l < 8; l++) var += vlane[l];
        float inv = (float)(1.0 / sqrt(var / dim + eps));
        float mu = (float)mean;
        for (j = 0; j < dim; j++) y[j] = (x[j] - mu) * inv * w[j] + b[j];
    }
}
BERT_MULTIVERSION(add_layer_norm,
                  (float *out, const float *in, const float *res, const float *w, const float *b,
                   int n, int dim, float eps),
                  (out, in, res, w, b, n, dim, eps))

/* The activations: steps.c's vector loops (GELU was a tenth of the
 * encoder's time while its loop was scalar). */
static void activate(bert_isa isa, float *x, size_t n, bert_activation act) { bert_step_activate(isa, x, n, act); }

/* Sixteen floats as one value, for the running max and sum of a softmax
 * row: GCC and clang compile these to the vector registers of whichever
 * instruction set the body is built for.  Loops over lanes of an array
 * stay scalar (a chain of dependent max instructions took half of a
 * 450-token text's softmax), since a max or sum reduction may not be
 * reordered for the compiler without fast-math.  Two of them a step, so
 * that one's add or compare does not wait for the other's. */
typedef float lanes16 __attribute__((vector_size(64)));
typedef int32_t mask16 __attribute__((vector_size(64)));

/* *acc = the greater of *acc and the 16 floats at p, lane by lane (a NaN at
 * p is passed over).  Pointers, not vector values: a 64-byte vector
 * argument would change the ABI of the functions built without AVX-512. */
BERT_INLINE void lanes_max_into(lanes16 *acc, const float *p)
{
    lanes16 v;
    memcpy(&v, p, sizeof v);
    mask16 greater = v > *acc;
    *acc = (lanes16)(((mask16)v & greater) | ((mask16)*acc & ~greater));
}

BERT_INLINE void lanes_add_into(lanes16 *acc, const float *p)
{
    lanes16 v;
    memcpy(&v, p, sizeof v);
    *acc += v;
}

/* Columns of a row of scores as softmax_numerators takes it: len rounded
 * up to whole vectors of 16. */
static int softmax_width(int len) { return (len + 15) / 16 * 16; }

/* Softmax numerators of n rows of len scores (leading dimension ld, at
 * least softmax_width(len)): x[j] = e^(x[j] - max of the row), and
 * inv_sum[i] = 1 / row i's sum.  Attention divides its context rows by the
 * sum instead of its probabilities: dh values a row instead of len.  The
 * columns past len, up to softmax_width, are set to -inf first and come out
 * as e^-87 (exp_poly's floor), which adds nothing to a sum of at least 1:
 * whole vectors only, where a tail of 10 columns left to plain C took a
 * third of a 450-token text's softmax.  With probs (leading dimension
 * probs_ld), the numerators rounded to bfloat16 go there too, as attention's
 * second product on AMX tiles reads them.  Sums in float over 32 lanes: a
 * row is at most 512 positive terms, each at most 1. */
BERT_INLINE void softmax_numerators_body(float *x, int ld, int len, uint16_t *probs, int probs_ld, float *inv_sum,
                                         int n)
{
    const int width = softmax_width(len), pairs = width - width % 32;
    for (int i = 0; i < n; i++) {
        float *r = x + (size_t)i * ld;
        for (int j = len; j < width; j++) r[j] = -INFINITY;
        lanes16 m0, m1;
        memcpy(&m0, r, sizeof m0);
        memcpy(&m1, r + width - 16, sizeof m1);
        for (int j = 0; j < pairs; j += 32) {
            lanes_max_into(&m0, r + j);
            lanes_max_into(&m1, r + j + 16);
        }
        float max = r[0];
        for (int l = 0; l < 16; l++) {
            max = m0[l] > max ? m0[l] : max;
            max = m1[l] > max ? m1[l] : max;
        }
        for (int j = 0; j < width; j++) r[j] = exp_poly(r[j] - max);
        /* A loop of its own: GCC vectorizes neither half of one loop that does both. */
        if (probs) bert_bf16_row(probs + (size_t)i * probs_ld, r, (size_t)width);
        lanes16 s0 = {0}, s1 = {0};
        for (int j = 0; j < pairs; j += 32) {
            lanes_add_into(&s0, r + j);
            lanes_add_into(&s1, r + j + 16);
        }
        if (pairs < width) lanes_add_into(&s0, r + pairs);
        s0 += s1;
        float sum = 0.0f;
        for (int l = 0; l < 16; l++) sum += s0[l];
        inv_sum[i] = 1.0f / sum;
    }
}
BERT_MULTIVERSION(softmax_numerators,
                  (float *x, int ld, int len, uint16_t *probs, int probs_ld, float *inv_sum, int n),
                  (x, ld, len, probs, probs_ld, inv_sum, n))

/* Rows of ctx (leading dimension ld), dh values each, times their scale. */
static void scale_rows(float *ctx, int ld, const float *scale, int n, int dh)
{
    for (int i = 0; i < n; i++)
        for (int c = 0; c < dh; c++) ctx[(size_t)i * ld + c] *= scale[i];
}

/* MPNet's relative position bucket of key position j seen from query
 * position i (MPNetEncoder.relative_position_bucket with 32 buckets and
 * max_distance 128): one half of the buckets for keys before the query, the
 * other for keys after; exact up to 8 apart, then logarithmic up to 128.
 * The logarithm is taken in float32 as torch takes it, so the buckets
 * change at the same distances. */
static int mpnet_bucket(int relative)
{
    const int half = BERT_MPNET_BUCKETS / 2, max_exact = half / 2;
    int n = -relative;
    int ret = n < 0 ? half : 0;
    n = n < 0 ? -n : n;
    if (n < max_exact) return ret + n;
    float scaled = logf((float)n / (float)max_exact) / (float)log(128.0 / max_exact) * (float)(half - max_exact);
    int large = max_exact + (int)scaled;
    int bucket = ret + (large < half - 1 ? large : half - 1);
    assert(bucket >= 0 && bucket < BERT_MPNET_BUCKETS);
    return bucket;
}

/* JinaBERT's ALiBi slope of head h of `heads` (JinaBertEncoder.rebuild_alibi_tensor,
 * _get_alibi_head_slopes), in double as Python takes it: a power-of-2
 * count n gives start^(h + 1) with start = 2^-(2^-(log2 n - 3)); any other
 * count gives its first p heads those of the power of 2 p below it, the
 * rest every other slope of 2p's (its even indices). */
static double alibi_slope(int heads, int h)
{
    int p = 1;
    while (p <= heads / 2) p *= 2;
    const int n = h < p ? p : 2 * p, i = h < p ? h : 2 * (h - p);
    const double start = pow(2.0, -pow(2.0, -(log2((double)n) - 3.0)));
    return start * pow(start, (double)i);
}

/* The bias added to attention scores, by head and relative position:
 * out[h * (2 * longest - 1) + (longest - 1) + (j - i)].  MPNet's from its
 * buckets; JinaBERT's ALiBi -slope(h) |j - i|, the slope rounded to float32
 * and the product taken in float32 as torch makes its alibi tensor.  One
 * table for every sequence and layer of a call. */
static void relative_bias_table(const bert_model *m, int longest, float *out)
{
    const int heads = m->cfg.num_heads, width = 2 * longest - 1;
    if (m->cfg.family == BERT_FAMILY_JINA_BERT) {
        for (int h = 0; h < heads; h++) {
            const float slope = (float)alibi_slope(heads, h);
            for (int d = -(longest - 1); d <= longest - 1; d++)
                out[(size_t)h * width + (size_t)(d + longest - 1)] = -(slope * (float)abs(d));
        }
        return;
    }
    for (int d = -(longest - 1); d <= longest - 1; d++) {
        const float *row = m->rel_bias + (size_t)mpnet_bucket(d) * heads;
        for (int h = 0; h < heads; h++) out[(size_t)h * width + (size_t)(d + longest - 1)] = row[h];
    }
}

/* Query rows per attention block: a head's keys and values at 512 tokens
 * (128 KB each) and the block's scores (128 KB) stay in a 512 KB L2.
 * OpenBLAS packs the head's keys again for every block, so fewer, larger
 * blocks pay: 64 rows against 32 took 7% off an int8 450-token text (AMX,
 * one thread), and float32 alike.  (The panel kernels, which pack a head's
 * keys and values once, measured the same at 64, 72 and 96 rows.) */
#define QUERY_BLOCK 64

/* What attention adds to a head's scores besides the queries' products
 * with the keys, and their scale: a bias by distance (MPNet's buckets,
 * JinaBERT's ALiBi: relative_bias_table), or DeBERTa's disentangled terms,
 * the products of the queries with the relative embeddings' keys (c2p) and
 * of the keys with their queries (p2c), gathered by relative position. */
typedef struct {
    float scale;          /* of every product: 1 / sqrt(dh), DeBERTa's 1 / sqrt(dh (1 + terms)) */
    const float *rel;     /* the bias by distance, or NULL */
    int longest;          /* rel and rows reach sequences of up to this many tokens */
    /* DeBERTa: the layer's key (c2p) and query (p2c) projections of the
     * relative embeddings [R x H], NULL for a term not taken; rows, the
     * embedding that query i and key j share at longest - 1 - i + j. */
    const float *pos_k, *pos_q;
    const int32_t *rows;
    int R;
} score_terms;

/* A chunk's memory for DeBERTa's terms: a block's c2p products [QUERY_BLOCK
 * x R] and a head's p2c products [longest x R], scaled. */
typedef struct {
    float *c2p, *p2c;
} terms_buffers;

/* Floats of a chunk's terms_buffers for R relative embeddings and
 * sequences of up to `longest` tokens. */
static size_t terms_floats(int longest, int R) { return ((size_t)QUERY_BLOCK + (size_t)longest) * (size_t)R; }

/* Head h's p2c products for a sequence's keys k [len x H], scaled, into b. */
static void p2c_products(const score_terms *t, const terms_buffers *b, const float *k, int len, int H, int dh, int h)
{
    if (t->pos_q)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, len, t->R, dh, t->scale, k + (size_t)h * dh, H,
                    t->pos_q + (size_t)h * dh, H, 0.0f, b->p2c, t->R);
}

/* Adds t's terms to the scores of head h's query rows q0..q0+m against len
 * keys (leading dimension ld).  queries: the block's query rows (leading
 * dimension q_ld), which times alpha are the scaled queries; the head's
 * p2c products are in b already (p2c_products). */
static void add_terms(bert_isa isa, const score_terms *t, const terms_buffers *b, float *scores, int ld, int H,
                      int dh, int h, int q0, int m, int len, const float *queries, int q_ld, float alpha)
{
    if (t->rel)
        bert_step_add_by_distance(isa, scores, ld, t->rel + (size_t)h * (2 * t->longest - 1) + (t->longest - 1), q0, m,
                                  len);
    if (!t->rows) return;
    if (t->pos_k)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, t->R, dh, alpha, queries, q_ld,
                    t->pos_k + (size_t)h * dh, H, 0.0f, b->c2p, t->R);
    bert_step_add_disentangled(isa, scores, ld, m, len, t->pos_k ? b->c2p : NULL, t->pos_q ? b->p2c : NULL, t->R,
                               t->rows + (t->longest - 1) - q0);
}

/* Self-attention of one sequence of `len` tokens, one head, query rows
 * q0..q1.  q, k, v and ctx point at the sequence's first row of [* x H]
 * matrices; head h is columns h*dh .. h*dh+dh-1, read in place through the
 * leading dimension H.  Only the first `keys` (1..len) positions are
 * attended to: the rest get probability 0, as transformers' attention mask
 * gives them (its large negative score underflows to 0).  scores holds
 * (q1 - q0) x softmax_width(len).  t: the scale and the terms added to the
 * scores, for sequences of up to t->longest tokens. */
static void attention_block(bert_isa isa, float *ctx, const float *q, const float *k, const float *v,
                            float *scores, int len, int keys, int H, int dh, int h, int q0, int q1,
                            const score_terms *t, const terms_buffers *tb)
{
    /* The block's query rows lie in the sequence, the head's columns in the
     * row, and a sequence is never longer than the terms were made for. */
    assert(0 <= q0 && q0 < q1 && q1 <= len);
    assert(0 <= h && dh > 0 && (h + 1) * dh <= H);
    assert(!(t->rel || t->rows) || len <= t->longest);
    assert(q1 - q0 <= QUERY_BLOCK);
    assert(0 < keys && keys <= len);
    float inv_sum[QUERY_BLOCK];
    int m = q1 - q0, ld = softmax_width(len);
    const float *queries = q + (size_t)q0 * H + h * dh;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, keys, dh, t->scale, queries, H, k + h * dh, H, 0.0f,
                scores, ld);
    add_terms(isa, t, tb, scores, ld, H, dh, h, q0, m, keys, queries, H, t->scale);
    softmax_numerators(isa, scores, ld, keys, NULL, 0, inv_sum, m);
    float *out = ctx + (size_t)q0 * H + h * dh;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, dh, keys, 1.0f, scores, ld, v + h * dh, H, 0.0f, out,
                H);
    scale_rows(out, H, inv_sum, m, dh);
}

/* A local layer's band (ModernBERT): the keys k0..k1 that some query row
 * of q0..q1 sees, |i - j| <= half, and none at or past `keys`. */
static void local_band(int q0, int q1, int keys, int half, int *k0, int *k1)
{
    *k0 = q0 - half > 0 ? q0 - half : 0;
    if (*k0 > keys - 1) *k0 = keys - 1;   /* a block past the attended keys still sees the last one's range */
    *k1 = q1 + half < keys ? q1 + half : keys;   /* the last row sees up to q1 - 1 + half */
}

/* Scores outside each row's window (columns from key k0 on) to -inf,
 * which the softmax turns into nothing (e^-87). */
static void mask_band(float *scores, int ld, int m, int n, int q0, int k0, int half)
{
    for (int i = 0; i < m; i++) {
        int lo = q0 + i - half - k0, hi = q0 + i + half - k0;   /* the row's window, in columns */
        float *r = scores + (size_t)i * ld;
        for (int j = 0; j < lo && j < n; j++) r[j] = -INFINITY;
        for (int j = hi + 1 > 0 ? hi + 1 : 0; j < n; j++) r[j] = -INFINITY;
    }
}

/* attention_block for a local layer of ModernBERT: query i sees only the
 * keys j with |i - j| <= half (its sliding window), and no key at or past
 * `keys`.  Only the keys some row of the block can see enter the products,
 * so a long text costs the window, not its length. */
static void attention_block_local(bert_isa isa, float *ctx, const float *q, const float *k, const float *v,
                                  float *scores, int keys, int H, int dh, int h, int q0, int q1, int half)
{
    assert(0 <= q0 && q0 < q1 && q1 - q0 <= QUERY_BLOCK && half >= 0);
    int k0, k1;
    local_band(q0, q1, keys, half, &k0, &k1);
    assert(k0 < k1);
    float scale = 1.0f / sqrtf((float)dh), inv_sum[QUERY_BLOCK];
    int m = q1 - q0, n = k1 - k0, ld = softmax_width(n);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, dh, scale, q + (size_t)q0 * H + h * dh, H,
                k + (size_t)k0 * H + h * dh, H, 0.0f, scores, ld);
    mask_band(scores, ld, m, n, q0, k0, half);
    softmax_numerators(isa, scores, ld, n, NULL, 0, inv_sum, m);
    float *out = ctx + (size_t)q0 * H + h * dh;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, dh, n, 1.0f, scores, ld, v + (size_t)k0 * H + h * dh,
                H, 0.0f, out, H);
    scale_rows(out, H, inv_sum, m, dh);
}

/* Head h's columns of rows q0..q0+m of ctx (leading dimension H): the
 * block's context rows [m x dh], each divided by its softmax sum (times
 * inv_sum), as attention computed them apart from ctx. */
static void context_rows(float *ctx, int H, int dh, int h, int q0, int m, const float *context, const float *inv_sum)
{
    for (int i = 0; i < m; i++)
        for (int c = 0; c < dh; c++) ctx[(size_t)(q0 + i) * H + h * dh + c] = context[(size_t)i * dh + c] * inv_sum[i];
}

/* A chunk's memory for attention on AMX tiles (bert_bf16_tiles_product):
 * the head's keys and values as tiles, the block's queries and
 * probabilities as the kernel reads them, and the block's context. */
typedef struct {
    void *keys, *values;
    uint16_t *queries, *probs;
    float *context;
} tile_buffers;

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Bytes of a chunk's tile_buffers for heads of dh columns and sequences of
 * up to `longest` tokens; lays them out from `at` when it is not NULL. */
static size_t tile_buffers_at(unsigned char *at, int longest, int dh, tile_buffers *b)
{
    const bert_precision p = BERT_PRECISION_BFLOAT16;
    const size_t sizes[] = {
        bert_tiles_bytes(longest, dh, p),
        bert_tiles_bytes(dh, longest, p),
        (size_t)(QUERY_BLOCK + BERT_AMX_ROWS_PAST) * (size_t)bert_tile_cols(dh, p) * sizeof(uint16_t),
        (size_t)(QUERY_BLOCK + BERT_AMX_ROWS_PAST) * (size_t)bert_tile_cols(longest, p) * sizeof(uint16_t),
        (size_t)QUERY_BLOCK * (size_t)dh * sizeof(float),
    };
    void **slots[] = {&b->keys, &b->values, (void **)&b->queries, (void **)&b->probs, (void **)&b->context};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        if (at) *slots[i] = at + total;
        total += align64(sizes[i]);
    }
    return total;
}

/* Tokens from which a sequence's attention goes to AMX tiles: below, laying
 * out a head's keys and values costs more than the float32 products. */
#define TILES_ATTENTION_MIN 64

/* attention_block with both products on AMX tiles, in bfloat16 with
 * float32 sums, the head's keys and values already laid out in b. */
static void attention_block_tiles(bert_isa isa, float *ctx, const float *q, const tile_buffers *b, float *scores,
                                  int len, int H, int dh, int h, int q0, int q1, const score_terms *t,
                                  const terms_buffers *tb)
{
    assert(0 <= q0 && q0 < q1 && q1 <= len && q1 - q0 <= QUERY_BLOCK);
    assert(0 <= h && dh > 0 && (h + 1) * dh <= H);
    assert(!(t->rel || t->rows) || len <= t->longest);
    int m = q1 - q0, ld = softmax_width(len), probs_ld = bert_tile_cols(len, BERT_PRECISION_BFLOAT16);
    const float *queries = q + (size_t)q0 * H + h * dh;
    bert_bf16_tile_rows(b->queries, queries, H, m, dh, t->scale);
    /* Keys up to ld: the tiles hold whole panels of 16, zero past len. */
    int ran = bert_bf16_tiles_product(scores, b->queries, b->keys, m, ld, dh);
    assert(ran);
    (void)ran;
    add_terms(isa, t, tb, scores, ld, H, dh, h, q0, m, len, queries, H, t->scale);
    float inv_sum[QUERY_BLOCK];
    softmax_numerators(isa, scores, ld, len, b->probs, probs_ld, inv_sum, m);
    /* The probabilities as bert_bf16_tile_rows would lay them out. */
    for (int i = 0; i < m; i++) memset(b->probs + (size_t)i * probs_ld + ld, 0, (size_t)(probs_ld - ld) * sizeof *b->probs);
    memset(b->probs + (size_t)m * probs_ld, 0, (size_t)BERT_AMX_ROWS_PAST * probs_ld * sizeof *b->probs);
    bert_bf16_tiles_product(b->context, b->probs, b->values, m, dh, len);
    context_rows(ctx, H, dh, h, q0, m, b->context, inv_sum);
}

/* A chunk's memory for attention by the float32 panel kernels
 * (bert_f32_panel_product): the head's keys packed as panels, its values
 * transposed and packed, the block's queries (scaled) and its context.
 * OpenBLAS would pack a head's keys and values again for every block of
 * query rows; packed here once a head, they serve all of its blocks. */
typedef struct {
    float *keys, *values, *queries, *context;
} panel_buffers;

/* Floats of a chunk's panel_buffers for heads of dh columns and sequences
 * of up to `longest` tokens; lays them out from `at` when it is not NULL. */
static size_t panel_buffers_at(float *at, int longest, int dh, panel_buffers *b)
{
    const size_t sizes[] = {
        bert_f32_packed_floats(longest, dh),
        bert_f32_packed_floats(dh, softmax_width(longest)),
        (size_t)QUERY_BLOCK * (size_t)dh,
        (size_t)QUERY_BLOCK * (size_t)dh,
    };
    float **slots[] = {&b->keys, &b->values, &b->queries, &b->context};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        if (at) *slots[i] = at + total;
        total += align64(sizes[i] * sizeof(float)) / sizeof(float);
    }
    return total;
}

/* The block's query rows of head h (q at the sequence's first row), times
 * scale, as the panel kernel reads its input: [m x dh]. */
static void scaled_queries(float *out, const float *q, int H, int dh, int h, int q0, int m, float scale)
{
    for (int i = 0; i < m; i++)
        for (int c = 0; c < dh; c++) out[(size_t)i * dh + c] = q[(size_t)(q0 + i) * H + h * dh + c] * scale;
}

/* attention_block with both products by the panel kernel of isa, the
 * head's keys and values already packed in b: keys as the rows of W,
 * values transposed, both zero past len up to softmax_width(len). */
static void attention_block_panels(bert_isa isa, float *ctx, const float *q, const panel_buffers *b, float *scores,
                                   int len, int H, int dh, int h, int q0, int q1, const score_terms *t,
                                   const terms_buffers *tb)
{
    assert(0 <= q0 && q0 < q1 && q1 <= len && q1 - q0 <= QUERY_BLOCK);
    assert(0 <= h && dh > 0 && (h + 1) * dh <= H);
    assert(!(t->rel || t->rows) || len <= t->longest);
    int m = q1 - q0, ld = softmax_width(len), ran;
    float inv_sum[QUERY_BLOCK];
    scaled_queries(b->queries, q, H, dh, h, q0, m, t->scale);
    ran = bert_f32_panel_product(isa, scores, b->queries, b->keys, m, ld, dh);
    assert(ran);
    add_terms(isa, t, tb, scores, ld, H, dh, h, q0, m, len, b->queries, dh, 1.0f);
    softmax_numerators(isa, scores, ld, len, NULL, 0, inv_sum, m);
    /* The columns past len hold e^-87 (softmax_numerators) against values of zero. */
    ran = bert_f32_panel_product(isa, b->context, scores, b->values, m, dh, ld);
    assert(ran);
    (void)ran;
    context_rows(ctx, H, dh, h, q0, m, b->context, inv_sum);
}

/* attention_block_local by the panel kernel: the head's keys packed whole
 * in b (a band starts at the panel holding its first key), the band's
 * values packed for the block, since a run of a panel's columns is not a
 * packed matrix of its own. */
static void attention_block_local_panels(bert_isa isa, float *ctx, const float *q, const float *v,
                                         const panel_buffers *b, float *scores, int len, int H, int dh, int h, int q0,
                                         int q1, int half)
{
    assert(0 <= q0 && q0 < q1 && q1 <= len && q1 - q0 <= QUERY_BLOCK && half >= 0);
    int k0, k1, ran;
    local_band(q0, q1, len, half, &k0, &k1);
    k0 -= k0 % BERT_PANEL;
    const int m = q1 - q0, n = k1 - k0, ld = softmax_width(n);
    /* k0 + ld <= softmax_width(len): the band's panels are among the head's. */
    assert(k0 < k1 && k0 + ld <= softmax_width(len));
    float inv_sum[QUERY_BLOCK];
    scaled_queries(b->queries, q, H, dh, h, q0, m, 1.0f / sqrtf((float)dh));
    ran = bert_f32_panel_product(isa, scores, b->queries, b->keys + (size_t)k0 * dh, m, ld, dh);
    assert(ran);
    mask_band(scores, ld, m, n, q0, k0, half);
    softmax_numerators(isa, scores, ld, n, NULL, 0, inv_sum, m);
    bert_f32_pack_strided(b->values, v + (size_t)k0 * H + (size_t)h * dh, 1, (size_t)H, dh, n, ld);
    ran = bert_f32_panel_product(isa, b->context, scores, b->values, m, dh, ld);
    assert(ran);
    (void)ran;
    context_rows(ctx, H, dh, h, q0, m, b->context, inv_sum);
}

/* Every sequence's attention as work items: one per sequence, head and
 * block of QUERY_BLOCK query rows, numbered sequence by sequence, head by
 * head, so that a run of items reuses one head's keys and values.  A
 * chunk takes a run of items, with scores of its own. */
typedef struct {
    bert_isa isa;
    float *ctx;
    const float *q, *k, *v;
    float *scores; /* QUERY_BLOCK x softmax_width(longest) floats a chunk */
    size_t scores_size;
    const int *lengths;
    const int *keys;    /* positions each sequence attends to (bert_encode_keys), or NULL: all */
    int n_seqs, H, heads;
    int items;     /* all sequences' */
    score_terms terms;  /* the scale, and MPNet's, JinaBERT's or DeBERTa's terms */
    int longest;
    /* At a reduced precision on a CPU with AMX-BF16: each chunk's
     * tile_buffers, tiles_size bytes a chunk from tiles; else NULL. */
    unsigned char *tiles;
    size_t tiles_size;
    /* Else, where isa has a panel kernel: each chunk's panel_buffers,
     * panels_size floats a chunk from panels; else NULL (OpenBLAS). */
    float *panels;
    size_t panels_size;
    /* DeBERTa: each chunk's terms_buffers (terms_floats), else NULL. */
    float *terms_work;
    int window;         /* ModernBERT's local layers: the keys a query sees each side; -1: all */
} attention_job;

static int blocks_of(int len) { return (len + QUERY_BLOCK - 1) / QUERY_BLOCK; }

static void attention_chunk(void *p, int chunk, int chunks)
{
    const attention_job *j = p;
    int first = (int)((long long)j->items * chunk / chunks), last = (int)((long long)j->items * (chunk + 1) / chunks);
    float *scores = j->scores + (size_t)chunk * j->scores_size;
    int dh = j->H / j->heads;
    tile_buffers tb = {NULL, NULL, NULL, NULL, NULL};
    if (j->tiles) tile_buffers_at(j->tiles + (size_t)chunk * j->tiles_size, j->longest, dh, &tb);
    panel_buffers pb = {NULL, NULL, NULL, NULL};
    if (j->panels) panel_buffers_at(j->panels + (size_t)chunk * j->panels_size, j->longest, dh, &pb);
    terms_buffers terms = {NULL, NULL};
    if (j->terms_work) {
        terms.c2p = j->terms_work + (size_t)chunk * terms_floats(j->terms.longest, j->terms.R);
        terms.p2c = terms.c2p + (size_t)QUERY_BLOCK * (size_t)j->terms.R;
    }
    size_t t0 = 0;
    int item = 0; /* the first item of sequence s */
    for (int s = 0; s < j->n_seqs && item < last; t0 += (size_t)j->lengths[s], s++) {
        int len = j->lengths[s], blocks = blocks_of(len), count = blocks * j->heads;
        int attended = j->keys ? j->keys[s] : len;
        if (item + count <= first) {
            item += count;
            continue;
        }
        size_t off = t0 * (size_t)j->H;
        int from = first > item ? first - item : 0, to = last - item < count ? last - item : count;
        int laid_out = -1; /* the head whose keys and values the tiles or panels hold */
        int terms_of = -1; /* the head whose p2c products terms holds */
        for (int it = from; it < to; it++) {
            int h = it / blocks, q0 = it % blocks * QUERY_BLOCK;
            int q1 = q0 + QUERY_BLOCK < len ? q0 + QUERY_BLOCK : len;
            if (j->terms_work && h != terms_of) {
                p2c_products(&j->terms, &terms, j->k + off, len, j->H, dh, h);
                terms_of = h;
            }
            /* A local layer's window, where it leaves keys out. */
            const int local = j->window >= 0 && len - 1 > j->window;
            if (local && (!j->panels || attended < len)) {
                attention_block_local(j->isa, j->ctx + off, j->q + off, j->k + off, j->v + off, scores, attended,
                                      j->H, dh, h, q0, q1, j->window);
                continue;
            }
            /* Few sequences mask keys (a ColBERT query's expansion tokens):
             * the fast kernels lay out whole sequences, so those take the
             * plain products. */
            if (attended < len || (!j->panels && (!j->tiles || len < TILES_ATTENTION_MIN))) {
                attention_block(j->isa, j->ctx + off, j->q + off, j->k + off, j->v + off, scores, len, attended, j->H,
                                dh, h, q0, q1, &j->terms, &terms);
                continue;
            }
            if (j->panels) {
                if (h != laid_out) {
                    const float *keys = j->k + off + (size_t)h * dh, *values = j->v + off + (size_t)h * dh;
                    bert_f32_pack_strided(pb.keys, keys, (size_t)j->H, 1, len, dh, dh);
                    /* A local layer packs each block's band of values instead. */
                    if (!local) bert_f32_pack_strided(pb.values, values, 1, (size_t)j->H, dh, len, softmax_width(len));
                    laid_out = h;
                }
                if (local)
                    attention_block_local_panels(j->isa, j->ctx + off, j->q + off, j->v + off, &pb, scores, len, j->H,
                                                 dh, h, q0, q1, j->window);
                else
                    attention_block_panels(j->isa, j->ctx + off, j->q + off, &pb, scores, len, j->H, dh, h, q0, q1,
                                           &j->terms, &terms);
                continue;
            }
            if (h != laid_out) {
                bert_bf16_tiles_from_rows(tb.keys, j->k + off + (size_t)h * dh, j->H, len, dh);
                bert_bf16_tiles_from_columns(tb.values, j->v + off + (size_t)h * dh, j->H, dh, len);
                laid_out = h;
            }
            attention_block_tiles(j->isa, j->ctx + off, j->q + off, &tb, scores, len, j->H, dh, h, q0, q1, &j->terms,
                                  &terms);
        }
        item += count;
    }
}

/* The row-wise steps of a layer (LayerNorm with its residual add, the
 * activation), shared out by rows over the plan's threads. */
typedef enum { ROWS_ADD_LAYER_NORM, ROWS_ACTIVATE, ROWS_GEGLU, ROWS_ADD, ROWS_GATE } rows_step;

typedef struct {
    rows_step step;
    bert_isa isa;
    float *out;
    const float *in, *res, *w, *b; /* LayerNorm: out = LN(in + res) */
    float eps;
    bert_activation act;           /* ROWS_ACTIVATE: out in place */
    int rows, dim;
    /* ROWS_GATE: out = act(gate) * in, row by row, in and gate read with
     * leading dimensions in_ld and gate_ld (gate may be out). */
    const float *gate;
    int in_ld, gate_ld;
} rows_job;

static void rows_chunk(void *p, int chunk, int chunks)
{
    const rows_job *j = p;
    int r0 = (int)((long long)j->rows * chunk / chunks), r1 = (int)((long long)j->rows * (chunk + 1) / chunks);
    size_t at = (size_t)r0 * j->dim;
    if (r1 <= r0) return;
    if (j->step == ROWS_ACTIVATE) {
        activate(j->isa, j->out + at, (size_t)(r1 - r0) * j->dim, j->act);
        return;
    }
    if (j->step == ROWS_GEGLU) {
        bert_step_gated(j->isa, j->out + at, j->in + 2 * at, r1 - r0, j->dim, j->act);
        return;
    }
    if (j->step == ROWS_GATE) {
        const size_t dim = (size_t)j->dim;
        for (int r = r0; r < r1; r++) {
            float *y = j->out + (size_t)r * dim;
            const float *up = j->in + (size_t)r * j->in_ld, *gate = j->gate + (size_t)r * j->gate_ld;
            if (y != gate) memcpy(y, gate, dim * sizeof(float));
            activate(j->isa, y, dim, j->act);
            for (size_t c = 0; c < dim; c++) y[c] *= up[c];
        }
        return;
    }
    if (j->step == ROWS_ADD) {
        /* A pre-LayerNorm residual: out += in. */
        bert_step_add(j->isa, j->out + at, j->in + at, (size_t)(r1 - r0) * j->dim);
        return;
    }
    add_layer_norm(j->isa, j->out + at, j->in + at, j->res ? j->res + at : NULL, j->w, j->b, r1 - r0, j->dim,
                   j->eps);
}

/* Elements a thread must have for a row-wise step to be shared out: about
 * 10 us of work, so one sentence's steps stay on the calling thread. */
#define ROWS_MIN_WORK (32 * 1024)

static void run_rows(const bert_linear_plan *plan, const rows_job *job)
{
    long long work = (long long)job->rows * job->dim;
    int threads = plan->threads;
    if (threads > work / ROWS_MIN_WORK) threads = (int)(work / ROWS_MIN_WORK);
    if (threads < 2 || job->rows < 2) {
        rows_chunk((void *)job, 0, 1);
        return;
    }
    /* Four chunks a thread, so that a thread slowed by a busy core takes fewer. */
    int chunks = 4 * threads < job->rows ? 4 * threads : job->rows;
    bert_workers_run(plan->workers, threads, chunks, rows_chunk, (void *)job);
}

static void layer_norm_rows(const bert_linear_plan *plan, float *out, const float *in, const float *res,
                            const float *w, const float *b, int n, int dim, float eps)
{
    rows_job job = {ROWS_ADD_LAYER_NORM, plan->isa, out, in, res, w, b, eps, BERT_ACT_GELU, n, dim, NULL, 0, 0};
    run_rows(plan, &job);
}

static void activate_rows(const bert_linear_plan *plan, float *x, int n, int dim, bert_activation act)
{
    rows_job job = {ROWS_ACTIVATE, plan->isa, x, NULL, NULL, NULL, NULL, 0.0f, act, n, dim, NULL, 0, 0};
    run_rows(plan, &job);
}

/* out[n x dim] = act(in's first halves) * in's second halves (in [n x 2 dim]). */
static void geglu_rows(const bert_linear_plan *plan, float *out, const float *in, int n, int dim, bert_activation act)
{
    rows_job job = {ROWS_GEGLU, plan->isa, out, in, NULL, NULL, NULL, 0.0f, act, n, dim, NULL, 0, 0};
    run_rows(plan, &job);
}

/* out[n x dim] = act(gate) * up, up and gate [n x dim] with leading
 * dimensions up_ld and gate_ld; gate may be out. */
static void gate_rows(const bert_linear_plan *plan, float *out, const float *up, int up_ld, const float *gate,
                      int gate_ld, int n, int dim, bert_activation act)
{
    rows_job job = {ROWS_GATE, plan->isa, out, up, NULL, NULL, NULL, 0.0f, act, n, dim, gate, up_ld, gate_ld};
    run_rows(plan, &job);
}

/* x[n x dim] += y. */
static void add_rows(const bert_linear_plan *plan, float *x, const float *y, int n, int dim)
{
    rows_job job = {ROWS_ADD, plan->isa, x, y, NULL, NULL, NULL, 0.0f, BERT_ACT_GELU, n, dim, NULL, 0, 0};
    run_rows(plan, &job);
}

/* DeBERTa's relative position of query i to key j, i - j, in
 * make_log_bucket_position's buckets: exact within bucket_size / 2, then
 * logarithmic up to max_position, the logarithms in float32 as torch takes
 * them; bucket_size <= 0: unbucketed (build_relative_position). */
static int deberta_bucket(int rel, int bucket_size, int max_position)
{
    if (bucket_size <= 0) return rel;
    const int mid = bucket_size / 2, sign = rel > 0 ? 1 : rel < 0 ? -1 : 0;
    const int abs_pos = rel < mid && rel > -mid ? mid - 1 : abs(rel);
    if (abs_pos <= mid) return rel;
    float log_pos = ceilf(logf((float)abs_pos / (float)mid) / logf((float)((double)(max_position - 1) / mid)) *
                          (float)(mid - 1)) + (float)mid;
    return (int)log_pos * sign;
}

/* The row of the relative embeddings that query i and key j read:
 * clamp(bucket(i - j) + att_span, 0, 2 att_span - 1), the same for the
 * content-to-position (c2p) and position-to-content (p2c) terms, since a
 * bucket of -d is minus the bucket of d. */
static int deberta_row(const bert_family_settings *f, int rel)
{
    int r = deberta_bucket(rel, f->position_buckets, f->max_relative) + f->att_span;
    return r < 0 ? 0 : r > 2 * f->att_span - 1 ? 2 * f->att_span - 1 : r;
}

/* ModernBERT's fused Wqkv output [T x 3H] split into q, k and v [T x H],
 * the queries and keys turned by their position in their sequence. */
typedef struct {
    bert_isa isa;
    const float *qkv;
    float *q, *k, *v;
    const float *positions;          /* [T]: each row's position in its sequence */
    const float *cos_tab, *sin_tab;  /* bert_rotary_tables' */
    int rows, H, heads, dh;
} qkv_job;

static void qkv_chunk(void *p, int chunk, int chunks)
{
    const qkv_job *j = p;
    const int rows = j->rows;
    int r0 = (int)((long long)rows * chunk / chunks), r1 = (int)((long long)rows * (chunk + 1) / chunks);
    const size_t H = (size_t)j->H, half = (size_t)j->dh / 2;
    for (int r = r0; r < r1; r++) {
        const float *in = j->qkv + (size_t)r * 3 * H;
        const size_t pos = (size_t)j->positions[r];
        const float *cos_p = j->cos_tab + pos * half, *sin_p = j->sin_tab + pos * half;
        float *q = j->q + (size_t)r * H, *k = j->k + (size_t)r * H;
        memcpy(q, in, H * sizeof(float));
        memcpy(k, in + H, H * sizeof(float));
        memcpy(j->v + (size_t)r * H, in + 2 * H, H * sizeof(float));
        bert_rotary_row_isa(j->isa, q, j->heads, j->dh, cos_p, sin_p);
        bert_rotary_row_isa(j->isa, k, j->heads, j->dh, cos_p, sin_p);
    }
}

/* nomic-bert's and gte's fused projection [T x 3H] split into q, k and v,
 * the first rot_dim values of each head of q and k turned by their row's
 * own angles (rope_row_tables). */
typedef struct {
    const float *qkv;
    float *q, *k, *v;
    const float *cos_rows, *sin_rows;   /* [T x rot_dim / 2] */
    int rows, H, heads, dh, rot_dim, interleaved;
} rope_qkv_job;

static void rope_qkv_chunk(void *p, int chunk, int chunks)
{
    const rope_qkv_job *j = p;
    int r0 = (int)((long long)j->rows * chunk / chunks), r1 = (int)((long long)j->rows * (chunk + 1) / chunks);
    const size_t H = (size_t)j->H, half = (size_t)j->rot_dim / 2;
    for (int r = r0; r < r1; r++) {
        const float *in = j->qkv + (size_t)r * 3 * H;
        float *q = j->q + (size_t)r * H, *k = j->k + (size_t)r * H;
        memcpy(q, in, H * sizeof(float));
        memcpy(k, in + H, H * sizeof(float));
        memcpy(j->v + (size_t)r * H, in + 2 * H, H * sizeof(float));
        const float *cos_r = j->cos_rows + (size_t)r * half, *sin_r = j->sin_rows + (size_t)r * half;
        bert_rotary_row_part(q, j->heads, j->dh, j->rot_dim, j->interleaved, cos_r, sin_r);
        bert_rotary_row_part(k, j->heads, j->dh, j->rot_dim, j->interleaved, cos_r, sin_r);
    }
}

/* Each row's rotary angles [T x rotary_dim / 2], sequence by sequence, from
 * inverse frequencies of the family's base (inv: rotary_dim / 2 floats):
 * gte's NTK scaling (NTKScalingRotaryEmbedding without mixed_b) at every
 * length; nomic-bert's (NomicBertDynamicNTKRotaryEmbedding) for a sequence
 * longer than max_trained_positions, its base raised for that length as a
 * model would compute it on that sequence alone. */
static void rope_row_tables(const bert_config *c, const int *lengths, int n_seqs, float *cos_rows, float *sin_rows,
                            float *inv)
{
    const bert_family_settings *f = &c->fam;
    const int rd = f->rotary_dim, half = rd / 2;
    size_t t0 = 0;
    for (int s = 0; s < n_seqs; t0 += (size_t)lengths[s], s++) {
        double base = f->rope_theta;
        if (f->ntk_factor > 0) base *= f->ntk_factor;
        if (f->dynamic_ntk_factor > 0 && lengths[s] > f->max_trained)
            base *= pow(f->dynamic_ntk_factor * lengths[s] / f->max_trained - (f->dynamic_ntk_factor - 1),
                        (double)rd / (double)(rd - 2));
        bert_rotary_inv_freq(inv, rd, base);
        if (f->ntk_factor > 0) {
            /* inv_freq / scaling_factor ** (2 / dim): a Python float, divided in float32. */
            const float d = (float)pow(f->ntk_factor, 2.0 / rd);
            for (int i = 0; i < half; i++) inv[i] /= d;
        }
        bert_rotary_tables_inv(cos_rows + t0 * (size_t)half, sin_rows + t0 * (size_t)half, lengths[s], half, inv);
    }
}

/* ------------------------------------------------------------ the forward pass */

static int check_inputs(const bert_model *m, const int32_t *ids, const int32_t *type_ids,
                        const int *lengths, const int *keys, int n_seqs, size_t *total, int *longest, char **err)
{
    const bert_config *c = &m->cfg;
    if (n_seqs < 1) { *err = bert_errorf("nothing to encode: no sequences given"); return -1; }
    *total = 0;
    *longest = 0;
    const int max_tokens = bert_config_max_tokens(c);
    for (int i = 0; i < n_seqs; i++) {
        if (lengths[i] < 1 || lengths[i] > max_tokens) {
            *err = bert_errorf("sequence %d has %d tokens but the model takes 1 to %d "
                               "(max_position_embeddings); shorten the input or lower max_length",
                               i, lengths[i], max_tokens);
            return -1;
        }
        if (keys && (keys[i] < 1 || keys[i] > lengths[i])) {
            *err = bert_errorf("sequence %d attends to %d of its %d positions; give 1 to %d", i, keys[i],
                               lengths[i], lengths[i]);
            return -1;
        }
        *total += (size_t)lengths[i];
        if (lengths[i] > *longest) *longest = lengths[i];
    }
    if (*total > (size_t)INT32_MAX / (size_t)c->intermediate_size) {
        *err = bert_errorf("%zu tokens in one call is too many; encode them in smaller batches", *total);
        return -1;
    }
    for (size_t t = 0; t < *total; t++) {
        if (ids[t] < 0 || ids[t] >= c->vocab_size) {
            *err = bert_errorf("token id %d at position %zu is outside the model's vocabulary (0 to %d); "
                               "the tokenizer does not match the weights", (int)ids[t], t, c->vocab_size - 1);
            return -1;
        }
        if (type_ids && (type_ids[t] < 0 || type_ids[t] >= c->type_vocab_size)) {
            *err = bert_errorf("segment id %d at position %zu is not below the model's type_vocab_size "
                               "%d; this model does not take that many segments",
                               (int)type_ids[t], t, c->type_vocab_size);
            return -1;
        }
    }
    return 0;
}

/* A projection at a reduced precision could not get memory for its
 * quantized or converted input rows. */
static const float *projection_out_of_memory(const bert_model *m, int tokens, char **err)
{
    *err = bert_errorf("out of memory: a %s projection over %d tokens could not get its scratch",
                       bert_precision_name(m->precision), tokens);
    return NULL;
}

/* ------------------------------------------------------------ observing a pass */

/* An observed pass: the observer, and the memory its attention
 * probabilities are recomputed in (a row of scores in double, then the
 * probabilities of one head on one sequence). */
typedef struct {
    const bert_observer *observer;
    void *memory;
    size_t bytes;
    double *row;
    float *probs;
} observation;

static int observation_memory(observation *o, int len, char **err)
{
    size_t bytes = (size_t)len * sizeof(double) + (size_t)len * (size_t)len * sizeof(float);
    if (bytes > o->bytes) {
        free(o->memory);
        o->memory = malloc(bytes);
        o->bytes = o->memory ? bytes : 0;
        if (!o->memory) {
            *err = bert_errorf("out of memory: the attention of %d tokens needs %zu KB", len, bytes >> 10);
            return -1;
        }
    }
    o->row = o->memory;
    o->probs = (float *)(o->row + len);
    return 0;
}

/* Hands the observer the attention probabilities of every wanted head of
 * layer l on every sequence, recomputed from the layer's queries q and
 * keys k ([T x H], packed) as transformers computes them: softmax(q k^T /
 * sqrt(dh) + MPNet's relative position bias), in double; in a ModernBERT
 * local layer (window >= 0), keys more than window away get none.  The attention
 * kernels never hold a whole row of probabilities (they divide the context
 * by the softmax sum instead), so the normal path has nothing to show. */
static int observe_attention(const bert_model *m, observation *o, int layer, const float *q, const float *k,
                             const int *lengths, int n_seqs, const float *rel, int longest, int window, char **err)
{
    const bert_observer *ob = o->observer;
    if (!ob->attention) return 0;
    const int H = m->cfg.hidden_size, heads = m->cfg.num_heads, dh = H / heads;
    const double scale = 1.0 / sqrt((double)dh);
    for (int h = 0; h < heads; h++) {
        if (ob->wants_head && !ob->wants_head(ob->ctx, layer, h)) continue;
        const float *centre = rel ? rel + (size_t)h * (2 * longest - 1) + (longest - 1) : NULL;
        size_t t0 = 0;
        for (int seq = 0; seq < n_seqs; t0 += (size_t)lengths[seq], seq++) {
            const int len = lengths[seq];
            if (observation_memory(o, len, err) != 0) return -1;
            for (int i = 0; i < len; i++) {
                const float *qi = q + (t0 + (size_t)i) * H + (size_t)h * dh;
                double max = -INFINITY, sum = 0;
                for (int j = 0; j < len; j++) {
                    const float *kj = k + (t0 + (size_t)j) * H + (size_t)h * dh;
                    double dot = 0;
                    for (int c = 0; c < dh; c++) dot += (double)qi[c] * kj[c];
                    o->row[j] = dot * scale + (centre ? centre[j - i] : 0.0);
                    if (window >= 0 && abs(j - i) > window) o->row[j] = -INFINITY;
                    max = o->row[j] > max ? o->row[j] : max;
                }
                for (int j = 0; j < len; j++) sum += o->row[j] = exp(o->row[j] - max);
                for (int j = 0; j < len; j++) o->probs[(size_t)i * len + j] = (float)(o->row[j] / sum);
            }
            if (ob->attention(ob->ctx, layer, h, seq, o->probs, len, err) != 0) return -1;
        }
    }
    return 0;
}

static int observe_hidden_states(const observation *o, int layer, const float *x, int T, int H, char **err)
{
    const bert_observer *ob = o->observer;
    return ob->hidden_states ? ob->hidden_states(ob->ctx, layer, x, T, H, err) : 0;
}

/* The embeddings into x [T x H]: positions restart in every sequence, at 0
 * (BERT) or past padding_idx, where pad tokens stay
 * (create_position_ids_from_input_ids); ModernBERT has no position or
 * segment table (its positions turn queries and keys).  ELECTRA's, when
 * narrower than hidden_size, are summed and normalised in `narrow` [T x E]
 * and widened into x by embeddings_project. */
static void embed(const bert_model *m, const bert_linear_plan *plan, float *narrow, float *x, const int32_t *ids,
                  const int32_t *type_ids, const int *lengths, int n_seqs)
{
    const bert_config *c = &m->cfg;
    const int E = c->fam.embedding_size;
    float *out = narrow ? narrow : x;
    int t = 0;
    for (int i = 0; i < n_seqs; i++)
        for (int p = 0, counted = 0; p < lengths[i]; p++, t++) {
            const float *we = m->word_emb + (size_t)ids[t] * E;
            float *row = out + (size_t)t * E;
            memcpy(row, we, (size_t)E * sizeof *row);
            if (m->pos_emb) {
                int position = p;
                if (c->pad_id >= 0) position = ids[t] == c->pad_id ? c->pad_id : c->pad_id + ++counted;
                const float *pe = m->pos_emb + (size_t)position * E;
                for (int j = 0; j < E; j++) row[j] += pe[j];
            }
            if (m->type_emb) {
                const float *te = m->type_emb + (size_t)(type_ids ? type_ids[t] : 0) * E;
                for (int j = 0; j < E; j++) row[j] += te[j];
            }
        }
    if (c->family == BERT_FAMILY_DEBERTA_V2) {
        /* DebertaV2Embeddings: embed_proj (no bias) first, then the
         * LayerNorm over hidden_size. */
        if (narrow) bert_linear(plan, x, narrow, m->emb_proj_w, NULL, t, c->hidden_size, E);
        layer_norm_rows(plan, x, x, NULL, m->emb_ln_w, m->emb_ln_b, t, c->hidden_size, c->layer_norm_eps);
        return;
    }
    layer_norm_rows(plan, out, out, NULL, m->emb_ln_w, m->emb_ln_b, t, E, c->layer_norm_eps);
    if (narrow) bert_linear(plan, x, narrow, m->emb_proj_w, m->emb_proj_b, t, c->hidden_size, E);
}

/* The activations of ModernBERT's layers (encode's buffers). */
typedef struct {
    float *x, *q, *k, *v, *a, *f, *g;
    float *rotary;   /* both bases' cos and sin tables, then each row's position */
    int att_chunks;  /* the attention chunks encode sized the scores for */
} modern_buffers;

/* ModernBERT's layers on the embeddings in b->x, then final_norm
 * (modeling_modernbert.py, ModernBertEncoderLayer): pre-LayerNorm
 * attention (no norm in layer 0) with rotary positions, over the whole
 * sequence in global layers (every global_every-th from 0) and a sliding
 * window in the others; a pre-LayerNorm GeGLU MLP; residuals added after
 * each.  Returns b->x, or NULL with *err. */
static const float *modern_layers(const bert_model *m, const bert_linear_plan *plan, attention_job *att,
                                  const modern_buffers *b, const int *lengths, int n_seqs, int longest,
                                  observation *seen, bert_interrupt_fn interrupted, void *ctx, char **err)
{
    const bert_config *c = &m->cfg;
    const int H = c->hidden_size, FF = c->intermediate_size, heads = c->num_heads, dh = H / heads;
    const size_t table = (size_t)longest * (size_t)(dh / 2);
    float *cos_global = b->rotary, *sin_global = cos_global + table;
    float *cos_local = sin_global + table, *sin_local = cos_local + table, *positions = sin_local + table;
    bert_rotary_tables(cos_global, sin_global, longest, dh, c->fam.global_rope_theta);
    bert_rotary_tables(cos_local, sin_local, longest, dh, c->fam.local_rope_theta);
    int T = 0;
    for (int i = 0; i < n_seqs; i++)
        for (int p = 0; p < lengths[i]; p++) positions[T++] = (float)p;
    float *x = b->x;
    for (int l = 0; l < c->num_layers; l++) {
        if (interrupted && interrupted(ctx)) {
            *err = bert_errorf("interrupted");
            return NULL;
        }
        const bert_layer_weights *w = &m->layers[l];
        const int global = l % c->fam.global_every == 0;
        const float *in = x;
        if (w->attn_ln_w) {
            layer_norm_rows(plan, b->a, x, NULL, w->attn_ln_w, w->attn_ln_b, T, H, c->layer_norm_eps);
            in = b->a;
        }
        if (bert_linear_matrix(plan, b->f, in, &w->q_w, w->q_b, T, 3 * H, H)) return projection_out_of_memory(m, T, err);
        qkv_job split = {plan->isa, b->f, b->q, b->k, b->v, positions, global ? cos_global : cos_local,
                         global ? sin_global : sin_local, T, H, heads, dh};
        int chunks = plan->threads > 1 && (long long)T * H >= 2 * ROWS_MIN_WORK ? 4 * plan->threads : 1;
        if (chunks > T) chunks = T;
        if (chunks > 1) bert_workers_run(plan->workers, plan->threads, chunks, qkv_chunk, &split);
        else qkv_chunk(&split, 0, 1);
        att->window = global ? -1 : c->fam.local_window / 2;
        if (seen && observe_attention(m, seen, l, b->q, b->k, lengths, n_seqs, NULL, longest, att->window, err) != 0)
            return NULL;
        if (b->att_chunks > 1) bert_workers_run(plan->workers, plan->threads, b->att_chunks, attention_chunk, att);
        else attention_chunk(att, 0, 1);
        if (bert_linear_matrix(plan, b->q, b->a, &w->out_w, w->out_b, T, H, H))
            return projection_out_of_memory(m, T, err);
        add_rows(plan, x, b->q, T, H);
        layer_norm_rows(plan, b->a, x, NULL, w->ff_ln_w, w->ff_ln_b, T, H, c->layer_norm_eps);
        if (bert_linear_matrix(plan, b->f, b->a, &w->ff_in_w, w->ff_in_b, T, 2 * FF, H))
            return projection_out_of_memory(m, T, err);
        geglu_rows(plan, b->g, b->f, T, FF, c->hidden_act);
        if (bert_linear_matrix(plan, b->q, b->g, &w->ff_out_w, w->ff_out_b, T, H, FF))
            return projection_out_of_memory(m, T, err);
        add_rows(plan, x, b->q, T, H);
        /* transformers' hidden_states end with the last layer's output
         * before final_norm. */
        if (seen && observe_hidden_states(seen, l + 1, x, T, H, err) != 0) return NULL;
    }
    layer_norm_rows(plan, x, x, NULL, m->final_norm_w, m->final_norm_b, T, H, c->layer_norm_eps);
    return x;
}

/* The activations of nomic-bert's and gte's layers (encode's buffers):
 * f holds the fused projection [T x 3H] or the MLP's input projections,
 * g the gated MLP's [T x I]; rotary each row's cos and sin [T x rotary_dim
 * / 2], then one sequence's inverse frequencies. */
typedef struct {
    float *x, *q, *k, *v, *a, *f, *g;
    float *rotary;
    int att_chunks;
} rope_buffers;

/* nomic-bert's layers (modeling_hf_nomic_bert.py: NomicBertBlock with
 * prenorm false) and gte's (modeling.py: NewLayer), on the embeddings in
 * b->x: the fused Wqkv / qkv_proj, rotary queries and keys, attention over
 * the whole sequence, out_proj / o_proj, LayerNorm(x + that) (norm1 /
 * attn_ln); the gated MLP glu_act(gate) * up (nomic-bert: fc12 gates fc11;
 * gte: up_gate_proj's second half gates its first), fc2 / down_proj,
 * LayerNorm(x + that) (norm2 / mlp_ln).  Returns b->x, or NULL with *err. */
static const float *rope_layers(const bert_model *m, const bert_linear_plan *plan, attention_job *att,
                                const rope_buffers *b, const int *lengths, int n_seqs, int longest,
                                observation *seen, bert_interrupt_fn interrupted, void *ctx, char **err)
{
    const bert_config *c = &m->cfg;
    const int H = c->hidden_size, FF = c->intermediate_size, heads = c->num_heads, dh = H / heads;
    int T = 0;
    for (int i = 0; i < n_seqs; i++) T += lengths[i];
    const size_t half = (size_t)c->fam.rotary_dim / 2;
    float *cos_rows = b->rotary, *sin_rows = cos_rows + (size_t)T * half, *inv = sin_rows + (size_t)T * half;
    rope_row_tables(c, lengths, n_seqs, cos_rows, sin_rows, inv);
    const int nomic = c->family == BERT_FAMILY_NOMIC_BERT;
    float *x = b->x;
    att->window = -1;
    for (int l = 0; l < c->num_layers; l++) {
        if (interrupted && interrupted(ctx)) {
            *err = bert_errorf("interrupted");
            return NULL;
        }
        const bert_layer_weights *w = &m->layers[l];
        if (bert_linear_matrix(plan, b->f, x, &w->q_w, w->q_b, T, 3 * H, H)) return projection_out_of_memory(m, T, err);
        rope_qkv_job split = {b->f, b->q, b->k, b->v, cos_rows, sin_rows, T, H, heads, dh, c->fam.rotary_dim,
                              c->fam.rotary_interleaved};
        int chunks = plan->threads > 1 && (long long)T * H >= 2 * ROWS_MIN_WORK ? 4 * plan->threads : 1;
        if (chunks > T) chunks = T;
        if (chunks > 1) bert_workers_run(plan->workers, plan->threads, chunks, rope_qkv_chunk, &split);
        else rope_qkv_chunk(&split, 0, 1);
        if (seen && observe_attention(m, seen, l, b->q, b->k, lengths, n_seqs, NULL, longest, -1, err) != 0)
            return NULL;
        if (b->att_chunks > 1) bert_workers_run(plan->workers, plan->threads, b->att_chunks, attention_chunk, att);
        else attention_chunk(att, 0, 1);
        if (bert_linear_matrix(plan, b->q, b->a, &w->out_w, w->out_b, T, H, H))
            return projection_out_of_memory(m, T, err);
        layer_norm_rows(plan, x, b->q, x, w->attn_ln_w, w->attn_ln_b, T, H, c->layer_norm_eps);
        if (nomic) {
            if (bert_linear_matrix(plan, b->f, x, &w->ff_in_w, w->ff_in_b, T, FF, H) ||
                bert_linear_matrix(plan, b->g, x, &w->ff_gate_w, w->ff_gate_b, T, FF, H))
                return projection_out_of_memory(m, T, err);
            gate_rows(plan, b->g, b->f, FF, b->g, FF, T, FF, c->fam.glu_act);
        } else {
            if (bert_linear_matrix(plan, b->f, x, &w->ff_in_w, w->ff_in_b, T, 2 * FF, H))
                return projection_out_of_memory(m, T, err);
            gate_rows(plan, b->g, b->f, 2 * FF, b->f + FF, 2 * FF, T, FF, c->fam.glu_act);
        }
        if (bert_linear_matrix(plan, b->q, b->g, &w->ff_out_w, w->ff_out_b, T, H, FF))
            return projection_out_of_memory(m, T, err);
        layer_norm_rows(plan, x, b->q, x, w->ff_ln_w, w->ff_ln_b, T, H, c->layer_norm_eps);
        if (seen && observe_hidden_states(seen, l + 1, x, T, H, err) != 0) return NULL;
    }
    return x;
}

static const float *encode(const bert_model *m, bert_scratch *s, const int32_t *ids, const int32_t *type_ids,
                           const int *lengths, const int *keys, int n_seqs, observation *seen,
                           bert_interrupt_fn interrupted, void *ctx, char **err)
{
    *err = NULL;
    if (!m || !s || !ids || !lengths) { *err = bert_errorf("bert_encode: missing argument"); return NULL; }
    const bert_config *c = &m->cfg;
    const int H = c->hidden_size, FF = c->intermediate_size;
    size_t total;
    int longest;
    /* DistilBERT, MPNet and ModernBERT have no segments; RoBERTa's
     * tokenizers give every token of a pair segment 0 (its one token type).
     * ELECTRA's are BERT's. */
    if (!m->type_emb ||
        (c->family != BERT_FAMILY_BERT && c->family != BERT_FAMILY_ELECTRA && c->family != BERT_FAMILY_DEBERTA_V2 &&
         c->family != BERT_FAMILY_JINA_BERT && !bert_family_rotary(c->family)))
        type_ids = NULL;
    if (check_inputs(m, ids, type_ids, lengths, keys, n_seqs, &total, &longest, err) != 0) return NULL;
    const int T = (int)total;

    /* Attention runs in chunks of (sequence, head, query block) items when
     * there are threads, each chunk with its own scores: a single long text
     * is shared out by its heads and query rows. */
    const bert_linear_plan *plan = plan_threads(s);
    int att_items = 0;
    for (int i = 0; i < n_seqs; i++) att_items += blocks_of(lengths[i]) * c->num_heads;
    int att_chunks = plan->threads > 1 ? (att_items < 4 * plan->threads ? att_items : 4 * plan->threads) : 1;

    /* x: hidden state; q, k, v; a: attention context; f: FFN activations.
     * q doubles as the output buffer of both sublayers once it is free. */
    size_t th = total * (size_t)H, sq = (size_t)QUERY_BLOCK * (size_t)softmax_width(longest);
    /* MPNet's relative position bias, or JinaBERT's ALiBi. */
    const int jina = c->family == BERT_FAMILY_JINA_BERT, biased = m->rel_bias || jina;
    size_t rel_size = biased ? (2 * (size_t)longest - 1) * (size_t)c->num_heads : 0;
    /* Attention on AMX tiles at a reduced precision: the float32 products
     * would take longer than the layer's projections (AMX too). */
    const int dh = H / c->num_heads;
    const int tiled = m->precision != BERT_PRECISION_FLOAT32 && (plan->extensions & BERT_CPU_AMX_BF16);
    const size_t tiles_bytes = tiled ? tile_buffers_at(NULL, longest, dh, &(tile_buffers){0}) : 0;
    const size_t tiles_floats = (size_t)att_chunks * ((tiles_bytes + sizeof(float) - 1) / sizeof(float));
    /* Else, on AVX-512, attention by the panel kernel.  Held to AVX2 it was
     * 1% slower than OpenBLAS's kernels on 450-token texts (2.87 s against
     * 2.85, bert-base, two threads), so OpenBLAS keeps attention there. */
    const int paneled = !tiled && plan->isa == BERT_ISA_AVX512 &&
                        bert_f32_panel_product(plan->isa, NULL, NULL, NULL, 0, 0, 0);
    const size_t panel_floats = paneled ? panel_buffers_at(NULL, longest, dh, &(panel_buffers){0}) : 0;
    /* ModernBERT: f holds the fused Wqkv's [T x 3H] or Wi's [T x 2I], g
     * the GeGLU's [T x I]; the rotary tables of both bases; each row's
     * position.  ELECTRA: the embeddings before embeddings_project. */
    const int modern = c->family == BERT_FAMILY_MODERNBERT, rope = bert_family_rotary(c->family);
    const size_t f_cols = modern || rope ? (3 * (size_t)H > 2 * (size_t)FF ? 3 * (size_t)H : 2 * (size_t)FF)
                          : jina ? 2 * (size_t)FF : (size_t)FF;
    /* The gated MLPs (ModernBERT, JinaBERT, nomic-bert, gte): g holds their [T x I]. */
    const size_t g_floats = modern || jina || rope ? total * (size_t)FF : 0;
    /* nomic-bert and gte: each row's cos and sin, one sequence's inverse frequencies. */
    const size_t rotary_floats = modern ? 2 * (size_t)longest * (size_t)dh + total
                                 : rope ? (total + 1) * (size_t)c->fam.rotary_dim : 0;
    const size_t emb_floats = m->emb_proj_w ? total * (size_t)c->fam.embedding_size : 0;
    /* DeBERTa: the rows of the relative embeddings the lengths reach
     * (normalised, then each layer's keys and queries of them), their
     * index by distance, and each chunk's work. */
    const int deberta = c->family == BERT_FAMILY_DEBERTA_V2 && m->rel_emb;
    int rel_lo = 0, rel_rows = 0;
    if (deberta) {
        int lo = deberta_row(&c->fam, 0), hi = lo;
        for (int d = -(longest - 1); d <= longest - 1; d++) {
            int r = deberta_row(&c->fam, d);
            lo = r < lo ? r : lo;
            hi = r > hi ? r : hi;
        }
        rel_lo = lo;
        rel_rows = hi - lo + 1;
    }
    const size_t deb_floats = deberta ? (size_t)att_chunks * terms_floats(longest, rel_rows) +
                                            3 * (size_t)rel_rows * (size_t)H + 2 * (size_t)longest
                                      : 0;
    size_t need = 5 * th + total * f_cols + (size_t)att_chunks * (sq + panel_floats) + rel_size + tiles_floats +
                  g_floats + rotary_floats + emb_floats + deb_floats;
    if (reserve(&s->work, &s->work_cap, need) != 0) {
        *err = bert_errorf("out of memory: encoding %zu tokens needs %zu MB of scratch", total,
                           need * sizeof(float) >> 20);
        return NULL;
    }
    float *x = s->work, *q = x + th, *k = q + th, *v = k + th, *a = v + th;
    float *f = a + th, *scores = f + total * f_cols;
    float *rel = biased ? scores + (size_t)att_chunks * sq : NULL;
    if (rel) relative_bias_table(m, longest, rel);
    unsigned char *tiles = tiled ? (unsigned char *)(scores + (size_t)att_chunks * sq + rel_size) : NULL;
    float *panels = paneled ? scores + (size_t)att_chunks * sq + rel_size + tiles_floats : NULL;
    score_terms terms = {1.0f / sqrtf((float)dh), rel, longest, NULL, NULL, NULL, 0};
    attention_job att = {s->plan.isa, a, q, k, v, scores, sq, lengths, keys, n_seqs, H, c->num_heads, att_items, terms,
                         longest, tiles, (tiles_bytes + sizeof(float) - 1) / sizeof(float) * sizeof(float),
                         panels, panel_floats, NULL, -1};
    float *g = scores + (size_t)att_chunks * (sq + panel_floats) + rel_size + tiles_floats;
    float *rotary = g + g_floats, *emb = rotary + rotary_floats, *deb = emb + emb_floats;
    float *pos_k = NULL, *pos_q = NULL;
    if (deberta) {
        if (seen && seen->observer->attention) {
            *err = bert_errorf("bert_attention does not show DeBERTa's disentangled attention");
            return NULL;
        }
        for (int i = 0; keys && i < n_seqs; i++)
            if (keys[i] < lengths[i]) {
                *err = bert_errorf("DeBERTa's attention attends to every position: sequences that attend only to "
                                   "their first positions (ColBERT's query expansion) are not supported");
                return NULL;
            }
        float *rel_x = deb;
        pos_k = rel_x + (size_t)rel_rows * H;
        pos_q = pos_k + (size_t)rel_rows * H;
        /* The row of query i and key j at longest - 1 - i + j: a row of
         * scores reads its rows in order, as gathers by column. */
        int32_t *rows_by_offset = (int32_t *)(pos_q + (size_t)rel_rows * H);
        for (int d = -(longest - 1); d <= longest - 1; d++)
            rows_by_offset[longest - 1 - d] = deberta_row(&c->fam, d) - rel_lo;
        /* get_rel_embedding: LayerNorm of the rows (norm_rel_ebd), row by row. */
        const float *rows = m->rel_emb + (size_t)rel_lo * H;
        if (m->rel_ln_w) layer_norm_rows(plan, rel_x, rows, NULL, m->rel_ln_w, m->rel_ln_b, rel_rows, H, c->layer_norm_eps);
        else memcpy(rel_x, rows, (size_t)rel_rows * H * sizeof *rel_x);
        const int n_terms = 1 + c->fam.c2p + c->fam.p2c;
        att.terms = (score_terms){1.0f / sqrtf((float)dh * (float)n_terms), NULL, longest,
                                  c->fam.c2p ? pos_k : NULL, c->fam.p2c ? pos_q : NULL, rows_by_offset, rel_rows};
        att.terms_work = (float *)(rows_by_offset + 2 * (size_t)longest);
    }

    embed(m, plan, m->emb_proj_w ? emb : NULL, x, ids, type_ids, lengths, n_seqs);
    if (seen && observe_hidden_states(seen, 0, x, T, H, err) != 0) return NULL;
    if (modern) {
        modern_buffers buf = {x, q, k, v, a, f, g, rotary, att_chunks};
        return modern_layers(m, plan, &att, &buf, lengths, n_seqs, longest, seen, interrupted, ctx, err);
    }
    if (rope) {
        rope_buffers buf = {x, q, k, v, a, f, g, rotary, att_chunks};
        return rope_layers(m, plan, &att, &buf, lengths, n_seqs, longest, seen, interrupted, ctx, err);
    }

    for (int l = 0; l < c->num_layers; l++) {
        if (interrupted && interrupted(ctx)) {
            *err = bert_errorf("interrupted");
            return NULL;
        }
        const bert_layer_weights *w = &m->layers[l];

        if (bert_linear_matrix(plan, q, x, &w->q_w, w->q_b, T, H, H) ||
            bert_linear_matrix(plan, k, x, &w->k_w, w->k_b, T, H, H) ||
            bert_linear_matrix(plan, v, x, &w->v_w, w->v_b, T, H, H))
            return projection_out_of_memory(m, T, err);
        if (seen && observe_attention(m, seen, l, q, k, lengths, n_seqs, rel, longest, -1, err) != 0) return NULL;
        if (deberta) {
            /* The layer's own key_proj and query_proj on the relative
             * embeddings (share_att_key). */
            const float *rel_x = deb;
            if ((c->fam.c2p && bert_linear_matrix(plan, pos_k, rel_x, &w->k_w, w->k_b, rel_rows, H, H)) ||
                (c->fam.p2c && bert_linear_matrix(plan, pos_q, rel_x, &w->q_w, w->q_b, rel_rows, H, H)))
                return projection_out_of_memory(m, rel_rows, err);
        }
        if (att_chunks > 1) bert_workers_run(plan->workers, plan->threads, att_chunks, attention_chunk, &att);
        else attention_chunk(&att, 0, 1);
        if (bert_linear_matrix(plan, q, a, &w->out_w, w->out_b, T, H, H))
            return projection_out_of_memory(m, T, err);
        layer_norm_rows(plan, x, q, x, w->attn_ln_w, w->attn_ln_b, T, H, c->layer_norm_eps);

        if (jina) {
            /* JinaBertGLUMLP: gated_layers [T x 2I], act(first half) times
             * the second, wo; its layernorm after the residual as BERT's. */
            if (bert_linear_matrix(plan, f, x, &w->ff_in_w, w->ff_in_b, T, 2 * FF, H))
                return projection_out_of_memory(m, T, err);
            geglu_rows(plan, g, f, T, FF, c->fam.glu_act);
            if (bert_linear_matrix(plan, q, g, &w->ff_out_w, w->ff_out_b, T, H, FF))
                return projection_out_of_memory(m, T, err);
        } else {
            if (bert_linear_matrix(plan, f, x, &w->ff_in_w, w->ff_in_b, T, FF, H))
                return projection_out_of_memory(m, T, err);
            activate_rows(plan, f, T, FF, c->hidden_act);
            if (bert_linear_matrix(plan, q, f, &w->ff_out_w, w->ff_out_b, T, H, FF))
                return projection_out_of_memory(m, T, err);
        }
        layer_norm_rows(plan, x, q, x, w->ff_ln_w, w->ff_ln_b, T, H, c->layer_norm_eps);
        if (seen && observe_hidden_states(seen, l + 1, x, T, H, err) != 0) return NULL;
    }
    return x;
}

const float *bert_encode(const bert_model *m, bert_scratch *s,
                         const int32_t *ids, const int32_t *type_ids,
                         const int *lengths, int n_seqs,
                         bert_interrupt_fn interrupted, void *ctx, char **err)
{
    return encode(m, s, ids, type_ids, lengths, NULL, n_seqs, NULL, interrupted, ctx, err);
}

const float *bert_encode_keys(const bert_model *m, bert_scratch *s, const int32_t *ids, const int32_t *type_ids,
                              const int *lengths, const int *keys, int n_seqs, bert_interrupt_fn interrupted,
                              void *ctx, char **err)
{
    return encode(m, s, ids, type_ids, lengths, keys, n_seqs, NULL, interrupted, ctx, err);
}

const float *bert_encode_observed(const bert_model *m, bert_scratch *s,
                                  const int32_t *ids, const int32_t *type_ids,
                                  const int *lengths, int n_seqs, const bert_observer *observer,
                                  bert_interrupt_fn interrupted, void *ctx, char **err)
{
    observation seen = {observer, NULL, 0, NULL, NULL};
    const float *out = encode(m, s, ids, type_ids, lengths, NULL, n_seqs, observer ? &seen : NULL, interrupted, ctx, err);
    free(seen.memory);
    return out;
}

/* ------------------------------------------------------------ pooling and heads */

int bert_pool(const bert_model *m, const float *hidden, int len,
              bert_pooling pooling, int normalize, float *out)
{
    if (!m || !hidden || !out || len < 1) return -1;
    const int H = m->cfg.hidden_size;
    switch (pooling) {
    case BERT_POOL_MEAN:
        /* Over every token, [CLS] and [SEP] included, as sentence-transformers does. */
        memset(out, 0, (size_t)H * sizeof *out);
        for (int t = 0; t < len; t++)
            for (int j = 0; j < H; j++) out[j] += hidden[(size_t)t * H + j];
        for (int j = 0; j < H; j++) out[j] /= (float)len;
        break;
    case BERT_POOL_CLS:
        memcpy(out, hidden, (size_t)H * sizeof *out);
        break;
    case BERT_POOL_MAX:
        memcpy(out, hidden, (size_t)H * sizeof *out);
        for (int t = 1; t < len; t++)
            for (int j = 0; j < H; j++)
                if (hidden[(size_t)t * H + j] > out[j]) out[j] = hidden[(size_t)t * H + j];
        break;
    case BERT_POOL_POOLER:
        if (!m->pooler_w) return -1;
        memcpy(out, m->pooler_b, (size_t)H * sizeof *out);
        cblas_sgemv(CblasRowMajor, CblasNoTrans, H, H, 1.0f, m->pooler_w, H, hidden, 1, 1.0f, out, 1);
        for (int j = 0; j < H; j++) out[j] = tanhf(out[j]);
        break;
    default:
        return -1;
    }
    if (normalize) {
        /* torch.nn.functional.normalize: x / max(||x||, 1e-12) */
        double ss = 0;
        for (int j = 0; j < H; j++) ss += (double)out[j] * out[j];
        double norm = sqrt(ss);
        float inv = (float)(1.0 / (norm > 1e-12 ? norm : 1e-12));
        for (int j = 0; j < H; j++) out[j] *= inv;
    }
    return 0;
}

int bert_mlm_logits(const bert_model *m, bert_scratch *s, const float *hidden,
                    const int *rows, int n, float *out, char **err)
{
    *err = NULL;
    if (!m || !bert_model_has_mlm_head(m)) {
        *err = bert_errorf("this model has no masked-language-model head (cls.predictions.* or lm_head.*); "
                           "use a checkpoint saved from a ForMaskedLM or ForPreTraining class");
        return -1;
    }
    if (!s || !hidden || !rows || !out || n < 1) { *err = bert_errorf("bert_mlm_logits: missing argument"); return -1; }
    /* The transform's width: hidden_size, or ELECTRA's embedding_size. */
    const int H = m->cfg.hidden_size, W = bert_mlm_width(m);
    size_t nh = (size_t)n * H, nw = (size_t)n * W;
    if (reserve(&s->head, &s->head_cap, nh + nw) != 0) {
        *err = bert_errorf("out of memory: the masked-language-model head needs %zu MB",
                           (nh + nw) * sizeof(float) >> 20);
        return -1;
    }
    float *g = s->head, *t = s->head + nh;
    const bert_linear_plan *plan = plan_threads(s);
    for (int i = 0; i < n; i++) {
        if (rows[i] < 0) { *err = bert_errorf("bert_mlm_logits: row %d is negative", rows[i]); return -1; }
        memcpy(g + (size_t)i * H, hidden + (size_t)rows[i] * H, (size_t)H * sizeof(float));
    }
    bert_linear(plan, t, g, m->mlm_dense_w, m->mlm_dense_b, n, W, H);
    activate(s->plan.isa, t, nw, m->mlm_act);
    add_layer_norm(s->plan.isa, t, t, NULL, m->mlm_ln_w, m->mlm_ln_b, n, W, m->cfg.layer_norm_eps);
    bert_linear(plan, out, t, m->mlm_decoder_w, m->mlm_bias, n, m->cfg.vocab_size, W);
    return 0;
}

int bert_nsp_probability(const bert_model *m, const float *cls_hidden, double *prob)
{
    if (!m || !bert_model_has_nsp_head(m) || !cls_hidden || !prob) return -1;
    const int H = m->cfg.hidden_size;
    /* The pooled vector is consumed element by element, so no buffer is needed. */
    double l0 = m->nsp_b[0], l1 = m->nsp_b[1];
    for (int i = 0; i < H; i++) {
        float p = tanhf(cblas_sdot(H, m->pooler_w + (size_t)i * H, 1, cls_hidden, 1) + m->pooler_b[i]);
        l0 += (double)m->nsp_w[i] * p;
        l1 += (double)m->nsp_w[H + i] * p;
    }
    /* softmax([l0, l1])[0], "B follows A" in Hugging Face's labelling */
    *prob = 1.0 / (1.0 + exp(l1 - l0));
    return 0;
}

int bert_classifier_logits(const bert_model *m, bert_scratch *s, const float *hidden, int len, float *out, char **err)
{
    *err = NULL;
    if (!m || !bert_model_has_classifier(m)) {
        *err = bert_errorf("this model has no sequence-classification head (classifier.*)");
        return -1;
    }
    if (!s || !hidden || !out || len < 1) { *err = bert_errorf("bert_classifier_logits: missing argument"); return -1; }
    const int H = m->cfg.hidden_size, L = m->head.num_labels;
    const bert_family f = m->cfg.family;
    if (reserve(&s->head, &s->head_cap, 2 * (size_t)H) != 0) {
        *err = bert_errorf("out of memory: the classifier head needs %zu bytes", 2 * (size_t)H * sizeof(float));
        return -1;
    }
    /* On the first token: BertForSequenceClassification's pooler, tanh;
     * DistilBertForSequenceClassification's pre_classifier, ReLU;
     * RobertaClassificationHead's and MPNetClassificationHead's dense, tanh;
     * ElectraClassificationHead's dense, gelu; nomic-bert's and gte's as
     * BERT's.  ModernBERT's on the first
     * token or the mean of all (classifier_pooling): head.dense, its
     * classifier_activation, head.norm. */
    const float *first = hidden;
    float *pooled = s->head, *mean = s->head + H;
    if (f == BERT_FAMILY_MODERNBERT && m->cfg.fam.mean_pooling) {
        memset(mean, 0, (size_t)H * sizeof *mean);
        for (int t = 0; t < len; t++)
            for (int j = 0; j < H; j++) mean[j] += hidden[(size_t)t * H + j];
        for (int j = 0; j < H; j++) mean[j] /= (float)len;
        first = mean;
    }
    const int bert = bert_family_pooled_classifier(f);
    memcpy(pooled, bert ? m->pooler_b : m->pre_cls_b, (size_t)H * sizeof *pooled);
    cblas_sgemv(CblasRowMajor, CblasNoTrans, H, H, 1.0f, bert ? m->pooler_w : m->pre_cls_w, H, first, 1, 1.0f,
                pooled, 1);
    if (f == BERT_FAMILY_DISTILBERT) {
        for (int j = 0; j < H; j++) pooled[j] = pooled[j] > 0 ? pooled[j] : 0;
    } else if (f == BERT_FAMILY_ELECTRA) {
        activate(s->plan.isa, pooled, (size_t)H, BERT_ACT_GELU);
    } else if (f == BERT_FAMILY_DEBERTA_V2) {
        /* ContextPooler: dense, pooler_hidden_act. */
        activate(s->plan.isa, pooled, (size_t)H, m->cfg.fam.head_act);
    } else if (f == BERT_FAMILY_MODERNBERT) {
        activate(s->plan.isa, pooled, (size_t)H, m->cfg.fam.head_act);
        add_layer_norm(s->plan.isa, pooled, pooled, NULL, m->head_norm_w, m->head_norm_b, 1, H, m->cfg.layer_norm_eps);
    } else {
        for (int j = 0; j < H; j++) pooled[j] = tanhf(pooled[j]);
    }
    memcpy(out, m->cls_b, (size_t)L * sizeof *out);
    cblas_sgemv(CblasRowMajor, CblasNoTrans, L, H, 1.0f, m->cls_w, H, pooled, 1, 1.0f, out, 1);
    return 0;
}

/* ModernBERT's prediction head (head.dense, classifier_activation,
 * head.norm) on n rows of hidden states, before its token or
 * question-answering classifier: rows [n x H] in the scratch past
 * `reserved` floats, or NULL out of memory.  Every other family's token
 * heads read the hidden states themselves. */
static const float *token_head_rows(const bert_model *m, bert_scratch *s, const float *hidden, int n, size_t reserved)
{
    if (m->cfg.family != BERT_FAMILY_MODERNBERT) return hidden;
    const int H = m->cfg.hidden_size;
    if (reserve(&s->head, &s->head_cap, reserved + (size_t)n * H) != 0) return NULL;
    float *rows = s->head + reserved;
    bert_linear(plan_threads(s), rows, hidden, m->pre_cls_w, m->pre_cls_b, n, H, H);
    activate(s->plan.isa, rows, (size_t)n * H, m->cfg.fam.head_act);
    add_layer_norm(s->plan.isa, rows, rows, NULL, m->head_norm_w, m->head_norm_b, n, H, m->cfg.layer_norm_eps);
    return rows;
}

int bert_token_logits(const bert_model *m, bert_scratch *s, const float *hidden, int n, float *out, char **err)
{
    *err = NULL;
    if (!m || !bert_model_has_token_head(m)) {
        *err = bert_errorf("this model has no token-classification head (classifier.* per token)");
        return -1;
    }
    if (!s || !hidden || !out || n < 1) { *err = bert_errorf("bert_token_logits: missing argument"); return -1; }
    /* BertForTokenClassification: dropout (the identity at inference), then
     * the classifier on every token's hidden state (ModernBERT's after its
     * prediction head). */
    const float *rows = token_head_rows(m, s, hidden, n, 0);
    if (!rows) {
        *err = bert_errorf("out of memory: the token-classification head over %d tokens", n);
        return -1;
    }
    bert_linear(plan_threads(s), out, rows, m->tok_w, m->tok_b, n, m->head.num_labels, m->cfg.hidden_size);
    return 0;
}

int bert_qa_logits(const bert_model *m, bert_scratch *s, const float *hidden, int n, float *start, float *end,
                   char **err)
{
    *err = NULL;
    if (!m || !bert_model_has_qa_head(m)) {
        *err = bert_errorf("this model has no question-answering head (qa_outputs.*)");
        return -1;
    }
    if (!s || !hidden || !start || !end || n < 1) { *err = bert_errorf("bert_qa_logits: missing argument"); return -1; }
    if (reserve(&s->head, &s->head_cap, 2 * (size_t)n) != 0) {
        *err = bert_errorf("out of memory: the question-answering head needs %zu bytes", 2 * (size_t)n * sizeof(float));
        return -1;
    }
    /* qa_outputs gives [n x 2]; transformers splits it into start and end.
     * ModernBERT's (named classifier) reads its prediction head's rows. */
    const float *rows = token_head_rows(m, s, hidden, n, 2 * (size_t)n);
    if (!rows) {
        *err = bert_errorf("out of memory: the question-answering head over %d tokens", n);
        return -1;
    }
    bert_linear(plan_threads(s), s->head, rows, m->qa_w, m->qa_b, n, 2, m->cfg.hidden_size);
    for (int i = 0; i < n; i++) {
        start[i] = s->head[2 * (size_t)i];
        end[i] = s->head[2 * (size_t)i + 1];
    }
    return 0;
}
