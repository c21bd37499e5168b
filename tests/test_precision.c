/*
 * test_precision.c - the `precision` option of bert_load: bfloat16 and int8
 * weights measured against our own float32 path on the demo model (trained
 * weight statistics) and on generated models (a MiniLM-sized one among
 * them), row by row and batched, under the default and the portable
 * kernels; the option itself, bert_models' column, the process-wide cache,
 * what the loader holds, and allocations after warm-up.
 *
 * The measured cosines are printed ("precision: ... min cos ..."), so that a
 * run shows how far from the bounds each model is.
 */
#include "test.h"
#include "../ext/encoder/encoder.h"
#include "../ext/models/safetensors.h"
#include "../ext/models/weight_cache.h"
#include "../ext/kernels/cpu.h"
#include "../ext/models/model_dir.h"

#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEMO "model/demo"
#define SENTENCES "tests/bench/sentences.txt"
#define CLOZE "model/cloze.tsv"
/* 50 or more texts, few above that: the portable kernels are slow.  Under
 * the sanitizers, which make them slower still, a dozen texts check the
 * same bounds, and under emulation (BERT_TEST_LIGHT, a hundred times
 * slower) four, the fill-mask sentences a dozen (its agreement bounds mean
 * nothing on fewer); the accuracy is measured by the plain native build. */
#define MAX_TEXTS 56
#define MIN_TEXTS 50
#define TEXTS (t_light() ? 4 : SANITIZED ? 12 : MAX_TEXTS)
#define CLOZE_TEXTS (T_LIGHT ? 12 : MAX_TEXTS)
/* Fewer lines than read_lines was allowed fail the case. */
#define LEAST_OF(limit) ((limit) < MIN_TEXTS ? (limit) : MIN_TEXTS)

/* The bounds every embedding must meet against float32. */
#define BF16_MIN_COS 0.999
#define INT8_MIN_COS 0.99
#define INT8_MEAN_COS 0.997

/* ---- inputs -------------------------------------------------------------- */

typedef struct {
    char *buf;
    char *line[MAX_TEXTS];
    int n;
} lines;

/* Up to `limit` (at most MAX_TEXTS) non-empty lines of `path` that are not
 * comments, each cut at its first tab (cloze.tsv's answers). */
static int read_lines(const char *path, int limit, lines *out)
{
    memset(out, 0, sizeof *out);
    out->buf = t_read_file(path, NULL);
    if (!out->buf) return -1;
    for (char *s = out->buf; *s && out->n < limit && out->n < MAX_TEXTS;) {
        char *end = strchr(s, '\n');
        if (end) *end = '\0';
        char *tab = strchr(s, '\t');
        if (tab) *tab = '\0';
        if (*s && *s != '#') out->line[out->n++] = s;
        if (!end) break;
        s = end + 1;
    }
    return 0;
}

static void free_lines(lines *l)
{
    free(l->buf);
    l->buf = NULL;
}

/* ---- embeddings ---------------------------------------------------------- */

/* Copies a float32 BLOB column into out[dim]; its dimension, or -1. */
static int blob_floats(sqlite3_stmt *st, int col, float *out, int cap)
{
    int dim = sqlite3_column_bytes(st, col) / (int)sizeof(float);
    if (dim < 1 || dim > cap) return -1;
    memcpy(out, sqlite3_column_blob(st, col), (size_t)dim * sizeof(float));
    return dim;
}

/* Every text embedded one at a time with `model`, into out[n x dim]; the
 * dimension, or -1 (the case has then failed). */
static int embed_rows(sqlite3 *db, const char *model, const lines *texts, float *out, int cap)
{
    sqlite3_stmt *st = NULL;
    if (!T_CHECK(sqlite3_prepare_v2(db, "SELECT bert_embed(?1, ?2)", -1, &st, NULL) == SQLITE_OK, "prepare: %s",
                 sqlite3_errmsg(db)))
        return -1;
    int dim = -1;
    for (int i = 0; i < texts->n; i++) {
        sqlite3_bind_text(st, 1, texts->line[i], -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, model, -1, SQLITE_STATIC);
        int ok = T_CHECK(sqlite3_step(st) == SQLITE_ROW, "%s: %s", model, sqlite3_errmsg(db));
        int d = ok ? blob_floats(st, 0, out + (size_t)i * (dim > 0 ? dim : 0), cap - i * (dim > 0 ? dim : 0)) : -1;
        sqlite3_reset(st);
        if (!ok || !T_CHECK(d > 0 && (dim < 0 || d == dim), "%s: embedding %d has %d floats", model, i, d)) {
            dim = -1;
            break;
        }
        dim = d;
    }
    sqlite3_finalize(st);
    return dim;
}

/* The same texts as one bert_embed_each batch (one forward pass over all). */
static int embed_batch(sqlite3 *db, const char *model, const lines *texts, int dim, float *out)
{
    sqlite3_stmt *st = NULL;
    char *r = t_query(db, "CREATE TEMP TABLE IF NOT EXISTS texts(i INTEGER PRIMARY KEY, s TEXT)", NULL);
    free(r);
    r = t_query(db, "DELETE FROM texts", NULL);
    free(r);
    if (!T_CHECK(sqlite3_prepare_v2(db, "INSERT INTO texts(i, s) VALUES (?1, ?2)", -1, &st, NULL) == SQLITE_OK,
                 "prepare: %s", sqlite3_errmsg(db)))
        return -1;
    for (int i = 0; i < texts->n; i++) {
        sqlite3_bind_int(st, 1, i);
        sqlite3_bind_text(st, 2, texts->line[i], -1, SQLITE_STATIC);
        sqlite3_step(st);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    st = NULL;
    if (!T_CHECK(sqlite3_prepare_v2(db,
                                    "SELECT key, embedding FROM bert_embed_each((SELECT json_group_array(s) FROM "
                                    "(SELECT s FROM texts ORDER BY i)), ?1)",
                                    -1, &st, NULL) == SQLITE_OK,
                 "prepare: %s", sqlite3_errmsg(db)))
        return -1;
    sqlite3_bind_text(st, 1, model, -1, SQLITE_STATIC);
    int rows = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int key = sqlite3_column_int(st, 0);
        if (key < 0 || key >= texts->n || blob_floats(st, 1, out + (size_t)key * dim, dim) != dim) break;
        rows++;
    }
    int ok = T_CHECK(rc == SQLITE_DONE && rows == texts->n, "%s batched: %d of %d rows (%s)", model, rows, texts->n,
                     sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return ok ? 0 : -1;
}

static double cosine(const float *a, const float *b, int dim)
{
    double ab = 0, aa = 0, bb = 0;
    for (int j = 0; j < dim; j++) {
        ab += (double)a[j] * b[j];
        aa += (double)a[j] * a[j];
        bb += (double)b[j] * b[j];
    }
    return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : (aa == bb ? 1.0 : 0.0);
}

typedef struct {
    double min, mean;
} cos_stats;

static cos_stats compare(const float *ref, const float *got, int n, int dim)
{
    cos_stats s = {2.0, 0.0};
    for (int i = 0; i < n; i++) {
        double c = cosine(ref + (size_t)i * dim, got + (size_t)i * dim, dim);
        if (c < s.min || isnan(c)) s.min = c;
        s.mean += c / n;
    }
    return s;
}

/* Loads `dir` three times in one connection (float32, bfloat16, int8) and
 * checks every embedding of `texts`, row by row and batched, against
 * float32's row by row. */
static void check_embeddings(const char *label, const char *dir, const char *isa, const lines *texts)
{
    char name[160];
    snprintf(name, sizeof name, "precision: %s, embeddings against float32 (%s kernels)", label, isa ? isa : "default");
    t_case(name);
    if (!t_exists(dir)) {
        t_skip("model missing: run make test (or git lfs pull for model/demo)");
        return;
    }
    if (isa) setenv("SQLITE_BERT_ISA", isa, 1);
    else unsetenv("SQLITE_BERT_ISA");
    enum { CAP = MAX_TEXTS * 1024 };
    float *ref = malloc(CAP * sizeof *ref), *got = malloc(CAP * sizeof *got);
    sqlite3 *db = t_open();
    if (!T_CHECK(ref && got, "out of memory")) goto done;
    static const struct {
        const char *name, *options;
        double min_cos, mean_cos;
    } runs[] = {
        {"f32", "{}", 0, 0},
        {"bf16", "{\"precision\": \"bfloat16\"}", BF16_MIN_COS, BF16_MIN_COS},
        {"int8", "{\"precision\": \"int8\"}", INT8_MIN_COS, INT8_MEAN_COS},
        /* Each product split over the connection's helper threads. */
        {"int8-2t", "{\"precision\": \"int8\", \"threads\": 2}", INT8_MIN_COS, INT8_MEAN_COS},
        {"bf16-2t", "{\"precision\": \"bfloat16\", \"threads\": 2}", BF16_MIN_COS, BF16_MIN_COS},
    };
    for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
        char *res = t_query(db, "SELECT bert_load(?1, ?2, ?3)", runs[r].name, dir, runs[r].options, NULL);
        T_CHECK(strcmp(res, runs[r].name) == 0, "bert_load %s: %s", runs[r].name, res);
        free(res);
    }
    int dim = embed_rows(db, "f32", texts, ref, CAP);
    if (dim < 1) goto done;
    for (size_t r = 1; r < sizeof runs / sizeof *runs; r++) {
        for (int batched = 0; batched < 2; batched++) {
            int ok = batched ? embed_batch(db, runs[r].name, texts, dim, got) == 0
                             : embed_rows(db, runs[r].name, texts, got, CAP) == dim;
            if (!ok) continue;
            cos_stats s = compare(ref, got, texts->n, dim);
            printf("precision: %s %s %s min cos %.6f mean %.6f (%d texts, %s kernels)\n", label, runs[r].name,
                   batched ? "batched" : "row by row", s.min, s.mean, texts->n, isa ? isa : "default");
            T_CHECK(s.min >= runs[r].min_cos, "%s %s %s: min cosine %.5f below %.3f", label, runs[r].name,
                    batched ? "batched" : "row by row", s.min, runs[r].min_cos);
            T_CHECK(s.mean >= runs[r].mean_cos, "%s %s %s: mean cosine %.5f below %.3f", label, runs[r].name,
                    batched ? "batched" : "row by row", s.mean, runs[r].mean_cos);
        }
    }
done:
    sqlite3_close(db);
    unsetenv("SQLITE_BERT_ISA");
    free(ref);
    free(got);
}

/* ---- fill-mask ------------------------------------------------------------- */

/* The top-1 token of each cloze sentence under `model`, into tokens[i]
 * (malloc'd); 0, or -1. */
static int top_tokens(sqlite3 *db, const char *model, const lines *texts, char **tokens)
{
    sqlite3_stmt *st = NULL;
    if (!T_CHECK(sqlite3_prepare_v2(db, "SELECT token FROM bert_fill_mask_each(?1, 1, ?2) WHERE rank = 1", -1, &st,
                                    NULL) == SQLITE_OK,
                 "prepare: %s", sqlite3_errmsg(db)))
        return -1;
    int rc = 0;
    for (int i = 0; i < texts->n && rc == 0; i++) {
        sqlite3_bind_text(st, 1, texts->line[i], -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, model, -1, SQLITE_STATIC);
        if (T_CHECK(sqlite3_step(st) == SQLITE_ROW, "%s on '%s': %s", model, texts->line[i], sqlite3_errmsg(db))) {
            const char *t = (const char *)sqlite3_column_text(st, 0);
            size_t len = t ? strlen(t) + 1 : 1;
            tokens[i] = malloc(len);
            if (tokens[i]) memcpy(tokens[i], t ? t : "", len);
            else rc = -1;
        } else {
            rc = -1;
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

static void check_fill_mask(const char *isa)
{
    char name[128];
    snprintf(name, sizeof name, "precision: demo model, fill-mask top-1 agrees with float32 (%s kernels)",
             isa ? isa : "default");
    t_case(name);
    lines cloze;
    if (!t_exists(DEMO "/model.safetensors") || read_lines(CLOZE, CLOZE_TEXTS, &cloze) != 0) {
        t_skip("model/demo or model/cloze.tsv missing");
        return;
    }
    if (isa) setenv("SQLITE_BERT_ISA", isa, 1);
    else unsetenv("SQLITE_BERT_ISA");
    T_CHECK(cloze.n >= LEAST_OF(CLOZE_TEXTS), "only %d cloze sentences", cloze.n);
    sqlite3 *db = t_open();
    char *r = t_query(db, "SELECT bert_load('f32', ?1) || bert_load('bf16', ?1, '{\"precision\": \"bfloat16\"}') || "
                          "bert_load('int8', ?1, '{\"precision\": \"int8\"}')",
                      DEMO, NULL);
    T_CHECK(strcmp(r, "f32bf16int8") == 0, "bert_load: %s", r);
    free(r);
    char *ref[MAX_TEXTS] = {0}, *got[MAX_TEXTS] = {0};
    if (top_tokens(db, "f32", &cloze, ref) == 0) {
        static const struct {
            const char *model;
            double least;
        } runs[] = {{"bf16", 0.95}, {"int8", 0.90}};
        for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
            if (top_tokens(db, runs[k].model, &cloze, got) != 0) break;
            int same = 0;
            for (int i = 0; i < cloze.n; i++) {
                same += strcmp(ref[i], got[i]) == 0;
                free(got[i]);
                got[i] = NULL;
            }
            double agree = (double)same / cloze.n;
            printf("precision: demo %s fill-mask top-1 agreement %d/%d = %.3f (%s kernels)\n", runs[k].model, same,
                   cloze.n, agree, isa ? isa : "default");
            T_CHECK(agree >= runs[k].least, "%s: top-1 agreement %.3f below %.2f", runs[k].model, agree,
                    runs[k].least);
        }
    }
    for (int i = 0; i < MAX_TEXTS; i++) {
        free(ref[i]);
        free(got[i]);
    }
    sqlite3_close(db);
    unsetenv("SQLITE_BERT_ISA");
    free_lines(&cloze);
}

/* ---- the option and bert_models ------------------------------------------- */

#define SMALL "build/models/bert-plain-f32"

static void check_option(void)
{
    t_case("precision: bert_models shows it; float32 by default");
    if (!t_exists(SMALL)) {
        t_skip("build/models missing: run make test");
        return;
    }
    sqlite3 *db = t_open();
    t_expect(db, "SELECT bert_load('d', ?1) || bert_load('i', ?1, '{\"precision\": \"int8\"}') || "
                 "bert_load('b', ?1, '{\"precision\": \"bfloat16\"}')",
             SMALL, "dib");
    t_expect(db, "SELECT group_concat(name || '=' || precision, ' ') FROM (SELECT * FROM bert_models ORDER BY name)",
             NULL, "b=bfloat16 d=float32 i=int8");
    /* The column is the table's last, as the API lists it; it does not wait
     * for the weights to be loaded. */
    t_expect(db, "SELECT name FROM pragma_table_info('bert_models') WHERE name = 'precision'", NULL, "precision");
    t_expect(db, "SELECT loaded FROM bert_models WHERE name = 'i'", NULL, "0");

    t_case("precision: an unknown precision is an error naming the accepted values");
    t_expect_error(db, "SELECT bert_load('x', ?1, '{\"precision\": \"fp16\"}')", SMALL, "\"precision\"", "\"float32\"",
                   "\"bfloat16\"", "\"int8\"", NULL);
    t_expect_error(db, "SELECT bert_load('x', ?1, '{\"precision\": 8}')", SMALL, "\"precision\"", "\"int8\"", NULL);
    t_expect_error(db, "SELECT bert_load('x', ?1, '{\"precisoin\": \"int8\"}')", SMALL, "unknown bert_load option",
                   "precision", NULL);
    t_expect(db, "SELECT count(*) FROM bert_models WHERE name = 'x'", NULL, "0");

    t_case("precision: options compare by effect, an explicit float32 is the default");
    t_expect(db, "SELECT bert_load('d', ?1, '{\"precision\": \"float32\"}')", SMALL, "d");
    t_expect(db, "SELECT bert_load('i', ?1, '{\"precision\": \"int8\"}')", SMALL, "i");
    t_expect_error(db, "SELECT bert_load('d', ?1, '{\"precision\": \"int8\"}')", SMALL, "already registered",
                   "\"precision\": \"float32\"", "\"precision\": \"int8\"", NULL);
    t_expect_error(db, "SELECT bert_load('i', ?1)", SMALL, "already registered", NULL);
    sqlite3_close(db);
}

/* ---- the weight cache ------------------------------------------------------ */

static void check_cache(void)
{
    t_case("precision: the weight cache shares a file at one precision, not across precisions");
    if (!t_exists(SMALL)) {
        t_skip("build/models missing: run make test");
        return;
    }
    int before = bert_weight_cache_count();
    sqlite3 *a = t_open(), *b = t_open();
    const char *use = "SELECT length(bert_embed('a shared model', ?1)) > 0";
    t_expect(a, "SELECT bert_load('m', ?1, '{\"precision\": \"bfloat16\"}')", SMALL, "m");
    t_expect(b, "SELECT bert_load('m', ?1, '{\"precision\": \"bfloat16\"}')", SMALL, "m");
    t_expect(a, use, "m", "1");
    t_expect(b, use, "m", "1");
    T_CHECK(bert_weight_cache_count() == before + 1, "%d entries after two connections at bfloat16, %d before",
            bert_weight_cache_count(), before);
    t_expect(a, "SELECT refs FROM bert_models WHERE name = 'm'", NULL, "2");

    /* The same file at int8 and float32 (explicit or by default) in one connection. */
    t_expect(a, "SELECT bert_load('q', ?1, '{\"precision\": \"int8\"}') || bert_load('f', ?1, "
                "'{\"precision\": \"float32\"}') || bert_load('g', ?1)",
             SMALL, "qfg");
    t_expect(a, use, "q", "1");
    t_expect(a, use, "f", "1");
    t_expect(a, use, "g", "1");
    T_CHECK(bert_weight_cache_count() == before + 3, "%d entries for three precisions, %d before",
            bert_weight_cache_count(), before);
    t_expect(a, "SELECT group_concat(name || ':' || refs || ':' || precision, ' ') FROM "
                "(SELECT * FROM bert_models ORDER BY name)",
             NULL, "f:2:float32 g:2:float32 m:2:bfloat16 q:1:int8");
    /* Different precisions give different, close vectors. */
    double c = t_query_double(a, "SELECT bert_similarity(bert_embed('one text', 'q'), bert_embed('one text', 'f'))",
                              NULL);
    T_CHECK(c > 0.99 && c < 1.0, "int8 against float32: cosine %.7f", c);
    sqlite3_close(b);
    t_expect(a, "SELECT refs FROM bert_models WHERE name = 'm'", NULL, "1");
    sqlite3_close(a);
    T_CHECK(bert_weight_cache_count() == before, "%d entries once both connections closed, %d before",
            bert_weight_cache_count(), before);
}

/* ---- what the loader holds ------------------------------------------------- */

/* Bytes of the layers' six projections at float32. */
static size_t projection_floats(const bert_config *c)
{
    size_t H = (size_t)c->hidden_size, I = (size_t)c->intermediate_size;
    return (size_t)c->num_layers * (4 * H * H + 2 * H * I);
}

static void check_loader(void)
{
    t_case("precision: the loader holds the projections at a half (bfloat16) or a quarter (int8)");
    static const struct {
        const char *dir;
        bert_precision p;
        int in_place;       /* a bfloat16 file at bfloat16: nothing to hold */
    } runs[] = {
        {"build/models/bert-plain-f32", BERT_PRECISION_BFLOAT16, 0},
        {"build/models/bert-plain-f32", BERT_PRECISION_INT8, 0},
        {"build/models/st-mean-f16", BERT_PRECISION_INT8, 0},
        {"build/models/pretrain-untied-bf16", BERT_PRECISION_BFLOAT16, 1},
        {"build/models/distil-cls", BERT_PRECISION_INT8, 0},
    };
    if (!t_exists(runs[0].dir)) {
        t_skip("build/models missing: run make test");
        return;
    }
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        bert_model *m = NULL;
        char *err = NULL;
        const char *pname = bert_precision_name(runs[i].p);
        if (!T_CHECK(bert_model_load_precision(t_dir(runs[i].dir), runs[i].p, &m, &err) == 0, "%s at %s: %s", runs[i].dir,
                     pname, err ? err : "?")) {
            free(err);
            continue;
        }
        size_t f32 = projection_floats(&m->cfg) * sizeof(float);
        double ratio = (double)m->reduced_bytes / (double)f32;
        T_CHECK(m->precision == runs[i].p, "%s: precision %d", runs[i].dir, (int)m->precision);
        if (runs[i].in_place)
            T_CHECK(m->reduced_bytes == 0, "%s at %s: %zu bytes held, the file's bfloat16 should be used in place",
                    runs[i].dir, pname, m->reduced_bytes);
        else if (runs[i].p == BERT_PRECISION_BFLOAT16)
            T_CHECK(ratio >= 0.5 && ratio < 0.52, "%s at %s: %.3f of float32's bytes", runs[i].dir, pname, ratio);
        else
            T_CHECK(ratio >= 0.25 && ratio < 0.27, "%s at %s: %.3f of float32's bytes", runs[i].dir, pname, ratio);
        int bound = 1;
        for (int l = 0; l < m->cfg.num_layers; l++) {
            const bert_layer_weights *w = &m->layers[l];
            const bert_matrix *mats[] = {&w->q_w, &w->k_w, &w->v_w, &w->out_w, &w->ff_in_w, &w->ff_out_w};
            for (size_t k = 0; k < 6; k++) {
                const bert_matrix *x = mats[k];
                if (x->precision != runs[i].p) bound = 0;
                if (runs[i].p == BERT_PRECISION_BFLOAT16 && !x->bf16) bound = 0;
                if (runs[i].p == BERT_PRECISION_INT8 && (!x->i8 || !x->scale || !x->row_sum)) bound = 0;
            }
            if (!w->q_b || !w->ff_ln_b) bound = 0;
        }
        T_CHECK(bound, "%s at %s: a projection is not held at the precision", runs[i].dir, pname);
        /* Embeddings, LayerNorms and heads stay float32. */
        T_CHECK(m->word_emb && m->emb_ln_w, "%s: the float32 tensors are bound", runs[i].dir);
        bert_model_free(m);
    }
}

/* ---- allocations after warm-up -------------------------------------------- */

/* bert_encode over `n_seqs` sequences of `len` tokens each. */
static int encode_some(const bert_model *m, bert_scratch *s, int n_seqs, int len)
{
    enum { MAX_TOKENS = 512 };
    int32_t ids[MAX_TOKENS];
    int lengths[64];
    if (n_seqs * len > MAX_TOKENS || n_seqs > 64) return -1;
    for (int i = 0; i < n_seqs; i++) {
        lengths[i] = len;
        for (int t = 0; t < len; t++)
            ids[i * len + t] = t == 0 ? 101 : t == len - 1 ? 102 : 1000 + (i * 31 + t * 7) % 2000;
    }
    char *err = NULL;
    const float *h = bert_encode(m, s, ids, NULL, lengths, n_seqs, NULL, NULL, &err);
    free(err);
    return h ? 0 : -1;
}

static void check_allocations(void)
{
    t_case("precision: bfloat16 and int8 encoders allocate nothing per call after warm-up");
    if (!t_exists(SMALL)) {
        t_skip("build/models missing: run make test");
        return;
    }
    const bert_precision ps[] = {BERT_PRECISION_BFLOAT16, BERT_PRECISION_INT8};
    for (size_t i = 0; i < 2; i++) {
        bert_model *m = NULL;
        char *err = NULL;
        bert_scratch *s = bert_scratch_new();
        if (!T_CHECK(s && bert_model_load_precision(t_dir(SMALL), ps[i], &m, &err) == 0, "load: %s",
                     err ? err : "?")) {
            free(err);
            bert_scratch_free(s);
            continue;
        }
        /* Warm-up: the largest batch and the longest row first.  Under
         * emulation batches of 4 and 3, and one round. */
        int batch = t_light() ? 4 : 12, rounds = t_light() ? 1 : 3, last = t_light() ? 3 : 5;
        int ok = encode_some(m, s, batch, 20) == 0 && encode_some(m, s, 1, 40) == 0;
        long before = t_allocations();
        for (int round = 0; round < rounds && ok; round++)
            ok = encode_some(m, s, 1, 9) == 0 && encode_some(m, s, 1, 40) == 0 && encode_some(m, s, batch, 20) == 0 &&
                 encode_some(m, s, last, 17) == 0;
        long after = t_allocations();
        T_CHECK(ok, "%s: bert_encode failed", bert_precision_name(ps[i]));
        T_CHECK(after == before, "%s: %ld allocations in %d calls after warm-up", bert_precision_name(ps[i]),
                after - before, 4 * rounds);
        bert_scratch_free(s);
        bert_model_free(m);
    }
}

/* ---- pages given back ----------------------------------------------------- */

/* Bytes of [p, p + n) that this process has in its page tables, from
 * /proc/self/pagemap (the present bit); -1 when it cannot be read. */
static long long present_bytes(const void *p, size_t n)
{
    int fd = open("/proc/self/pagemap", O_RDONLY);
    if (fd < 0) return -1;
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t first = (uintptr_t)p / (uintptr_t)page, last = ((uintptr_t)p + n - 1) / (uintptr_t)page;
    long long bytes = 0;
    for (uintptr_t i = first; i <= last; i++) {
        uint64_t e;
        if (pread(fd, &e, sizeof e, (off_t)(i * sizeof e)) != (ssize_t)sizeof e) {
            bytes = -1;
            break;
        }
        if (e >> 63) bytes += page;
    }
    close(fd);
    return bytes;
}

/* After a few sentences, how much of the layers' 2-D tensors is mapped in
 * the model's view of a float32 file: all of it at float32, next to nothing
 * once converted (the pages were released at load and nothing reads them). */
static void check_released(void)
{
    t_case("precision: the pages of a float32 file converted or packed at load are released");
    const char *dir = "build/models/mlm-tied-f32";
    if (!t_exists(dir)) {
        t_skip("build/models missing: run make test");
        return;
    }
    st_file *st = NULL;
    char *err = NULL;
    if (!T_CHECK(bert_safetensors_open("build/models/mlm-tied-f32/model.safetensors", &st, &err) == 0, "%s",
                 err ? err : "?")) {
        free(err);
        return;
    }
    const st_tensor *emb = bert_safetensors_find(st, "bert.embeddings.word_embeddings.weight");
    /* float32 twice: packed where this CPU has panel kernels, and never
     * packed (SQLITE_BERT_PACK=0), when the file's pages are the weights. */
    const bert_precision ps[] = {BERT_PRECISION_FLOAT32, BERT_PRECISION_FLOAT32, BERT_PRECISION_BFLOAT16,
                                 BERT_PRECISION_INT8};
    const char *const packing[] = {NULL, "0", NULL, NULL};
    for (size_t i = 0; emb && i < sizeof ps / sizeof *ps; i++) {
        bert_model *m = NULL;
        bert_scratch *s = bert_scratch_new();
        char *saved = packing[i] ? t_setenv("SQLITE_BERT_PACK", packing[i]) : NULL;
        int loaded = s ? bert_model_load_precision(t_dir(dir), ps[i], &m, &err) : -1;
        if (packing[i]) t_restore_env("SQLITE_BERT_PACK", saved);
        if (!T_CHECK(loaded == 0, "load: %s", err ? err : "?")) {
            free(err);
            err = NULL;
            bert_scratch_free(s);
            continue;
        }
        T_CHECK(encode_some(m, s, 3, 12) == 0 && encode_some(m, s, 1, 30) == 0, "bert_encode failed");
        /* The word embeddings stay in place: they locate the mapping. */
        const unsigned char *base = (const unsigned char *)m->word_emb - (emb->data - bert_safetensors_tensor_at(st, 0)->data);
        long long present = 0, total = 0;
        for (int k = 0; k < bert_safetensors_count(st) && present >= 0; k++) {
            const st_tensor *t = bert_safetensors_tensor_at(st, k);
            if (t->ndim != 2 || !strstr(t->name, "encoder.layer.")) continue;
            long long b = present_bytes(base + (t->data - bert_safetensors_tensor_at(st, 0)->data), t->nbytes);
            present = b < 0 ? -1 : present + b;
            total += (long long)t->nbytes;
        }
        const char *name = bert_precision_name(ps[i]);
        if (T_CHECK(present >= 0, "/proc/self/pagemap cannot be read")) {
            printf("precision: mlm-tied-f32 at %s%s, %lld of %lld bytes of the layers' projections mapped after use\n",
                   name, m->packed_bytes ? " (packed)" : "", present, total);
            if (ps[i] == BERT_PRECISION_FLOAT32 && !m->packed_bytes)
                T_CHECK(present >= total * 9 / 10, "%s: only %lld of %lld bytes mapped", name, present, total);
            else
                T_CHECK(present <= total / 20, "%s: %lld of %lld bytes still mapped", name, present, total);
        }
        bert_scratch_free(s);
        bert_model_free(m);
    }
    T_CHECK(emb != NULL, "no word embeddings in the file");
    bert_safetensors_close(st);
}

/* The same through SQL, row by row, as the kernels suite checks float32:
 * tokenizer, ids, scratch and the products' input rows all reused. */
static void check_sql_allocations(void)
{
    t_case("precision: bert_embed at bfloat16 and int8 allocates nothing per call once warm");
    /* Under emulation the smallest model: the same buffers, an eighth of
     * the arithmetic. */
    const char *model = t_light() ? SMALL : "build/models/st-mean-f16";
    if (!t_exists(model)) {
        t_skip("build/models missing: run make test");
        return;
    }
    static const char *texts[] = {
        "Hello world.",
        "The quick brown fox jumps over the lazy dog, and then a longer tail of words follows.",
        "unaffable unbelievable transformers tokenization",
    };
    sqlite3 *db = t_open();
    t_expect(db, "SELECT bert_load('b', ?1, '{\"precision\": \"bfloat16\"}') || "
                 "bert_load('i', ?1, '{\"precision\": \"int8\"}')",
             model, "bi");
    sqlite3_stmt *st = NULL;
    if (!T_CHECK(sqlite3_prepare_v2(db, "SELECT length(bert_embed(?1, 'b')) + length(bert_embed(?1, 'i'))", -1, &st,
                                    NULL) == SQLITE_OK,
                 "prepare: %s", sqlite3_errmsg(db)))
        goto done;
    long before = 0;
    for (int round = 0; round < 5; round++) {
        if (round == 2) before = t_allocations(); /* two rounds to warm up */
        for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
            sqlite3_bind_text(st, 1, texts[i], -1, SQLITE_STATIC);
            T_CHECK(sqlite3_step(st) == SQLITE_ROW, "%s", sqlite3_errmsg(db));
            sqlite3_reset(st);
        }
    }
    T_CHECK(t_allocations() == before, "%ld allocations in 18 calls", t_allocations() - before);
done:
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* At a reduced precision on a CPU with AMX-BF16, the attention of a
 * sequence of 64 tokens or more runs on tiles in bfloat16 (encoder.c).
 * Texts of 6 sentences (about 90 tokens) against the same model with
 * attention in float32 (SQLITE_BERT_ISA=vnni, under which int8's
 * projections give the same bits). */
static void check_tiled_attention(const lines *texts)
{
    t_case("precision: attention on AMX tiles against float32 attention, texts of about 90 tokens");
    if (!(bert_cpu_extensions() & BERT_CPU_AMX_BF16)) {
        t_skip("this CPU lacks the instructions (AMX-BF16)");
        return;
    }
    if (!t_exists(DEMO)) {
        t_skip("model missing: run make test (or git lfs pull for model/demo)");
        return;
    }
    enum { PER_TEXT = 6 };
    lines longs;
    memset(&longs, 0, sizeof longs);
    size_t bytes = 1;
    for (int i = 0; i < texts->n; i++) bytes += strlen(texts->line[i]) + 1;
    longs.buf = malloc(bytes);
    enum { CAP = MAX_TEXTS * 1024 };
    float *got[2] = {malloc(CAP * sizeof(float)), malloc(CAP * sizeof(float))};
    if (!T_CHECK(longs.buf && got[0] && got[1], "out of memory")) goto done;
    char *at = longs.buf;
    for (int i = 0; i + PER_TEXT <= texts->n; i += PER_TEXT) {
        longs.line[longs.n++] = at;
        for (int j = i; j < i + PER_TEXT; j++) at += sprintf(at, "%s%s", j > i ? " " : "", texts->line[j]);
        *at++ = '\0';
    }
    static const char *const options[] = {"{\"precision\": \"int8\"}", "{\"precision\": \"bfloat16\"}"};
    for (int p = 0; p < 2; p++) {
        int dim[2] = {0, 0};
        for (int run = 0; run < 2; run++) {
            if (run) setenv("SQLITE_BERT_ISA", "vnni", 1);
            else unsetenv("SQLITE_BERT_ISA");
            sqlite3 *db = t_open();
            char *res = t_query(db, "SELECT bert_load('m', ?1, ?2)", DEMO, options[p], NULL);
            T_CHECK(strcmp(res, "m") == 0, "bert_load: %s", res);
            free(res);
            dim[run] = embed_rows(db, "m", &longs, got[run], CAP);
            sqlite3_close(db);
        }
        unsetenv("SQLITE_BERT_ISA");
        if (!T_CHECK(dim[0] > 0 && dim[0] == dim[1], "embeddings failed")) continue;
        cos_stats c = compare(got[1], got[0], longs.n, dim[0]);
        printf("precision: demo %s, %d texts of %d sentences, tiled attention against float32: min cos %.7f\n",
               p ? "bfloat16" : "int8", longs.n, PER_TEXT, c.min);
        T_CHECK(c.min >= 0.9999, "%s: min cosine %.6f below 0.9999", p ? "bfloat16" : "int8", c.min);
        T_CHECK(c.min < 1.0 || longs.n == 0, "%s: the same embeddings: the tiled attention did not run",
                p ? "bfloat16" : "int8");
    }
done:
    free(longs.buf);
    free(got[0]);
    free(got[1]);
}

void suite_precision(void)
{
    check_option();
    check_cache();
    check_loader();
    check_allocations();
    check_sql_allocations();
    check_released();

    lines texts;
    t_case("precision: the sentences to measure on");
    if (!T_CHECK(read_lines(SENTENCES, TEXTS, &texts) == 0, "cannot read %s", SENTENCES)) return;
    T_CHECK(texts.n >= LEAST_OF(TEXTS), "only %d sentences", texts.n);
    static const struct {
        const char *label, *dir;
        int base_too;   /* also under the portable kernels */
        int large;      /* left to the plain build: minutes under the sanitizers or emulation */
    } models[] = {
        {"demo", DEMO, 1, 0},
        {"minilm-size", "build/models/minilm-f16", 0, 1},
        {"mlm-tied-f32", "build/models/mlm-tied-f32", 0, 0},
        {"pretrain-untied-bf16", "build/models/pretrain-untied-bf16", 0, 0},
        {"distil-cls", "build/models/distil-cls", 0, 0},
    };
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        if (T_LIGHT && models[i].large) continue;
        check_embeddings(models[i].label, models[i].dir, NULL, &texts);
        /* Under emulation the kernels the emulated CPU calls for, not the
         * portable ones, which every other run checks. */
        if (models[i].base_too && !t_light()) check_embeddings(models[i].label, models[i].dir, "base", &texts);
        /* The AVX2 kernels of a CPU without AVX-512 or VNNI (int8's panel
         * kernel on W as tiles among them), within the same bounds. */
        if (models[i].base_too && !t_light() && bert_cpu_isa() == BERT_ISA_AVX512)
            check_embeddings(models[i].label, models[i].dir, "avx2", &texts);
    }
    check_tiled_attention(&texts);
    check_fill_mask(NULL);
    if (!t_light()) check_fill_mask("base");
    if (!t_light() && bert_cpu_isa() == BERT_ISA_AVX512) check_fill_mask("avx2");
    free_lines(&texts);
}
