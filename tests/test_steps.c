/*
 * test_steps.c - the element-wise steps of a layer (ext/encoder/steps.c,
 * the rotary turn of rotary.c), compiled per instruction set, against
 * double-precision references written here, on every instruction set this
 * CPU runs and on lengths that leave every vector remainder.
 */
#include "test.h"
#include "../ext/encoder/rotary.h"
#include "../ext/encoder/steps.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static double act_ref(double x, bert_activation act)
{
    switch (act) {
    case BERT_ACT_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case BERT_ACT_GELU_TANH: return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case BERT_ACT_RELU: return x > 0 ? x : 0;
    case BERT_ACT_SILU: return x / (1.0 + exp(-x));
    case BERT_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    }
    return NAN;
}

/* apply_rotary_pos_emb's turn with rotate_half, as a plain loop. */
static void rotary_ref(float *row, int heads, int dh, const float *cos_p, const float *sin_p)
{
    const int half = dh / 2;
    for (int h = 0; h < heads; h++) {
        float *x1 = row + (long)h * dh, *x2 = x1 + half;
        for (int i = 0; i < half; i++) {
            float a = x1[i], b = x2[i];
            x1[i] = a * cos_p[i] - b * sin_p[i];
            x2[i] = b * cos_p[i] + a * sin_p[i];
        }
    }
}

/* The instruction sets this CPU runs, best last; *n of them. */
static int isas_here(bert_isa *out)
{
    const bert_isa best = bert_cpu_isa();
    int n = 0;
    out[n++] = BERT_ISA_BASE;
    if (best == BERT_ISA_AVX2 || best == BERT_ISA_AVX512) out[n++] = BERT_ISA_AVX2;
    if (best == BERT_ISA_AVX512) out[n++] = BERT_ISA_AVX512;
    if (best == BERT_ISA_NEON) out[n++] = BERT_ISA_NEON;
    return n;
}

static float uniform(uint32_t *s, float scale)
{
    *s = *s * 1664525u + 1013904223u;
    return ((float)(*s >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
}

/* Within 1e-5 of the input's or the result's size (or of 1): fast_math.h's
 * erf is within 5e-7 of erf, which GELU scales by x. */
static int close_to(double got, double want, double x)
{
    double size = fabs(want) > fabs(x) ? fabs(want) : fabs(x);
    return fabs(got - want) <= 1e-5 * (size > 1 ? size : 1);
}

static void check_activations(void)
{
    t_case("activations and gated MLPs (GELU, GELU-tanh, ReLU, SiLU) on every instruction set");
    static const bert_activation acts[] = {BERT_ACT_GELU, BERT_ACT_GELU_TANH, BERT_ACT_RELU, BERT_ACT_SILU, BERT_ACT_SIGMOID};
    bert_isa isas[4];
    const int n_isas = isas_here(isas);
    enum { ROWS = 3, MAX_DIM = 67 };
    float in[ROWS * 2 * MAX_DIM], out[ROWS * MAX_DIM], x[ROWS * MAX_DIM];
    uint32_t seed = 7;
    for (size_t i = 0; i < sizeof in / sizeof *in; i++) in[i] = uniform(&seed, 12.0f);
    in[0] = 100.0f;   /* far past e^x's clamp both ways */
    in[1] = -100.0f;
    for (int a = 0; a < 4; a++)
        for (int i = 0; i < n_isas; i++)
            for (int dim = 1; dim <= MAX_DIM; dim += 11) {
                bert_step_gated(isas[i], out, in, ROWS, dim, acts[a]);
                int bad = 0;
                for (int r = 0; r < ROWS; r++)
                    for (int c = 0; c < dim; c++) {
                        double want = act_ref(in[r * 2 * dim + c], acts[a]) * in[r * 2 * dim + dim + c];
                        bad += !close_to(out[r * dim + c], want, in[r * 2 * dim + c]);
                    }
                T_CHECK(!bad, "gated, activation %d, %s, dim %d: %d values off", a, bert_cpu_isa_name(isas[i]), dim,
                        bad);
                memcpy(x, in, (size_t)ROWS * dim * sizeof *x);
                bert_step_activate(isas[i], x, (size_t)ROWS * dim, acts[a]);
                bad = 0;
                for (int c = 0; c < ROWS * dim; c++) bad += !close_to(x[c], act_ref(in[c], acts[a]), in[c]);
                T_CHECK(!bad, "activate, activation %d, %s, %d values: %d off", a, bert_cpu_isa_name(isas[i]),
                        ROWS * dim, bad);
            }
}

static void check_rotary_and_add(void)
{
    t_case("rotary turn and residual add on every instruction set, against the portable turn");
    bert_isa isas[4];
    const int n_isas = isas_here(isas);
    enum { HEADS = 3, DH = 2 * 37 };
    float row[HEADS * DH], want[HEADS * DH], got[HEADS * DH], cosv[DH / 2], sinv[DH / 2];
    uint32_t seed = 11;
    for (int i = 0; i < HEADS * DH; i++) row[i] = uniform(&seed, 3.0f);
    for (int i = 0; i < DH / 2; i++) {
        cosv[i] = cosf(0.1f * (float)i);
        sinv[i] = sinf(0.1f * (float)i);
    }
    memcpy(want, row, sizeof row);
    rotary_ref(want, HEADS, DH, cosv, sinv);
    for (int i = 0; i < n_isas; i++) {
        memcpy(got, row, sizeof got);
        bert_rotary_row_isa(isas[i], got, HEADS, DH, cosv, sinv);
        T_CHECK(memcmp(got, want, sizeof got) == 0, "rotary on %s differs from the plain turn",
                bert_cpu_isa_name(isas[i]));
        for (int n = 1; n <= HEADS * DH; n += 13) {
            memcpy(got, want, sizeof got);
            bert_step_add(isas[i], got, row, (size_t)n);
            int bad = 0;
            for (int c = 0; c < HEADS * DH; c++) bad += got[c] != (c < n ? want[c] + row[c] : want[c]);
            T_CHECK(!bad, "add on %s, %d values: %d off", bert_cpu_isa_name(isas[i]), n, bad);
        }
    }
}

/* A bias by distance and DeBERTa's gathered terms, against plain loops,
 * on blocks of rows that start inside a sequence. */
static void check_score_terms(void)
{
    t_case("attention's position terms (a bias by distance, DeBERTa's c2p and p2c) on every instruction set");
    bert_isa isas[4];
    const int n_isas = isas_here(isas);
    enum { LONGEST = 53, R = 9, M = 7, LD = 64 };
    float table[2 * LONGEST - 1], c2p[M * R], p2c[LONGEST * R], scores[M * LD], want[M * LD];
    int32_t rows[2 * LONGEST - 1];
    uint32_t seed = 5;
    for (int i = 0; i < 2 * LONGEST - 1; i++) {
        table[i] = uniform(&seed, 1.0f);
        rows[i] = (int32_t)((i * 7 + 3) % R);
    }
    for (int i = 0; i < M * R; i++) c2p[i] = uniform(&seed, 1.0f);
    for (int i = 0; i < LONGEST * R; i++) p2c[i] = uniform(&seed, 1.0f);
    for (int i = 0; i < n_isas; i++)
        for (int len = 1; len <= LONGEST; len += 13)
            for (int q0 = 0; q0 + M <= len || q0 == 0; q0 += 5) {
                const int m = q0 + M <= len ? M : len - q0;
                for (int terms = 0; terms < 4; terms++) {
                    const float *cq = terms & 1 ? c2p : NULL, *pk = terms & 2 ? p2c : NULL;
                    for (int e = 0; e < M * LD; e++) scores[e] = want[e] = (float)e;
                    const int32_t *from = rows + (LONGEST - 1) - q0;
                    if (terms == 0)
                        bert_step_add_by_distance(isas[i], scores, LD, table + (LONGEST - 1), q0, m, len);
                    else
                        bert_step_add_disentangled(isas[i], scores, LD, m, len, cq, pk, R, from);
                    for (int r = 0; r < m; r++)
                        for (int c = 0; c < len; c++) {
                            float *w = want + r * LD + c;
                            if (terms == 0) *w += table[(LONGEST - 1) + c - (q0 + r)];
                            const int32_t k = rows[(LONGEST - 1) - (q0 + r) + c];
                            if (cq) *w += cq[r * R + k] + (pk ? pk[c * R + k] : 0.0f);
                            else if (pk) *w += pk[c * R + k];
                        }
                    T_CHECK(memcmp(scores, want, sizeof want) == 0, "terms %d on %s, len %d, rows %d..%d differ",
                            terms, bert_cpu_isa_name(isas[i]), len, q0, q0 + m);
                }
            }
}

void suite_steps(void)
{
    check_activations();
    check_rotary_and_add();
    check_score_terms();
}
