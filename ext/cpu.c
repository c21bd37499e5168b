/*
 * cpu.c - run-time choice of vector instructions.
 */
#include "cpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#ifdef BERT_X86_KERNELS
#include <cpuid.h>
#endif

static bert_isa best_isa = BERT_ISA_BASE;
static unsigned best_extensions;
static pthread_once_t detected = PTHREAD_ONCE_INIT;

static void detect(void)
{
#ifdef BERT_X86_KERNELS
    /* The compiler's runtime checks that the OS saves the wider registers too. */
    /* AVX-512 with BW: the 512-bit kernels (kernels_avx512.c) are compiled
     * for it; every AVX-512 CPU but the Xeon Phi has it. */
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("fma"))
        best_isa = BERT_ISA_AVX512;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best_isa = BERT_ISA_AVX2;
    /* The extensions' own bits; the registers they use are those whose
     * saving the checks above established. */
    unsigned a, b, c, d;
    if (best_isa == BERT_ISA_BASE || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return;
    unsigned leaf7_ecx = c, leaf7_max = a;
    unsigned leaf71_eax = 0;
    if (leaf7_max >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) leaf71_eax = a;
    if (leaf71_eax & (1u << 4)) best_extensions |= BERT_CPU_AVX_VNNI;
    if (best_isa == BERT_ISA_AVX512) {
        if (leaf71_eax & (1u << 5)) best_extensions |= BERT_CPU_AVX512_BF16;
        if ((leaf7_ecx & (1u << 11)) && __builtin_cpu_supports("avx512bw")) best_extensions |= BERT_CPU_AVX512_VNNI;
    }
    /* vpdpbf16ps is used with AVX-512BW's masked 16-bit loads as well. */
    if (!__builtin_cpu_supports("avx512bw")) best_extensions &= ~(unsigned)BERT_CPU_AVX512_BF16;
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

unsigned bert_cpu_extensions(void)
{
    pthread_once(&detected, detect);
    const char *cap = getenv("SQLITE_BERT_ISA");
    if (cap && (strcmp(cap, "base") == 0 || strcmp(cap, "avx2") == 0 || strcmp(cap, "avx512") == 0)) return 0;
    return best_extensions;
}

const char *bert_cpu_extension_name(unsigned flag)
{
    switch (flag) {
    case BERT_CPU_AVX512_BF16: return "avx512_bf16";
    case BERT_CPU_AVX512_VNNI: return "avx512_vnni";
    case BERT_CPU_AVX_VNNI: return "avx_vnni";
    default: return "";
    }
}

const char *bert_cpu_isa_name(bert_isa isa)
{
    switch (isa) {
    case BERT_ISA_AVX512: return "avx512";
    case BERT_ISA_AVX2: return "avx2";
    default: return "base";
    }
}
