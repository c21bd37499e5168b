/*
 * rotary.c - the angle tables and the turn of ModernBERT's rotary position
 * embeddings (modeling_modernbert.py: ModernBertRotaryEmbedding,
 * apply_rotary_pos_emb).
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

void bert_rotary_row(float *row, int heads, int dh, const float *cos_p, const float *sin_p)
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

/* restrict: without it the vectorized loop checks its four rows for overlap
 * at every head, and took three times the scalar turn's time. */
BERT_INLINE void rotary_body(float *restrict out, const float *restrict in, int heads, int dh,
                             const float *restrict cos_p, const float *restrict sin_p)
{
    const int half = dh / 2;
    for (int h = 0; h < heads; h++) {
        const float *x1 = in + (long)h * dh, *x2 = x1 + half;
        float *y1 = out + (long)h * dh, *y2 = y1 + half;
        for (int i = 0; i < half; i++) {
            float a = x1[i], b = x2[i];
            y1[i] = a * cos_p[i] - b * sin_p[i];
            y2[i] = b * cos_p[i] + a * sin_p[i];
        }
    }
}
BERT_MULTIVERSION(rotary, (float *out, const float *in, int heads, int dh, const float *cos_p, const float *sin_p),
                  (out, in, heads, dh, cos_p, sin_p))

void bert_rotary_row_isa(bert_isa isa, float *out, const float *in, int heads, int dh, const float *cos_p,
                         const float *sin_p)
{
    rotary(isa, out, in, heads, dh, cos_p, sin_p);
}
