/*
 * fast_math.h - erf and e^x as call-free polynomials, so that the loops
 * calling them vectorize (GELU, softmax): the encoder's forward pass and
 * the trainer's forward and backward share them.
 */
#ifndef BERT_FAST_MATH_H
#define BERT_FAST_MATH_H

#include "cpu.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* erf as a rational function of x (the approximation Eigen and XNNPACK
 * use), clamped to [-4, 4] where erf is +-1 in float: within 5e-7 of erf,
 * and free of calls, so the compiler vectorizes the GELU loop.  libm's erff
 * was a tenth of a bert-base forward pass.  Fused multiply-adds, as in
 * exp_poly: 2.80 s to 2.64 s for the same texts, 4.4e-7 from erf. */
BERT_INLINE float erf_clamp(float x) { return x < -4.0f ? -4.0f : x > 4.0f ? 4.0f : x; }

/* erf_rational of x already within [-4, 4] (erf_clamp).  Apart, so that a
 * loop can clamp in a pass of its own: in one loop with the division, GCC
 * vectorizes the clamp only with AVX-512's masks, and GELU's AVX2 loop
 * stayed scalar (7% of an int8 450-token text held to AVX2). */
BERT_INLINE float erf_rational_clamped(float x)
{
    float x2 = x * x;
    float p = fmaf(x2, -2.72614225801306e-10f, 2.77068142495902e-08f);
    p = fmaf(x2, p, -2.10102402082508e-06f);
    p = fmaf(x2, p, -5.69250639462346e-05f);
    p = fmaf(x2, p, -7.34990630326855e-04f);
    p = fmaf(x2, p, -2.95459980854025e-03f);
    p = fmaf(x2, p, -1.60960333262415e-02f);
    float q = fmaf(x2, -1.45660718464996e-05f, -2.13374055278905e-04f);
    q = fmaf(x2, q, -1.68282697438203e-03f);
    q = fmaf(x2, q, -7.37332916720468e-03f);
    q = fmaf(x2, q, -1.42647390514189e-02f);
    return x * p / q;
}

BERT_INLINE float erf_rational(float x) { return erf_rational_clamped(erf_clamp(x)); }

/* e^x for x <= 88 (softmax takes x - max <= 0): Cephes' expf, a degree-6
 * polynomial on x - n ln 2 scaled by 2^n, within 2 ulp of expf.  Free of
 * calls and branches, so the softmax loop vectorizes; libm's expf was 5%
 * of a 450-token text's time.  2^n is built from the bits of the rounding
 * sum itself (no float-to-int conversion, which a NaN would make
 * undefined): the sum carries n in its low mantissa bits.  Fused
 * multiply-adds: every CPU rounds them alike, and the FMA units take the
 * exponential in half the instructions (2.88 s to 2.80 s for 24 int8
 * 450-token texts on one thread).  Within 1.3 ulp of e^x from -87 to 88,
 * checked against double-precision exp at every float. */
BERT_INLINE float exp_poly(float x)
{
    x = x < -87.0f ? -87.0f : x > 88.0f ? 88.0f : x;
    const float round_magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    float t = fmaf(x, 1.44269504088896341f, round_magic);
    float n = t - round_magic;
    float r = fmaf(n, -0.693359375f, x);
    r = fmaf(n, 2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = fmaf(p, r, 1.3981999507e-3f);
    p = fmaf(p, r, 8.3334519073e-3f);
    p = fmaf(p, r, 4.1665795894e-2f);
    p = fmaf(p, r, 1.6666665459e-1f);
    p = fmaf(p, r, 5.0000001201e-1f);
    p = fmaf(p * r, r, r + 1.0f);
    uint32_t tb;
    memcpy(&tb, &t, sizeof tb);
    uint32_t scale_bits = (tb - 0x4b400000u + 127u) << 23;
    float scale;
    memcpy(&scale, &scale_bits, sizeof scale);
    return p * scale;
}

#endif
