/*
 * vector_functions.c - the scalar functions on vectors: bert_truncate,
 * bert_quantize (sqlite-vec's bit and int8 formats) and bert_maxsim (late
 * interaction's score on token-vector BLOBs).  The arithmetic is the task layer's
 * (tasks/vectors.h); this file reads the arguments and shapes the results.
 */
#include "vector_functions.h"

#include "../base/error.h"
#include "../tasks/vectors.h"
#include "connection.h"
#include "signatures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads argument i of fn, a float32 vector BLOB, into a malloc'd aligned
 * copy *values of *n floats.  0; 1 for NULL (the result is NULL, set here);
 * -1 after reporting an error. */
static int float_vector_arg(sqlite3_context *ctx, const char *fn, sqlite3_value **argv, int i, float **values, int *n)
{
    *values = NULL;
    int t = sqlite3_value_type(argv[i]);
    if (t == SQLITE_NULL) { sqlite3_result_null(ctx); return 1; }
    int bytes = sqlite3_value_bytes(argv[i]);
    unsigned subtype = sqlite3_value_subtype(argv[i]);
    if (t == SQLITE_BLOB && (subtype == BERT_SUBTYPE_BIT || subtype == BERT_SUBTYPE_INT8)) {
        bert_glue_fail(ctx, bert_glue_argument_error(fn, i, subtype == BERT_SUBTYPE_BIT
                           ? "is a bit vector already (sqlite-vec's bit[N]): give the float32 vector"
                           : "is an int8 vector already (sqlite-vec's int8[N]): give the float32 vector"));
        return -1;
    }
    if (t != SQLITE_BLOB || bytes == 0 || bytes % 4 != 0) {
        char problem[200];
        snprintf(problem, sizeof problem, "must be a float32 vector BLOB (a multiple of 4 bytes, as bert_embed "
                 "returns), not %s of %d bytes", bert_glue_type_name(t), bytes);
        bert_glue_fail(ctx, bert_glue_argument_error(fn, i, problem));
        return -1;
    }
    const void *blob = sqlite3_value_blob(argv[i]);
    *values = malloc((size_t)bytes);
    if (!blob || !*values) {
        free(*values);
        *values = NULL;
        sqlite3_result_error_nomem(ctx);
        return -1;
    }
    memcpy(*values, blob, (size_t)bytes);
    *n = bytes / 4;
    return 0;
}

/* bert_truncate(vector, dimensions [, normalize]): the first values of a
 * stored vector, renormalised as bert_embed's "dimensions" option does. */
void bert_fn_truncate(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    float *v;
    int n;
    if (float_vector_arg(ctx, "bert_truncate", argv, 0, &v, &n) != 0) return;
    sqlite3_int64 dims = sqlite3_value_int64(argv[1]);
    int normalize = -1;
    char *err = NULL;
    if (sqlite3_value_type(argv[1]) != SQLITE_INTEGER || dims < 1 || dims > n) {
        err = bert_errorf("bert_truncate: dimensions must be an INTEGER from 1 to %d (the vector's length); "
                          BERT_SEE_FUNCTIONS, n);
    } else if (argc > 2 && sqlite3_value_type(argv[2]) != SQLITE_NULL) {
        normalize = sqlite3_value_int(argv[2]);
        if (sqlite3_value_type(argv[2]) != SQLITE_INTEGER || (normalize != 0 && normalize != 1))
            err = bert_errorf("bert_truncate: normalize must be 1 (renormalise to unit length), 0 (keep the "
                              "values) or NULL (renormalise a unit vector only); " BERT_SEE_FUNCTIONS);
    }
    if (err) {
        free(v);
        bert_glue_fail(ctx, err);
        return;
    }
    if (normalize < 0) normalize = bert_vector_is_unit(v, n);
    bert_vector_shorten(v, (int)dims, normalize);
    sqlite3_result_blob(ctx, v, (int)dims * (int)sizeof(float), SQLITE_TRANSIENT);
    sqlite3_result_subtype(ctx, 223);
    free(v);
}

/* bert_quantize(vector, 'binary' | 'int8'): sqlite-vec's bit[N] or int8[N]. */
void bert_fn_quantize(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *mode;
    size_t len;
    char *err = NULL;
    int got = bert_glue_text(argv[1], "bert_quantize", 1, &mode, &len, &err);
    if (got < 0) { bert_glue_fail(ctx, err); return; }
    if (got == 1) { sqlite3_result_null(ctx); return; }
    int binary = sqlite3_stricmp(mode, "binary") == 0;
    if (!binary && sqlite3_stricmp(mode, "int8") != 0) {
        bert_glue_fail(ctx, bert_glue_argument_error("bert_quantize", 1, "must be 'binary' (sqlite-vec's bit[N]) "
                                                     "or 'int8' (sqlite-vec's int8[N], the range [-1, 1])"));
        return;
    }
    float *v;
    int n;
    if (float_vector_arg(ctx, "bert_quantize", argv, 0, &v, &n) != 0) return;
    if (binary && n % 8 != 0) {
        err = bert_errorf("bert_quantize: binary quantization needs a length divisible by 8 (sqlite-vec's bit[N] "
                          "holds whole bytes); this vector has %d values%s", n,
                          n > 8 ? ": shorten it with bert_truncate(vector, N), N a multiple of 8" : "");
    }
    for (int i = 0; !err && !binary && i < n; i++)
        if (isnan(v[i])) err = bert_errorf("bert_quantize: value %d of the vector is NaN, which int8 cannot hold", i);
    if (err) { free(v); bert_glue_fail(ctx, err); return; }
    size_t bytes = binary ? (size_t)n / 8 : (size_t)n;
    void *out = sqlite3_malloc64(bytes);
    if (!out) { free(v); sqlite3_result_error_nomem(ctx); return; }
    if (binary) bert_quantize_binary(v, n, out);
    else bert_quantize_int8(v, n, out);
    free(v);
    sqlite3_result_blob(ctx, out, (int)bytes, sqlite3_free);
    sqlite3_result_subtype(ctx, binary ? BERT_SUBTYPE_BIT : BERT_SUBTYPE_INT8);
}

/* Argument i of bert_maxsim as n x d aligned floats (malloc'd).  0; 1 for
 * NULL (the result set to NULL); -1 after reporting an error. */
static int token_vectors_arg(sqlite3_context *ctx, sqlite3_value **argv, int i, float **values, int *n, int *d)
{
    static const char *const names[] = {"argument 1 (query_vectors)", "argument 2 (document_vectors)"};
    *values = NULL;
    int t = sqlite3_value_type(argv[i]);
    if (t == SQLITE_NULL) { sqlite3_result_null(ctx); return 1; }
    char *err = NULL;
    const unsigned char *at;
    if (t != SQLITE_BLOB) {
        err = bert_errorf("bert_maxsim: %s must be a BLOB of token vectors (n x d float32 behind a 16-byte header), not %s", names[i],
                          bert_glue_type_name(t));
    } else if (bert_token_vectors_parse(sqlite3_value_blob(argv[i]), (size_t)sqlite3_value_bytes(argv[i]), names[i],
                                        n, d, &at, &err) == 0) {
        size_t bytes = (size_t)*n * (size_t)*d * sizeof(float);
        if (!(*values = malloc(bytes))) { sqlite3_result_error_nomem(ctx); return -1; }
        memcpy(*values, at, bytes);
        return 0;
    }
    if (err && strncmp(err, "argument", 8) == 0) {
        char *prefixed = bert_errorf("bert_maxsim: %s", err);
        free(err);
        err = prefixed;
    }
    bert_glue_fail(ctx, err);
    return -1;
}

/* bert_maxsim(query_vectors, document_vectors): ColBERT's MaxSim score. */
void bert_fn_maxsim(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    float *q = NULL, *doc = NULL;
    int nq, dq, nd, dd;
    if (token_vectors_arg(ctx, argv, 0, &q, &nq, &dq) == 0 && token_vectors_arg(ctx, argv, 1, &doc, &nd, &dd) == 0) {
        if (dq != dd)
            bert_glue_fail(ctx, bert_errorf("bert_maxsim: the query's vectors have %d values and the document's %d: "
                                            "compare token vectors of the same model", dq, dd));
        else
            sqlite3_result_double(ctx, bert_maxsim(q, nq, doc, nd, dq));
    }
    free(q);
    free(doc);
}
