/*
 * linear.h - the projections of the encoder: out = in W^T + b, with W laid
 * out [rows x cols] as nn.Linear and the checkpoints store it.
 *
 * Large products go to OpenBLAS.  A product over a few tokens (one sentence
 * row by row, a fill-mask head over its masks) goes to a kernel of our own
 * that reads W where it lies: OpenBLAS copies all of W into its packed
 * layout on every call, and for a sentence of 15 tokens that copy costs as
 * much as the arithmetic.
 */
#ifndef BERT_LINEAR_H
#define BERT_LINEAR_H

#include "cpu.h"
#include "workers.h"

/* How one connection's model computes its products, chosen once. */
typedef struct {
    bert_isa isa;           /* vector instructions of the few-rows kernel */
    int few_rows_max;       /* products of up to this many input rows use it */
    bert_workers *workers;  /* helper threads, or NULL: the calling thread only */
    int threads;            /* threads a product, the caller's included */
} bert_linear_plan;

/* The plan for instruction set `isa` (bert_cpu_isa()), on one thread. */
bert_linear_plan bert_linear_plan_for(bert_isa isa);

/* out[n x rows] = in[n x cols] W^T + b; W is [rows x cols], b may be NULL.
 * The product is split into chunks over the plan's threads: chunks of
 * weight rows for a few input rows, else chunks of input rows (OpenBLAS
 * then runs single-threaded in each). */
void bert_linear(const bert_linear_plan *plan, float *out, const float *in, const float *w,
                 const float *b, int n, int rows, int cols);

/* The kernels, for tests and benchmarks. */
typedef enum {
    BERT_LINEAR_AUTO = 0, /* bert_linear's own choice */
    BERT_LINEAR_BLAS,     /* always cblas_sgemm */
    BERT_LINEAR_AVX2,     /* the few-rows kernel, 256-bit */
    BERT_LINEAR_AVX512    /* the few-rows kernel, 512-bit */
} bert_linear_kernel;

/* Runs one kernel at any n over up to `threads` threads of `workers`; -1
 * (nothing written) when this CPU or shape cannot use it: the few-rows
 * kernels need cols to be a multiple of 16. */
int bert_linear_with(bert_linear_kernel kernel, bert_workers *workers, int threads, float *out,
                     const float *in, const float *w, const float *b, int n, int rows, int cols);

#endif
