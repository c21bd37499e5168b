/*
 * isa_kernels.h - the projection kernels: out[i][r] = x_i . w_r (+ b[r])
 * for a span of input rows and weight rows, one file per instruction set:
 *
 *   kernels_portable.c  plain C, any CPU: bfloat16 and int8
 *   kernels_avx2.c      AVX2 and FMA: float32, bfloat16 (widened), int8
 *                       (vpmaddubsw on 7-bit weights, or with the sign trick;
 *                       vpdpbusd with AVX-VNNI)
 *   kernels_avx512.c    AVX-512 (F and BW): float32, bfloat16 (widened;
 *                       vdpbf16ps with AVX512_BF16), int8 (vpdpbusd, AVX512_VNNI)
 *   kernels_amx.c       AMX tiles: int8 (tdpbusd) and bfloat16 (tdpbf16ps) on W
 *                       packed at load as tiles, for products of many rows
 *   kernels_neon.c      arm64: float32 (NEON FMA), bfloat16 (widened; BFDOT,
 *                       BFMMLA), int8 (widening multiplies; SDOT, SMMLA)
 *
 * A new instruction set is a new file with functions of the bert_kernel_fn
 * type, and a line each in the kernel table (kernels.h) that says which
 * precision it computes and what the CPU must have; linear.c and
 * linear_lowp.c choose from the table.  The kernel files include this
 * header and not the table's: the table is built from their functions, so
 * it sits above them.
 *
 * Every vector kernel but AMX's has one shape, whatever the precision: a block of
 * input rows against a block of weight rows, one accumulator a pair held
 * in a register, dot products of contiguous rows summed across the vector
 * at the end, the columns past the last whole vector summed in plain C
 * (bert_tail_float, bert_tail_int), and the weight block PREFETCH_AHEAD
 * blocks ahead fetched into L2 a few lines at each step (bert_prefetcher).
 * W is read where it lies, row-major as the checkpoint stores it.
 */
#ifndef BERT_ISA_KERNELS_H
#define BERT_ISA_KERNELS_H

#include "cpu.h"
#include "kernel_types.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* One product's operands, as every kernel takes them. */
typedef struct {
    const bert_matrix *w;     /* weights, [rows x cols], of the kernel's precision */
    const float *x_f32;       /* float32: the input rows [n x cols] */
    const uint16_t *x_bf16;   /* bfloat16: the input rows rounded to bfloat16 */
    const int8_t *x_i8;       /* int8: the quantized input rows (+128 for vpdpbusd, see input_offset) */
    const float *x_scale;     /* int8: their scales */
    const float *b;           /* bias [rows], or NULL */
    float *out;               /* [n x rows] */
    int n, rows, cols;
    const int32_t *x_zero;    /* int8 on unsigned 7-bit input: each row's zero point, or NULL */
} bert_kernel_args;

/* Input rows i0..i1 against weight rows r0..r1. */
typedef void (*bert_kernel_fn)(const bert_kernel_args *a, int i0, int i1, int r0, int r1);

/* One output of an int8 product from its exact int32 sum: every kernel
 * ends here, so all agree to the bit. */
static inline float bert_int8_output(int32_t sum, float xscale, float wscale, const float *b, int r)
{
    float v = (float)sum * (xscale * wscale);
    return b ? v + b[r] : v;
}

/* Columns c0..cols of input row i against weight row r, in plain C: the
 * end of a float32 or bfloat16 dot product past the last whole vector. */
static inline float bert_tail_float(const bert_kernel_args *a, int i, int r, int c0)
{
    float sum = 0.0f;
    size_t xi = (size_t)i * a->cols, wr = (size_t)r * a->cols;
    if (a->w->precision == BERT_PRECISION_FLOAT32)
        for (int c = c0; c < a->cols; c++) sum += a->x_f32[xi + c] * a->w->f32[wr + c];
    else
        for (int c = c0; c < a->cols; c++)
            sum += bert_f32_from_bf16(a->x_bf16[xi + c]) * bert_f32_from_bf16(a->w->bf16[wr + c]);
    return sum;
}

/* The same for int8, exact, with the input as stored (offset included). */
static inline int32_t bert_tail_int(const bert_kernel_args *a, int i, int r, int c0, int input_offset)
{
    int32_t sum = 0;
    const int8_t *x = a->x_i8 + (size_t)i * a->cols, *w = a->w->i8 + (size_t)r * a->cols;
    for (int c = c0; c < a->cols; c++) {
        /* Stored with the offset, the byte is read back unsigned. */
        int32_t xv = input_offset ? (int32_t)(uint8_t)x[c] : (int32_t)x[c];
        sum += xv * w[c];
    }
    return sum;
}

/* Weight blocks between the one computed and the one fetched. */
#define PREFETCH_AHEAD 2

/* The weight block PREFETCH_AHEAD ahead, fetched a few lines at each step
 * of every block of input rows, so that requests to memory stay in flight
 * while the current block is computed (one burst at its start leaves the
 * rest of the time unused, and a sentence's rows take W from RAM).  Into
 * L2 rather than L1: requests to L1 stall the loop once its few miss slots
 * are taken; into L2 more are in flight, and the loads then find W there.
 * Measured, 16 rows of 768x768: bfloat16 119 -> 146-162 GFLOP/s. */
typedef struct {
    const char *at, *end; /* lines still to fetch */
    int per_step;         /* lines a step */
} bert_prefetcher;

/* For a walk over weight blocks of `block_rows` rows of `row_bytes`, each
 * taken by input rows i0..i1 in blocks of `input_block`, `step` columns a
 * step. */
static inline bert_prefetcher bert_prefetcher_for(size_t row_bytes, int block_rows, int i0, int i1,
                                                  int input_block, int cols, int step)
{
    int steps = (i1 - i0 + input_block - 1) / input_block * (cols / step > 0 ? cols / step : 1);
    int lines = (int)((row_bytes * (size_t)block_rows + 63) / 64);
    bert_prefetcher pf = {NULL, NULL, (lines + steps - 1) / steps};
    return pf;
}

/* Aims pf at weight block `r` + PREFETCH_AHEAD blocks, when it is inside
 * rows below r1; else at nothing. */
static inline void bert_prefetcher_aim(bert_prefetcher *pf, const void *w, size_t row_bytes, int r, int block_rows,
                                       int r1)
{
    int ahead = r + PREFETCH_AHEAD * block_rows;
    pf->at = ahead + block_rows <= r1 ? (const char *)w + (size_t)ahead * row_bytes : NULL;
    pf->end = pf->at ? pf->at + (size_t)block_rows * row_bytes : NULL;
}

/* The panel kernels' walk (bert_f32_packed_avx2, bert_f32_packed_avx512):
 * W in blocks of PACKED_COLS columns by PACKED_PANELS panels (1 MB, which
 * stays in L2); through each block, the input rows `pm` at a time, copied
 * (bert_pack_input) so that they stay in L1 while they pass every panel of
 * the block.  Over 1,024 rows of W the input rows are
 * copied again for each block of panels: a copied value serves 1,024
 * multiply-adds there, cheaper than walking the other way round with W's
 * blocks out of L2.  A block of columns after the first adds
 * to out what the ones before wrote.  The weight stream is fetched
 * PACKED_W_AHEAD steps ahead: without it the AVX-512 kernel waited on L2
 * and ran at 130-145 GFLOP/s where it runs at 145-160 (bench_kernels, 48
 * to 512 rows, W in L2). */
#define PACKED_COLS 256
enum { PACKED_PANELS = 64, PACKED_W_AHEAD = 16 };

/* Copies input rows i..i+rm, columns k0..k1, to xp, a row every
 * PACKED_COLS floats: in x the rows lie 3 or 12 KB apart, on a handful of
 * L1 sets that the weight stream evicts them from; copied, they are one run
 * of lines that stays.  Row by row rather than column by column (12 values
 * of a column side by side): whole-vector copies in place of a scalar move
 * a value, 1.655 s -> 1.562 s on 450-token texts (bert-base, two threads),
 * the kernel's broadcasts alike either way. */
static inline void bert_pack_input(float *xp, const bert_kernel_args *a, int rm, int i, int k0, int k1)
{
    const float *x = a->x_f32 + (size_t)i * a->cols + k0;
    for (int y = 0; y < rm; y++)
        memcpy(xp + (size_t)y * PACKED_COLS, x + (size_t)y * a->cols, (size_t)(k1 - k0) * sizeof *xp);
}

/* The lines of the next block of input rows, fetched a few at the start
 * of each block of panels while this block computes: x was written by the
 * step before and sits in L3 or further, and copying the next block would
 * otherwise wait on each of its lines in turn (it was a fifth of the
 * kernel's time on 450 tokens).  A few a block rather than one a step:
 * the state then stays out of the inner loop, which ran 5% faster
 * without it (bench_kernels-like loop, 768x3072, 480 rows). */
typedef struct {
    const char *row; /* the row being fetched, at its first column */
    size_t stride;   /* bytes from a row to the next */
    int rows, lines; /* rows left, lines a row */
    int line;        /* the next line of `row` */
    int per_block;   /* lines to fetch at each block of panels */
} bert_input_prefetch;

static inline void bert_input_prefetch_block(bert_input_prefetch *pf)
{
    for (int n = 0; n < pf->per_block && pf->rows > 0; n++) {
        __builtin_prefetch(pf->row + (size_t)pf->line * 64, 0, 3);
        if (++pf->line == pf->lines) pf->line = 0, pf->row += pf->stride, pf->rows--;
    }
}

/* A panel kernel's rows: input rows i..i+rm (copied to xp) through panels
 * p0..p1 of W's rows below r1, columns k0..k1. */
typedef void (*bert_packed_rows_fn)(const bert_kernel_args *a, const float *xp, int rm, int i, int p0, int p1,
                                    int r1, int k0, int k1, bert_input_prefetch *pf);

/* Weight rows r0..r1 (r0 a multiple of BERT_PANEL) against input rows
 * i0..i1, in the walk above; xp holds PACKED_COLS * pm floats. */
static inline void bert_packed_walk(const bert_kernel_args *a, int i0, int i1, int r0, int r1, int pm, float *xp,
                                    bert_packed_rows_fn rows)
{
    int p0 = r0 / BERT_PANEL, p1 = (r1 + BERT_PANEL - 1) / BERT_PANEL;
    for (int k0 = 0; k0 < a->cols; k0 += PACKED_COLS) {
        int k1 = a->cols - k0 < PACKED_COLS ? a->cols : k0 + PACKED_COLS;
        for (int q0 = p0; q0 < p1; q0 += PACKED_PANELS) {
            int q1 = p1 - q0 < PACKED_PANELS ? p1 : q0 + PACKED_PANELS;
            for (int i = i0; i < i1; i += pm) {
                int rm = i1 - i < pm ? i1 - i : pm, next = i1 - (i + pm) < pm ? i1 - (i + pm) : pm;
                bert_pack_input(xp, a, rm, i, k0, k1);
                /* (No pointer is formed past x's end: the last block has no next.) */
                const float *next_row = next > 0 ? a->x_f32 + (size_t)(i + pm) * a->cols + k0 : NULL;
                /* Spread over the kernels' calls, a pair of panels each (AVX2's, a panel each, finish early). */
                int lines = ((k1 - k0) * 4 + 63) / 64, calls = (q1 - q0 + 1) / 2;
                bert_input_prefetch pf = {(const char *)next_row, (size_t)a->cols * sizeof(float), next, lines, 0,
                                          (next * lines + calls - 1) / calls};
                rows(a, xp, rm, i, q0, q1, r1, k0, k1, &pf);
            }
        }
    }
}

/* The kernels, by file. */
void bert_bf16_portable(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_int8_portable(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
#ifdef BERT_X86_KERNELS
void bert_f32_avx2(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_bf16_avx2(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_int8_avx2(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_int8_avxvnni(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_int8_avx2_narrow(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_int8_packed_avx2(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_int8_packed_avx2_narrow(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_int8_packed_avx2_u7(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_bf16_packed_avx2(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_f32_avx512(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_bf16_avx512(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_bf16_avx512bf16(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_int8_avx512vnni(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_int8_amx(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_bf16_amx(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_f32_packed_avx2(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_f32_packed_avx512(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
#endif
#ifdef BERT_ARM64_KERNELS
void bert_f32_neon(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_bf16_neon(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_bf16_bfdot(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_bf16_bfmmla(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_int8_neon(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_int8_sdot(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
void bert_int8_smmla(const bert_kernel_args *a, int i0, int i1, int r0, int r1);
#endif

#endif
