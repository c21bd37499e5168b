/*
 * kernels.h - the table of projection kernels (kernels.c): which precision
 * each computes and what the CPU must have for it, for linear.c and
 * linear_lowp.c to choose from.  The kernels themselves, one file per
 * instruction set, are declared in isa_kernels.h.
 */
#ifndef BERT_KERNELS_H
#define BERT_KERNELS_H

#include "cpu.h"
#include "isa_kernels.h"
#include "kernel_types.h"

/* A kernel and what it needs. */
typedef struct {
    bert_lowp_kernel id;       /* its number in bert_lowp_kernel; float32's: BERT_LOWP_AUTO */
    bert_linear_kernel f32_id; /* float32 kernels: their number in bert_linear_kernel */
    const char *name;
    bert_precision precision;
    bert_isa isa;              /* the instruction set it needs, at least */
    unsigned extensions;       /* BERT_CPU_* flags it needs besides */
    int input_offset;          /* int8: added to the quantized input (128: unsigned bytes) */
    int packed;                /* 1: reads W as packed at load (f32_packed, tiles) */
    bert_kernel_fn run;
    int narrow;                /* int8: 1 when it needs W held to 7 bits (bert_matrix.int8_narrow) */
    int input_u7;              /* int8: 1 when it takes input quantized to unsigned 7 bits with a zero point */
} bert_kernel;

/* Every kernel this build has, fastest first within each precision; ends
 * with an entry whose run is NULL. */
extern const bert_kernel bert_kernels_table[];

/* 1 when a CPU of instruction set isa with extensions ext runs k. */
int bert_kernel_runs(const bert_kernel *k, bert_isa isa, unsigned ext);

#endif
