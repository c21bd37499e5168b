/*
 * test_sparse.c - learned sparse vectors through SQL: bert_sparse and
 * bert_sparse_terms (API.md, round 4).
 *
 * The expected terms are tests/golden/sparse.jsonl, written by
 * tests/golden/make_sparse_goldens.py: the PyTorch reference's masked-LM
 * logits at every position of the Hugging Face tokenizer's ids, pooled as
 * naver/splade and sentence-transformers' SpladePooling define it, special
 * tokens left out as opensearch's neural-sparse models do; and their query
 * side, idf.json's weights on the tokens.  On the generated masked-LM models
 * of BERT (two), DistilBERT, RoBERTa and MPNet.  Weights must agree within
 * 1e-4 (the reference's float32-vs-float64 noise stays below 1e-5), the
 * terms be the same in the same order where their weights differ by more
 * than that, and the golden top_k was cut where neighbours are 1e-3 apart.
 */
#include "test.h"
#include "golden_files.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MODELS 8
#define MAX_TERMS 64

typedef struct {
    golden_model g;   /* first: the scaffolding's */
    int lines;
} sparse_model;

typedef struct {
    sparse_model models[MAX_MODELS];
    int n;
} sparse_models;

typedef struct {
    int id;
    char token[64];
    double weight;
} term;

/* The rows of `sql` (token_id, token, weight), with ?1 text and ?2 options:
 * how many (at most max are kept), or -1 with the error in err. */
static int table_terms(sqlite3 *db, const char *sql, const char *text, const char *options, term *out, int max,
                       char *err, size_t err_size)
{
    sqlite3_stmt *st = NULL;
    int n = 0, rc;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, err_size, "%s", sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, options, -1, SQLITE_TRANSIENT);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n < max) {
            out[n].id = sqlite3_column_int(st, 0);
            snprintf(out[n].token, sizeof out[n].token, "%s", (const char *)sqlite3_column_text(st, 1));
            out[n].weight = sqlite3_column_double(st, 2);
        }
        n++;
    }
    if (rc != SQLITE_DONE) {
        snprintf(err, err_size, "%s", sqlite3_errmsg(db));
        n = -1;
    }
    sqlite3_finalize(st);
    return n;
}

/* bert_sparse's JSON object as terms (ids unknown: -1). */
static int json_terms(sqlite3 *db, const char *text, const char *options, term *out, int max, char *err,
                      size_t err_size)
{
    char *got = t_query(db, "SELECT bert_sparse(?1, ?2)", text, options, NULL);
    json_doc *d = NULL;
    char *perr = NULL;
    int n = -1;
    if (bert_json_parse(got, strlen(got), &d, &perr) != 0 || d->nodes[0].type != JSON_OBJECT) {
        snprintf(err, err_size, "%s", got);
    } else {
        n = 0;
        for (int c = d->nodes[0].first_child; c >= 0; c = d->nodes[c].next_sibling, n++) {
            if (n >= max) continue;
            out[n].id = -1;
            snprintf(out[n].token, sizeof out[n].token, "%s", d->nodes[c].key);
            out[n].weight = d->nodes[c].number;
        }
    }
    free(perr);
    bert_json_free(d);
    free(got);
    return n;
}

/* Our terms against the golden line's: the same weights position by
 * position (within GOLDEN_TOL), and the same term wherever the golden
 * weight is not tied with a neighbour's. */
static int same_terms(const json_doc *line, const term *ours, int n, int with_ids)
{
    int terms = bert_json_member(line, 0, "terms");
    if (n != bert_json_length(line, terms)) return 0;
    for (int i = 0; i < n; i++) {
        int t = t_json_child(line, terms, i);
        double w = bert_json_real(line, t_json_child(line, t, 2), -1);
        int id = (int)bert_json_int(line, t_json_child(line, t, 0), -1);
        if (fabs(ours[i].weight - w) > GOLDEN_TOL) return 0;
        int same = strcmp(ours[i].token, bert_json_str(line, t_json_child(line, t, 1), "")) == 0 &&
                   (!with_ids || ours[i].id == id);
        if (same) continue;
        double before = i > 0 ? bert_json_real(line, t_json_child(line, t_json_child(line, terms, i - 1), 2), -9) : -9;
        double after = i + 1 < n ? bert_json_real(line, t_json_child(line, t_json_child(line, terms, i + 1), 2), -9)
                                 : -9;
        if (fabs(before - w) > GOLDEN_TOL && fabs(after - w) > GOLDEN_TOL) return 0;
    }
    return 1;
}

static void check_line(void *ctx, golden_model *gm, const json_doc *line, sqlite3 *db)
{
    (void)ctx;
    ((sparse_model *)gm)->lines++;
    const char *text = t_member_str(line, 0, "text"), *mode = t_member_str(line, 0, "mode");
    int top_k = (int)bert_json_int(line, bert_json_member(line, 0, "top_k"), 0);
    int nonzero = (int)bert_json_int(line, bert_json_member(line, 0, "nonzero"), 0);
    double next = bert_json_real(line, bert_json_member(line, 0, "next"), 0);
    char what[96], options[256], err[512] = "";
    snprintf(what, sizeof what, "%s (%s)", gm->name, mode);

    /* The HF tokenizer's ids: a difference here is the tokenizer's, not SPLADE's. */
    char *ids = t_query(db, "SELECT bert_token_ids(?1, ?2)", text, gm->name, NULL);
    char want_ids[4096] = "[";
    int ids_node = bert_json_member(line, 0, "ids");
    for (int i = 0; i < bert_json_length(line, ids_node); i++)
        snprintf(want_ids + strlen(want_ids), sizeof want_ids - strlen(want_ids), "%s%lld", i ? "," : "",
                 bert_json_int(line, t_json_child(line, ids_node, i), -1));
    strcat(want_ids, "]");
    int ids_ok = t_golden_check(gm, strcmp(ids, want_ids) == 0, what, text);
    free(ids);
    if (!ids_ok) return;

    term ours[MAX_TERMS];
    snprintf(options, sizeof options, "{\"model\": \"%s\", \"mode\": \"%s\", \"top_k\": %d}", gm->name, mode,
             top_k > 0 ? top_k : 1);
    int n = table_terms(db, "SELECT token_id, token, weight FROM bert_sparse_terms(?1, ?2)", text, options, ours,
                        MAX_TERMS, err, sizeof err);
    if (!t_golden_check(gm, n >= 0 && same_terms(line, ours, top_k ? n : 0, 1) && (top_k || n == 0), what, text))
        printf("  bert_sparse_terms: %d terms%s%s\n", n, err[0] ? ": " : "", err);
    n = json_terms(db, text, options, ours, MAX_TERMS, err, sizeof err);
    if (!t_golden_check(gm, n >= 0 && same_terms(line, ours, top_k ? n : 0, 0) && (top_k || n == 0), what, text))
        printf("  bert_sparse: %d terms%s%s\n", n, err[0] ? ": " : "", err);

    /* min_weight between the last golden term and the next keeps exactly those. */
    if (top_k > 0 && next > 0) {
        double last = bert_json_real(line, t_json_child(line, t_json_child(line, bert_json_member(line, 0, "terms"),
                                                                            top_k - 1), 2), 0);
        snprintf(options, sizeof options, "{\"model\": \"%s\", \"mode\": \"%s\", \"min_weight\": %.9g}", gm->name,
                 mode, (last + next) / 2);
        n = table_terms(db, "SELECT token_id, token, weight FROM bert_sparse_terms(?1, ?2)", text, options, ours,
                        MAX_TERMS, err, sizeof err);
        t_golden_check(gm, n == top_k && same_terms(line, ours, n, 1), what, text);
    }

    /* Every non-zero term: a weight a hair above 0 may be 0 in float32 (or
     * the other way), so the count may differ by a few such terms. */
    snprintf(options, sizeof options, "{\"model\": \"%s\", \"mode\": \"%s\"}", gm->name, mode);
    char *count = t_query(db, "SELECT count(*) FROM bert_sparse_terms(?1, ?2)", text, options, NULL);
    int all = atoi(count);
    if (!t_golden_check(gm, abs(all - nonzero) <= (nonzero > 100 ? 3 : 0), what, text))
        printf("  %d non-zero terms, want %d (%s)\n", all, nonzero, count);
    free(count);
}

static void case_goldens(sqlite3 *db)
{
    t_case("bert_sparse and bert_sparse_terms match the SPLADE reference (sparse.jsonl)");
    sparse_models *h = calloc(1, sizeof *h);
    if (!T_CHECK(h != NULL, "out of memory")) return;
    h->n = t_golden_models(GOLDEN_DIR "sparse_models.json", &h->models[0].g, MAX_MODELS, sizeof *h->models,
                           t_golden_register, NULL, db);
    int lines = each_model_line(GOLDEN_DIR "sparse.jsonl", check_line, h, db);
    T_CHECK(lines >= 40, "%d golden lines", lines);
    for (int i = 0; i < h->n; i++)
        T_CHECK(h->models[i].g.usable && h->models[i].lines >= 7 && h->models[i].g.failures == 0,
                "%s: %d lines, %d failures%s", h->models[i].g.name, h->models[i].lines, h->models[i].g.failures,
                h->models[i].g.usable ? "" : " (not registered)");
    free(h);
}

/* The query side without idf.json: weight 1 for every distinct token that
 * is not special, which bert_tokenize_offsets lists independently. */
static void case_query_without_idf(sqlite3 *db)
{
    t_case("bert_sparse mode query: weight 1 per token without idf.json");
    const char *text = "The cat and the hat; the end.";
    char *got = t_query(db, "SELECT bert_sparse(?1, '{\"model\": \"mlm-tied-f32\", \"mode\": \"query\"}')", text,
                        NULL);
    char *want = t_query(db,
                         "SELECT json_group_object(token, 1.0) FROM (SELECT DISTINCT token, id FROM "
                         "bert_tokenize_offsets(?1, 'mlm-tied-f32') WHERE token NOT IN ('[CLS]', '[SEP]') "
                         "ORDER BY id)", text, NULL);
    T_CHECK(strcmp(got, want) == 0, "got %s, want %s", got, want);
    free(got);
    free(want);
}

static void case_errors(sqlite3 *db)
{
    t_case("bert_sparse: errors name the problem and the fix");
    t_expect(db, "SELECT bert_sparse(NULL, '{\"model\": \"mlm-tied-f32\"}')", NULL, "NULL");
    t_expect(db, "SELECT count(*) FROM bert_sparse_terms(NULL, '{\"model\": \"mlm-tied-f32\"}')", NULL, "0");
    t_expect(db, "SELECT bert_sparse('', '{\"model\": \"distil-mlm\", \"mode\": \"query\"}')", NULL, "{}");
    t_expect_error(db, "SELECT bert_sparse('x', '{\"model\": \"cls-3-f32\"}')", NULL, "no masked-language-model head",
                   "BertForMaskedLM", "sequence_classification", "\"mode\": \"query\"", NULL);
    t_expect_error(db, "SELECT * FROM bert_sparse_terms('x', '{\"model\": \"cls-3-f32\"}')", NULL,
                   "no masked-language-model head", NULL);
    t_expect_error(db, "SELECT bert_sparse('x', '{\"model\": \"mlm-tied-f32\", \"top_k\": 0}')", NULL, "top_k",
                   "at least 1", NULL);
    t_expect_error(db, "SELECT bert_sparse('x', '{\"top_k\": 2.5}')", NULL, "top_k", "integer", NULL);
    t_expect_error(db, "SELECT bert_sparse(NULL, '{\"min_weight\": -0.5}')", NULL, "min_weight", "at least 0", NULL);
    t_expect_error(db, "SELECT * FROM bert_sparse_terms('x', '{\"mode\": \"both\"}')", NULL, "mode", "\"query\"",
                   NULL);
    t_expect_error(db, "SELECT bert_sparse('x', '{\"topk\": 3}')", NULL, "unknown option \"topk\"", "\"top_k\"", NULL);
    t_expect_error(db, "SELECT bert_sparse('x', '[1]')", NULL, "JSON object", NULL);
    t_expect_error(db, "SELECT bert_sparse('x', '{')", NULL, "not valid JSON", NULL);
    t_expect_error(db, "SELECT bert_sparse('x', 5)", NULL, "options_json", "INTEGER", NULL);
    t_expect_error(db, "SELECT bert_sparse('x', '{\"model\": \"nope\"}')", NULL, "nope", "bert_load", NULL);
    t_expect_error(db, "SELECT bert_sparse('x', '{}', 1)", NULL, "bert_sparse(text [, options_json])", NULL);
    t_expect_error(db, "SELECT * FROM bert_sparse_terms()", NULL, "bert_sparse_terms(text [, options_json])", NULL);
}

void suite_sparse(void)
{
    sqlite3 *db = t_open();
    case_goldens(db);
    char *got = t_query(db, "SELECT bert_load('cls-3-f32', ?1)", MODELS_DIR "cls-3-f32", NULL);
    T_CHECK(strcmp(got, "cls-3-f32") == 0, "bert_load: %s", got);
    free(got);
    case_query_without_idf(db);
    case_errors(db);
    sqlite3_close(db);
}
