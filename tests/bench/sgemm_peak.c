/*
 * sgemm_peak.c - the cblas_sgemm ceiling of this machine: the best GFLOP/s
 * of a large square product, the number the encoder's efficiency is
 * measured against.  The thread count is OpenBLAS's own
 * (OPENBLAS_NUM_THREADS), so run it with the same setting as the encoder.
 *
 *   sgemm_peak [N [RUNS]]        N x N x N, best of RUNS (2048, 5)
 *   sgemm_peak M N K RUNS nt     an encoder-shaped product: [M x K] x [N x K]^T
 *
 * Prints one line "RESULT engine=sgemm ... gflops=G" for tests/bench/report.py.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"

static int parse_dim(const char *s, const char *what, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < 1 || v > 16384) {
        fprintf(stderr, "sgemm_peak: %s must be an integer from 1 to 16384, not '%s'\n", what, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* The vector kernels the extension picks here (ext/kernels/cpu.c's rule). */
static const char *extension_isa(void)
{
    const char *cap = getenv("SQLITE_BERT_ISA");
#if defined(__x86_64__)
    int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    int avx512 = 0, avx2 = 0;
#endif
    if (cap && strcmp(cap, "base") == 0) return "base";
    if (avx512 && !(cap && strcmp(cap, "avx2") == 0)) return "avx512";
    return avx2 ? "avx2" : "base";
}

int main(int argc, char **argv)
{
    int m = 2048, n = 2048, k = 2048, runs = 5, transposed = 0;
    if (argc == 6 && strcmp(argv[5], "nt") == 0) {
        if (parse_dim(argv[1], "M", &m) || parse_dim(argv[2], "N", &n) || parse_dim(argv[3], "K", &k) ||
            parse_dim(argv[4], "RUNS", &runs))
            return 2;
        transposed = 1;
    } else if (argc <= 3) {
        if (argc > 1 && parse_dim(argv[1], "N", &n)) return 2;
        if (argc > 2 && parse_dim(argv[2], "RUNS", &runs)) return 2;
        m = k = n;
    } else {
        fprintf(stderr, "usage: sgemm_peak [N [RUNS]] | sgemm_peak M N K RUNS nt\n");
        return 2;
    }

    size_t na = (size_t)m * k, nb = (size_t)n * k, nc = (size_t)m * n;
    float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b), *c = malloc(nc * sizeof *c);
    if (!a || !b || !c) {
        fprintf(stderr, "sgemm_peak: out of memory for %d x %d x %d matrices; pick a smaller size\n", m, n, k);
        free(a); free(b); free(c);
        return 1;
    }
    /* Values in [-0.5, 0.5): no denormals, nothing that could take a slow path. */
    unsigned x = 12345;
    for (size_t i = 0; i < na; i++) { x = x * 1664525u + 1013904223u; a[i] = (float)(x >> 8) / 16777216.0f - 0.5f; }
    for (size_t i = 0; i < nb; i++) { x = x * 1664525u + 1013904223u; b[i] = (float)(x >> 8) / 16777216.0f - 0.5f; }
    memset(c, 0, nc * sizeof *c);

    /* One untimed call: OpenBLAS starts its threads and the pages get mapped. */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, transposed ? CblasTrans : CblasNoTrans, m, n, k,
                1.0f, a, k, b, transposed ? k : n, 0.0f, c, n);
    double best = 1e30, best_cpu = 1e30;
    for (int r = 0; r < runs; r++) {
        double c0 = cpu_now(), t0 = now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, transposed ? CblasTrans : CblasNoTrans, m, n, k,
                    1.0f, a, k, b, transposed ? k : n, 0.0f, c, n);
        double t = now() - t0, tc = cpu_now() - c0;
        if (t < best) best = t;
        if (tc < best_cpu) best_cpu = tc;
    }
    double flops = 2.0 * m * n * k;
    printf("RESULT engine=sgemm shape=%dx%dx%d%s runs=%d threads=%d core=%s seconds=%.6f gflops=%.2f "
           "cpu_seconds=%.6f cpu_gflops=%.2f isa=%s\n", m, n, k, transposed ? "nt" : "", runs, openblas_get_num_threads(),
           openblas_get_corename(), best, flops / best * 1e-9, best_cpu, flops / best_cpu * 1e-9, extension_isa());
    free(a); free(b); free(c);
    return 0;
}
