/*
 * functions.c - the scalar SQL functions.  The table-valued ones live in
 * tables.c, the entry point that registers both in extension.c.
 *
 * Every function takes the model name as its LAST, optional argument; NULL
 * in a text argument gives NULL; every failure is an SQL error whose message
 * names the problem and the fix.
 */
#include "connection.h"
#include "register.h"
#include "sqlite_bert.h"

#include "../base/buffer.h"
#include "../base/error.h"
#include "../tasks/pipeline.h"
#include "../tasks/vectors.h"
#include "call_options.h"
#include "signatures.h"
#include "sparse_glue.h"
#include "zero_shot_glue.h"
#include "../tasks/token_vectors.h"
#include "vector_functions.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SQLITE_RESULT_SUBTYPE
#define RESULT_SUBTYPE_FLAG SQLITE_RESULT_SUBTYPE
#else
#define RESULT_SUBTYPE_FLAG 0
#endif


static void *interrupt_ctx(sqlite3_context *ctx)
{
    return sqlite3_context_db_handle(ctx);
}

static void fail(sqlite3_context *ctx, char *msg)
{
    bert_glue_fail(ctx, msg);
}


/* Text of argument `i` of `fn`.  Returns 0 (then *text is NULL for an SQL
 * NULL, and the caller returns NULL) or -1 after reporting an error. */
static int text_arg(sqlite3_context *ctx, const char *fn, sqlite3_value **argv, int i,
                    const char **text, size_t *len)
{
    char *err = NULL;
    if (bert_glue_text(argv[i], fn, i, text, len, &err) >= 0) return 0;
    fail(ctx, err);
    return -1;
}

/* The model for a call of fn whose model argument, if any, is argv[model_arg]. */
static bert_entry *model_arg(sqlite3_context *ctx, const char *fn, int argc, sqlite3_value **argv, int model_arg)
{
    bert_connection *c = sqlite3_user_data(ctx);
    char *err = NULL;
    bert_entry *e = bert_glue_find_model(c, argc > model_arg ? argv[model_arg] : NULL, fn, model_arg, &err);
    if (!e) fail(ctx, err);
    return e;
}

/* The text of argv[0] and the model of argv[1] of fn(text [, model]); NULL
 * when the call has its result already: NULL for a NULL text, or an error. */
static bert_entry *text_and_model(sqlite3_context *ctx, const char *fn, int argc, sqlite3_value **argv,
                                  const char **text, size_t *len)
{
    if (text_arg(ctx, fn, argv, 0, text, len) != 0) return NULL;
    if (!*text) {
        sqlite3_result_null(ctx);
        return NULL;
    }
    return model_arg(ctx, fn, argc, argv, 1);
}


/* Hands a finished sqlite3_str to the result as JSON text. */
static void result_json(sqlite3_context *ctx, sqlite3_str *s)
{
    int rc = sqlite3_str_errcode(s);
    int n = sqlite3_str_length(s);
    char *text = sqlite3_str_finish(s);
    if (rc != SQLITE_OK || !text) {
        sqlite3_free(text);
        sqlite3_result_error_nomem(ctx);
        return;
    }
    sqlite3_result_text(ctx, text, n, sqlite3_free);
    sqlite3_result_subtype(ctx, BERT_SUBTYPE_JSON);
}

/* ---- registry ---------------------------------------------------------- */

static void fn_load(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    bert_connection *c = sqlite3_user_data(ctx);
    const char *args[3] = {NULL, NULL, NULL};
    size_t len;
    char *err = NULL;
    for (int i = 0; i < argc; i++) {
        int got = bert_glue_text(argv[i], "bert_load", i, &args[i], &len, &err);
        /* A NULL options argument means none; a NULL name or path registers nothing. */
        if (got == 1 && i < 2) err = bert_glue_not_text("bert_load", i, SQLITE_NULL);
        if (got < 0 || (got == 1 && i < 2)) { fail(ctx, err); return; }
    }
    bert_options opts;
    if (bert_options_parse(args[2], &opts, &err) != 0 || bert_registry_add(&c->registry, args[0], args[1], &opts, &err) != 0) {
        fail(ctx, err);
        return;
    }
    sqlite3_result_text(ctx, args[0], -1, SQLITE_TRANSIENT);
}

static void fn_unload(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    bert_connection *c = sqlite3_user_data(ctx);
    const char *name;
    size_t len;
    char *err = NULL;
    int got = bert_glue_text(argv[0], "bert_unload", 0, &name, &len, &err);
    if (got == 1) err = bert_glue_not_text("bert_unload", 0, SQLITE_NULL);
    if (got != 0) { fail(ctx, err); return; }
    int rc = bert_registry_remove(&c->registry, name, &err);
    free(err);
    sqlite3_result_int(ctx, rc == 0);
}

/* ---- tokenizer ----------------------------------------------------------- */

static void tokenize_common(sqlite3_context *ctx, int argc, sqlite3_value **argv, int as_ids)
{
    const char *fn = as_ids ? "bert_token_ids" : "bert_tokenize";
    const char *text;
    size_t len;
    bert_entry *e = text_and_model(ctx, fn, argc, argv, &text, &len);
    if (!e) return;
    bert_ids ids = {0};
    char *err = NULL;
    if (bert_pipeline_tokenize(e, text, len, 1, &ids, &err) != 0) {
        bert_ids_free(&ids);
        fail(ctx, err);
        return;
    }
    sqlite3_str *s = sqlite3_str_new(sqlite3_context_db_handle(ctx));
    sqlite3_str_appendchar(s, 1, '[');
    for (size_t i = 0; i < ids.len; i++) {
        if (i) sqlite3_str_appendchar(s, 1, ',');
        if (as_ids) sqlite3_str_appendf(s, "%d", (int)ids.ids[i]);
        else bert_glue_json_string(s, bert_entry_token(e, ids.ids[i]));
    }
    sqlite3_str_appendchar(s, 1, ']');
    bert_ids_free(&ids);
    result_json(ctx, s);
}

static void fn_tokenize(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    tokenize_common(ctx, argc, argv, 0);
}

static void fn_token_ids(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    tokenize_common(ctx, argc, argv, 1);
}

/* ---- embeddings ------------------------------------------------------------ */

/* bert_embed(text [, model | options_json]): options "model", "dimensions". */
static void fn_embed(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    const char *text;
    size_t len;
    if (text_arg(ctx, "bert_embed", argv, 0, &text, &len) != 0) return;
    if (!text) { sqlite3_result_null(ctx); return; }
    bert_call_options opts;
    char *err = NULL;
    if (bert_glue_call_options(sqlite3_user_data(ctx), argc > 1 ? argv[1] : NULL, "bert_embed", 1,
                               BERT_OPTION_DIMENSIONS, &opts, &err) != 0) {
        fail(ctx, err);
        return;
    }
    bert_entry *e = opts.model;
    /* The size is known only once the config is read, which registration did. */
    int hidden = bert_entry_hidden_size(e);
    float *vec = sqlite3_malloc64((size_t)hidden * sizeof(float));
    if (!vec) { sqlite3_result_error_nomem(ctx); return; }
    if (bert_pipeline_embed(e, text, len, vec, bert_glue_interrupt_fn(), interrupt_ctx(ctx), &err) != 0) {
        sqlite3_free(vec);
        fail(ctx, err);
        return;
    }
    int dims = opts.dimensions ? opts.dimensions : hidden;
    if (opts.dimensions) bert_embedding_shorten(e, vec, dims);
    sqlite3_result_blob(ctx, vec, dims * (int)sizeof(float), sqlite3_free);
    sqlite3_result_subtype(ctx, BERT_SUBTYPE_FLOAT32);
}

/* One side of bert_similarity, as float32 values. */
typedef struct {
    const float *values;
    int dim;
    void *owned;             /* to free (or, when cache is set, to hand to SQLite) */
    int cache;               /* owned is a query_vector to keep as auxdata */
} vector_side;

/* A TEXT argument's embedding, kept with sqlite3_set_auxdata while the
 * argument is constant, so that `bert_similarity(embedding, 'query')` embeds
 * the query once per statement, not once per row. */
typedef struct {
    unsigned long serial;    /* the registration (registry serial) it was computed with */
    int dim;
    float values[];
} query_vector;

/* Reads argument `argn` (1-based) of bert_similarity: a float32 BLOB as is,
 * or TEXT embedded with the call's model.  0, or -1 after reporting an error. */
static int vector_arg(sqlite3_context *ctx, int argc, sqlite3_value **argv, int argn,
                      bert_entry **model, vector_side *out)
{
    memset(out, 0, sizeof *out);
    sqlite3_value *v = argv[argn - 1];
    if (sqlite3_value_type(v) == SQLITE_BLOB) {
        int bytes = sqlite3_value_bytes(v);
        const void *blob = sqlite3_value_blob(v);
        if (bytes == 0 || bytes % 4 != 0) {
            fail(ctx, bert_errorf("bert_similarity: argument %d is a BLOB of %d bytes, not a float32 "
                                  "vector (a multiple of 4 bytes, as bert_embed returns)", argn, bytes));
            return -1;
        }
        if (!blob) { sqlite3_result_error_nomem(ctx); return -1; }
        out->dim = bytes / 4;
        if ((uintptr_t)blob % _Alignof(float) == 0) {
            out->values = blob;
            return 0;
        }
        /* A BLOB's bytes need not be aligned for float. */
        float *copy = malloc((size_t)bytes);
        if (!copy) { sqlite3_result_error_nomem(ctx); return -1; }
        memcpy(copy, blob, (size_t)bytes);
        out->values = out->owned = copy;
        return 0;
    }
    if (sqlite3_value_type(v) != SQLITE_TEXT) {
        fail(ctx, bert_glue_argument_error("bert_similarity", argn - 1,
                                           "must be TEXT (to embed) or a float32 BLOB (as bert_embed returns)"));
        return -1;
    }
    if (!*model && !(*model = model_arg(ctx, "bert_similarity", argc, argv, 2))) return -1;
    query_vector *kept = sqlite3_get_auxdata(ctx, argn - 1);
    if (kept && kept->serial == bert_entry_serial(*model)) {
        out->values = kept->values;
        out->dim = kept->dim;
        return 0;
    }
    const char *text = (const char *)sqlite3_value_text(v);
    if (!text) { sqlite3_result_error_nomem(ctx); return -1; }
    int dim = bert_entry_hidden_size(*model);
    query_vector *q = sqlite3_malloc64(sizeof *q + (size_t)dim * sizeof(float));
    if (!q) { sqlite3_result_error_nomem(ctx); return -1; }
    q->serial = bert_entry_serial(*model);
    q->dim = dim;
    char *err = NULL;
    if (bert_pipeline_embed(*model, text, (size_t)sqlite3_value_bytes(v), q->values, bert_glue_interrupt_fn(),
                       interrupt_ctx(ctx), &err) != 0) {
        sqlite3_free(q);
        fail(ctx, err);
        return -1;
    }
    out->values = q->values;
    out->dim = dim;
    out->owned = q;
    out->cache = 1;
    return 0;
}

/* Frees a side, or hands its fresh query vector to SQLite to keep: last,
 * because SQLite may free it at once. */
static void vector_side_done(sqlite3_context *ctx, int argn, vector_side *side)
{
    if (side->cache) sqlite3_set_auxdata(ctx, argn - 1, side->owned, sqlite3_free);
    else free(side->owned);
}

static void fn_similarity(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL) {
        sqlite3_result_null(ctx);
        return;
    }
    bert_entry *model = NULL;
    vector_side a, b;
    memset(&b, 0, sizeof b);
    if (vector_arg(ctx, argc, argv, 1, &model, &a) == 0 && vector_arg(ctx, argc, argv, 2, &model, &b) == 0) {
        if (a.dim != b.dim) {
            fail(ctx, bert_errorf("bert_similarity: the vectors have %d and %d dimensions: compare "
                                  "embeddings of the same model", a.dim, b.dim));
        } else {
            double dot = 0, na = 0, nb = 0;
            for (int i = 0; i < a.dim; i++) {
                dot += (double)a.values[i] * b.values[i];
                na += (double)a.values[i] * a.values[i];
                nb += (double)b.values[i] * b.values[i];
            }
            if (na == 0 || nb == 0) sqlite3_result_null(ctx);
            else sqlite3_result_double(ctx, dot / (sqrt(na) * sqrt(nb)));
        }
    }
    vector_side_done(ctx, 1, &a);
    vector_side_done(ctx, 2, &b);
}

static void fn_vector_to_json(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    int t = sqlite3_value_type(argv[0]);
    if (t == SQLITE_NULL) { sqlite3_result_null(ctx); return; }
    int bytes = sqlite3_value_bytes(argv[0]);
    if (t != SQLITE_BLOB || bytes % 4 != 0) {
        fail(ctx, bert_errorf("bert_vector_to_json: the argument must be a float32 BLOB (a multiple "
                              "of 4 bytes, as bert_embed returns), not %s of %d bytes", bert_glue_type_name(t), bytes));
        return;
    }
    const unsigned char *p = sqlite3_value_blob(argv[0]);
    sqlite3_str *s = sqlite3_str_new(sqlite3_context_db_handle(ctx));
    sqlite3_str_appendchar(s, 1, '[');
    for (int i = 0; i < bytes / 4; i++) {
        float f;
        memcpy(&f, p + 4 * i, 4);
        if (i) sqlite3_str_appendchar(s, 1, ',');
        if (isfinite(f)) sqlite3_str_appendf(s, "%!.9g", (double)f);
        else sqlite3_str_appendall(s, "null");
    }
    sqlite3_str_appendchar(s, 1, ']');
    result_json(ctx, s);
}

/* ---- pre-training heads ------------------------------------------------------ */


static void fill_mask_json(sqlite3_str *s, const fill_mask_result *r)
{
    if (r->n_masks > 1) sqlite3_str_appendchar(s, 1, '[');
    for (int m = 0; m < r->n_masks; m++) {
        if (m) sqlite3_str_appendchar(s, 1, ',');
        sqlite3_str_appendchar(s, 1, '[');
        for (int k = 0; k < r->top_k; k++) {
            const fill_mask_candidate *c = &r->items[m * r->top_k + k];
            if (k) sqlite3_str_appendchar(s, 1, ',');
            sqlite3_str_appendf(s, "{\"score\":%!.8g,\"token\":%d,\"token_str\":", c->score, (int)c->token);
            bert_glue_json_string(s, c->token_str);
            sqlite3_str_appendall(s, ",\"sequence\":");
            bert_glue_json_string(s, c->sequence);
            sqlite3_str_appendchar(s, 1, '}');
        }
        sqlite3_str_appendchar(s, 1, ']');
    }
    if (r->n_masks > 1) sqlite3_str_appendchar(s, 1, ']');
}

static void fn_fill_mask(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    const char *text;
    size_t len;
    int top_k;
    char *err = NULL;
    if (text_arg(ctx, "bert_fill_mask", argv, 0, &text, &len) != 0) return;
    if (bert_glue_top_k(argc > 1 ? argv[1] : NULL, argc == 2, "bert_fill_mask", "text", &top_k, &err) != 0) { fail(ctx, err); return; }
    if (!text) { sqlite3_result_null(ctx); return; }
    bert_entry *e = model_arg(ctx, "bert_fill_mask", argc, argv, 2);
    if (!e) return;
    fill_mask_result r;
    if (bert_pipeline_fill_mask(e, text, len, top_k, &r, bert_glue_interrupt_fn(), interrupt_ctx(ctx), &err) != 0) {
        fail(ctx, err);
        return;
    }
    sqlite3_str *s = sqlite3_str_new(sqlite3_context_db_handle(ctx));
    fill_mask_json(s, &r);
    bert_fill_mask_result_free(&r);
    result_json(ctx, s);
}

/* bert_next_sentence(a, b [, model]) and bert_rerank(query, document
 * [, model]): a REAL for a pair of texts. */
typedef int (*pair_score_fn)(bert_entry *e, const char *a, size_t alen, const char *b, size_t blen, double *score,
                             bert_interrupt_fn interrupted, void *ctx, char **err);

static void pair_score(sqlite3_context *ctx, const char *fn, int argc, sqlite3_value **argv, pair_score_fn score)
{
    const char *a, *b;
    size_t alen, blen;
    if (text_arg(ctx, fn, argv, 0, &a, &alen) != 0 || text_arg(ctx, fn, argv, 1, &b, &blen) != 0) return;
    if (!a || !b) { sqlite3_result_null(ctx); return; }
    bert_entry *e = model_arg(ctx, fn, argc, argv, 2);
    if (!e) return;
    double result;
    char *err = NULL;
    if (score(e, a, alen, b, blen, &result, bert_glue_interrupt_fn(), interrupt_ctx(ctx), &err) != 0) {
        fail(ctx, err);
        return;
    }
    sqlite3_result_double(ctx, result);
}

static void fn_next_sentence(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    pair_score(ctx, "bert_next_sentence", argc, argv, bert_pipeline_next_sentence);
}

/* ---- fine-tuned task heads ------------------------------------------------------ */

/* bert_classify(text [, model]), bert_classify_pair(text, pair [, model]) and
 * bert_label(text [, model]) share this: the scores of every label. */
static int classify_common(sqlite3_context *ctx, const char *fn, int argc, sqlite3_value **argv, int pair,
                           classify_result *r)
{
    const char *text, *second = NULL;
    size_t len, second_len = 0;
    if (text_arg(ctx, fn, argv, 0, &text, &len) != 0) return -1;
    if (pair && text_arg(ctx, fn, argv, 1, &second, &second_len) != 0) return -1;
    if (!text || (pair && !second)) { sqlite3_result_null(ctx); return -1; }
    bert_entry *e = model_arg(ctx, fn, argc, argv, pair ? 2 : 1);
    if (!e) return -1;
    char *err = NULL;
    if (bert_pipeline_classify(e, text, len, second, second_len, r, bert_glue_interrupt_fn(), interrupt_ctx(ctx), &err) != 0) {
        fail(ctx, err);
        return -1;
    }
    return 0;
}

static void classify_json(sqlite3_context *ctx, const classify_result *r)
{
    sqlite3_str *s = sqlite3_str_new(sqlite3_context_db_handle(ctx));
    sqlite3_str_appendchar(s, 1, '[');
    for (int i = 0; i < r->n; i++) {
        int label = r->order[i];
        if (i) sqlite3_str_appendchar(s, 1, ',');
        sqlite3_str_appendall(s, "{\"label\":");
        bert_glue_json_string(s, r->labels[label]);
        sqlite3_str_appendf(s, ",\"score\":%!.9g}", r->scores[label]);
    }
    sqlite3_str_appendchar(s, 1, ']');
    result_json(ctx, s);
}

static void fn_classify(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    classify_result r;
    if (classify_common(ctx, "bert_classify", argc, argv, 0, &r) != 0) return;
    classify_json(ctx, &r);
    bert_classify_result_free(&r);
}

static void fn_classify_pair(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    classify_result r;
    if (classify_common(ctx, "bert_classify_pair", argc, argv, 1, &r) != 0) return;
    classify_json(ctx, &r);
    bert_classify_result_free(&r);
}

static void fn_label(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    classify_result r;
    if (classify_common(ctx, "bert_label", argc, argv, 0, &r) != 0) return;
    sqlite3_result_text(ctx, r.labels[r.order[0]], -1, SQLITE_TRANSIENT);
    bert_classify_result_free(&r);
}

static void fn_rerank(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    pair_score(ctx, "bert_rerank", argc, argv, bert_pipeline_rerank);
}

/* bert_ner(text [, model]): the token-classification pipeline's list, in its
 * shape: "none" gives entity, score, index, word, start, end per piece, the
 * other aggregations entity_group, score, word, start, end per entity. */
static void fn_ner(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    const char *text;
    size_t len;
    bert_entry *e = text_and_model(ctx, "bert_ner", argc, argv, &text, &len);
    if (!e) return;
    ner_entities r;
    char *err = NULL;
    if (bert_pipeline_ner(e, text, len, &r, bert_glue_interrupt_fn(), interrupt_ctx(ctx), &err) != 0) {
        fail(ctx, err);
        return;
    }
    int grouped = r.aggregation != BERT_AGG_NONE;
    sqlite3_str *s = sqlite3_str_new(sqlite3_context_db_handle(ctx));
    sqlite3_str_appendchar(s, 1, '[');
    for (size_t i = 0; i < r.n; i++) {
        const ner_entity *x = &r.items[i];
        sqlite3_str_appendall(s, i ? ",{" : "{");
        sqlite3_str_appendall(s, grouped ? "\"entity_group\":" : "\"entity\":");
        bert_glue_json_string(s, x->entity);
        sqlite3_str_appendf(s, ",\"score\":%!.9g", x->score);
        if (!grouped) sqlite3_str_appendf(s, ",\"index\":%d", x->index);
        sqlite3_str_appendall(s, ",\"word\":");
        bert_glue_json_string(s, x->word);
        sqlite3_str_appendf(s, ",\"start\":%lld,\"end\":%lld}", (long long)x->start, (long long)x->end);
    }
    sqlite3_str_appendchar(s, 1, ']');
    bert_ner_entities_free(&r);
    result_json(ctx, s);
}

/* bert_answer(question, context [, model]): the question-answering
 * pipeline's best answer, {"score", "start", "end", "answer"}. */
static void fn_answer(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    const char *question, *context;
    size_t qlen, clen;
    if (text_arg(ctx, "bert_answer", argv, 0, &question, &qlen) != 0 ||
        text_arg(ctx, "bert_answer", argv, 1, &context, &clen) != 0) return;
    if (!question || !context) { sqlite3_result_null(ctx); return; }
    bert_entry *e = model_arg(ctx, "bert_answer", argc, argv, 2);
    if (!e) return;
    qa_answers r;
    char *err = NULL;
    if (bert_pipeline_answer(e, question, qlen, context, clen, 1, &r, bert_glue_interrupt_fn(), interrupt_ctx(ctx), &err) != 0) {
        fail(ctx, err);
        return;
    }
    if (r.n == 0) { bert_qa_answers_free(&r); sqlite3_result_null(ctx); return; }
    const qa_answer *a = &r.items[0];
    char *answer = bert_strndup(context + a->byte_start, a->byte_end - a->byte_start);
    if (!answer) { bert_qa_answers_free(&r); sqlite3_result_error_nomem(ctx); return; }
    sqlite3_str *s = sqlite3_str_new(sqlite3_context_db_handle(ctx));
    sqlite3_str_appendf(s, "{\"score\":%!.9g,\"start\":%lld,\"end\":%lld,\"answer\":", a->score,
                        (long long)a->start, (long long)a->end);
    bert_glue_json_string(s, answer);
    sqlite3_str_appendchar(s, 1, '}');
    free(answer);
    bert_qa_answers_free(&r);
    result_json(ctx, s);
}

static void fn_version(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc; (void)argv;
    sqlite3_result_text(ctx, SQLITE_BERT_VERSION, -1, SQLITE_STATIC);
}

/* ---- learned sparse vectors ------------------------------------------------------ */

/* bert_sparse(text [, options_json]): {token: weight}, heaviest first. */
static void fn_sparse(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    const char *text;
    size_t len;
    if (text_arg(ctx, "bert_sparse", argv, 0, &text, &len) != 0) return;
    bert_sparse_terms t;
    char *err = NULL;
    int got = bert_glue_sparse(sqlite3_user_data(ctx), "bert_sparse", text, len, argc > 1 ? argv[1] : NULL,
                               sqlite3_context_db_handle(ctx), &t, &err);
    if (got < 0) { fail(ctx, err); return; }
    if (got > 0) { sqlite3_result_null(ctx); return; }
    sqlite3_str *s = sqlite3_str_new(sqlite3_context_db_handle(ctx));
    sqlite3_str_appendchar(s, 1, '{');
    for (int i = 0; i < t.n; i++) {
        if (i) sqlite3_str_appendchar(s, 1, ',');
        bert_glue_json_string(s, t.terms[i].token);
        sqlite3_str_appendf(s, ":%!.7g", (double)t.terms[i].weight);
    }
    sqlite3_str_appendchar(s, 1, '}');
    bert_sparse_terms_free(&t);
    result_json(ctx, s);
}

/* ---- zero-shot classification ------------------------------------------------- */

/* bert_zero_shot(text, labels_json [, options_json]): [{label, score}], best first. */
static void fn_zero_shot(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    const char *text;
    size_t len;
    if (text_arg(ctx, "bert_zero_shot", argv, 0, &text, &len) != 0) return;
    bert_zero_shot_request req;
    bert_zero_shot_result r;
    char *err = NULL;
    int got = bert_glue_zero_shot(sqlite3_user_data(ctx), "bert_zero_shot", text, len, argv[1],
                                  argc > 2 ? argv[2] : NULL, sqlite3_context_db_handle(ctx), &req, &r, &err);
    if (got < 0) {
        fail(ctx, err);
    } else if (got > 0) {
        sqlite3_result_null(ctx);
    } else {
        sqlite3_str *s = sqlite3_str_new(sqlite3_context_db_handle(ctx));
        sqlite3_str_appendchar(s, 1, '[');
        for (int i = 0; i < r.n; i++) {
            if (i) sqlite3_str_appendchar(s, 1, ',');
            sqlite3_str_appendall(s, "{\"label\":");
            bert_glue_json_string(s, req.labels[r.order[i]]);
            sqlite3_str_appendf(s, ",\"score\":%!.9g}", r.scores[r.order[i]]);
        }
        sqlite3_str_appendchar(s, 1, ']');
        result_json(ctx, s);
    }
    bert_zero_shot_result_free(&r);
    bert_zero_shot_request_free(&req);
}

/* ---- late interaction ------------------------------------------------------------ */

/* bert_token_vectors(text, 'query' | 'document' [, options_json]): a
 * token-vectors BLOB (tasks/vectors.h). */
static void fn_token_vectors(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    static const char fn[] = "bert_token_vectors";
    const char *text, *side;
    size_t len, side_len;
    if (text_arg(ctx, fn, argv, 0, &text, &len) != 0 || text_arg(ctx, fn, argv, 1, &side, &side_len) != 0) return;
    int query = side && strcmp(side, "query") == 0;
    if (!side || (!query && strcmp(side, "document") != 0)) {
        fail(ctx, bert_glue_argument_error(fn, 1, "must be 'query' or 'document': ColBERT encodes the two sides "
                                                  "differently (prefix, [MASK] expansion, skiplist)"));
        return;
    }
    if (!text) { sqlite3_result_null(ctx); return; }
    bert_call_options opts;
    char *err = NULL;
    if (bert_glue_call_options(sqlite3_user_data(ctx), argc > 2 ? argv[2] : NULL, fn, 2, BERT_OPTION_MODEL_ONLY,
                               &opts, &err) != 0) {
        fail(ctx, err);
        return;
    }
    unsigned char *blob;
    size_t bytes;
    if (bert_pipeline_token_vectors(opts.model, text, len, query ? BERT_TOKENS_QUERY : BERT_TOKENS_DOCUMENT, &blob,
                                    &bytes, bert_glue_interrupt_fn(), interrupt_ctx(ctx), &err) != 0) {
        fail(ctx, err);
        return;
    }
    sqlite3_result_blob64(ctx, blob, bytes, free);
}

/* ---- registration -------------------------------------------------------------- */

/* A call with a number of arguments the function does not take: SQLite
 * prefers a registration of the exact count, so this one (registered for
 * any count) runs only for the wrong ones.  Its user data is the signature. */
static void fn_wrong_count(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argv;
    fail(ctx, bert_signature_count_error(sqlite3_user_data(ctx), argc));
}

typedef struct {
    const char *name;        /* its signature (signatures.c) gives the argument counts */
    int flags;
    void (*fn)(sqlite3_context *, int, sqlite3_value **);
} function_def;

#define PURE (SQLITE_UTF8 | SQLITE_DETERMINISTIC)

static const function_def functions[] = {
    {"bert_version", PURE | SQLITE_INNOCUOUS, fn_version},
    {"bert_load", SQLITE_UTF8, fn_load},
    {"bert_unload", SQLITE_UTF8, fn_unload},
    {"bert_tokenize", PURE | RESULT_SUBTYPE_FLAG, fn_tokenize},
    {"bert_token_ids", PURE | RESULT_SUBTYPE_FLAG, fn_token_ids},
    {"bert_embed", PURE | RESULT_SUBTYPE_FLAG, fn_embed},
    {"bert_similarity", PURE, fn_similarity},
    {"bert_vector_to_json", PURE | SQLITE_INNOCUOUS | RESULT_SUBTYPE_FLAG, fn_vector_to_json},
    {"bert_classify", PURE | RESULT_SUBTYPE_FLAG, fn_classify},
    {"bert_classify_pair", PURE | RESULT_SUBTYPE_FLAG, fn_classify_pair},
    {"bert_label", PURE, fn_label},
    {"bert_rerank", PURE, fn_rerank},
    {"bert_ner", PURE | RESULT_SUBTYPE_FLAG, fn_ner},
    {"bert_answer", PURE | RESULT_SUBTYPE_FLAG, fn_answer},
    {"bert_fill_mask", PURE | RESULT_SUBTYPE_FLAG, fn_fill_mask},
    {"bert_next_sentence", PURE, fn_next_sentence},
    {"bert_sparse", PURE | RESULT_SUBTYPE_FLAG, fn_sparse},
    {"bert_zero_shot", PURE | RESULT_SUBTYPE_FLAG, fn_zero_shot},
    {"bert_token_vectors", PURE, fn_token_vectors},
    /* vector_functions.c */
    {"bert_truncate", PURE | SQLITE_INNOCUOUS | RESULT_SUBTYPE_FLAG, bert_fn_truncate},
    {"bert_quantize", PURE | SQLITE_INNOCUOUS | RESULT_SUBTYPE_FLAG, bert_fn_quantize},
    {"bert_maxsim", PURE | SQLITE_INNOCUOUS, bert_fn_maxsim},
};

/* Registers f for each argument count its signature allows, and the
 * wrong-count error for every other count. */
static int register_function(sqlite3 *db, const function_def *f, bert_connection *c)
{
    const bert_signature *sig = bert_signature_find(f->name);
    if (!sig) return SQLITE_INTERNAL;
    int rc = SQLITE_OK;
    for (int n = sig->min_args; rc == SQLITE_OK && n <= sig->max_args; n++)
        rc = sqlite3_create_function_v2(db, f->name, n, f->flags, bert_connection_retain(c), f->fn, NULL, NULL,
                                        bert_connection_release);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function_v2(db, f->name, -1, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
                                        (void *)sig, fn_wrong_count, NULL, NULL, NULL);
    return rc;
}

int bert_register_functions(sqlite3 *db, bert_connection *c)
{
    int rc = SQLITE_OK;
    for (size_t i = 0; rc == SQLITE_OK && i < sizeof functions / sizeof *functions; i++)
        rc = register_function(db, &functions[i], c);
    return rc;
}
