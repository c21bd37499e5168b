/*
 * linear_lowp.c - out = in W^T + b with W held as bfloat16 or as int8 with
 * one scale per weight row (linear.h, "reduced precision").
 *
 * Input rows are prepared once per call, on the calling thread, before the
 * product is shared out: for int8 they are quantized (one scale a row), so
 * that every chunk of weight rows reads the same quantized rows.  The
 * product is then split over the plan's threads as bert_linear splits its
 * own: chunks of weight rows for a few input rows, chunks of input rows for
 * many.
 *
 * int8 sums are exact int32 sums, so the result of every kernel is a
 * function of the quantized values alone: the final scaling is written once
 * (int8_finish) and every kernel goes through it.
 */
#include "kernels_neon.h"
#include "linear.h"
#include "workers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The least rows of a span: a multiple of the kernels' blocks (4 and 6, 3
 * and 4) and slabs. */
#define LEAST_ROWS 48

const char *bert_precision_name(bert_precision p)
{
    switch (p) {
    case BERT_PRECISION_BFLOAT16: return "bfloat16";
    case BERT_PRECISION_INT8: return "int8";
    default: return "float32";
    }
}

int bert_precision_parse(const char *name, bert_precision *out)
{
    static const bert_precision all[] = {BERT_PRECISION_FLOAT32, BERT_PRECISION_BFLOAT16, BERT_PRECISION_INT8};
    for (size_t i = 0; name && i < sizeof all / sizeof *all; i++)
        if (strcmp(name, bert_precision_name(all[i])) == 0) {
            *out = all[i];
            return 0;
        }
    return -1;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Without branches, so that the compiler vectorizes it. */
BERT_INLINE void bf16_rows_body(uint16_t *out, const float *in, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u = f32_bits(in[i]);
        /* Round to nearest, ties to the even upper half; a carry out of the
         * mantissa steps the exponent, up to infinity, as it should.  A NaN
         * whose payload sits in the low half would round to infinity: it
         * keeps its sign and gets the quiet bit instead. */
        uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        uint32_t quiet = (u >> 16) | 0x0040u;
        out[i] = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
    }
}

BERT_MULTIVERSION(bf16_rows, (uint16_t *out, const float *in, size_t n), (out, in, n))

void bert_bf16_from_f32(uint16_t *out, const float *in, size_t n)
{
    bf16_rows(BERT_ISA_BASE, out, in, n);
}

/* One value times 127 / max|row|, rounded to even, within [-127, 127]; 0
 * for NaN.  The vector quantizers below compute exactly this. */
static inline int8_t quantize_one(float v, float inverse)
{
    float r = nearbyintf(v * inverse);
    r = r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r;
    return r == r ? (int8_t)r : 0;
}

/* max|v| over a row, NaNs ignored; from `top`, the largest of columns
 * 0..c0 already looked at. */
static float row_top(const float *v, int c0, int cols, float top)
{
    for (int c = c0; c < cols; c++) {
        float a = fabsf(v[c]);
        if (a > top) top = a;
    }
    return top;
}

/* 1 when a row of largest magnitude `top` quantizes to zeros: all zero, or
 * not finite (an overflow upstream, which no scale can represent). */
static int row_is_zero(float top) { return !(top > 0.0f) || !isfinite(top); }

/* Quantizes one row: q = quantize_one(v, 127 / max|v|); returns the scale
 * max|v| / 127 (0 for an all-zero row, whose q are all 0) and stores the
 * sum of q in *sum when sum is not NULL. */
static float quantize_row(int8_t *q, const float *v, int cols, int32_t *sum)
{
    float top = row_top(v, 0, cols, 0.0f);
    int32_t total = 0;
    if (row_is_zero(top)) {
        memset(q, 0, (size_t)cols);
        if (sum) *sum = 0;
        return 0.0f;
    }
    float inverse = 127.0f / top;
    for (int c = 0; c < cols; c++) {
        q[c] = quantize_one(v[c], inverse);
        total += q[c];
    }
    if (sum) *sum = total;
    return top / 127.0f;
}

void bert_int8_quantize_rows(int8_t *q, float *scale, int32_t *row_sum, const float *w, int rows, int cols)
{
    for (int r = 0; r < rows; r++)
        scale[r] = quantize_row(q + (size_t)r * cols, w + (size_t)r * cols, cols, &row_sum[r]);
}

/* One output of an int8 product from its exact int32 sum; every kernel
 * ends here, so all agree to the bit. */
static inline float int8_finish(int32_t sum, float xscale, float wscale, const float *b, int r)
{
    float v = (float)sum * (xscale * wscale);
    return b ? v + b[r] : v;
}

void bert_linear_scratch_free(bert_linear_scratch *s)
{
    if (!s) return;
    free(s->data);
    s->data = NULL;
    s->size = 0;
}

/* ---- the kernels ----------------------------------------------------------
 *
 * Every kernel computes out[i][r] for input rows i0..i1 and weight rows
 * r0..r1 of one job.  The vector kernels have the shape of linear.c's
 * few-rows kernel: a block of input rows against a block of weight rows, one
 * accumulator a pair held in a register, dot products of contiguous rows
 * summed across the vector at the end, the next weight block prefetched
 * while the first input rows go through the current one.  Columns past the
 * last whole vector are summed in scalar code. */

typedef struct {
    bert_lowp_kernel kernel;
    const bert_matrix *w;
    float *out;
    const uint16_t *xb;     /* bfloat16: the input rows rounded to bfloat16 */
    const int8_t *qx;       /* int8: the quantized input rows */
    const float *xscale;    /* int8: their scales */
    const float *b;
    int n, rows, cols;
} lowp_job;

static void bf16_portable(const lowp_job *j, int i0, int i1, int r0, int r1)
{
    int cols = j->cols, body = cols - cols % 16;
    for (int i = i0; i < i1; i++) {
        const uint16_t *x = j->xb + (size_t)i * cols;
        for (int r = r0; r < r1; r++) {
            const uint16_t *w = j->w->bf16 + (size_t)r * cols;
            /* 16 running sums, one per column modulo 16, which the compiler
             * can keep in one vector. */
            float lane[16] = {0};
            for (int c = 0; c < body; c += 16)
                for (int l = 0; l < 16; l++) lane[l] += bert_f32_from_bf16(x[c + l]) * bert_f32_from_bf16(w[c + l]);
            for (int c = body; c < cols; c++) lane[0] += bert_f32_from_bf16(x[c]) * bert_f32_from_bf16(w[c]);
            float sum = 0.0f;
            for (int l = 0; l < 16; l++) sum += lane[l];
            j->out[(size_t)i * j->rows + r] = j->b ? sum + j->b[r] : sum;
        }
    }
}

static void int8_portable(const lowp_job *j, int i0, int i1, int r0, int r1)
{
    int cols = j->cols;
    for (int i = i0; i < i1; i++) {
        const int8_t *x = j->qx + (size_t)i * cols;
        for (int r = r0; r < r1; r++) {
            const int8_t *w = j->w->i8 + (size_t)r * cols;
            int32_t sum = 0;
            for (int c = 0; c < cols; c++) sum += (int32_t)x[c] * w[c];
            j->out[(size_t)i * j->rows + r] = int8_finish(sum, j->xscale[i], j->w->scale[r], j->b, r);
        }
    }
}

#ifdef BERT_X86_KERNELS
#include "hsum_x86.h"

#define BERT_TARGET_AVX512BW __attribute__((target("avx512f,avx512bw,fma")))
#define BERT_TARGET_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16,fma")))
#define BERT_TARGET_VNNI512 __attribute__((target("avx512f,avx512bw,avx512vnni,fma")))
#define BERT_TARGET_AVXVNNI __attribute__((target("avx2,fma,avxvnni")))

/* Block sizes: 4 x 6 accumulators of 512 bits, 3 x 4 of 256 (with the
 * input vectors and one weight vector, the 32 or 16 registers). */
enum { RM512 = 4, RN512 = 6, RM256 = 3, RN256 = 4 };

/* k when below K, else 1: a literal for the unreachable cases of a switch
 * that blocks of another size share, which must still compile. */
#define CAP(k, K) ((k) < (K) ? (k) : 1)

/* The end of a float block: sums of the accumulators plus the scalar tails
 * and the bias, into out. */
#define FINISH_FLOAT(VEC, ZERO, HSUM, RM, RN)                                                        \
    do {                                                                                             \
        VEC list[RM * RN];                                                                           \
        float sums[RM * RN];                                                                         \
        int count = 0;                                                                               \
        BERT_UNROLL for (int a = 0; a < rm; a++) BERT_UNROLL for (int e = 0; e < rn; e++) list[count++] = acc[a][e]; \
        BERT_UNROLL for (int g = count; g % 4 != 0; g++) list[g] = ZERO;                             \
        BERT_UNROLL for (int g = 0; g < count; g += 4)                                               \
            _mm_storeu_ps(sums + g, HSUM(list[g], list[g + 1], list[g + 2], list[g + 3]));           \
        BERT_UNROLL for (int a = 0; a < rm; a++) BERT_UNROLL for (int e = 0; e < rn; e++) {          \
            float v = sums[a * rn + e] + tail[a][e];                                                 \
            j->out[(size_t)(i + a) * j->rows + r + e] = j->b ? v + j->b[r + e] : v;                  \
        }                                                                                            \
    } while (0)

/* The end of an int8 block: exact sums, less `offset` times the row sums
 * (128 for unsigned-by-signed products), through int8_finish. */
#define FINISH_INT(VEC, ZERO, HSUM, RM, RN, offset)                                                  \
    do {                                                                                             \
        VEC list[RM * RN];                                                                           \
        int32_t sums[RM * RN];                                                                       \
        int count = 0;                                                                               \
        BERT_UNROLL for (int a = 0; a < rm; a++) BERT_UNROLL for (int e = 0; e < rn; e++) list[count++] = acc[a][e]; \
        BERT_UNROLL for (int g = count; g % 4 != 0; g++) list[g] = ZERO;                             \
        BERT_UNROLL for (int g = 0; g < count; g += 4)                                               \
            _mm_storeu_si128((__m128i *)(sums + g), HSUM(list[g], list[g + 1], list[g + 2], list[g + 3])); \
        BERT_UNROLL for (int a = 0; a < rm; a++) BERT_UNROLL for (int e = 0; e < rn; e++) {          \
            int32_t s = sums[a * rn + e] + tail[a][e] - (offset) * j->w->row_sum[r + e];             \
            j->out[(size_t)(i + a) * j->rows + r + e] =                                              \
                int8_finish(s, j->xscale[i + a], j->w->scale[r + e], j->b, r + e);                   \
        }                                                                                            \
    } while (0)

/* The weight block a few blocks ahead, fetched a few lines at each step of
 * every block of input rows, so that requests to memory stay in flight
 * while the current block is computed (one burst at its start leaves the
 * rest of the time unused, and a sentence's rows take W from RAM). */
typedef struct {
    const char *at, *end; /* lines still to fetch */
    int per_step;         /* lines a step */
} prefetcher;

/* Weight blocks between the one computed and the one fetched. */
#define PREFETCH_AHEAD 2

/* Into L2 rather than L1: requests to L1 stall the loop once its few miss
 * slots are taken (15% of a bfloat16 product's time at 16 rows); into L2
 * more are in flight, and the loads then find W there.  Measured, 16 rows
 * of 768x768: bfloat16 119 -> 146-162 GFLOP/s, int8 213 -> 206-223. */

static inline void prefetch_step(prefetcher *pf)
{
    for (int p = 0; p < pf->per_step && pf->at < pf->end; p++, pf->at += 64) _mm_prefetch(pf->at, _MM_HINT_T1);
}

/* The float tails: columns body..cols of bfloat16 rows. */
#define TAIL_BF16()                                                                                  \
    float tail[RM512 > RM256 ? RM512 : RM256][RN512 > RN256 ? RN512 : RN256] = {{0}};                \
    for (int c = body; c < cols; c++)                                                                \
        BERT_UNROLL for (int a = 0; a < rm; a++) BERT_UNROLL for (int e = 0; e < rn; e++)            \
            tail[a][e] += bert_f32_from_bf16(x[(size_t)a * cols + c]) * bert_f32_from_bf16(w[(size_t)e * cols + c])

/* The int tails, with the input shifted by `offset`. */
#define TAIL_INT(offset)                                                                             \
    int32_t tail[RM512 > RM256 ? RM512 : RM256][RN512 > RN256 ? RN512 : RN256] = {{0}};              \
    for (int c = body; c < cols; c++)                                                                \
        BERT_UNROLL for (int a = 0; a < rm; a++) BERT_UNROLL for (int e = 0; e < rn; e++)            \
            tail[a][e] += ((int32_t)x[(size_t)a * cols + c] + (offset)) * w[(size_t)e * cols + c]

/* ---- bfloat16, vdpbf16ps: 32 columns a step, pairs of products summed in
 * float32 by the instruction. */
BERT_TARGET_BF16 BERT_INLINE void bf16dp_block(const int rm, const int rn, const lowp_job *j, int i, int r,
                                              prefetcher *pf)
{
    int cols = j->cols, body = cols - cols % 32;
    const uint16_t *x = j->xb + (size_t)i * cols, *w = j->w->bf16 + (size_t)r * cols;
    __m512 acc[RM512][RN512];
    BERT_UNROLL for (int a = 0; a < rm; a++) BERT_UNROLL for (int e = 0; e < rn; e++) acc[a][e] = _mm512_setzero_ps();
    for (int k = 0; k < body; k += 32) {
        prefetch_step(pf);
        __m512bh xv[RM512];
        BERT_UNROLL for (int a = 0; a < rm; a++) xv[a] = (__m512bh)_mm512_loadu_si512(x + (size_t)a * cols + k);
        BERT_UNROLL for (int e = 0; e < rn; e++) {
            __m512bh wv = (__m512bh)_mm512_loadu_si512(w + (size_t)e * cols + k);
            BERT_UNROLL for (int a = 0; a < rm; a++) acc[a][e] = _mm512_dpbf16_ps(acc[a][e], xv[a], wv);
        }
    }
    TAIL_BF16();
    FINISH_FLOAT(__m512, _mm512_setzero_ps(), hsum4_512, RM512, RN512);
}

/* bfloat16 to float32 is a shift into the upper half. */
BERT_TARGET_AVX512BW BERT_INLINE __m512 widen512(const uint16_t *p)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16));
}

BERT_TARGET_AVX2 BERT_INLINE __m256 widen256(const uint16_t *p)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
}

/* ---- bfloat16 widened in registers, FMA, 512-bit: 16 columns a step. */
BERT_TARGET_AVX512BW BERT_INLINE void bf16w512_block(const int rm, const int rn, const lowp_job *j, int i, int r,
                                                    prefetcher *pf)
{
    int cols = j->cols, body = cols - cols % 16;
    const uint16_t *x = j->xb + (size_t)i * cols, *w = j->w->bf16 + (size_t)r * cols;
    __m512 acc[RM512][RN512];
    BERT_UNROLL for (int a = 0; a < rm; a++) BERT_UNROLL for (int e = 0; e < rn; e++) acc[a][e] = _mm512_setzero_ps();
    for (int k = 0; k < body; k += 16) {
        prefetch_step(pf);
        __m512 xv[RM512];
        BERT_UNROLL for (int a = 0; a < rm; a++) xv[a] = widen512(x + (size_t)a * cols + k);
        BERT_UNROLL for (int e = 0; e < rn; e++) {
            __m512 wv = widen512(w + (size_t)e * cols + k);
            BERT_UNROLL for (int a = 0; a < rm; a++) acc[a][e] = _mm512_fmadd_ps(xv[a], wv, acc[a][e]);
        }
    }
    TAIL_BF16();
    FINISH_FLOAT(__m512, _mm512_setzero_ps(), hsum4_512, RM512, RN512);
}

/* ---- bfloat16 widened in registers, FMA, 256-bit: 8 columns a step. */
BERT_TARGET_AVX2 BERT_INLINE void bf16w256_block(const int rm, const int rn, const lowp_job *j, int i, int r,
                                                prefetcher *pf)
{
    int cols = j->cols, body = cols - cols % 8;
    const uint16_t *x = j->xb + (size_t)i * cols, *w = j->w->bf16 + (size_t)r * cols;
    __m256 acc[RM256][RN256];
    BERT_UNROLL for (int a = 0; a < rm; a++) BERT_UNROLL for (int e = 0; e < rn; e++) acc[a][e] = _mm256_setzero_ps();
    for (int k = 0; k < body; k += 8) {
        prefetch_step(pf);
        __m256 xv[RM256];
        BERT_UNROLL for (int a = 0; a < rm; a++) xv[a] = widen256(x + (size_t)a * cols + k);
        BERT_UNROLL for (int e = 0; e < rn; e++) {
            __m256 wv = widen256(w + (size_t)e * cols + k);
            BERT_UNROLL for (int a = 0; a < rm; a++) acc[a][e] = _mm256_fmadd_ps(xv[a], wv, acc[a][e]);
        }
    }
    TAIL_BF16();
    FINISH_FLOAT(__m256, _mm256_setzero_ps(), hsum4_256, RM256, RN256);
}

/* ---- int8, vpdpbusd, 512-bit: 64 columns a step.  The instruction takes
 * one operand unsigned: the input, quantized shifted by 128 (its top bit
 * flipped, quantize_input's `flip`); FINISH_INT takes 128 times the weight
 * row's sum back off. */
/* acc + the dot products of 4-byte groups of a (unsigned) and b (signed).
 * Written out because GCC 12 copies the accumulators between registers
 * around the intrinsic's tied operand, and spills them: a third slower. */
BERT_TARGET_VNNI512 BERT_INLINE __m512i dpbusd512(__m512i acc, __m512i a, __m512i b)
{
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "vm"(b));
    return acc;
}

BERT_TARGET_VNNI512 BERT_INLINE void vnni512_block(const int rm, const int rn, const lowp_job *j, int i, int r,
                                                  prefetcher *pf)
{
    int cols = j->cols, body = cols - cols % 64;
    const uint8_t *x = (const uint8_t *)j->qx + (size_t)i * cols;
    const int8_t *w = j->w->i8 + (size_t)r * cols;
    __m512i acc[RM512][RN512];
    BERT_UNROLL for (int a = 0; a < rm; a++) BERT_UNROLL for (int e = 0; e < rn; e++) acc[a][e] = _mm512_setzero_si512();
    for (int k = 0; k < body; k += 64) {
        prefetch_step(pf);
        __m512i xv[RM512];
        BERT_UNROLL for (int a = 0; a < rm; a++) xv[a] = _mm512_loadu_si512(x + (size_t)a * cols + k);
        BERT_UNROLL for (int e = 0; e < rn; e++) {
            __m512i wv = _mm512_loadu_si512(w + (size_t)e * cols + k);
            BERT_UNROLL for (int a = 0; a < rm; a++) acc[a][e] = dpbusd512(acc[a][e], xv[a], wv);
        }
    }
    TAIL_INT(0);
    FINISH_INT(__m512i, _mm512_setzero_si512(), hsum4_512i, RM512, RN512, 128);
}

/* As dpbusd512, the VEX-encoded instruction on 256 bits (registers 0-15). */
BERT_TARGET_AVXVNNI BERT_INLINE __m256i dpbusd256(__m256i acc, __m256i a, __m256i b)
{
    __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(a), "xm"(b));
    return acc;
}

/* ---- int8, vpdpbusd, 256-bit (AVX-VNNI): 32 columns a step, as above. */
BERT_TARGET_AVXVNNI BERT_INLINE void avxvnni_block(const int rm, const int rn, const lowp_job *j, int i, int r,
                                                  prefetcher *pf)
{
    int cols = j->cols, body = cols - cols % 32;
    const uint8_t *x = (const uint8_t *)j->qx + (size_t)i * cols;
    const int8_t *w = j->w->i8 + (size_t)r * cols;
    __m256i acc[RM256][RN256];
    BERT_UNROLL for (int a = 0; a < rm; a++) BERT_UNROLL for (int e = 0; e < rn; e++) acc[a][e] = _mm256_setzero_si256();
    for (int k = 0; k < body; k += 32) {
        prefetch_step(pf);
        __m256i xv[RM256];
        BERT_UNROLL for (int a = 0; a < rm; a++) xv[a] = _mm256_loadu_si256((const __m256i *)(x + (size_t)a * cols + k));
        BERT_UNROLL for (int e = 0; e < rn; e++) {
            __m256i wv = _mm256_loadu_si256((const __m256i *)(w + (size_t)e * cols + k));
            BERT_UNROLL for (int a = 0; a < rm; a++) acc[a][e] = dpbusd256(acc[a][e], xv[a], wv);
        }
    }
    TAIL_INT(0);
    FINISH_INT(__m256i, _mm256_setzero_si256(), hsum4_256i, RM256, RN256, 128);
}

/* ---- int8, AVX2: both sides widened to int16, vpmaddwd sums pairs of
 * products (at most 2 * 128 * 128, exact) into int32: 16 columns a step. */
BERT_TARGET_AVX2 BERT_INLINE void int8avx2_block(const int rm, const int rn, const lowp_job *j, int i, int r,
                                                prefetcher *pf)
{
    int cols = j->cols, body = cols - cols % 16;
    const int8_t *x = j->qx + (size_t)i * cols, *w = j->w->i8 + (size_t)r * cols;
    __m256i acc[RM256][RN256];
    BERT_UNROLL for (int a = 0; a < rm; a++) BERT_UNROLL for (int e = 0; e < rn; e++) acc[a][e] = _mm256_setzero_si256();
    for (int k = 0; k < body; k += 16) {
        prefetch_step(pf);
        __m256i xv[RM256];
        BERT_UNROLL for (int a = 0; a < rm; a++)
            xv[a] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(x + (size_t)a * cols + k)));
        BERT_UNROLL for (int e = 0; e < rn; e++) {
            __m256i wv = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(w + (size_t)e * cols + k)));
            BERT_UNROLL for (int a = 0; a < rm; a++) acc[a][e] = _mm256_add_epi32(acc[a][e], _mm256_madd_epi16(xv[a], wv));
        }
    }
    TAIL_INT(0);
    FINISH_INT(__m256i, _mm256_setzero_si256(), hsum4_256i, RM256, RN256, 0);
}

/* The walk over blocks, for each kernel: NAME##_rows takes every input row
 * i0..i1 through one block of rn weight rows; NAME##_walk every block of
 * weight rows r0..r1. */
#define DEFINE_WALK(NAME, TARGET, RM, RN, ELEM, STEP)                                                \
    TARGET BERT_INLINE void NAME##_rows(const int rn, const lowp_job *j, int i0, int i1, int r,      \
                                        prefetcher *pf)                                              \
    {                                                                                                \
        int i = i0;                                                                                  \
        for (; i + RM <= i1; i += RM) NAME##_block(RM, rn, j, i, r, pf);                             \
        switch (i1 - i) {                                                                            \
        case 1: NAME##_block(1, rn, j, i, r, pf); break;                                             \
        case 2: NAME##_block(CAP(2, RM), rn, j, i, r, pf); break;                                    \
        case 3: NAME##_block(CAP(3, RM), rn, j, i, r, pf); break;                                    \
        default: break;                                                                              \
        }                                                                                            \
    }                                                                                                \
    TARGET static void NAME##_walk(const lowp_job *j, int i0, int i1, int r0, int r1)                \
    {                                                                                                \
        size_t rowbytes = (size_t)j->cols * ELEM, block = RN * rowbytes;                             \
        const char *base = (const char *)(ELEM == 1 ? (const void *)j->w->i8 : (const void *)j->w->bf16); \
        /* Steps over one weight block: every input block's, each cols / STEP. */                    \
        int steps = (i1 - i0 + RM - 1) / RM * (j->cols / STEP > 0 ? j->cols / STEP : 1);             \
        int lines = (int)((block + 63) / 64);                                                        \
        prefetcher pf = {NULL, NULL, (lines + steps - 1) / steps};                                   \
        int r = r0;                                                                                  \
        for (; r + RN <= r1; r += RN) {                                                              \
            int ahead = r + PREFETCH_AHEAD * RN;                                                     \
            pf.at = ahead + RN <= r1 ? base + (size_t)ahead * rowbytes : NULL;                       \
            pf.end = pf.at ? pf.at + block : NULL;                                                   \
            NAME##_rows(RN, j, i0, i1, r, &pf);                                                      \
        }                                                                                            \
        pf.at = pf.end = NULL;                                                                       \
        switch (r1 - r) {                                                                            \
        case 1: NAME##_rows(1, j, i0, i1, r, &pf); break;                                            \
        case 2: NAME##_rows(CAP(2, RN), j, i0, i1, r, &pf); break;                                   \
        case 3: NAME##_rows(CAP(3, RN), j, i0, i1, r, &pf); break;                                   \
        case 4: NAME##_rows(CAP(4, RN), j, i0, i1, r, &pf); break;                                   \
        case 5: NAME##_rows(CAP(5, RN), j, i0, i1, r, &pf); break;                                   \
        default: break;                                                                              \
        }                                                                                            \
    }

DEFINE_WALK(bf16dp, BERT_TARGET_BF16, RM512, RN512, 2, 32)
DEFINE_WALK(bf16w512, BERT_TARGET_AVX512BW, RM512, RN512, 2, 16)
DEFINE_WALK(bf16w256, BERT_TARGET_AVX2, RM256, RN256, 2, 8)
DEFINE_WALK(vnni512, BERT_TARGET_VNNI512, RM512, RN512, 1, 64)
DEFINE_WALK(avxvnni, BERT_TARGET_AVXVNNI, RM256, RN256, 1, 32)
DEFINE_WALK(int8avx2, BERT_TARGET_AVX2, RM256, RN256, 1, 16)

/* quantize_row for input rows, 16 and 8 columns at a time: the same
 * products, rounding (to even, as nearbyintf in the default mode) and
 * clamping, so the same bytes. */
BERT_TARGET_AVX512BW static float quantize512(int8_t *q, const float *v, int cols, int8_t flip)
{
    __m512 m = _mm512_setzero_ps();
    int body = cols - cols % 16;
    /* max_ps returns its second operand when the first is NaN. */
    for (int c = 0; c < body; c += 16) m = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(v + c)), m);
    float top = row_top(v, body, cols, _mm512_reduce_max_ps(m));
    if (row_is_zero(top)) {
        memset(q, flip, (size_t)cols);
        return 0.0f;
    }
    float inverse = 127.0f / top;
    const __m512 inv = _mm512_set1_ps(inverse), hi = _mm512_set1_ps(127.0f), lo = _mm512_set1_ps(-127.0f);
    for (int c = 0; c < body; c += 16) {
        __m512 r = _mm512_roundscale_ps(_mm512_mul_ps(_mm512_loadu_ps(v + c), inv),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __mmask16 number = _mm512_cmp_ps_mask(r, r, _CMP_ORD_Q);
        r = _mm512_min_ps(_mm512_max_ps(r, lo), hi);
        __m128i bytes = _mm512_cvtepi32_epi8(_mm512_maskz_cvtps_epi32(number, r));
        _mm_storeu_si128((__m128i *)(q + c), _mm_xor_si128(bytes, _mm_set1_epi8(flip)));
    }
    for (int c = body; c < cols; c++) q[c] = (int8_t)(quantize_one(v[c], inverse) ^ flip);
    return top / 127.0f;
}

BERT_TARGET_AVX2 static float quantize256(int8_t *q, const float *v, int cols, int8_t flip)
{
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 m = _mm256_setzero_ps();
    int body = cols - cols % 8;
    for (int c = 0; c < body; c += 8) m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(v + c), magnitude), m);
    float lanes[8];
    _mm256_storeu_ps(lanes, m);
    float top = row_top(v, body, cols, row_top(lanes, 0, 8, 0.0f));
    if (row_is_zero(top)) {
        memset(q, flip, (size_t)cols);
        return 0.0f;
    }
    float inverse = 127.0f / top;
    const __m256 inv = _mm256_set1_ps(inverse), hi = _mm256_set1_ps(127.0f), lo = _mm256_set1_ps(-127.0f);
    for (int c = 0; c < body; c += 8) {
        __m256 r = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(v + c), inv),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m256i number = _mm256_castps_si256(_mm256_cmp_ps(r, r, _CMP_ORD_Q));
        r = _mm256_min_ps(_mm256_max_ps(r, lo), hi);
        __m256i qi = _mm256_and_si256(_mm256_cvtps_epi32(r), number);
        __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(qi), _mm256_extracti128_si256(qi, 1));
        _mm_storel_epi64((__m128i *)(q + c), _mm_xor_si128(_mm_packs_epi16(q16, q16), _mm_set1_epi8(flip)));
    }
    for (int c = body; c < cols; c++) q[c] = (int8_t)(quantize_one(v[c], inverse) ^ flip);
    return top / 127.0f;
}
#endif

/* ---- choosing and running ------------------------------------------------- */

static bert_precision kernel_precision(bert_lowp_kernel k)
{
    switch (k) {
    case BERT_LOWP_BF16_AVX2: case BERT_LOWP_BF16_AVX512: case BERT_LOWP_BF16_DP512: return BERT_PRECISION_BFLOAT16;
    case BERT_LOWP_INT8_AVX2: case BERT_LOWP_INT8_AVXVNNI: case BERT_LOWP_INT8_VNNI512: return BERT_PRECISION_INT8;
    case BERT_LOWP_BF16_NEON: case BERT_LOWP_BF16_BFDOT: case BERT_LOWP_BF16_BFMMLA: return BERT_PRECISION_BFLOAT16;
    case BERT_LOWP_INT8_NEON: case BERT_LOWP_INT8_SDOT: case BERT_LOWP_INT8_SMMLA: return BERT_PRECISION_INT8;
    default: return BERT_PRECISION_FLOAT32; /* either */
    }
}

/* 1 when a CPU of instruction set isa with extensions ext runs kernel k. */
static int kernel_runs(bert_lowp_kernel k, bert_isa isa, unsigned ext)
{
#ifdef BERT_X86_KERNELS
    switch (k) {
    case BERT_LOWP_PORTABLE: return 1;
    case BERT_LOWP_BF16_AVX2: case BERT_LOWP_INT8_AVX2: return isa >= BERT_ISA_AVX2;
    case BERT_LOWP_BF16_AVX512: return isa >= BERT_ISA_AVX512 && __builtin_cpu_supports("avx512bw");
    case BERT_LOWP_BF16_DP512: return isa >= BERT_ISA_AVX512 && (ext & BERT_CPU_AVX512_BF16);
    case BERT_LOWP_INT8_AVXVNNI: return isa >= BERT_ISA_AVX2 && (ext & BERT_CPU_AVX_VNNI);
    case BERT_LOWP_INT8_VNNI512: return isa >= BERT_ISA_AVX512 && (ext & BERT_CPU_AVX512_VNNI);
    default: return 0;
    }
#elif defined(BERT_ARM64_KERNELS)
    return k == BERT_LOWP_PORTABLE || (isa == BERT_ISA_NEON && bert_neon_runs(k, ext));
#else
    (void)isa, (void)ext;
    return k == BERT_LOWP_PORTABLE;
#endif
}

/* The fastest kernel for precision p on such a CPU: the first of its list
 * that runs.  Measured with AVX-512 (AMD EPYC, one thread, W from RAM,
 * tests/bench/bench_kernels.c), the 512-bit dot products lead at every row
 * count from 1 (768x768, GFLOP/s at 1 / 2 / 16 rows: int8 VNNI 49 / 103 /
 * 244 against AVX2's 42 / 76 / 103; bfloat16 vdpbf16ps 20 / 40 / 164
 * against 18 / 35 / 69).  Batched, bfloat16 runs at 1.7-2.1 times
 * OpenBLAS's float32 sgemm, so widening W for sgemm could only lose. */
static bert_lowp_kernel kernel_for(bert_precision p, bert_isa isa, unsigned ext)
{
    static const bert_lowp_kernel bf16[] = {BERT_LOWP_BF16_DP512, BERT_LOWP_BF16_AVX512, BERT_LOWP_BF16_AVX2};
    static const bert_lowp_kernel int8[] = {BERT_LOWP_INT8_VNNI512, BERT_LOWP_INT8_AVXVNNI, BERT_LOWP_INT8_AVX2};
#ifdef BERT_ARM64_KERNELS
    if (isa == BERT_ISA_NEON) return bert_neon_best(p, ext);
#endif
    const bert_lowp_kernel *list = p == BERT_PRECISION_INT8 ? int8 : bf16;
    for (int k = 0; k < 3; k++)
        if (kernel_runs(list[k], isa, ext)) return list[k];
    return BERT_LOWP_PORTABLE;
}

/* Input rows i0..i1 against weight rows r0..r1 through the job's kernel;
 * many input rows go in slabs of BERT_FEW_ROWS, so that a block of weight
 * rows is reused from L1 and the slab's rows come from L2. */
static void kernel_run(void *ctx, int i0, int i1, int r0, int r1)
{
    const lowp_job *j = ctx;
    for (int i = i0; i < i1; i += BERT_FEW_ROWS) {
        int e = i1 - i < BERT_FEW_ROWS ? i1 : i + BERT_FEW_ROWS;
        switch (j->kernel) {
#ifdef BERT_X86_KERNELS
        case BERT_LOWP_BF16_DP512: bf16dp_walk(j, i, e, r0, r1); break;
        case BERT_LOWP_BF16_AVX512: bf16w512_walk(j, i, e, r0, r1); break;
        case BERT_LOWP_BF16_AVX2: bf16w256_walk(j, i, e, r0, r1); break;
        case BERT_LOWP_INT8_VNNI512: vnni512_walk(j, i, e, r0, r1); break;
        case BERT_LOWP_INT8_AVXVNNI: avxvnni_walk(j, i, e, r0, r1); break;
        case BERT_LOWP_INT8_AVX2: int8avx2_walk(j, i, e, r0, r1); break;
#endif
#ifdef BERT_ARM64_KERNELS
        case BERT_LOWP_BF16_NEON: case BERT_LOWP_BF16_BFDOT: case BERT_LOWP_BF16_BFMMLA:
            bert_neon_bf16(j->kernel, j->out + (size_t)i * j->rows + r0, j->rows, j->xb + (size_t)i * j->cols,
                           j->w->bf16 + (size_t)r0 * j->cols, j->b ? j->b + r0 : NULL, e - i, r1 - r0, j->cols);
            break;
        case BERT_LOWP_INT8_NEON: case BERT_LOWP_INT8_SDOT: case BERT_LOWP_INT8_SMMLA:
            bert_neon_int8(j->kernel, j->out + (size_t)i * j->rows + r0, j->rows, j->qx + (size_t)i * j->cols,
                           j->xscale + i, j->w->i8 + (size_t)r0 * j->cols, j->w->scale + r0, j->b ? j->b + r0 : NULL,
                           e - i, r1 - r0, j->cols);
            break;
#endif
        default:
            if (j->w->precision == BERT_PRECISION_INT8) int8_portable(j, i, e, r0, r1);
            else bf16_portable(j, i, e, r0, r1);
            break;
        }
    }
}

/* `bytes` of scratch: s's, grown when too small, else a fresh block that
 * *owned receives (the caller frees it). */
static void *scratch_get(bert_linear_scratch *s, size_t bytes, void **owned)
{
    *owned = NULL;
    if (s) {
        if (s->size < bytes) {
            void *grown = realloc(s->data, bytes);
            if (!grown) return NULL;
            s->data = grown;
            s->size = bytes;
        }
        return s->data;
    }
    *owned = malloc(bytes ? bytes : 1);
    return *owned;
}

/* quantize_row for an input row, with the vector instructions kernel k's
 * CPU has; for the VNNI kernels shifted by 128, to unsigned bytes. */
static float quantize_input(bert_lowp_kernel k, int8_t *q, const float *v, int cols)
{
#ifdef BERT_X86_KERNELS
    const int8_t flip = (int8_t)-128;
#endif
    switch (k) {
#ifdef BERT_X86_KERNELS
    case BERT_LOWP_INT8_VNNI512: return quantize512(q, v, cols, flip);
    case BERT_LOWP_INT8_AVXVNNI: return quantize256(q, v, cols, flip);
    case BERT_LOWP_INT8_AVX2: return quantize256(q, v, cols, 0);
#endif
    default: return quantize_row(q, v, cols, NULL);
    }
}

/* Prepares the input rows in scratch and runs the product: 0, or -1 when
 * memory ran out. */
static int matrix_run(bert_lowp_kernel kernel, bert_workers *workers, int threads, bert_linear_scratch *scratch,
                      float *out, const float *in, const bert_matrix *w, const float *b, int n, int rows, int cols)
{
    lowp_job job = {kernel, w, out, NULL, NULL, NULL, b, n, rows, cols};
    void *owned = NULL;
    if (w->precision == BERT_PRECISION_INT8) {
        /* The scales first, so that they stay aligned for floats. */
        float *xscale = scratch_get(scratch, (size_t)n * sizeof(float) + (size_t)n * cols, &owned);
        if (!xscale) return -1;
        int8_t *qx = (int8_t *)(xscale + n);
        for (int i = 0; i < n; i++) xscale[i] = quantize_input(kernel, qx + (size_t)i * cols, in + (size_t)i * cols, cols);
        job.qx = qx;
        job.xscale = xscale;
    } else {
        uint16_t *xb = scratch_get(scratch, (size_t)n * cols * sizeof *xb, &owned);
        if (!xb) return -1;
        bf16_rows(kernel == BERT_LOWP_PORTABLE ? BERT_ISA_BASE
                  : kernel == BERT_LOWP_BF16_AVX2 ? BERT_ISA_AVX2 : BERT_ISA_AVX512,
                  xb, in, (size_t)n * cols);
        job.xb = xb;
    }
    /* Shared out as linear.c's products are. */
    bert_workers_split(workers, threads, n, rows, cols, n > BERT_FEW_ROWS, LEAST_ROWS, 1, kernel_run, &job);
    free(owned);
    return 0;
}

bert_lowp_kernel bert_linear_matrix_kernel(const bert_linear_plan *plan, bert_precision p)
{
    return kernel_for(p, plan->isa, plan->extensions);
}

int bert_linear_matrix(const bert_linear_plan *plan, float *out, const float *in, const bert_matrix *w,
                       const float *b, int n, int rows, int cols)
{
    if (n < 1 || rows < 1 || cols < 1) return 0;
    if (w->precision == BERT_PRECISION_FLOAT32) {
        bert_linear(plan, out, in, w->f32, b, n, rows, cols);
        return 0;
    }
    bert_lowp_kernel kernel = bert_linear_matrix_kernel(plan, w->precision);
    return matrix_run(kernel, plan->workers, plan->threads, plan->scratch, out, in, w, b, n, rows, cols);
}

const char *bert_lowp_kernel_name(bert_lowp_kernel kernel)
{
    switch (kernel) {
    case BERT_LOWP_AUTO: return "auto";
    case BERT_LOWP_PORTABLE: return "portable";
    case BERT_LOWP_BF16_AVX2: return "bf16-avx2";
    case BERT_LOWP_BF16_AVX512: return "bf16-avx512";
    case BERT_LOWP_BF16_DP512: return "bf16-avx512bf16";
    case BERT_LOWP_INT8_AVX2: return "int8-avx2";
    case BERT_LOWP_INT8_AVXVNNI: return "int8-avxvnni";
    case BERT_LOWP_INT8_VNNI512: return "int8-avx512vnni";
    case BERT_LOWP_BF16_NEON: return "bf16-neon";
    case BERT_LOWP_BF16_BFDOT: return "bf16-bfdot";
    case BERT_LOWP_BF16_BFMMLA: return "bf16-bfmmla";
    case BERT_LOWP_INT8_NEON: return "int8-neon";
    case BERT_LOWP_INT8_SDOT: return "int8-sdot";
    case BERT_LOWP_INT8_SMMLA: return "int8-smmla";
    default: return "?";
    }
}

int bert_linear_matrix_with(bert_lowp_kernel kernel, bert_workers *workers, int threads, float *out,
                            const float *in, const bert_matrix *w, const float *b, int n, int rows, int cols)
{
    bert_isa isa = bert_cpu_isa();
    unsigned ext = bert_cpu_extensions();
    if (w->precision == BERT_PRECISION_FLOAT32) return -1;
    if (kernel == BERT_LOWP_AUTO) kernel = kernel_for(w->precision, isa, ext);
    bert_precision kp = kernel_precision(kernel);
    if ((kp != BERT_PRECISION_FLOAT32 && kp != w->precision) || !kernel_runs(kernel, isa, ext)) return -1;
    if (n < 1 || rows < 1 || cols < 1) return 0;
    return matrix_run(kernel, workers, threads, NULL, out, in, w, b, n, rows, cols) == 0 ? 0 : -2;
}
