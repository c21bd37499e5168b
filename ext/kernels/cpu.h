/*
 * cpu.h - which vector instructions this CPU offers, for the few hot loops
 * that are compiled twice more (AVX2, AVX-512) beside the portable build,
 * and for the arm64 kernels (kernels_neon.c).
 */
#ifndef BERT_CPU_H
#define BERT_CPU_H

typedef enum {
    BERT_ISA_BASE = 0, /* what the compiler targets by default */
    BERT_ISA_AVX2,     /* AVX2 and FMA */
    BERT_ISA_AVX512,   /* AVX-512F, AVX-512BW and FMA */
    BERT_ISA_NEON      /* arm64 Advanced SIMD, which every arm64 CPU has */
} bert_isa;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BERT_X86_KERNELS 1
#define BERT_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define BERT_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,fma")))
#endif

/* arm64: NEON is the baseline; the dot-product, matrix-multiply and
 * bfloat16 instructions are compiled through target attributes
 * (kernels_neon.c) and used where the CPU reports them. */
#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#define BERT_ARM64_KERNELS 1
#endif

/* Defines `static void NAME(bert_isa isa, PARAMS...)` running NAME##_body
 * (an always_inline function) compiled for the instruction set `isa`, so
 * that its loops are vectorized for it.  ARGS forwards PARAMS.  The caller
 * chooses `isa` once (bert_cpu_isa()) and keeps it. */
#define BERT_UNPAREN(...) __VA_ARGS__
#ifdef BERT_X86_KERNELS
#define BERT_MULTIVERSION(NAME, PARAMS, ARGS)                                   \
    BERT_TARGET_AVX512 static void NAME##_avx512 PARAMS { NAME##_body ARGS; } \
    BERT_TARGET_AVX2 static void NAME##_avx2 PARAMS { NAME##_body ARGS; }     \
    static void NAME(bert_isa isa, BERT_UNPAREN PARAMS)                       \
    {                                                                         \
        switch (isa) {                                                        \
        case BERT_ISA_AVX512: NAME##_avx512 ARGS; return;                     \
        case BERT_ISA_AVX2: NAME##_avx2 ARGS; return;                         \
        default: NAME##_body ARGS; return;                                    \
        }                                                                     \
    }
#else
#define BERT_MULTIVERSION(NAME, PARAMS, ARGS) \
    static void NAME(bert_isa isa, BERT_UNPAREN PARAMS) { (void)isa; NAME##_body ARGS; }
#endif
#define BERT_INLINE __attribute__((always_inline)) static inline

/* The kernels' inner loops unroll 8 times.  Not under AddressSanitizer:
 * unrolling changes no result there, and clang's UBSan checks on the
 * unrolled kernels take minutes to compile. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BERT_SANITIZED_BUILD 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(BERT_SANITIZED_BUILD)
#define BERT_UNROLL
#else
#define BERT_UNROLL _Pragma("GCC unroll 16")
#endif

/* The best of the above that this CPU and its OS support, lowered to
 * "avx2" or "base" when the environment variable SQLITE_BERT_ISA says so
 * (on arm64: "base"; "neon" and "dotprod" lower the extensions only).
 * It reads the environment: call it once per connection's model (the
 * encoder's scratch keeps the answer), not per product. */
bert_isa bert_cpu_isa(void);

/* "avx512", "avx2", "neon" or "base". */
const char *bert_cpu_isa_name(bert_isa isa);

/* Dot-product extensions beside the instruction sets above, for the
 * reduced-precision kernels (linear_lowp.c): bit flags. */
enum {
    BERT_CPU_AVX512_BF16 = 1 << 0, /* vdpbf16ps on 512 bits */
    BERT_CPU_AVX512_VNNI = 1 << 1, /* vpdpbusd on 512 bits (with AVX-512BW) */
    BERT_CPU_AVX_VNNI = 1 << 2,    /* vpdpbusd on 256 bits, VEX-encoded */
    BERT_CPU_DOTPROD = 1 << 3,     /* arm64 SDOT (HWCAP_ASIMDDP) */
    BERT_CPU_I8MM = 1 << 4,        /* arm64 SMMLA (HWCAP2_I8MM) */
    BERT_CPU_BF16 = 1 << 5,        /* arm64 BFDOT and BFMMLA (HWCAP2_BF16) */
    BERT_CPU_AMX_INT8 = 1 << 6,    /* x86 AMX tiles with tdpbusd, the OS granting their state */
    BERT_CPU_AMX_BF16 = 1 << 7     /* x86 AMX tiles with tdpbf16ps, likewise */
};

/* The extensions this CPU and its OS support, within what SQLITE_BERT_ISA
 * allows: "avx512" rules them all out (AVX-512F and AVX2 kernels only),
 * "avx2" and "base" too, "vnni" keeps all but AMX's; on arm64 "neon" rules
 * them all out and "dotprod" keeps SDOT alone.  Reads the environment, as bert_cpu_isa does:
 * once per plan (bert_linear_plan_for), not per product. */
unsigned bert_cpu_extensions(void);

/* "avx512_bf16", "avx512_vnni", "avx_vnni", "dotprod", "i8mm", "bf16",
 * "amx_int8" or "amx_bf16" for one flag; "" else. */
const char *bert_cpu_extension_name(unsigned flag);

#endif
