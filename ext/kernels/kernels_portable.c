/*
 * kernels_portable.c - the reduced-precision projection kernels in plain C
 * (isa_kernels.h), for any CPU: the reference every vector kernel is tested
 * against, and what runs where no vector kernel does.  float32 has none:
 * without vector instructions of ours, OpenBLAS computes it (linear.c).
 */
#include "isa_kernels.h"

void bert_bf16_portable(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    int cols = a->cols, body = cols - cols % 16;
    for (int i = i0; i < i1; i++) {
        const uint16_t *x = a->x_bf16 + (size_t)i * cols;
        for (int r = r0; r < r1; r++) {
            const uint16_t *w = a->w->bf16 + (size_t)r * cols;
            /* 16 running sums, one per column modulo 16, which the compiler
             * can keep in one vector. */
            float lane[16] = {0};
            for (int c = 0; c < body; c += 16)
                for (int l = 0; l < 16; l++) lane[l] += bert_f32_from_bf16(x[c + l]) * bert_f32_from_bf16(w[c + l]);
            float sum = bert_tail_float(a, i, r, body);
            for (int l = 0; l < 16; l++) sum += lane[l];
            a->out[(size_t)i * a->rows + r] = a->b ? sum + a->b[r] : sum;
        }
    }
}

void bert_int8_portable(const bert_kernel_args *a, int i0, int i1, int r0, int r1)
{
    for (int i = i0; i < i1; i++)
        for (int r = r0; r < r1; r++)
            a->out[(size_t)i * a->rows + r] =
                bert_int8_output(bert_tail_int(a, i, r, 0, 0), a->x_scale[i], a->w->scale[r], a->b, r);
}
