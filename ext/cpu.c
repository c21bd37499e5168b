/*
 * cpu.c - run-time choice of vector instructions.
 */
#include "cpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static bert_isa best_isa = BERT_ISA_BASE;
static pthread_once_t detected = PTHREAD_ONCE_INIT;

static void detect(void)
{
#ifdef BERT_X86_KERNELS
    /* The compiler's runtime checks that the OS saves the wider registers too. */
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) best_isa = BERT_ISA_AVX512;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best_isa = BERT_ISA_AVX2;
#endif
}

bert_isa bert_cpu_isa(void)
{
    /* What the CPU offers does not change: asked once per process. */
    pthread_once(&detected, detect);
    bert_isa best = best_isa;
    /* SQLITE_BERT_ISA lowers the choice, to compare or rule out a code path. */
    const char *cap = getenv("SQLITE_BERT_ISA");
    if (cap && strcmp(cap, "base") == 0) return BERT_ISA_BASE;
    if (cap && strcmp(cap, "avx2") == 0 && best > BERT_ISA_AVX2) return BERT_ISA_AVX2;
    return best;
}

const char *bert_cpu_isa_name(bert_isa isa)
{
    switch (isa) {
    case BERT_ISA_AVX512: return "avx512";
    case BERT_ISA_AVX2: return "avx2";
    default: return "base";
    }
}
