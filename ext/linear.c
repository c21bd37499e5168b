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
 * weight row, both contiguous, a block of input rows against a block of
 * weight rows at a time (4 x 6 with AVX-512, 3 x 4 with AVX2), with one
 * vector accumulator per pair held in a register.  W is streamed from memory
 * exactly once: a block of weight rows is reused from cache for every block
 * of input rows, and the next block is prefetched while the first input rows
 * go through the current one.  Summation order differs from OpenBLAS's by
 * rounding only (tests compare the two on every shape class).
 *
 * Each instruction set has one block function (block512, block256), always
 * inlined with literal block sizes so that its accumulator arrays become
 * registers, and one plain function walking the blocks (linear512,
 * linear256).  They are compiled through target attributes and chosen at
 * run time, so the extension itself still builds for (and runs on) any
 * x86-64 or other CPU.
 */
#include "kernels_neon.h"
#include "linear.h"
#include "workers.h"

#include <cblas.h>
#include <limits.h>
#include <string.h>
#include <strings.h>


static void linear_blas(float *out, const float *in, const float *w, const float *b,
                        int n, int rows, int cols)
{
    if (b)
        for (int i = 0; i < n; i++) memcpy(out + (size_t)i * rows, b, (size_t)rows * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, rows, cols,
                1.0f, in, cols, w, cols, b ? 1.0f : 0.0f, out, rows);
}

#ifdef BERT_X86_KERNELS
#include "hsum_x86.h"

/* ---- AVX-512: 4 input rows x 6 weight rows, 24 accumulators of 16 floats */

enum { RM512 = 4, RN512 = 6 };

/* out[rm x rn] (leading dimension ldo) = x[rm x cols] w[rn x cols]^T + b.
 * rm and rn are literals at every call, so the loops over them unroll and
 * acc[][] lives in registers.  `next` is the weight block to prefetch, two
 * blocks ahead, or NULL.  Into L2, not L1, as in linear_lowp.c: requests to
 * L1 stall the loop once its few miss slots are taken.  Measured (one
 * thread, W from RAM, GFLOP/s at 1 / 16 rows): 768x768 7.0 / 62.9 -> 11.0 /
 * 74.7, 768x3072 9.7 / 69.3 -> 12.9 / 80.8. */
BERT_TARGET_AVX512 BERT_INLINE void block512(const int rm, const int rn, const float *x, const float *w,
                                             int cols, float *out, int ldo, const float *b,
                                             const float *next)
{
    __m512 acc[RM512][RN512];
    BERT_UNROLL for (int i = 0; i < rm; i++) BERT_UNROLL for (int j = 0; j < rn; j++) acc[i][j] = _mm512_setzero_ps();
    for (int k = 0; k < cols; k += 16) {
        if (next)
            BERT_UNROLL for (int j = 0; j < rn; j++)
                _mm_prefetch((const char *)(next + (size_t)j * cols + k), _MM_HINT_T1);
        __m512 xv[RM512];
        BERT_UNROLL for (int i = 0; i < rm; i++) xv[i] = _mm512_loadu_ps(x + (size_t)i * cols + k);
        BERT_UNROLL for (int j = 0; j < rn; j++) {
            __m512 wv = _mm512_loadu_ps(w + (size_t)j * cols + k);
            BERT_UNROLL for (int i = 0; i < rm; i++) acc[i][j] = _mm512_fmadd_ps(xv[i], wv, acc[i][j]);
        }
    }
    __m512 list[RM512 * RN512];
    float sums[RM512 * RN512];
    int count = 0;
    BERT_UNROLL for (int i = 0; i < rm; i++) BERT_UNROLL for (int j = 0; j < rn; j++) list[count++] = acc[i][j];
    BERT_UNROLL for (int g = count; g % 4 != 0; g++) list[g] = _mm512_setzero_ps();
    BERT_UNROLL for (int g = 0; g < count; g += 4)
        _mm_storeu_ps(sums + g, hsum4_512(list[g], list[g + 1], list[g + 2], list[g + 3]));
    BERT_UNROLL for (int i = 0; i < rm; i++) BERT_UNROLL for (int j = 0; j < rn; j++)
        out[(size_t)i * ldo + j] = (b ? b[j] : 0.0f) + sums[i * rn + j];
}

/* Every input row against one block of rn weight rows; only the first input
 * block prefetches the next weight block, the others find theirs in cache. */
BERT_TARGET_AVX512 BERT_INLINE void rows512(const int rn, float *out, int ldo, const float *in,
                                            const float *w, const float *b, int n, int cols,
                                            const float *next)
{
    int i = 0;
    for (; i + RM512 <= n; i += RM512, next = NULL)
        block512(RM512, rn, in + (size_t)i * cols, w, cols, out + (size_t)i * ldo, ldo, b, next);
    const float *x = in + (size_t)i * cols;
    float *o = out + (size_t)i * ldo;
    switch (n - i) {
    case 1: block512(1, rn, x, w, cols, o, ldo, b, next); break;
    case 2: block512(2, rn, x, w, cols, o, ldo, b, next); break;
    case 3: block512(3, rn, x, w, cols, o, ldo, b, next); break;
    default: break;
    }
}

/* out[n x rows] (leading dimension ldo) = in W^T + b, AVX-512. */
BERT_TARGET_AVX512 static void linear512(float *out, int ldo, const float *in, const float *w,
                                         const float *b, int n, int rows, int cols)
{
    int r = 0;
    for (; r + RN512 <= rows; r += RN512) {
        const float *next = r + 3 * RN512 <= rows ? w + (size_t)(r + 2 * RN512) * cols : NULL;
        rows512(RN512, out + r, ldo, in, w + (size_t)r * cols, b ? b + r : NULL, n, cols, next);
    }
    const float *wr = w + (size_t)r * cols, *br = b ? b + r : NULL;
    switch (rows - r) {
    case 1: rows512(1, out + r, ldo, in, wr, br, n, cols, NULL); break;
    case 2: rows512(2, out + r, ldo, in, wr, br, n, cols, NULL); break;
    case 3: rows512(3, out + r, ldo, in, wr, br, n, cols, NULL); break;
    case 4: rows512(4, out + r, ldo, in, wr, br, n, cols, NULL); break;
    case 5: rows512(5, out + r, ldo, in, wr, br, n, cols, NULL); break;
    default: break;
    }
}

/* ---- AVX2: 3 input rows x 4 weight rows, 12 accumulators of 8 floats (16
 * registers in all) */

enum { RM256 = 3, RN256 = 4 };

/* As block512, eight floats a vector; cols is still a multiple of 16. */
BERT_TARGET_AVX2 BERT_INLINE void block256(const int rm, const int rn, const float *x, const float *w,
                                           int cols, float *out, int ldo, const float *b,
                                           const float *next)
{
    __m256 acc[RM256][RN256];
    BERT_UNROLL for (int i = 0; i < rm; i++) BERT_UNROLL for (int j = 0; j < rn; j++) acc[i][j] = _mm256_setzero_ps();
    for (int k = 0; k < cols; k += 8) {
        if (next)
            BERT_UNROLL for (int j = 0; j < rn; j++)
                _mm_prefetch((const char *)(next + (size_t)j * cols + k), _MM_HINT_T1);
        __m256 xv[RM256];
        BERT_UNROLL for (int i = 0; i < rm; i++) xv[i] = _mm256_loadu_ps(x + (size_t)i * cols + k);
        BERT_UNROLL for (int j = 0; j < rn; j++) {
            __m256 wv = _mm256_loadu_ps(w + (size_t)j * cols + k);
            BERT_UNROLL for (int i = 0; i < rm; i++) acc[i][j] = _mm256_fmadd_ps(xv[i], wv, acc[i][j]);
        }
    }
    __m256 list[RM256 * RN256];
    float sums[RM256 * RN256];
    int count = 0;
    BERT_UNROLL for (int i = 0; i < rm; i++) BERT_UNROLL for (int j = 0; j < rn; j++) list[count++] = acc[i][j];
    BERT_UNROLL for (int g = count; g % 4 != 0; g++) list[g] = _mm256_setzero_ps();
    BERT_UNROLL for (int g = 0; g < count; g += 4)
        _mm_storeu_ps(sums + g, hsum4_256(list[g], list[g + 1], list[g + 2], list[g + 3]));
    BERT_UNROLL for (int i = 0; i < rm; i++) BERT_UNROLL for (int j = 0; j < rn; j++)
        out[(size_t)i * ldo + j] = (b ? b[j] : 0.0f) + sums[i * rn + j];
}

/* As rows512. */
BERT_TARGET_AVX2 BERT_INLINE void rows256(const int rn, float *out, int ldo, const float *in,
                                          const float *w, const float *b, int n, int cols,
                                          const float *next)
{
    int i = 0;
    for (; i + RM256 <= n; i += RM256, next = NULL)
        block256(RM256, rn, in + (size_t)i * cols, w, cols, out + (size_t)i * ldo, ldo, b, next);
    const float *x = in + (size_t)i * cols;
    float *o = out + (size_t)i * ldo;
    switch (n - i) {
    case 1: block256(1, rn, x, w, cols, o, ldo, b, next); break;
    case 2: block256(2, rn, x, w, cols, o, ldo, b, next); break;
    default: break;
    }
}

/* out[n x rows] (leading dimension ldo) = in W^T + b, AVX2. */
BERT_TARGET_AVX2 static void linear256(float *out, int ldo, const float *in, const float *w,
                                       const float *b, int n, int rows, int cols)
{
    int r = 0;
    for (; r + RN256 <= rows; r += RN256) {
        const float *next = r + 3 * RN256 <= rows ? w + (size_t)(r + 2 * RN256) * cols : NULL;
        rows256(RN256, out + r, ldo, in, w + (size_t)r * cols, b ? b + r : NULL, n, cols, next);
    }
    const float *wr = w + (size_t)r * cols, *br = b ? b + r : NULL;
    switch (rows - r) {
    case 1: rows256(1, out + r, ldo, in, wr, br, n, cols, NULL); break;
    case 2: rows256(2, out + r, ldo, in, wr, br, n, cols, NULL); break;
    case 3: rows256(3, out + r, ldo, in, wr, br, n, cols, NULL); break;
    default: break;
    }
}
#endif

/* The few-rows kernel of an instruction set, or BERT_LINEAR_BLAS. */
static bert_linear_kernel few_rows_kernel(bert_isa isa)
{
    switch (isa) {
    case BERT_ISA_AVX512: return BERT_LINEAR_AVX512;
    case BERT_ISA_AVX2: return BERT_LINEAR_AVX2;
    case BERT_ISA_NEON: return BERT_LINEAR_NEON;
    default: return BERT_LINEAR_BLAS;
    }
}

/* 1 when this CPU can run the few-rows kernel k (AVX-512 machines run both). */
static int cpu_has(bert_linear_kernel k)
{
    bert_linear_kernel best = few_rows_kernel(bert_cpu_isa());
    return (k == BERT_LINEAR_AVX512 && best == BERT_LINEAR_AVX512) ||
           (k == BERT_LINEAR_AVX2 && (best == BERT_LINEAR_AVX2 || best == BERT_LINEAR_AVX512)) ||
           (k == BERT_LINEAR_NEON && best == BERT_LINEAR_NEON);
}

typedef struct {
    bert_linear_kernel kernel;
    float *out;
    const float *in, *w, *b;
    int n, rows, cols;
} linear_job;

/* The few-rows kernel over input rows i0..i1 and weight rows r0..r1, in
 * slabs of BERT_FEW_ROWS input rows, so that a block of weight rows is
 * reused from L1 and the whole of W from L2 however many rows the product
 * has. */
static void few_rows(const linear_job *j, int i0, int i1, int r0, int r1)
{
    for (int i = i0; i < i1; i += BERT_FEW_ROWS) {
        int m = i1 - i < BERT_FEW_ROWS ? i1 - i : BERT_FEW_ROWS;
        float *out = j->out + (size_t)i * j->rows + r0;
        const float *in = j->in + (size_t)i * j->cols;
        const float *w = j->w + (size_t)r0 * j->cols, *b = j->b ? j->b + r0 : NULL;
        switch (j->kernel) {
#ifdef BERT_X86_KERNELS
        case BERT_LINEAR_AVX512: linear512(out, j->rows, in, w, b, m, r1 - r0, j->cols); break;
        case BERT_LINEAR_AVX2: linear256(out, j->rows, in, w, b, m, r1 - r0, j->cols); break;
#endif
#ifdef BERT_ARM64_KERNELS
        case BERT_LINEAR_NEON: bert_neon_f32(out, j->rows, in, w, b, m, r1 - r0, j->cols); break;
#endif
        default: (void)out, (void)in, (void)w, (void)b; break;
        }
    }
}

/* A span of the product: OpenBLAS on whole rows of W (the product is split
 * by input rows for it), the few-rows kernel on any span. */
static void linear_span(void *ctx, int i0, int i1, int r0, int r1)
{
    const linear_job *j = ctx;
    if (j->kernel == BERT_LINEAR_BLAS)
        linear_blas(j->out + (size_t)i0 * j->rows, j->in + (size_t)i0 * j->cols, j->w, j->b, i1 - i0, j->rows,
                    j->cols); /* a product of its own, single-threaded */
    else few_rows(j, i0, i1, r0, r1);
}

/* Shares the product out over `threads` threads: a few input rows share out
 * the weight rows, many input rows are shared out themselves.  Few-rows
 * kernels: spans of 48 rows at least, a multiple of their slabs (48 input
 * rows) or weight blocks (6 and 4).  OpenBLAS, which packs W anew in every
 * span: 128 input rows at least. */
static void run(bert_linear_kernel kernel, bert_workers *workers, int threads, float *out,
                const float *in, const float *w, const float *b, int n, int rows, int cols)
{
    linear_job job = {kernel, out, in, w, b, n, rows, cols};
    int blas = kernel == BERT_LINEAR_BLAS;
    bert_workers_split(workers, threads, n, rows, cols, blas || n > BERT_FEW_ROWS, blas ? 128 : 48, !blas,
                       linear_span, &job);
}

int bert_linear_with(bert_linear_kernel kernel, bert_workers *workers, int threads, float *out,
                     const float *in, const float *w, const float *b, int n, int rows, int cols)
{
    if (n < 1 || rows < 1 || cols < 1) return 0;
    if (kernel == BERT_LINEAR_AUTO) {
        bert_linear_plan plan = bert_linear_plan_for(bert_cpu_isa());
        plan.workers = workers;
        plan.threads = threads;
        bert_linear(&plan, out, in, w, b, n, rows, cols);
        return 0;
    }
    if (kernel != BERT_LINEAR_BLAS && (cols % 16 != 0 || !cpu_has(kernel))) return -1;
    run(kernel, workers, threads, out, in, w, b, n, rows, cols);
    return 0;
}

/* 1 when OpenBLAS runs 512-bit kernels (its core names for AVX-512 CPUs). */
static int blas_is_avx512(void)
{
    const char *core = openblas_get_corename();
    static const char *const wide[] = {"skylakex", "cooperlake", "sapphirerapids"};
    for (size_t i = 0; core && i < sizeof wide / sizeof *wide; i++)
        if (strcasecmp(core, wide[i]) == 0) return 1;
    return 0;
}

bert_linear_plan bert_linear_plan_for(bert_isa isa)
{
    bert_linear_plan plan = {isa, BERT_FEW_ROWS, NULL, 1, NULL, 0};
    /* The extensions that go with the instruction set asked for. */
    unsigned ext = bert_cpu_extensions();
    if (isa != BERT_ISA_AVX512) ext &= ~(unsigned)(BERT_CPU_AVX512_BF16 | BERT_CPU_AVX512_VNNI);
    plan.extensions = isa == BERT_ISA_BASE ? 0 : ext;
    /* Measured on an AVX-512 CPU, one thread, products of 49 to 4,096 rows:
     * OpenBLAS's AVX-512 kernels run at 180-200 GFLOP/s, ours in slabs at
     * 120-190, so OpenBLAS takes the many-rows products.  Held to AVX2
     * kernels (OPENBLAS_CORETYPE=Haswell, or a CPU it does not know)
     * OpenBLAS runs at about 100, and our AVX-512 kernel takes them all:
     * a batch is then never slower than the same texts row by row. */
    if (isa == BERT_ISA_AVX512 && !blas_is_avx512()) plan.few_rows_max = INT_MAX;
    return plan;
}

void bert_linear(const bert_linear_plan *plan, float *out, const float *in, const float *w,
                 const float *b, int n, int rows, int cols)
{
    bert_linear_kernel kernel = n <= plan->few_rows_max && cols % 16 == 0 ? few_rows_kernel(plan->isa)
                                                                          : BERT_LINEAR_BLAS;
    run(kernel, plan->workers, plan->threads, out, in, w, b, n, rows, cols);
}
