/*
 * linear_lowp.c - out = in W^T + b with W held as bfloat16 or as int8 with
 * one scale per weight row (linear.h, "reduced precision"): the input rows
 * prepared, a kernel chosen from the table (kernels.h), the product shared
 * out.
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
 * (bert_int8_output, isa_kernels.h) and every kernel goes through it.
 */
#include "linear.h"
#include "kernels.h"
#include "../base/workers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The least rows of a span: a multiple of the kernels' blocks (4 and 6, 3
 * and 4, 3 and 3) and slabs. */
#define LEAST_ROWS 48

BERT_INLINE void bf16_rows_body(uint16_t *out, const float *in, size_t n)
{
    bert_bf16_row(out, in, n);
}

BERT_MULTIVERSION(bf16_rows, (uint16_t *out, const float *in, size_t n), (out, in, n))

void bert_bf16_from_f32(uint16_t *out, const float *in, size_t n)
{
    bf16_rows(BERT_ISA_BASE, out, in, n);
}

/* One value times 127 / max|row| (weights held to 7 bits: 63), rounded to
 * even, within [-127, 127]; 0 for NaN.  The vector quantizers below
 * compute exactly this. */
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

/* Quantizes one row: q = quantize_one(v, top / max|v|) with top 127 (or
 * BERT_INT8_NARROW_MAX); returns the scale max|v| / top (0 for an all-zero
 * row, whose q are all 0) and stores the sum of q in *sum when sum is not
 * NULL. */
static float quantize_row_to(int8_t *q, const float *v, int cols, int32_t *sum, float levels)
{
    float top = row_top(v, 0, cols, 0.0f);
    int32_t total = 0;
    if (row_is_zero(top)) {
        memset(q, 0, (size_t)cols);
        if (sum) *sum = 0;
        return 0.0f;
    }
    float inverse = levels / top;
    for (int c = 0; c < cols; c++) {
        q[c] = quantize_one(v[c], inverse);
        total += q[c];
    }
    if (sum) *sum = total;
    return top / levels;
}

static float quantize_row(int8_t *q, const float *v, int cols, int32_t *sum)
{
    return quantize_row_to(q, v, cols, sum, 127.0f);
}

void bert_int8_quantize_rows(int8_t *q, float *scale, int32_t *row_sum, const float *w, int rows, int cols)
{
    for (int r = 0; r < rows; r++)
        scale[r] = quantize_row(q + (size_t)r * cols, w + (size_t)r * cols, cols, &row_sum[r]);
}

void bert_int8_quantize_rows_narrow(int8_t *q, float *scale, int32_t *row_sum, const float *w, int rows, int cols)
{
    for (int r = 0; r < rows; r++)
        scale[r] = quantize_row_to(q + (size_t)r * cols, w + (size_t)r * cols, cols, &row_sum[r],
                                   (float)BERT_INT8_NARROW_MAX);
}

/* One value as an unsigned 7-bit level: v * inverse rounded to even, plus
 * the zero point, within [0, 127]; a NaN is the zero point (0).  The
 * vector quantizer below computes exactly this. */
static inline int8_t quantize_u7_one(float v, float inverse, float zero)
{
    float r = nearbyintf(v * inverse) + zero;
    r = r > 127.0f ? 127.0f : r < 0.0f ? 0.0f : r;
    return r == r ? (int8_t)r : (int8_t)zero;
}

/* The levels of a row of least value lo and greatest hi (0 among them, so
 * that 0 is a level and an all-positive or all-negative row keeps every
 * level): 1 / step in *inverse and the zero point in *zero, the step
 * returned; 0 for a row that quantizes to zeros (all zero, or not
 * finite). */
static float u7_levels(float lo, float hi, float *inverse, float *zero)
{
    lo = lo < 0.0f ? lo : 0.0f;
    hi = hi > 0.0f ? hi : 0.0f;
    float range = hi - lo;
    if (!(range > 0.0f) || !isfinite(range)) return 0.0f;
    *inverse = 127.0f / range;
    *zero = nearbyintf(-lo * *inverse);
    return range / 127.0f;
}

float bert_int8_quantize_input_u7(int8_t *q, const float *v, int cols, int32_t *zero)
{
    float lo = 0.0f, hi = 0.0f, inverse = 0.0f, z = 0.0f;
    for (int c = 0; c < cols; c++) {
        /* NaNs fail both comparisons and are left out. */
        if (v[c] < lo) lo = v[c];
        if (v[c] > hi) hi = v[c];
    }
    float step = u7_levels(lo, hi, &inverse, &z);
    *zero = (int32_t)z;
    if (step == 0.0f) {
        memset(q, 0, (size_t)cols);
        return 0.0f;
    }
    for (int c = 0; c < cols; c++) q[c] = quantize_u7_one(v[c], inverse, z);
    return step;
}

/* Where vpmaddubsw (AVX2) is this CPU's best int8 product: no VNNI of
 * either width, no AMX. */
int bert_int8_avx2_tiles(bert_isa isa, unsigned ext)
{
#ifdef BERT_X86_KERNELS
    const unsigned vnni = BERT_CPU_AVX512_VNNI | BERT_CPU_AVX_VNNI | BERT_CPU_AMX_INT8;
    if (isa != BERT_ISA_AVX512) ext &= ~(unsigned)(BERT_CPU_AVX512_VNNI | BERT_CPU_AMX_INT8);
    return isa >= BERT_ISA_AVX2 && !(ext & vnni);
#else
    (void)isa, (void)ext;
    return 0;
#endif
}

int bert_bf16_avx2_tiles(bert_isa isa, unsigned ext)
{
    (void)ext;
#ifdef BERT_X86_KERNELS
    return isa == BERT_ISA_AVX2;
#else
    (void)isa;
    return 0;
#endif
}

size_t bert_tiles_bytes(int rows, int cols, bert_precision p)
{
    return (size_t)((rows + BERT_PANEL - 1) / BERT_PANEL) * BERT_PANEL * (size_t)bert_tile_cols(cols, p) *
           (size_t)bert_tile_value_bytes(p);
}

/* Where the tiles keep W's group g (4 bytes of a row: 4 int8 or 2 bfloat16
 * values) of row r, in groups of 4 bytes from the first, for W of `groups`
 * groups a row once padded to whole tiles: panel r / BERT_PANEL, then tile
 * row g (a tile row holds one group of each of the panel's rows), then the
 * panel's row. */
static inline size_t tile_group(int r, int g, int groups)
{
    return ((size_t)(r / BERT_PANEL) * (size_t)groups + (size_t)g) * BERT_PANEL + (size_t)(r % BERT_PANEL);
}

/* Groups of 4 bytes in a row of W [* x cols] laid out as tiles. */
static int tile_groups(int cols, bert_precision p)
{
    return bert_tile_cols(cols, p) * bert_tile_value_bytes(p) / 4;
}

void bert_tiles_pack(void *tiles, const void *w, int rows, int cols, bert_precision p)
{
    const size_t row_bytes = (size_t)cols * (size_t)bert_tile_value_bytes(p);
    const int groups = tile_groups(cols, p), whole = (int)(row_bytes / 4);
    uint32_t *t = tiles;
    memset(tiles, 0, bert_tiles_bytes(rows, cols, p));
    for (int r = 0; r < rows; r++) {
        const unsigned char *from = (const unsigned char *)w + (size_t)r * row_bytes;
        for (int g = 0; g < whole; g++) memcpy(t + tile_group(r, g, groups), from + 4 * (size_t)g, 4);
        if ((size_t)whole * 4 < row_bytes)
            memcpy(t + tile_group(r, whole, groups), from + 4 * (size_t)whole, row_bytes - (size_t)whole * 4);
    }
}

/* Values first and second of a row as the group of 4 bytes a bfloat16 tile
 * holds them in: first at the lower address (x86 and arm64 are little-endian). */
static inline uint32_t bf16_pair(float first, float second)
{
    return (uint32_t)bert_bf16_of(first) | (uint32_t)bert_bf16_of(second) << 16;
}

/* Groups bf16_panel_from_rows converts at a time: a head's 64 columns. */
enum { STAGE_GROUPS = 32 };

/* n rows of src (at most a panel's; leading dimension ld), `cols` values
 * each (at most 2 * STAGE_GROUPS), as bfloat16 groups where the tiles keep
 * them: group g of row l at out[g * BERT_PANEL + l].  Converted row by row
 * (contiguous, so it vectorizes), then turned over. */
BERT_INLINE void bf16_panel_from_rows_body(uint32_t *out, const float *src, int ld, int n, int cols)
{
    uint32_t pairs[BERT_PANEL][STAGE_GROUPS];
    const int whole = cols / 2;
    for (int l = 0; l < n; l++) {
        const float *row = src + (size_t)l * ld;
        for (int g = 0; g < whole; g++) pairs[l][g] = bf16_pair(row[2 * g], row[2 * g + 1]);
        if (cols % 2) pairs[l][whole] = bert_bf16_of(row[cols - 1]);
    }
    const int groups = (cols + 1) / 2;
    for (int g = 0; g < groups; g++)
        for (int l = 0; l < n; l++) out[(size_t)g * BERT_PANEL + l] = pairs[l][g];
}
BERT_MULTIVERSION(bf16_panel_from_rows, (uint32_t *out, const float *src, int ld, int n, int cols),
                  (out, src, ld, n, cols))

/* Rows first and second of src, n values of each, as the groups of 4 bytes
 * of n consecutive tile rows' columns: second NULL past the last. */
BERT_INLINE void bf16_groups_from_two_rows_body(uint32_t *out, const float *first, const float *second, int n)
{
    if (second)
        for (int l = 0; l < n; l++) out[l] = bf16_pair(first[l], second[l]);
    else
        for (int l = 0; l < n; l++) out[l] = bert_bf16_of(first[l]);
}
BERT_MULTIVERSION(bf16_groups_from_two_rows, (uint32_t *out, const float *first, const float *second, int n),
                  (out, first, second, n))

void bert_bf16_tiles_from_rows(void *tiles, const float *src, int ld, int rows, int cols)
{
    const bert_isa isa = bert_cpu_isa();
    const int groups = tile_groups(cols, BERT_PRECISION_BFLOAT16);
    uint32_t *t = tiles;
    memset(tiles, 0, bert_tiles_bytes(rows, cols, BERT_PRECISION_BFLOAT16));
    for (int r0 = 0; r0 < rows; r0 += BERT_PANEL) {
        const int n = rows - r0 < BERT_PANEL ? rows - r0 : BERT_PANEL;
        for (int c0 = 0; c0 < cols; c0 += 2 * STAGE_GROUPS) {
            const int width = cols - c0 < 2 * STAGE_GROUPS ? cols - c0 : 2 * STAGE_GROUPS;
            bf16_panel_from_rows(isa, t + tile_group(r0, c0 / 2, groups), src + (size_t)r0 * ld + c0, ld, n, width);
        }
    }
}

void bert_bf16_tiles_from_columns(void *tiles, const float *src, int ld, int rows, int cols)
{
    const bert_isa isa = bert_cpu_isa();
    const int groups = tile_groups(cols, BERT_PRECISION_BFLOAT16);
    uint32_t *t = tiles;
    memset(tiles, 0, bert_tiles_bytes(rows, cols, BERT_PRECISION_BFLOAT16));
    /* Columns c and c + 1 of W are rows c and c + 1 of src: one group of
     * each of W's rows, 16 of them side by side in a tile row. */
    for (int c = 0; c < cols; c += 2) {
        const float *first = src + (size_t)c * ld, *second = c + 1 < cols ? first + ld : NULL;
        for (int r0 = 0; r0 < rows; r0 += BERT_PANEL)
            bf16_groups_from_two_rows(isa, t + tile_group(r0, c / 2, groups), first + r0, second ? second + r0 : NULL,
                                      rows - r0 < BERT_PANEL ? rows - r0 : BERT_PANEL);
    }
}

/* n values times scale, rounded to bfloat16. */
BERT_INLINE void bf16_scaled_body(uint16_t *out, const float *in, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++) out[i] = bert_bf16_of(in[i] * scale);
}

BERT_MULTIVERSION(bf16_scaled, (uint16_t *out, const float *in, size_t n, float scale), (out, in, n, scale))

void bert_bf16_tile_rows(uint16_t *x, const float *src, int ld, int n, int cols, float scale)
{
    const int stride = bert_tile_cols(cols, BERT_PRECISION_BFLOAT16);
    const bert_isa isa = bert_cpu_isa();
    for (int i = 0; i < n; i++) {
        uint16_t *row = x + (size_t)i * stride;
        bf16_scaled(isa, row, src + (size_t)i * ld, (size_t)cols, scale);
        memset(row + cols, 0, (size_t)(stride - cols) * sizeof *row);
    }
    memset(x + (size_t)n * stride, 0, (size_t)BERT_AMX_ROWS_PAST * stride * sizeof *x);
}

int bert_bf16_tiles_product(float *out, const uint16_t *x, const void *tiles, int n, int rows, int cols)
{
#ifdef BERT_X86_KERNELS
    bert_matrix w = {BERT_PRECISION_BFLOAT16, NULL, NULL, NULL, NULL, NULL, NULL, tiles, 0};
    bert_kernel_args args = {&w, NULL, x, NULL, NULL, NULL, out, n, rows, cols, NULL};
    bert_bf16_amx(&args, 0, n, 0, rows);
    return 1;
#else
    (void)out, (void)x, (void)tiles, (void)n, (void)rows, (void)cols;
    return 0;
#endif
}

void bert_linear_scratch_free(bert_linear_scratch *s)
{
    if (!s) return;
    free(s->data);
    s->data = NULL;
    s->size = 0;
}

#ifdef BERT_X86_KERNELS
#include <immintrin.h>

#define BERT_TARGET_AVX512BW __attribute__((target("avx512f,avx512bw,fma")))

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

/* bert_int8_quantize_input_u7, 8 columns at a time: the same levels,
 * products, rounding and clamping, so the same bytes. */
BERT_TARGET_AVX2 static float quantize_u7_256(int8_t *q, const float *v, int cols, int32_t *zero)
{
    /* min_ps and max_ps return their second operand when the first is NaN. */
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    int body = cols - cols % 8;
    for (int c = 0; c < body; c += 8) {
        __m256 x = _mm256_loadu_ps(v + c);
        lo = _mm256_min_ps(x, lo);
        hi = _mm256_max_ps(x, hi);
    }
    float los[8], his[8], l = 0.0f, h = 0.0f, inverse = 0.0f, z = 0.0f;
    _mm256_storeu_ps(los, lo);
    _mm256_storeu_ps(his, hi);
    for (int e = 0; e < 8; e++) {
        if (los[e] < l) l = los[e];
        if (his[e] > h) h = his[e];
    }
    for (int c = body; c < cols; c++) {
        if (v[c] < l) l = v[c];
        if (v[c] > h) h = v[c];
    }
    float step = u7_levels(l, h, &inverse, &z);
    *zero = (int32_t)z;
    if (step == 0.0f) {
        memset(q, 0, (size_t)cols);
        return 0.0f;
    }
    const __m256 inv = _mm256_set1_ps(inverse), zp = _mm256_set1_ps(z), top = _mm256_set1_ps(127.0f),
                 bottom = _mm256_setzero_ps();
    const __m256i zq = _mm256_set1_epi32((int)z);
    for (int c = 0; c < body; c += 8) {
        __m256 r = _mm256_add_ps(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(v + c), inv),
                                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                                 zp);
        __m256 number = _mm256_cmp_ps(r, r, _CMP_ORD_Q);
        r = _mm256_min_ps(_mm256_max_ps(r, bottom), top);
        __m256i qi = _mm256_blendv_epi8(zq, _mm256_cvtps_epi32(r), _mm256_castps_si256(number));
        __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(qi), _mm256_extracti128_si256(qi, 1));
        _mm_storel_epi64((__m128i *)(q + c), _mm_packs_epi16(q16, q16));
    }
    for (int c = body; c < cols; c++) q[c] = quantize_u7_one(v[c], inverse, z);
    return step;
}
#endif

/* ---- choosing and running ------------------------------------------------- */

/* The table's entry of kernel k for precision p, or NULL. */
static const bert_kernel *entry_of(bert_lowp_kernel k, bert_precision p)
{
    for (const bert_kernel *e = bert_kernels_table; e->run; e++)
        if (e->id == k && e->precision == p) return e;
    return NULL;
}

/* Input rows from which the AMX kernels take a product of W packed as
 * tiles: below, their blocks of 32 rows are mostly padding, and W's bytes,
 * which every kernel reads once, bound both. */
#define AMX_ROWS_MIN 8

/* The fastest kernel for precision p on such a CPU: the first of the
 * table's that runs (the portable kernels come last), those on W packed at
 * load only for W so packed and n rows enough.  Batched, bfloat16 runs at
 * 1.7-2.1 times OpenBLAS's float32 sgemm on AVX-512, so widening W for
 * sgemm could only lose. */
static const bert_kernel *kernel_for(bert_precision p, bert_isa isa, unsigned ext, const bert_matrix *w, int n)
{
    /* Without W, as a model loaded under this plan holds it: as tiles
     * where AMX or AVX2's int8 panel kernel reads them. */
    const int tiles = n >= AMX_ROWS_MIN && (w ? w->tiles != NULL
                                              : (p == BERT_PRECISION_INT8 && bert_int8_avx2_tiles(isa, ext)) ||
                                                    (p == BERT_PRECISION_BFLOAT16 && bert_bf16_avx2_tiles(isa, ext)));
    const int narrow = w && w->int8_narrow;
    for (const bert_kernel *e = bert_kernels_table; e->run; e++)
        if (e->precision == p && e->id != BERT_LOWP_AUTO && bert_kernel_runs(e, isa, ext) && (!e->packed || tiles) &&
            (!e->narrow || narrow) && !e->input_u7) /* unsigned 7-bit input: measured, not adopted (kernels.c) */
            return e;
    return NULL; /* not reached: the portable kernels run anywhere */
}

typedef struct {
    bert_kernel_fn run;
    bert_kernel_args args;
} lowp_job;

/* Input rows i0..i1 against weight rows r0..r1 through the job's kernel;
 * many input rows go in slabs of BERT_FEW_ROWS, so that a block of weight
 * rows is reused from L1 and the slab's rows come from L2. */
static void kernel_run(void *ctx, int i0, int i1, int r0, int r1)
{
    const lowp_job *j = ctx;
    for (int i = i0; i < i1; i += BERT_FEW_ROWS) {
        int e = i1 - i < BERT_FEW_ROWS ? i1 : i + BERT_FEW_ROWS;
        j->run(&j->args, i, e, r0, r1);
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

/* quantize_row for an input row, with the vector instructions of
 * kernel k's instruction set; shifted by 128, to unsigned bytes, for the
 * kernels that take it so (vpdpbusd). */
static float quantize_input(const bert_kernel *k, int8_t *q, const float *v, int cols, int32_t *zero)
{
#ifdef BERT_X86_KERNELS
    if (k->input_u7) return quantize_u7_256(q, v, cols, zero);
    const int8_t flip = k->input_offset ? (int8_t)-128 : 0;
    if (k->isa == BERT_ISA_AVX512) return quantize512(q, v, cols, flip);
    if (k->isa == BERT_ISA_AVX2) return quantize256(q, v, cols, flip);
#else
    if (k->input_u7) return bert_int8_quantize_input_u7(q, v, cols, zero);
#endif
    return quantize_row(q, v, cols, NULL);
}

/* The AMX kernel's span: every row of it at once, in its own blocks. */
static void tiles_run(void *ctx, int i0, int i1, int r0, int r1)
{
    const lowp_job *j = ctx;
    j->run(&j->args, i0, i1, r0, r1);
}

/* Preparing the input rows (quantizing or rounding them) for a product:
 * rows of `stride` values into x_i8 with scales, or into x_bf16. */
typedef struct {
    const bert_kernel *kernel;
    const float *in;
    int8_t *x_i8;
    float *x_scale;
    int32_t *x_zero; /* unsigned 7-bit input: the rows' zero points */
    uint16_t *x_bf16;
    int n, cols, stride;
} prepare_job;

static void prepare_rows(void *ctx, int chunk, int chunks)
{
    const prepare_job *j = ctx;
    const int i0 = (int)((long long)j->n * chunk / chunks), i1 = (int)((long long)j->n * (chunk + 1) / chunks);
    for (int i = i0; i < i1; i++) {
        const float *src = j->in + (size_t)i * j->cols;
        if (j->x_i8) {
            int8_t *row = j->x_i8 + (size_t)i * j->stride;
            j->x_scale[i] = quantize_input(j->kernel, row, src, j->cols, j->x_zero ? j->x_zero + i : NULL);
            memset(row + j->cols, 0, (size_t)(j->stride - j->cols));
        } else {
            uint16_t *row = j->x_bf16 + (size_t)i * j->stride;
            bf16_rows(j->kernel->isa, row, src, (size_t)j->cols);
            memset(row + j->cols, 0, (size_t)(j->stride - j->cols) * sizeof *row);
        }
    }
}

/* Input rows from which their preparation is shared out too: a 450-token
 * text's, prepared on the calling thread alone, took a tenth of an int8
 * encoder's time on two threads with AMX. */
#define PREPARE_SPLIT_ROWS 64

/* Prepares the input rows in scratch and runs the product: 0, or -1 when
 * memory ran out. */
static int matrix_run(const bert_kernel *kernel, bert_workers *workers, int threads, bert_linear_scratch *scratch,
                      float *out, const float *in, const bert_matrix *w, const float *b, int n, int rows, int cols)
{
    lowp_job job = {kernel->run, {w, NULL, NULL, NULL, NULL, b, out, n, rows, cols, NULL}};
    void *owned = NULL;
    /* The AMX kernels' rows: whole tiles long, and rows past the last for
     * their last block (zero, so that nothing reads undefined bytes). */
    const int tiles = kernel->packed;
    const int stride = tiles ? bert_tile_cols(cols, w->precision) : cols, stored = tiles ? n + BERT_AMX_ROWS_PAST : n;
    prepare_job prep = {kernel, in, NULL, NULL, NULL, NULL, n, cols, stride};
    if (w->precision == BERT_PRECISION_INT8) {
        /* The scales (and zero points) first, so that they stay aligned. */
        const size_t zeros = kernel->input_u7 ? (size_t)n : 0;
        float *xscale = scratch_get(scratch, (size_t)n * sizeof(float) + zeros * sizeof(int32_t) + (size_t)stored * stride,
                                    &owned);
        if (!xscale) return -1;
        prep.x_scale = xscale;
        prep.x_zero = zeros ? (int32_t *)(xscale + n) : NULL;
        prep.x_i8 = (int8_t *)(xscale + n) + zeros * sizeof(int32_t);
        job.args.x_zero = prep.x_zero;
        memset(prep.x_i8 + (size_t)n * stride, 0, (size_t)(stored - n) * stride);
        job.args.x_i8 = prep.x_i8;
        job.args.x_scale = xscale;
    } else {
        prep.x_bf16 = scratch_get(scratch, (size_t)stored * stride * sizeof *prep.x_bf16, &owned);
        if (!prep.x_bf16) return -1;
        memset(prep.x_bf16 + (size_t)n * stride, 0, (size_t)(stored - n) * stride * sizeof *prep.x_bf16);
        job.args.x_bf16 = prep.x_bf16;
    }
    if (threads > 1 && n >= PREPARE_SPLIT_ROWS) bert_workers_run(workers, threads, threads, prepare_rows, &prep);
    else prepare_rows(&prep, 0, 1);
    /* Shared out as linear.c's products are. */
    bert_split split = {n, rows, cols, n > BERT_FEW_ROWS ? BERT_SPAN_INPUT_ROWS : BERT_SPAN_WEIGHT_ROWS, LEAST_ROWS, 1};
    if (tiles) split.least = n > BERT_FEW_ROWS ? 32 : 64; /* whole blocks of 32 rows, or pairs of panels */
    bert_workers_split(workers, threads, &split, tiles ? tiles_run : kernel_run, &job);
    free(owned);
    return 0;
}

int bert_linear_matrix(const bert_linear_plan *plan, float *out, const float *in, const bert_matrix *w,
                       const float *b, int n, int rows, int cols)
{
    if (n < 1 || rows < 1 || cols < 1) return 0;
    if (w->precision == BERT_PRECISION_FLOAT32) {
        bert_linear_f32(plan, out, in, w, b, n, rows, cols);
        return 0;
    }
    const bert_kernel *kernel = kernel_for(w->precision, plan->isa, plan->extensions, w, n);
    return matrix_run(kernel, plan->workers, plan->threads, plan->scratch, out, in, w, b, n, rows, cols);
}

const char *bert_linear_kernel_chosen(const bert_linear_plan *plan, bert_precision p, int n, int cols)
{
    if (p == BERT_PRECISION_FLOAT32) return bert_linear_f32_kernel_name(plan, n, cols, 0);
    return kernel_for(p, plan->isa, plan->extensions, NULL, n)->name;
}

int bert_lowp_kernel_input_u7(bert_lowp_kernel kernel)
{
    for (const bert_kernel *e = bert_kernels_table; e->run; e++)
        if (e->id == kernel) return e->input_u7;
    return 0;
}

const char *bert_lowp_kernel_name(bert_lowp_kernel kernel)
{
    if (kernel == BERT_LOWP_AUTO) return "auto";
    for (const bert_kernel *e = bert_kernels_table; e->run; e++)
        if (e->id == kernel) return e->name;
    return "?";
}

int bert_linear_matrix_with(bert_lowp_kernel kernel, bert_workers *workers, int threads, float *out,
                            const float *in, const bert_matrix *w, const float *b, int n, int rows, int cols)
{
    bert_isa isa = bert_cpu_isa();
    unsigned ext = bert_cpu_extensions();
    if (w->precision == BERT_PRECISION_FLOAT32) return 0;
    const bert_kernel *k = kernel == BERT_LOWP_AUTO ? kernel_for(w->precision, isa, ext, w, n)
                                                    : entry_of(kernel, w->precision);
    if (!k || !bert_kernel_runs(k, isa, ext)) return 0; /* another precision's kernel, or not on this CPU */
    if (k->narrow && !w->int8_narrow) return 0;          /* needs W held to 7 bits */
    if (n < 1 || rows < 1 || cols < 1) return 1;
    if (!k->packed || w->tiles) return matrix_run(k, workers, threads, NULL, out, in, w, b, n, rows, cols) == 0 ? 1 : -1;
    /* W not packed as tiles: packed for the call. */
    void *tiles = malloc(bert_tiles_bytes(rows, cols, w->precision));
    if (!tiles) return -1;
    bert_tiles_pack(tiles, w->precision == BERT_PRECISION_INT8 ? (const void *)w->i8 : (const void *)w->bf16, rows,
                    cols, w->precision);
    bert_matrix packed = *w;
    packed.tiles = tiles;
    int ran = matrix_run(k, workers, threads, NULL, out, in, &packed, b, n, rows, cols) == 0 ? 1 : -1;
    free(tiles);
    return ran;
}
