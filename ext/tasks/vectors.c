/*
 * vectors.c - see vectors.h.
 */
#include "vectors.h"
#include "../models/entry.h"

#include "../base/error.h"

#include <math.h>
#include <string.h>

void bert_vector_shorten(float *v, int dims, int normalize)
{
    if (!normalize) return;
    double ss = 0;
    for (int i = 0; i < dims; i++) ss += (double)v[i] * v[i];
    double norm = sqrt(ss);
    /* The encoder's own normalisation (encoder.c bert_pool), so that a
     * shortened vector is what the model would give at that size. */
    float inv = (float)(1.0 / (norm > 1e-12 ? norm : 1e-12));
    for (int i = 0; i < dims; i++) v[i] *= inv;
}

void bert_embedding_shorten(const bert_entry *e, float *v, int dims)
{
    bert_vector_shorten(v, dims, e->normalize);
}

int bert_vector_is_unit(const float *v, int n)
{
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (double)v[i] * v[i];
    return fabs(sqrt(ss) - 1.0) <= BERT_UNIT_TOLERANCE;
}

void bert_quantize_binary(const float *v, int n, uint8_t *out)
{
    memset(out, 0, (size_t)n / 8);
    for (int i = 0; i < n; i++)
        if (v[i] > 0.0f) out[i / 8] |= (uint8_t)(1u << (i % 8));
}

void bert_quantize_int8(const float *v, int n, int8_t *out)
{
    /* sqlite-vec rounds its step to float32 and computes the rest in double:
     * the same operations here give the same bytes. */
    const float step = (float)(2.0 / 255);
    for (int i = 0; i < n; i++) {
        double x = ((double)v[i] + 1.0) / (double)step - 128.0;
        if (x <= -128.0) out[i] = -128;
        else if (x >= 127.0) out[i] = 127;
        else out[i] = (int8_t)(int)x;
    }
}

/* ---- token vectors ---------------------------------------------------------- */

size_t bert_token_vectors_bytes(int n, int d)
{
    size_t values = (size_t)n * (size_t)d;
    if (n < 1 || d < 1 || values > (size_t)(0x7fffffff - BERT_TOKEN_VECTORS_HEADER) / sizeof(float)) return SIZE_MAX;
    return BERT_TOKEN_VECTORS_HEADER + values * sizeof(float);
}

static void put_u32(unsigned char *p, uint32_t x)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(x >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void bert_token_vectors_header(unsigned char *blob, int n, int d)
{
    memcpy(blob, BERT_TOKEN_VECTORS_MAGIC, 4);
    put_u32(blob + 4, (uint32_t)n);
    put_u32(blob + 8, (uint32_t)d);
    put_u32(blob + 12, 0);
}

int bert_token_vectors_parse(const void *blob, size_t bytes, const char *what, int *n, int *d,
                             const unsigned char **values, char **err)
{
    *err = NULL;
    const unsigned char *p = blob;
    if (bytes < BERT_TOKEN_VECTORS_HEADER || memcmp(p, BERT_TOKEN_VECTORS_MAGIC, 4) != 0) {
        *err = bert_errorf("%s is not a token-vectors BLOB (%zu bytes without the \"" BERT_TOKEN_VECTORS_MAGIC
                           "\" header): token vectors are n x d float32 behind a 16-byte header (sql/README.md, Late interaction)",
                           what, bytes);
        return -1;
    }
    uint32_t rows = get_u32(p + 4), cols = get_u32(p + 8);
    size_t want = rows <= 0x7fffffff && cols <= 0x7fffffff ? bert_token_vectors_bytes((int)rows, (int)cols) : SIZE_MAX;
    if (want != bytes || get_u32(p + 12) != 0) {
        *err = bert_errorf("%s is a malformed token-vectors BLOB: its header says %u x %u float32 but it holds "
                           "%zu bytes: give the BLOB whole, as it was made", what, rows, cols, bytes);
        return -1;
    }
    *n = (int)rows;
    *d = (int)cols;
    *values = p + BERT_TOKEN_VECTORS_HEADER;
    return 0;
}

double bert_maxsim(const float *q, int nq, const float *doc, int nd, int dim)
{
    double total = 0;
    for (int i = 0; i < nq; i++) {
        double best = -INFINITY;
        for (int j = 0; j < nd; j++) {
            double dot = 0;
            for (int k = 0; k < dim; k++) dot += (double)q[(size_t)i * dim + k] * doc[(size_t)j * dim + k];
            if (dot > best) best = dot;
        }
        total += best;
    }
    return total;
}
