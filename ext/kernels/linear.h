/*
 * linear.h - the projections of the encoder: out = in W^T + b, with W laid
 * out [rows x cols] as nn.Linear and the checkpoints store it.
 *
 * Large products go to OpenBLAS.  A product over a few tokens (one sentence
 * row by row, a fill-mask head over its masks) goes to a kernel of our own
 * that reads W where it lies: OpenBLAS copies all of W into its packed
 * layout on every call, and for a sentence of 15 tokens that copy costs as
 * much as the arithmetic.
 */
#ifndef BERT_LINEAR_H
#define BERT_LINEAR_H

#include "cpu.h"
#include "kernel_types.h"
#include "../base/precision.h"
#include "../base/workers.h"

#include <stddef.h>
#include <stdint.h>

/* Memory that bert_linear_matrix keeps from one call to the next (input
 * rows quantized or converted): it grows to the largest product seen, so
 * steady-state calls allocate nothing.  Zero-initialize it; one thread at
 * a time; bert_linear_scratch_free releases it. */
typedef struct {
    void *data;
    size_t size;
} bert_linear_scratch;

void bert_linear_scratch_free(bert_linear_scratch *s);

/* Up to about this many input rows the few-rows kernels beat OpenBLAS on
 * bert-base and MiniLM shapes (measured with AVX-512, one thread); above,
 * OpenBLAS's packing is paid back by its cache blocking.  Products of up to
 * this many rows are split by weight rows, larger ones by input rows, and
 * the kernels take many rows in slabs of this many. */
#define BERT_FEW_ROWS 48

/* How one connection's model computes its products, chosen once. */
typedef struct {
    bert_isa isa;           /* vector instructions of the few-rows kernel */
    int few_rows_max;       /* products of up to this many input rows use it */
    bert_workers *workers;  /* helper threads, or NULL: the calling thread only */
    int threads;            /* threads a product, the caller's included */
    /* bert_linear_matrix's reusable memory, set by the plan's owner; NULL:
     * bfloat16 and int8 products allocate their scratch on every call. */
    bert_linear_scratch *scratch;
    unsigned extensions;    /* BERT_CPU_* dot-product extensions its kernels may use */
    /* Products of packed_rows_min to packed_rows_max input rows on W
     * packed at load (bert_matrix.f32_packed) use the panel kernel. */
    int packed_rows_min, packed_rows_max;
} bert_linear_plan;

/* The plan for instruction set `isa` (bert_cpu_isa()), on one thread, with
 * the extensions of bert_cpu_extensions() that go with `isa`. */
bert_linear_plan bert_linear_plan_for(bert_isa isa);

/* out[n x rows] = in[n x cols] W^T + b; W is [rows x cols], b may be NULL.
 * The product is split into chunks over the plan's threads: chunks of
 * weight rows for a few input rows, else chunks of input rows (OpenBLAS
 * then runs single-threaded in each). */
void bert_linear(const bert_linear_plan *plan, float *out, const float *in, const float *w,
                 const float *b, int n, int rows, int cols);

/* Runs one kernel at any n over up to `threads` threads of `workers`: 1;
 * 0 (nothing written) when this CPU or shape cannot use it: the few-rows
 * kernels need cols to be a multiple of 16.  The panel kernels pack W
 * for the call (bert_linear_with_packed takes it packed). */
int bert_linear_with(bert_linear_kernel kernel, bert_workers *workers, int threads, float *out,
                     const float *in, const float *w, const float *b, int n, int rows, int cols);

/* The same with W also given packed (bert_f32_pack of the same W), which
 * the panel kernels read: what a product of a loaded model does.  1 or 0
 * as bert_linear_with; -1 when a panel kernel got no packed W and memory
 * for packing it ran out. */
int bert_linear_with_packed(bert_linear_kernel kernel, bert_workers *workers, int threads, float *out,
                            const float *in, const float *w, const float *packed, const float *b, int n,
                            int rows, int cols);

/* ---- float32 weights packed at load -------------------------------------------
 *
 * cblas_sgemm copies W into its own panel layout on every call.  A loaded
 * model's float32 projections are instead packed once, at load, into the
 * layout the panel kernels stream (kernel_types.h, BERT_PANEL). */

/* Floats that W [rows x cols] takes packed. */
size_t bert_f32_packed_floats(int rows, int cols);

/* Packs W [rows x cols] into `panels` (bert_f32_packed_floats of them). */
void bert_f32_pack(float *panels, const float *w, int rows, int cols);

/* bert_f32_pack of a W [rows x cols] that lies in some larger matrix:
 * element (r, c) at w[r * row_step + c * col_step], and the panels `width`
 * columns wide (width >= cols), zero past cols.  Attention packs a head's
 * keys (row_step = the hidden size) and its values transposed (col_step =
 * the hidden size) this way, read in place in the layer's [tokens x hidden]
 * matrices. */
void bert_f32_pack_strided(float *panels, const float *w, size_t row_step, size_t col_step, int rows, int cols,
                           int width);

/* out [n x rows] = in [n x cols] W^T for W packed (bert_f32_pack), on the
 * calling thread, by the panel kernel of instruction set isa: 1; 0 (nothing
 * done) when isa has none or this CPU cannot run it.  For products too
 * small to share out, such as one head's attention.  With n = 0 it only
 * says whether it would run. */
int bert_f32_panel_product(bert_isa isa, float *out, const float *in, const float *packed, int n, int rows, int cols);

/* ---- reduced precision (the `precision` option of bert_load) ----------------
 *
 * W as bert_matrix holds it (kernel_types.h): bfloat16, or int8 with one
 * scale per weight row. */

/* bert_linear for any precision: out[n x rows] = in[n x cols] W^T + b.
 * Scratch for quantized or converted input rows comes from plan->scratch
 * (grown when too small) or, when that is NULL, is allocated once per call;
 * returns 0, or -1 when memory ran out (out is then unspecified). */
int bert_linear_matrix(const bert_linear_plan *plan, float *out, const float *in, const bert_matrix *w,
                       const float *b, int n, int rows, int cols);

/* The name of the kernel that bert_linear_matrix runs under `plan` for n
 * input rows of cols columns at precision p: "openblas", "f32-avx2",
 * "f32-avx512", "portable", "bf16-avx512bf16", "int8-avx2" ... (the names
 * of kernels.c's table); float32 for W not packed (bert_linear_f32_kernel_name
 * answers for W packed at load too). */
const char *bert_linear_kernel_chosen(const bert_linear_plan *plan, bert_precision p, int n, int cols);

/* The float32 part of it (linear.c), for W packed at load or not. */
const char *bert_linear_f32_kernel_name(const bert_linear_plan *plan, int n, int cols, int packed);

/* bert_linear_matrix of a float32 W (linear.c): the panel kernel when W
 * is packed too and the plan says so for n rows. */
void bert_linear_f32(const bert_linear_plan *plan, float *out, const float *in, const bert_matrix *w,
                     const float *b, int n, int rows, int cols);

/* "portable", "bf16-avx2" ... */
const char *bert_lowp_kernel_name(bert_lowp_kernel kernel);

/* bert_linear_matrix through one kernel, over up to `threads` threads of
 * `workers` (scratch allocated for the call): 1 when it ran; 0 (nothing
 * written) when this CPU (within SQLITE_BERT_ISA) lacks its instructions or
 * it is not for w's precision; -1 when memory ran out. */
int bert_linear_matrix_with(bert_lowp_kernel kernel, bert_workers *workers, int threads, float *out,
                            const float *in, const bert_matrix *w, const float *b, int n, int rows, int cols);

/* float32 -> bfloat16, round to nearest even (NaN stays NaN). */
void bert_bf16_from_f32(uint16_t *out, const float *in, size_t n);

/* Quantizes W [rows x cols] as bert_matrix holds it into q, scale and row_sum. */
void bert_int8_quantize_rows(int8_t *q, float *scale, int32_t *row_sum, const float *w, int rows, int cols);

/* The same held to 7 bits: q within [-63, 63], scale max|row| / 63
 * (bert_matrix.int8_narrow; measured, not adopted: kernel_types.h). */
void bert_int8_quantize_rows_narrow(int8_t *q, float *scale, int32_t *row_sum, const float *w, int rows, int cols);

/* 1 when a model loaded for instruction set isa with extensions ext lays
 * its int8 weights out as tiles too (bert_tiles_pack) for AVX2's int8
 * panel kernel: where vpmaddubsw is its best int8 product (no VNNI, no
 * AMX).  bert-base: 85 MB more. */
int bert_int8_avx2_tiles(bert_isa isa, unsigned ext);

/* The same for bfloat16: where AVX2's FMA on bfloat16 widened in registers
 * is the best bfloat16 product (SQLITE_BERT_ISA=avx2, or a CPU without
 * AVX-512), for its panel kernel (bert_bf16_packed_avx2) on products of 8
 * rows or more.  bert-base: 170 MB more. */
int bert_bf16_avx2_tiles(bert_isa isa, unsigned ext);

/* An input row quantized to unsigned 7 bits, for the int8 kernels that
 * take it so (bert_lowp_kernel_input_u7): q = round(v / step) + zero
 * within [0, 127], the levels spanning the row's least and greatest values
 * and 0; returns the step (0 for a row that quantizes to zeros: all zero,
 * or not finite) and the zero point in *zero, so that v ~ (q - zero) *
 * step.  For the tests, which check those kernels against it. */
float bert_int8_quantize_input_u7(int8_t *q, const float *v, int cols, int32_t *zero);

/* 1 when kernel k quantizes its input rows with bert_int8_quantize_input_u7. */
int bert_lowp_kernel_input_u7(bert_lowp_kernel k);

/* ---- int8 and bfloat16 weights as AMX tiles ----------------------------------
 *
 * W laid out as the AMX kernels read it (kernel_types.h, BERT_TILE_BYTES). */

/* Bytes that W [rows x cols] of precision p takes as tiles. */
size_t bert_tiles_bytes(int rows, int cols, bert_precision p);

/* Lays out W [rows x cols] (int8: bert_int8_quantize_rows's q; bfloat16:
 * bit patterns) as tiles. */
void bert_tiles_pack(void *tiles, const void *w, int rows, int cols, bert_precision p);

/* ---- attention's products on AMX tiles ------------------------------------------
 *
 * At a reduced precision, on a CPU with AMX-BF16, the encoder multiplies
 * attention's queries by keys and probabilities by values as bfloat16
 * products summed in float32 (encoder.c): a head's keys and values laid out
 * as tiles once, then each block of query rows. */

/* W [rows x cols] = src's rows (leading dimension ld), rounded to bfloat16,
 * as tiles (bert_tiles_bytes(rows, cols, BERT_PRECISION_BFLOAT16) bytes). */
void bert_bf16_tiles_from_rows(void *tiles, const float *src, int ld, int rows, int cols);

/* The same with W the transpose of src: W[r][c] = src[c * ld + r]. */
void bert_bf16_tiles_from_columns(void *tiles, const float *src, int ld, int rows, int cols);

/* n rows of src (leading dimension ld) times scale, rounded to bfloat16, as
 * the AMX kernel reads its input: bert_tile_cols(cols, BERT_PRECISION_BFLOAT16)
 * values a row, the padding zero, and BERT_AMX_ROWS_PAST zero rows after. */
void bert_bf16_tile_rows(uint16_t *x, const float *src, int ld, int n, int cols, float scale);

/* out [n x rows] = x W^T, x from bert_bf16_tile_rows and W as tiles, on the
 * calling thread: 1; 0 (nothing written) when this build has no x86
 * kernels.  Only where bert_cpu_extensions() has BERT_CPU_AMX_BF16 (the
 * caller asks once, not per product). */
int bert_bf16_tiles_product(float *out, const uint16_t *x, const void *tiles, int n, int rows, int cols);

#endif
