/*
 * rotary.c - the angle tables and the turn of ModernBERT's rotary position
 * embeddings (modeling_modernbert.py: ModernBertRotaryEmbedding,
 * apply_rotary_pos_emb), and those of nomic-bert (NomicBertRotaryEmbedding,
 * apply_rotary_emb: a fraction of the head, halves or interleaved pairs)
 * and gte "new" (RotaryEmbedding, NTKScalingRotaryEmbedding).
 */
#include "rotary.h"

#include <math.h>

void bert_rotary_tables(float *cos_tab, float *sin_tab, int positions, int dh, double theta)
{
    const int half = dh / 2;
    for (int i = 0; i < half; i++) {
        /* 1.0 / (base ** (arange(0, dim, 2).float() / dim)), in float32. */
        float exponent = (float)(2 * i) / (float)dh;
        float inv = 1.0f / powf((float)theta, exponent);
        for (int p = 0; p < positions; p++) {
            /* The position times the frequency, rounded to float32 before
             * cos and sin as the float32 product transformers takes. */
            float angle = (float)p * inv;
            cos_tab[(long)p * half + i] = cosf(angle);
            sin_tab[(long)p * half + i] = sinf(angle);
        }
    }
}

/* In place: writing the turned rows straight from the
 * fused projection into cold query and key rows stalled on those stores,
 * several times the time of copying them first (memcpy) and turning them
 * where they lie.  restrict: the tables are apart from the row. */
BERT_INLINE void rotary_body(float *restrict row, int heads, int dh, const float *restrict cos_p,
                             const float *restrict sin_p)
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
BERT_MULTIVERSION(rotary, (float *row, int heads, int dh, const float *cos_p, const float *sin_p),
                  (row, heads, dh, cos_p, sin_p))

void bert_rotary_row_isa(bert_isa isa, float *row, int heads, int dh, const float *cos_p, const float *sin_p)
{
    rotary(isa, row, heads, dh, cos_p, sin_p);
}

void bert_rotary_inv_freq(float *inv, int dim, double base)
{
    for (int i = 0; i < dim / 2; i++) inv[i] = 1.0f / powf((float)base, (float)(2 * i) / (float)dim);
}

void bert_rotary_tables_inv(float *cos_tab, float *sin_tab, int positions, int half, const float *inv)
{
    for (int p = 0; p < positions; p++)
        for (int i = 0; i < half; i++) {
            float angle = (float)p * inv[i];
            cos_tab[(long)p * half + i] = cosf(angle);
            sin_tab[(long)p * half + i] = sinf(angle);
        }
}

void bert_rotary_row_part(float *row, int heads, int dh, int rot_dim, int interleaved, const float *cos_p,
                          const float *sin_p)
{
    const int half = rot_dim / 2;
    for (int h = 0; h < heads; h++) {
        float *x = row + (long)h * dh;
        for (int i = 0; i < half; i++) {
            float *a = interleaved ? x + 2 * i : x + i, *b = interleaved ? x + 2 * i + 1 : x + i + half;
            float va = *a, vb = *b;
            *a = va * cos_p[i] - vb * sin_p[i];
            *b = vb * cos_p[i] + va * sin_p[i];
        }
    }
}
