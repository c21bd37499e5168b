/*
 * cpu.c - run-time choice of vector instructions.
 */
#include "cpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#ifdef BERT_X86_KERNELS
#include <cpuid.h>
#include <stdint.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif
#ifdef BERT_ARM64_KERNELS
#include <sys/auxv.h>
/* The kernel's bits (asm/hwcap.h), for C libraries that predate them. */
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13)
#endif
#ifndef HWCAP2_BF16
#define HWCAP2_BF16 (1 << 14)
#endif
#endif

static bert_isa best_isa = BERT_ISA_BASE;
static unsigned best_extensions;
static pthread_once_t detected = PTHREAD_ONCE_INIT;

#ifdef BERT_X86_KERNELS
/* The OS's enabled state components (XCR0); OSXSAVE is implied by the
 * AVX checks that come first. */
static uint64_t enabled_state(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

/* AMX tiles need the OS to save their 8 KB of state: XCR0's XTILECFG and
 * XTILEDATA bits, and on Linux the process's permission, asked for once
 * (it is process-wide, so helper threads have it too).  Linux refuses it
 * when a thread's alternate signal stack is too small for the larger
 * signal frame; the int8 and bfloat16 kernels then stay on VNNI and BF16. */
static int amx_usable(void)
{
    const uint64_t tile_state = (uint64_t)3 << 17;
    if ((enabled_state() & tile_state) != tile_state) return 0;
#if defined(__linux__) && defined(SYS_arch_prctl)
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
    return 0;
#endif
}
#endif

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
    unsigned leaf7_ecx = c, leaf7_edx = d, leaf7_max = a;
    unsigned leaf71_eax = 0;
    if (leaf7_max >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) leaf71_eax = a;
    if (leaf71_eax & (1u << 4)) best_extensions |= BERT_CPU_AVX_VNNI;
    if (best_isa == BERT_ISA_AVX512) {
        if (leaf71_eax & (1u << 5)) best_extensions |= BERT_CPU_AVX512_BF16;
        if ((leaf7_ecx & (1u << 11)) && __builtin_cpu_supports("avx512bw")) best_extensions |= BERT_CPU_AVX512_VNNI;
        /* AMX-TILE with AMX-INT8 (bit 25) and AMX-BF16 (bit 22); the
         * kernels' finishing code is AVX-512. */
        if ((leaf7_edx & (1u << 24)) && (leaf7_edx & (9u << 22)) && amx_usable()) {
            if (leaf7_edx & (1u << 25)) best_extensions |= BERT_CPU_AMX_INT8;
            if (leaf7_edx & (1u << 22)) best_extensions |= BERT_CPU_AMX_BF16;
        }
    }
    /* vpdpbf16ps is used with AVX-512BW's masked 16-bit loads as well. */
    if (!__builtin_cpu_supports("avx512bw")) best_extensions &= ~(unsigned)BERT_CPU_AVX512_BF16;
#endif
#ifdef BERT_ARM64_KERNELS
    /* What the kernel reports, not what the compiler targeted: one binary
     * for every arm64 CPU. */
    unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
    if (!(hwcap & HWCAP_ASIMD)) return;
    best_isa = BERT_ISA_NEON;
    if (hwcap & HWCAP_ASIMDDP) best_extensions |= BERT_CPU_DOTPROD;
    /* No CPU has the matrix multiplies without the dot products, and the
     * SMMLA kernel takes a single row through SDOT. */
    if ((hwcap2 & HWCAP2_I8MM) && (hwcap & HWCAP_ASIMDDP)) best_extensions |= BERT_CPU_I8MM;
    if (hwcap2 & HWCAP2_BF16) best_extensions |= BERT_CPU_BF16;
#endif
}

/* 1 when the environment variable SQLITE_BERT_ISA is `level`. */
static int capped_at(const char *level)
{
    const char *cap = getenv("SQLITE_BERT_ISA");
    return cap && strcmp(cap, level) == 0;
}

bert_isa bert_cpu_isa(void)
{
    /* What the CPU offers does not change: asked once per process. */
    pthread_once(&detected, detect);
    /* SQLITE_BERT_ISA lowers the choice, to compare or rule out a code path. */
    if (capped_at("base")) return BERT_ISA_BASE;
    if (capped_at("avx2") && best_isa == BERT_ISA_AVX512) return BERT_ISA_AVX2;
    return best_isa;
}

unsigned bert_cpu_extensions(void)
{
    pthread_once(&detected, detect);
    if (capped_at("base") || capped_at("avx2") || capped_at("avx512") || capped_at("neon")) return 0;
    if (capped_at("dotprod")) return best_extensions & BERT_CPU_DOTPROD;
    if (capped_at("vnni")) return best_extensions & ~(unsigned)(BERT_CPU_AMX_INT8 | BERT_CPU_AMX_BF16);
    return best_extensions;
}

const char *bert_cpu_extension_name(unsigned flag)
{
    switch (flag) {
    case BERT_CPU_AVX512_BF16: return "avx512_bf16";
    case BERT_CPU_AVX512_VNNI: return "avx512_vnni";
    case BERT_CPU_AVX_VNNI: return "avx_vnni";
    case BERT_CPU_DOTPROD: return "dotprod";
    case BERT_CPU_I8MM: return "i8mm";
    case BERT_CPU_BF16: return "bf16";
    case BERT_CPU_AMX_INT8: return "amx_int8";
    case BERT_CPU_AMX_BF16: return "amx_bf16";
    default: return "";
    }
}

const char *bert_cpu_isa_name(bert_isa isa)
{
    switch (isa) {
    case BERT_ISA_AVX512: return "avx512";
    case BERT_ISA_AVX2: return "avx2";
    case BERT_ISA_NEON: return "neon";
    default: return "base";
    }
}
