/*
 * test_lowp.c - the reduced-precision projections (linear.h, "reduced
 * precision"): bfloat16 conversion against the nearest representable value
 * computed in double, int8 quantization against its rounding bound,
 * bert_linear_matrix against a double-precision product of the very same
 * converted or quantized weights and inputs, and every vector kernel this
 * CPU runs against the portable one: int8 to the bit, bfloat16 within float
 * rounding, also when chosen through SQLITE_BERT_ISA.
 */
#include "test.h"
#include "../ext/kernels/cpu.h"
#include "../ext/kernels/linear.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t next_random(uint32_t *seed)
{
    *seed = *seed * 1664525u + 1013904223u;
    return *seed;
}

/* Uniform in [-scale, scale). */
static float *random_floats(size_t n, float scale, uint32_t *seed)
{
    float *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) return NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = ((float)((next_random(seed) >> 8) & 0xffff) / 32768.0f - 1.0f) * scale;
    return v;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float widen(uint16_t h) { return bits_f32((uint32_t)h << 16); }

static void check_names(void)
{
    t_case("precision names parse back to themselves, anything else is refused");
    static const bert_precision all[] = {BERT_PRECISION_FLOAT32, BERT_PRECISION_BFLOAT16, BERT_PRECISION_INT8};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        bert_precision p = (bert_precision)-1;
        const char *name = bert_precision_name(all[i]);
        T_CHECK(bert_precision_parse(name, &p) == 0 && p == all[i], "%s does not parse back", name);
    }
    static const char *const bad[] = {"", "fp32", "BFLOAT16", "int4", "float16", "int8 "};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        bert_precision p = BERT_PRECISION_INT8;
        T_CHECK(bert_precision_parse(bad[i], &p) == -1 && p == BERT_PRECISION_INT8, "'%s' was accepted",
                bad[i]);
    }
    bert_precision p;
    T_CHECK(bert_precision_parse(NULL, &p) == -1, "NULL was accepted");
}

/* The bfloat16 nearest to f, ties to an even last bit, found in double from
 * the two candidates around f (f's upper half truncated, and one up). */
static uint16_t nearest_bf16(float f)
{
    uint16_t lo = (uint16_t)(f32_bits(f) >> 16), hi = (uint16_t)(lo + 1);
    double dlo = fabs((double)f - widen(lo));
    /* One step past the largest finite value is infinity: measure the
     * distance to where the next value would be. */
    double vhi = (hi & 0x7fff) == 0x7f80 ? copysign(ldexp(1.0, 128), f) : (double)widen(hi);
    double dhi = fabs((double)f - vhi);
    if (dlo < dhi) return lo;
    if (dhi < dlo) return hi;
    return (lo & 1) ? hi : lo;
}

static void check_bf16_conversion(void)
{
    t_case("float32 to bfloat16 rounds to the nearest value, ties to even, NaN stays NaN");
    static const uint32_t cases[] = {
        0x3f800000u, /* 1 */
        0x3f808000u, /* 1 + 2^-8: a tie, stays on the even 1 */
        0x3f818000u, /* a tie above an odd value: rounds up */
        0x3f808001u, /* just above a tie: up */
        0x3f807fffu, /* just below a tie: down */
        0x7f7fffffu, /* the largest float: rounds to infinity */
        0x7f7f7fffu, /* stays finite */
        0x7f800000u, 0xff800000u, /* infinities */
        0x80000000u, 0x00000000u, /* zeros */
        0x00008000u, 0x00018000u, 0x00000001u, /* subnormals and their ties */
        0xbf818000u, 0xc0490fdbu, 0x3eaaaaabu,
    };
    uint16_t out[sizeof cases / sizeof *cases];
    float in[sizeof cases / sizeof *cases];
    size_t count = sizeof cases / sizeof *cases;
    for (size_t i = 0; i < count; i++) in[i] = bits_f32(cases[i]);
    bert_bf16_from_f32(out, in, count);
    for (size_t i = 0; i < count; i++)
        T_CHECK(out[i] == nearest_bf16(in[i]), "0x%08x gave 0x%04x, not 0x%04x", cases[i], out[i],
                nearest_bf16(in[i]));
    /* Random bit patterns over the whole range, NaNs aside. */
    uint32_t seed = 99;
    int wrong = 0;
    for (int i = 0; i < 200000; i++) {
        float f = bits_f32(next_random(&seed));
        if (isnan(f)) continue;
        uint16_t h;
        bert_bf16_from_f32(&h, &f, 1);
        if (h != nearest_bf16(f) && wrong++ < 3)
            T_CHECK(0, "0x%08x gave 0x%04x, not 0x%04x", f32_bits(f), h, nearest_bf16(f));
    }
    T_CHECK(wrong == 0, "%d random values rounded wrongly", wrong);
    static const uint32_t nans[] = {0x7fc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0x7f80ffffu};
    for (size_t i = 0; i < sizeof nans / sizeof *nans; i++) {
        float f = bits_f32(nans[i]);
        uint16_t h;
        bert_bf16_from_f32(&h, &f, 1);
        T_CHECK(isnan(widen(h)) && (h >> 15) == (nans[i] >> 31), "NaN 0x%08x became 0x%04x", nans[i], h);
    }
}

static void check_quantize(void)
{
    t_case("int8 quantization: within half a step of every weight, row sums exact, zero rows zero");
    enum { ROWS = 9, COLS = 100 };
    uint32_t seed = 4242;
    float *w = random_floats((size_t)ROWS * COLS, 3.0f, &seed);
    int8_t *q = malloc((size_t)ROWS * COLS);
    float scale[ROWS];
    int32_t sums[ROWS];
    if (!T_CHECK(w && q, "out of memory")) goto done;
    /* A zero row, a row with one large value, a row of ties (v * 127/max
     * exactly half-way) to check round-to-even. */
    memset(w + 2 * COLS, 0, COLS * sizeof *w);
    w[3 * COLS + 7] = 1000.0f;
    for (int c = 0; c < COLS; c++) w[4 * COLS + c] = c == 0 ? 127.0f : (float)(c % 8) + 0.5f;
    /* As every model holds them, and held to 7 bits (AVX2 without VNNI). */
    for (int narrow = 0; narrow < 2; narrow++) {
    const int levels = narrow ? BERT_INT8_NARROW_MAX : 127;
    (narrow ? bert_int8_quantize_rows_narrow : bert_int8_quantize_rows)(q, scale, sums, w, ROWS, COLS);
    for (int r = 0; r < ROWS; r++) {
        double top = 0;
        int64_t total = 0;
        int qtop = 0;
        for (int c = 0; c < COLS; c++) {
            double v = w[(size_t)r * COLS + c];
            top = fabs(v) > top ? fabs(v) : top;
            int qv = q[(size_t)r * COLS + c];
            total += qv;
            qtop = abs(qv) > qtop ? abs(qv) : qtop;
            double back = (double)qv * scale[r];
            T_CHECK(fabs(back - v) <= 0.5 * scale[r] * (1 + 1e-5) + 1e-30, "row %d col %d: %g came back as %g",
                    r, c, v, back);
        }
        T_CHECK(fabs(scale[r] - top / levels) <= 1e-6 * top, "row %d: scale %g, max %g", r, scale[r], top);
        T_CHECK(sums[r] == total, "row %d: row_sum %d, not %lld", r, sums[r], (long long)total);
        T_CHECK(top == 0 ? qtop == 0 && scale[r] == 0 : qtop == levels, "row %d: largest |q| %d", r, qtop);
    }
    /* Row 4: scale 1, so 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, 3.5 -> 4 ... */
    for (int c = 1; c < 9 && !narrow; c++) {
        float v = w[4 * COLS + c];
        T_CHECK(q[4 * COLS + c] == (int8_t)nearbyint(v), "%g quantized to %d", v, q[4 * COLS + c]);
    }
    }
done:
    free(w);
    free(q);
}

static void check_quantize_u7(void)
{
    t_case("unsigned 7-bit input quantization: levels span the row and 0, within half a step, NaN and zero rows");
    enum { COLS = 77 };
    uint32_t seed = 1717;
    float *v = random_floats(COLS, 3.0f, &seed);
    int8_t q[COLS];
    if (!T_CHECK(v != NULL, "out of memory")) return;
    /* Mixed signs, all positive, all negative, one value, zeros. */
    for (int shape = 0; shape < 5; shape++) {
        float row[COLS];
        for (int c = 0; c < COLS; c++)
            row[c] = shape == 0 ? v[c] : shape == 1 ? fabsf(v[c]) + 1.0f : shape == 2 ? -fabsf(v[c]) - 1.0f
                     : shape == 3 ? (c == 5 ? 2.5f : 0.0f) : 0.0f;
        int32_t zero = -1;
        float step = bert_int8_quantize_input_u7(q, row, COLS, &zero);
        if (shape == 4) {
            int nonzero = 0;
            for (int c = 0; c < COLS; c++) nonzero += q[c] != 0;
            T_CHECK(step == 0.0f && zero == 0 && nonzero == 0, "zero row: step %g, zero %d, %d nonzero", step, zero,
                    nonzero);
            continue;
        }
        T_CHECK(zero >= 0 && zero <= 127 && step > 0, "shape %d: zero point %d, step %g", shape, zero, step);
        int lo = 127, hi = 0;
        for (int c = 0; c < COLS; c++) {
            lo = q[c] < lo ? q[c] : lo;
            hi = q[c] > hi ? q[c] : hi;
            double back = ((double)q[c] - zero) * step;
            T_CHECK(fabs(back - row[c]) <= 0.5 * step * (1 + 1e-5), "shape %d col %d: %g came back as %g", shape, c,
                    row[c], back);
        }
        /* 0 is among the levels: a row of one sign spans from 0. */
        T_CHECK(lo >= 0 && hi <= 127 && (shape == 2 || hi == 127) && (shape == 1 || lo == 0),
                "shape %d: levels %d..%d, not the whole range", shape, lo, hi);
    }
    float odd[3] = {NAN, 1.0f, -1.0f};
    int32_t zero;
    float step = bert_int8_quantize_input_u7(q, odd, 3, &zero);
    T_CHECK(q[0] == zero && q[1] == 127 && q[2] == 0 && step > 0, "NaN row: %d %d %d, zero %d", q[0], q[1], q[2],
            zero);
    free(v);
}

/* The product of the test's matrices in double: bfloat16 weights widened,
 * int8 with the input quantized as the contract says.  Returns the largest
 * error of out relative to the sum of the terms' magnitudes. */
static double lowp_error(const float *out, const float *in, const bert_matrix *m, const float *b, int n, int rows,
                         int cols)
{
    double worst = 0;
    int8_t *qx = malloc((size_t)n * cols);
    float *xscale = malloc((size_t)n * sizeof *xscale);
    int32_t *xsum = malloc((size_t)n * sizeof *xsum);
    if (!qx || !xscale || !xsum) worst = INFINITY;
    else if (m->precision == BERT_PRECISION_INT8) bert_int8_quantize_rows(qx, xscale, xsum, in, n, cols);
    for (int i = 0; qx && xscale && xsum && i < n; i++)
        for (int r = 0; r < rows; r++) {
            double sum = 0, mag = 0;
            if (m->precision == BERT_PRECISION_INT8) {
                int64_t dot = 0, abs_dot = 0;
                for (int k = 0; k < cols; k++) {
                    int t = qx[(size_t)i * cols + k] * m->i8[(size_t)r * cols + k];
                    dot += t;
                    abs_dot += abs(t);
                }
                double unit = (double)xscale[i] * m->scale[r];
                sum = (double)dot * unit;
                mag = (double)abs_dot * unit;
            } else {
                for (int k = 0; k < cols; k++) {
                    uint16_t x;
                    bert_bf16_from_f32(&x, &in[(size_t)i * cols + k], 1);
                    double t = (double)widen(x) * widen(m->bf16[(size_t)r * cols + k]);
                    sum += t;
                    mag += fabs(t);
                }
            }
            if (b) {
                sum += b[r];
                mag += fabs(b[r]);
            }
            double e = fabs(out[(size_t)i * rows + r] - sum) / (mag + 1e-30);
            if (!(e <= worst)) worst = e;
        }
    free(qx);
    free(xscale);
    free(xsum);
    return worst;
}

/* Test weights in both precisions, from the same floats. */
typedef struct {
    float *f32;
    uint16_t *bf16;
    int8_t *i8;
    float *scale;
    int32_t *row_sum;
    /* int8 held to 7 bits (bert_int8_quantize_rows_narrow), which the
     * kernels on unsigned input against 7-bit weights need. */
    int8_t *i8n;
    float *scale_n;
    int32_t *row_sum_n;
} weights;

static int weights_make(weights *w, int rows, int cols, uint32_t *seed)
{
    size_t count = (size_t)rows * cols;
    w->f32 = random_floats(count, 0.1f, seed);
    w->bf16 = malloc(count * sizeof *w->bf16);
    w->i8 = malloc(count);
    w->scale = malloc((size_t)rows * sizeof *w->scale);
    w->row_sum = malloc((size_t)rows * sizeof *w->row_sum);
    w->i8n = malloc(count);
    w->scale_n = malloc((size_t)rows * sizeof *w->scale_n);
    w->row_sum_n = malloc((size_t)rows * sizeof *w->row_sum_n);
    if (!w->f32 || !w->bf16 || !w->i8 || !w->scale || !w->row_sum || !w->i8n || !w->scale_n || !w->row_sum_n)
        return -1;
    bert_bf16_from_f32(w->bf16, w->f32, count);
    bert_int8_quantize_rows(w->i8, w->scale, w->row_sum, w->f32, rows, cols);
    bert_int8_quantize_rows_narrow(w->i8n, w->scale_n, w->row_sum_n, w->f32, rows, cols);
    return 0;
}

static void weights_free(weights *w)
{
    free(w->f32);
    free(w->bf16);
    free(w->i8);
    free(w->scale);
    free(w->row_sum);
    free(w->i8n);
    free(w->scale_n);
    free(w->row_sum_n);
}

static bert_matrix matrix_of(const weights *w, bert_precision p)
{
    bert_matrix m = {p, w->f32, w->bf16, w->i8, w->scale, w->row_sum, NULL, NULL, 0};
    return m;
}

/* The int8 weights held to 7 bits. */
static bert_matrix narrow_of(const weights *w)
{
    bert_matrix m = {BERT_PRECISION_INT8, w->f32, NULL, w->i8n, w->scale_n, w->row_sum_n, NULL, NULL, 1};
    return m;
}

/* The matrices every kernel is checked on: bfloat16, int8, int8 narrow. */
enum { VARIANTS = 3 };
static bert_matrix variant_of(const weights *w, int v)
{
    return v == 2 ? narrow_of(w) : matrix_of(w, v == 0 ? BERT_PRECISION_BFLOAT16 : BERT_PRECISION_INT8);
}

static void check_products(void)
{
    t_case("bfloat16 and int8 products match a double-precision product of the same weights");
    static const int ns[] = {1, 3, 13, 48, 49, 200};
    static const int colss[] = {256, 384, 768, 3072, 100, 770};
    static const int rowss[] = {5, 97};
    uint32_t seed = 2024;
    bert_workers *pool = bert_workers_new();
    bert_linear_scratch scratch = {NULL, 0};
    if (!T_CHECK(pool, "out of memory")) return;
    bert_linear_plan plan = bert_linear_plan_for(BERT_ISA_BASE);
    plan.scratch = &scratch;
    for (size_t c = 0; c < sizeof colss / sizeof *colss; c++)
        for (size_t r = 0; r < sizeof rowss / sizeof *rowss; r++) {
            int rows = rowss[r], cols = colss[c];
            weights w;
            int ok = weights_make(&w, rows, cols, &seed) == 0;
            float *b = random_floats((size_t)rows, 0.5f, &seed);
            for (size_t a = 0; ok && b && a < sizeof ns / sizeof *ns; a++) {
                int n = ns[a];
                /* Under emulation, a few products of every kind: 1, 3 and
                 * 13 rows, cols with and without tails (13 x 97 x 770 is
                 * enough for two threads to split, ext/base/workers.c). */
                if (t_light() && (n > 13 || cols == 384 || cols == 768 || cols == 3072)) continue;
                float *in = random_floats((size_t)n * cols, 2.0f, &seed);
                float *out = malloc(((size_t)n * rows + 1) * sizeof *out);
                if (!T_CHECK(in && out, "out of memory")) {
                    free(in);
                    free(out);
                    break;
                }
                if (n == 3) memset(in + cols, 0, (size_t)cols * sizeof *in); /* an all-zero row */
                for (int variant = 0; variant < 8; variant++) {
                    bert_precision p = variant & 1 ? BERT_PRECISION_INT8 : BERT_PRECISION_BFLOAT16;
                    int threads = variant & 2 ? 2 : 1;
                    const float *bias = variant & 4 ? b : NULL;
                    bert_matrix m = matrix_of(&w, p);
                    plan.workers = threads > 1 ? pool : NULL;
                    plan.threads = threads;
                    out[(size_t)n * rows] = 12345.0f;
                    T_CHECK(bert_linear_matrix(&plan, out, in, &m, bias, n, rows, cols) == 0, "failed");
                    double e = lowp_error(out, in, &m, bias, n, rows, cols);
                    /* float32 sums over cols terms; int8 only scales an exact sum. */
                    double bound = p == BERT_PRECISION_INT8 ? 1e-6 : 4e-5;
                    T_CHECK(e < bound, "%s n=%d rows=%d cols=%d threads=%d bias=%d: relative error %.3g",
                            bert_precision_name(p), n, rows, cols, threads, bias != NULL, e);
                    T_CHECK(out[(size_t)n * rows] == 12345.0f, "%s n=%d rows=%d cols=%d: wrote past the output",
                            bert_precision_name(p), n, rows, cols);
                    if (p != BERT_PRECISION_INT8) continue;
                    /* The same held to 7 bits. */
                    m = narrow_of(&w);
                    T_CHECK(bert_linear_matrix(&plan, out, in, &m, bias, n, rows, cols) == 0, "failed");
                    e = lowp_error(out, in, &m, bias, n, rows, cols);
                    T_CHECK(e < bound, "int8 7-bit n=%d rows=%d cols=%d threads=%d bias=%d: relative error %.3g", n,
                            rows, cols, threads, bias != NULL, e);
                }
                free(in);
                free(out);
            }
            T_CHECK(ok && b, "out of memory");
            weights_free(&w);
            free(b);
        }
    T_CHECK(bert_workers_started(pool) >= 1, "the products never ran on a helper thread");
    bert_workers_free(pool);
    bert_linear_scratch_free(&scratch);
}

/* The reduced precisions stay close to the float32 product they stand for. */
static void check_against_float32(void)
{
    t_case("bfloat16 and int8 products stay near the float32 product");
    enum { N = 13, ROWS = 64, COLS = 768 };
    uint32_t seed = 31337;
    weights w;
    float *in = random_floats((size_t)N * COLS, 1.0f, &seed);
    float *ref = malloc((size_t)N * ROWS * sizeof *ref), *out = malloc((size_t)N * ROWS * sizeof *out);
    if (!T_CHECK(weights_make(&w, ROWS, COLS, &seed) == 0 && in && ref && out, "out of memory")) goto done;
    bert_linear_plan plan = bert_linear_plan_for(BERT_ISA_BASE);
    bert_matrix f = matrix_of(&w, BERT_PRECISION_FLOAT32);
    T_CHECK(bert_linear_matrix(&plan, ref, in, &f, NULL, N, ROWS, COLS) == 0, "float32 failed");
    /* Random data of this size: bfloat16 keeps 8 bits, int8 about 7 of
     * each factor, and the errors of the cols terms partly cancel. */
    static const struct { bert_precision p; double bound; } cases[] = {
        {BERT_PRECISION_BFLOAT16, 0.01}, {BERT_PRECISION_INT8, 0.03}};
    for (size_t k = 0; k < 2; k++) {
        bert_matrix m = matrix_of(&w, cases[k].p);
        T_CHECK(bert_linear_matrix(&plan, out, in, &m, NULL, N, ROWS, COLS) == 0, "failed");
        double err = 0, norm = 0;
        for (size_t i = 0; i < (size_t)N * ROWS; i++) {
            err += (out[i] - ref[i]) * (double)(out[i] - ref[i]);
            norm += (double)ref[i] * ref[i];
        }
        double rel = sqrt(err / norm);
        T_CHECK(rel < cases[k].bound, "%s: relative error %.3g against float32", bert_precision_name(cases[k].p),
                rel);
    }
done:
    weights_free(&w);
    free(in);
    free(ref);
    free(out);
}

static void check_no_allocation(void)
{
    t_case("with the plan's scratch, repeated reduced-precision products allocate nothing");
    enum { N = 16, ROWS = 96, COLS = 384 };
    uint32_t seed = 5;
    weights w;
    float *in = random_floats((size_t)N * COLS, 1.0f, &seed);
    float *out = malloc((size_t)N * ROWS * sizeof *out);
    bert_workers *pool = bert_workers_new();
    bert_linear_scratch scratch = {NULL, 0};
    if (!T_CHECK(weights_make(&w, ROWS, COLS, &seed) == 0 && in && out && pool, "out of memory")) goto done;
    bert_linear_plan plan = bert_linear_plan_for(bert_cpu_isa());
    plan.scratch = &scratch;
    plan.workers = pool;
    plan.threads = 2;
    for (int p = BERT_PRECISION_BFLOAT16; p <= BERT_PRECISION_INT8; p++) {
        bert_matrix m = matrix_of(&w, (bert_precision)p);
        /* The first call may grow the scratch and start the helper thread. */
        T_CHECK(bert_linear_matrix(&plan, out, in, &m, NULL, N, ROWS, COLS) == 0, "failed");
        long before = t_allocations();
        for (int k = 0; k < 5; k++)
            T_CHECK(bert_linear_matrix(&plan, out, in, &m, NULL, N - k, ROWS, COLS) == 0, "failed");
        T_CHECK(t_allocations() == before, "%s: %ld allocations in 5 products", bert_precision_name((bert_precision)p),
                t_allocations() - before);
    }
done:
    weights_free(&w);
    free(in);
    free(out);
    bert_workers_free(pool);
    bert_linear_scratch_free(&scratch);
}

/* What the int8 kernels on unsigned 7-bit input (bert_lowp_kernel_input_u7)
 * give: the rows quantized by bert_int8_quantize_input_u7, the exact sums
 * less the zero point times the weight row's sum, scaled as every int8
 * kernel scales its sum.  0, or -1 when memory ran out. */
static int u7_reference(float *ref, const float *in, const bert_matrix *m, const float *b, int n, int rows, int cols)
{
    int8_t *q = malloc((size_t)cols);
    if (!q) return -1;
    for (int i = 0; i < n; i++) {
        int32_t zero;
        float step = bert_int8_quantize_input_u7(q, in + (size_t)i * cols, cols, &zero);
        for (int r = 0; r < rows; r++) {
            int32_t sum = 0;
            for (int c = 0; c < cols; c++) sum += q[c] * m->i8[(size_t)r * cols + c];
            sum -= zero * m->row_sum[r];
            float v = (float)sum * (step * m->scale[r]);
            ref[(size_t)i * rows + r] = b ? v + b[r] : v;
        }
    }
    free(q);
    return 0;
}

/* The reference a kernel is held to: the portable kernel's product, or
 * u7_reference for the kernels on unsigned 7-bit input. */
static int reference_product(bert_lowp_kernel kernel, float *ref, const float *in, const bert_matrix *m,
                             const float *b, int n, int rows, int cols)
{
    if (m->precision == BERT_PRECISION_INT8 && bert_lowp_kernel_input_u7(kernel))
        return u7_reference(ref, in, m, b, n, rows, cols) == 0 ? 1 : -1;
    return bert_linear_matrix_with(BERT_LOWP_PORTABLE, NULL, 1, ref, in, m, b, n, rows, cols);
}

/* Every vector kernel this CPU runs against the portable kernel, on shapes
 * that cover every remainder of the blocks (4 x 6 and 3 x 4) and of the
 * vectors (cols not a multiple of 64, 32, 16 or 8). */
static void check_kernels(void)
{
    static const int ns[] = {1, 2, 3, 4, 5, 7, 16, 49, 130};
    static const int rowss[] = {1, 2, 3, 5, 6, 7, 13, 100};
    static const int colss[] = {8, 40, 100, 256, 384, 770, 3072};
    bert_workers *pool = bert_workers_new();
    for (int k = BERT_LOWP_PORTABLE + 1; k < BERT_LOWP_KERNELS; k++) {
        bert_lowp_kernel kernel = (bert_lowp_kernel)k;
        /* Another architecture's kernel: not in this build's table. */
        if (strcmp(bert_lowp_kernel_name(kernel), "?") == 0) continue;
        char title[128];
        snprintf(title, sizeof title, "kernel %s matches the portable kernel", bert_lowp_kernel_name(kernel));
        t_case(title);
        if (!T_CHECK(pool, "out of memory")) return;
        uint32_t seed = 77 + k;
        int ran = 0;
        for (size_t c = 0; c < sizeof colss / sizeof *colss; c++)
            for (size_t r = 0; r < sizeof rowss / sizeof *rowss; r++) {
                int rows = rowss[r], cols = colss[c];
                weights w;
                int ok = weights_make(&w, rows, cols, &seed) == 0;
                float *b = random_floats((size_t)rows, 0.5f, &seed);
                for (size_t a = 0; ok && b && a < sizeof ns / sizeof *ns; a++) {
                    int n = ns[a];
                    /* Under emulation, up to 20,000 multiply-adds a product
                     * (every remainder of blocks and vectors still). */
                    if (t_light() && (size_t)n * rows * cols > 20000) continue;
                    /* Large enough for 2 threads to split 130 x 100 x 3072. */
                    float *in = random_floats((size_t)n * cols, 2.0f, &seed);
                    float *ref = malloc((size_t)n * rows * sizeof *ref);
                    float *out = malloc(((size_t)n * rows + 1) * sizeof *out);
                    if (!T_CHECK(in && ref && out, "out of memory")) {
                        free(in), free(ref), free(out);
                        break;
                    }
                    if (n == 5) memset(in + 2 * cols, 0, (size_t)cols * sizeof *in);
                    for (int v = 0; v < VARIANTS; v++) {
                        bert_matrix m = variant_of(&w, v);
                        bert_precision p = m.precision;
                        if (n == 7 && p == BERT_PRECISION_INT8) {
                            /* For the quantizers: a NaN, an infinity, and a
                             * row of ties (scale 1, values k + 1/2). */
                            in[1 * cols + cols / 2] = NAN;
                            in[2 * cols + cols - 1] = INFINITY;
                            for (int t = 0; t < cols; t++) in[4 * cols + t] = t == 0 ? -127.0f : (float)(t % 9) - 4.5f;
                        }
                        int threads = (a + c) % 2 ? 2 : 1;
                        const float *bias = (a + r) % 2 ? b : NULL;
                        out[(size_t)n * rows] = 12345.0f;
                        int got = bert_linear_matrix_with(kernel, pool, threads, out, in, &m, bias, n, rows, cols);
                        if (got == 0) continue; /* another precision's kernel, or not on this CPU */
                        ran++;
                        T_CHECK(got == 1, "%s failed", bert_lowp_kernel_name(kernel));
                        T_CHECK(reference_product(kernel, ref, in, &m, bias, n, rows, cols) == 1, "reference failed");
                        T_CHECK(out[(size_t)n * rows] == 12345.0f, "%s n=%d rows=%d cols=%d: wrote past the output",
                                bert_lowp_kernel_name(kernel), n, rows, cols);
                        if (p == BERT_PRECISION_INT8) {
                            size_t differ = 0;
                            for (size_t i = 0; i < (size_t)n * rows; i++) differ += out[i] != ref[i];
                            T_CHECK(differ == 0, "%s n=%d rows=%d cols=%d threads=%d: %zu outputs differ from portable",
                                    bert_lowp_kernel_name(kernel), n, rows, cols, threads, differ);
                        } else {
                            double e = lowp_error(out, in, &m, bias, n, rows, cols);
                            T_CHECK(e < 4e-5, "%s n=%d rows=%d cols=%d threads=%d: relative error %.3g",
                                    bert_lowp_kernel_name(kernel), n, rows, cols, threads, e);
                        }
                    }
                    free(in);
                    free(ref);
                    free(out);
                }
                T_CHECK(ok && b, "out of memory");
                weights_free(&w);
                free(b);
            }
        if (ran == 0) t_skip("this CPU lacks the instructions");
    }
    bert_workers_free(pool);
}

/* Products at the ends of the int8 range: every pair of adjacent columns
 * is 127 * 127 twice over, which a 16-bit sum of two products (vpmaddubsw)
 * only holds when neither side is shifted to unsigned; every kernel must
 * give the exact int32 sum, as the portable kernel does. */
static void check_int8_extremes(void)
{
    t_case("int8 kernels sum products of +-127 exactly (no 16-bit saturation)");
    enum { N = 4, ROWS = 7, COLS = 96 };
    static float in[N * COLS], w[ROWS * COLS], out[N * ROWS], ref[N * ROWS];
    static int8_t q[ROWS * COLS];
    float scale[ROWS];
    int32_t row_sum[ROWS];
    for (int c = 0; c < COLS; c++) {
        in[c] = -1.0f;                           /* all -127 */
        in[COLS + c] = 1.0f;                     /* all 127 */
        in[2 * COLS + c] = c % 2 ? 1.0f : -1.0f; /* alternating */
        in[3 * COLS + c] = c % 4 < 2 ? -1.0f : 1.0f;
        for (int r = 0; r < ROWS; r++)
            w[r * COLS + c] = r == 0 ? 1.0f : r == 1 ? -1.0f : r % 2 ? (c % 2 ? -1.0f : 1.0f) : (c % 4 < 2 ? 1.0f : -1.0f);
    }
    int ran = 0;
    /* 8-bit weights, and 7-bit ones (+-63) against unsigned input up to 255. */
    for (int narrow = 0; narrow < 2; narrow++) {
        (narrow ? bert_int8_quantize_rows_narrow : bert_int8_quantize_rows)(q, scale, row_sum, w, ROWS, COLS);
        bert_matrix m = {BERT_PRECISION_INT8, NULL, NULL, q, scale, row_sum, NULL, NULL, narrow};
        T_CHECK(bert_linear_matrix_with(BERT_LOWP_PORTABLE, NULL, 1, ref, in, &m, NULL, N, ROWS, COLS) == 1,
                "portable failed");
        /* Row 0 of the input against weight row 0: 96 products of -127 * 127 (or 63). */
        T_CHECK(fabsf(ref[0] + COLS) < 1e-3f, "portable: %g, not %d", ref[0], -COLS);
        for (int k = BERT_LOWP_PORTABLE + 1; k < BERT_LOWP_KERNELS; k++) {
            if (bert_linear_matrix_with((bert_lowp_kernel)k, NULL, 1, out, in, &m, NULL, N, ROWS, COLS) != 1) continue;
            ran++;
            /* Unsigned 7-bit input: the row of +1 is 127 against +-127. */
            static float own[N * ROWS];
            const float *want = ref;
            if (bert_lowp_kernel_input_u7((bert_lowp_kernel)k)) {
                T_CHECK(reference_product((bert_lowp_kernel)k, own, in, &m, NULL, N, ROWS, COLS) == 1,
                        "reference failed");
                want = own;
            }
            for (int i = 0; i < N * ROWS; i++)
                T_CHECK(out[i] == want[i], "%s%s: output %d is %g, reference %g",
                        bert_lowp_kernel_name((bert_lowp_kernel)k), narrow ? " (7-bit W)" : "", i, out[i], want[i]);
        }
    }
    if (ran == 0) t_skip("this CPU has no int8 vector kernel");
}

/* Each bfloat16 kernel rounds its input rows itself (vectorized): against
 * an identity matrix, out[i][r] is x[i][r] as rounded, exactly. */
/* The three outcomes of bert_linear_matrix_with: ran (1), not for this
 * precision or CPU (0, nothing written), out of memory (-1). */
static void check_kernel_outcomes(void)
{
    t_case("one kernel's product: 1 when it ran, 0 when it cannot run here, -1 when memory ran out");
    enum { N = 3, ROWS = 5, COLS = 32 };
    static float in[N * COLS], w[ROWS * COLS], out[N * ROWS];
    static int8_t q[ROWS * COLS];
    float scale[ROWS];
    int32_t row_sum[ROWS];
    for (int i = 0; i < N * COLS; i++) in[i] = (float)(i % 7) - 3.0f;
    for (int i = 0; i < ROWS * COLS; i++) w[i] = (float)(i % 5) - 2.0f;
    bert_int8_quantize_rows(q, scale, row_sum, w, ROWS, COLS);
    bert_matrix m = {BERT_PRECISION_INT8, NULL, NULL, q, scale, row_sum, NULL, NULL, 0};
    T_CHECK(bert_linear_matrix_with(BERT_LOWP_PORTABLE, NULL, 1, out, in, &m, NULL, N, ROWS, COLS) == 1,
            "the portable kernel did not run");
    T_CHECK(bert_linear_matrix_with(BERT_LOWP_BF16_AVX2, NULL, 1, out, in, &m, NULL, N, ROWS, COLS) == 0,
            "a bfloat16 kernel ran on int8 weights");
    T_CHECK(bert_linear_matrix_with(BERT_LOWP_INT8_AVX2_NARROW, NULL, 1, out, in, &m, NULL, N, ROWS, COLS) == 0 &&
                bert_linear_matrix_with(BERT_LOWP_INT8_PACKED_AVX2_NARROW, NULL, 1, out, in, &m, NULL, N, ROWS, COLS) == 0,
            "a kernel for 7-bit weights ran on 8-bit ones");
    long start = t_allocations();
    t_fail_allocation(start);
    int got = bert_linear_matrix_with(BERT_LOWP_PORTABLE, NULL, 1, out, in, &m, NULL, N, ROWS, COLS);
    t_fail_allocation(-1);
    T_CHECK(t_allocations() > start, "the product allocated nothing, so nothing could fail");
    T_CHECK(got == -1, "out of memory gave %d, not -1", got);
}

static void check_input_rounding(void)
{
    t_case("bfloat16 kernels round input rows as bert_bf16_from_f32 does");
    enum { N = 5, COLS = 80 };
    float in[N * COLS], out[N * COLS];
    uint16_t eye[COLS * COLS], rounded[N * COLS];
    uint32_t seed = 4711;
    for (int i = 0; i < N * COLS; i++) {
        uint32_t u;
        /* Exponents from 1 to 127: finite, and normal (vdpbf16ps takes
         * subnormals as zero). */
        u = (next_random(&seed) & 0xbfffffffu) | 0x00800000u;
        if (i % 3 == 0) u = (u & 0xffff0000u) | 0x8000u; /* a tie */
        in[i] = bits_f32(u);
    }
    in[7] = 0.0f, in[8] = -0.0f;
    bert_bf16_from_f32(rounded, in, N * COLS);
    for (int r = 0; r < COLS; r++)
        for (int c = 0; c < COLS; c++) eye[r * COLS + c] = r == c ? 0x3f80 : 0;
    bert_matrix m = {BERT_PRECISION_BFLOAT16, NULL, eye, NULL, NULL, NULL, NULL, NULL, 0};
    for (int k = BERT_LOWP_PORTABLE; k < BERT_LOWP_KERNELS; k++) {
        if (bert_linear_matrix_with((bert_lowp_kernel)k, NULL, 1, out, in, &m, NULL, N, COLS, COLS) != 1) continue;
        int wrong = 0;
        for (int i = 0; i < N * COLS; i++) wrong += out[i] != widen(rounded[i]); /* -0 and 0 alike */
        T_CHECK(wrong == 0, "%s: %d inputs rounded otherwise", bert_lowp_kernel_name((bert_lowp_kernel)k), wrong);
    }
}

/* SQLITE_BERT_ISA lowers what a plan may use; whatever it picks, int8 gives
 * the portable kernel's outputs to the bit and bfloat16 the same within
 * float rounding. */
static void check_isa_levels(void)
{
    t_case("under each SQLITE_BERT_ISA level the chosen kernels give the portable results");
    /* Each level and the extensions it leaves (NULL: the CPU's best). */
#ifdef BERT_ARM64_KERNELS
    static const char *const levels[] = {"base", "neon", "dotprod", NULL};
    static const unsigned allowed[] = {0, 0, BERT_CPU_DOTPROD, ~0u};
#else
    static const char *const levels[] = {"base", "avx2", "avx512", NULL};
    static const unsigned allowed[] = {0, 0, 0, ~0u};
#endif
    enum { N = 13, ROWS = 50, COLS = 384 };
    uint32_t seed = 8;
    weights w;
    float *in = random_floats((size_t)N * COLS, 1.0f, &seed);
    float *ref = malloc((size_t)N * ROWS * sizeof *ref), *out = malloc((size_t)N * ROWS * sizeof *out);
    const char *was = getenv("SQLITE_BERT_ISA");
    char *saved = was ? strdup(was) : NULL;
    if (!T_CHECK(weights_make(&w, ROWS, COLS, &seed) == 0 && in && ref && out && (saved || !was), "out of memory"))
        goto done;
    for (size_t l = 0; l < sizeof levels / sizeof *levels; l++) {
        if (levels[l]) setenv("SQLITE_BERT_ISA", levels[l], 1);
        else unsetenv("SQLITE_BERT_ISA");
        bert_linear_plan plan = bert_linear_plan_for(bert_cpu_isa());
        const char *name = levels[l] ? levels[l] : "(unset)";
        T_CHECK((plan.extensions & ~allowed[l]) == 0, "%s: extensions 0x%x remain", name, plan.extensions);
        T_CHECK(plan.extensions == (plan.extensions & bert_cpu_extensions()), "%s: extensions beyond the CPU's",
                name);
        /* Few rows and more, split over weight rows. */
        static const int ns[] = {1, 2, 3, 4, N};
        for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
            for (int p = BERT_PRECISION_BFLOAT16; p <= BERT_PRECISION_INT8; p++) {
                int n = ns[a];
                bert_matrix m = matrix_of(&w, (bert_precision)p);
                T_CHECK(bert_linear_matrix(&plan, out, in, &m, NULL, n, ROWS, COLS) == 0, "failed");
                T_CHECK(bert_linear_matrix_with(BERT_LOWP_PORTABLE, NULL, 1, ref, in, &m, NULL, n, ROWS, COLS) == 1,
                        "portable failed");
                if (p == BERT_PRECISION_INT8) {
                    T_CHECK(memcmp(out, ref, (size_t)n * ROWS * sizeof *out) == 0,
                            "%s n=%d: int8 differs from portable", name, n);
                } else {
                    double e = lowp_error(out, in, &m, NULL, n, ROWS, COLS);
                    T_CHECK(e < 4e-5, "%s n=%d: bfloat16 relative error %.3g", name, n, e);
                }
            }
    }
done:
    if (saved) setenv("SQLITE_BERT_ISA", saved, 1);
    else unsetenv("SQLITE_BERT_ISA");
    free(saved);
    weights_free(&w);
    free(in);
    free(ref);
    free(out);
}

/* |got - the dot product of n values of a (every a_step-th, times scale) and
 * of b (every b_step-th), each rounded to bfloat16, summed in double|
 * relative to the sum of the products' magnitudes. */
static double bf16_dot_error(float got, const float *a, size_t a_step, float scale, const float *b, size_t b_step,
                             int n)
{
    double want = 0, size = 0;
    for (int t = 0; t < n; t++) {
        uint16_t ra, rb;
        float as = a[t * a_step] * scale;
        bert_bf16_from_f32(&ra, &as, 1);
        bert_bf16_from_f32(&rb, &b[t * b_step], 1);
        double product = (double)bert_f32_from_bf16(ra) * bert_f32_from_bf16(rb);
        want += product;
        size += fabs(product);
    }
    return fabs(got - want) / (size > 0 ? size : 1);
}

/* Attention's products on AMX tiles (linear.h): keys laid out from rows,
 * values from columns, queries and probabilities as the kernel reads them,
 * against a double-precision product of the same bfloat16-rounded values,
 * on head widths and lengths that leave every remainder of tiles. */
static void check_attention_tiles(void)
{
    t_case("attention's products on AMX tiles match a double-precision product");
    if (!(bert_cpu_extensions() & BERT_CPU_AMX_BF16)) {
        t_skip("this CPU lacks the instructions (AMX-BF16)");
        return;
    }
    static const int lens[] = {1, 15, 16, 33, 100, 450};
    static const int dhs[] = {24, 32, 64};
    uint32_t seed = 4242;
    int ran = 0;
    for (size_t d = 0; d < sizeof dhs / sizeof *dhs; d++)
        for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
            const int dh = dhs[d], len = lens[l], ld = 3 * dh + 5, m = len < 64 ? len : 64;
            const bert_precision p = BERT_PRECISION_BFLOAT16;
            float *src = random_floats((size_t)len * ld, 1.0f, &seed);
            float *scores = malloc((size_t)m * len * sizeof *scores), *ctx = malloc((size_t)m * dh * sizeof *ctx);
            void *keys = malloc(bert_tiles_bytes(len, dh, p)), *values = malloc(bert_tiles_bytes(dh, len, p));
            uint16_t *xq = malloc((size_t)(m + BERT_AMX_ROWS_PAST) * bert_tile_cols(dh, p) * sizeof *xq);
            uint16_t *xp = malloc((size_t)(m + BERT_AMX_ROWS_PAST) * bert_tile_cols(len, p) * sizeof *xp);
            if (!T_CHECK(src && scores && ctx && keys && values && xq && xp, "out of memory")) goto next;
            /* Queries, keys and values: three column ranges of the same rows, as in the encoder. */
            const float *q = src, *k = src + dh, *v = src + 2 * dh, scale = 0.125f;
            bert_bf16_tiles_from_rows(keys, k, ld, len, dh);
            bert_bf16_tiles_from_columns(values, v, ld, dh, len);
            bert_bf16_tile_rows(xq, q, ld, m, dh, scale);
            T_CHECK(bert_bf16_tiles_product(scores, xq, keys, m, len, dh) == 1, "the first product did not run");
            ran++;
            double worst = 0;
            for (int i = 0; i < m; i++)
                for (int j = 0; j < len; j++) {
                    double e = bf16_dot_error(scores[(size_t)i * len + j], q + (size_t)i * ld, 1, scale,
                                              k + (size_t)j * ld, 1, dh);
                    if (e > worst) worst = e;
                }
            /* The scores as probabilities: any values do for the product. */
            bert_bf16_tile_rows(xp, scores, len, m, len, 1.0f);
            T_CHECK(bert_bf16_tiles_product(ctx, xp, values, m, dh, len) == 1, "the second product did not run");
            for (int i = 0; i < m; i++)
                for (int c = 0; c < dh; c++) {
                    double e = bf16_dot_error(ctx[(size_t)i * dh + c], scores + (size_t)i * len, 1, 1.0f, v + c, ld,
                                              len);
                    if (e > worst) worst = e;
                }
            T_CHECK(worst < 4e-6, "dh %d, %d tokens: relative error %.3g", dh, len, worst);
        next:
            free(src), free(scores), free(ctx), free(keys), free(values), free(xq), free(xp);
        }
    T_CHECK(ran == (int)(sizeof dhs / sizeof *dhs * sizeof lens / sizeof *lens), "%d products ran", ran);
}

void suite_lowp(void)
{
    check_names();
    check_bf16_conversion();
    check_quantize();
    check_quantize_u7();
    check_products();
    check_against_float32();
    check_no_allocation();
    check_kernels();
    check_int8_extremes();
    check_input_rounding();
    check_kernel_outcomes();
    check_isa_levels();
    check_attention_tiles();
}
