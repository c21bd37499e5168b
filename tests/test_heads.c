/*
 * test_heads.c - the fine-tuned task heads through SQL (API.md, "Fine-tuned
 * task heads"): bert_classify, bert_classify_pair, bert_label, bert_rerank,
 * bert_rerank_each and the task/labels columns of bert_models.
 *
 * The expected numbers are tests/golden/classify.jsonl and rerank.jsonl,
 * written by tests/golden/make_heads_goldens.py from the PyTorch reference's
 * logits and the text-classification pipeline's / CrossEncoder's
 * post-processing (re-implemented from their sources there), on the
 * random-weight classifiers tests/tools/make_test_models.sh generates.
 * Scores must agree within 1e-4 (the reference's float32-vs-float64 noise is
 * below 1.1e-6) and the labels come in exactly the same order (neighbouring
 * scores differ by at least 3.8e-3).
 */
#include "test.h"
#include "../ext/json.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GOLDEN_DIR "tests/golden/"
#define MODELS_DIR "build/models/"
#define TOL 1e-4
#define MAX_MODELS 8
#define MAX_REPORTS 4

typedef struct {
    char name[64];
    int usable;
    int n_labels;
    double classify_diff, rerank_diff, each_diff, embed_diff;
    int n_classify, n_rerank, n_each, n_embed;
    int failures;
} head_model;

/* Per (model, query), the documents and golden scores, for bert_rerank_each. */
#define MAX_DOCS 16
#define MAX_GROUPS 16
typedef struct {
    char model[64];
    char *query;
    char *docs[MAX_DOCS];
    double scores[MAX_DOCS];
    int n;
} rerank_group;

typedef struct {
    head_model models[MAX_MODELS];
    int n;
    rerank_group groups[MAX_GROUPS];   /* filled while rerank.jsonl is read */
    int n_groups;
} heads;

static head_model *find(heads *h, const char *name)
{
    for (int i = 0; i < h->n; i++)
        if (strcmp(h->models[i].name, name) == 0) return &h->models[i];
    return NULL;
}

static int check(head_model *m, int ok, const char *what, const char *text)
{
    if (ok) return T_CHECK(1, "%s", what); /* counted, so the case shows it checked something */
    if (m->failures++ < MAX_REPORTS) T_CHECK(0, "%s: %s, for \"%.60s\"", m->name, what, text);
    return 0;
}

/* Runs a one-row query with text parameters (NULL binds NULL); returns the
 * stepped statement, or NULL with *err (sqlite3_malloc'd). */
static sqlite3_stmt *run(sqlite3 *db, const char *sql, const char **args, int nargs, char **err)
{
    sqlite3_stmt *st = NULL;
    *err = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        *err = sqlite3_mprintf("%s", sqlite3_errmsg(db));
        return NULL;
    }
    for (int i = 0; i < nargs; i++) {
        if (args[i]) sqlite3_bind_text(st, i + 1, args[i], -1, SQLITE_TRANSIENT);
        else sqlite3_bind_null(st, i + 1);
    }
    if (sqlite3_step(st) != SQLITE_ROW) {
        *err = sqlite3_mprintf("%s", sqlite3_errmsg(db));
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

static const char *member_str(const json_doc *d, int node, const char *key)
{
    return bert_json_str(d, bert_json_member(d, node, key), "");
}

static int each_line(const char *path, void (*fn)(heads *, const json_doc *, sqlite3 *), heads *h, sqlite3 *db)
{
    char *text = t_read_file(path, NULL);
    if (!T_CHECK(text != NULL, "cannot read %s", path)) return -1;
    for (char *line = text, *end; *line; line = end) {
        end = strchr(line, '\n');
        end = end ? end + 1 : line + strlen(line);
        size_t len = (size_t)(end - line);
        if (len <= 1) continue;
        json_doc *d = NULL;
        char *err = NULL;
        if (T_CHECK(bert_json_parse(line, len, &d, &err) == 0, "%s: %s", path, err ? err : "unparsable line"))
            fn(h, d, db);
        free(err);
        bert_json_free(d);
    }
    free(text);
    return 0;
}

/* ---- the models ------------------------------------------------------------ */

static void load_models(heads *h, sqlite3 *db)
{
    json_doc *d = NULL;
    char *err = NULL;
    int missing = 0;
    if (!T_CHECK(bert_json_parse_file(GOLDEN_DIR "heads_models.json", &d, &missing, &err) == 0,
                 "tests/golden/heads_models.json: %s", missing ? "missing" : err ? err : "?")) {
        free(err);
        return;
    }
    for (int c = d->nodes[0].first_child; c >= 0 && h->n < MAX_MODELS; c = d->nodes[c].next_sibling) {
        head_model *m = &h->models[h->n++];
        memset(m, 0, sizeof *m);
        snprintf(m->name, sizeof m->name, "%s", d->nodes[c].key);
        m->n_labels = (int)bert_json_int(d, bert_json_member(d, c, "num_labels"), 0);
        if (!t_golden_model_file(m->name, bert_json_int(d, bert_json_member(d, c, "safetensors_bytes"), -1),
                                 member_str(d, c, "safetensors_checksum")))
            continue;
        char path[256];
        snprintf(path, sizeof path, MODELS_DIR "%s", m->name);
        const char *args[] = {m->name, path};
        sqlite3_stmt *st = run(db, "SELECT bert_load(?1, ?2)", args, 2, &err);
        m->usable = T_CHECK(st != NULL, "bert_load('%s'): %s", m->name, err ? err : "");
        sqlite3_finalize(st);
        sqlite3_free(err);
        err = NULL;
        if (!m->usable) continue;

        /* bert_models announces the task and the labels before the weights load, and after. */
        for (int pass = 0; pass < 2; pass++) {
            const char *q[] = {m->name};
            st = run(db, "SELECT task, labels FROM bert_models WHERE name = ?1", q, 1, &err);
            if (T_CHECK(st != NULL, "bert_models row of %s: %s", m->name, err ? err : "")) {
                const char *task = (const char *)sqlite3_column_text(st, 0);
                const char *labels = (const char *)sqlite3_column_text(st, 1);
                T_CHECK(task && strcmp(task, member_str(d, c, "task")) == 0, "%s: task %s, want %s (pass %d)",
                        m->name, task ? task : "NULL", member_str(d, c, "task"), pass);
                /* The column, parsed, against the golden label list. */
                int want = bert_json_member(d, c, "labels"), same = 0;
                json_doc *got = NULL;
                char *perr = NULL;
                if (labels && bert_json_parse(labels, strlen(labels), &got, &perr) == 0 &&
                    got->nodes[0].type == JSON_ARRAY && bert_json_length(got, 0) == bert_json_length(d, want)) {
                    same = 1;
                    for (int gi = got->nodes[0].first_child, wi = d->nodes[want].first_child; gi >= 0 && wi >= 0;
                         gi = got->nodes[gi].next_sibling, wi = d->nodes[wi].next_sibling)
                        same &= strcmp(bert_json_str(got, gi, "?"), bert_json_str(d, wi, "!")) == 0;
                }
                T_CHECK(same, "%s: labels %s differ from the golden ones (pass %d)", m->name,
                        labels ? labels : "NULL", pass);
                free(perr);
                bert_json_free(got);
            }
            sqlite3_finalize(st);
            sqlite3_free(err);
            err = NULL;
            if (pass == 0) {
                /* Load the weights: the second pass reads the heads themselves. */
                const char *e[] = {m->name};
                st = run(db, "SELECT length(bert_embed('load', ?1))", e, 1, &err);
                T_CHECK(st != NULL, "bert_embed on %s: %s", m->name, err ? err : "");
                sqlite3_finalize(st);
                sqlite3_free(err);
                err = NULL;
            }
        }
    }
    bert_json_free(d);
}

/* ---- classification ------------------------------------------------------------ */

static void classify_line(heads *h, const json_doc *d, sqlite3 *db)
{
    head_model *m = find(h, member_str(d, 0, "model"));
    if (!m || !m->usable) return;
    const char *text = member_str(d, 0, "text");
    int pair_node = bert_json_member(d, 0, "text_pair");
    int is_pair = pair_node >= 0 && d->nodes[pair_node].type == JSON_TEXT;
    const char *pair = is_pair ? bert_json_str(d, pair_node, "") : NULL;
    const char *args1[] = {text, m->name}, *args2[] = {text, pair, m->name};
    char *err = NULL;
    sqlite3_stmt *st = is_pair ? run(db, "SELECT bert_classify_pair(?1, ?2, ?3)", args2, 3, &err)
                               : run(db, "SELECT bert_classify(?1, ?2), bert_label(?1, ?2)", args1, 2, &err);
    char what[400];
    snprintf(what, sizeof what, "%s failed: %s", is_pair ? "bert_classify_pair" : "bert_classify", err ? err : "");
    if (check(m, st != NULL && sqlite3_column_type(st, 0) == SQLITE_TEXT, what, text)) {
        const char *got = (const char *)sqlite3_column_text(st, 0);
        json_doc *g = NULL;
        char *perr = NULL;
        int want = bert_json_member(d, 0, "result");
        if (check(m, bert_json_parse(got, strlen(got), &g, &perr) == 0 && g->nodes[0].type == JSON_ARRAY &&
                         bert_json_length(g, 0) == bert_json_length(d, want),
                  "the result is not an array of every label", text)) {
            int gi = g->nodes[0].first_child, wi = d->nodes[want].first_child;
            for (; gi >= 0 && wi >= 0; gi = g->nodes[gi].next_sibling, wi = d->nodes[wi].next_sibling) {
                const char *gl = member_str(g, gi, "label"), *wl = member_str(d, wi, "label");
                double gs = bert_json_real(g, bert_json_member(g, gi, "score"), NAN);
                double ws = bert_json_real(d, bert_json_member(d, wi, "score"), NAN);
                double diff = fabs(gs - ws);
                if (!(diff <= m->classify_diff)) m->classify_diff = diff;
                snprintf(what, sizeof what, "label order or score differs: got %s %.7f, want %s %.7f%s%s", gl, gs,
                         wl, ws, is_pair ? " (pair with " : "", is_pair ? "a second text)" : "");
                if (!check(m, strcmp(gl, wl) == 0 && diff <= TOL, what, text)) break;
            }
            if (!is_pair) {
                const char *label = (const char *)sqlite3_column_text(st, 1);
                const char *best = member_str(d, d->nodes[want].first_child, "label");
                snprintf(what, sizeof what, "bert_label gave %s, the best label is %s", label ? label : "NULL", best);
                check(m, label && strcmp(label, best) == 0, what, text);
            }
            m->n_classify++;
        }
        free(perr);
        bert_json_free(g);
    }
    sqlite3_finalize(st);
    sqlite3_free(err);
}

/* ---- DistilBERT's encoder --------------------------------------------------------- */

static void distil_embedding_line(heads *h, const json_doc *d, sqlite3 *db)
{
    head_model *m = find(h, member_str(d, 0, "model"));
    if (!m || !m->usable) return;
    const char *text = member_str(d, 0, "text");
    const char *args[] = {text, m->name};
    char *err = NULL;
    sqlite3_stmt *st = run(db, "SELECT bert_embed(?1, ?2)", args, 2, &err);
    char what[300];
    snprintf(what, sizeof what, "bert_embed failed: %s", err ? err : "");
    int want = bert_json_member(d, 0, "mean"), n = bert_json_length(d, want);
    if (check(m, st != NULL && sqlite3_column_bytes(st, 0) == 4 * n, what, text)) {
        const unsigned char *blob = sqlite3_column_blob(st, 0);
        double worst = 0;
        int i = 0;
        for (int c = d->nodes[want].first_child; c >= 0; c = d->nodes[c].next_sibling, i++) {
            float f;
            memcpy(&f, blob + 4 * i, 4);
            double diff = fabs(f - bert_json_real(d, c, NAN));
            if (!(diff <= worst)) worst = diff;
        }
        if (!(worst <= m->embed_diff)) m->embed_diff = worst;
        snprintf(what, sizeof what, "bert_embed differs from the reference's mean pooling by %.2e", worst);
        check(m, worst <= TOL, what, text);
        m->n_embed++;
    }
    sqlite3_finalize(st);
    sqlite3_free(err);
}

/* ---- reranking ------------------------------------------------------------------ */

static void rerank_line(heads *h, const json_doc *d, sqlite3 *db)
{
    head_model *m = find(h, member_str(d, 0, "model"));
    if (!m || !m->usable) return;
    const char *query = member_str(d, 0, "query"), *doc = member_str(d, 0, "document");
    double want = bert_json_real(d, bert_json_member(d, 0, "score"), NAN);
    const char *args[] = {query, doc, m->name};
    char *err = NULL;
    sqlite3_stmt *st = run(db, "SELECT bert_rerank(?1, ?2, ?3)", args, 3, &err);
    char what[300];
    snprintf(what, sizeof what, "bert_rerank failed: %s", err ? err : "");
    if (check(m, st != NULL && sqlite3_column_type(st, 0) == SQLITE_FLOAT, what, doc)) {
        double got = sqlite3_column_double(st, 0), diff = fabs(got - want);
        if (!(diff <= m->rerank_diff)) m->rerank_diff = diff;
        snprintf(what, sizeof what, "bert_rerank gave %.7f, reference %.7f (%s)", got, want,
                 member_str(d, 0, "activation"));
        check(m, diff <= TOL, what, doc);
        m->n_rerank++;
    }
    sqlite3_finalize(st);
    sqlite3_free(err);

    rerank_group *g = NULL;
    for (int i = 0; i < h->n_groups && !g; i++)
        if (strcmp(h->groups[i].model, m->name) == 0 && strcmp(h->groups[i].query, query) == 0) g = &h->groups[i];
    if (!g && h->n_groups < MAX_GROUPS) {
        g = &h->groups[h->n_groups++];
        memset(g, 0, sizeof *g);
        snprintf(g->model, sizeof g->model, "%s", m->name);
        g->query = strdup(query);
    }
    if (g && g->query && g->n < MAX_DOCS && (g->docs[g->n] = strdup(doc))) g->scores[g->n++] = want;
}

/* bert_rerank_each over each group's documents as one JSON array, and as an
 * object keyed by the documents' positions as text, in packed batches. */
static void rerank_each_groups(heads *h, sqlite3 *db)
{
    for (int i = 0; i < h->n_groups; i++) {
        rerank_group *g = &h->groups[i];
        head_model *m = find(h, g->model);
        sqlite3_str *s = sqlite3_str_new(NULL), *o = sqlite3_str_new(NULL);
        sqlite3_str_appendall(s, "json_array(");
        sqlite3_str_appendall(o, "json_object(");
        for (int k = 0; k < g->n; k++) {
            sqlite3_str_appendf(s, "%s%Q", k ? "," : "", g->docs[k]);
            sqlite3_str_appendf(o, "%s'd%d',%Q", k ? "," : "", k, g->docs[k]);
        }
        sqlite3_str_appendchar(s, 1, ')');
        sqlite3_str_appendchar(o, 1, ')');
        char *arr = sqlite3_str_finish(s), *obj = sqlite3_str_finish(o);
        for (int as_object = 0; as_object < 2; as_object++) {
            char *sql = sqlite3_mprintf("SELECT key, value, score FROM bert_rerank_each(?1, %s, ?2)",
                                        as_object ? obj : arr);
            sqlite3_stmt *st = NULL;
            int rows = 0, ok = sql && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK;
            if (ok) {
                sqlite3_bind_text(st, 1, g->query, -1, SQLITE_TRANSIENT);
                sqlite3_bind_text(st, 2, g->model, -1, SQLITE_TRANSIENT);
            }
            int rc;
            while (ok && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                int k = as_object ? atoi((const char *)sqlite3_column_text(st, 0) + 1) : sqlite3_column_int(st, 0);
                const char *value = (const char *)sqlite3_column_text(st, 1);
                double got = sqlite3_column_double(st, 2);
                if (k < 0 || k >= g->n || rows != k || !value || strcmp(value, g->docs[k]) != 0) {
                    check(m, 0, "bert_rerank_each rows are not the input's, in its order", g->query);
                    ok = 0;
                    break;
                }
                double diff = fabs(got - g->scores[k]);
                if (!(diff <= m->each_diff)) m->each_diff = diff;
                char what[200];
                snprintf(what, sizeof what, "bert_rerank_each gave %.7f for document %d, reference %.7f", got, k,
                         g->scores[k]);
                check(m, diff <= TOL, what, g->query);
                rows++;
                m->n_each++;
            }
            char what[300];
            snprintf(what, sizeof what, "bert_rerank_each gave %d of %d rows: %s", rows, g->n,
                     st ? sqlite3_errmsg(db) : "cannot prepare");
            check(m, ok && rows == g->n, what, g->query);
            sqlite3_finalize(st);
            sqlite3_free(sql);
        }
        sqlite3_free(arr);
        sqlite3_free(obj);
        free(g->query);
        for (int k = 0; k < g->n; k++) free(g->docs[k]);
    }
}

/* ---- what the goldens cannot show ------------------------------------------------- */

static void errors(sqlite3 *db)
{
    t_case("a function whose head the model lacks names the head and the model's task");
    t_expect(db, "SELECT bert_load('plain', '" MODELS_DIR "bert-plain-f32')", NULL, "plain");
    t_expect(db, "SELECT bert_load('mlm', '" MODELS_DIR "mlm-tied-f32')", NULL, "mlm");
    t_expect_error(db, "SELECT bert_classify('a text', 'plain')", NULL, "sequence-classification head",
                   "bert_classify", "task is none", NULL);
    t_expect_error(db, "SELECT bert_label('a text', 'mlm')", NULL, "sequence-classification head",
                   "task is fill_mask", NULL);
    t_expect_error(db, "SELECT bert_classify_pair('a', 'b', 'mlm')", NULL, "bert_classify_pair",
                   "task is fill_mask", NULL);
    t_expect_error(db, "SELECT bert_rerank('q', 'd', 'plain')", NULL, "bert_rerank", "classifier.*", NULL);
    t_expect_error(db, "SELECT count(*) FROM bert_rerank_each('q', '[\"d\"]', 'mlm')", NULL, "bert_rerank_each",
                   "task is fill_mask", NULL);
    t_expect_error(db, "SELECT bert_fill_mask('a [MASK] b', 5, 'cls-3-f32')", NULL, "masked-language-model head",
                   "task is sequence_classification", NULL);
    t_expect_error(db, "SELECT bert_next_sentence('a', 'b', 'distil-cls')", NULL, "next-sentence",
                   "task is sequence_classification", NULL);
    t_expect_error(db, "SELECT bert_rerank('q', 'd', 'cls-3-f32')", NULL, "one output", "3 labels",
                   "bert_classify_pair", NULL);
    t_expect(db, "SELECT task IS NULL AND labels IS NULL FROM bert_models WHERE name = 'plain'", NULL, "1");

    t_case("NULL in gives NULL out; wrong types are clear errors");
    t_expect(db, "SELECT bert_classify(NULL, 'cls-3-f32')", NULL, "NULL");
    t_expect(db, "SELECT bert_label(NULL, 'cls-3-f32')", NULL, "NULL");
    t_expect(db, "SELECT bert_classify_pair('a', NULL, 'cls-3-f32')", NULL, "NULL");
    t_expect(db, "SELECT bert_rerank(NULL, 'd', 'ce-sigmoid')", NULL, "NULL");
    t_expect(db, "SELECT bert_rerank('q', NULL, 'ce-sigmoid')", NULL, "NULL");
    t_expect(db, "SELECT count(*) FROM bert_rerank_each(NULL, '[\"d\"]', 'ce-sigmoid')", NULL, "0");
    t_expect(db, "SELECT count(*) FROM bert_rerank_each('q', NULL, 'ce-sigmoid')", NULL, "0");
    t_expect(db, "SELECT count(*) FROM bert_rerank_each('q', '[]', 'ce-sigmoid')", NULL, "0");
    t_expect(db, "SELECT count(*) FROM bert_rerank_each('q', '[null, \"d\"]', 'ce-sigmoid')", NULL, "1");
    t_expect_error(db, "SELECT bert_classify(x'00ff', 'cls-3-f32')", NULL, "bert_classify", "TEXT", NULL);
    t_expect_error(db, "SELECT bert_rerank('q', x'00', 'ce-sigmoid')", NULL, "bert_rerank", "argument 2", NULL);
    t_expect_error(db, "SELECT count(*) FROM bert_rerank_each(x'00', '[\"d\"]', 'ce-sigmoid')", NULL, "query",
                   "TEXT", NULL);
    t_expect_error(db, "SELECT count(*) FROM bert_rerank_each('q', '[\"d\", 3]', 'ce-sigmoid')", NULL,
                   "item 2", "not a text", NULL);
    t_expect_error(db, "SELECT count(*) FROM bert_rerank_each('q', 'not json', 'ce-sigmoid')", NULL,
                   "JSON array", NULL);
    t_expect_error(db, "SELECT bert_classify('a', 'no-such-model')", NULL, "no-such-model", NULL);
    t_expect_error(db, "SELECT bert_classify('a', 42)", NULL, "model name must be TEXT", NULL);
    /* TEXT is required: a number is an error that names the argument. */
    t_expect_error(db, "SELECT bert_classify(42, 'cls-3-f32')", NULL, "argument 1 (text)", "TEXT", NULL);

    t_case("the regression head gives the raw logit, the reranker a sigmoid of it");
    /* The same one-label model: text-classification applies no function for
     * "regression", CrossEncoder applies sigmoid when activation_fn is absent. */
    double logit = t_query_double(db, "SELECT bert_classify_pair('q', 'd', 'reg-f32') ->> '$[0].score'", NULL);
    double score = t_query_double(db, "SELECT bert_rerank('q', 'd', 'reg-f32')", NULL);
    T_CHECK(isfinite(logit) && fabs(score - 1.0 / (1.0 + exp(-logit))) < 1e-6,
            "regression logit %.7f, rerank %.7f: not its sigmoid", logit, score);
    t_expect(db, "SELECT bert_rerank('q', 'd', 'reg-f32') = (SELECT score FROM bert_rerank_each('q', '[\"d\"]', "
                 "'reg-f32'))", NULL, "1");
}

/* A classifier whose config.json names fewer labels than its weights hold
 * must not load: the error names the tensor. */
static void shape_mismatch(sqlite3 *db)
{
    t_case("a classifier head that disagrees with config.json is a clear load error");
    char dir[] = "/tmp/bert-heads-XXXXXX";
    if (!T_CHECK(mkdtemp(dir) != NULL, "cannot make a temporary directory")) return;
    char path[512], target[512];
    const char *files[] = {"model.safetensors", "vocab.txt", "tokenizer_config.json"};
    char *cwd = getcwd(NULL, 0);
    int ok = cwd != NULL;
    for (int i = 0; ok && i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        snprintf(target, sizeof target, "%s/" MODELS_DIR "cls-3-f32/%s", cwd, files[i]);
        ok = symlink(target, path) == 0;
    }
    char *config = t_read_file(MODELS_DIR "cls-3-f32/config.json", NULL);
    char *at = config ? strstr(config, "\"2\": \"positive\"") : NULL;
    ok = ok && at != NULL;
    if (ok) {
        /* id2label with two labels: "0" and "1" only. */
        char *comma = at;
        while (comma > config && *comma != ',') comma--;
        memmove(comma, at + strlen("\"2\": \"positive\""), strlen(at + strlen("\"2\": \"positive\"")) + 1);
        snprintf(path, sizeof path, "%s/config.json", dir);
        FILE *f = fopen(path, "w");
        ok = f && fputs(config, f) >= 0;
        if (f) ok &= fclose(f) == 0;
    }
    if (T_CHECK(ok, "cannot prepare the mismatched model in %s", dir)) {
        char sql[600];
        snprintf(sql, sizeof sql, "SELECT bert_classify('a', bert_load('mismatch', '%s'))", dir);
        t_expect_error(db, sql, NULL, "classifier.weight", "[3, 128]", "2 labels", NULL);
    }
    free(config);
    free(cwd);
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, i < 3 ? files[i] : "config.json");
        unlink(path);
    }
    rmdir(dir);
}

void suite_heads(void)
{
    heads *h = calloc(1, sizeof *h);
    if (!h) { T_CHECK(0, "out of memory"); return; }

    t_case("classifier test models match the goldens and register");
    if (!t_exists(MODELS_DIR)) {
        t_skip("no build/models: run tests/tools/make_test_models.sh build/models");
        free(h);
        return;
    }
    sqlite3 *db = t_open();
    load_models(h, db);

    t_case("bert_classify, bert_classify_pair and bert_label match the text-classification pipeline");
    each_line(GOLDEN_DIR "classify.jsonl", classify_line, h, db);
    t_case("bert_embed on DistilBERT matches the reference encoder (mean pooling)");
    each_line(GOLDEN_DIR "distil_embeddings.jsonl", distil_embedding_line, h, db);
    t_case("bert_rerank matches the CrossEncoder's score, with its activation");
    each_line(GOLDEN_DIR "rerank.jsonl", rerank_line, h, db);
    t_case("bert_rerank_each scores every document of a JSON array or object in packed batches");
    T_CHECK(h->n_groups > 0, "the goldens hold no bert_rerank_each groups");
    rerank_each_groups(h, db);

    for (int i = 0; i < h->n; i++) {
        const head_model *m = &h->models[i];
        printf("heads  %-17s %s classify %.1e (%d)", m->name, m->usable ? "max|diff|" : "NOT CHECKED",
               m->classify_diff, m->n_classify);
        if (m->n_rerank) printf("  rerank %.1e (%d)  rerank_each %.1e (%d)", m->rerank_diff, m->n_rerank,
                                m->each_diff, m->n_each);
        if (m->n_embed) printf("  embed %.1e (%d)", m->embed_diff, m->n_embed);
        if (m->failures) printf("  FAILURES %d", m->failures);
        printf("\n");
    }
    t_case("every classifier golden was checked");
    for (int i = 0; i < h->n; i++) {
        const head_model *m = &h->models[i];
        T_CHECK(m->usable && m->n_classify > 0 && (m->n_labels != 1 || (m->n_rerank > 0 && m->n_each > 0)) &&
                    (strcmp(m->name, "distil-cls") != 0 || m->n_embed > 0),
                "%s: some golden checks never ran", m->name);
    }

    errors(db);
    shape_mismatch(db);
    sqlite3_close(db);
    free(h);
}
