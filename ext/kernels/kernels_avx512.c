/*
 * kernels_avx512.c - the projection kernels on AVX-512 (isa_kernels.h):
 * blocks of 4 input rows x 6 weight rows, 24 accumulators of 512 bits
 * (with the input vectors and one weight vector, the 32 registers).
 *
 *   bert_f32_avx512        float32, FMA, 16 columns a step
 *   bert_bf16_avx512       bfloat16 widened to float32 in registers, FMA, 16 a step
 *   bert_bf16_avx512bf16   vdpbf16ps (AVX512_BF16): pairs of bfloat16 products, 32 a step
 *   bert_int8_avx512vnni   vpdpbusd (AVX512_VNNI): groups of four byte products, 64 a step
 *   bert_f32_packed_avx512 float32 on W packed at load (linear.h, BERT_PANEL):
 *                          blocks of 12 input rows x 2 panels, see packed_block;
 *                          any number of rows (it takes the long texts too)
 *
 * All four are one block function (block) and one walk over blocks (walk),
 * given the precision as a constant that the compiler folds.  The file is
 * compiled for every extension the kernels use (TARGET), and the table in
 * kernels.c runs each kernel only where the CPU has its own: a kernel's
 * code holds only the instructions of its precision's branch.
 */
#include "isa_kernels.h"

#ifdef BERT_X86_KERNELS
#include "hsum_x86.h"

#include <immintrin.h>

#define TARGET __attribute__((target("avx512f,avx512bw,avx512bf16,avx512vnni,fma")))

enum { RM = 4, RN = 6 };

/* What a block computes: the precision and its instructions. */
typedef enum { F32, BF16_WIDEN, BF16_DOT, INT8_VNNI } kind;

/* Columns a step. */
TARGET BERT_INLINE int step_of(kind k)
{
    return k == INT8_VNNI ? 64 : k == BF16_DOT ? 32 : 16;
}

/* bfloat16 to float32 is a shift into the upper half. */
TARGET BERT_INLINE __m512 widen(const uint16_t *p)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16));
}

/* One step's vector of row `row` at column c: of the input (x) or of W. */
TARGET BERT_INLINE __m512i load(kind k, const bert_kernel_args *a, int input, size_t row, int c)
{
    size_t at = row * (size_t)a->cols + (size_t)c;
    switch (k) {
    case F32: return _mm512_castps_si512(_mm512_loadu_ps((input ? a->x_f32 : a->w->f32) + at));
    case BF16_WIDEN: return _mm512_castps_si512(widen((input ? a->x_bf16 : a->w->bf16) + at));
    case BF16_DOT: return _mm512_loadu_si512((input ? a->x_bf16 : a->w->bf16) + at);
    default: return _mm512_loadu_si512((input ? a->x_i8 : a->w->i8) + at);
    }
}

/* acc + the dot products of 4-byte groups of u (unsigned) and s (signed).
 * Written out because GCC 12 copies the accumulators between registers
 * around the intrinsic's tied operand, and spills them: a third slower. */
TARGET BERT_INLINE __m512i dpbusd(__m512i acc, __m512i u, __m512i s)
{
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "vm"(s));
    return acc;
}

/* acc + x w, lane by lane, in the block's kind of sums. */
TARGET BERT_INLINE __m512i multiply_add(kind k, __m512i acc, __m512i x, __m512i w)
{
    switch (k) {
    case F32:
    case BF16_WIDEN:
        return _mm512_castps_si512(_mm512_fmadd_ps(_mm512_castsi512_ps(x), _mm512_castsi512_ps(w),
                                                   _mm512_castsi512_ps(acc)));
    case BF16_DOT:
        return _mm512_castps_si512(_mm512_dpbf16_ps(_mm512_castsi512_ps(acc), (__m512bh)x, (__m512bh)w));
    default:
        return dpbusd(acc, x, w);
    }
}

/* out for input rows i..i+rm and weight rows r..r+rn; rm and rn are
 * literals at every call, so that the loops over them unroll and acc[][]
 * lives in registers. */
TARGET BERT_INLINE void block(kind k, const int rm, const int rn, const bert_kernel_args *a, int i, int r,
                              bert_prefetcher *pf)
{
    int step = step_of(k), body = a->cols - a->cols % step;
    __m512i acc[RM][RN];
    BERT_UNROLL for (int y = 0; y < rm; y++) BERT_UNROLL for (int e = 0; e < rn; e++) acc[y][e] = _mm512_setzero_si512();
    for (int c = 0; c < body; c += step) {
        for (int p = 0; p < pf->per_step && pf->at < pf->end; p++, pf->at += 64) _mm_prefetch(pf->at, _MM_HINT_T1);
        __m512i xv[RM];
        BERT_UNROLL for (int y = 0; y < rm; y++) xv[y] = load(k, a, 1, (size_t)(i + y), c);
        BERT_UNROLL for (int e = 0; e < rn; e++) {
            __m512i wv = load(k, a, 0, (size_t)(r + e), c);
            BERT_UNROLL for (int y = 0; y < rm; y++) acc[y][e] = multiply_add(k, acc[y][e], xv[y], wv);
        }
    }
    /* The sums of the accumulators, four at a time. */
    __m512i list[RM * RN + 3];
    int count = 0;
    BERT_UNROLL for (int y = 0; y < rm; y++) BERT_UNROLL for (int e = 0; e < rn; e++) list[count++] = acc[y][e];
    BERT_UNROLL for (int g = count; g % 4 != 0; g++) list[g] = _mm512_setzero_si512();
    union {
        float f[RM * RN + 3];
        int32_t i[RM * RN + 3];
    } sums;
    BERT_UNROLL for (int g = 0; g < count; g += 4) {
        if (k == INT8_VNNI)
            _mm_storeu_si128((__m128i *)(sums.i + g), hsum4_512i(list[g], list[g + 1], list[g + 2], list[g + 3]));
        else
            _mm_storeu_ps(sums.f + g, hsum4_512(_mm512_castsi512_ps(list[g]), _mm512_castsi512_ps(list[g + 1]),
                                                _mm512_castsi512_ps(list[g + 2]), _mm512_castsi512_ps(list[g + 3])));
    }
    BERT_UNROLL for (int y = 0; y < rm; y++) BERT_UNROLL for (int e = 0; e < rn; e++) {
        float *o = a->out + (size_t)(i + y) * a->rows + r + e;
        if (k == INT8_VNNI) {
            /* The input went in shifted by 128, to unsigned bytes: 128 times
             * the weight row's sum comes back off. */
            int32_t s = sums.i[y * rn + e] + bert_tail_int(a, i + y, r + e, body, 128) - 128 * a->w->row_sum[r + e];
            *o = bert_int8_output(s, a->x_scale[i + y], a->w->scale[r + e], a->b, r + e);
        } else {
            float v = sums.f[y * rn + e] + bert_tail_float(a, i + y, r + e, body);
            *o = a->b ? v + a->b[r + e] : v;
        }
    }
}

/* Input rows i0..i1 through one block of rn weight rows. */
TARGET BERT_INLINE void rows_through(kind k, const int rn, const bert_kernel_args *a, int i0, int i1, int r,
                                     bert_prefetcher *pf)
{
    int i = i0;
    for (; i + RM <= i1; i += RM) block(k, RM, rn, a, i, r, pf);
    switch (i1 - i) {
    case 1: block(k, 1, rn, a, i, r, pf); break;
    case 2: block(k, 2, rn, a, i, r, pf); break;
    case 3: block(k, 3, rn, a, i, r, pf); break;
    default: break;
    }
}

/* Every block of weight rows r0..r1, each through input rows i0..i1. */
TARGET BERT_INLINE void walk(kind k, const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    size_t elem = k == F32 ? 4 : k == INT8_VNNI ? 1 : 2;
    const void *w = k == F32 ? (const void *)a->w->f32 : k == INT8_VNNI ? (const void *)a->w->i8 : (const void *)a->w->bf16;
    size_t row_bytes = (size_t)a->cols * elem;
    bert_prefetcher pf = bert_prefetcher_for(row_bytes, RN, i0, i1, RM, a->cols, step_of(k));
    int r = r0;
    for (; r + RN <= r1; r += RN) {
        bert_prefetcher_aim(&pf, w, row_bytes, r, RN, r1);
        rows_through(k, RN, a, i0, i1, r, &pf);
    }
    pf.at = pf.end = NULL;
    switch (r1 - r) {
    case 1: rows_through(k, 1, a, i0, i1, r, &pf); break;
    case 2: rows_through(k, 2, a, i0, i1, r, &pf); break;
    case 3: rows_through(k, 3, a, i0, i1, r, &pf); break;
    case 4: rows_through(k, 4, a, i0, i1, r, &pf); break;
    case 5: rows_through(k, 5, a, i0, i1, r, &pf); break;
    default: break;
    }
}

/* ---- float32 on packed panels ------------------------------------------- */

/* Input rows a packed block: 12 rows x 2 panels of 16 are 24 accumulators,
 * with the two weight vectors and a broadcast 27 of the 32 registers.  A
 * step loads 2 weight vectors and 12 input values for 24 FMAs, where the
 * dot-product blocks above load 10 vectors for 24. */
enum { PM = 12 };

/* out for the packed input rows i..i+rm (xp) and the weight rows of panels
 * p..p+np below r1, over columns k0..k1 of W: set (bias added) at k0 = 0,
 * else added to. */
TARGET BERT_INLINE void packed_block(const int rm, const int np, const bert_kernel_args *a, const float *xp, int i,
                                     int p, int r1, int k0, int k1, bert_input_prefetch *pf)
{
    const int cols = a->cols;
    const float *w = a->w->f32_packed + ((size_t)p * cols + k0) * BERT_PANEL;
    __m512 acc[PM][2];
    BERT_UNROLL for (int y = 0; y < rm; y++) BERT_UNROLL for (int e = 0; e < np; e++) acc[y][e] = _mm512_setzero_ps();
    bert_input_prefetch_block(pf);
    for (int c = 0; c < k1 - k0; c++) {
        _mm_prefetch((const char *)(w + (size_t)(c + PACKED_W_AHEAD) * BERT_PANEL), _MM_HINT_T0);
        if (np > 1) _mm_prefetch((const char *)(w + ((size_t)cols + c + PACKED_W_AHEAD) * BERT_PANEL), _MM_HINT_T0);
        __m512 w0 = _mm512_loadu_ps(w + (size_t)c * BERT_PANEL);
        __m512 w1 = np > 1 ? _mm512_loadu_ps(w + ((size_t)cols + c) * BERT_PANEL) : w0;
        BERT_UNROLL for (int y = 0; y < rm; y++) {
            __m512 xb = _mm512_set1_ps(xp[y * PACKED_COLS + c]);
            acc[y][0] = _mm512_fmadd_ps(xb, w0, acc[y][0]);
            if (np > 1) acc[y][1] = _mm512_fmadd_ps(xb, w1, acc[y][1]);
        }
    }
    BERT_UNROLL for (int e = 0; e < np; e++) {
        int r = (p + e) * BERT_PANEL;
        if (r >= r1) break;
        __mmask16 mask = r1 - r >= BERT_PANEL ? (__mmask16)0xffff : (__mmask16)((1u << (r1 - r)) - 1);
        __m512 bias = k0 == 0 && a->b ? _mm512_maskz_loadu_ps(mask, a->b + r) : _mm512_setzero_ps();
        BERT_UNROLL for (int y = 0; y < rm; y++) {
            float *o = a->out + (size_t)(i + y) * a->rows + r;
            __m512 before = k0 == 0 ? bias : _mm512_maskz_loadu_ps(mask, o);
            _mm512_mask_storeu_ps(o, mask, _mm512_add_ps(acc[y][e], before));
        }
    }
}

/* Input rows i..i+rm (packed in xp) through panels p0..p1, in pairs. */
TARGET BERT_INLINE void packed_panels(const int rm, const bert_kernel_args *a, const float *xp, int i, int p0,
                                      int p1, int r1, int k0, int k1, bert_input_prefetch *pf)
{
    int p = p0;
    for (; p + 2 <= p1; p += 2) packed_block(rm, 2, a, xp, i, p, r1, k0, k1, pf);
    if (p < p1) packed_block(rm, 1, a, xp, i, p, r1, k0, k1, pf);
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
    case 6: packed_panels(6, a, xp, i, p0, p1, r1, k0, k1, pf); break;
    case 7: packed_panels(7, a, xp, i, p0, p1, r1, k0, k1, pf); break;
    case 8: packed_panels(8, a, xp, i, p0, p1, r1, k0, k1, pf); break;
    case 9: packed_panels(9, a, xp, i, p0, p1, r1, k0, k1, pf); break;
    case 10: packed_panels(10, a, xp, i, p0, p1, r1, k0, k1, pf); break;
    case 11: packed_panels(11, a, xp, i, p0, p1, r1, k0, k1, pf); break;
    default: packed_panels(PM, a, xp, i, p0, p1, r1, k0, k1, pf); break;
    }
}

TARGET void bert_f32_packed_avx512(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    float xp[PACKED_COLS * PM] __attribute__((aligned(64)));
    bert_packed_walk(a, i0, i1, r0, r1, PM, xp, packed_rows);
}

TARGET void bert_f32_avx512(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    walk(F32, a, i0, i1, r0, r1);
}

TARGET void bert_bf16_avx512(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    walk(BF16_WIDEN, a, i0, i1, r0, r1);
}

TARGET void bert_bf16_avx512bf16(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    walk(BF16_DOT, a, i0, i1, r0, r1);
}

TARGET void bert_int8_avx512vnni(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    walk(INT8_VNNI, a, i0, i1, r0, r1);
}

#endif
