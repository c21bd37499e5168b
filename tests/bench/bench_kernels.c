/*
 * bench_kernels.c - `make bench-kernels`: GFLOP/s of the projection kernels
 * on bert-base and MiniLM shapes, float32 (ours and OpenBLAS) beside every
 * bfloat16 and int8 kernel this CPU runs, one thread.
 *
 * The weights are read as an encoder reads them: each product takes the next
 * of enough copies of W to fill 96 MB of float32, so W comes from RAM, not
 * from a cache that one matrix alone would fit.  The reduced-precision times
 * include preparing the input rows (rounding or quantizing them).  Times
 * are the process's CPU time, so that other programs on the core do not
 * count (their use of the caches still does).
 *
 *   bench_kernels [SECONDS [float32]]   time per measurement (0.15); float32: its kernels only
 *
 * Run it pinned, with OpenBLAS's own core choice:
 *   env -u OPENBLAS_CORETYPE taskset -c 1 build/bench_kernels
 */
#include "../../ext/kernels/cpu.h"
#include "../../ext/kernels/linear.h"
#include "bench_clock.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef POOL_BYTES
#define POOL_BYTES ((size_t)96 << 20)
#endif

typedef struct {
    int copies;
    size_t count; /* rows * cols */
    float *f32;
    float *packed; /* f32 packed for the panel kernels, copy by copy */
    size_t packed_count; /* floats a copy */
    uint16_t *bf16;
    int8_t *i8;
    float *scale;
    int32_t *row_sum;
    int8_t *tiles; /* i8 as AMX tiles, copy by copy */
    size_t tiles_count; /* bytes a copy */
    uint16_t *bf16_tiles; /* bf16 as AMX tiles, copy by copy */
    size_t bf16_tiles_count; /* bytes a copy */
    /* int8 held to 7 bits, as a model loaded where AVX2 is the best int8
     * product holds it, and as tiles, for the kernels that need it. */
    int8_t *i8n;
    float *scale_n;
    int32_t *row_sum_n;
    int8_t *tiles_n;
} pool;

static int pool_make(pool *p, int rows, int cols)
{
    memset(p, 0, sizeof *p);
    p->count = (size_t)rows * cols;
    p->copies = (int)(POOL_BYTES / (p->count * sizeof(float)));
    if (p->copies < 2) p->copies = 2;
    size_t all = p->count * p->copies;
    p->f32 = malloc(all * sizeof *p->f32);
    p->packed_count = bert_f32_packed_floats(rows, cols);
    p->packed = malloc(p->packed_count * p->copies * sizeof *p->packed);
    p->bf16 = malloc(all * sizeof *p->bf16);
    p->i8 = malloc(all);
    p->scale = malloc((size_t)rows * p->copies * sizeof *p->scale);
    p->row_sum = malloc((size_t)rows * p->copies * sizeof *p->row_sum);
    p->tiles_count = bert_tiles_bytes(rows, cols, BERT_PRECISION_INT8);
    p->tiles = malloc(p->tiles_count * p->copies);
    p->bf16_tiles_count = bert_tiles_bytes(rows, cols, BERT_PRECISION_BFLOAT16);
    p->bf16_tiles = malloc(p->bf16_tiles_count * p->copies);
    p->i8n = malloc(all);
    p->scale_n = malloc((size_t)rows * p->copies * sizeof *p->scale_n);
    p->row_sum_n = malloc((size_t)rows * p->copies * sizeof *p->row_sum_n);
    p->tiles_n = malloc(p->tiles_count * p->copies);
    if (!p->f32 || !p->packed || !p->bf16 || !p->i8 || !p->scale || !p->row_sum || !p->tiles || !p->bf16_tiles ||
        !p->i8n || !p->scale_n || !p->row_sum_n || !p->tiles_n)
        return -1;
    uint32_t seed = 1;
    for (size_t i = 0; i < all; i++) {
        seed = seed * 1664525u + 1013904223u;
        p->f32[i] = ((float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f) * 0.05f;
    }
    bert_bf16_from_f32(p->bf16, p->f32, all);
    for (int c = 0; c < p->copies; c++) bert_f32_pack(p->packed + c * p->packed_count, p->f32 + c * p->count, rows, cols);
    for (int c = 0; c < p->copies; c++)
        bert_int8_quantize_rows(p->i8 + c * p->count, p->scale + (size_t)c * rows, p->row_sum + (size_t)c * rows,
                                p->f32 + c * p->count, rows, cols);
    for (int c = 0; c < p->copies; c++) {
        bert_int8_quantize_rows_narrow(p->i8n + c * p->count, p->scale_n + (size_t)c * rows,
                                       p->row_sum_n + (size_t)c * rows, p->f32 + c * p->count, rows, cols);
        bert_tiles_pack(p->tiles_n + c * p->tiles_count, p->i8n + c * p->count, rows, cols, BERT_PRECISION_INT8);
    }
    for (int c = 0; c < p->copies; c++) {
        bert_tiles_pack(p->tiles + c * p->tiles_count, p->i8 + c * p->count, rows, cols, BERT_PRECISION_INT8);
        bert_tiles_pack((char *)p->bf16_tiles + c * p->bf16_tiles_count, p->bf16 + c * p->count, rows, cols,
                        BERT_PRECISION_BFLOAT16);
    }
    return 0;
}

static void pool_free(pool *p)
{
    free(p->f32);
    free(p->packed);
    free(p->bf16);
    free(p->i8);
    free(p->scale);
    free(p->row_sum);
    free(p->tiles);
    free(p->bf16_tiles);
    free(p->i8n);
    free(p->scale_n);
    free(p->row_sum_n);
    free(p->tiles_n);
}

/* What one measurement runs: a float32 kernel, or a reduced-precision one. */
typedef struct {
    const char *name;
    int f32; /* 1: bert_linear_kernel f32kernel, else lowp */
    bert_linear_kernel f32kernel;
    bert_lowp_kernel lowp;
    bert_precision precision;
    int narrow; /* int8 held to 7 bits */
} column;

/* GFLOP/s of one column on one shape, or -1 when it cannot run here. */
static double measure(const column *col, const pool *p, int n, int rows, int cols, const float *in, float *out,
                      const float *b, double seconds)
{
    long reps = 0;
    /* CPU time: on a shared machine another program's turns on the core
     * would otherwise count as ours. */
    double start = cpu_now(), elapsed = 0;
    int copy = 0;
    do {
        int got;
        if (col->f32) {
            got = bert_linear_with_packed(col->f32kernel, NULL, 1, out, in, p->f32 + copy * p->count,
                                          p->packed + copy * p->packed_count, b, n, rows, cols) == 1
                      ? 0 : -1;
        } else {
            bert_matrix m = {col->precision, NULL, p->bf16 + copy * p->count, p->i8 + copy * p->count,
                             p->scale + (size_t)copy * rows, p->row_sum + (size_t)copy * rows, NULL,
                             col->precision == BERT_PRECISION_INT8
                                 ? (const void *)(p->tiles + copy * p->tiles_count)
                                 : (const void *)((const char *)p->bf16_tiles + copy * p->bf16_tiles_count),
                             0};
            if (col->narrow) {
                m.i8 = p->i8n + copy * p->count;
                m.scale = p->scale_n + (size_t)copy * rows;
                m.row_sum = p->row_sum_n + (size_t)copy * rows;
                m.tiles = p->tiles_n + copy * p->tiles_count;
                m.int8_narrow = 1;
            }
            got = bert_linear_matrix_with(col->lowp, NULL, 1, out, in, &m, b, n, rows, cols) == 1 ? 0 : -1;
        }
        if (got != 0) return -1;
        copy = (copy + 1) % p->copies;
        reps++;
        elapsed = cpu_now() - start;
    } while (elapsed < seconds || reps < 3);
    return 2.0 * n * rows * cols * reps / elapsed * 1e-9;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 0.15;
    if (!(seconds > 0)) {
        fprintf(stderr, "bench_kernels: SECONDS must be positive\n");
        return 2;
    }
    openblas_set_num_threads(1);
    bert_isa isa = bert_cpu_isa();
    column cols_all[24];
    int ncol = 0;
    cols_all[ncol++] = (column){"f32-ours", 1, isa == BERT_ISA_AVX512 ? BERT_LINEAR_AVX512 : BERT_LINEAR_AVX2, 0, 0, 0};
    cols_all[ncol++] = (column){"f32-packed", 1,
                                isa == BERT_ISA_AVX512 ? BERT_LINEAR_PACKED_AVX512 : BERT_LINEAR_PACKED_AVX2, 0, 0, 0};
    cols_all[ncol++] = (column){"f32-blas", 1, BERT_LINEAR_BLAS, 0, 0, 0};
    /* "auto": bert_linear_matrix's choice for the shape. */
    static const bert_lowp_kernel lowp[] = {BERT_LOWP_AUTO, BERT_LOWP_BF16_AMX, BERT_LOWP_BF16_DP512, BERT_LOWP_BF16_AVX512,
                                            BERT_LOWP_BF16_PACKED_AVX2, BERT_LOWP_BF16_AVX2, BERT_LOWP_AUTO,
                                            BERT_LOWP_INT8_AMX, BERT_LOWP_INT8_VNNI512, BERT_LOWP_INT8_AVXVNNI,
                                            BERT_LOWP_INT8_PACKED_AVX2_U7, BERT_LOWP_INT8_PACKED_AVX2, BERT_LOWP_INT8_AVX2};
    int f32_only = argc > 2 && strcmp(argv[2], "float32") == 0;
    for (size_t k = 0; !f32_only && k < sizeof lowp / sizeof *lowp; k++) {
        bert_precision p = k < 6 ? BERT_PRECISION_BFLOAT16 : BERT_PRECISION_INT8;
        const char *name = lowp[k] != BERT_LOWP_AUTO ? bert_lowp_kernel_name(lowp[k])
                           : p == BERT_PRECISION_INT8 ? "int8-auto" : "bf16-auto";
        cols_all[ncol++] = (column){name, 0, 0, lowp[k], p, 0};
    }
    /* On 7-bit weights (kernel_types.h: measured, not adopted). */
    static const bert_lowp_kernel narrow[] = {BERT_LOWP_INT8_PACKED_AVX2_NARROW, BERT_LOWP_INT8_AVX2_NARROW};
    for (size_t k = 0; !f32_only && k < sizeof narrow / sizeof *narrow; k++)
        cols_all[ncol++] = (column){bert_lowp_kernel_name(narrow[k]), 0, 0, narrow[k], BERT_PRECISION_INT8, 1};
    static const int shapes[][2] = {{768, 768}, {3072, 768}, {768, 3072}, {384, 384}};
    static const int ns[] = {1, 16, 48, 128, 512};
    printf("GFLOP/s, one thread (rows x cols = W's shape, n input rows); CPU: %s", bert_cpu_isa_name(isa));
    unsigned ext = bert_cpu_extensions();
    for (unsigned f = 1; f <= BERT_CPU_AMX_BF16; f <<= 1)
        if (ext & f) printf(" %s", bert_cpu_extension_name(f));
    printf("; OpenBLAS %s\n\n", openblas_get_corename());
    printf("%-11s %4s", "rows x cols", "n");
    for (int c = 0; c < ncol; c++) printf(" %15s", cols_all[c].name);
    printf("\n");
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int rows = shapes[s][0], cols = shapes[s][1];
        pool p;
        float *in = malloc((size_t)512 * cols * sizeof *in), *out = malloc((size_t)512 * rows * sizeof *out);
        float *b = calloc((size_t)rows, sizeof *b);
        if (pool_make(&p, rows, cols) != 0 || !in || !out || !b) {
            fprintf(stderr, "bench_kernels: out of memory\n");
            return 1;
        }
        for (size_t i = 0; i < (size_t)512 * cols; i++) in[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
        for (size_t a = 0; a < sizeof ns / sizeof *ns; a++) {
            char shape[32];
            snprintf(shape, sizeof shape, "%dx%d", rows, cols);
            printf("%-11s %4d", shape, ns[a]);
            fflush(stdout);
            for (int c = 0; c < ncol; c++) {
                double g = measure(&cols_all[c], &p, ns[a], rows, cols, in, out, b, seconds);
                if (g < 0) printf(" %15s", "-");
                else printf(" %15.1f", g);
                fflush(stdout);
            }
            printf("\n");
        }
        pool_free(&p);
        free(in);
        free(out);
        free(b);
    }
    return 0;
}
