/*
 * test_kernels.c - the vector kernels against plain references: the
 * few-rows projection kernels against a double-precision product, and the
 * whole encoder under each instruction set (SQLITE_BERT_ISA) against the
 * portable build.  The golden suite then checks the default choice against
 * PyTorch.
 */
#include "test.h"
#include "../ext/kernels/cpu.h"
#include "../ext/kernels/linear.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float *random_floats(size_t n, uint32_t *seed)
{
    float *v = malloc(n * sizeof *v);
    if (!v) return NULL;
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        v[i] = (float)((*seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return v;
}

/* Largest error of out against in W^T + b in double, relative to the sum of
 * the magnitudes of the terms (what float rounding scales with). */
static double product_error(const float *out, const float *in, const float *w, const float *b,
                            int n, int rows, int cols)
{
    double worst = 0;
    for (int i = 0; i < n; i++)
        for (int r = 0; r < rows; r++) {
            double sum = b ? b[r] : 0, mag = b ? fabs(b[r]) : 0;
            for (int k = 0; k < cols; k++) {
                double t = (double)in[(size_t)i * cols + k] * w[(size_t)r * cols + k];
                sum += t;
                mag += fabs(t);
            }
            double e = fabs(out[(size_t)i * rows + r] - sum) / (mag + 1e-30);
            if (e > worst) worst = e;
        }
    return worst;
}

/* Shapes that bert_workers_split shares out over three threads: 13 input
 * rows x 200 weight rows (the few-rows kernels, by weight rows) and 300
 * input rows x 13 (OpenBLAS, by input rows), of 768 columns. */
static int split_shape(int n, int rows, int cols)
{
    return cols == 768 && ((n == 13 && rows == 200) || (n == 300 && rows == 13));
}

static void check_kernel(bert_linear_kernel kernel, const char *name)
{
    char title[96];
    snprintf(title, sizeof title, "projection kernel %s matches a double-precision product", name);
    t_case(title);
    /* Rows and outputs cover every remainder of the 4x6 and 3x4 blocks. */
    /* 300 rows make OpenBLAS's products run in chunks of input rows. */
    static const int ns[] = {1, 2, 3, 4, 5, 6, 7, 13, 15, 16, 33, 48, 49, 100, 300};
    static const int rowss[] = {1, 2, 3, 4, 5, 6, 7, 11, 12, 13, 24, 97, 200, 389};
    static const int colss[] = {16, 32, 48, 96, 768};
    uint32_t seed = 12345;
    int ran = 0;
    /* Every shape alone and split into chunks over three threads. */
    bert_workers *pool = bert_workers_new();
    if (!T_CHECK(pool, "out of memory")) return;
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (size_t c = 0; c < sizeof colss / sizeof *colss; c++)
            for (size_t r = 0; r < sizeof rowss / sizeof *rowss; r++) {
                int n = ns[a], rows = rowss[r], cols = colss[c];
                /* Under emulation, the products of up to 200,000
                 * multiply-adds (every block remainder still), and the
                 * shapes that three threads split (split_shape). */
                if (t_light() && (size_t)n * rows * cols > 200000 && !split_shape(n, rows, cols)) continue;
                float *in = random_floats((size_t)n * cols, &seed);
                float *w = random_floats((size_t)rows * cols, &seed);
                float *b = random_floats((size_t)rows, &seed);
                float *out = malloc(((size_t)n * rows + 1) * sizeof *out);
                if (!T_CHECK(in && w && b && out, "out of memory")) goto next;
                /* A sentinel after the output catches a write past its end. */
                out[(size_t)n * rows] = 12345.0f;
                for (int variant = 0; variant < 4; variant++) {
                    int with_bias = variant & 1, threads = variant & 2 ? 3 : 1;
                    const float *bias = with_bias ? b : NULL;
                    if (bert_linear_with(kernel, pool, threads, out, in, w, bias, n, rows, cols) != 1) {
                        t_skip("this CPU lacks the instructions");
                        goto next;
                    }
                    ran++;
                    double e = product_error(out, in, w, bias, n, rows, cols);
                    T_CHECK(e < 1e-5, "%s n=%d rows=%d cols=%d bias=%d threads=%d: relative error %.3g",
                            name, n, rows, cols, with_bias, threads, e);
                    T_CHECK(out[(size_t)n * rows] == 12345.0f, "%s n=%d rows=%d cols=%d: wrote past the output",
                            name, n, rows, cols);
                }
            next:
                free(in);
                free(w);
                free(b);
                free(out);
                if (ran == 0 && kernel != BERT_LINEAR_BLAS) {
                    bert_workers_free(pool);
                    return;
                }
            }
    T_CHECK(bert_workers_started(pool) == 2, "%s: %d helper threads ran, not 2", name,
            bert_workers_started(pool));
    bert_workers_free(pool);
    /* cols that are not a multiple of 16 are left to OpenBLAS (the panel
     * kernels take any: check_packed_shapes). */
    if (kernel != BERT_LINEAR_BLAS && kernel != BERT_LINEAR_PACKED_AVX2 && kernel != BERT_LINEAR_PACKED_AVX512) {
        float x[24] = {0}, o[1];
        T_CHECK(bert_linear_with(kernel, NULL, 1, o, x, x, NULL, 1, 1, 24) == 0,
                "%s accepted cols = 24", name);
    }
}

/* The panel kernels take any cols: a block of columns ends short of
 * PACKED_COLS (256) or past it, and the last panel's rows past W's end
 * are neither computed into nor written. */
static void check_packed_shapes(bert_linear_kernel kernel, const char *name)
{
    char title[96];
    snprintf(title, sizeof title, "panel kernel %s matches a double-precision product at any cols", name);
    t_case(title);
    static const int ns[] = {1, 11, 12, 13, 40, 130};
    static const int rowss[] = {1, 15, 17, 33, 50};
    static const int colss[] = {1, 7, 40, 255, 257, 520};
    uint32_t seed = 4242;
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (size_t r = 0; r < sizeof rowss / sizeof *rowss; r++)
            for (size_t c = 0; c < sizeof colss / sizeof *colss; c++) {
                int n = ns[a], rows = rowss[r], cols = colss[c];
                float *in = random_floats((size_t)n * cols, &seed), *w = random_floats((size_t)rows * cols, &seed);
                float *b = random_floats((size_t)rows, &seed), *out = malloc(((size_t)n * rows + 1) * sizeof *out);
                float *packed = malloc(bert_f32_packed_floats(rows, cols) * sizeof *packed);
                int got = -3;
                if (T_CHECK(in && w && b && out && packed, "out of memory")) {
                    bert_f32_pack(packed, w, rows, cols);
                    out[(size_t)n * rows] = 12345.0f;
                    got = bert_linear_with_packed(kernel, NULL, 1, out, in, w, packed, b, n, rows, cols);
                    if (got == 1) {
                        double e = product_error(out, in, w, b, n, rows, cols);
                        T_CHECK(e < 1e-5, "%s n=%d rows=%d cols=%d: relative error %.3g", name, n, rows, cols, e);
                        T_CHECK(out[(size_t)n * rows] == 12345.0f, "%s n=%d rows=%d cols=%d: wrote past the output",
                                name, n, rows, cols);
                    } else {
                        T_CHECK(got == 0, "%s n=%d rows=%d cols=%d: returned %d", name, n, rows, cols, got);
                    }
                }
                free(in);
                free(w);
                free(b);
                free(out);
                free(packed);
                if (got == 0) {
                    t_skip("this CPU lacks the instructions");
                    return;
                }
            }
}

/* Attention's two products as the encoder makes them on the panel kernel
 * of `isa`: a head's queries against its keys, packed in place from a
 * [len x H] matrix (row_step H), and probabilities against its values,
 * packed transposed (col_step H) and zero past len up to the scores'
 * width.  Against double-precision sums; the scores past len must be 0. */
static void check_panel_attention(bert_isa isa, const char *name)
{
    char title[96];
    snprintf(title, sizeof title, "attention products on the %s panel kernel match a double-precision product", name);
    t_case(title);
    if (!bert_f32_panel_product(isa, NULL, NULL, NULL, 0, 0, 0)) {
        t_skip("this CPU lacks the instructions");
        return;
    }
    static const int dhs[] = {24, 32, 64}, lens[] = {1, 17, 64, 200};
    uint32_t seed = 777;
    for (size_t d = 0; d < sizeof dhs / sizeof *dhs; d++)
        for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
            int dh = dhs[d], len = lens[l], H = 3 * dh, h = 1, ld = (len + 15) / 16 * 16, m = len < 13 ? len : 13;
            float *k = random_floats((size_t)len * H, &seed), *v = random_floats((size_t)len * H, &seed);
            float *q = random_floats((size_t)m * dh, &seed), *p = random_floats((size_t)m * ld, &seed);
            float *kp = malloc(bert_f32_packed_floats(len, dh) * sizeof *kp);
            float *vp = malloc(bert_f32_packed_floats(dh, ld) * sizeof *vp);
            float *scores = malloc((size_t)m * ld * sizeof *scores), *ctx = malloc((size_t)m * dh * sizeof *ctx);
            if (T_CHECK(k && v && q && p && kp && vp && scores && ctx, "out of memory")) {
                bert_f32_pack_strided(kp, k + h * dh, (size_t)H, 1, len, dh, dh);
                bert_f32_pack_strided(vp, v + h * dh, 1, (size_t)H, dh, len, ld);
                int ran = bert_f32_panel_product(isa, scores, q, kp, m, ld, dh) &&
                          bert_f32_panel_product(isa, ctx, p, vp, m, dh, ld);
                T_CHECK(ran, "%s: the panel product did not run", name);
                double worst = 0, past = 0;
                for (int i = 0; i < m; i++) {
                    for (int j = 0; j < ld; j++) {
                        double sum = 0, mag = 0;
                        for (int c = 0; j < len && c < dh; c++) {
                            double t = (double)q[(size_t)i * dh + c] * k[(size_t)j * H + h * dh + c];
                            sum += t, mag += fabs(t);
                        }
                        double got = scores[(size_t)i * ld + j];
                        if (j >= len) past = fabs(got) > past ? fabs(got) : past;
                        else worst = fmax(worst, fabs(got - sum) / (mag + 1e-30));
                    }
                    for (int c = 0; c < dh; c++) {
                        double sum = 0, mag = 0;
                        for (int j = 0; j < len; j++) {
                            double t = (double)p[(size_t)i * ld + j] * v[(size_t)j * H + h * dh + c];
                            sum += t, mag += fabs(t);
                        }
                        worst = fmax(worst, fabs(ctx[(size_t)i * dh + c] - sum) / (mag + 1e-30));
                    }
                }
                T_CHECK(worst < 1e-5, "%s dh=%d len=%d: relative error %.3g", name, dh, len, worst);
                T_CHECK(past == 0, "%s dh=%d len=%d: scores past len are %g, not 0", name, dh, len, past);
            }
            free(k);
            free(v);
            free(q);
            free(p);
            free(kp);
            free(vp);
            free(scores);
            free(ctx);
        }
}

/* bert_linear's choice by shape: the few-rows kernel up to plan.few_rows_max
 * input rows (in slabs beyond FEW_ROWS), OpenBLAS above.  Whatever the
 * limit, a product equals the portable path's (OpenBLAS alone). */
static void check_plan_limits(void)
{
    t_case("bert_linear gives the portable path's product whichever kernel the shape picks");
    bert_linear_plan plan = bert_linear_plan_for(bert_cpu_isa());
    if (plan.isa == BERT_ISA_BASE) {
        t_skip("this CPU has no few-rows kernel");
        return;
    }
    T_CHECK(plan.few_rows_max >= 48, "few_rows_max %d: one sentence must use the few-rows kernel",
            plan.few_rows_max);
    enum { N = 500, ROWS = 100, COLS = 64 };
    uint32_t seed = 777;
    float *in = random_floats((size_t)N * COLS, &seed), *w = random_floats((size_t)ROWS * COLS, &seed);
    float *b = random_floats(ROWS, &seed);
    float *ref = malloc((size_t)N * ROWS * sizeof *ref), *out = malloc((size_t)N * ROWS * sizeof *out);
    bert_workers *pool = bert_workers_new();
    if (!T_CHECK(in && w && b && ref && out && pool, "out of memory")) goto done;
    T_CHECK(bert_linear_with(BERT_LINEAR_BLAS, NULL, 1, ref, in, w, b, N, ROWS, COLS) == 1, "blas refused");
    static const int limits[] = {0, 48, 100, 499, 500, 100000};
    static const int ns[] = {1, 47, 48, 49, 97, 300, 500};
    float *panels = malloc(bert_f32_packed_floats(ROWS, COLS) * sizeof *panels);
    if (!T_CHECK(panels, "out of memory")) goto done;
    bert_f32_pack(panels, w, ROWS, COLS);
    /* W packed too, with the panel kernel's row range cut at each limit. */
    bert_matrix packed = {BERT_PRECISION_FLOAT32, w, NULL, NULL, NULL, NULL, panels, NULL, 0};
    for (size_t l = 0; l < sizeof limits / sizeof *limits; l++)
        for (size_t k = 0; k < sizeof ns / sizeof *ns; k++)
            for (int threads = 1; threads <= 4; threads++) {
                int with_packed = threads > 2;
                plan.few_rows_max = limits[l];
                plan.packed_rows_min = with_packed ? limits[l] / 2 : 1;
                plan.packed_rows_max = with_packed ? limits[l] : 100000;
                plan.workers = threads % 2 == 0 ? pool : NULL;
                plan.threads = threads % 2 == 0 ? 2 : 1;
                int n = ns[k];
                if (with_packed) bert_linear_f32(&plan, out, in, &packed, b, n, ROWS, COLS);
                else bert_linear(&plan, out, in, w, b, n, ROWS, COLS);
                double worst = 0;
                for (size_t i = 0; i < (size_t)n * ROWS; i++) {
                    double d = fabs((double)out[i] - ref[i]);
                    if (d > worst) worst = d;
                }
                T_CHECK(worst < 1e-5, "few_rows_max %d, n %d, %d thread(s)%s: differs from OpenBLAS by %.3g",
                        limits[l], n, plan.threads, with_packed ? ", W packed" : "", worst);
            }
    free(panels);
done:
    bert_workers_free(pool);
    free(in);
    free(w);
    free(b);
    free(ref);
    free(out);
}

/* Every embedding of the test models, under the instruction set `isa`
 * (NULL: the default) and on `threads` threads, appended to *out. */
static size_t embed_all(const char *isa, int threads, float *out, size_t cap)
{
    static const char *models[] = {"bert-plain-f32", "mlm-tied-f32", "pretrain-untied-bf16",
                                   "st-cls-relu", "st-mean-f16"};
    static const char *texts[] = {
        "a short one",
        "The quick brown fox jumps over the lazy dog, and then it runs away into the forest "
        "where nobody will ever find it again, not even the hunter with his three dogs.",
        /* Over 64 tokens: attention in several blocks of query rows, each
         * head's keys and values laid out once for all of them. */
        "It was late in the afternoon when the train finally pulled into the small station at the edge of the "
        "valley. The passengers, tired after a long day of travel, gathered their bags and stepped out onto the "
        "platform, where a cold wind was blowing down from the mountains. A few of them walked towards the "
        "village, while the others waited for the bus that would take them further up the road, past the old "
        "mill and the church, to the hotel where they had booked their rooms for the week.",
    };
    if (isa) setenv("SQLITE_BERT_ISA", isa, 1);
    else unsetenv("SQLITE_BERT_ISA");
    size_t used = 0;
    /* Under emulation, the first two models. */
    size_t count = t_light() ? 2 : sizeof models / sizeof *models;
    for (size_t m = 0; m < count; m++) {
        char path[128];
        snprintf(path, sizeof path, "build/models/%s", models[m]);
        sqlite3 *db = t_open();
        char options[32];
        snprintf(options, sizeof options, "{\"threads\": %d}", threads);
        char *r = t_query(db, "SELECT bert_load('m', ?1, ?2)", path, options, NULL);
        free(r);
        for (size_t t = 0; t < sizeof texts / sizeof *texts; t++) {
            /* Row by row (few rows: the vector kernels) and as one batch of
             * 40 copies (enough rows for OpenBLAS); under emulation 4 copies,
             * still over BERT_FEW_ROWS rows for the long text. */
            const char *sqls[] = {
                "SELECT bert_embed(?1, 'm')",
                t_light() ? "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 4) "
                            "SELECT embedding FROM bert_embed_each((SELECT json_group_array(?1) FROM c), 'm') "
                            "WHERE key = 3"
                          : "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 40) "
                            "SELECT embedding FROM bert_embed_each((SELECT json_group_array(?1) FROM c), 'm') "
                            "WHERE key = 39",
            };
            for (int s = 0; s < 2; s++) {
                sqlite3_stmt *st = NULL;
                if (sqlite3_prepare_v2(db, sqls[s], -1, &st, NULL) != SQLITE_OK) {
                    T_CHECK(0, "prepare: %s", sqlite3_errmsg(db));
                    continue;
                }
                sqlite3_bind_text(st, 1, texts[t], -1, SQLITE_STATIC);
                if (T_CHECK(sqlite3_step(st) == SQLITE_ROW, "%s: %s", models[m], sqlite3_errmsg(db))) {
                    size_t n = (size_t)sqlite3_column_bytes(st, 0) / sizeof(float);
                    if (used + n <= cap) memcpy(out + used, sqlite3_column_blob(st, 0), n * sizeof(float));
                    used += n;
                }
                sqlite3_finalize(st);
            }
        }
        sqlite3_close(db);
    }
    unsetenv("SQLITE_BERT_ISA");
    return used;
}

static void check_isa_equivalence(void)
{
    t_case("the encoder gives the same embeddings under every instruction set");
    if (!t_exists("build/models/bert-plain-f32")) {
        t_skip("build/models missing: run make test");
        return;
    }
    enum { CAP = 1 << 16 };
    float *base = malloc(CAP * sizeof *base), *other = malloc(CAP * sizeof *other);
    if (!T_CHECK(base && other, "out of memory")) goto done;
    size_t n = embed_all("base", 1, base, CAP);
    T_CHECK(n > 0 && n <= CAP, "got %zu floats from the portable build", n);
    /* The last run splits each product into chunks over two threads, the
     * few-rows kernel's and OpenBLAS's alike. */
#ifdef BERT_ARM64_KERNELS
    const char *isas[] = {"neon", NULL, NULL};
#else
    const char *isas[] = {"avx2", NULL, NULL};
#endif
    for (int i = 0; i < 3 && n <= CAP; i++) {
        size_t m = embed_all(isas[i], i == 2 ? 2 : 1, other, CAP);
        if (!T_CHECK(m == n, "%s: %zu floats against %zu", isas[i] ? isas[i] : "default", m, n)) continue;
        double worst = 0;
        for (size_t j = 0; j < n; j++) {
            double d = fabs((double)base[j] - other[j]);
            if (d > worst) worst = d;
        }
        T_CHECK(worst < 1e-5, "%s%s differs from the portable build by %.3g",
                isas[i] ? isas[i] : bert_cpu_isa_name(bert_cpu_isa()), i == 2 ? " on two threads" : "", worst);
    }
done:
    free(base);
    free(other);
}

/* Row by row, a call after the first few reuses every buffer: the
 * tokenizer's, the ids', the encoder's scratch and the helper threads. */
static void check_steady_state_allocations(void)
{
    t_case("bert_embed allocates nothing per call in steady state");
    /* Under emulation the smallest model: the same buffers, an eighth of
     * the arithmetic (6 s of CPU under qemu with st-mean-f16). */
    const char *model = t_light() ? "build/models/bert-plain-f32" : "build/models/st-mean-f16";
    if (!t_exists(model)) {
        t_skip("build/models missing: run make test");
        return;
    }
    static const char *texts[] = {
        "Hello world.",
        "Accents and marks: café, naïve, Åström, ﬁ, ＡＢＣ, 中文字, and a longer tail of words.",
        "The quick brown fox jumps over the lazy dog.",
        "unaffable unbelievable transformers tokenization",
    };
    sqlite3 *db = t_open();
    sqlite3_stmt *st = NULL;
    char *r = t_query(db, "SELECT bert_load('m', ?1)", model, NULL);
    free(r);
    if (!T_CHECK(sqlite3_prepare_v2(db, "SELECT length(bert_embed(?1, 'm'))", -1, &st, NULL) == SQLITE_OK,
                 "prepare: %s", sqlite3_errmsg(db)))
        goto done;
    long before = 0;
    for (int round = 0; round < 6; round++) {
        if (round == 2) before = t_allocations(); /* two rounds to warm up */
        for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
            sqlite3_bind_text(st, 1, texts[i], -1, SQLITE_STATIC);
            T_CHECK(sqlite3_step(st) == SQLITE_ROW, "%s", sqlite3_errmsg(db));
            sqlite3_reset(st);
        }
    }
    long calls = 4 * (long)(sizeof texts / sizeof *texts);
    T_CHECK(t_allocations() == before, "%ld allocations in %ld calls", t_allocations() - before, calls);
done:
    sqlite3_finalize(st);
    sqlite3_close(db);
}

#ifdef BERT_X86_KERNELS
#include <cpuid.h>

/* What this CPU has, read here from CPUID on its own (not through cpu.c):
 * the AVX-512 level needs F, BW and FMA; the dot-product extensions their
 * own bits (leaf 7 ECX bit 11: AVX512_VNNI; leaf 7.1 EAX bit 5:
 * AVX512_BF16, bit 4: AVX-VNNI). */
static void cpu_features(int *avx512, int *avx2, int *vnni512, int *bf16, int *avxvnni)
{
    *avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    *avx512 = *avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
    unsigned a = 0, b = 0, c = 0, d = 0, leaf7_ecx = 0, leaf71_eax = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        leaf7_ecx = c;
        if (a >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) leaf71_eax = a;
    }
    *vnni512 = *avx512 && (leaf7_ecx & (1u << 11));
    *bf16 = *avx512 && (leaf71_eax & (1u << 5));
    *avxvnni = *avx2 && (leaf71_eax & (1u << 4));
}
#endif

#ifndef BERT_ARM64_KERNELS
/* Which kernel each precision gets, under each SQLITE_BERT_ISA level: the
 * best this CPU has, named.  arm64's levels and kernels:
 * test_kernel_choice.c. */
static void check_chosen_kernels(void)
{
    t_case("each precision runs the best kernel this CPU has, under every SQLITE_BERT_ISA level");
    const char *saved_env = getenv("SQLITE_BERT_ISA");
    char *saved = saved_env ? strdup(saved_env) : NULL;
    static const char *const levels[] = {NULL, "avx512", "avx2", "base"};
    int avx512 = 0, avx2 = 0, vnni512 = 0, bf16 = 0, avxvnni = 0;
#ifdef BERT_X86_KERNELS
    cpu_features(&avx512, &avx2, &vnni512, &bf16, &avxvnni);
#endif
    for (size_t l = 0; l < sizeof levels / sizeof *levels; l++) {
        if (levels[l]) setenv("SQLITE_BERT_ISA", levels[l], 1);
        else unsetenv("SQLITE_BERT_ISA");
        /* The level's instruction sets and whether it allows the extensions. */
        int wide = avx512 && (!levels[l] || strcmp(levels[l], "avx512") == 0);
        int narrow = avx2 && (!levels[l] || strcmp(levels[l], "base") != 0);
        int extensions = !levels[l];
        const char *f32 = wide ? "f32-avx512" : narrow ? "f32-avx2" : "openblas";
        const char *want_bf16 = wide && extensions && bf16 ? "bf16-avx512bf16"
                                : wide ? "bf16-avx512" : narrow ? "bf16-avx2" : "portable";
        const char *want_int8 = wide && extensions && vnni512 ? "int8-avx512vnni"
                                : narrow && extensions && avxvnni ? "int8-avxvnni"
                                : narrow ? "int8-packed-avx2" : "portable";
        bert_linear_plan plan = bert_linear_plan_for(bert_cpu_isa());
        const char *level = levels[l] ? levels[l] : "(unset)";
        const char *got = bert_linear_kernel_chosen(&plan, BERT_PRECISION_FLOAT32, 1, 384);
        T_CHECK(strcmp(got, f32) == 0, "SQLITE_BERT_ISA=%s, float32, 1 row: %s, not %s", level, got, f32);
        /* W packed at load: the panel kernel from one row, and at 512 rows. */
        const char *packed = wide ? "f32-packed-avx512" : narrow ? "f32-packed-avx2" : "openblas";
        got = bert_linear_f32_kernel_name(&plan, 64, 384, 1);
        T_CHECK(strcmp(got, packed) == 0, "SQLITE_BERT_ISA=%s, float32 packed, 64 rows: %s, not %s", level, got, packed);
        got = bert_linear_f32_kernel_name(&plan, 1, 384, 1);
        T_CHECK(strcmp(got, packed) == 0, "SQLITE_BERT_ISA=%s, float32 packed, 1 row: %s, not %s", level, got, packed);
        got = bert_linear_f32_kernel_name(&plan, 512, 384, 1);
        T_CHECK(strcmp(got, packed) == 0, "SQLITE_BERT_ISA=%s, float32 packed, 512 rows: %s, not %s", level, got,
                packed);
        got = bert_linear_kernel_chosen(&plan, BERT_PRECISION_FLOAT32, 1, 392);
        T_CHECK(strcmp(got, "openblas") == 0, "SQLITE_BERT_ISA=%s, float32, 392 columns: %s, not openblas", level, got);
        got = bert_linear_kernel_chosen(&plan, BERT_PRECISION_BFLOAT16, 1, 384);
        T_CHECK(strcmp(got, want_bf16) == 0, "SQLITE_BERT_ISA=%s, bfloat16: %s, not %s", level, got, want_bf16);
        got = bert_linear_kernel_chosen(&plan, BERT_PRECISION_INT8, 500, 384);
        T_CHECK(strcmp(got, want_int8) == 0, "SQLITE_BERT_ISA=%s, int8: %s, not %s", level, got, want_int8);
    }
    if (saved) setenv("SQLITE_BERT_ISA", saved, 1);
    else unsetenv("SQLITE_BERT_ISA");
    free(saved);
}
#endif

void suite_kernels(void)
{
    check_steady_state_allocations();
    check_kernel(BERT_LINEAR_BLAS, "blas");
    check_kernel(BERT_LINEAR_AVX2, "avx2");
    check_kernel(BERT_LINEAR_AVX512, "avx512");
    check_kernel(BERT_LINEAR_NEON, "neon");
    check_kernel(BERT_LINEAR_PACKED_AVX2, "packed-avx2");
    check_kernel(BERT_LINEAR_PACKED_AVX512, "packed-avx512");
    check_packed_shapes(BERT_LINEAR_PACKED_AVX2, "packed-avx2");
    check_packed_shapes(BERT_LINEAR_PACKED_AVX512, "packed-avx512");
    check_panel_attention(BERT_ISA_AVX2, "avx2");
    check_panel_attention(BERT_ISA_AVX512, "avx512");
    check_plan_limits();
    check_isa_equivalence();
#ifndef BERT_ARM64_KERNELS
    check_chosen_kernels();
#endif
}
