/*
 * linear.c - out = in W^T + b, by OpenBLAS or, for a few rows, by a kernel
 * that reads W in place.
 *
 * Why a kernel of our own: cblas_sgemm copies W into its packed panel layout
 * on every call.  Over a whole batch of tokens that copy is negligible; over
 * one 15-token sentence it is as costly as the arithmetic, and it is most of
 * why a row-by-row bert_embed ran at a quarter of the machine's sgemm speed.
 *
 * The kernel computes each output as a dot product of an input row and a
 * weight row, both contiguous, RM input rows against RN weight rows at a
 * time, with RM x RN vector accumulators held in registers.  W is streamed
 * from memory exactly once: a block of RN weight rows is reused from cache
 * for every block of input rows, and the next block is prefetched while the
 * first input rows go through the current one.  Summation order differs from
 * OpenBLAS's by rounding only (tests compare the two on every shape class).
 *
 * The vector code is compiled for AVX2+FMA and AVX-512 through target
 * attributes and chosen at run time, so the extension itself still builds
 * for (and runs on) any x86-64 or other CPU.
 */
#include "linear.h"
#include "cpu.h"
#include "workers.h"

#include <cblas.h>
#include <string.h>

/* Up to about this many rows the few-rows kernel beats OpenBLAS on bert-base
 * and MiniLM shapes (measured with AVX-512, one thread); above, OpenBLAS's
 * packing is paid back by its cache blocking. */
#define FEW_ROWS 48

static void linear_blas(float *out, const float *in, const float *w, const float *b,
                        int n, int rows, int cols)
{
    if (b)
        for (int i = 0; i < n; i++) memcpy(out + (size_t)i * rows, b, (size_t)rows * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, rows, cols,
                1.0f, in, cols, w, cols, b ? 1.0f : 0.0f, out, rows);
}

#ifdef BERT_X86_KERNELS
#include <immintrin.h>

#define UNROLL _Pragma("GCC unroll 8")

/* The loops over rm/rn below have constant bounds once a block function is
 * inlined into its caller with literal arguments, so the accumulators live in
 * registers.  `next` is the next weight block to prefetch, or NULL. */
#define BLOCK_FUNCTION(NAME, TARGET, VEC, LANES, RM, RN, LOAD, FMA, ZERO, HSUM4)                 \
    TARGET BERT_INLINE void                                                                 \
    NAME(const int rm, const int rn, const float *x, const float *w, int cols,                  \
         float *out, int ldo, const float *b, const float *next)                                \
    {                                                                                           \
        VEC acc[RM][RN];                                                                        \
        UNROLL for (int i = 0; i < rm; i++) UNROLL for (int j = 0; j < rn; j++) acc[i][j] = ZERO; \
        for (int k = 0; k < cols; k += LANES) {                                                 \
            if (next)                                                                           \
                UNROLL for (int j = 0; j < rn; j++)                                             \
                    _mm_prefetch((const char *)(next + (size_t)j * cols + k), _MM_HINT_T0);     \
            VEC xv[RM];                                                                         \
            UNROLL for (int i = 0; i < rm; i++) xv[i] = LOAD(x + (size_t)i * cols + k);         \
            UNROLL for (int j = 0; j < rn; j++) {                                               \
                VEC wv = LOAD(w + (size_t)j * cols + k);                                        \
                UNROLL for (int i = 0; i < rm; i++) acc[i][j] = FMA(xv[i], wv, acc[i][j]);      \
            }                                                                                   \
        }                                                                                       \
        /* Horizontal sums four accumulators at a time: half the shuffles  \
         * of summing each alone, which matters when cols is only 384. */   \
        VEC list[RM * RN + 3];                                                                  \
        float sums[RM * RN + 3];                                                                \
        int count = 0;                                                                          \
        UNROLL for (int i = 0; i < rm; i++) UNROLL for (int j = 0; j < rn; j++)                 \
            list[count++] = acc[i][j];                                                          \
        UNROLL for (int g = count; g < ((count + 3) & ~3); g++) list[g] = ZERO;                 \
        UNROLL for (int g = 0; g < count; g += 4)                                               \
            _mm_storeu_ps(sums + g, HSUM4(list[g], list[g + 1], list[g + 2], list[g + 3]));      \
        UNROLL for (int i = 0; i < rm; i++) UNROLL for (int j = 0; j < rn; j++)                 \
            out[(size_t)i * ldo + j] = (b ? b[j] : 0.0f) + sums[i * rn + j];                    \
    }

/* All input rows against one block of rn weight rows; only the first input
 * block prefetches the next weight block, the others find theirs in cache. */
#define ROWS_FUNCTION(NAME, BLOCK, TARGET, RM)                                                  \
    TARGET BERT_INLINE void                                                                 \
    NAME(const int rn, float *out, int ldo, const float *in, const float *w, const float *b,    \
         int n, int cols, const float *next)                                                    \
    {                                                                                           \
        int i = 0;                                                                              \
        for (; i + RM <= n; i += RM, next = NULL)                                               \
            BLOCK(RM, rn, in + (size_t)i * cols, w, cols, out + (size_t)i * ldo, ldo, b, next); \
        switch (n - i) {                                                                        \
        case 1: BLOCK(1, rn, in + (size_t)i * cols, w, cols, out + (size_t)i * ldo, ldo, b, next); break; \
        case 2: BLOCK(2, rn, in + (size_t)i * cols, w, cols, out + (size_t)i * ldo, ldo, b, next); break; \
        case 3: BLOCK(3, rn, in + (size_t)i * cols, w, cols, out + (size_t)i * ldo, ldo, b, next); break; \
        default: break;                                                                         \
        }                                                                                       \
    }

/* Every weight row: blocks of RN, then the remainder (the cases above RN - 1
 * never run; they compile to a smaller block so that no block exceeds RN). */
#define SMALLER(a, b) ((a) < (b) ? (a) : (b))
#define LINEAR_FUNCTION(NAME, ROWS, TARGET, RN)                                                 \
    TARGET static void NAME(float *out, int ldo, const float *in, const float *w,               \
                            const float *b, int n, int rows, int cols)                          \
    {                                                                                           \
        int r = 0;                                                                              \
        for (; r + RN <= rows; r += RN) {                                                       \
            const float *next = r + 2 * RN <= rows ? w + (size_t)(r + RN) * cols : NULL;        \
            ROWS(RN, out + r, ldo, in, w + (size_t)r * cols, b ? b + r : NULL, n, cols, next);  \
        }                                                                                       \
        const float *wr = w + (size_t)r * cols, *br = b ? b + r : NULL;                         \
        switch (rows - r) {                                                                     \
        case 1: ROWS(1, out + r, ldo, in, wr, br, n, cols, NULL); break;                        \
        case 2: ROWS(SMALLER(2, RN - 1), out + r, ldo, in, wr, br, n, cols, NULL); break;       \
        case 3: ROWS(SMALLER(3, RN - 1), out + r, ldo, in, wr, br, n, cols, NULL); break;       \
        case 4: ROWS(SMALLER(4, RN - 1), out + r, ldo, in, wr, br, n, cols, NULL); break;       \
        case 5: ROWS(SMALLER(5, RN - 1), out + r, ldo, in, wr, br, n, cols, NULL); break;       \
        default: break;                                                                         \
        }                                                                                       \
    }

/* ---- AVX-512: 4 input rows x 6 weight rows, 24 accumulators of 16 floats */

/* [sum(a), sum(b), sum(c), sum(d)] */
BERT_TARGET_AVX512 BERT_INLINE __m128
hsum4_512(__m512 a, __m512 b, __m512 c, __m512 d)
{
    /* Within each 128-bit lane: [a0+a2, b0+b2, a1+a3, b1+b3], the same for c, d ... */
    __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
    __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
    /* ... then [a, b, c, d] summed over the lane ... */
    __m512d abd = _mm512_castps_pd(ab), cdd = _mm512_castps_pd(cd);
    __m512 all = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(abd, cdd)),
                               _mm512_castpd_ps(_mm512_unpackhi_pd(abd, cdd)));
    /* ... and the four lanes added together. */
    __m256 half = _mm256_add_ps(_mm512_castps512_ps256(all),
                                _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(all), 1)));
    return _mm_add_ps(_mm256_castps256_ps128(half), _mm256_extractf128_ps(half, 1));
}

#define ZERO512 _mm512_setzero_ps()
BLOCK_FUNCTION(block512, BERT_TARGET_AVX512, __m512, 16, 4, 6, _mm512_loadu_ps, _mm512_fmadd_ps, ZERO512, hsum4_512)
ROWS_FUNCTION(rows512, block512, BERT_TARGET_AVX512, 4)

LINEAR_FUNCTION(linear512, rows512, BERT_TARGET_AVX512, 6)

/* ---- AVX2: 3 input rows x 4 weight rows, 12 accumulators of 8 floats (16
 * registers in all) */

/* [sum(a), sum(b), sum(c), sum(d)], as hsum4_512 */
BERT_TARGET_AVX2 BERT_INLINE __m128
hsum4_256(__m256 a, __m256 b, __m256 c, __m256 d)
{
    __m256 ab = _mm256_add_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b));
    __m256 cd = _mm256_add_ps(_mm256_unpacklo_ps(c, d), _mm256_unpackhi_ps(c, d));
    __m256d abd = _mm256_castps_pd(ab), cdd = _mm256_castps_pd(cd);
    __m256 all = _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(abd, cdd)),
                               _mm256_castpd_ps(_mm256_unpackhi_pd(abd, cdd)));
    return _mm_add_ps(_mm256_castps256_ps128(all), _mm256_extractf128_ps(all, 1));
}
#define ZERO256 _mm256_setzero_ps()
BLOCK_FUNCTION(block256, BERT_TARGET_AVX2, __m256, 8, 3, 4, _mm256_loadu_ps, _mm256_fmadd_ps, ZERO256, hsum4_256)
ROWS_FUNCTION(rows256, block256, BERT_TARGET_AVX2, 3)

LINEAR_FUNCTION(linear256, rows256, BERT_TARGET_AVX2, 4)
#endif

/* The best few-rows kernel of this CPU, or BERT_LINEAR_BLAS. */
static bert_linear_kernel few_rows_kernel(void)
{
    switch (bert_cpu_isa()) {
    case BERT_ISA_AVX512: return BERT_LINEAR_AVX512;
    case BERT_ISA_AVX2: return BERT_LINEAR_AVX2;
    default: return BERT_LINEAR_BLAS;
    }
}

/* 1 when this CPU can run the few-rows kernel k (AVX-512 machines run both). */
static int cpu_has(bert_linear_kernel k)
{
    bert_linear_kernel best = few_rows_kernel();
    return (k == BERT_LINEAR_AVX512 && best == BERT_LINEAR_AVX512) ||
           (k == BERT_LINEAR_AVX2 && best != BERT_LINEAR_BLAS);
}

typedef struct {
    bert_linear_kernel kernel;
    float *out;
    const float *in, *w, *b;
    int n, rows, cols;
} linear_job;

/* Rows per part: a multiple of both kernels' weight blocks (6 and 4). */
static void part_range(int rows, int part, int parts, int *r0, int *r1)
{
    int per = (rows + parts - 1) / parts;
    per = (per + 11) / 12 * 12;
    *r0 = part * per < rows ? part * per : rows;
    *r1 = *r0 + per < rows ? *r0 + per : rows;
}

static void run_part(void *ctx, int part, int parts)
{
    const linear_job *j = ctx;
    int r0, r1;
    part_range(j->rows, part, parts, &r0, &r1);
    if (r1 <= r0) return;
#ifdef BERT_X86_KERNELS
    if (j->kernel == BERT_LINEAR_AVX512)
        linear512(j->out + r0, j->rows, j->in, j->w + (size_t)r0 * j->cols, j->b ? j->b + r0 : NULL,
                  j->n, r1 - r0, j->cols);
    else
        linear256(j->out + r0, j->rows, j->in, j->w + (size_t)r0 * j->cols, j->b ? j->b + r0 : NULL,
                  j->n, r1 - r0, j->cols);
#endif
}

/* Runs a few-rows kernel this CPU has; cols must be a multiple of 16. */
static void few_rows(bert_linear_kernel kernel, bert_workers *workers, int threads, float *out,
                     const float *in, const float *w, const float *b, int n, int rows, int cols)
{
    linear_job job = {kernel, out, in, w, b, n, rows, cols};
    /* A part below ~100 weight rows costs more to hand over than it saves. */
    int parts = threads < rows / 96 ? threads : rows / 96;
    if (parts < 2 || !workers) run_part(&job, 0, 1);
    else bert_workers_run(workers, parts, run_part, &job);
}

int bert_linear_with(bert_linear_kernel kernel, bert_workers *workers, int threads, float *out,
                     const float *in, const float *w, const float *b, int n, int rows, int cols)
{
    if (n < 1 || rows < 1 || cols < 1) return 0;
    switch (kernel) {
    case BERT_LINEAR_AUTO:
        bert_linear(workers, out, in, w, b, n, rows, cols);
        return 0;
    case BERT_LINEAR_BLAS:
        linear_blas(out, in, w, b, n, rows, cols);
        return 0;
    default:
        if (cols % 16 != 0 || !cpu_has(kernel)) return -1;
        few_rows(kernel, workers, threads, out, in, w, b, n, rows, cols);
        return 0;
    }
}

void bert_linear(bert_workers *workers, float *out, const float *in, const float *w, const float *b,
                 int n, int rows, int cols)
{
    bert_linear_kernel kernel = n <= FEW_ROWS && cols % 16 == 0 ? few_rows_kernel() : BERT_LINEAR_BLAS;
    if (kernel != BERT_LINEAR_BLAS) {
        /* The thread count is OpenBLAS's, so one setting governs both paths. */
        few_rows(kernel, workers, workers ? openblas_get_num_threads() : 1, out, in, w, b, n, rows, cols);
        return;
    }
    linear_blas(out, in, w, b, n, rows, cols);
}
