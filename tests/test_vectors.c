/*
 * test_vectors.c - the vector functions against numpy and sqlite-vec:
 * bert_embed's "dimensions" option and bert_truncate against the PyTorch
 * reference's embeddings cut and renormalised by numpy, bert_quantize byte
 * for byte against numpy and against sqlite-vec's own vec_quantize_binary
 * and vec_quantize_int8(v, 'unit') (with ./vec0.so), sqlite-vec's Hamming
 * distance over the bits, and bert_maxsim against numpy
 * (tests/golden/vectors.jsonl, made by tests/golden/make_vector_goldens.py).
 */
#include "golden_files.h"
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VECTORS GOLDEN_DIR "vectors.jsonl"
#define VEC0 "./vec0.so"
#define MAX_FLOATS 8192

typedef struct {
    sqlite3 *vec;        /* with sqlite-vec loaded, or NULL */
    int dimensions, quantize, maxsim, vec_compared;
} vectors_ctx;

/* The numbers of array `node` as float32, at most max; how many. */
static int read_floats(const json_doc *d, int node, float *out, int max)
{
    int n = 0;
    for (int c = node >= 0 ? d->nodes[node].first_child : -1; c >= 0 && n < max; c = d->nodes[c].next_sibling)
        out[n++] = (float)d->nodes[c].number;
    return n;
}

static void hex_of(const unsigned char *p, int n, char *out)
{
    for (int i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", p[i]);
    out[2 * n] = '\0';
}

/* The first column of `sql` on a vector BLOB ?1 (and text ?2) as lower-case hex, or "ERROR: ...". */
static void blob_query_hex(sqlite3 *db, const char *sql, const float *v, int n, const char *text, char *out,
                           size_t size)
{
    sqlite3_stmt *st = NULL;
    snprintf(out, size, "ERROR: %s", sqlite3_errmsg(db));
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return;
    sqlite3_bind_blob(st, 1, v, n * (int)sizeof(float), SQLITE_STATIC);
    if (text) sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_bytes(st, 0) * 2 < (int)size)
        hex_of(sqlite3_column_blob(st, 0), sqlite3_column_bytes(st, 0), out);
    else
        snprintf(out, size, "ERROR: %s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
}

static void dimensions_line(vectors_ctx *c, const json_doc *d, sqlite3 *db)
{
    const char *model = t_member_str(d, 0, "model"), *text = t_member_str(d, 0, "text");
    int norm = bert_json_bool(d, bert_json_member(d, 0, "normalize"), 0);
    int n = (int)bert_json_int(d, bert_json_member(d, 0, "dimensions"), 0);
    float want[MAX_FLOATS];
    int got_n = read_floats(d, bert_json_member(d, 0, "vector"), want, MAX_FLOATS);
    char name[96], options[160], sql[512];
    snprintf(name, sizeof name, "%s%s", model, norm ? "-norm" : "");
    snprintf(options, sizeof options, "{\"model\": \"%s\", \"dimensions\": %d}", name, n);
    /* The option, the table function's option, and bert_truncate of the whole vector. */
    const char *ways[] = {"SELECT bert_embed(?2, ?1)",
                          "SELECT embedding FROM bert_embed_each(json_array(?2), ?1)",
                          NULL};
    char truncate_sql[256];
    snprintf(truncate_sql, sizeof truncate_sql, "SELECT bert_truncate(bert_embed(?2, '%s'), %d, %d)", name, n, norm);
    ways[2] = truncate_sql;
    for (int w = 0; w < 3; w++) {
        sqlite3_stmt *st = NULL;
        snprintf(sql, sizeof sql, "%s", ways[w]);
        int ok = sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK;
        if (ok) {
            sqlite3_bind_text(st, 1, options, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
            ok = sqlite3_step(st) == SQLITE_ROW;
        }
        int bytes = ok ? sqlite3_column_bytes(st, 0) : -1;
        T_CHECK(ok && bytes == 4 * n && got_n == n, "%s on %s '%s' dimensions %d: %s (%d bytes)", sql, name, text, n,
                ok ? "" : sqlite3_errmsg(db), bytes);
        double worst = 0;
        for (int i = 0; ok && bytes == 4 * n && i < n; i++) {
            float x;
            memcpy(&x, (const char *)sqlite3_column_blob(st, 0) + 4 * i, 4);
            if (fabs(x - want[i]) > worst) worst = fabs(x - want[i]);
        }
        T_CHECK(worst <= GOLDEN_TOL, "%s on %s '%s' dimensions %d: off by %g", sql, name, text, n, worst);
        sqlite3_finalize(st);
    }
    c->dimensions++;
}

static void quantize_line(vectors_ctx *c, const json_doc *d, sqlite3 *db)
{
    float v[MAX_FLOATS];
    int n = read_floats(d, bert_json_member(d, 0, "vector"), v, MAX_FLOATS);
    static const char *const kinds[] = {"binary", "int8"};
    static const char *const vec_sql[] = {"SELECT vec_quantize_binary(?1)", "SELECT vec_quantize_int8(?1, 'unit')"};
    for (int k = 0; k < 2; k++) {
        char got[2 * MAX_FLOATS + 64], theirs[2 * MAX_FLOATS + 64];
        blob_query_hex(db, "SELECT bert_quantize(?1, ?2)", v, n, kinds[k], got, sizeof got);
        const char *want = t_member_str(d, 0, kinds[k]);
        T_CHECK(strcmp(got, want) == 0, "bert_quantize(%d values, '%s') = %.80s, numpy %.80s", n, kinds[k], got, want);
        if (!c->vec) continue;
        blob_query_hex(c->vec, vec_sql[k], v, n, NULL, theirs, sizeof theirs);
        blob_query_hex(c->vec, "SELECT bert_quantize(?1, ?2)", v, n, kinds[k], got, sizeof got);
        T_CHECK(strcmp(got, theirs) == 0, "bert_quantize(%d values, '%s') = %.80s, %s gives %.80s", n, kinds[k], got,
                vec_sql[k], theirs);
        c->vec_compared++;
    }
    c->quantize++;
}

/* A token-vectors BLOB: the header of tasks/vectors.h and n x d floats. */
static unsigned char *token_blob(const float *v, int n, int d, int *bytes)
{
    *bytes = 16 + 4 * n * d;
    unsigned char *b = malloc((size_t)*bytes);
    if (!b) return NULL;
    memcpy(b, "BTV1", 4);
    for (int i = 0; i < 4; i++) {
        b[4 + i] = (unsigned char)((unsigned)n >> (8 * i));
        b[8 + i] = (unsigned char)((unsigned)d >> (8 * i));
        b[12 + i] = 0;
    }
    memcpy(b + 16, v, (size_t)n * d * 4);
    return b;
}

static double maxsim_of(sqlite3 *db, const unsigned char *q, int qbytes, const unsigned char *doc, int dbytes,
                        char *err, size_t size)
{
    sqlite3_stmt *st = NULL;
    double score = NAN;
    snprintf(err, size, "%s", "");
    if (sqlite3_prepare_v2(db, "SELECT bert_maxsim(?1, ?2)", -1, &st, NULL) != SQLITE_OK) return NAN;
    sqlite3_bind_blob(st, 1, q, qbytes, SQLITE_STATIC);
    sqlite3_bind_blob(st, 2, doc, dbytes, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) score = sqlite3_column_double(st, 0);
    else snprintf(err, size, "%s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return score;
}

static void maxsim_line(vectors_ctx *c, const json_doc *d, sqlite3 *db)
{
    int nq = (int)bert_json_int(d, bert_json_member(d, 0, "nq"), 0);
    int nd = (int)bert_json_int(d, bert_json_member(d, 0, "nd"), 0);
    int dim = (int)bert_json_int(d, bert_json_member(d, 0, "d"), 0);
    static float q[MAX_FLOATS], doc[MAX_FLOATS];
    read_floats(d, bert_json_member(d, 0, "query"), q, MAX_FLOATS);
    read_floats(d, bert_json_member(d, 0, "document"), doc, MAX_FLOATS);
    int qb, db_;
    unsigned char *qblob = token_blob(q, nq, dim, &qb), *dblob = token_blob(doc, nd, dim, &db_);
    char err[512];
    double want = bert_json_real(d, bert_json_member(d, 0, "score"), NAN);
    double got = qblob && dblob ? maxsim_of(db, qblob, qb, dblob, db_, err, sizeof err) : NAN;
    T_CHECK(fabs(got - want) <= GOLDEN_TOL, "bert_maxsim of %d x %d and %d x %d: %.8g, numpy %.8g %s", nq, dim, nd,
            dim, got, want, err);
    if (qblob && dblob && dim > 1) {
        /* The same bytes read as vectors of another width: refused. */
        unsigned char *other = token_blob(doc, 1, dim - 1, &db_);
        got = other ? maxsim_of(db, qblob, qb, other, db_, err, sizeof err) : 0;
        T_CHECK(isnan(got) && strstr(err, "have") && strstr(err, "same model"), "widths %d and %d: %s", dim, dim - 1,
                err);
        free(other);
        /* A header that promises more than the BLOB holds. */
        got = maxsim_of(db, qblob, qb - 4, dblob, db_, err, sizeof err);
        T_CHECK(isnan(got) && strstr(err, "malformed"), "a truncated BLOB: %s", err);
    }
    free(qblob);
    free(dblob);
    c->maxsim++;
}

static void vectors_line(void *p, const json_doc *d, sqlite3 *db)
{
    const char *kind = t_member_str(d, 0, "kind");
    if (strcmp(kind, "dimensions") == 0) dimensions_line(p, d, db);
    else if (strcmp(kind, "quantize") == 0) quantize_line(p, d, db);
    else if (strcmp(kind, "maxsim") == 0) maxsim_line(p, d, db);
    else T_CHECK(0, "unknown kind \"%s\" in " VECTORS, kind);
}

static void golden_cases(void)
{
    t_case("vectors: dimensions, quantize and maxsim equal numpy (and sqlite-vec) on " VECTORS);
    sqlite3 *db = t_open();
    json_doc *manifest = t_golden_manifest(GOLDEN_DIR "models.json");
    static const char *const models[] = {"bert-plain-f32", "st-mean-f16"};
    for (int i = 0; manifest && i < 2; i++) {
        int node = bert_json_member(manifest, 0, models[i]);
        if (!T_CHECK(node >= 0 && t_golden_model_matches(manifest, node), "model %s differs from the goldens'",
                     models[i])) continue;
        char sql[512];
        snprintf(sql, sizeof sql, "SELECT bert_load('%s', '" MODELS_DIR "%s', '{\"pooling\": \"mean\", "
                 "\"normalize\": false}') || bert_load('%s-norm', '" MODELS_DIR "%s', '{\"pooling\": \"mean\", "
                 "\"normalize\": true}')", models[i], models[i], models[i], models[i]);
        char *r = t_query(db, sql, NULL);
        T_CHECK(strncmp(r, "ERROR", 5) != 0, "%s", r);
        free(r);
    }
    bert_json_free(manifest);
    /* Without ./vec0.so the goldens are still compared with numpy's. */
    vectors_ctx c = {t_exists(VEC0) ? t_open_with_vec() : NULL, 0, 0, 0, 0};
    t_each_golden_line(VECTORS, vectors_line, &c, db);
    T_CHECK(c.dimensions >= 60 && c.quantize >= 40 && c.maxsim >= 5, "only %d dimensions, %d quantize, %d maxsim lines",
            c.dimensions, c.quantize, c.maxsim);
    if (c.vec) sqlite3_close(c.vec);
    sqlite3_close(db);
    if (!t_exists(VEC0)) t_skip("no ./vec0.so (make sqlite-vec): numpy compared, sqlite-vec not");
}

/* Random vectors, edge values and Hamming distances against sqlite-vec
 * itself, beyond the golden file. */
static void sqlite_vec_cases(void)
{
    t_case("vectors: bert_quantize equals sqlite-vec on random and edge vectors; vec_distance_hamming on the bits");
    sqlite3 *db = t_open_with_vec();
    if (!db) return;
    uint32_t seed = 12345;
    static float a[512], b[512];
    int compared = 0;
    for (int round = 0; round < 300; round++) {
        int n = 8 * (1 + round % 64);
        for (int i = 0; i < n; i++) {
            seed = seed * 1664525u + 1013904223u;
            float u = (float)((seed >> 8) / 16777216.0) * 2.0f - 1.0f;
            /* Every tenth value an edge: 0, -0, +-1, or a step boundary and its neighbours. */
            if (i % 10 == 0) {
                static const float edges[] = {0.0f, -0.0f, 1.0f, -1.0f};
                u = edges[(seed >> 4) % 4];
            } else if (i % 10 == 5) {
                float step = (float)(2.0 / 255);
                float at = (float)((double)((seed >> 4) % 255) * step - 1.0);
                u = (seed & 1) ? nextafterf(at, 2.0f) : (seed & 2) ? nextafterf(at, -2.0f) : at;
                if (u < -1.0f) u = -1.0f;
                if (u > 1.0f) u = 1.0f;
            }
            a[i] = u;
            b[i] = -u * (float)((seed >> 3) % 3);
        }
        char ours[1100], theirs[1100];
        blob_query_hex(db, "SELECT bert_quantize(?1, ?2)", a, n, "int8", ours, sizeof ours);
        blob_query_hex(db, "SELECT vec_quantize_int8(?1, 'unit')", a, n, NULL, theirs, sizeof theirs);
        compared += T_CHECK(strcmp(ours, theirs) == 0, "int8 of %d values: %s vs sqlite-vec %s", n, ours, theirs);
        blob_query_hex(db, "SELECT bert_quantize(?1, ?2)", a, n, "binary", ours, sizeof ours);
        blob_query_hex(db, "SELECT vec_quantize_binary(?1)", a, n, NULL, theirs, sizeof theirs);
        compared += T_CHECK(strcmp(ours, theirs) == 0, "binary of %d values: %s vs sqlite-vec %s", n, ours, theirs);

        /* Hamming distance: the signs that differ, counted here. */
        int want = 0;
        for (int i = 0; i < n; i++) want += (a[i] > 0) != (b[i] > 0);
        sqlite3_stmt *st = NULL;
        double got = -1;
        if (sqlite3_prepare_v2(db, "SELECT vec_distance_hamming(bert_quantize(?1, 'binary'), "
                                   "bert_quantize(?2, 'binary'))", -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_blob(st, 1, a, 4 * n, SQLITE_STATIC);
            sqlite3_bind_blob(st, 2, b, 4 * n, SQLITE_STATIC);
            if (sqlite3_step(st) == SQLITE_ROW) got = sqlite3_column_double(st, 0);
        }
        T_CHECK(got == want, "vec_distance_hamming over %d bits: %g, %d signs differ (%s)", n, got, want,
                sqlite3_errmsg(db));
        sqlite3_finalize(st);
    }
    T_CHECK(compared == 600, "%d of 600 comparisons agreed", compared);
    /* The subtypes: sqlite-vec reads them as its bit and int8 types. */
    t_expect(db, "SELECT vec_type(bert_quantize(bert_embed('x', 'd'), 'binary')) || ' ' || "
                 "vec_type(bert_quantize(bert_embed('x', 'd'), 'int8')) FROM (SELECT bert_load('d', 'model/demo'))",
             NULL, "bit int8");
    sqlite3_close(db);
}

static void demo_and_errors(void)
{
    t_case("vectors: the demo model's shorter and quantized vectors; errors name the range and the fix");
    sqlite3 *db = t_open();
    t_expect(db, "SELECT bert_load('default', 'model/demo')", NULL, "default");
    t_expect(db, "SELECT length(bert_embed('hello', '{\"dimensions\": 64}'))", NULL, "256");
    t_expect(db, "SELECT bert_embed('hello', '{\"dimensions\": 64}') = bert_truncate(bert_embed('hello'), 64)", NULL,
             "1");
    t_expect(db, "SELECT round(bert_similarity(bert_embed('hello', '{\"dimensions\": 64, \"model\": \"default\"}'),"
                 " bert_truncate(bert_embed('hello'), 64, 1)), 6)", NULL, "1.0");
    t_expect(db, "SELECT length(bert_quantize(bert_embed('hello'), 'binary')) || ' ' || "
                 "length(bert_quantize(bert_embed('hello'), 'int8'))", NULL, "32 256");
    t_expect(db, "SELECT group_concat(length(embedding)) FROM bert_embed_each('[\"a\", \"b\"]', "
                 "'{\"dimensions\": 16}')", NULL, "64,64");
    t_expect(db, "SELECT bert_quantize(NULL, 'int8') IS NULL AND bert_quantize(x'00000000', NULL) IS NULL "
                 "AND bert_truncate(NULL, 2) IS NULL AND bert_maxsim(NULL, x'00') IS NULL", NULL, "1");
    /* No normalize argument: a unit vector is renormalised, another is not. */
    t_expect(db, "SELECT hex(bert_truncate(x'0000803f0000803f', 1))", NULL, "0000803F");
    t_expect(db, "SELECT hex(bert_truncate(x'0000003f0000003f0000003f0000003f', 2))", NULL, "F304353FF304353F");
    t_expect(db, "SELECT hex(bert_truncate(x'0000003f0000003f0000003f0000003f', 2, 0))", NULL, "0000003F0000003F");
    t_expect_error(db, "SELECT bert_embed('x', '{\"dimensions\": 300}')", NULL, "from 1 to 256", "dimensions", NULL);
    t_expect_error(db, "SELECT bert_embed('x', '{\"dimensions\": 0}')", NULL, "from 1 to 256", NULL);
    t_expect_error(db, "SELECT bert_embed('x', '{\"dimensions\": \"64\"}')", NULL, "from 1 to 256", NULL);
    t_expect_error(db, "SELECT * FROM bert_embed_each('[\"x\"]', '{\"dimensions\": 257}')", NULL, "from 1 to 256",
                   NULL);
    t_expect_error(db, "SELECT bert_embed('x', '{\"dims\": 64}')", NULL, "unknown option \"dims\"", "\"dimensions\"",
                   NULL);
    t_expect_error(db, "SELECT bert_embed('x', '{\"model\": 3}')", NULL, "\"model\" must be the name a model was registered with", NULL);
    t_expect_error(db, "SELECT bert_embed('x', '{oops')", NULL, "options_json is not valid JSON", "minilm", NULL);
    t_expect_error(db, "SELECT bert_truncate(bert_embed('x'), 257)", NULL, "from 1 to 256", NULL);
    t_expect_error(db, "SELECT bert_truncate(bert_embed('x'), 2, 5)", NULL, "normalize must be 1", NULL);
    t_expect_error(db, "SELECT bert_truncate('text', 2)", NULL, "float32 vector BLOB", NULL);
    t_expect_error(db, "SELECT bert_quantize(bert_embed('x'), 'int4')", NULL, "'binary'", "'int8'", NULL);
    t_expect_error(db, "SELECT bert_quantize(bert_truncate(bert_embed('x'), 12), 'binary')", NULL,
                   "divisible by 8", "12 values", NULL);
    t_expect_error(db, "SELECT bert_quantize(x'010203', 'int8')", NULL, "multiple of 4 bytes", NULL);
    t_expect_error(db, "SELECT bert_quantize(bert_quantize(bert_embed('x'), 'binary'), 'int8')", NULL,
                   "bit vector already", NULL);
    t_expect_error(db, "SELECT bert_quantize(x'0000c07f', 'int8')", NULL, "NaN", NULL);
    t_expect_error(db, "SELECT bert_maxsim(bert_embed('x'), bert_embed('y'))", NULL, "not a token-vectors BLOB",
                   NULL);
    t_expect_error(db, "SELECT bert_maxsim('a', x'00')", NULL, "must be a BLOB of token vectors", NULL);
    t_expect_error(db, "SELECT bert_quantize(bert_embed('x'))", NULL, "bert_quantize(vector, kind)", NULL);
    sqlite3_close(db);
}

void suite_vectors(void)
{
    golden_cases();
    sqlite_vec_cases();
    demo_and_errors();
}
