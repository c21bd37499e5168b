/*
 * steps.c - a layer's element-wise steps, each body written once as plain
 * loops free of calls and branches and compiled per instruction set by
 * BERT_MULTIVERSION, as the encoder's GELU, LayerNorm and softmax are.
 * Their inputs and outputs never overlap (restrict), so that the vector
 * loops need no run-time checks for it.
 */
#include "steps.h"
#include "../kernels/fast_math.h"

#include <math.h>

/* transformers' GELUActivation (erf). */
BERT_INLINE float gelu_erf_1(float x) { return 0.5f * x * (1.0f + erf_rational(x * (float)M_SQRT1_2)); }

/* gelu_new / gelu_pytorch_tanh: tanh(u) as 1 - 2 / (e^2u + 1), so that the
 * loop has no call (tanhf kept it scalar); within 2e-7 of tanhf, which the
 * factor 0.5 x keeps below float32's rounding of the result. */
BERT_INLINE float gelu_tanh_1(float x)
{
    float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    float t = 1.0f - 2.0f / (exp_poly(2.0f * u) + 1.0f);
    return 0.5f * x * (1.0f + t);
}

BERT_INLINE float relu_1(float x) { return x > 0.0f ? x : 0.0f; }

/* SiLU, x sigmoid(x): e^-x clamped by exp_poly at e^88, so that a very
 * negative x gives -0, not a NaN. */
BERT_INLINE float silu_1(float x) { return x / (1.0f + exp_poly(-x)); }

/* The sigmoid gate of nomic-bert's "glu" MLP, clamped as silu_1. */
BERT_INLINE float sigmoid_1(float x) { return 1.0f / (1.0f + exp_poly(-x)); }

/* One loop per activation, so that each vectorizes on its own. */
#define EACH_ACTIVATION(act, LOOP)   \
    switch (act) {                   \
    case BERT_ACT_GELU: LOOP(gelu_erf_1); break;   \
    case BERT_ACT_GELU_TANH: LOOP(gelu_tanh_1); break; \
    case BERT_ACT_RELU: LOOP(relu_1); break;       \
    case BERT_ACT_SILU: LOOP(silu_1); break;       \
    case BERT_ACT_SIGMOID: LOOP(sigmoid_1); break; \
    }

/* GELU with erf's argument clamped a block at a time in a loop of its own
 * (fast_math.h, erf_rational_clamped), the same values as gelu_erf_1's: in
 * one loop with the division GCC vectorizes the clamp only with AVX-512's
 * masks, and the AVX2 loop stayed scalar. */
BERT_INLINE void gelu_erf_blocks(float *x, size_t n)
{
    enum { BLOCK = 256 };
    float arg[BLOCK];
    for (size_t i0 = 0; i0 < n; i0 += BLOCK) {
        const size_t m = n - i0 < BLOCK ? n - i0 : BLOCK;
        float *v = x + i0;
        for (size_t i = 0; i < m; i++) arg[i] = erf_clamp(v[i] * (float)M_SQRT1_2);
        for (size_t i = 0; i < m; i++) v[i] = 0.5f * v[i] * (1.0f + erf_rational_clamped(arg[i]));
    }
}

BERT_INLINE void activate_body(float *x, size_t n, bert_activation act)
{
    if (act == BERT_ACT_GELU) {
        gelu_erf_blocks(x, n);
        return;
    }
#define ACTIVATE(f) for (size_t i = 0; i < n; i++) x[i] = f(x[i])
    EACH_ACTIVATION(act, ACTIVATE)
#undef ACTIVATE
}
BERT_MULTIVERSION(activate, (float *x, size_t n, bert_activation act), (x, n, act))

void bert_step_activate(bert_isa isa, float *x, size_t n, bert_activation act) { activate(isa, x, n, act); }

/* Activation and gate in one pass: the copy, the activation and the
 * product in three passes over [n x dim] read the rows three times. */
BERT_INLINE void gated_body(float *restrict out, const float *restrict in, int n, int dim, bert_activation act)
{
    for (int r = 0; r < n; r++) {
        const float *a = in + (size_t)r * 2 * (size_t)dim, *g = a + dim;
        float *y = out + (size_t)r * (size_t)dim;
#define GATED(f) for (int c = 0; c < dim; c++) y[c] = f(a[c]) * g[c]
        EACH_ACTIVATION(act, GATED)
#undef GATED
    }
}
BERT_MULTIVERSION(gated, (float *out, const float *in, int n, int dim, bert_activation act),
                  (out, in, n, dim, act))

void bert_step_gated(bert_isa isa, float *out, const float *in, int n, int dim, bert_activation act)
{
    gated(isa, out, in, n, dim, act);
}

BERT_INLINE void add_body(float *restrict y, const float *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}
BERT_MULTIVERSION(add, (float *y, const float *x, size_t n), (y, x, n))

void bert_step_add(bert_isa isa, float *y, const float *x, size_t n) { add(isa, y, x, n); }

BERT_INLINE void by_distance_body(float *restrict scores, int ld, const float *restrict centre, int q0, int m,
                                  int len)
{
    for (int i = 0; i < m; i++) {
        float *row = scores + (size_t)i * (size_t)ld;
        const float *bias = centre - (q0 + i);
        for (int j = 0; j < len; j++) row[j] += bias[j];
    }
}
BERT_MULTIVERSION(by_distance, (float *scores, int ld, const float *centre, int q0, int m, int len),
                  (scores, ld, centre, q0, m, len))

void bert_step_add_by_distance(bert_isa isa, float *scores, int ld, const float *centre, int q0, int m, int len)
{
    by_distance(isa, scores, ld, centre, q0, m, len);
}

/* Gathers with 32-bit indices (vpgatherdd on AVX2 and AVX-512): the
 * relative rows differ from column to column only near the diagonal and
 * past the exact buckets, but a row of scores has no runs to copy. */
BERT_INLINE void disentangled_body(float *restrict scores, int ld, int m, int len, const float *restrict c2p,
                                   const float *restrict p2c, int R, const int32_t *restrict rows)
{
    for (int i = 0; i < m; i++) {
        float *row = scores + (size_t)i * (size_t)ld;
        const int32_t *r = rows - i;
        const float *cq = c2p ? c2p + (size_t)i * (size_t)R : NULL;
        if (cq && p2c)
            for (int c = 0; c < len; c++) row[c] += cq[r[c]] + p2c[c * R + r[c]];
        else if (cq)
            for (int c = 0; c < len; c++) row[c] += cq[r[c]];
        else if (p2c)
            for (int c = 0; c < len; c++) row[c] += p2c[c * R + r[c]];
    }
}
BERT_MULTIVERSION(disentangled,
                  (float *scores, int ld, int m, int len, const float *c2p, const float *p2c, int R,
                   const int32_t *rows),
                  (scores, ld, m, len, c2p, p2c, R, rows))

void bert_step_add_disentangled(bert_isa isa, float *scores, int ld, int m, int len, const float *c2p,
                                const float *p2c, int R, const int32_t *rows)
{
    disentangled(isa, scores, ld, m, len, c2p, p2c, R, rows);
}
