/*
 * train_layers.c - the encoder's building blocks forward and backward for
 * training: products (OpenBLAS, shared out over the helper threads),
 * LayerNorm, the activations, dropout and masked self-attention.
 * Compiled twice (train_net.h): float for the extension, double for the
 * finite-difference tests.
 */
#include "train_net.h"
#include "../kernels/cpu.h"
#include "../kernels/fast_math.h"

#include <assert.h>
#include <cblas.h>
#include <string.h>
#include <tgmath.h>

/* ------------------------------------------------------------ products */

typedef struct {
    int trans_a, trans_b, M, N, K;
    treal alpha, beta;
    const treal *A, *B;
    treal *C;
    int lda, ldb, ldc, chunks;
} gemm_job;

static void gemm_chunk(void *p, int chunk, int chunks)
{
    const gemm_job *j = p;
    int r0 = (int)((long long)j->M * chunk / chunks), r1 = (int)((long long)j->M * (chunk + 1) / chunks);
    if (r1 <= r0) return;
    /* Rows r0..r1 of op(A): rows of A, or its columns when transposed. */
    const treal *a = j->trans_a ? j->A + r0 : j->A + (size_t)r0 * j->lda;
    TGEMM(CblasRowMajor, j->trans_a ? CblasTrans : CblasNoTrans, j->trans_b ? CblasTrans : CblasNoTrans, r1 - r0,
          j->N, j->K, j->alpha, a, j->lda, j->B, j->ldb, j->beta, j->C + (size_t)r0 * j->ldc, j->ldc);
}

/* About a quarter of a millisecond of arithmetic a thread: below, waking
 * the helpers costs more than it saves. */
#define GEMM_MIN_WORK (256 * 1024)

void TN(tn_gemm)(const tn_threads *th, int trans_a, int trans_b, int M, int N, int K, treal alpha, const treal *A,
                 int lda, const treal *B, int ldb, treal beta, treal *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
    gemm_job j = {trans_a, trans_b, M, N, K, alpha, beta, A, B, C, lda, ldb, ldc, 1};
    long long work = (long long)M * N * (K > 0 ? K : 1);
    int threads = th && th->workers ? th->threads : 1;
    if (threads > work / GEMM_MIN_WORK) threads = (int)(work / GEMM_MIN_WORK);
    if (threads > M) threads = M;
    if (threads < 2) {
        gemm_chunk(&j, 0, 1);
        return;
    }
    /* Four chunks a thread where the rows allow, so that a thread held up
     * by a busy core leaves its share to the others. */
    int chunks = 4 * threads < M / 8 ? 4 * threads : M / 8 > threads ? M / 8 : threads;
    bert_workers_run(th->workers, threads, chunks, gemm_chunk, &j);
}

void TN(tn_linear)(const tn_threads *th, treal *y, const treal *x, const treal *w, const treal *b, int n, int rows,
                   int cols)
{
    if (b)
        for (int i = 0; i < n; i++) memcpy(y + (size_t)i * rows, b, (size_t)rows * sizeof *y);
    TN(tn_gemm)(th, 0, 1, n, rows, cols, 1, x, cols, w, cols, b ? 1 : 0, y, rows);
}

void TN(tn_linear_back)(const tn_threads *th, const treal *dy, const treal *x, const treal *w, treal *dw, treal *db,
                        treal *dx, int accumulate, int n, int rows, int cols)
{
    /* The weight gradient is itself a product: dW [rows x cols] += dy^T x. */
    if (dw) TN(tn_gemm)(th, 1, 0, rows, cols, n, 1, dy, rows, x, cols, 1, dw, cols);
    if (db)
        for (int i = 0; i < n; i++)
            for (int r = 0; r < rows; r++) db[r] += dy[(size_t)i * rows + r];
    if (dx) TN(tn_gemm)(th, 0, 0, n, cols, rows, 1, dy, rows, w, cols, accumulate ? 1 : 0, dx, cols);
}

/* ------------------------------------------------------------ LayerNorm */

void TN(tn_layer_norm)(treal *y, treal *xhat, treal *rstd, const treal *x, const treal *w, const treal *b, int n,
                       int dim, float eps)
{
    for (int i = 0; i < n; i++) {
        const treal *xi = x + (size_t)i * dim;
        /* Statistics in double: rows after a residual are far from zero-mean. */
        double mean = 0, var = 0;
        for (int j = 0; j < dim; j++) mean += xi[j];
        mean /= dim;
        for (int j = 0; j < dim; j++) var += (xi[j] - mean) * (xi[j] - mean);
        double r = 1.0 / sqrt(var / dim + (double)eps);
        rstd[i] = (treal)r;
        for (int j = 0; j < dim; j++) {
            treal h = (treal)((xi[j] - mean) * r);
            xhat[(size_t)i * dim + j] = h;
            y[(size_t)i * dim + j] = h * w[j] + b[j];
        }
    }
}

void TN(tn_layer_norm_back)(treal *dx, const treal *dy, const treal *xhat, const treal *rstd, const treal *w,
                            treal *dw, treal *db, int n, int dim)
{
    for (int i = 0; i < n; i++) {
        const treal *dyi = dy + (size_t)i * dim, *hi = xhat + (size_t)i * dim;
        double s1 = 0, s2 = 0;
        for (int j = 0; j < dim; j++) {
            double d = (double)dyi[j] * w[j];
            s1 += d;
            s2 += d * hi[j];
            if (dw) dw[j] += dyi[j] * hi[j];
            if (db) db[j] += dyi[j];
        }
        s1 /= dim;
        s2 /= dim;
        treal *dxi = dx + (size_t)i * dim;
        for (int j = 0; j < dim; j++) dxi[j] = (treal)(rstd[i] * ((double)dyi[j] * w[j] - s1 - hi[j] * s2));
    }
}

/* ------------------------------------------------------------ activations */

#define SQRT1_2 0.70710678118654752440
#define SQRT_2_PI 0.79788456080286535588   /* sqrt(2 / pi) */
#define INV_SQRT_2PI 0.39894228040143267794

static void activate_span(treal *y, const treal *x, size_t n, bert_activation act)
{
    for (size_t i = 0; i < n; i++) {
        treal v = x[i];
        switch (act) {
        case BERT_ACT_GELU: y[i] = (treal)0.5 * v * ((treal)1 + erf(v * (treal)SQRT1_2)); break;
        case BERT_ACT_GELU_TANH:
            y[i] = (treal)0.5 * v * ((treal)1 + tanh((treal)SQRT_2_PI * (v + (treal)0.044715 * v * v * v)));
            break;
        case BERT_ACT_RELU: y[i] = v > 0 ? v : 0; break;
        case BERT_ACT_SILU: y[i] = v / ((treal)1 + exp(-v)); break;
        case BERT_ACT_SIGMOID: y[i] = (treal)1 / ((treal)1 + exp(-v)); break;
        }
    }
}

static void activate_back_span(treal *dx, const treal *dy, const treal *x, size_t n, bert_activation act)
{
    for (size_t i = 0; i < n; i++) {
        treal v = x[i], d = 0;
        switch (act) {
        case BERT_ACT_GELU:
            d = (treal)0.5 * ((treal)1 + erf(v * (treal)SQRT1_2)) + v * exp((treal)-0.5 * v * v) * (treal)INV_SQRT_2PI;
            break;
        case BERT_ACT_GELU_TANH: {
            treal u = (treal)SQRT_2_PI * (v + (treal)0.044715 * v * v * v), t = tanh(u);
            d = (treal)0.5 * ((treal)1 + t) +
                (treal)0.5 * v * ((treal)1 - t * t) * (treal)SQRT_2_PI * ((treal)1 + (treal)(3 * 0.044715) * v * v);
            break;
        }
        case BERT_ACT_RELU: d = v > 0 ? 1 : 0; break;
        case BERT_ACT_SILU: {
            treal sg = (treal)1 / ((treal)1 + exp(-v));
            d = sg * ((treal)1 + v * ((treal)1 - sg));
            break;
        }
        case BERT_ACT_SIGMOID: {
            treal sg = (treal)1 / ((treal)1 + exp(-v));
            d = sg * ((treal)1 - sg);
            break;
        }
        }
        dx[i] = dy[i] * d;
    }
}

#ifndef BERT_TRAIN_DOUBLE
/* GELU forward and backward in float as vector loops (fast_math.h's erf
 * within 5e-7 and e^x within 2 ulp, which the compiler vectorizes where
 * libm's erff and expf stay one call an element): libm's erff alone was a
 * twelfth of a MiniLM step on one thread. */
BERT_INLINE void gelu_forward_body(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = 0.5f * x[i] * (1.0f + erf_rational(x[i] * (float)SQRT1_2));
}
BERT_MULTIVERSION(gelu_forward, (float *y, const float *x, size_t n), (y, x, n))

BERT_INLINE void gelu_back_body(float *dx, const float *dy, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        float d = 0.5f * (1.0f + erf_rational(v * (float)SQRT1_2)) + v * exp_poly(-0.5f * v * v) * (float)INV_SQRT_2PI;
        dx[i] = dy[i] * d;
    }
}
BERT_MULTIVERSION(gelu_back, (float *dx, const float *dy, const float *x, size_t n), (dx, dy, x, n))
#endif

/* The activations share out over the threads: with erf, GELU forward and
 * backward took a sixth of a MiniLM step on one thread. */
typedef struct {
    treal *out;
    const treal *dy, *x;
    size_t n;
    bert_activation act;
} activate_job;

static void activate_chunk(void *p, int chunk, int chunks)
{
    const activate_job *j = p;
    size_t e0 = j->n * (size_t)chunk / (size_t)chunks, e1 = j->n * (size_t)(chunk + 1) / (size_t)chunks;
#ifndef BERT_TRAIN_DOUBLE
    if (j->act == BERT_ACT_GELU) {
        const bert_isa isa = bert_cpu_isa();
        if (j->dy) gelu_back(isa, j->out + e0, j->dy + e0, j->x + e0, e1 - e0);
        else gelu_forward(isa, j->out + e0, j->x + e0, e1 - e0);
        return;
    }
#endif
    if (j->dy) activate_back_span(j->out + e0, j->dy + e0, j->x + e0, e1 - e0, j->act);
    else activate_span(j->out + e0, j->x + e0, e1 - e0, j->act);
}

/* Elements a thread must have: below, waking the helpers costs more. */
#define ACTIVATE_MIN_WORK (64 * 1024)

static void activate_run(const tn_threads *th, activate_job *j)
{
    int threads = th && th->workers ? th->threads : 1;
    if ((size_t)threads > j->n / ACTIVATE_MIN_WORK) threads = (int)(j->n / ACTIVATE_MIN_WORK);
    if (threads < 2) activate_chunk(j, 0, 1);
    else bert_workers_run(th->workers, threads, 4 * threads, activate_chunk, j);
}

void TN(tn_activate)(const tn_threads *th, treal *y, const treal *x, size_t n, bert_activation act)
{
    activate_job j = {y, NULL, x, n, act};
    activate_run(th, &j);
}

void TN(tn_activate_back)(const tn_threads *th, treal *dx, const treal *dy, const treal *x, size_t n,
                          bert_activation act)
{
    activate_job j = {dx, dy, x, n, act};
    activate_run(th, &j);
}

/* ------------------------------------------------------------ random numbers, dropout */

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void TN(tn_rng_seed)(tn_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t TN(tn_rng_next)(tn_rng *r)
{
    uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double TN(tn_rng_uniform)(tn_rng *r)
{
    return (double)(TN(tn_rng_next)(r) >> 11) * (1.0 / 9007199254740992.0);
}

double TN(tn_rng_normal)(tn_rng *r)
{
    /* 1 - u is in (0, 1], so the logarithm is finite. */
    double u1 = 1.0 - TN(tn_rng_uniform)(r), u2 = TN(tn_rng_uniform)(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586477 * u2);
}

void TN(tn_dropout)(tn_rng *r, treal *x, uint8_t *keep, size_t n, float p)
{
    /* A draw below p drops: 64-bit draws compared as fractions of 2^64. */
    const uint64_t below = (uint64_t)((double)p * 18446744073709551616.0);
    const treal kept = (treal)(1.0 / (1.0 - (double)p));
    for (size_t i = 0; i < n; i++) {
        keep[i] = TN(tn_rng_next)(r) >= below;
        x[i] = keep[i] ? x[i] * kept : 0;
    }
}

void TN(tn_dropout_back)(treal *dx, const uint8_t *keep, size_t n, float p)
{
    const treal kept = (treal)(1.0 / (1.0 - (double)p));
    for (size_t i = 0; i < n; i++) dx[i] = keep[i] ? dx[i] * kept : 0;
}

/* ------------------------------------------------------------ self-attention */

/* MPNet's relative position bucket of key position j seen from query i
 * (MPNetEncoder.relative_position_bucket with 32 buckets and max_distance
 * 128), the logarithm in float32 as torch takes it: encoder.c's. */
static int mpnet_bucket(int relative)
{
    const int half = BERT_MPNET_BUCKETS / 2, max_exact = half / 2;
    int n = -relative;
    int ret = n < 0 ? half : 0;
    n = n < 0 ? -n : n;
    if (n < max_exact) return ret + n;
    float scaled = logf((float)n / (float)max_exact) / (float)log(128.0 / max_exact) * (float)(half - max_exact);
    int large = max_exact + (int)scaled;
    return ret + (large < half - 1 ? large : half - 1);
}

/* A chunk's scratch: three L x L blocks (the probabilities, recomputed in
 * the backward rather than kept per layer, and two more), then (MPNet) the bucket of every
 * distance j - i from -(L - 1), and the chunk's sums of the bias gradient. */
static size_t chunk_floats(const tn_attention *a)
{
    size_t f = 3 * (size_t)a->L * a->L;
    if (a->rel) f += 2 * (size_t)a->L + (size_t)BERT_MPNET_BUCKETS * a->heads;
    return f;
}

static const treal *buckets_at(const tn_attention *a, treal *chunk_scratch)
{
    treal *b = chunk_scratch + 3 * (size_t)a->L * a->L;
    for (int d = -(a->L - 1); d <= a->L - 1; d++) b[d + a->L - 1] = (treal)mpnet_bucket(d);
    return b + a->L - 1;   /* indexed by j - i */
}

/* Work items are (sequence, head) pairs, shared out over the threads; each
 * writes only its own head's columns of its own sequence's rows. */
typedef struct {
    const tn_attention *a;
    treal *ctx, *dq, *dk, *dv, *scratch;
    const treal *q, *k, *v, *dctx;
    size_t scratch_each;
} attention_job;

/* The first item of chunk c of `chunks`. */
static int item_at(int items, int c, int chunks)
{
    return (int)((long long)items * c / chunks);
}

/* Item it's probabilities P [L x L] = softmax(q k^T / sqrt(dh) + bias +
 * mask), the masked columns 0.  The forward computes them and the backward
 * computes them again from the kept queries and keys (the same calls on the
 * same values: the same bits), instead of keeping n x heads x L x L floats
 * a layer, 1.2 GB for bert-base at 8 x 512. */
static void attention_probs(const tn_attention *a, const treal *q, const treal *k, int it, const treal *bucket,
                            treal *P)
{
    const int L = a->L, H = a->H, dh = H / a->heads;
    const treal scale = (treal)(1.0 / sqrt((double)dh));
    int s = it / a->heads, h = it % a->heads, keys = a->lengths[s];
    size_t row0 = (size_t)s * L * H + (size_t)h * dh;
    /* Scores against the first `keys` positions only: the mask's large
     * negative makes the others' probabilities exactly 0 in float. */
    TGEMM(CblasRowMajor, CblasNoTrans, CblasTrans, L, keys, dh, scale, q + row0, H, k + row0, H, 0, P, L);
    if (bucket) {
        for (int i = 0; i < L; i++)
            for (int c = 0; c < keys; c++) P[(size_t)i * L + c] += a->rel[(size_t)bucket[c - i] * a->heads + h];
    }
    for (int i = 0; i < L; i++) {
        treal *r = P + (size_t)i * L, max = r[0];
        for (int c = 1; c < keys; c++) max = r[c] > max ? r[c] : max;
        double sum = 0;
        for (int c = 0; c < keys; c++) sum += r[c] = exp(r[c] - max);
        treal inv = (treal)(1.0 / sum);
        for (int c = 0; c < keys; c++) r[c] *= inv;
        for (int c = keys; c < L; c++) r[c] = 0;
    }
}

/* D = the attention dropout of item it's probabilities P (over the first
 * `keys` columns, all that the products read).  The draws are not kept:
 * each item draws from a stream of its own, seeded from the layer's seed
 * and the item, so the backward draws them again, and the items' draws
 * share out over the threads in any order with the same result. */
static void attention_dropout(const tn_attention *a, int it, int keys, const treal *P, treal *D)
{
    const int L = a->L;
    const uint64_t below = (uint64_t)((double)a->p * 18446744073709551616.0);
    const treal kept = (treal)(1.0 / (1.0 - (double)a->p));
    tn_rng r;
    TN(tn_rng_seed)(&r, a->seed ^ (0x9E3779B97F4A7C15ULL * (uint64_t)(it + 1)));
    for (int i = 0; i < L; i++)
        for (int c = 0; c < keys; c++) {
            size_t e = (size_t)i * L + c;
            D[e] = TN(tn_rng_next)(&r) >= below ? P[e] * kept : 0;
        }
}

static void attention_forward_chunk(void *p, int chunk, int chunks)
{
    const attention_job *j = p;
    const tn_attention *a = j->a;
    const int L = a->L, H = a->H, dh = H / a->heads, items = a->n * a->heads;
    treal *P = j->scratch + (size_t)chunk * j->scratch_each, *D = P + (size_t)L * L;
    const treal *bucket = a->rel ? buckets_at(a, P) : NULL;
    for (int it = item_at(items, chunk, chunks); it < item_at(items, chunk + 1, chunks); it++) {
        int s = it / a->heads, h = it % a->heads, keys = a->lengths[s];
        size_t row0 = (size_t)s * L * H + (size_t)h * dh;
        attention_probs(a, j->q, j->k, it, bucket, P);
        const treal *use = P;
        if (a->p > 0) {
            attention_dropout(a, it, keys, P, D);
            use = D;
        }
        TGEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, L, dh, keys, 1, use, L, j->v + row0, H, 0, j->ctx + row0, H);
    }
}

static int attention_threads(const tn_attention *a)
{
    int items = a->n * a->heads;
    int threads = a->th && a->th->workers ? a->th->threads : 1;
    return threads < items ? threads : items;
}

/* Chunks for the threads: four a thread where there are items enough (a
 * chunk's scratch is its own, so a chunk, not a thread, is the unit). */
static int attention_chunks(const tn_attention *a)
{
    int items = a->n * a->heads, threads = attention_threads(a);
    if (threads < 2) return 1;
    return 4 * threads < items ? 4 * threads : items;
}

void TN(tn_attention_forward)(const tn_attention *a, treal *ctx, const treal *q, const treal *k, const treal *v,
                              treal *scratch)
{
    int threads = attention_threads(a), chunks = attention_chunks(a);
    attention_job j = {a, ctx, NULL, NULL, NULL, scratch, q, k, v, NULL, chunk_floats(a)};
    if (chunks < 2) attention_forward_chunk(&j, 0, 1);
    else bert_workers_run(a->th->workers, threads, chunks, attention_forward_chunk, &j);
}

size_t TN(tn_attention_scratch)(const tn_attention *a)
{
    return (size_t)attention_chunks(a) * chunk_floats(a);
}

static void attention_back_chunk(void *p, int chunk, int chunks)
{
    const attention_job *j = p;
    const tn_attention *a = j->a;
    const int L = a->L, H = a->H, dh = H / a->heads, items = a->n * a->heads;
    const treal scale = (treal)(1.0 / sqrt((double)dh));
    treal *Pw = j->scratch + (size_t)chunk * j->scratch_each, *dP = Pw + (size_t)L * L, *D = dP + (size_t)L * L;
    const treal *bucket = a->rel ? buckets_at(a, Pw) : NULL;
    treal *drel = a->rel ? Pw + 3 * (size_t)L * L + 2 * (size_t)L : NULL;
    if (drel) memset(drel, 0, (size_t)BERT_MPNET_BUCKETS * a->heads * sizeof *drel);
    for (int it = item_at(items, chunk, chunks); it < item_at(items, chunk + 1, chunks); it++) {
        int s = it / a->heads, h = it % a->heads, keys = a->lengths[s];
        size_t row0 = (size_t)s * L * H + (size_t)h * dh;
        attention_probs(a, j->q, j->k, it, bucket, Pw);
        const treal *P = Pw;
        const int dropped = a->p > 0;
        const treal kept = dropped ? (treal)(1.0 / (1.0 - (double)a->p)) : 1;
        const treal *use = P;
        if (dropped) {
            attention_dropout(a, it, keys, P, D);
            use = D;
        }
        /* dV = P'^T dctx over the attended keys; the masked keys' rows get nothing. */
        TGEMM(CblasRowMajor, CblasTrans, CblasNoTrans, keys, dh, L, 1, use, L, j->dctx + row0, H, 0, j->dv + row0, H);
        for (int r = keys; r < L; r++) memset(j->dv + row0 + (size_t)r * H, 0, (size_t)dh * sizeof(treal));
        /* dP' = dctx V^T, back through the dropout, then the softmax:
         * dS = P (dP - sum(P dP)). */
        TGEMM(CblasRowMajor, CblasNoTrans, CblasTrans, L, keys, dh, 1, j->dctx + row0, H, j->v + row0, H, 0, dP, L);
        for (int i = 0; i < L; i++) {
            treal *d = dP + (size_t)i * L;
            const treal *pi = P + (size_t)i * L;
            /* A kept probability's D is not 0; where D is 0 and P is not,
             * the draw dropped it, and where P is 0 dP does not matter. */
            if (dropped) {
                const treal *di = D + (size_t)i * L;
                for (int c = 0; c < keys; c++) d[c] = di[c] != 0 ? d[c] * kept : 0;
            }
            double dot = 0;
            for (int c = 0; c < keys; c++) dot += (double)pi[c] * d[c];
            for (int c = 0; c < keys; c++) d[c] = pi[c] * (d[c] - (treal)dot);
            /* The bias is added to the scaled scores: it takes dS itself. */
            if (drel)
                for (int c = 0; c < keys; c++) drel[(size_t)bucket[c - i] * a->heads + h] += d[c];
        }
        TGEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, L, dh, keys, scale, dP, L, j->k + row0, H, 0, j->dq + row0, H);
        TGEMM(CblasRowMajor, CblasTrans, CblasNoTrans, keys, dh, L, scale, dP, L, j->q + row0, H, 0, j->dk + row0, H);
        for (int r = keys; r < L; r++) memset(j->dk + row0 + (size_t)r * H, 0, (size_t)dh * sizeof(treal));
    }
}

void TN(tn_attention_back)(const tn_attention *a, treal *dq, treal *dk, treal *dv, const treal *dctx,
                           const treal *q, const treal *k, const treal *v, treal *scratch)
{
    int threads = attention_threads(a), chunks = attention_chunks(a);
    attention_job j = {a, NULL, dq, dk, dv, scratch, q, k, v, dctx, chunk_floats(a)};
    if (chunks < 2) attention_back_chunk(&j, 0, 1);
    else bert_workers_run(a->th->workers, threads, chunks, attention_back_chunk, &j);
    /* Each chunk summed its own share of the bias gradient. */
    for (int c = 0; a->rel && a->drel && c < chunks; c++) {
        const treal *part = scratch + (size_t)c * j.scratch_each + 3 * (size_t)a->L * a->L + 2 * (size_t)a->L;
        for (int e = 0; e < BERT_MPNET_BUCKETS * a->heads; e++) a->drel[e] += part[e];
    }
}
