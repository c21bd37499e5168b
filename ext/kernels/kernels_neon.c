/*
 * kernels_neon.c - the arm64 projection kernels (isa_kernels.h): float32 on
 * NEON FMA, bfloat16 (widened in registers, BFDOT, BFMMLA) and int8
 * (widening multiplies, SDOT, SMMLA).
 *
 * The shape is that of the x86 kernels: a block of input rows against a
 * block of RN = 4 weight rows, one accumulator a pair held in a register,
 * dot products of contiguous rows summed across the vector at the end, W
 * read where it lies.  walk() takes every input row through one weight
 * block before the next, so that W is streamed from memory once and each
 * block is reused from L1.  A weight block past the last row repeats the
 * last row (its sums are not stored), so every block function has literal
 * sizes and its accumulators stay in registers.
 *
 * The dot-product (SDOT), matrix-multiply (SMMLA) and bfloat16 (BFDOT,
 * BFMMLA) instructions are compiled through target attributes, so the
 * extension still runs on every arm64 CPU; the kernel table (kernels.c)
 * says which CPU extensions each needs, reported by cpu.c.  The matrix-multiply
 * kernels take input rows in pairs (2 x 8 int8 or 2 x 4 bfloat16 per
 * operand) and a lone last row through the dot-product kernel of the same
 * extension.
 */
#include "isa_kernels.h"

#ifdef BERT_ARM64_KERNELS
#include <arm_neon.h>

#define BERT_TARGET_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#define BERT_TARGET_I8MM __attribute__((target("arch=armv8.2-a+dotprod+i8mm")))
#define BERT_TARGET_BF16 __attribute__((target("arch=armv8.2-a+bf16")))

/* Weight rows a block; input rows a block are 4, 2 or 1. */
enum { RN = 4, RM = 4 };

/* One call's operands, offset to its first input and weight rows. */
typedef struct {
    float *out;
    int ldo;
    const void *x, *w;    /* float, bfloat16 or int8 rows of cols */
    const float *xscale;  /* int8: per input row */
    const float *wscale;  /* int8: per weight row */
    const float *b;
    int cols;
} span;

/* Input row i + a, weight row r + e (the last of the span's rn when e is
 * past it). */
static inline const void *row_at(const void *base, size_t elem, int cols, int first)
{
    return (const char *)base + (size_t)first * (size_t)cols * elem;
}

static inline int clamp_row(int e, int rn) { return e < rn ? e : rn - 1; }

/* [sum(a), sum(b), sum(c), sum(d)] */
static inline float32x4_t hsum4_f32(float32x4_t a, float32x4_t b, float32x4_t c, float32x4_t d)
{
    return vpaddq_f32(vpaddq_f32(a, b), vpaddq_f32(c, d));
}

static inline int32x4_t hsum4_s32(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d)
{
    return vpaddq_s32(vpaddq_s32(a, b), vpaddq_s32(c, d));
}

/* Input row i's outputs r..r+rn: sums (plus the bias) into out. */
static inline void store_f32(const span *s, int i, int r, int rn, const float *sums)
{
    for (int e = 0; e < rn; e++) s->out[(size_t)i * s->ldo + r + e] = s->b ? sums[e] + s->b[r + e] : sums[e];
}

/* Columns body..cols of bfloat16 rows, in scalar code, added to sums, then
 * stored: the end of every bfloat16 block of rm input rows. */
static void finish_bf16(const span *s, int rm, int i, int r, int rn, int body, float sums[][RN])
{
    for (int a = 0; a < rm; a++) {
        const uint16_t *x = row_at(s->x, 2, s->cols, i + a);
        for (int e = 0; e < rn; e++) {
            const uint16_t *w = row_at(s->w, 2, s->cols, r + e);
            for (int c = body; c < s->cols; c++) sums[a][e] += bert_f32_from_bf16(x[c]) * bert_f32_from_bf16(w[c]);
        }
        store_f32(s, i + a, r, rn, sums[a]);
    }
}

/* The same for int8: exact tails, then the scaling. */
static void finish_int8(const span *s, int rm, int i, int r, int rn, int body, int32_t sums[][RN])
{
    for (int a = 0; a < rm; a++) {
        const int8_t *x = row_at(s->x, 1, s->cols, i + a);
        for (int e = 0; e < rn; e++) {
            const int8_t *w = row_at(s->w, 1, s->cols, r + e);
            int32_t total = sums[a][e];
            for (int c = body; c < s->cols; c++) total += (int32_t)x[c] * w[c];
            s->out[(size_t)(i + a) * s->ldo + r + e] = bert_int8_output(total, s->xscale[i + a], s->wscale[r + e], s->b, r + e);
        }
    }
}

/* The accumulators of a dot-product block, one a pair, summed across. */
BERT_INLINE void sums_of_f32(const int rm, float32x4_t acc[][RN], float sums[][RN])
{
    BERT_UNROLL for (int a = 0; a < rm; a++) vst1q_f32(sums[a], hsum4_f32(acc[a][0], acc[a][1], acc[a][2], acc[a][3]));
}

BERT_INLINE void sums_of_s32(const int rm, int32x4_t acc[][RN], int32_t sums[][RN])
{
    BERT_UNROLL for (int a = 0; a < rm; a++) vst1q_s32(sums[a], hsum4_s32(acc[a][0], acc[a][1], acc[a][2], acc[a][3]));
}

/* The accumulators of a matrix-multiply block: acc[p][q] holds the 2 x 2
 * products of input rows 2p, 2p+1 with weight rows 2q, 2q+1. */
BERT_INLINE void sums_of_pairs_f32(const int rm, float32x4_t acc[][RN / 2], float sums[][RN])
{
    BERT_UNROLL for (int p = 0; p < rm / 2; p++) BERT_UNROLL for (int q = 0; q < RN / 2; q++) {
        float v[4];
        vst1q_f32(v, acc[p][q]);
        sums[2 * p][2 * q] = v[0], sums[2 * p][2 * q + 1] = v[1];
        sums[2 * p + 1][2 * q] = v[2], sums[2 * p + 1][2 * q + 1] = v[3];
    }
}

BERT_INLINE void sums_of_pairs_s32(const int rm, int32x4_t acc[][RN / 2], int32_t sums[][RN])
{
    BERT_UNROLL for (int p = 0; p < rm / 2; p++) BERT_UNROLL for (int q = 0; q < RN / 2; q++) {
        int32_t v[4];
        vst1q_s32(v, acc[p][q]);
        sums[2 * p][2 * q] = v[0], sums[2 * p][2 * q + 1] = v[1];
        sums[2 * p + 1][2 * q] = v[2], sums[2 * p + 1][2 * q + 1] = v[3];
    }
}

/* ---- float32: FMA, 4 columns a step ---------------------------------------- */

BERT_INLINE void f32_body(const int rm, const span *s, int i, int r, int rn)
{
    int cols = s->cols;
    const float *x[RM], *w[RN];
    BERT_UNROLL for (int a = 0; a < rm; a++) x[a] = row_at(s->x, 4, cols, i + a);
    BERT_UNROLL for (int e = 0; e < RN; e++) w[e] = row_at(s->w, 4, cols, r + clamp_row(e, rn));
    float32x4_t acc[RM][RN];
    BERT_UNROLL for (int a = 0; a < rm; a++) BERT_UNROLL for (int e = 0; e < RN; e++) acc[a][e] = vdupq_n_f32(0.0f);
    for (int k = 0; k < cols; k += 4) {
        float32x4_t xv[RM];
        BERT_UNROLL for (int a = 0; a < rm; a++) xv[a] = vld1q_f32(x[a] + k);
        BERT_UNROLL for (int e = 0; e < RN; e++) {
            float32x4_t wv = vld1q_f32(w[e] + k);
            BERT_UNROLL for (int a = 0; a < rm; a++) acc[a][e] = vfmaq_f32(acc[a][e], xv[a], wv);
        }
    }
    float sums[RM][RN];
    sums_of_f32(rm, acc, sums);
    for (int a = 0; a < rm; a++) store_f32(s, i + a, r, rn, sums[a]);
}

static void f32_4(const span *s, int i, int r, int rn) { f32_body(4, s, i, r, rn); }
static void f32_1(const span *s, int i, int r, int rn) { f32_body(1, s, i, r, rn); }

/* ---- bfloat16 widened to float32 in registers (a shift into the upper
 * half), FMA, 8 columns a step ---------------------------------------------- */

static inline float32x4_t widen_low(uint16x8_t v) { return vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(v), 16)); }
static inline float32x4_t widen_high(uint16x8_t v) { return vreinterpretq_f32_u32(vshll_high_n_u16(v, 16)); }

BERT_INLINE void bf16w_body(const int rm, const span *s, int i, int r, int rn)
{
    int cols = s->cols, body = cols - cols % 8;
    const uint16_t *x[RM], *w[RN];
    BERT_UNROLL for (int a = 0; a < rm; a++) x[a] = row_at(s->x, 2, cols, i + a);
    BERT_UNROLL for (int e = 0; e < RN; e++) w[e] = row_at(s->w, 2, cols, r + clamp_row(e, rn));
    float32x4_t acc[RM][RN];
    BERT_UNROLL for (int a = 0; a < rm; a++) BERT_UNROLL for (int e = 0; e < RN; e++) acc[a][e] = vdupq_n_f32(0.0f);
    for (int k = 0; k < body; k += 8) {
        float32x4_t xl[RM], xh[RM];
        BERT_UNROLL for (int a = 0; a < rm; a++) {
            uint16x8_t v = vld1q_u16(x[a] + k);
            xl[a] = widen_low(v);
            xh[a] = widen_high(v);
        }
        BERT_UNROLL for (int e = 0; e < RN; e++) {
            uint16x8_t v = vld1q_u16(w[e] + k);
            float32x4_t wl = widen_low(v), wh = widen_high(v);
            BERT_UNROLL for (int a = 0; a < rm; a++) acc[a][e] = vfmaq_f32(vfmaq_f32(acc[a][e], xl[a], wl), xh[a], wh);
        }
    }
    float sums[RM][RN];
    sums_of_f32(rm, acc, sums);
    finish_bf16(s, rm, i, r, rn, body, sums);
}

static void bf16w_4(const span *s, int i, int r, int rn) { bf16w_body(4, s, i, r, rn); }
static void bf16w_1(const span *s, int i, int r, int rn) { bf16w_body(1, s, i, r, rn); }

/* ---- bfloat16, BFDOT: 8 columns a step, pairs of products summed into
 * each float32 lane ------------------------------------------------------------ */

BERT_TARGET_BF16 BERT_INLINE void bfdot_body(const int rm, const span *s, int i, int r, int rn)
{
    int cols = s->cols, body = cols - cols % 8;
    const uint16_t *x[RM], *w[RN];
    BERT_UNROLL for (int a = 0; a < rm; a++) x[a] = row_at(s->x, 2, cols, i + a);
    BERT_UNROLL for (int e = 0; e < RN; e++) w[e] = row_at(s->w, 2, cols, r + clamp_row(e, rn));
    float32x4_t acc[RM][RN];
    BERT_UNROLL for (int a = 0; a < rm; a++) BERT_UNROLL for (int e = 0; e < RN; e++) acc[a][e] = vdupq_n_f32(0.0f);
    for (int k = 0; k < body; k += 8) {
        bfloat16x8_t xv[RM];
        BERT_UNROLL for (int a = 0; a < rm; a++) xv[a] = vreinterpretq_bf16_u16(vld1q_u16(x[a] + k));
        BERT_UNROLL for (int e = 0; e < RN; e++) {
            bfloat16x8_t wv = vreinterpretq_bf16_u16(vld1q_u16(w[e] + k));
            BERT_UNROLL for (int a = 0; a < rm; a++) acc[a][e] = vbfdotq_f32(acc[a][e], xv[a], wv);
        }
    }
    float sums[RM][RN];
    sums_of_f32(rm, acc, sums);
    finish_bf16(s, rm, i, r, rn, body, sums);
}

BERT_TARGET_BF16 static void bfdot_4(const span *s, int i, int r, int rn) { bfdot_body(4, s, i, r, rn); }
BERT_TARGET_BF16 static void bfdot_1(const span *s, int i, int r, int rn) { bfdot_body(1, s, i, r, rn); }

/* ---- bfloat16, BFMMLA: 2 input rows x 2 weight rows x 4 columns an
 * instruction, 8 columns a step (the two 64-bit halves of a pair of rows
 * interleaved) ----------------------------------------------------------------- */

/* [a's columns k..k+4, b's columns k..k+4] and the same for k+4..k+8. */
BERT_TARGET_BF16 static inline void pair_bf16(const uint16_t *a, const uint16_t *b, int k, bfloat16x8_t *lo,
                                              bfloat16x8_t *hi)
{
    uint64x2_t va = vreinterpretq_u64_u16(vld1q_u16(a + k)), vb = vreinterpretq_u64_u16(vld1q_u16(b + k));
    *lo = vreinterpretq_bf16_u64(vzip1q_u64(va, vb));
    *hi = vreinterpretq_bf16_u64(vzip2q_u64(va, vb));
}

BERT_TARGET_BF16 BERT_INLINE void bfmmla_body(const int rm, const span *s, int i, int r, int rn)
{
    int cols = s->cols, body = cols - cols % 8;
    const uint16_t *x[RM], *w[RN];
    BERT_UNROLL for (int a = 0; a < rm; a++) x[a] = row_at(s->x, 2, cols, i + a);
    BERT_UNROLL for (int e = 0; e < RN; e++) w[e] = row_at(s->w, 2, cols, r + clamp_row(e, rn));
    float32x4_t acc[RM / 2][RN / 2];
    BERT_UNROLL for (int p = 0; p < rm / 2; p++) BERT_UNROLL for (int q = 0; q < RN / 2; q++) acc[p][q] = vdupq_n_f32(0.0f);
    for (int k = 0; k < body; k += 8) {
        bfloat16x8_t xl[RM / 2], xh[RM / 2];
        BERT_UNROLL for (int p = 0; p < rm / 2; p++) pair_bf16(x[2 * p], x[2 * p + 1], k, &xl[p], &xh[p]);
        BERT_UNROLL for (int q = 0; q < RN / 2; q++) {
            bfloat16x8_t wl, wh;
            pair_bf16(w[2 * q], w[2 * q + 1], k, &wl, &wh);
            BERT_UNROLL for (int p = 0; p < rm / 2; p++)
                acc[p][q] = vbfmmlaq_f32(vbfmmlaq_f32(acc[p][q], xl[p], wl), xh[p], wh);
        }
    }
    float sums[RM][RN];
    sums_of_pairs_f32(rm, acc, sums);
    finish_bf16(s, rm, i, r, rn, body, sums);
}

BERT_TARGET_BF16 static void bfmmla_4(const span *s, int i, int r, int rn) { bfmmla_body(4, s, i, r, rn); }
BERT_TARGET_BF16 static void bfmmla_2(const span *s, int i, int r, int rn) { bfmmla_body(2, s, i, r, rn); }

/* ---- int8 widened: 8 x 8-bit products to 16 bits (two summed stay within
 * 2 x 127 x 127), pairwise added into int32, 16 columns a step -------------- */

BERT_INLINE void int8w_body(const int rm, const span *s, int i, int r, int rn)
{
    int cols = s->cols, body = cols - cols % 16;
    const int8_t *x[RM], *w[RN];
    BERT_UNROLL for (int a = 0; a < rm; a++) x[a] = row_at(s->x, 1, cols, i + a);
    BERT_UNROLL for (int e = 0; e < RN; e++) w[e] = row_at(s->w, 1, cols, r + clamp_row(e, rn));
    int32x4_t acc[RM][RN];
    BERT_UNROLL for (int a = 0; a < rm; a++) BERT_UNROLL for (int e = 0; e < RN; e++) acc[a][e] = vdupq_n_s32(0);
    for (int k = 0; k < body; k += 16) {
        int8x16_t xv[RM];
        BERT_UNROLL for (int a = 0; a < rm; a++) xv[a] = vld1q_s8(x[a] + k);
        BERT_UNROLL for (int e = 0; e < RN; e++) {
            int8x16_t wv = vld1q_s8(w[e] + k);
            BERT_UNROLL for (int a = 0; a < rm; a++) {
                int16x8_t p = vmull_s8(vget_low_s8(xv[a]), vget_low_s8(wv));
                acc[a][e] = vpadalq_s16(acc[a][e], vmlal_high_s8(p, xv[a], wv));
            }
        }
    }
    int32_t sums[RM][RN];
    sums_of_s32(rm, acc, sums);
    finish_int8(s, rm, i, r, rn, body, sums);
}

static void int8w_4(const span *s, int i, int r, int rn) { int8w_body(4, s, i, r, rn); }
static void int8w_1(const span *s, int i, int r, int rn) { int8w_body(1, s, i, r, rn); }

/* ---- int8, SDOT: 4 products summed into each int32 lane, 16 columns a
 * step ------------------------------------------------------------------------- */

BERT_TARGET_DOTPROD BERT_INLINE void sdot_body(const int rm, const span *s, int i, int r, int rn)
{
    int cols = s->cols, body = cols - cols % 16;
    const int8_t *x[RM], *w[RN];
    BERT_UNROLL for (int a = 0; a < rm; a++) x[a] = row_at(s->x, 1, cols, i + a);
    BERT_UNROLL for (int e = 0; e < RN; e++) w[e] = row_at(s->w, 1, cols, r + clamp_row(e, rn));
    int32x4_t acc[RM][RN];
    BERT_UNROLL for (int a = 0; a < rm; a++) BERT_UNROLL for (int e = 0; e < RN; e++) acc[a][e] = vdupq_n_s32(0);
    for (int k = 0; k < body; k += 16) {
        int8x16_t xv[RM];
        BERT_UNROLL for (int a = 0; a < rm; a++) xv[a] = vld1q_s8(x[a] + k);
        BERT_UNROLL for (int e = 0; e < RN; e++) {
            int8x16_t wv = vld1q_s8(w[e] + k);
            BERT_UNROLL for (int a = 0; a < rm; a++) acc[a][e] = vdotq_s32(acc[a][e], xv[a], wv);
        }
    }
    int32_t sums[RM][RN];
    sums_of_s32(rm, acc, sums);
    finish_int8(s, rm, i, r, rn, body, sums);
}

BERT_TARGET_DOTPROD static void sdot_4(const span *s, int i, int r, int rn) { sdot_body(4, s, i, r, rn); }
BERT_TARGET_DOTPROD static void sdot_1(const span *s, int i, int r, int rn) { sdot_body(1, s, i, r, rn); }

/* ---- int8, SMMLA: 2 input rows x 2 weight rows x 8 columns an
 * instruction, 16 columns a step ------------------------------------------------ */

BERT_TARGET_I8MM static inline void pair_int8(const int8_t *a, const int8_t *b, int k, int8x16_t *lo, int8x16_t *hi)
{
    int64x2_t va = vreinterpretq_s64_s8(vld1q_s8(a + k)), vb = vreinterpretq_s64_s8(vld1q_s8(b + k));
    *lo = vreinterpretq_s8_s64(vzip1q_s64(va, vb));
    *hi = vreinterpretq_s8_s64(vzip2q_s64(va, vb));
}

BERT_TARGET_I8MM BERT_INLINE void smmla_body(const int rm, const span *s, int i, int r, int rn)
{
    int cols = s->cols, body = cols - cols % 16;
    const int8_t *x[RM], *w[RN];
    BERT_UNROLL for (int a = 0; a < rm; a++) x[a] = row_at(s->x, 1, cols, i + a);
    BERT_UNROLL for (int e = 0; e < RN; e++) w[e] = row_at(s->w, 1, cols, r + clamp_row(e, rn));
    int32x4_t acc[RM / 2][RN / 2];
    BERT_UNROLL for (int p = 0; p < rm / 2; p++) BERT_UNROLL for (int q = 0; q < RN / 2; q++) acc[p][q] = vdupq_n_s32(0);
    for (int k = 0; k < body; k += 16) {
        int8x16_t xl[RM / 2], xh[RM / 2];
        BERT_UNROLL for (int p = 0; p < rm / 2; p++) pair_int8(x[2 * p], x[2 * p + 1], k, &xl[p], &xh[p]);
        BERT_UNROLL for (int q = 0; q < RN / 2; q++) {
            int8x16_t wl, wh;
            pair_int8(w[2 * q], w[2 * q + 1], k, &wl, &wh);
            BERT_UNROLL for (int p = 0; p < rm / 2; p++) acc[p][q] = vmmlaq_s32(vmmlaq_s32(acc[p][q], xl[p], wl), xh[p], wh);
        }
    }
    int32_t sums[RM][RN];
    sums_of_pairs_s32(rm, acc, sums);
    finish_int8(s, rm, i, r, rn, body, sums);
}

BERT_TARGET_I8MM static void smmla_4(const span *s, int i, int r, int rn) { smmla_body(4, s, i, r, rn); }
BERT_TARGET_I8MM static void smmla_2(const span *s, int i, int r, int rn) { smmla_body(2, s, i, r, rn); }

/* ---- walking the blocks --------------------------------------------------- */

/* Computes input rows i..i+(4, 2 or 1) against weight rows r..r+rn. */
typedef void block_fn(const span *s, int i, int r, int rn);

/* Blocks of four input rows, then of two (when `two` is not NULL), then
 * one, through each block of RN weight rows in turn. */
static void walk(const span *s, int n, int rows, block_fn *four, block_fn *two, block_fn *one)
{
    for (int r = 0; r < rows; r += RN) {
        int rn = rows - r < RN ? rows - r : RN;
        int i = 0;
        for (; i + 4 <= n; i += 4) four(s, i, r, rn);
        if (two)
            for (; i + 2 <= n; i += 2) two(s, i, r, rn);
        for (; i < n; i++) one(s, i, r, rn);
    }
}

/* Input rows i0..i1 against weight rows r0..r1 of a product whose rows
 * are `elem` bytes a column, through the block functions given. */
static void run(const bert_kernel_args *a, const void *x, size_t elem, int i0, int i1, int r0, int r1,
                block_fn *four, block_fn *two, block_fn *one)
{
    const bert_matrix *m = a->w;
    const void *w = m->precision == BERT_PRECISION_FLOAT32 ? (const void *)m->f32
                    : m->precision == BERT_PRECISION_BFLOAT16 ? (const void *)m->bf16 : (const void *)m->i8;
    span s = {a->out + (size_t)i0 * a->rows + r0, a->rows, row_at(x, elem, a->cols, i0), row_at(w, elem, a->cols, r0),
              a->x_scale ? a->x_scale + i0 : NULL, m->scale ? m->scale + r0 : NULL, a->b ? a->b + r0 : NULL, a->cols};
    walk(&s, i1 - i0, r1 - r0, four, two, one);
}

void bert_f32_neon(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    run(a, a->x_f32, sizeof(float), i0, i1, r0, r1, f32_4, NULL, f32_1);
}

void bert_bf16_neon(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    run(a, a->x_bf16, sizeof(uint16_t), i0, i1, r0, r1, bf16w_4, NULL, bf16w_1);
}

void bert_bf16_bfdot(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    run(a, a->x_bf16, sizeof(uint16_t), i0, i1, r0, r1, bfdot_4, NULL, bfdot_1);
}

void bert_bf16_bfmmla(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    run(a, a->x_bf16, sizeof(uint16_t), i0, i1, r0, r1, bfmmla_4, bfmmla_2, bfdot_1);
}

void bert_int8_neon(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    run(a, a->x_i8, 1, i0, i1, r0, r1, int8w_4, NULL, int8w_1);
}

void bert_int8_sdot(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    run(a, a->x_i8, 1, i0, i1, r0, r1, sdot_4, NULL, sdot_1);
}

void bert_int8_smmla(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    run(a, a->x_i8, 1, i0, i1, r0, r1, smmla_4, smmla_2, sdot_1);
}

#endif
