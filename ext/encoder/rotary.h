/*
 * rotary.h - rotary position embeddings: ModernBERT's angle tables of one
 * base and the turn of a row's queries and keys; the inverse frequencies,
 * tables and partial or interleaved turns of nomic-bert and gte "new"
 * (rotary.c).
 */
#ifndef BERT_ROTARY_H
#define BERT_ROTARY_H

#include "../kernels/cpu.h"

/* cos_tab and sin_tab [positions x dh/2]: row p holds cos and sin of p
 * times each inverse frequency 1 / theta^(2i / dh), every step in float32
 * as ModernBertRotaryEmbedding takes it, so that long positions turn by the
 * same angles as in transformers. */
void bert_rotary_tables(float *cos_tab, float *sin_tab, int positions, int dh, double theta);

/* Turns `heads` heads of dh values each, from `row` on (one token's queries
 * or keys), by the angles of position p: each head's first half x1 and
 * second half x2 become x1 cos - x2 sin and x2 cos + x1 sin
 * (apply_rotary_pos_emb with rotate_half), in place; compiled for the
 * instruction set `isa` (bert_cpu_isa()), so that its loop is vectorised
 * for it, with the same results on each. */
void bert_rotary_row_isa(bert_isa isa, float *row, int heads, int dh, const float *cos_p, const float *sin_p);

/* inv[i] = 1 / base^(2i / dim) for i < dim / 2: the exponent, the power
 * and the quotient each in float32, as torch computes
 * 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim)). */
void bert_rotary_inv_freq(float *inv, int dim, double base);

/* cos_tab and sin_tab [positions x half]: row p holds cos and sin of the
 * float32 product p * inv[i]. */
void bert_rotary_tables_inv(float *cos_tab, float *sin_tab, int positions, int half, const float *inv);

/* Turns the first rot_dim values of each of `heads` heads of dh values, in
 * place, by the angles of one position (rot_dim / 2 of them): as
 * bert_rotary_row_isa over the halves of those values, or, interleaved, each
 * pair (x[2i], x[2i+1]) by angle i (rotate_half with interleaved=True);
 * the values past rot_dim are left as they are. */
void bert_rotary_row_part(float *row, int heads, int dh, int rot_dim, int interleaved, const float *cos_p,
                          const float *sin_p);

#endif
