/*
 * steps.h - the element-wise steps of a layer that are not products: the
 * activations and gated MLPs (GeGLU, SwiGLU, ReGLU), a residual add, and
 * the position terms added to attention's scores (a bias by distance, as
 * MPNet's buckets and JinaBERT's ALiBi give it; DeBERTa's disentangled
 * terms gathered from their products).  Each is compiled for AVX-512, AVX2
 * and the build's own target (SSE2 on x86, NEON on arm64) and runs the one
 * `isa` names (bert_cpu_isa(), chosen once); the encoder shares them out
 * over its threads by rows or heads (steps.c).  What a step writes must
 * not overlap what it reads, bar bert_step_activate's one array.
 */
#ifndef BERT_STEPS_H
#define BERT_STEPS_H

#include "model.h"
#include "../kernels/cpu.h"

#include <stddef.h>
#include <stdint.h>

/* x[0..n) = act(x), in place. */
void bert_step_activate(bert_isa isa, float *x, size_t n, bert_activation act);

/* A gated MLP's middle, out[n x dim] = act(in's first halves) * in's
 * second halves, in [n x 2 dim] (ModernBertMLP, JinaBertGLUMLP: the input
 * half then the gate half of each row). */
void bert_step_gated(bert_isa isa, float *out, const float *in, int n, int dim, bert_activation act);

/* y[0..n) += x. */
void bert_step_add(bert_isa isa, float *y, const float *x, size_t n);

/* scores[i][j] += centre[j - (q0 + i)] for rows i < m and columns j < len
 * (leading dimension ld): a bias by relative position, centre pointing at
 * distance 0 of a table that reaches every j - i. */
void bert_step_add_by_distance(bert_isa isa, float *scores, int ld, const float *centre, int q0, int m, int len);

/* DeBERTa's disentangled terms added to m rows of scores (leading dimension
 * ld) of len keys: row i, column c gains c2p[i][r] + p2c[c][r] (either may
 * be NULL), both [* x R], where r = rows[c - i] is the relative embedding
 * that query q0 + i and key c share (rows points at query q0's index of
 * key 0, so row i's indices start i places before). */
void bert_step_add_disentangled(bert_isa isa, float *scores, int ld, int m, int len, const float *c2p,
                                const float *p2c, int R, const int32_t *rows);

#endif
