/*
 * cpu.h - which vector instructions this CPU offers, for the few hot loops
 * that are compiled twice more (AVX2, AVX-512) beside the portable build.
 */
#ifndef BERT_CPU_H
#define BERT_CPU_H

typedef enum {
    BERT_ISA_BASE = 0, /* what the compiler targets by default */
    BERT_ISA_AVX2,     /* AVX2 and FMA */
    BERT_ISA_AVX512    /* AVX-512F and FMA */
} bert_isa;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BERT_X86_KERNELS 1
#define BERT_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define BERT_TARGET_AVX512 __attribute__((target("avx512f,fma")))
#endif

/* The best of the above that this CPU and its OS support, lowered to
 * "avx2" or "base" when the environment variable SQLITE_BERT_ISA says so. */
bert_isa bert_cpu_isa(void);

/* "avx512", "avx2" or "base". */
const char *bert_cpu_isa_name(bert_isa isa);

#endif
