/*
 * kernel_types.h - what the projections (linear.c, linear_lowp.c), the
 * kernel table (kernels.c) and the kernels of each instruction set have in
 * common: W as a kernel reads it (bert_matrix), the kernels' numbers, the
 * layouts of W packed at load (panels, AMX tiles) and the bfloat16
 * conversions.  Types, constants and inline functions only, and no .c file
 * of its own: the kernels below and the code that chooses and calls them
 * above both include it, so that neither depends on the other for them.
 * linear.h passes it on to the encoder.
 */
#ifndef BERT_KERNEL_TYPES_H
#define BERT_KERNEL_TYPES_H

#include "cpu.h"
#include "../base/precision.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A projection's weights as the model holds them.  bfloat16: the upper half
 * of each float32; the input rows are rounded to bfloat16 too (as the
 * AVX512_BF16 dot products take them), products of the two accumulated in
 * float32, so that every kernel computes the same sums up to the order of
 * float additions (and vdpbf16ps's taking subnormals as zero).  int8: symmetric, one
 * scale per output row (W[r][c] ~ q[r][c] * scale[r]); the input rows are
 * quantized on the fly the same way, one scale per row (max|x| / 127, round
 * to nearest even, 0 for an all-zero row), products summed in int32, so
 *   out[i][r] = (sum_c qx[i][c] * q[r][c]) * xscale[i] * scale[r] + b[r].
 * row_sum[r] = sum_c q[r][c] lets unsigned-by-signed dot products (VNNI)
 * take qx + 128 and subtract 128 * row_sum[r]: the int32 sums are exact, so
 * every kernel gives the portable code's int8 results up to float rounding
 * of the final scaling. */
typedef struct {
    bert_precision precision;
    const float *f32;       /* FLOAT32: [rows x cols] */
    const uint16_t *bf16;   /* BFLOAT16: [rows x cols], bit patterns */
    const int8_t *i8;       /* INT8: [rows x cols] */
    const float *scale;     /* INT8: [rows] */
    const int32_t *row_sum; /* INT8: [rows] */
    const float *f32_packed; /* FLOAT32: f32 packed (bert_f32_pack), or NULL */
    const void *tiles;       /* INT8, BFLOAT16: i8 or bf16 as AMX tiles (bert_tiles_pack), or NULL */
    int int8_narrow;         /* INT8: 1 when q is held within [-63, 63] (BERT_INT8_NARROW_MAX) */
} bert_matrix;

/* int8 weights held to 7 bits: unsigned 8-bit inputs (x + 128, up to 255)
 * against weights within [-63, 63] sum a pair of products to at most
 * 2 * 255 * 63 = 32,130 in int16, exactly, with no sign trick: one
 * instruction fewer for 32 products with vpmaddubsw (AVX2).  Measured and
 * not adopted: on bert-base (random weights) it took int8's cosine to
 * float32 from 0.9991 to 0.9967, below the bound of 0.999; no loader holds
 * weights so, and the kernels that need it (kernels.c) serve the tests
 * and the benchmarks. */
#define BERT_INT8_NARROW_MAX 63

/* The float32 kernels, for tests and benchmarks (bert_linear_with) and
 * the kernel table (kernels.c). */
typedef enum {
    BERT_LINEAR_AUTO = 0, /* bert_linear's own choice */
    BERT_LINEAR_BLAS,     /* always cblas_sgemm */
    BERT_LINEAR_AVX2,     /* the few-rows kernel, 256-bit */
    BERT_LINEAR_AVX512,   /* the few-rows kernel, 512-bit */
    BERT_LINEAR_NEON,     /* the few-rows kernel, arm64 (kernels_neon.c) */
    BERT_LINEAR_PACKED_AVX2,   /* the panel kernel on W packed at load (BERT_PANEL), 256-bit */
    BERT_LINEAR_PACKED_AVX512  /* the same, 512-bit */
} bert_linear_kernel;

/* The reduced-precision kernels, for tests and benchmarks
 * (bert_linear_matrix_with) and the kernel table (kernels.c).  Each has a
 * scalar tail, so any cols goes. */
typedef enum {
    BERT_LOWP_AUTO = 0,     /* bert_linear_matrix's own choice */
    BERT_LOWP_PORTABLE,     /* plain C, either precision */
    BERT_LOWP_BF16_AVX2,    /* bfloat16 widened to float32 in registers, FMA, 256-bit */
    BERT_LOWP_BF16_AVX512,  /* the same, 512-bit */
    BERT_LOWP_BF16_DP512,   /* vdpbf16ps (AVX512_BF16) */
    BERT_LOWP_INT8_AVX2,    /* vpmaddubsw with the sign trick, 256-bit */
    BERT_LOWP_INT8_AVXVNNI, /* vpdpbusd, 256-bit (AVX-VNNI) */
    BERT_LOWP_INT8_VNNI512, /* vpdpbusd, 512-bit (AVX512_VNNI) */
    BERT_LOWP_INT8_AMX,     /* tdpbusd on AMX tiles (AMX-INT8), W as bert_tiles_pack lays it out */
    BERT_LOWP_BF16_AMX,     /* tdpbf16ps on AMX tiles (AMX-BF16), likewise */
    BERT_LOWP_BF16_NEON,    /* arm64: bfloat16 widened to float32 in registers, FMA */
    BERT_LOWP_BF16_BFDOT,   /* arm64: BFDOT (bf16) */
    BERT_LOWP_BF16_BFMMLA,  /* arm64: BFMMLA, a lone row through BFDOT (bf16) */
    BERT_LOWP_INT8_NEON,    /* arm64: widening multiplies, pairwise adds */
    BERT_LOWP_INT8_SDOT,    /* arm64: SDOT (dotprod) */
    BERT_LOWP_INT8_SMMLA,   /* arm64: SMMLA, a lone row through SDOT (i8mm) */
    BERT_LOWP_INT8_PACKED_AVX2, /* vpmaddubsw with the sign trick on W laid out as tiles (bert_tiles_pack), panels of 16 rows */
    BERT_LOWP_INT8_AVX2_NARROW, /* vpmaddubsw on unsigned input against 7-bit weights, 256-bit */
    BERT_LOWP_INT8_PACKED_AVX2_NARROW, /* the same on W laid out as tiles */
    BERT_LOWP_INT8_PACKED_AVX2_U7, /* vpmaddubsw on input quantized to unsigned 7 bits against 8-bit W as tiles */
    BERT_LOWP_BF16_PACKED_AVX2, /* bfloat16 W as tiles widened in registers, FMA, panels of 16 rows, 256-bit */
    BERT_LOWP_KERNELS       /* how many there are */
} bert_lowp_kernel;

/* The layout the panel kernels stream (kernels_avx2.c, kernels_avx512.c;
 * bert_f32_pack, linear.h): W's rows in panels of BERT_PANEL, each panel
 * column by column, so that panel p holds W[BERT_PANEL * p + e][c] at
 * p * cols * BERT_PANEL + c * BERT_PANEL + e, the rows past W's last zero.
 * One step of a panel kernel is then one load of BERT_PANEL weights, each
 * multiplied by a broadcast input value. */
#define BERT_PANEL 16

/* W as AMX tiles (bert_tiles_pack, linear.h).  An AMX tile multiply
 * (tdpbusd for int8, tdpbf16ps for bfloat16) takes W
 * as a tile of 16 rows of BERT_TILE_BYTES bytes in which each row holds,
 * for 16 weight rows e, a group of 4 bytes of consecutive columns side by
 * side: 4 int8 or 2 bfloat16 values.  With g values a group, W[e][k + j] is
 * at byte (k / g) * 64 + 4 * e + j * (4 / g).  Packed once at load, panel p
 * of BERT_PANEL weight rows holds, for each block of columns kb (64 int8 or
 * 32 bfloat16), one such tile of 1 KB at (p * blocks + kb) KB; columns past
 * cols (up to a whole block) and rows past rows are zero. */
#define BERT_TILE_BYTES 64

/* The AMX kernels read whole blocks of 32 input rows: up to this many
 * rows past the product's last, which their input layout must hold. */
#define BERT_AMX_ROWS_PAST 31

/* Bytes a value of precision p (int8: 1, bfloat16: 2). */
static inline int bert_tile_value_bytes(bert_precision p) { return p == BERT_PRECISION_INT8 ? 1 : 2; }

/* Columns rounded up to whole tiles: the row length, in values, of the
 * packed tiles and of the input rows the AMX kernels read. */
static inline int bert_tile_cols(int cols, bert_precision p)
{
    const int per_tile = BERT_TILE_BYTES / bert_tile_value_bytes(p);
    return (cols + per_tile - 1) / per_tile * per_tile;
}

/* bfloat16 -> float32: the upper half of the float's bits. */
static inline float bert_f32_from_bf16(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* float32 -> bfloat16, without branches, so that loops of it vectorize. */
static inline uint16_t bert_bf16_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    /* Round to nearest, ties to the even upper half; a carry out of the
     * mantissa steps the exponent, up to infinity, as it should.  A NaN
     * whose payload sits in the low half would round to infinity: it
     * keeps its sign and gets the quiet bit instead. */
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    uint32_t quiet = (u >> 16) | 0x0040u;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
}

/* n values of in as bfloat16 (bert_bf16_of): inlined into the bodies that
 * BERT_MULTIVERSION compiles for each instruction set, which vectorize it. */
BERT_INLINE void bert_bf16_row(uint16_t *restrict out, const float *restrict in, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = bert_bf16_of(in[i]);
}

#endif
