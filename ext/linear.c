/*
 * linear.c - out = in W^T + b in float32, by OpenBLAS or, for a few rows,
 * by a kernel of ours that reads W in place (kernels_avx2.c,
 * kernels_avx512.c).
 *
 * Why a kernel of our own: cblas_sgemm copies W into its packed panel layout
 * on every call.  Over a whole batch of tokens that copy is negligible; over
 * one 15-token sentence it is as costly as the arithmetic, and it is most of
 * why a row-by-row bert_embed ran at a quarter of the machine's sgemm speed.
 * Summation order differs from OpenBLAS's by rounding only (tests compare
 * the two on every shape class).
 */
#include "linear.h"
#include "kernels.h"
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

/* The table's entry of the few-rows kernel k, or NULL. */
static const bert_kernel *entry_of(bert_linear_kernel k)
{
    for (const bert_kernel *e = bert_kernels_table; e->run; e++)
        if (e->precision == BERT_PRECISION_FLOAT32 && e->f32_id == k) return e;
    return NULL;
}

typedef struct {
    bert_linear_kernel kernel;
    bert_kernel_fn few_rows; /* the few-rows kernel's function, or NULL for OpenBLAS */
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
    bert_matrix w = {BERT_PRECISION_FLOAT32, j->w, NULL, NULL, NULL, NULL};
    bert_kernel_args args = {&w, j->in, NULL, NULL, NULL, j->b, j->out, j->n, j->rows, j->cols};
    for (int i = i0; i < i1; i += BERT_FEW_ROWS) {
        int end = i1 - i < BERT_FEW_ROWS ? i1 : i + BERT_FEW_ROWS;
        j->few_rows(&args, i, end, r0, r1);
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
    const bert_kernel *e = kernel == BERT_LINEAR_BLAS ? NULL : entry_of(kernel);
    if (!e) kernel = BERT_LINEAR_BLAS;
    linear_job job = {kernel, e ? e->run : NULL, out, in, w, b, n, rows, cols};
    int blas = kernel == BERT_LINEAR_BLAS;
    bert_split split = {n, rows, cols, blas || n > BERT_FEW_ROWS ? BERT_SPAN_INPUT_ROWS : BERT_SPAN_WEIGHT_ROWS,
                        blas ? 128 : 48, !blas};
    bert_workers_split(workers, threads, &split, linear_span, &job);
}

int bert_linear_with(bert_linear_kernel kernel, bert_workers *workers, int threads, float *out,
                     const float *in, const float *w, const float *b, int n, int rows, int cols)
{
    if (n < 1 || rows < 1 || cols < 1) return 1;
    if (kernel == BERT_LINEAR_AUTO) {
        bert_linear_plan plan = bert_linear_plan_for(bert_cpu_isa());
        plan.workers = workers;
        plan.threads = threads;
        bert_linear(&plan, out, in, w, b, n, rows, cols);
        return 1;
    }
    const bert_kernel *e = entry_of(kernel);
    if (kernel != BERT_LINEAR_BLAS && (cols % 16 != 0 || !e || !bert_kernel_runs(e, bert_cpu_isa(), 0))) return 0;
    run(kernel, workers, threads, out, in, w, b, n, rows, cols);
    return 1;
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

/* The kernel of a float32 product of n input rows of cols columns. */
static bert_linear_kernel choose(const bert_linear_plan *plan, int n, int cols)
{
    return n <= plan->few_rows_max && cols % 16 == 0 ? few_rows_kernel(plan->isa) : BERT_LINEAR_BLAS;
}

void bert_linear(const bert_linear_plan *plan, float *out, const float *in, const float *w,
                 const float *b, int n, int rows, int cols)
{
    run(choose(plan, n, cols), plan->workers, plan->threads, out, in, w, b, n, rows, cols);
}

const char *bert_linear_f32_kernel_name(const bert_linear_plan *plan, int n, int cols)
{
    const bert_kernel *e = entry_of(choose(plan, n, cols));
    return e ? e->name : "openblas";
}
