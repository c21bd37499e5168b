/*
 * kernels_neon.h - the arm64 few-rows kernels: float32 on NEON FMA,
 * bfloat16 (widened in registers, BFDOT, BFMMLA) and int8 (widening
 * multiplies, SDOT, SMMLA), each computing
 *   out[i][r] (leading dimension ldo) = x[i] . w[r] (+ b[r])
 * for input rows 0..n and weight rows 0..rows of the span it is given.
 * Declared on arm64 only (cpu.h's BERT_ARM64_KERNELS).
 */
#ifndef BERT_KERNELS_NEON_H
#define BERT_KERNELS_NEON_H

#include "cpu.h"
#include "linear.h"

#include <stdint.h>

#ifdef BERT_ARM64_KERNELS

/* float32; cols a multiple of 4 (bert_linear gives multiples of 16). */
void bert_neon_f32(float *out, int ldo, const float *x, const float *w, const float *b, int n, int rows, int cols);

/* bfloat16 rows (bit patterns) through `kernel`, one of BERT_LOWP_BF16_NEON,
 * _BFDOT, _BFMMLA; sums in float32; any cols. */
void bert_neon_bf16(bert_lowp_kernel kernel, float *out, int ldo, const uint16_t *x, const uint16_t *w,
                    const float *b, int n, int rows, int cols);

/* int8 rows through `kernel`, one of BERT_LOWP_INT8_NEON, _SDOT, _SMMLA:
 * exact int32 sums, scaled as linear.h says (xscale per input row, wscale
 * per weight row); any cols. */
void bert_neon_int8(bert_lowp_kernel kernel, float *out, int ldo, const int8_t *x, const float *xscale,
                    const int8_t *w, const float *wscale, const float *b, int n, int rows, int cols);

/* 1 when `kernel` is an arm64 kernel whose instructions are among
 * `extensions` (BERT_CPU_* flags; NEON itself every arm64 CPU has). */
int bert_neon_runs(bert_lowp_kernel kernel, unsigned extensions);

/* The fastest arm64 kernel for precision p (bfloat16 or int8) with those
 * extensions. */
bert_lowp_kernel bert_neon_best(bert_precision p, unsigned extensions);

#endif
#endif
