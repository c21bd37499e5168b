/*
 * test_colbert.c - late interaction through SQL: bert_token_vectors on
 * ColBERT models as PyLate saves them, and bert_maxsim on its BLOBs.
 *
 * The expected vectors are tests/golden/colbert.jsonl, written by
 * tests/golden/make_colbert_goldens.py: the Rust tokenizer's ids on each
 * model's own tokenizer.json, PyLate's prefix, [MASK] expansion, attention
 * mask, Dense projection, skiplist and normalisation, on the PyTorch
 * reference encoder (float64).  On the generated colbert-dense (a Dense
 * module to 24 values) and colbert-plain (none: hidden-size vectors).
 * Every value must agree within 1e-4, and so must MaxSim.
 */
#include "test.h"
#include "golden_files.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MODELS 4

typedef struct {
    golden_model g;   /* first: the scaffolding's */
    int vectors, scores;
} colbert_model;

typedef struct {
    colbert_model models[MAX_MODELS];
    int n;
} colbert_models;

static uint32_t u32_at(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The BLOB of bert_token_vectors(text, side, model) against the line's n, d
 * and vectors. */
static int same_vectors(sqlite3 *db, const char *model, const char *side, const json_doc *line, char *why,
                        size_t why_size)
{
    sqlite3_stmt *st = NULL;
    int ok = 0;
    if (sqlite3_prepare_v2(db, "SELECT bert_token_vectors(?1, ?2, ?3)", -1, &st, NULL) != SQLITE_OK) return 0;
    sqlite3_bind_text(st, 1, t_member_str(line, 0, "text"), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, side, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, model, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_type(st, 0) != SQLITE_BLOB) {
        snprintf(why, why_size, "%s", sqlite3_errmsg(db));
        goto done;
    }
    const unsigned char *b = sqlite3_column_blob(st, 0);
    size_t bytes = (size_t)sqlite3_column_bytes(st, 0);
    long long n = bert_json_int(line, bert_json_member(line, 0, "n"), -1);
    long long d = bert_json_int(line, bert_json_member(line, 0, "d"), -1);
    int values = bert_json_member(line, 0, "vectors");
    if (bytes < 16 || memcmp(b, "BTV1", 4) != 0 || u32_at(b + 4) != n || u32_at(b + 8) != d ||
        u32_at(b + 12) != 0 || bytes != 16 + 4 * (size_t)(n * d)) {
        snprintf(why, why_size, "a BLOB of %zu bytes, want %lld x %lld", bytes, n, d);
        goto done;
    }
    double worst = 0;
    for (long long i = 0; i < n * d; i++) {
        float v;
        memcpy(&v, b + 16 + 4 * i, sizeof v);
        double diff = fabs((double)v - bert_json_real(line, t_json_child(line, values, (int)i), 1e9));
        if (!(diff <= worst)) worst = diff;
    }
    ok = worst <= GOLDEN_TOL;
    if (!ok) snprintf(why, why_size, "values differ by up to %g", worst);
done:
    sqlite3_finalize(st);
    return ok;
}

static void check_line(void *ctx, golden_model *gm, const json_doc *line, sqlite3 *db)
{
    (void)ctx;
    colbert_model *cm = (colbert_model *)gm;
    char what[96], why[256] = "";
    if (bert_json_member(line, 0, "maxsim") >= 0) {
        cm->scores++;
        const char *q = t_member_str(line, 0, "query"), *d = t_member_str(line, 0, "document");
        char *got = t_query(db, "SELECT bert_maxsim(bert_token_vectors(?1, 'query', ?3), "
                                "bert_token_vectors(?2, 'document', ?3))", q, d, gm->name, NULL);
        double want = bert_json_real(line, bert_json_member(line, 0, "maxsim"), 0);
        snprintf(what, sizeof what, "%s maxsim", gm->name);
        if (!t_golden_check(gm, fabs(atof(got) - want) <= GOLDEN_TOL, what, q))
            printf("  document \"%s\": %s, want %.9g\n", d, got, want);
        free(got);
        return;
    }
    cm->vectors++;
    const char *side = t_member_str(line, 0, "side"), *text = t_member_str(line, 0, "text");
    snprintf(what, sizeof what, "%s (%s)", gm->name, side);
    if (strcmp(side, "document") == 0) {
        /* The Rust tokenizer's ids without the prefix are what the model's
         * own tokenizer gives (max_seq_length = document_length - 1): a
         * difference here is the tokenizer's, not ColBERT's. */
        int ids = bert_json_member(line, 0, "ids");
        char want[4096] = "[";
        for (int i = 0; i < bert_json_length(line, ids); i++) {
            if (i == 1) continue;
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", i ? "," : "",
                     bert_json_int(line, t_json_child(line, ids, i), -1));
        }
        strcat(want, "]");
        char *got = t_query(db, "SELECT bert_token_ids(?1, ?2)", text, gm->name, NULL);
        if (!t_golden_check(gm, strcmp(got, want) == 0, what, text)) printf("  ids %s, want %s\n", got, want);
        free(got);
    }
    if (!t_golden_check(gm, same_vectors(db, gm->name, side, line, why, sizeof why), what, text))
        printf("  %s\n", why);
}

static void case_goldens(sqlite3 *db)
{
    t_case("bert_token_vectors and bert_maxsim match PyLate's steps on the reference (colbert.jsonl)");
    colbert_models *h = calloc(1, sizeof *h);
    if (!T_CHECK(h != NULL, "out of memory")) return;
    h->n = t_golden_models(GOLDEN_DIR "colbert_models.json", &h->models[0].g, MAX_MODELS, sizeof *h->models,
                           t_golden_register, NULL, db);
    each_model_line(GOLDEN_DIR "colbert.jsonl", check_line, h, db);
    T_CHECK(h->n == 2, "%d models in colbert_models.json", h->n);
    for (int i = 0; i < h->n; i++)
        T_CHECK(h->models[i].g.usable && h->models[i].vectors >= 7 && h->models[i].scores >= 12 &&
                    h->models[i].g.failures == 0,
                "%s: %d vector lines, %d scores, %d failures%s", h->models[i].g.name, h->models[i].vectors,
                h->models[i].scores, h->models[i].g.failures, h->models[i].g.usable ? "" : " (not registered)");
    free(h);
}

static void case_shapes(sqlite3 *db)
{
    t_case("bert_token_vectors: queries are query_length vectors, documents lose the skiplist's tokens");
    /* [CLS] [Q] a [SEP] and 12 [MASK]: 16 vectors of 24 values. */
    t_expect(db, "SELECT length(bert_token_vectors('a', 'query', 'colbert-dense'))", NULL, "1552");
    /* [CLS] [D] a , b ! [SEP] less ',' and '!': 5 vectors. */
    t_expect(db, "SELECT length(bert_token_vectors('a, b!', 'document', 'colbert-dense'))", NULL, "496");
    /* Without a Dense module, the hidden size (48): [CLS] [D] a [SEP]. */
    t_expect(db, "SELECT length(bert_token_vectors('a', 'document', '{\"model\": \"colbert-plain\"}'))", NULL,
             "784");
    /* Every vector is a unit vector: MaxSim of [CLS] [D] x y [SEP] with itself is 5. */
    t_expect(db, "SELECT round(bert_maxsim(v, v), 4) FROM (SELECT bert_token_vectors('x y', 'document', "
                 "'colbert-dense') AS v)", NULL, "5.0");
}

static void case_errors(sqlite3 *db)
{
    t_case("bert_token_vectors: errors name the problem and the fix");
    t_expect(db, "SELECT bert_token_vectors(NULL, 'query', 'colbert-dense')", NULL, "NULL");
    t_expect_error(db, "SELECT bert_token_vectors('x', 'both', 'colbert-dense')", NULL, "'query' or 'document'",
                   NULL);
    t_expect_error(db, "SELECT bert_token_vectors('x', NULL, 'colbert-dense')", NULL, "'query' or 'document'", NULL);
    t_expect_error(db, "SELECT bert_token_vectors('x', 'query', '{\"model\": 5}')", NULL, "\"model\"", NULL);
    t_expect_error(db, "SELECT bert_token_vectors('x', 'query', '{\"modle\": \"colbert-dense\"}')", NULL, "modle",
                   NULL);
    t_expect_error(db, "SELECT bert_token_vectors('x', 'query', 'nope')", NULL, "nope", NULL);
    t_expect_error(db, "SELECT bert_token_vectors('x')", NULL, "bert_token_vectors(text, 'query' | 'document'",
                   NULL);
    t_expect_error(db, "SELECT bert_embed('x', 'colbert-dense')", NULL, "token-vector", "bert_token_vectors", NULL);
    t_expect_error(db, "SELECT bert_similarity('x', 'y', 'colbert-dense')", NULL, "bert_token_vectors", NULL);
    char *got = t_query(db, "SELECT bert_load('plain', ?1)", MODELS_DIR "bert-plain-f32", NULL);
    T_CHECK(strcmp(got, "plain") == 0, "bert_load: %s", got);
    free(got);
    t_expect_error(db, "SELECT bert_token_vectors('x', 'query', 'plain')", NULL, "no token \"[Q] \"", "PyLate",
                   NULL);
}

/* colbert-dense copied to build/colbert-NAME with its Dense module's
 * config.json replaced by `config` (NULL: kept) and its weights removed
 * when `no_weights`: the first use must fail naming each fragment. */
static void broken_dense(sqlite3 *db, const char *name, const char *config, int no_weights, const char *fragment)
{
    char cmd[512], dir[128], file[192];
    snprintf(dir, sizeof dir, "build/colbert-%s", name);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r " MODELS_DIR "colbert-dense '%s'%s%s%s", dir, dir,
             no_weights ? " && rm '" : "", no_weights ? dir : "", no_weights ? "/1_Dense/model.safetensors'" : "");
    if (!T_CHECK(system(cmd) == 0, "%s failed", cmd)) return;
    if (config) {
        snprintf(file, sizeof file, "%s/1_Dense/config.json", dir);
        FILE *f = fopen(file, "wb");
        if (!T_CHECK(f && fputs(config, f) >= 0 && fclose(f) == 0, "cannot write %s", file)) return;
    }
    char *got = t_query(db, "SELECT bert_load(?1, ?2)", name, dir, NULL);
    T_CHECK(strcmp(got, name) == 0, "bert_load: %s", got);
    free(got);
    got = t_query(db, "SELECT bert_token_vectors('x', 'query', ?1)", name, NULL);
    T_CHECK(strncmp(got, "ERROR: ", 7) == 0 && strstr(got, fragment) && strstr(got, dir), "%s: %s", name, got);
    free(got);
}

static void case_dense_errors(sqlite3 *db)
{
    t_case("bert_token_vectors: a Dense module that cannot run as saved is an error naming the file");
    broken_dense(db, "tanh", "{\"in_features\": 64, \"out_features\": 24, \"bias\": false, "
                 "\"activation_function\": \"torch.nn.modules.activation.Tanh\"}", 0, "activation_function");
    broken_dense(db, "wide", "{\"in_features\": 32, \"out_features\": 24, \"bias\": false}", 0, "in_features 32");
    broken_dense(db, "bias", "{\"in_features\": 64, \"out_features\": 24, \"bias\": true}", 0, "linear.bias");
    broken_dense(db, "shape", "{\"in_features\": 64, \"out_features\": 12, \"bias\": false}", 0, "[12, 64]");
    broken_dense(db, "weightless", NULL, 1, "1_Dense/model.safetensors");
}

void suite_colbert(void)
{
    sqlite3 *db = t_open();
    case_goldens(db);
    case_shapes(db);
    case_errors(db);
    case_dense_errors(db);
    sqlite3_close(db);
}
