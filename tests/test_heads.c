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
#include "golden_files.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_MODELS 8

typedef struct {
    golden_model g;   /* first: the scaffolding's */
    int n_labels;
    double classify_diff, rerank_diff, each_diff, embed_diff;
    int n_classify, n_rerank, n_each, n_embed;
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

/* ---- the models ------------------------------------------------------------ */

/* Registers one classifier of the manifest and checks what bert_models says of it. */
static void setup_model(void *ctx, const json_doc *d, int c, golden_model *gm, sqlite3 *db)
{
    (void)ctx;
    head_model *m = (head_model *)gm;
    char *err = NULL;
    m->n_labels = (int)bert_json_int(d, bert_json_member(d, c, "num_labels"), 0);
    if (!t_golden_model_matches(d, c)) return;
    char path[256];
    snprintf(path, sizeof path, MODELS_DIR "%s", m->g.name);
    const char *args[] = {m->g.name, path};
    sqlite3_stmt *st = run(db, "SELECT bert_load(?1, ?2)", args, 2, &err);
    m->g.usable = T_CHECK(st != NULL, "bert_load('%s'): %s", m->g.name, err ? err : "");
    sqlite3_finalize(st);
    sqlite3_free(err);
    err = NULL;
    if (!m->g.usable) return;

    /* bert_models announces the task and the labels before the weights load, and after. */
    for (int pass = 0; pass < 2; pass++) {
        const char *q[] = {m->g.name};
        st = run(db, "SELECT task, labels FROM bert_models WHERE name = ?1", q, 1, &err);
        if (T_CHECK(st != NULL, "bert_models row of %s: %s", m->g.name, err ? err : "")) {
            const char *task = (const char *)sqlite3_column_text(st, 0);
            const char *labels = (const char *)sqlite3_column_text(st, 1);
            T_CHECK(task && strcmp(task, t_member_str(d, c, "task")) == 0, "%s: task %s, want %s (pass %d)",
                    m->g.name, task ? task : "NULL", t_member_str(d, c, "task"), pass);
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
            T_CHECK(same, "%s: labels %s differ from the golden ones (pass %d)", m->g.name,
                    labels ? labels : "NULL", pass);
            free(perr);
            bert_json_free(got);
        }
        sqlite3_finalize(st);
        sqlite3_free(err);
        err = NULL;
        if (pass == 0) {
            /* Load the weights: the second pass reads the heads themselves. */
            const char *e[] = {m->g.name};
            st = run(db, "SELECT length(bert_embed('load', ?1))", e, 1, &err);
            T_CHECK(st != NULL, "bert_embed on %s: %s", m->g.name, err ? err : "");
            sqlite3_finalize(st);
            sqlite3_free(err);
            err = NULL;
        }
    }
}

static void load_models(heads *h, sqlite3 *db)
{
    h->n = t_golden_models(GOLDEN_DIR "heads_models.json", &h->models[0].g, MAX_MODELS, sizeof *h->models,
                           setup_model, h, db);
}

/* ---- classification ------------------------------------------------------------ */

static void classify_line(void *ctx, golden_model *gm, const json_doc *d, sqlite3 *db)
{
    (void)ctx;
    head_model *m = (head_model *)gm;
    const char *text = t_member_str(d, 0, "text");
    int pair_node = bert_json_member(d, 0, "text_pair");
    int is_pair = pair_node >= 0 && d->nodes[pair_node].type == JSON_TEXT;
    const char *pair = is_pair ? bert_json_str(d, pair_node, "") : NULL;
    const char *args1[] = {text, m->g.name}, *args2[] = {text, pair, m->g.name};
    char *err = NULL;
    sqlite3_stmt *st = is_pair ? run(db, "SELECT bert_classify_pair(?1, ?2, ?3)", args2, 3, &err)
                               : run(db, "SELECT bert_classify(?1, ?2), bert_label(?1, ?2)", args1, 2, &err);
    char what[400];
    snprintf(what, sizeof what, "%s failed: %s", is_pair ? "bert_classify_pair" : "bert_classify", err ? err : "");
    if (t_golden_check(&m->g, st != NULL && sqlite3_column_type(st, 0) == SQLITE_TEXT, what, text)) {
        const char *got = (const char *)sqlite3_column_text(st, 0);
        json_doc *g = NULL;
        char *perr = NULL;
        int want = bert_json_member(d, 0, "result");
        if (t_golden_check(&m->g, bert_json_parse(got, strlen(got), &g, &perr) == 0 && g->nodes[0].type == JSON_ARRAY &&
                         bert_json_length(g, 0) == bert_json_length(d, want),
                  "the result is not an array of every label", text)) {
            int gi = g->nodes[0].first_child, wi = d->nodes[want].first_child;
            for (; gi >= 0 && wi >= 0; gi = g->nodes[gi].next_sibling, wi = d->nodes[wi].next_sibling) {
                const char *gl = t_member_str(g, gi, "label"), *wl = t_member_str(d, wi, "label");
                double gs = bert_json_real(g, bert_json_member(g, gi, "score"), NAN);
                double ws = bert_json_real(d, bert_json_member(d, wi, "score"), NAN);
                double diff = fabs(gs - ws);
                if (!(diff <= m->classify_diff)) m->classify_diff = diff;
                snprintf(what, sizeof what, "label order or score differs: got %s %.7f, want %s %.7f%s%s", gl, gs,
                         wl, ws, is_pair ? " (pair with " : "", is_pair ? "a second text)" : "");
                if (!t_golden_check(&m->g, strcmp(gl, wl) == 0 && diff <= GOLDEN_TOL, what, text)) break;
            }
            if (!is_pair) {
                const char *label = (const char *)sqlite3_column_text(st, 1);
                const char *best = t_member_str(d, d->nodes[want].first_child, "label");
                snprintf(what, sizeof what, "bert_label gave %s, the best label is %s", label ? label : "NULL", best);
                t_golden_check(&m->g, label && strcmp(label, best) == 0, what, text);
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

static void distil_embedding_line(void *ctx, golden_model *gm, const json_doc *d, sqlite3 *db)
{
    (void)ctx;
    head_model *m = (head_model *)gm;
    const char *text = t_member_str(d, 0, "text");
    const char *args[] = {text, m->g.name};
    char *err = NULL;
    sqlite3_stmt *st = run(db, "SELECT bert_embed(?1, ?2)", args, 2, &err);
    char what[300];
    snprintf(what, sizeof what, "bert_embed failed: %s", err ? err : "");
    int want = bert_json_member(d, 0, "mean"), n = bert_json_length(d, want);
    if (t_golden_check(&m->g, st != NULL && sqlite3_column_bytes(st, 0) == 4 * n, what, text)) {
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
        t_golden_check(&m->g, worst <= GOLDEN_TOL, what, text);
        m->n_embed++;
    }
    sqlite3_finalize(st);
    sqlite3_free(err);
}

/* ---- reranking ------------------------------------------------------------------ */

static void rerank_line(void *ctx, golden_model *gm, const json_doc *d, sqlite3 *db)
{
    heads *h = ctx;
    head_model *m = (head_model *)gm;
    const char *query = t_member_str(d, 0, "query"), *doc = t_member_str(d, 0, "document");
    double want = bert_json_real(d, bert_json_member(d, 0, "score"), NAN);
    const char *args[] = {query, doc, m->g.name};
    char *err = NULL;
    sqlite3_stmt *st = run(db, "SELECT bert_rerank(?1, ?2, ?3)", args, 3, &err);
    char what[300];
    snprintf(what, sizeof what, "bert_rerank failed: %s", err ? err : "");
    if (t_golden_check(&m->g, st != NULL && sqlite3_column_type(st, 0) == SQLITE_FLOAT, what, doc)) {
        double got = sqlite3_column_double(st, 0), diff = fabs(got - want);
        if (!(diff <= m->rerank_diff)) m->rerank_diff = diff;
        snprintf(what, sizeof what, "bert_rerank gave %.7f, reference %.7f (%s)", got, want,
                 t_member_str(d, 0, "activation"));
        t_golden_check(&m->g, diff <= GOLDEN_TOL, what, doc);
        m->n_rerank++;
    }
    sqlite3_finalize(st);
    sqlite3_free(err);

    rerank_group *g = NULL;
    for (int i = 0; i < h->n_groups && !g; i++)
        if (strcmp(h->groups[i].model, m->g.name) == 0 && strcmp(h->groups[i].query, query) == 0) g = &h->groups[i];
    if (!g && h->n_groups < MAX_GROUPS) {
        g = &h->groups[h->n_groups++];
        memset(g, 0, sizeof *g);
        snprintf(g->model, sizeof g->model, "%s", m->g.name);
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
        head_model *m = (head_model *)t_golden_find(&h->models[0].g, h->n, sizeof *h->models, g->model);
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
                    t_golden_check(&m->g, 0, "bert_rerank_each rows are not the input's, in its order", g->query);
                    ok = 0;
                    break;
                }
                double diff = fabs(got - g->scores[k]);
                if (!(diff <= m->each_diff)) m->each_diff = diff;
                char what[200];
                snprintf(what, sizeof what, "bert_rerank_each gave %.7f for document %d, reference %.7f", got, k,
                         g->scores[k]);
                t_golden_check(&m->g, diff <= GOLDEN_TOL, what, g->query);
                rows++;
                m->n_each++;
            }
            char what[300];
            snprintf(what, sizeof what, "bert_rerank_each gave %d of %d rows: %s", rows, g->n,
                     st ? sqlite3_errmsg(db) : "cannot prepare");
            t_golden_check(&m->g, ok && rows == g->n, what, g->query);
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
    t_head_shape_mismatch(db, "cls-3-f32", "\"2\": \"positive\"", "SELECT bert_classify('a', bert_load('mismatch', '%s'))",
                          "classifier.weight", "[3, 128]", "2 labels", NULL);
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
    each_model_line(GOLDEN_DIR "classify.jsonl", classify_line, h, db);
    t_case("bert_embed on DistilBERT matches the reference encoder (mean pooling)");
    each_model_line(GOLDEN_DIR "distil_embeddings.jsonl", distil_embedding_line, h, db);
    t_case("bert_rerank matches the CrossEncoder's score, with its activation");
    each_model_line(GOLDEN_DIR "rerank.jsonl", rerank_line, h, db);
    t_case("bert_rerank_each scores every document of a JSON array or object in packed batches");
    T_CHECK(h->n_groups > 0, "the goldens hold no bert_rerank_each groups");
    rerank_each_groups(h, db);

    for (int i = 0; i < h->n; i++) {
        const head_model *m = &h->models[i];
        printf("heads  %-17s %s classify %.1e (%d)", m->g.name, m->g.usable ? "max|diff|" : "NOT CHECKED",
               m->classify_diff, m->n_classify);
        if (m->n_rerank) printf("  rerank %.1e (%d)  rerank_each %.1e (%d)", m->rerank_diff, m->n_rerank,
                                m->each_diff, m->n_each);
        if (m->n_embed) printf("  embed %.1e (%d)", m->embed_diff, m->n_embed);
        if (m->g.failures) printf("  FAILURES %d", m->g.failures);
        printf("\n");
    }
    t_case("every classifier golden was checked");
    for (int i = 0; i < h->n; i++) {
        const head_model *m = &h->models[i];
        T_CHECK(m->g.usable && m->n_classify > 0 && (m->n_labels != 1 || (m->n_rerank > 0 && m->n_each > 0)) &&
                    (strcmp(m->g.name, "distil-cls") != 0 || m->n_embed > 0),
                "%s: some golden checks never ran", m->g.name);
    }

    errors(db);
    shape_mismatch(db);
    sqlite3_close(db);
    free(h);
}
