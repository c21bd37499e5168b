/*
 * kernels_avx2.c - the projection kernels on AVX2 and FMA (isa_kernels.h):
 * blocks of 3 input rows x 4 weight rows, 12 accumulators of 256 bits
 * (with the input vectors and one weight vector, the 16 registers).
 *
 *   bert_f32_avx2       float32, FMA, 8 columns a step
 *   bert_bf16_avx2      bfloat16 widened to float32 in registers, FMA, 8 a step
 *   bert_int8_avx2      vpmaddubsw on 8-bit operands with the sign trick, 32 a step
 *   bert_int8_avxvnni   vpdpbusd (AVX-VNNI): groups of four byte products, 32 a step
 *   bert_f32_packed_avx2  float32 on W packed at load (linear.h, BERT_PANEL):
 *                       blocks of 6 input rows x 1 panel, see packed_block
 *   bert_int8_packed_avx2  int8 on W laid out as tiles at load (where no VNNI
 *                       is), for 8 rows or more: the sign trick on a broadcast
 *                       input against a panel, see int8_panel_block
 *   bert_int8_avx2_narrow, bert_int8_packed_avx2_narrow  the same two on W
 *                       held to 7 bits, without the sign trick: measured, not
 *                       adopted (kernel_types.h, BERT_INT8_NARROW_MAX)
 *   bert_int8_packed_avx2_u7  the panel kernel on input quantized to unsigned
 *                       7 bits with a zero point against 8-bit W, without the
 *                       sign trick: measured, not adopted (kernels.c)
 *   bert_bf16_packed_avx2  bfloat16 on W laid out as tiles at load, for 8
 *                       rows or more: widened in registers by a shift, the
 *                       float32 panel kernel's FMAs, see bf16_panel_block
 *
 * One block function and one walk for all four, as in kernels_avx512.c.
 * The sign trick (as llama.cpp's AVX2 dot products): vpmaddubsw multiplies
 * unsigned by signed bytes and sums pairs into int16; given |x| and w
 * carrying x's sign, each product is x * w exactly and a pair's sum is at
 * most 2 * 127 * 127 = 32258 (both sides are quantized within [-127, 127]),
 * never saturating; vpmaddwd by ones then sums pairs of those into int32.
 * Its blocks are 3 x 3, so that |x| of each row, the weight vector and the
 * ones stay in registers too.  Even so it issues as many instructions per
 * product as float32's FMA does (sign, vpmaddubsw, vpmaddwd, add for 32
 * products against 4 FMAs): in this dot-product shape int8 gains over
 * float32 where W's bytes are what limits, at a few rows.  The panel
 * kernel keeps that gain at many rows: no horizontal sums, and |x| taken
 * once a row for a panel's two vectors.
 */
#include "isa_kernels.h"

#ifdef BERT_X86_KERNELS
#include "hsum_x86.h"

#include <immintrin.h>
#include <string.h>

#define TARGET __attribute__((target("avx2,fma,avxvnni")))

enum { RM = 3, RN = 4 };

typedef enum { F32, BF16_WIDEN, INT8_SIGN, INT8_NARROW, INT8_VNNI } kind;

TARGET BERT_INLINE int step_of(kind k)
{
    return k == INT8_SIGN || k == INT8_NARROW || k == INT8_VNNI ? 32 : 8;
}

/* Weight rows a block: vpmaddubsw's two steps need two more registers
 * (the ones and the pairs between them). */
TARGET BERT_INLINE int block_rows_of(kind k)
{
    return k == INT8_SIGN || k == INT8_NARROW ? 3 : RN;
}

TARGET BERT_INLINE __m256 widen(const uint16_t *p)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
}

TARGET BERT_INLINE __m256i load(kind k, const bert_kernel_args *a, int input, size_t row, int c)
{
    size_t at = row * (size_t)a->cols + (size_t)c;
    switch (k) {
    case F32: return _mm256_castps_si256(_mm256_loadu_ps((input ? a->x_f32 : a->w->f32) + at));
    case BF16_WIDEN: return _mm256_castps_si256(widen((input ? a->x_bf16 : a->w->bf16) + at));
    default: return _mm256_loadu_si256((const __m256i *)((input ? a->x_i8 : a->w->i8) + at));
    }
}

/* The VEX-encoded vpdpbusd (registers 0-15), written out as in
 * kernels_avx512.c. */
TARGET BERT_INLINE __m256i dpbusd(__m256i acc, __m256i u, __m256i s)
{
    __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "xm"(s));
    return acc;
}

TARGET BERT_INLINE __m256i multiply_add(kind k, __m256i acc, __m256i x, __m256i w)
{
    switch (k) {
    case F32:
    case BF16_WIDEN:
        return _mm256_castps_si256(_mm256_fmadd_ps(_mm256_castsi256_ps(x), _mm256_castsi256_ps(w),
                                                   _mm256_castsi256_ps(acc)));
    case INT8_SIGN: {
        __m256i pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(x), _mm256_sign_epi8(w, x));
        return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
    }
    case INT8_NARROW: {
        /* x + 128 unsigned against w within [-63, 63]: pairs exact in int16. */
        __m256i pairs = _mm256_maddubs_epi16(x, w);
        return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
    }
    default:
        return dpbusd(acc, x, w);
    }
}

TARGET BERT_INLINE void block(kind k, const int rm, const int rn, const bert_kernel_args *a, int i, int r,
                              bert_prefetcher *pf)
{
    int step = step_of(k), body = a->cols - a->cols % step;
    __m256i acc[RM][RN];
    BERT_UNROLL for (int y = 0; y < rm; y++) BERT_UNROLL for (int e = 0; e < rn; e++) acc[y][e] = _mm256_setzero_si256();
    for (int c = 0; c < body; c += step) {
        for (int p = 0; p < pf->per_step && pf->at < pf->end; p++, pf->at += 64) _mm_prefetch(pf->at, _MM_HINT_T1);
        __m256i xv[RM];
        BERT_UNROLL for (int y = 0; y < rm; y++) xv[y] = load(k, a, 1, (size_t)(i + y), c);
        BERT_UNROLL for (int e = 0; e < rn; e++) {
            __m256i wv = load(k, a, 0, (size_t)(r + e), c);
            BERT_UNROLL for (int y = 0; y < rm; y++) acc[y][e] = multiply_add(k, acc[y][e], xv[y], wv);
        }
    }
    __m256i list[RM * RN + 3];
    int count = 0;
    BERT_UNROLL for (int y = 0; y < rm; y++) BERT_UNROLL for (int e = 0; e < rn; e++) list[count++] = acc[y][e];
    BERT_UNROLL for (int g = count; g % 4 != 0; g++) list[g] = _mm256_setzero_si256();
    union {
        float f[RM * RN + 3];
        int32_t i[RM * RN + 3];
    } sums;
    int integer = k != F32 && k != BF16_WIDEN, offset = k == INT8_VNNI || k == INT8_NARROW ? 128 : 0;
    BERT_UNROLL for (int g = 0; g < count; g += 4) {
        if (integer)
            _mm_storeu_si128((__m128i *)(sums.i + g), hsum4_256i(list[g], list[g + 1], list[g + 2], list[g + 3]));
        else
            _mm_storeu_ps(sums.f + g, hsum4_256(_mm256_castsi256_ps(list[g]), _mm256_castsi256_ps(list[g + 1]),
                                                _mm256_castsi256_ps(list[g + 2]), _mm256_castsi256_ps(list[g + 3])));
    }
    BERT_UNROLL for (int y = 0; y < rm; y++) BERT_UNROLL for (int e = 0; e < rn; e++) {
        float *o = a->out + (size_t)(i + y) * a->rows + r + e;
        if (integer) {
            /* vpdpbusd's and the narrow kernel's input went in shifted by
             * 128: take 128 times the weight row's sum back off. */
            int32_t s = sums.i[y * rn + e] + bert_tail_int(a, i + y, r + e, body, offset) -
                        offset * a->w->row_sum[r + e];
            *o = bert_int8_output(s, a->x_scale[i + y], a->w->scale[r + e], a->b, r + e);
        } else {
            float v = sums.f[y * rn + e] + bert_tail_float(a, i + y, r + e, body);
            *o = a->b ? v + a->b[r + e] : v;
        }
    }
}

TARGET BERT_INLINE void rows_through(kind k, const int rn, const bert_kernel_args *a, int i0, int i1, int r,
                                     bert_prefetcher *pf)
{
    int i = i0;
    for (; i + RM <= i1; i += RM) block(k, RM, rn, a, i, r, pf);
    switch (i1 - i) {
    case 1: block(k, 1, rn, a, i, r, pf); break;
    case 2: block(k, 2, rn, a, i, r, pf); break;
    default: break;
    }
}

TARGET BERT_INLINE void walk(kind k, const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    const int rn = block_rows_of(k);
    size_t elem = k == F32 ? 4 : k == BF16_WIDEN ? 2 : 1;
    const void *w = k == F32 ? (const void *)a->w->f32 : k == BF16_WIDEN ? (const void *)a->w->bf16 : (const void *)a->w->i8;
    size_t row_bytes = (size_t)a->cols * elem;
    bert_prefetcher pf = bert_prefetcher_for(row_bytes, rn, i0, i1, RM, a->cols, step_of(k));
    int r = r0;
    for (; r + rn <= r1; r += rn) {
        bert_prefetcher_aim(&pf, w, row_bytes, r, rn, r1);
        if (rn == RN) rows_through(k, RN, a, i0, i1, r, &pf);
        else rows_through(k, 3, a, i0, i1, r, &pf);
    }
    pf.at = pf.end = NULL;
    switch (r1 - r) {
    case 1: rows_through(k, 1, a, i0, i1, r, &pf); break;
    case 2: rows_through(k, 2, a, i0, i1, r, &pf); break;
    case 3: rows_through(k, 3, a, i0, i1, r, &pf); break;
    default: break;
    }
}

/* ---- float32 on packed panels ------------------------------------------- */

/* Input rows a packed block: 6 rows x one panel of 16 (two vectors) are 12
 * accumulators, with the panel's two vectors and a broadcast 15 of the 16
 * registers. */
enum { PM = 6 };

/* The sums of input rows i..i+rm against panel p (weight rows below r1),
 * over a block of columns from k0, into out: set (bias added) at k0 = 0,
 * else added to. */
TARGET BERT_INLINE void panel_out(const int rm, const bert_kernel_args *a, __m256 acc[][2], int i, int p, int r1,
                                  int k0)
{
    int r = p * BERT_PANEL, valid = r1 - r < BERT_PANEL ? r1 - r : BERT_PANEL;
    float bias[BERT_PANEL] = {0}, row[BERT_PANEL] = {0};
    if (k0 == 0 && a->b) memcpy(bias, a->b + r, (size_t)valid * sizeof *bias);
    BERT_UNROLL for (int y = 0; y < rm; y++) {
        float *o = a->out + (size_t)(i + y) * a->rows + r;
        /* The last panel's rows past W's end are neither read nor written. */
        float *at = valid == BERT_PANEL ? o : row;
        if (k0 == 0) memcpy(at, bias, sizeof bias);
        else if (at == row) memcpy(row, o, (size_t)valid * sizeof *row);
        _mm256_storeu_ps(at, _mm256_add_ps(acc[y][0], _mm256_loadu_ps(at)));
        _mm256_storeu_ps(at + 8, _mm256_add_ps(acc[y][1], _mm256_loadu_ps(at + 8)));
        if (at == row) memcpy(o, row, (size_t)valid * sizeof *row);
    }
}

/* out for the packed input rows i..i+rm (xp) and the weight rows of panel
 * p below r1, over columns k0..k1 of W: set (bias added) at k0 = 0, else
 * added to. */
TARGET BERT_INLINE void packed_block(const int rm, const bert_kernel_args *a, const float *xp, int i, int p, int r1,
                                     int k0, int k1, bert_input_prefetch *pf)
{
    const float *w = a->w->f32_packed + ((size_t)p * a->cols + k0) * BERT_PANEL;
    __m256 acc[PM][2];
    BERT_UNROLL for (int y = 0; y < rm; y++) acc[y][0] = acc[y][1] = _mm256_setzero_ps();
    bert_input_prefetch_block(pf);
    for (int c = 0; c < k1 - k0; c++) {
        _mm_prefetch((const char *)(w + (size_t)(c + PACKED_W_AHEAD) * BERT_PANEL), _MM_HINT_T0);
        __m256 w0 = _mm256_loadu_ps(w + (size_t)c * BERT_PANEL), w1 = _mm256_loadu_ps(w + (size_t)c * BERT_PANEL + 8);
        BERT_UNROLL for (int y = 0; y < rm; y++) {
            __m256 xb = _mm256_broadcast_ss(xp + y * PACKED_COLS + c);
            acc[y][0] = _mm256_fmadd_ps(xb, w0, acc[y][0]);
            acc[y][1] = _mm256_fmadd_ps(xb, w1, acc[y][1]);
        }
    }
    panel_out(rm, a, acc, i, p, r1, k0);
}

/* Input rows i..i+rm (packed in xp) through panels p0..p1, one at a time. */
TARGET BERT_INLINE void packed_panels(const int rm, const bert_kernel_args *a, const float *xp, int i, int p0,
                                      int p1, int r1, int k0, int k1, bert_input_prefetch *pf)
{
    for (int p = p0; p < p1; p++) packed_block(rm, a, xp, i, p, r1, k0, k1, pf);
}

/* Input rows i..i+rm (packed in xp) through panels p0..p1 (a block of W,
 * isa_kernels.h: bert_packed_walk), with rm a literal for the compiler. */
TARGET static void packed_rows(const bert_kernel_args *a, const float *xp, int rm, int i, int p0, int p1, int r1,
                               int k0, int k1, bert_input_prefetch *pf)
{
    switch (rm) {
    case 1: packed_panels(1, a, xp, i, p0, p1, r1, k0, k1, pf); break;
    case 2: packed_panels(2, a, xp, i, p0, p1, r1, k0, k1, pf); break;
    case 3: packed_panels(3, a, xp, i, p0, p1, r1, k0, k1, pf); break;
    case 4: packed_panels(4, a, xp, i, p0, p1, r1, k0, k1, pf); break;
    case 5: packed_panels(5, a, xp, i, p0, p1, r1, k0, k1, pf); break;
    default: packed_panels(PM, a, xp, i, p0, p1, r1, k0, k1, pf); break;
    }
}

TARGET void bert_f32_packed_avx2(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    float xp[PACKED_COLS * PM] __attribute__((aligned(32)));
    bert_packed_walk(a, i0, i1, r0, r1, PM, xp, packed_rows);
}

/* ---- bfloat16 on W as tiles ----------------------------------------------- */

/* A 4-byte group of a bfloat16 tile holds columns 2g and 2g + 1 of a weight
 * row as the low and high halves of one 32-bit lane, so both widen without
 * a shuffle: the even column is the lane shifted up 16 bits, the odd one
 * the lane with its low half cleared.  The float32 panel kernel's block
 * (5 rows here, see BPM) then runs on them as they are; the widening takes two integer
 * instructions per 12 FMAs, and W is half the bytes of float32's panels,
 * so a product of a few rows, which waits on W, gains, and one of many
 * rows loses little.  (Widening each block of W once into a float32
 * buffer for all rows was the alternative: it needs a buffer per thread
 * and only wins back those two instructions.) */

/* Input rows a block: 5 rows x one panel (two vectors) are 10
 * accumulators; at 6, as float32 has, GCC kept one of the 12 on the stack,
 * the even and odd vectors of a group needing registers at once. */
enum { BPM = 5 };

/* Input rows i..i+rm of x_bf16 (rows of `stride` values), columns k0..k1
 * (whole groups of 8), widened to float32 in xp, a row every PACKED_COLS
 * floats, as bert_pack_input copies float32 rows. */
TARGET BERT_INLINE void bf16_widen_input(float *xp, const bert_kernel_args *a, int stride, int rm, int i, int k0,
                                         int k1)
{
    for (int y = 0; y < rm; y++) {
        const uint16_t *x = a->x_bf16 + (size_t)(i + y) * (size_t)stride + k0;
        for (int c = 0; c < k1 - k0; c += 8) _mm256_storeu_ps(xp + (size_t)y * PACKED_COLS + c, widen(x + c));
    }
}

/* out for input rows i..i+rm (widened in xp) and the weight rows of panel
 * p below r1, over columns k0..k1 of W as bfloat16 tiles of `groups`
 * groups a row. */
TARGET BERT_INLINE void bf16_panel_block(const int rm, const bert_kernel_args *a, const float *xp, int groups, int i,
                                         int p, int r1, int k0, int k1)
{
    const uint32_t *w = (const uint32_t *)a->w->tiles + ((size_t)p * (size_t)groups + (size_t)(k0 / 2)) * BERT_PANEL;
    __m256 acc[BPM][2];
    BERT_UNROLL for (int y = 0; y < rm; y++) acc[y][0] = acc[y][1] = _mm256_setzero_ps();
    for (int g = 0; g < (k1 - k0) / 2; g++) {
        const uint32_t *wg = w + (size_t)g * BERT_PANEL;
        _mm_prefetch((const char *)(wg + PACKED_W_AHEAD * BERT_PANEL), _MM_HINT_T0);
        __m256i lanes0 = _mm256_loadu_si256((const __m256i *)wg), lanes1 = _mm256_loadu_si256((const __m256i *)(wg + 8));
        __m256 w0 = _mm256_castsi256_ps(_mm256_slli_epi32(lanes0, 16));
        __m256 w1 = _mm256_castsi256_ps(_mm256_slli_epi32(lanes1, 16));
        BERT_UNROLL for (int y = 0; y < rm; y++) {
            __m256 xb = _mm256_broadcast_ss(xp + y * PACKED_COLS + 2 * g);
            acc[y][0] = _mm256_fmadd_ps(xb, w0, acc[y][0]);
            acc[y][1] = _mm256_fmadd_ps(xb, w1, acc[y][1]);
        }
        /* Shifted down and back up rather than masked: a mask would take
         * the 16th register, and one accumulator went to the stack. */
        w0 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_srli_epi32(lanes0, 16), 16));
        w1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_srli_epi32(lanes1, 16), 16));
        BERT_UNROLL for (int y = 0; y < rm; y++) {
            __m256 xb = _mm256_broadcast_ss(xp + y * PACKED_COLS + 2 * g + 1);
            acc[y][0] = _mm256_fmadd_ps(xb, w0, acc[y][0]);
            acc[y][1] = _mm256_fmadd_ps(xb, w1, acc[y][1]);
        }
    }
    panel_out(rm, a, acc, i, p, r1, k0);
}

TARGET BERT_INLINE void bf16_panels(const int rm, const bert_kernel_args *a, const float *xp, int groups, int i,
                                    int p0, int p1, int r1, int k0, int k1)
{
    for (int p = p0; p < p1; p++) bf16_panel_block(rm, a, xp, groups, i, p, r1, k0, k1);
}

/* Weight rows r0..r1 (r0 a multiple of BERT_PANEL) against input rows
 * i0..i1 (rows of bert_tile_cols values, zero past cols, as the tiles
 * are), in bert_packed_walk's order: blocks of PACKED_COLS columns by
 * PACKED_PANELS panels (512 KB of bfloat16), the input rows BPM at a time
 * through each. */
TARGET void bert_bf16_packed_avx2(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    float xp[PACKED_COLS * BPM] __attribute__((aligned(32)));
    const int stride = bert_tile_cols(a->cols, BERT_PRECISION_BFLOAT16), groups = stride / 2;
    const int p0 = r0 / BERT_PANEL, p1 = (r1 + BERT_PANEL - 1) / BERT_PANEL;
    for (int k0 = 0; k0 < stride; k0 += PACKED_COLS) {
        const int k1 = stride - k0 < PACKED_COLS ? stride : k0 + PACKED_COLS;
        for (int q0 = p0; q0 < p1; q0 += PACKED_PANELS) {
            const int q1 = p1 - q0 < PACKED_PANELS ? p1 : q0 + PACKED_PANELS;
            for (int i = i0; i < i1; i += BPM) {
                const int rm = i1 - i < BPM ? i1 - i : BPM;
                bf16_widen_input(xp, a, stride, rm, i, k0, k1);
                switch (rm) {
                case 1: bf16_panels(1, a, xp, groups, i, q0, q1, r1, k0, k1); break;
                case 2: bf16_panels(2, a, xp, groups, i, q0, q1, r1, k0, k1); break;
                case 3: bf16_panels(3, a, xp, groups, i, q0, q1, r1, k0, k1); break;
                case 4: bf16_panels(4, a, xp, groups, i, q0, q1, r1, k0, k1); break;
                default: bf16_panels(BPM, a, xp, groups, i, q0, q1, r1, k0, k1); break;
                }
            }
        }
    }
}

TARGET void bert_f32_avx2(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    walk(F32, a, i0, i1, r0, r1);
}

TARGET void bert_bf16_avx2(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    walk(BF16_WIDEN, a, i0, i1, r0, r1);
}

TARGET void bert_int8_avx2(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    walk(INT8_SIGN, a, i0, i1, r0, r1);
}

TARGET void bert_int8_avxvnni(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    walk(INT8_VNNI, a, i0, i1, r0, r1);
}

TARGET void bert_int8_avx2_narrow(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    walk(INT8_NARROW, a, i0, i1, r0, r1);
}

/* ---- int8 on W as tiles ----------------------------------------------------- */

/* Input rows a block of the int8 panel kernel: 4 rows x one panel of 16
 * (two vectors of 8 int32 sums) are 8 accumulators; with the panel's two
 * vectors, the broadcast, the pairs and the ones, 13 of the 16 registers. */
enum { IPM = 4, ISLAB = 48 };

/* Input rows i..i+rm against panel p of W laid out as tiles (kernel_types.h:
 * a panel is a run of groups of 64 bytes, group g holding columns 4g..4g+3
 * of its 16 rows side by side), every column: the 4 bytes of a row's group
 * broadcast, times both vectors of the group, pairs summed by vpmaddubsw
 * and pairs of pairs by vpmaddwd.  No horizontal sums: each lane is one
 * weight row's sum. */
/* What the int8 panel kernel takes: 8-bit input and W by the sign trick,
 * input + 128 against W held to 7 bits, or input quantized to unsigned 7
 * bits (bert_int8_quantize_input_u7) against 8-bit W. */
enum { SIGN_TRICK, NARROW_W, INPUT_U7 };

TARGET BERT_INLINE void int8_panel_block(const int mode, const int rm, const bert_kernel_args *a, int stride,
                                         int groups, int i, int p, int r1)
{
    const unsigned char *w = (const unsigned char *)a->w->tiles + (size_t)p * groups * 64;
    const unsigned char *x = (const unsigned char *)a->x_i8 + (size_t)i * stride;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[IPM][2];
    BERT_UNROLL for (int y = 0; y < rm; y++) acc[y][0] = acc[y][1] = _mm256_setzero_si256();
    for (int g = 0; g < groups; g++) {
        _mm_prefetch((const char *)(w + (size_t)(g + 16) * 64), _MM_HINT_T0);
        __m256i w0 = _mm256_loadu_si256((const __m256i *)(w + (size_t)g * 64));
        __m256i w1 = _mm256_loadu_si256((const __m256i *)(w + (size_t)g * 64 + 32));
        BERT_UNROLL for (int y = 0; y < rm; y++) {
            int32_t four;
            memcpy(&four, x + (size_t)y * stride + 4 * (size_t)g, 4);
            __m256i xb = _mm256_set1_epi32(four);
            /* The sign trick: |x| against w carrying x's sign, the abs
             * once a row for both vectors.  Otherwise one side is already
             * unsigned and the pairs' sums fit int16 as they are
             * (2 * 255 * 63 or 2 * 127 * 127 at most). */
            const int sign = mode == SIGN_TRICK;
            __m256i xu = sign ? _mm256_abs_epi8(xb) : xb;
            __m256i v0 = sign ? _mm256_sign_epi8(w0, xb) : w0, v1 = sign ? _mm256_sign_epi8(w1, xb) : w1;
            acc[y][0] = _mm256_add_epi32(acc[y][0], _mm256_madd_epi16(_mm256_maddubs_epi16(xu, v0), ones));
            acc[y][1] = _mm256_add_epi32(acc[y][1], _mm256_madd_epi16(_mm256_maddubs_epi16(xu, v1), ones));
        }
    }
    int r = p * BERT_PANEL, valid = r1 - r < BERT_PANEL ? r1 - r : BERT_PANEL;
    BERT_UNROLL for (int y = 0; y < rm; y++) {
        const int32_t offset = mode == SIGN_TRICK ? 0 : mode == NARROW_W ? 128 : a->x_zero[i + y];
        int32_t sums[BERT_PANEL];
        _mm256_storeu_si256((__m256i *)sums, acc[y][0]);
        _mm256_storeu_si256((__m256i *)(sums + 8), acc[y][1]);
        float *o = a->out + (size_t)(i + y) * a->rows;
        for (int e = 0; e < valid; e++)
            o[r + e] = bert_int8_output(sums[e] - offset * a->w->row_sum[r + e], a->x_scale[i + y],
                                        a->w->scale[r + e], a->b, r + e);
    }
}

/* Input rows i0..i1 (rows of bert_tile_cols values, the tiles' width)
 * against weight rows r0..r1 (r0 a multiple of BERT_PANEL): slabs of ISLAB
 * input rows, each through every panel, a panel (12 KB at 768 columns)
 * staying in L1 while the slab's blocks of rows pass it. */
TARGET BERT_INLINE void int8_packed(const int mode, const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    const int stride = bert_tile_cols(a->cols, BERT_PRECISION_INT8), groups = stride / 4;
    const int p0 = r0 / BERT_PANEL, p1 = (r1 + BERT_PANEL - 1) / BERT_PANEL;
    for (int s = i0; s < i1; s += ISLAB) {
        const int s1 = i1 - s < ISLAB ? i1 : s + ISLAB;
        for (int p = p0; p < p1; p++) {
            int i = s;
            for (; i + IPM <= s1; i += IPM) int8_panel_block(mode, IPM, a, stride, groups, i, p, r1);
            switch (s1 - i) {
            case 1: int8_panel_block(mode, 1, a, stride, groups, i, p, r1); break;
            case 2: int8_panel_block(mode, 2, a, stride, groups, i, p, r1); break;
            case 3: int8_panel_block(mode, 3, a, stride, groups, i, p, r1); break;
            default: break;
            }
        }
    }
}

TARGET void bert_int8_packed_avx2(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    int8_packed(SIGN_TRICK, a, i0, i1, r0, r1);
}

TARGET void bert_int8_packed_avx2_u7(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    int8_packed(INPUT_U7, a, i0, i1, r0, r1);
}

TARGET void bert_int8_packed_avx2_narrow(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    int8_packed(NARROW_W, a, i0, i1, r0, r1);
}

#endif
