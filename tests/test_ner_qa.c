/*
 * test_ner_qa.c - token classification and question answering through SQL
 * (API.md, "Fine-tuned task heads"): bert_ner, bert_ner_each with all five
 * aggregations, bert_answer, bert_answer_each, their errors and bounds.
 *
 * The expected results are tests/golden/ner.jsonl and qa.jsonl, written by
 * tests/golden/make_ner_qa_goldens.py from the PyTorch reference's logits,
 * the Rust tokenizer's offsets and the token-classification and
 * question-answering pipelines' post-processing (re-implemented from the
 * transformers sources there), on the random-weight NER and QA models that
 * tests/tools/make_test_models.sh generates.  Entities, words, offsets and
 * answers must be identical, scores within 1e-4 (the goldens were checked to
 * be decided by clear gaps: float32 logits and noise of 1e-4 do not change
 * them).  substr(text, start + 1, end - start) must be the span each row
 * names, counted independently here.
 */
#include "test.h"
#include "golden_files.h"
#include "../ext/tasks/answers.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_MODELS 8

static const char *const aggregations[] = {"none", "simple", "first", "average", "max"};
#define N_AGG 5

typedef struct {
    golden_model g;   /* first: the scaffolding's */
    int is_ner;
    int lines, rows, substr_checked;
    double worst;
} span_model;

typedef struct {
    span_model models[MAX_MODELS];
    int n;
} span_models;

/* The code points [start, end) of a UTF-8 text, counted here (as Python
 * slices), malloc'd. */
static char *slice(const char *text, long long start, long long end)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t b = 0, from = 0, to = 0;
    long long c = 0;
    for (;; c++) {
        if (c == start) from = b;
        if (c == end) { to = b; break; }
        if (!s[b]) return NULL;
        b++;
        while ((s[b] & 0xC0) == 0x80) b++;
    }
    char *out = malloc(to - from + 1);
    if (!out) return NULL;
    memcpy(out, text + from, to - from);
    out[to - from] = 0;
    return out;
}

/* substr(text, start + 1, end - start) in SQL against the slice counted here. */
static int substr_is_span(sqlite3 *db, const char *text, long long start, long long end)
{
    char *want = slice(text, start, end);
    sqlite3_stmt *st = NULL;
    int ok = 0;
    if (want && sqlite3_prepare_v2(db, "SELECT substr(?1, ?2 + 1, ?3 - ?2)", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, start);
        sqlite3_bind_int64(st, 3, end);
        ok = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) &&
             strcmp((const char *)sqlite3_column_text(st, 0), want) == 0;
    }
    sqlite3_finalize(st);
    free(want);
    return ok;
}

/* ---- the models ------------------------------------------------------------------ */

static int exec_ok(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    T_CHECK(rc == SQLITE_OK, "%s: %s", sql, err ? err : "");
    sqlite3_free(err);
    return rc == SQLITE_OK;
}

/* Registers one model of the manifest (a NER model once per aggregation)
 * and checks the task bert_models announces for it. */
static void setup_model(void *ctx, const json_doc *d, int c, golden_model *gm, sqlite3 *db)
{
    (void)ctx;
    span_model *m = (span_model *)gm;
    m->is_ner = strcmp(t_member_str(d, c, "task"), "token_classification") == 0;
    if (!t_golden_model_matches(d, c)) return;
    /* A NER model once per aggregation, as name/aggregation. */
    m->g.usable = 1;
    for (int a = 0; a < (m->is_ner ? N_AGG : 1); a++) {
        char *sql = m->is_ner ? sqlite3_mprintf("SELECT bert_load('%q/%s', '" MODELS_DIR "%q', "
                                                "'{\"aggregation\": \"%s\"}')",
                                                m->g.name, aggregations[a], m->g.name, aggregations[a])
                              : sqlite3_mprintf("SELECT bert_load('%q', '" MODELS_DIR "%q')", m->g.name, m->g.name);
        m->g.usable &= sql && exec_ok(db, sql);
        sqlite3_free(sql);
    }
    /* bert_models announces the task before the weights are loaded. */
    char *sql = sqlite3_mprintf("SELECT task FROM bert_models WHERE name = '%q%s'", m->g.name,
                                m->is_ner ? "/simple" : "");
    char *task = sql ? t_query(db, sql, NULL) : NULL;
    T_CHECK(task && strcmp(task, t_member_str(d, c, "task")) == 0, "%s: bert_models task %s, want %s", m->g.name,
            task ? task : "NULL", t_member_str(d, c, "task"));
    free(task);
    sqlite3_free(sql);
}

static void load_models(span_models *h, sqlite3 *db)
{
    h->n = t_golden_models(GOLDEN_DIR "ner_qa_models.json", &h->models[0].g, MAX_MODELS, sizeof *h->models,
                           setup_model, h, db);
}

/* ---- token classification ----------------------------------------------------------- */

static void ner_line(void *ctx, golden_model *gm, const json_doc *d, sqlite3 *db)
{
    (void)ctx;
    span_model *m = (span_model *)gm;
    const char *text = t_member_str(d, 0, "text");
    int results = bert_json_member(d, 0, "results");
    for (int a = 0; a < N_AGG; a++) {
        char model[96], what[600];
        snprintf(model, sizeof model, "%s/%s", m->g.name, aggregations[a]);
        int want = bert_json_member(d, results, aggregations[a]);
        sqlite3_stmt *st = NULL;
        int ok = sqlite3_prepare_v2(db, "SELECT entity, score, word, start, \"end\", \"index\" "
                                        "FROM bert_ner_each(?1, ?2)", -1, &st, NULL) == SQLITE_OK;
        if (ok) {
            sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
            sqlite3_bind_text(st, 2, model, -1, SQLITE_TRANSIENT);
        }
        int w = d->nodes[want].first_child, rc = SQLITE_ROW, rows = 0;
        while (ok && (rc = sqlite3_step(st)) == SQLITE_ROW) {
            if (!t_golden_check(&m->g, w >= 0, "bert_ner_each gives more entities than the pipeline", text)) { ok = 0; break; }
            int f = d->nodes[w].first_child;           /* entity, score, word, start, end, index */
            const char *entity = bert_json_str(d, f, "");
            double score = bert_json_real(d, d->nodes[f].next_sibling, NAN);
            int wn = d->nodes[d->nodes[f].next_sibling].next_sibling;
            const char *word = bert_json_str(d, wn, "");
            long long start = bert_json_int(d, d->nodes[wn].next_sibling, -1);
            int en = d->nodes[d->nodes[wn].next_sibling].next_sibling;
            long long end = bert_json_int(d, en, -1);
            int in = d->nodes[en].next_sibling;
            int index_null = d->nodes[in].type == JSON_NULL;
            long long index = bert_json_int(d, in, -1);
            const char *g_entity = (const char *)sqlite3_column_text(st, 0);
            const char *g_word = (const char *)sqlite3_column_text(st, 2);
            double g_score = sqlite3_column_double(st, 1), diff = fabs(g_score - score);
            long long g_start = sqlite3_column_int64(st, 3), g_end = sqlite3_column_int64(st, 4);
            int g_index_null = sqlite3_column_type(st, 5) == SQLITE_NULL;
            long long g_index = sqlite3_column_int64(st, 5);
            if (!(diff <= m->worst)) m->worst = diff;
            snprintf(what, sizeof what, "%s entity %d: got %s %.7f \"%s\" %lld..%lld index %lld, "
                     "want %s %.7f \"%s\" %lld..%lld index %lld", aggregations[a], rows,
                     g_entity ? g_entity : "NULL", g_score, g_word ? g_word : "NULL", g_start, g_end,
                     g_index_null ? -1 : g_index, entity, score, word, start, end, index_null ? -1 : index);
            if (!t_golden_check(&m->g, g_entity && g_word && strcmp(g_entity, entity) == 0 && strcmp(g_word, word) == 0 &&
                              g_start == start && g_end == end && g_index_null == index_null &&
                              (index_null || g_index == index) && diff <= GOLDEN_TOL,
                       what, text)) {
                ok = 0;
                break;
            }
            if (t_golden_check(&m->g, substr_is_span(db, text, g_start, g_end), "substr(text, start + 1, end - start) is not "
                      "the entity's span", text))
                m->substr_checked++;
            rows++;
            w = d->nodes[w].next_sibling;
        }
        if (ok) {
            snprintf(what, sizeof what, "%s: bert_ner_each gave %d entities, the pipeline more (%s)",
                     aggregations[a], rows, rc == SQLITE_DONE ? "done" : sqlite3_errmsg(db));
            t_golden_check(&m->g, rc == SQLITE_DONE && w < 0, what, text);
        } else if (!st) {
            t_golden_check(&m->g, 0, sqlite3_errmsg(db), text);
        }
        sqlite3_finalize(st);
        m->rows += rows;

        /* bert_ner: the same list as JSON in the pipeline's shape. */
        char *sql = sqlite3_mprintf("SELECT json_array_length(?1) = %d "
                                    "AND (SELECT count(*) FROM json_each(?1) WHERE json_type(value, '$.%s') "
                                    "IS NOT NULL AND json_type(value, '$.word') = 'text') = json_array_length(?1) "
                                    "AND (json_array_length(?1) = 0 OR json_extract(?1, '$[0].index') %s)",
                                    rows, a == 0 ? "entity" : "entity_group", a == 0 ? "IS NOT NULL" : "IS NULL");
        char *json = NULL;
        if (sql) {
            char *q = sqlite3_mprintf("SELECT bert_ner(?1, '%q')", model);
            json = q ? t_query(db, q, text, NULL) : NULL;
            sqlite3_free(q);
        }
        char *same = json && strncmp(json, "ERROR", 5) != 0 ? t_query(db, sql, json, NULL) : NULL;
        snprintf(what, sizeof what, "%s: bert_ner's JSON (%.200s) is not the rows of bert_ner_each in the "
                 "pipeline's shape", aggregations[a], json ? json : "NULL");
        t_golden_check(&m->g, same && strcmp(same, "1") == 0, what, text);
        free(same);
        free(json);
        sqlite3_free(sql);
    }
    m->lines++;
}

/* ---- question answering ---------------------------------------------------------------- */

static void qa_line(void *ctx, golden_model *gm, const json_doc *d, sqlite3 *db)
{
    (void)ctx;
    span_model *m = (span_model *)gm;
    const char *question = t_member_str(d, 0, "question"), *context = t_member_str(d, 0, "context");
    static const int ks[] = {1, 3, 5};
    char what[700];
    for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++) {
        char key[8];
        snprintf(key, sizeof key, "top%d", ks[ki]);
        int want = bert_json_member(d, 0, key);
        sqlite3_stmt *st = NULL;
        int ok = sqlite3_prepare_v2(db, "SELECT rank, answer, score, start, \"end\" "
                                        "FROM bert_answer_each(?1, ?2, ?3, ?4)", -1, &st, NULL) == SQLITE_OK;
        if (ok) {
            sqlite3_bind_text(st, 1, question, -1, SQLITE_TRANSIENT);
            sqlite3_bind_text(st, 2, context, -1, SQLITE_TRANSIENT);
            sqlite3_bind_int(st, 3, ks[ki]);
            sqlite3_bind_text(st, 4, m->g.name, -1, SQLITE_TRANSIENT);
        }
        int w = d->nodes[want].first_child, rc = SQLITE_ROW, rows = 0;
        while (ok && (rc = sqlite3_step(st)) == SQLITE_ROW) {
            if (!t_golden_check(&m->g, w >= 0, "bert_answer_each gives more answers than the pipeline", question)) { ok = 0; break; }
            const char *answer = t_member_str(d, w, "answer");
            double score = bert_json_real(d, bert_json_member(d, w, "score"), NAN);
            long long start = bert_json_int(d, bert_json_member(d, w, "start"), -1), end = bert_json_int(d, bert_json_member(d, w, "end"), -1);
            const char *g_answer = (const char *)sqlite3_column_text(st, 1);
            double g_score = sqlite3_column_double(st, 2), diff = fabs(g_score - score);
            long long g_start = sqlite3_column_int64(st, 3), g_end = sqlite3_column_int64(st, 4);
            if (!(diff <= m->worst)) m->worst = diff;
            snprintf(what, sizeof what, "top_k %d, rank %d: got \"%s\" %.7f %lld..%lld, want \"%s\" %.7f %lld..%lld",
                     ks[ki], rows + 1, g_answer ? g_answer : "NULL", g_score, g_start, g_end, answer, score, start, end);
            if (!t_golden_check(&m->g, sqlite3_column_int(st, 0) == rows + 1 && g_answer && strcmp(g_answer, answer) == 0 &&
                              g_start == start && g_end == end && diff <= GOLDEN_TOL, what, question)) {
                ok = 0;
                break;
            }
            char *span = slice(context, g_start, g_end);
            if (t_golden_check(&m->g, span && strcmp(span, g_answer) == 0 && substr_is_span(db, context, g_start, g_end),
                      "the answer is not substr(context, start + 1, end - start)", question))
                m->substr_checked++;
            free(span);
            rows++;
            w = d->nodes[w].next_sibling;
        }
        if (ok) {
            snprintf(what, sizeof what, "top_k %d: bert_answer_each gave %d answers, the pipeline more (%s)", ks[ki],
                     rows, rc == SQLITE_DONE ? "done" : sqlite3_errmsg(db));
            t_golden_check(&m->g, rc == SQLITE_DONE && w < 0, what, question);
        } else if (!st) {
            t_golden_check(&m->g, 0, sqlite3_errmsg(db), question);
        }
        sqlite3_finalize(st);
        m->rows += rows;
        if (ks[ki] == 1) {
            /* bert_answer is the pipeline's top-1 answer as one JSON object. */
            int first = d->nodes[want].first_child;
            char *q = sqlite3_mprintf("SELECT json_extract(j, '$.answer') = ?3 AND json_extract(j, '$.start') = %lld "
                                      "AND json_extract(j, '$.end') = %lld AND abs(json_extract(j, '$.score') - %.9g) "
                                      "<= %g FROM (SELECT bert_answer(?1, ?2, '%q') AS j)",
                                      bert_json_int(d, bert_json_member(d, first, "start"), -1),
                                      bert_json_int(d, bert_json_member(d, first, "end"), -1),
                                      bert_json_real(d, bert_json_member(d, first, "score"), NAN), GOLDEN_TOL, m->g.name);
            char *got = q ? t_query(db, q, question, context, t_member_str(d, first, "answer"), NULL) : NULL;
            snprintf(what, sizeof what, "bert_answer is not the top answer: %s", got ? got : "NULL");
            t_golden_check(&m->g, got && strcmp(got, "1") == 0, what, question);
            free(got);
            sqlite3_free(q);
        }
    }
    m->lines++;
}

/* ---- what the goldens cannot show ------------------------------------------------------ */

static void errors(sqlite3 *db)
{
    t_case("bert_ner and bert_answer on a model without their head name the head and the model's task");
    t_expect(db, "SELECT bert_load('plain', '" MODELS_DIR "bert-plain-f32')", NULL, "plain");
    t_expect(db, "SELECT bert_load('cls', '" MODELS_DIR "cls-3-f32')", NULL, "cls");
    t_expect_error(db, "SELECT bert_ner('Paris', 'qa-f32')", NULL, "token-classification head",
                   "BertForTokenClassification", "task is question_answering", NULL);
    t_expect_error(db, "SELECT bert_ner('Paris', 'cls')", NULL, "token-classification head",
                   "task is sequence_classification", NULL);
    t_expect_error(db, "SELECT count(*) FROM bert_ner_each('Paris', 'plain')", NULL, "token-classification head",
                   "task is none", NULL);
    t_expect_error(db, "SELECT bert_answer('Where?', 'In Paris.', 'ner-conll-f32/simple')", NULL,
                   "question-answering head", "BertForQuestionAnswering", "task is token_classification", NULL);
    t_expect_error(db, "SELECT count(*) FROM bert_answer_each('Where?', 'In Paris.', 3, 'cls')", NULL,
                   "question-answering head", "task is sequence_classification", NULL);
    t_expect_error(db, "SELECT bert_classify('Paris', 'ner-distil/simple')", NULL, "sequence-classification head",
                   "task is token_classification", NULL);
    t_expect(db, "SELECT task || ' ' || labels FROM bert_models WHERE name = 'ner-short-f16/none'", NULL,
             "token_classification [\"O\",\"B-PER\",\"I-PER\",\"B-LOC\",\"I-LOC\",\"DATE\"]");
    t_expect(db, "SELECT task || ' ' || (labels IS NULL) FROM bert_models WHERE name = 'qa-distil'", NULL,
             "question_answering 1");

    t_case("NULL in gives NULL out or no rows; empty questions and contexts are errors");
    t_expect(db, "SELECT bert_ner(NULL, 'ner-conll-f32/simple')", NULL, "NULL");
    t_expect(db, "SELECT count(*) FROM bert_ner_each(NULL, 'ner-conll-f32/simple')", NULL, "0");
    t_expect(db, "SELECT bert_answer(NULL, 'In Paris.', 'qa-f32')", NULL, "NULL");
    t_expect(db, "SELECT bert_answer('Where?', NULL, 'qa-f32')", NULL, "NULL");
    t_expect(db, "SELECT count(*) FROM bert_answer_each('Where?', NULL, 3, 'qa-f32')", NULL, "0");
    t_expect(db, "SELECT bert_ner('', 'ner-conll-f32/simple')", NULL, "[]");
    t_expect_error(db, "SELECT bert_answer('', 'In Paris.', 'qa-f32')", NULL, "question", "non-empty", NULL);
    t_expect_error(db, "SELECT bert_answer('Where?', '', 'qa-f32')", NULL, "context", "non-empty", NULL);
    t_expect_error(db, "SELECT bert_answer('Where?', '   ', 'qa-f32')", NULL, "context", NULL);
    t_expect_error(db, "SELECT count(*) FROM bert_answer_each('Where?', 'In Paris.', 0, 'qa-f32')", NULL,
                   "top_k", NULL);
    t_expect_error(db, "SELECT bert_ner(x'00ff', 'ner-conll-f32/simple')", NULL, "TEXT", NULL);
    t_expect_error(db, "SELECT count(*) FROM bert_answer_each('Where?', 'In Paris.', 'qa-f32')", NULL, "top_k",
                   "model", NULL);
    t_expect_error(db, "SELECT bert_load('bad', '" MODELS_DIR "ner-distil', '{\"aggregation\": \"mean\"}')", NULL,
                   "aggregation", "\"first\"", NULL);

    t_case("a question that leaves no room for the context's windows is a clear error");
    {
        /* qa-short-bf16: windows of 96 tokens overlapping by 48; 80 pieces of
         * question leave 13 for the context, which needs several windows. */
        sqlite3_str *s = sqlite3_str_new(NULL);
        for (int i = 0; i < 80; i++) sqlite3_str_appendall(s, "why ");
        char *question = sqlite3_str_finish(s);
        t_expect_error(db, "SELECT bert_answer(?1, 'In Paris, the capital of France, on the river Seine, lives a man "
                           "who sells old books and maps to tourists from all over the world every day.', "
                           "'qa-short-bf16')", question, "question is too long", "shorten the question", NULL);
        sqlite3_free(question);
    }

    t_case("a 10 MB text or context stops at the bound with an error that says how to cut it");
    {
        size_t n = 10u << 20;
        char *big = malloc(n + 1);
        if (T_CHECK(big != NULL, "out of memory")) {
            for (size_t i = 0; i < n; i++) big[i] = "Paris is nice. "[i % 15];
            big[n] = 0;
            t_expect_error(db, "SELECT bert_ner(?1, 'ner-conll-f32/simple')", big, "more than 65536 word pieces",
                           "bert_chunks", NULL);
            t_expect_error(db, "SELECT bert_answer('Where?', ?1, 'qa-f32')", big, "context has more than 65536 "
                           "word pieces", "bert_chunks", NULL);
            free(big);
        }
    }

    t_case("entities after the first window of a text longer than max_length are found");
    {
        /* ner-short-f16 reads 62 pieces per window; "and then " is two, so
         * the first window ends at character 31 * 9 = 279. */
        sqlite3_str *s = sqlite3_str_new(NULL);
        for (int i = 0; i < 50; i++) sqlite3_str_appendall(s, "and then ");
        sqlite3_str_appendall(s, "Wolfgang Amadeus Mozart");
        char *text = sqlite3_str_finish(s);
        double last = t_query_double(db, "SELECT max(\"end\") FROM bert_ner_each(?1, 'ner-short-f16/simple')", text,
                                     NULL);
        T_CHECK(last > 279, "the last entity ends at %g: nothing was found after the first window", last);
        sqlite3_free(text);
    }
}

/* A token classifier whose config.json names fewer labels than its weights
 * hold must not load: the error names the tensor and both shapes. */
static void shape_mismatch(sqlite3 *db)
{
    t_case("a token-classification head that disagrees with config.json is a clear load error");
    t_head_shape_mismatch(db, "ner-short-f16", "\"5\": \"DATE\"", "SELECT bert_ner('a', bert_load('mismatch', '%s'))",
                          "classifier.weight", "[6, 96]", "5 labels", NULL);
}

/* ---- SQuAD 2.0's decision (answers.h's bert_qa_v2_*) against utils_qa.py ---- */

typedef struct {
    int lines, answered, unanswered, failures;
} v2_tally;

static void v2_line(void *ctx, const json_doc *d, sqlite3 *db)
{
    (void)db;
    v2_tally *t = ctx;
    const char *context = t_member_str(d, 0, "context"), *want = t_member_str(d, 0, "prediction");
    int windows = bert_json_member(d, 0, "windows");
    qa_v2 v = {0};
    int ok = 1;
    for (int w = d->nodes[windows].first_child; ok && w >= 0; w = d->nodes[w].next_sibling) {
        int sn = bert_json_member(d, w, "start"), en = bert_json_member(d, w, "end");
        int pn = bert_json_member(d, w, "pieces");
        int n = bert_json_length(d, sn), n_ctx = bert_json_length(d, pn);
        float *start = malloc((size_t)n * sizeof *start), *end = malloc((size_t)n * sizeof *end);
        qa_piece *pieces = calloc((size_t)n_ctx + 1, sizeof *pieces);
        ok = start && end && pieces;
        for (int i = 0; ok && i < n; i++) {
            start[i] = (float)bert_json_real(d, t_json_child(d, sn, i), NAN);
            end[i] = (float)bert_json_real(d, t_json_child(d, en, i), NAN);
        }
        for (int i = 0; ok && i < n_ctx; i++) {
            int p = t_json_child(d, pn, i);
            pieces[i].start = bert_json_int(d, t_json_child(d, p, 0), 0);
            pieces[i].end = bert_json_int(d, t_json_child(d, p, 1), 0);
            pieces[i].byte_start = (size_t)pieces[i].start;   /* ASCII contexts */
            pieces[i].byte_end = (size_t)pieces[i].end;
            pieces[i].word = i;
        }
        if (ok)
            ok = bert_qa_v2_window(start, end, n, (int)bert_json_int(d, bert_json_member(d, w, "ctx_first"), 0), pieces,
                                   n_ctx, &v) == 0;
        free(start);
        free(end);
        free(pieces);
    }
    size_t b0 = 0, b1 = 0;
    int got = ok ? bert_qa_v2_decide(&v, 0.0, &b0, &b1) : -1;
    bert_qa_v2_free(&v);
    char pred[512] = "";
    if (got == 1) snprintf(pred, sizeof pred, "%.*s", (int)(b1 - b0), context + b0);
    if (got == 2) snprintf(pred, sizeof pred, "empty");
    t->lines++;
    if (*want) t->answered++;
    else t->unanswered++;
    if (got < 0 || strcmp(pred, want) != 0) {
        if (t->failures++ < 5)
            T_CHECK(0, "example %d: \"%s\", utils_qa.py's \"%s\" (context \"%s\")", t->lines, pred, want, context);
    }
}

static void squad_v2_decision(void)
{
    t_case("SQuAD 2.0's answer or no answer as utils_qa.py decides it (tests/golden/qa_v2.jsonl)");
    v2_tally t = {0};
    t_each_golden_line(GOLDEN_DIR "qa_v2.jsonl", v2_line, &t, NULL);
    T_CHECK(t.failures == 0 && t.answered > 0 && t.unanswered > 0,
            "%d of %d examples differ (%d answered, %d not, by utils_qa.py)", t.failures, t.lines, t.answered,
            t.unanswered);
}

void suite_ner_qa(void)
{
    squad_v2_decision();
    static span_models h;
    memset(&h, 0, sizeof h);
    sqlite3 *db = t_open();
    t_case("the NER and QA models of the goldens load, and bert_models names their task");
    load_models(&h, db);
    int usable = 0;
    for (int i = 0; i < h.n; i++) usable += h.models[i].g.usable;
    if (usable == 0) {
        t_skip("no golden NER/QA model could be loaded");
        sqlite3_close(db);
        return;
    }
    for (int i = 0; i < h.n; i++) {
        span_model *m = &h.models[i];
        if (!m->g.usable) continue;
        char name[200];
        snprintf(name, sizeof name, "%s: %s identical to the pipeline's, scores within 1e-4", m->g.name,
                 m->is_ner ? "bert_ner(_each) entities, words and offsets for all five aggregations"
                           : "bert_answer(_each) answers and offsets for top_k 1, 3 and 5");
        t_case(name);
        m->g.failures = 0;
        m->worst = 0;
        /* One model at a time, so a failure is reported under its case. */
        span_models one = {.n = 1};
        one.models[0] = *m;
        each_model_line(m->is_ner ? GOLDEN_DIR "ner.jsonl" : GOLDEN_DIR "qa.jsonl", m->is_ner ? ner_line : qa_line, &one, db);
        *m = one.models[0];
        T_CHECK(m->lines > 0 && m->rows > 0, "%s: no golden line was compared", m->g.name);
        T_CHECK(m->substr_checked == m->rows, "%s: substr checked on %d of %d rows", m->g.name, m->substr_checked,
                m->rows);
        if (getenv("BERT_TEST_VERBOSE"))
            fprintf(stderr, "  %s: %d lines, %d rows, worst score difference %.2e\n", m->g.name, m->lines, m->rows,
                    m->worst);
    }
    errors(db);
    shape_mismatch(db);
    sqlite3_close(db);
}
