/*
 * test_kernel_choice.c - the kernels chosen at run time are the ones the
 * CPU's features call for, and they run.
 *
 * On arm64 the features come from outside the extension: the environment
 * variable BERT_TEST_CPU_FEATURES (what CI asks qemu to emulate, in the
 * names of /proc/cpuinfo: "asimd asimddp i8mm bf16"), else the Features
 * line of /proc/cpuinfo (absent under qemu's user emulation).  Every
 * SQLITE_BERT_ISA level is checked against them.  Elsewhere: a CPU with
 * vector kernels never gets the portable loops.
 */
#include "test.h"
#include "../ext/kernels/cpu.h"
#include "../ext/kernels/linear.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A small product through the plan's choice against the portable kernel:
 * int8 to the bit, bfloat16 and float32 within float rounding. */
/* The largest |a[i] - b[i]|. */
static double largest_difference(const float *a, const float *b, int n)
{
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (d > worst) worst = d;
    }
    return worst;
}

static void check_product(const bert_linear_plan *plan, const char *level)
{
    enum { N = 5, ROWS = 9, COLS = 48 };
    float in[N * COLS], w[ROWS * COLS], out[N * ROWS], ref[N * ROWS], scale[ROWS];
    uint16_t wb[ROWS * COLS];
    int8_t wq[ROWS * COLS];
    int32_t row_sum[ROWS];
    uint32_t seed = 99;
    for (int i = 0; i < N * COLS; i++) in[i] = (float)((seed = seed * 1664525u + 1013904223u) >> 20) / 2048.0f - 1.0f;
    for (int i = 0; i < ROWS * COLS; i++) w[i] = (float)((seed = seed * 1664525u + 1013904223u) >> 20) / 2048.0f - 1.0f;
    bert_bf16_from_f32(wb, w, ROWS * COLS);
    bert_int8_quantize_rows(wq, scale, row_sum, w, ROWS, COLS);
    const bert_matrix matrices[] = {{BERT_PRECISION_BFLOAT16, NULL, wb, NULL, NULL, NULL, NULL, NULL, 0},
                                    {BERT_PRECISION_INT8, NULL, NULL, wq, scale, row_sum, NULL, NULL, 0}};
    for (size_t m = 0; m < sizeof matrices / sizeof *matrices; m++) {
        const bert_matrix *mx = &matrices[m];
        T_CHECK(bert_linear_matrix(plan, out, in, mx, NULL, N, ROWS, COLS) == 0, "%s: failed", level);
        T_CHECK(bert_linear_matrix_with(BERT_LOWP_PORTABLE, NULL, 1, ref, in, mx, NULL, N, ROWS, COLS) == 1,
                "portable failed");
        double worst = largest_difference(out, ref, N * ROWS);
        T_CHECK(mx->precision == BERT_PRECISION_INT8 ? worst == 0 : worst < 1e-4, "%s %s: differs by %.3g", level,
                bert_precision_name(mx->precision), worst);
    }
    bert_linear(plan, out, in, w, NULL, N, ROWS, COLS);
    T_CHECK(bert_linear_with(BERT_LINEAR_BLAS, NULL, 1, ref, in, w, NULL, N, ROWS, COLS) == 1, "blas failed");
    double worst = largest_difference(out, ref, N * ROWS);
    T_CHECK(worst < 1e-5, "%s float32: differs from OpenBLAS by %.3g", level, worst);
}

#ifdef BERT_ARM64_KERNELS
/* 1 when the space-separated list has the word. */
static int has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ' ' || p[-1] == '\t') && (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
            return 1;
    return 0;
}

/* The CPU's features as the test knows them (caller frees), or NULL. */
static char *cpu_features(void)
{
    const char *env = getenv("BERT_TEST_CPU_FEATURES");
    if (env) return strdup(env);
    char *info = t_read_file("/proc/cpuinfo", NULL);
    if (!info) return NULL;
    char *line = strstr(info, "\nFeatures");
    char *found = NULL;
    if (line) {
        char *colon = strchr(line, ':'), *end = strchr(line + 1, '\n');
        if (colon && (!end || colon < end)) found = end ? strndup(colon + 1, (size_t)(end - colon - 1)) : strdup(colon + 1);
    }
    free(info);
    return found;
}

static void check_arm64_choice(void)
{
    t_case("arm64: the kernels chosen are the NEON ones the CPU's features call for");
    char *features = cpu_features();
    if (!features) {
        t_skip("no record of this CPU's features (set BERT_TEST_CPU_FEATURES, e.g. \"asimd asimddp\")");
        return;
    }
    int dot = has_word(features, "asimddp"), mm = dot && has_word(features, "i8mm"), bf = has_word(features, "bf16");
    printf("  arm64 features: dotprod %d, i8mm %d, bf16 %d\n", dot, mm, bf);
    unsigned want = (dot ? BERT_CPU_DOTPROD : 0) | (mm ? BERT_CPU_I8MM : 0) | (bf ? BERT_CPU_BF16 : 0);
    const struct {
        const char *level, *isa, *int8, *bf16;
        unsigned extensions;
    } expected[] = {
        {NULL, "neon", mm ? "int8-smmla" : dot ? "int8-sdot" : "int8-neon", bf ? "bf16-bfmmla" : "bf16-neon", want},
        {"dotprod", "neon", dot ? "int8-sdot" : "int8-neon", "bf16-neon", want & BERT_CPU_DOTPROD},
        {"neon", "neon", "int8-neon", "bf16-neon", 0},
        {"base", "base", "portable", "portable", 0},
    };
    const char *was = getenv("SQLITE_BERT_ISA");
    char *saved = was ? strdup(was) : NULL;
    for (size_t l = 0; l < sizeof expected / sizeof *expected; l++) {
        const char *level = expected[l].level ? expected[l].level : "(unset)";
        if (expected[l].level) setenv("SQLITE_BERT_ISA", expected[l].level, 1);
        else unsetenv("SQLITE_BERT_ISA");
        bert_linear_plan plan = bert_linear_plan_for(bert_cpu_isa());
        T_CHECK(strcmp(bert_cpu_isa_name(plan.isa), expected[l].isa) == 0, "%s: instruction set %s, not %s", level,
                bert_cpu_isa_name(plan.isa), expected[l].isa);
        T_CHECK(plan.extensions == expected[l].extensions, "%s: extensions 0x%x, not 0x%x", level, plan.extensions,
                expected[l].extensions);
        const char *int8 = bert_linear_kernel_chosen(&plan, BERT_PRECISION_INT8, 5, 48);
        const char *bf16 = bert_linear_kernel_chosen(&plan, BERT_PRECISION_BFLOAT16, 5, 48);
        T_CHECK(strcmp(int8, expected[l].int8) == 0, "%s: int8 kernel %s, not %s", level, int8, expected[l].int8);
        T_CHECK(strcmp(bf16, expected[l].bf16) == 0, "%s: bfloat16 kernel %s, not %s", level, bf16, expected[l].bf16);
        check_product(&plan, level);
    }
    /* float32's few-rows kernel is NEON's on every arm64 CPU. */
    unsetenv("SQLITE_BERT_ISA");
    float x[16] = {1.0f}, o[1];
    T_CHECK(bert_linear_with(BERT_LINEAR_NEON, NULL, 1, o, x, x, NULL, 1, 1, 16) == 1 && o[0] == 1.0f,
            "the NEON float32 kernel did not run");
    T_CHECK(bert_linear_with(BERT_LINEAR_AVX2, NULL, 1, o, x, x, NULL, 1, 1, 16) == 0, "an x86 kernel ran");
    if (saved) setenv("SQLITE_BERT_ISA", saved, 1);
    free(saved);
    free(features);
}
#else
static void check_vector_choice(void)
{
    t_case("a CPU with vector kernels never gets the portable loops");
    bert_linear_plan plan = bert_linear_plan_for(bert_cpu_isa());
    if (plan.isa == BERT_ISA_BASE) {
        t_skip("this CPU lacks the instructions");
        return;
    }
    for (int p = BERT_PRECISION_BFLOAT16; p <= BERT_PRECISION_INT8; p++) {
        const char *k = bert_linear_kernel_chosen(&plan, (bert_precision)p, 5, 48);
        T_CHECK(strcmp(k, "portable") != 0, "%s: the portable kernel under %s", bert_precision_name((bert_precision)p),
                bert_cpu_isa_name(plan.isa));
    }
    T_CHECK(bert_linear_with(BERT_LINEAR_NEON, NULL, 1, NULL, NULL, NULL, NULL, 1, 1, 16) == 0,
            "the arm64 kernel claims to run here");
    check_product(&plan, bert_cpu_isa_name(plan.isa));
}
#endif

void suite_kernel_choice(void)
{
#ifdef BERT_ARM64_KERNELS
    check_arm64_choice();
#else
    check_vector_choice();
#endif
}
