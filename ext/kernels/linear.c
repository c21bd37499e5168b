/*
 * linear.c - out = in W^T + b in float32: by a panel kernel of ours on W
 * packed at load (kernels_avx2.c, kernels_avx512.c), else by OpenBLAS or,
 * for a few rows, a kernel of ours that reads W in place.
 *
 * Why kernels of our own: cblas_sgemm copies W into its packed panel layout
 * on every call (and on every thread).  Over one 15-token sentence that
 * copy is as costly as the arithmetic, and it was most of why a row-by-row
 * bert_embed ran at a quarter of the machine's sgemm speed; over 450
 * tokens it is still 15% of the time.
 * Summation order differs from OpenBLAS's by rounding only (tests compare
 * the two on every shape class).
 */
#include "linear.h"
#include "kernels.h"
#include "../base/workers.h"

#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
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

/* The panel kernel of an instruction set, or BERT_LINEAR_BLAS. */
static bert_linear_kernel packed_kernel(bert_isa isa)
{
    switch (isa) {
    case BERT_ISA_AVX512: return BERT_LINEAR_PACKED_AVX512;
    case BERT_ISA_AVX2: return BERT_LINEAR_PACKED_AVX2;
    default: return BERT_LINEAR_BLAS;
    }
}

static int is_packed(bert_linear_kernel k)
{
    return k == BERT_LINEAR_PACKED_AVX2 || k == BERT_LINEAR_PACKED_AVX512;
}

size_t bert_f32_packed_floats(int rows, int cols)
{
    return (size_t)((rows + BERT_PANEL - 1) / BERT_PANEL) * BERT_PANEL * (size_t)cols;
}

void bert_f32_pack_strided(float *panels, const float *w, size_t row_step, size_t col_step, int rows, int cols,
                           int width)
{
    int count = (rows + BERT_PANEL - 1) / BERT_PANEL;
    for (int p = 0; p < count; p++) {
        float *panel = panels + (size_t)p * width * BERT_PANEL;
        int r0 = p * BERT_PANEL, n = rows - r0 < BERT_PANEL ? rows - r0 : BERT_PANEL;
        if (n < BERT_PANEL || width > cols) memset(panel, 0, (size_t)width * BERT_PANEL * sizeof *panel);
        /* Transposed (row_step 1), W's rows are whole runs of the panel's columns. */
        if (row_step == 1)
            for (int c = 0; c < cols; c++)
                memcpy(panel + (size_t)c * BERT_PANEL, w + (size_t)c * col_step + r0, (size_t)n * sizeof *panel);
        else
            for (int c = 0; c < cols; c++)
                for (int e = 0; e < n; e++)
                    panel[(size_t)c * BERT_PANEL + e] = w[(size_t)(r0 + e) * row_step + (size_t)c * col_step];
    }
}

void bert_f32_pack(float *panels, const float *w, int rows, int cols)
{
    bert_f32_pack_strided(panels, w, (size_t)cols, 1, rows, cols, cols);
}

/* The table's entry of the few-rows kernel k, or NULL. */
static const bert_kernel *entry_of(bert_linear_kernel k)
{
    for (const bert_kernel *e = bert_kernels_table; e->run; e++)
        if (e->precision == BERT_PRECISION_FLOAT32 && e->f32_id == k) return e;
    return NULL;
}

/* The table's entry of isa's panel kernel when this build and CPU run it, or NULL. */
static const bert_kernel *panel_entry(bert_isa isa)
{
    bert_linear_kernel k = packed_kernel(isa);
    const bert_kernel *e = k == BERT_LINEAR_BLAS ? NULL : entry_of(k);
    return e && bert_kernel_runs(e, bert_cpu_isa(), 0) ? e : NULL;
}

int bert_f32_panel_product(bert_isa isa, float *out, const float *in, const float *packed, int n, int rows, int cols)
{
    const bert_kernel *e = panel_entry(isa);
    if (!e) return 0;
    if (n < 1 || rows < 1 || cols < 1) return 1;
    bert_matrix w = {BERT_PRECISION_FLOAT32, NULL, NULL, NULL, NULL, NULL, packed, NULL, 0};
    bert_kernel_args args = {&w, in, NULL, NULL, NULL, NULL, out, n, rows, cols, NULL};
    e->run(&args, 0, n, 0, rows);
    return 1;
}

typedef struct {
    bert_linear_kernel kernel;
    bert_kernel_fn few_rows; /* the few-rows or panel kernel's function, or NULL for OpenBLAS */
    float *out;
    const float *in, *w, *packed, *b;
    int n, rows, cols;
} linear_job;

/* The few-rows kernel over input rows i0..i1 and weight rows r0..r1, in
 * slabs of BERT_FEW_ROWS input rows, so that a block of weight rows is
 * reused from L1 and the whole of W from L2 however many rows the product
 * has. */
static void few_rows(const linear_job *j, int i0, int i1, int r0, int r1)
{
    bert_matrix w = {BERT_PRECISION_FLOAT32, j->w, NULL, NULL, NULL, NULL, j->packed, NULL, 0};
    bert_kernel_args args = {&w, j->in, NULL, NULL, NULL, j->b, j->out, j->n, j->rows, j->cols, NULL};
    /* The panel kernels take slabs of their own. */
    if (is_packed(j->kernel)) {
        j->few_rows(&args, i0, i1, r0, r1);
        return;
    }
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

/* Input rows from which the panel kernels' spans are of input rows (run). */
enum { PACKED_BY_INPUT = 128 };

/* Shares the product out over `threads` threads: a few input rows share out
 * the weight rows, many input rows are shared out themselves.  Few-rows
 * kernels: spans of 48 rows at least, a multiple of their slabs (48 input
 * rows) or weight blocks (6 and 4).  OpenBLAS, which packs W anew in every
 * span: 128 input rows at least.  The panel kernels: one span a thread,
 * since each span copies its input rows anew (bert_packed_walk,
 * isa_kernels.h); four a thread copied x four times and made two threads
 * 10% slower than OpenBLAS on 450 tokens.  From PACKED_BY_INPUT rows the spans are of input
 * rows, each thread streaming all of W: 450-token texts on two threads
 * 1.69-1.80 s -> 1.58-1.68 s against spans of weight rows (100 sentences
 * batched 0.87-0.88 -> 0.80-0.83); below it, where streaming W is most of
 * the work, each thread takes its part of W in whole pairs of panels. */
static void run(bert_linear_kernel kernel, bert_workers *workers, int threads, float *out,
                const float *in, const float *w, const float *packed, const float *b, int n, int rows, int cols)
{
    const bert_kernel *e = kernel == BERT_LINEAR_BLAS ? NULL : entry_of(kernel);
    if (!e || (is_packed(kernel) && !packed)) kernel = BERT_LINEAR_BLAS, e = NULL;
    linear_job job = {kernel, e ? e->run : NULL, out, in, w, packed, b, n, rows, cols};
    int blas = kernel == BERT_LINEAR_BLAS;
    bert_split split = {n, rows, cols, blas || n > BERT_FEW_ROWS ? BERT_SPAN_INPUT_ROWS : BERT_SPAN_WEIGHT_ROWS,
                        blas ? 128 : 48, !blas};
    if (is_packed(kernel) && threads > 1 && n >= PACKED_BY_INPUT) {
        /* bert_workers_split makes spans of equal length and splits nothing
         * shorter than twice `least`: three quarters of a thread's share
         * gives one span a thread. */
        int part = (n + threads - 1) / threads;
        split = (bert_split){n, rows, cols, BERT_SPAN_INPUT_ROWS, part * 3 / 4, 0};
    } else if (is_packed(kernel)) {
        int pair = 2 * BERT_PANEL, share = threads > 1 ? (rows + threads - 1) / threads : rows;
        split = (bert_split){n, rows, cols, BERT_SPAN_WEIGHT_ROWS, (share + pair - 1) / pair * pair, 1};
    }
    bert_workers_split(workers, threads, &split, linear_span, &job);
}

int bert_linear_with_packed(bert_linear_kernel kernel, bert_workers *workers, int threads, float *out,
                            const float *in, const float *w, const float *packed, const float *b, int n,
                            int rows, int cols)
{
    if (n < 1 || rows < 1 || cols < 1) return 1;
    if (kernel == BERT_LINEAR_AUTO) {
        bert_linear_plan plan = bert_linear_plan_for(bert_cpu_isa());
        plan.workers = workers;
        plan.threads = threads;
        bert_matrix m = {BERT_PRECISION_FLOAT32, w, NULL, NULL, NULL, NULL, packed, NULL, 0};
        bert_linear_f32(&plan, out, in, &m, b, n, rows, cols);
        return 1;
    }
    const bert_kernel *e = entry_of(kernel);
    if (kernel != BERT_LINEAR_BLAS && (!e || !bert_kernel_runs(e, bert_cpu_isa(), 0))) return 0;
    if (!is_packed(kernel) && kernel != BERT_LINEAR_BLAS && cols % 16 != 0) return 0;
    float *own = NULL;
    if (is_packed(kernel) && !packed) {
        own = malloc(bert_f32_packed_floats(rows, cols) * sizeof *own);
        if (!own) return -1;
        bert_f32_pack(own, w, rows, cols);
        packed = own;
    }
    run(kernel, workers, threads, out, in, w, packed, b, n, rows, cols);
    free(own);
    return 1;
}

int bert_linear_with(bert_linear_kernel kernel, bert_workers *workers, int threads, float *out,
                     const float *in, const float *w, const float *b, int n, int rows, int cols)
{
    return bert_linear_with_packed(kernel, workers, threads, out, in, w, NULL, b, n, rows, cols);
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
    bert_linear_plan plan = {isa, BERT_FEW_ROWS, NULL, 1, NULL, 0, INT_MAX, INT_MAX};
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
    /* The panel kernels on W packed at load take every product they can.
     * Measured on a Xeon with AVX-512, bert-base, two threads, against
     * the few-rows kernels reading W in the file's mapping: 100 sentences
     * of 11-20 tokens row by row 2.29-2.43 s -> 1.96-2.09 s (AVX-512;
     * held to AVX2 3.45-3.57 -> 3.27-3.34), the packed copy streamed in
     * whole 2 MB pages from one run of memory.  Against OpenBLAS's AVX-512
     * kernels (bench_kernels, one thread, W from RAM): 128 rows 138-157
     * GFLOP/s against 117-138, 512 rows 149-183 against 144-166; on
     * 450-token texts, where OpenBLAS packs W anew on every call and on
     * each thread (15% of the time), bert-base is 8% faster on one thread
     * and 6% on two.  Held to AVX2, OpenBLAS's kernels still run a product
     * of 512 rows a little faster (bench_kernels: 110-111 GFLOP/s against
     * 103-106), but not once their packing of W on every call is counted:
     * bert-base on 450-token texts 2.80-2.84 s -> 2.73-2.75 s (two
     * threads; one thread 5.31 -> 5.20), 100 sentences batched 1.35 ->
     * 1.31 s, against OpenBLAS above 96 rows. */
    if (isa == BERT_ISA_AVX512 || isa == BERT_ISA_AVX2) {
        plan.packed_rows_min = 1;
        plan.packed_rows_max = INT_MAX;
    }
    return plan;
}

/* The kernel of a float32 product of n input rows of cols columns, W
 * packed or not. */
static bert_linear_kernel choose(const bert_linear_plan *plan, int n, int cols, int packed)
{
    if (packed && n >= plan->packed_rows_min && n <= plan->packed_rows_max &&
        packed_kernel(plan->isa) != BERT_LINEAR_BLAS)
        return packed_kernel(plan->isa);
    return n <= plan->few_rows_max && cols % 16 == 0 ? few_rows_kernel(plan->isa) : BERT_LINEAR_BLAS;
}

void bert_linear(const bert_linear_plan *plan, float *out, const float *in, const float *w,
                 const float *b, int n, int rows, int cols)
{
    run(choose(plan, n, cols, 0), plan->workers, plan->threads, out, in, w, NULL, b, n, rows, cols);
}

void bert_linear_f32(const bert_linear_plan *plan, float *out, const float *in, const bert_matrix *w,
                     const float *b, int n, int rows, int cols)
{
    run(choose(plan, n, cols, w->f32_packed != NULL), plan->workers, plan->threads, out, in, w->f32, w->f32_packed,
        b, n, rows, cols);
}

const char *bert_linear_f32_kernel_name(const bert_linear_plan *plan, int n, int cols, int packed)
{
    const bert_kernel *e = entry_of(choose(plan, n, cols, packed));
    return e ? e->name : "openblas";
}
