/*
 * kernels.c - the table of projection kernels (kernels.h): which precision
 * each computes and what the CPU must have for it.  A kernel file for a
 * new instruction set adds its lines here, under the same guard as its
 * functions.
 */
#include "kernels.h"

const bert_kernel bert_kernels_table[] = {
#ifdef BERT_X86_KERNELS
    /* float32: only for a few rows, or where OpenBLAS is held to AVX2 (linear.c). */
    {BERT_LOWP_AUTO, BERT_LINEAR_AVX512, "f32-avx512", BERT_PRECISION_FLOAT32, BERT_ISA_AVX512, 0, 0, 0, bert_f32_avx512, 0, 0},
    {BERT_LOWP_AUTO, BERT_LINEAR_AVX2, "f32-avx2", BERT_PRECISION_FLOAT32, BERT_ISA_AVX2, 0, 0, 0, bert_f32_avx2, 0, 0},
    /* float32 on W packed at load, for products of many rows (linear.c). */
    {BERT_LOWP_AUTO, BERT_LINEAR_PACKED_AVX512, "f32-packed-avx512", BERT_PRECISION_FLOAT32, BERT_ISA_AVX512, 0, 0, 1,
     bert_f32_packed_avx512, 0, 0},
    {BERT_LOWP_AUTO, BERT_LINEAR_PACKED_AVX2, "f32-packed-avx2", BERT_PRECISION_FLOAT32, BERT_ISA_AVX2, 0, 0, 1,
     bert_f32_packed_avx2, 0, 0},
    /* Measured with AVX-512 (one thread, W from RAM,
     * tests/bench/bench_kernels.c), the 512-bit dot products lead at every
     * row count from 1 (768x768, GFLOP/s at 1 / 2 / 16 rows: int8 VNNI 49 /
     * 103 / 244 against AVX2's 42 / 76 / 103; bfloat16 vdpbf16ps 20 / 40 /
     * 164 against 18 / 35 / 69). */
    {BERT_LOWP_BF16_AMX, BERT_LINEAR_AUTO, "bf16-amx", BERT_PRECISION_BFLOAT16, BERT_ISA_AVX512, BERT_CPU_AMX_BF16, 0, 1,
     bert_bf16_amx, 0, 0},
    {BERT_LOWP_BF16_DP512, BERT_LINEAR_AUTO, "bf16-avx512bf16", BERT_PRECISION_BFLOAT16, BERT_ISA_AVX512,
     BERT_CPU_AVX512_BF16, 0, 0, bert_bf16_avx512bf16, 0, 0},
    {BERT_LOWP_BF16_AVX512, BERT_LINEAR_AUTO, "bf16-avx512", BERT_PRECISION_BFLOAT16, BERT_ISA_AVX512, 0, 0, 0,
     bert_bf16_avx512, 0, 0},
    /* AVX2 for products of many rows: W laid out as tiles at load
     * (bert_bf16_avx2_tiles, linear.h), widened in registers for the float32
     * panel kernel's blocks. */
    {BERT_LOWP_BF16_PACKED_AVX2, BERT_LINEAR_AUTO, "bf16-packed-avx2", BERT_PRECISION_BFLOAT16, BERT_ISA_AVX2, 0, 0, 1,
     bert_bf16_packed_avx2, 0, 0},
    {BERT_LOWP_BF16_AVX2, BERT_LINEAR_AUTO, "bf16-avx2", BERT_PRECISION_BFLOAT16, BERT_ISA_AVX2, 0, 0, 0, bert_bf16_avx2, 0, 0},
    /* On W packed at load as tiles, for products of many rows (linear_lowp.c). */
    {BERT_LOWP_INT8_AMX, BERT_LINEAR_AUTO, "int8-amx", BERT_PRECISION_INT8, BERT_ISA_AVX512, BERT_CPU_AMX_INT8, 128, 1,
     bert_int8_amx, 0, 0},
    {BERT_LOWP_INT8_VNNI512, BERT_LINEAR_AUTO, "int8-avx512vnni", BERT_PRECISION_INT8, BERT_ISA_AVX512,
     BERT_CPU_AVX512_VNNI, 128, 0, bert_int8_avx512vnni, 0, 0},
    {BERT_LOWP_INT8_AVXVNNI, BERT_LINEAR_AUTO, "int8-avxvnni", BERT_PRECISION_INT8, BERT_ISA_AVX2, BERT_CPU_AVX_VNNI,
     128, 0, bert_int8_avxvnni, 0, 0},
    /* Only for W held to 7 bits (kernel_types.h, BERT_INT8_NARROW_MAX),
     * which no loader makes: measured, not adopted. */
    {BERT_LOWP_INT8_PACKED_AVX2_NARROW, BERT_LINEAR_AUTO, "int8-packed-avx2-narrow", BERT_PRECISION_INT8, BERT_ISA_AVX2,
     0, 128, 1, bert_int8_packed_avx2_narrow, 1, 0},
    {BERT_LOWP_INT8_AVX2_NARROW, BERT_LINEAR_AUTO, "int8-avx2-narrow", BERT_PRECISION_INT8, BERT_ISA_AVX2, 0, 128, 0,
     bert_int8_avx2_narrow, 1, 0},
    /* AVX2 without VNNI, for products of many rows: the sign trick on W laid
     * out as tiles at load (bert_int8_avx2_tiles, linear.h), broadcast input
     * and no horizontal sums. */
    /* Input quantized to unsigned 7 bits with a zero point (0..127, the
     * row's range) against 8-bit W: pairs at most 2 * 127 * 127, no sign
     * trick, 1.3 times the sign trick's speed; measured and not adopted,
     * as bert-base's int8 cosine to float32 fell from 0.9991 to 0.9986
     * (bound 0.999).  kernel_for never picks it: for the tests and the
     * benchmarks. */
    {BERT_LOWP_INT8_PACKED_AVX2_U7, BERT_LINEAR_AUTO, "int8-packed-avx2-u7", BERT_PRECISION_INT8, BERT_ISA_AVX2, 0, 0,
     1, bert_int8_packed_avx2_u7, 0, 1},
    {BERT_LOWP_INT8_PACKED_AVX2, BERT_LINEAR_AUTO, "int8-packed-avx2", BERT_PRECISION_INT8, BERT_ISA_AVX2, 0, 0, 1,
     bert_int8_packed_avx2, 0, 0},
    {BERT_LOWP_INT8_AVX2, BERT_LINEAR_AUTO, "int8-avx2", BERT_PRECISION_INT8, BERT_ISA_AVX2, 0, 0, 0, bert_int8_avx2, 0, 0},
#endif
#ifdef BERT_ARM64_KERNELS
    /* NEON is every arm64 CPU's; the matrix multiplies first, as each of
     * their instructions does twice the multiply-adds of the dot product
     * of its extension.  Their lone last input row goes through the dot
     * product, so SMMLA needs SDOT too (cpu.c reports i8mm only with it). */
    {BERT_LOWP_AUTO, BERT_LINEAR_NEON, "f32-neon", BERT_PRECISION_FLOAT32, BERT_ISA_NEON, 0, 0, 0, bert_f32_neon, 0, 0},
    {BERT_LOWP_BF16_BFMMLA, BERT_LINEAR_AUTO, "bf16-bfmmla", BERT_PRECISION_BFLOAT16, BERT_ISA_NEON, BERT_CPU_BF16, 0, 0,
     bert_bf16_bfmmla, 0, 0},
    {BERT_LOWP_BF16_BFDOT, BERT_LINEAR_AUTO, "bf16-bfdot", BERT_PRECISION_BFLOAT16, BERT_ISA_NEON, BERT_CPU_BF16, 0, 0,
     bert_bf16_bfdot, 0, 0},
    {BERT_LOWP_BF16_NEON, BERT_LINEAR_AUTO, "bf16-neon", BERT_PRECISION_BFLOAT16, BERT_ISA_NEON, 0, 0, 0, bert_bf16_neon, 0, 0},
    {BERT_LOWP_INT8_SMMLA, BERT_LINEAR_AUTO, "int8-smmla", BERT_PRECISION_INT8, BERT_ISA_NEON,
     BERT_CPU_I8MM | BERT_CPU_DOTPROD, 0, 0, bert_int8_smmla, 0, 0},
    {BERT_LOWP_INT8_SDOT, BERT_LINEAR_AUTO, "int8-sdot", BERT_PRECISION_INT8, BERT_ISA_NEON, BERT_CPU_DOTPROD, 0, 0,
     bert_int8_sdot, 0, 0},
    {BERT_LOWP_INT8_NEON, BERT_LINEAR_AUTO, "int8-neon", BERT_PRECISION_INT8, BERT_ISA_NEON, 0, 0, 0, bert_int8_neon, 0, 0},
#endif
    {BERT_LOWP_PORTABLE, BERT_LINEAR_AUTO, "portable", BERT_PRECISION_BFLOAT16, BERT_ISA_BASE, 0, 0, 0,
     bert_bf16_portable, 0, 0},
    {BERT_LOWP_PORTABLE, BERT_LINEAR_AUTO, "portable", BERT_PRECISION_INT8, BERT_ISA_BASE, 0, 0, 0, bert_int8_portable, 0, 0},
    {BERT_LOWP_AUTO, BERT_LINEAR_AUTO, NULL, BERT_PRECISION_FLOAT32, BERT_ISA_BASE, 0, 0, 0, NULL, 0, 0},
};

int bert_kernel_runs(const bert_kernel *k, bert_isa isa, unsigned ext)
{
    return isa >= k->isa && (ext & k->extensions) == k->extensions;
}
