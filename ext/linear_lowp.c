/*
 * linear_lowp.c - out = in W^T + b with W held as bfloat16 or as int8 with
 * one scale per weight row (linear.h, "reduced precision").
 *
 * Input rows are prepared once per call, on the calling thread, before the
 * product is shared out: for int8 they are quantized (one scale a row), so
 * that every chunk of weight rows reads the same quantized rows.  The
 * product is then split over the plan's threads as bert_linear splits its
 * own: chunks of weight rows for a few input rows, chunks of input rows for
 * many.
 *
 * int8 sums are exact int32 sums, so the result of every kernel is a
 * function of the quantized values alone: the final scaling is written once
 * (int8_finish) and every kernel goes through it.
 */
#include "linear.h"
#include "workers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* As in linear.c: rows up to which a product is split by weight rows, the
 * least rows of a chunk, and the multiply-adds a thread must have. */
#define FEW_ROWS 48
#define LEAST_ROWS 48
#define MIN_WORK (384 * 1024)

const char *bert_precision_name(bert_precision p)
{
    switch (p) {
    case BERT_PRECISION_BFLOAT16: return "bfloat16";
    case BERT_PRECISION_INT8: return "int8";
    default: return "float32";
    }
}

int bert_precision_parse(const char *name, bert_precision *out)
{
    static const bert_precision all[] = {BERT_PRECISION_FLOAT32, BERT_PRECISION_BFLOAT16, BERT_PRECISION_INT8};
    for (size_t i = 0; name && i < sizeof all / sizeof *all; i++)
        if (strcmp(name, bert_precision_name(all[i])) == 0) {
            *out = all[i];
            return 0;
        }
    return -1;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

void bert_bf16_from_f32(uint16_t *out, const float *in, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u = f32_bits(in[i]);
        if ((u & 0x7fffffffu) > 0x7f800000u) {
            /* A NaN whose payload sits in the low half would round to
             * infinity: keep the sign, set the quiet bit. */
            out[i] = (uint16_t)((u >> 16) | 0x0040u);
            continue;
        }
        /* Round to nearest, ties to the even upper half; a carry out of the
         * mantissa steps the exponent, up to infinity, as it should. */
        u += 0x7fffu + ((u >> 16) & 1u);
        out[i] = (uint16_t)(u >> 16);
    }
}

/* Quantizes one row: q = round-to-even(v * 127 / max|v|); returns the scale
 * max|v| / 127 (0 for an all-zero row, whose q are all 0) and adds the sum
 * of q to *sum when sum is not NULL. */
static float quantize_row(int8_t *q, const float *v, int cols, int32_t *sum)
{
    float top = 0.0f;
    for (int c = 0; c < cols; c++) {
        float a = fabsf(v[c]);
        if (a > top) top = a;
    }
    int32_t total = 0;
    if (!(top > 0.0f) || !isfinite(top)) {
        memset(q, 0, (size_t)cols);
        if (sum) *sum = 0;
        return 0.0f;
    }
    float inverse = 127.0f / top;
    for (int c = 0; c < cols; c++) {
        float r = nearbyintf(v[c] * inverse);
        r = r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r;
        q[c] = (int8_t)r;
        total += q[c];
    }
    if (sum) *sum = total;
    return top / 127.0f;
}

void bert_int8_quantize_rows(int8_t *q, float *scale, int32_t *row_sum, const float *w, int rows, int cols)
{
    for (int r = 0; r < rows; r++)
        scale[r] = quantize_row(q + (size_t)r * cols, w + (size_t)r * cols, cols, &row_sum[r]);
}

/* One output of an int8 product from its exact int32 sum; every kernel
 * ends here, so all agree to the bit. */
static inline float int8_finish(int32_t sum, float xscale, float wscale, const float *b, int r)
{
    float v = (float)sum * (xscale * wscale);
    return b ? v + b[r] : v;
}

void bert_linear_scratch_free(bert_linear_scratch *s)
{
    if (!s) return;
    free(s->data);
    s->data = NULL;
    s->size = 0;
}

/* ---- the portable kernels ------------------------------------------------- */

typedef struct {
    const bert_matrix *w;
    float *out;
    const float *in;        /* bfloat16: the float32 input rows */
    const int8_t *qx;       /* int8: the quantized input rows */
    const float *xscale;    /* int8: their scales */
    const float *b;
    int n, rows, cols;
    int by_input; /* chunks of input rows (else of weight rows) */
    int step;     /* rows a chunk */
} lowp_job;

/* 16 running sums, one per column modulo 16, so that the compiler can keep
 * them in one vector; the remainder of cols goes to the first. */
static void bf16_portable(const lowp_job *j, int i0, int i1, int r0, int r1)
{
    int cols = j->cols, body = cols - cols % 16;
    for (int i = i0; i < i1; i++) {
        const float *x = j->in + (size_t)i * cols;
        for (int r = r0; r < r1; r++) {
            const uint16_t *w = j->w->bf16 + (size_t)r * cols;
            float lane[16] = {0};
            for (int c = 0; c < body; c += 16)
                for (int l = 0; l < 16; l++) lane[l] += x[c + l] * bf16_to_f32(w[c + l]);
            for (int c = body; c < cols; c++) lane[0] += x[c] * bf16_to_f32(w[c]);
            float sum = 0.0f;
            for (int l = 0; l < 16; l++) sum += lane[l];
            j->out[(size_t)i * j->rows + r] = j->b ? sum + j->b[r] : sum;
        }
    }
}

static void int8_portable(const lowp_job *j, int i0, int i1, int r0, int r1)
{
    int cols = j->cols;
    for (int i = i0; i < i1; i++) {
        const int8_t *x = j->qx + (size_t)i * cols;
        for (int r = r0; r < r1; r++) {
            const int8_t *w = j->w->i8 + (size_t)r * cols;
            int32_t sum = 0;
            for (int c = 0; c < cols; c++) sum += (int32_t)x[c] * w[c];
            j->out[(size_t)i * j->rows + r] = int8_finish(sum, j->xscale[i], j->w->scale[r], j->b, r);
        }
    }
}

static void run_chunk(void *ctx, int chunk, int chunks)
{
    (void)chunks;
    const lowp_job *j = ctx;
    int length = j->by_input ? j->n : j->rows;
    int c0 = chunk * j->step, c1 = c0 + j->step < length ? c0 + j->step : length;
    if (c1 <= c0) return;
    int i0 = j->by_input ? c0 : 0, i1 = j->by_input ? c1 : j->n;
    int r0 = j->by_input ? 0 : c0, r1 = j->by_input ? j->rows : c1;
    if (j->w->precision == BERT_PRECISION_INT8) int8_portable(j, i0, i1, r0, r1);
    else bf16_portable(j, i0, i1, r0, r1);
}

/* Shares the product out as linear.c's run() does: about four chunks a
 * thread, none below LEAST_ROWS rows or MIN_WORK multiply-adds a thread. */
static void run(const bert_linear_plan *plan, lowp_job *job)
{
    job->by_input = job->n > FEW_ROWS;
    int length = job->by_input ? job->n : job->rows;
    int threads = plan->threads;
    long long work = (long long)job->n * job->rows * job->cols;
    if (threads > work / MIN_WORK) threads = (int)(work / MIN_WORK);
    if (!plan->workers || threads < 2 || length < 2 * LEAST_ROWS) {
        job->step = length;
        run_chunk(job, 0, 1);
        return;
    }
    int step = (length + 4 * threads - 1) / (4 * threads);
    step = (step + LEAST_ROWS - 1) / LEAST_ROWS * LEAST_ROWS;
    job->step = step;
    bert_workers_run(plan->workers, threads, (length + step - 1) / step, run_chunk, job);
}

/* `bytes` of scratch: the plan's, grown when too small, else a fresh block
 * that *owned receives (the caller frees it). */
static void *scratch_get(const bert_linear_plan *plan, size_t bytes, void **owned)
{
    *owned = NULL;
    bert_linear_scratch *s = plan->scratch;
    if (s) {
        if (s->size < bytes) {
            void *grown = realloc(s->data, bytes);
            if (!grown) return NULL;
            s->data = grown;
            s->size = bytes;
        }
        return s->data;
    }
    *owned = malloc(bytes ? bytes : 1);
    return *owned;
}

int bert_linear_matrix(const bert_linear_plan *plan, float *out, const float *in, const bert_matrix *w,
                       const float *b, int n, int rows, int cols)
{
    if (n < 1 || rows < 1 || cols < 1) return 0;
    if (w->precision == BERT_PRECISION_FLOAT32) {
        bert_linear(plan, out, in, w->f32, b, n, rows, cols);
        return 0;
    }
    lowp_job job = {w, out, in, NULL, NULL, b, n, rows, cols, 0, 0};
    void *owned = NULL;
    if (w->precision == BERT_PRECISION_INT8) {
        /* The scales first, so that they stay aligned for floats. */
        size_t bytes = (size_t)n * sizeof(float) + (size_t)n * cols;
        float *xscale = scratch_get(plan, bytes, &owned);
        if (!xscale) return -1;
        int8_t *qx = (int8_t *)(xscale + n);
        for (int i = 0; i < n; i++)
            xscale[i] = quantize_row(qx + (size_t)i * cols, in + (size_t)i * cols, cols, NULL);
        job.qx = qx;
        job.xscale = xscale;
    }
    run(plan, &job);
    free(owned);
    return 0;
}
