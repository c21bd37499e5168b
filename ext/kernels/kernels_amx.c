/*
 * kernels_amx.c - the int8 and bfloat16 projection kernels on AMX tiles
 * (isa_kernels.h), W packed at load as tiles (kernel_types.h,
 * BERT_TILE_BYTES; linear.h, bert_tiles_pack):
 *
 *   bert_int8_amx   tdpbusd (AMX-INT8): unsigned by signed bytes, int32 sums
 *   bert_bf16_amx   tdpbf16ps (AMX-BF16): bfloat16 pairs, float32 sums
 *
 * Both are one walk (walk) over blocks of 32 input rows x 32 weight rows,
 * four tiles of sums, given the precision as a constant the compiler folds.
 * One tile multiply takes 16 input rows by 64 bytes against 64 bytes x 16
 * weight rows: 16,384 int8 or 8,192 bfloat16 multiply-adds, where
 * AVX-512's vpdpbusd does 64 and vdpbf16ps 32.  The input rows are
 * bert_tile_cols(cols) values long and followed by rows enough for a whole
 * block (linear_lowp.c lays them out so): int8 rows plus 128 (unsigned
 * bytes), whose exact sums make the result every other int8 kernel's to
 * the bit; bfloat16 rows rounded as every bfloat16 kernel rounds them,
 * summed in float32 in the hardware's order.
 *
 * Tiles are per-thread state: each call configures them and releases them
 * at the end, so that a thread that has finished its products does not
 * carry 8 KB of tile state through every context switch.
 */
#include "isa_kernels.h"

#ifdef BERT_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#define TARGET __attribute__((target("amx-tile,amx-int8,amx-bf16,avx512f")))

/* Tiles 0-3: the block's sums (rows 0-15 and 16-31 by panels 0 and 1);
 * 4-5: its two slices of 16 input rows; 6-7: the two panels of W. */
enum { TILE_ROWS = 16, BLOCK = 32, TILE_BYTES = TILE_ROWS * BERT_TILE_BYTES };

/* The layout LDTILECFG loads: palette 1, every tile 16 rows of 64 bytes. */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t bytes_per_row[16];
    uint8_t rows[16];
} tile_config;

/* What a walk computes. */
typedef enum { INT8, BF16 } kind;

/* out for input rows i..i_end and weight rows r..r_end from the block's
 * sums, laid out [BLOCK][BLOCK] from input row i and weight row r_block. */
TARGET static void finish_int8(const bert_kernel_args *a, const int32_t *sums, int i, int i_end, int r_block, int r,
                               int r_end)
{
    for (int y = i; y < i_end; y++) {
        const int32_t *row = sums + (size_t)(y - i) * BLOCK - r_block;
        float *out = a->out + (size_t)y * a->rows;
        for (int e = r; e < r_end; e++)
            out[e] = bert_int8_output(row[e] - 128 * a->w->row_sum[e], a->x_scale[y], a->w->scale[e], a->b, e);
    }
}

TARGET static void finish_bf16(const bert_kernel_args *a, const float *sums, int i, int i_end, int r_block, int r,
                               int r_end)
{
    for (int y = i; y < i_end; y++) {
        const float *row = sums + (size_t)(y - i) * BLOCK - r_block;
        float *out = a->out + (size_t)y * a->rows;
        for (int e = r; e < r_end; e++) out[e] = a->b ? row[e] + a->b[e] : row[e];
    }
}

/* Input rows of a slab: about this many bytes of them, which stay in L2
 * while every pair of panels passes over them. */
#define SLAB_BYTES (256 * 1024)

/* Input rows i0..i1 against weight rows r0..r1, in slabs of input rows
 * (SLAB_BYTES); in each, a pair of panels at a time, whose tiles (2 KB a
 * block of columns) stay in L1 while the slab's rows pass through it.
 * Without slabs, a 450-token text's rows for the second FFN projection
 * (1.4 MB) came from L3 again for every pair of panels. */
TARGET BERT_INLINE void walk(kind k, const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    const bert_precision p = k == INT8 ? BERT_PRECISION_INT8 : BERT_PRECISION_BFLOAT16;
    const int stride = bert_tile_cols(a->cols, p) * bert_tile_value_bytes(p);
    const int blocks = stride / BERT_TILE_BYTES;
    const size_t panel_bytes = (size_t)blocks * TILE_BYTES;
    const unsigned char *input = k == INT8 ? (const void *)a->x_i8 : (const void *)a->x_bf16;
    int slab = SLAB_BYTES / stride / BLOCK * BLOCK;
    if (slab < BLOCK) slab = BLOCK;
    tile_config config;
    memset(&config, 0, sizeof config);
    config.palette = 1;
    for (int t = 0; t < 8; t++) {
        config.rows[t] = TILE_ROWS;
        config.bytes_per_row[t] = BERT_TILE_BYTES;
    }
    _tile_loadconfig(&config);
    /* int32 or float32 sums, as the kind's tile multiply leaves them. */
    union {
        int32_t i[BLOCK * BLOCK];
        float f[BLOCK * BLOCK];
    } sums __attribute__((aligned(64)));
    const int last_panel = (r1 - 1) / BERT_PANEL;
    for (int s0 = i0; s0 < i1; s0 += slab) {
        const int s1 = s0 + slab < i1 ? s0 + slab : i1;
        for (int pn = r0 / BERT_PANEL; pn <= last_panel; pn += 2) {
            /* A lone last panel is multiplied twice; the second half is not written. */
            const unsigned char *w0 = (const unsigned char *)a->w->tiles + (size_t)pn * panel_bytes;
            const unsigned char *w1 = pn + 1 <= last_panel ? w0 + panel_bytes : w0;
            const int r_block = pn * BERT_PANEL;
            const int r = r_block > r0 ? r_block : r0, r_end = r_block + BLOCK < r1 ? r_block + BLOCK : r1;
            for (int i = s0; i < s1; i += BLOCK) {
                /* Rows past s1 are read (the layout has them) and not written. */
                const unsigned char *x = input + (size_t)i * stride;
                _tile_zero(0);
                _tile_zero(1);
                _tile_zero(2);
                _tile_zero(3);
                for (int kb = 0; kb < blocks; kb++) {
                    _tile_loadd(4, x + (size_t)kb * BERT_TILE_BYTES, stride);
                    _tile_loadd(5, x + (size_t)TILE_ROWS * stride + (size_t)kb * BERT_TILE_BYTES, stride);
                    _tile_loadd(6, w0 + (size_t)kb * TILE_BYTES, BERT_TILE_BYTES);
                    _tile_loadd(7, w1 + (size_t)kb * TILE_BYTES, BERT_TILE_BYTES);
                    if (k == INT8) {
                        _tile_dpbusd(0, 4, 6);
                        _tile_dpbusd(1, 4, 7);
                        _tile_dpbusd(2, 5, 6);
                        _tile_dpbusd(3, 5, 7);
                    } else {
                        _tile_dpbf16ps(0, 4, 6);
                        _tile_dpbf16ps(1, 4, 7);
                        _tile_dpbf16ps(2, 5, 6);
                        _tile_dpbf16ps(3, 5, 7);
                    }
                }
                const int row_bytes = BLOCK * (int)sizeof(int32_t);
                _tile_stored(0, sums.i, row_bytes);
                _tile_stored(1, sums.i + TILE_ROWS, row_bytes);
                _tile_stored(2, sums.i + TILE_ROWS * BLOCK, row_bytes);
                _tile_stored(3, sums.i + TILE_ROWS * BLOCK + TILE_ROWS, row_bytes);
                const int i_end = i + BLOCK < s1 ? i + BLOCK : s1;
                if (k == INT8) finish_int8(a, sums.i, i, i_end, r_block, r, r_end);
                else finish_bf16(a, sums.f, i, i_end, r_block, r, r_end);
            }
        }
    }
    _tile_release();
}

TARGET void bert_int8_amx(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    walk(INT8, a, i0, i1, r0, r1);
}

TARGET void bert_bf16_amx(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    walk(BF16, a, i0, i1, r0, r1);
}
#endif
