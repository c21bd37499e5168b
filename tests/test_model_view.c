/*
 * test_model_view.c - bert_attention and bert_hidden_states: every layer
 * and head of one text per family (BERT, DistilBERT, RoBERTa, XLM-RoBERTa,
 * MPNet) within 1e-5 of transformers' output_attentions and
 * output_hidden_states, as tests/golden/make_view_goldens.py computes them
 * with the PyTorch references of tests/reference/ on the generated test
 * models; the options that pick layers and heads; the tokens and offsets of
 * the rows; reduced precisions; and the errors.
 */
#include "test.h"
#include "golden_files.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VIEW_TOL 1e-5

/* One golden line and the model it was made on. */
typedef struct {
    const json_doc *d;
    int line;
    const char *model, *text;
    int layers, heads, hidden, tokens;
} view_line;

/* Golden number attentions[layer][head][from][to] or hidden_states[layer][position][k]. */
static double golden_at(const view_line *v, const char *key, int a, int b, int c, int k)
{
    const json_doc *d = v->d;
    int n = t_json_child(d, t_json_child(d, t_json_child(d, bert_json_member(d, v->line, key), a), b), c);
    if (k >= 0) n = t_json_child(d, n, k);
    return n >= 0 ? d->nodes[n].number : NAN;
}

/* `sql` prepared with the line's text as ?1 and options as ?2; NULL after a failed check. */
static sqlite3_stmt *view_statement(sqlite3 *db, const char *sql, const view_line *v, const char *options)
{
    sqlite3_stmt *st = NULL;
    if (!T_CHECK(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db))) return NULL;
    sqlite3_bind_text(st, 1, v->text, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, options, -1, SQLITE_STATIC);
    return st;
}

/* bert_attention(text, options) against the golden; `options` must hold
 * the model.  Checks that the rows are those of the layers and heads
 * listed (n_layers, n_heads of them, ascending), in order. */
static void check_attention(sqlite3 *db, const view_line *v, const char *options, const int *layers, int n_layers,
                            const int *heads, int n_heads)
{
    sqlite3_stmt *st = view_statement(db, "SELECT layer, head, from_position, to_position, weight "
                                          "FROM bert_attention(?1, ?2)", v, options);
    int ok = st != NULL;
    long rows = 0, want_rows = (long)n_layers * n_heads * v->tokens * v->tokens;
    double worst = 0;
    int rc;
    while (ok && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        long r = rows++;
        if (!T_CHECK(r < want_rows, "%s: more than %ld rows", v->model, want_rows)) break;
        int to = (int)(r % v->tokens), from = (int)(r / v->tokens % v->tokens);
        int head = heads[r / ((long)v->tokens * v->tokens) % n_heads];
        int layer = layers[r / ((long)v->tokens * v->tokens * n_heads)];
        ok = T_CHECK(sqlite3_column_int(st, 0) == layer && sqlite3_column_int(st, 1) == head &&
                         sqlite3_column_int(st, 2) == from && sqlite3_column_int(st, 3) == to,
                     "%s: row %ld is (%d, %d, %d, %d), not (%d, %d, %d, %d)", v->model, r, sqlite3_column_int(st, 0),
                     sqlite3_column_int(st, 1), sqlite3_column_int(st, 2), sqlite3_column_int(st, 3), layer, head,
                     from, to);
        double diff = fabs(sqlite3_column_double(st, 4) - golden_at(v, "attentions", layer, head, from, to));
        if (!(diff <= worst)) worst = diff;
    }
    T_CHECK(!ok || rows == want_rows, "%s: %ld rows, want %ld (%s)", v->model, rows, want_rows, sqlite3_errmsg(db));
    T_CHECK(worst <= VIEW_TOL, "%s %s: attention %.3g from PyTorch's", v->model, options, worst);
    sqlite3_finalize(st);
}

/* bert_hidden_states(text, options) against the golden, as check_attention. */
static void check_hidden_states(sqlite3 *db, const view_line *v, const char *options, const int *layers,
                                int n_layers)
{
    sqlite3_stmt *st = view_statement(db, "SELECT layer, position, vector, subtype(vector) "
                                          "FROM bert_hidden_states(?1, ?2)", v, options);
    int ok = st != NULL;
    long rows = 0, want_rows = (long)n_layers * v->tokens;
    double worst = 0;
    while (ok && sqlite3_step(st) == SQLITE_ROW) {
        long r = rows++;
        if (!T_CHECK(r < want_rows, "%s: more than %ld rows", v->model, want_rows)) break;
        int layer = layers[r / v->tokens], position = (int)(r % v->tokens);
        const float *vec = sqlite3_column_blob(st, 2);
        ok = T_CHECK(sqlite3_column_int(st, 0) == layer && sqlite3_column_int(st, 1) == position,
                     "%s: row %ld is (%d, %d), not (%d, %d)", v->model, r, sqlite3_column_int(st, 0),
                     sqlite3_column_int(st, 1), layer, position) &&
             T_CHECK(vec && sqlite3_column_bytes(st, 2) == v->hidden * (int)sizeof(float) &&
                         sqlite3_column_int(st, 3) == 223,
                     "%s: a vector of %d bytes, subtype %d", v->model, sqlite3_column_bytes(st, 2),
                     sqlite3_column_int(st, 3));
        for (int k = 0; ok && k < v->hidden; k++) {
            float x;
            memcpy(&x, (const char *)vec + (size_t)k * sizeof x, sizeof x);
            double diff = fabs(x - golden_at(v, "hidden_states", layer, position, k, -1));
            if (!(diff <= worst)) worst = diff;
        }
    }
    T_CHECK(!ok || rows == want_rows, "%s: %ld rows, want %ld (%s)", v->model, rows, want_rows, sqlite3_errmsg(db));
    T_CHECK(worst <= VIEW_TOL, "%s %s: hidden states %.3g from PyTorch's", v->model, options, worst);
    sqlite3_finalize(st);
}

/* The golden ids are those bert_tokenize_offsets gives, and the rows' tokens and offsets its. */
static void check_tokens(sqlite3 *db, const view_line *v)
{
    char *ids = t_query(db, "SELECT json_group_array(id) FROM bert_tokenize_offsets(?1, ?2)", v->text, v->model,
                        NULL);
    char want[1024] = "[";
    int node = bert_json_member(v->d, v->line, "ids");
    for (int i = 0; i < bert_json_length(v->d, node); i++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", i ? "," : "",
                 bert_json_int(v->d, t_json_child(v->d, node, i), -1));
    strcat(want, "]");
    T_CHECK(ids && strcmp(ids, want) == 0, "%s: ids %s, the golden's %s", v->model, ids ? ids : "?", want);
    free(ids);
    char options[128];
    snprintf(options, sizeof options, "{\"model\": \"%s\", \"layers\": [0], \"heads\": [0]}", v->model);
    char *mismatches = t_query(db,
                               "SELECT count(*) FROM bert_attention(?1, ?2) AS a "
                               "JOIN bert_tokenize_offsets(?1, json_extract(?2, '$.model')) AS f ON f.\"index\" = a.from_position "
                               "JOIN bert_tokenize_offsets(?1, json_extract(?2, '$.model')) AS t ON t.\"index\" = a.to_position "
                               "WHERE NOT (a.from_token IS f.token AND a.to_token IS t.token)",
                               v->text, options, NULL);
    T_CHECK(mismatches && strcmp(mismatches, "0") == 0, "%s: %s attention rows name other tokens", v->model,
            mismatches ? mismatches : "?");
    free(mismatches);
    snprintf(options, sizeof options, "{\"model\": \"%s\", \"layers\": [0]}", v->model);
    mismatches = t_query(db,
                         "SELECT count(*) FROM bert_hidden_states(?1, ?2) AS h "
                         "JOIN bert_tokenize_offsets(?1, json_extract(?2, '$.model')) AS o ON o.\"index\" = h.position "
                         "WHERE NOT (h.token IS o.token AND h.start IS iif(o.word IS NULL, NULL, o.start) "
                         "AND h.\"end\" IS iif(o.word IS NULL, NULL, o.\"end\"))",
                         v->text, options, NULL);
    T_CHECK(mismatches && strcmp(mismatches, "0") == 0, "%s: %s hidden-state rows have other tokens or offsets",
            v->model, mismatches ? mismatches : "?");
    free(mismatches);
}

static void check_line(sqlite3 *db, const json_doc *models, const json_doc *d, int line)
{
    view_line v = {d, line, t_member_str(d, line, "model"), t_member_str(d, line, "text"), 0, 0, 0, 0};
    int entry = bert_json_member(models, 0, v.model);
    v.layers = (int)bert_json_int(models, bert_json_member(models, entry, "num_layers"), 0);
    v.heads = (int)bert_json_int(models, bert_json_member(models, entry, "num_heads"), 0);
    v.hidden = (int)bert_json_int(models, bert_json_member(models, entry, "hidden_size"), 0);
    v.tokens = bert_json_length(d, bert_json_member(d, line, "ids"));
    if (!T_CHECK(v.layers > 1 && v.heads > 1 && v.hidden > 0 && v.tokens > 2, "%s: no such model or ids", v.model))
        return;
    int all[64];
    for (int i = 0; i < 64; i++) all[i] = i;
    char options[256];
    snprintf(options, sizeof options, "{\"model\": \"%s\"}", v.model);
    check_tokens(db, &v);
    check_attention(db, &v, options, all, v.layers, all, v.heads);
    check_hidden_states(db, &v, options, all, v.layers + 1);
    /* Picked layers and heads, in any order and repeated: each once, ascending. */
    int last_layer[] = {v.layers - 1}, heads[] = {0, v.heads - 1}, states[] = {0, v.layers};
    snprintf(options, sizeof options, "{\"layers\": [%d], \"heads\": [%d, 0, %d], \"model\": \"%s\"}", v.layers - 1,
             v.heads - 1, v.heads - 1, v.model);
    check_attention(db, &v, options, last_layer, 1, heads, 2);
    snprintf(options, sizeof options, "{\"model\": \"%s\", \"layers\": [%d, 0]}", v.model, v.layers);
    check_hidden_states(db, &v, options, states, 2);
    snprintf(options, sizeof options, "{\"model\": \"%s\", \"layers\": %d}", v.model, v.layers);
    check_hidden_states(db, &v, options, states + 1, 1);
}

/* Attention at a reduced precision is that precision's: close to
 * float32's, and every row still a distribution. */
static void reduced_precision(sqlite3 *db)
{
    t_case("bert_attention and bert_hidden_states at bfloat16 and int8: close to float32, rows summing to 1");
    static const char *const precisions[] = {"bfloat16", "int8"};
    for (int i = 0; i < 2; i++) {
        char options[96], name[32];
        snprintf(name, sizeof name, "view-%s", precisions[i]);
        snprintf(options, sizeof options, "{\"precision\": \"%s\"}", precisions[i]);
        char *got = t_query(db, "SELECT bert_load(?1, 'build/models/mpnet-st', ?2)", name, options, NULL);
        T_CHECK(got && strcmp(got, name) == 0, "bert_load: %s", got ? got : "?");
        free(got);
        const char *text = "The quick brown fox jumps over the lazy dog near the river bank.";
        double worst = t_query_double(db,
                                      "SELECT max(abs(a.weight - b.weight)) FROM bert_attention(?1, json_object('model', ?2)) AS a "
                                      "JOIN bert_attention(?1, '{\"model\": \"mpnet-st\"}') AS b "
                                      "USING (layer, head, from_position, to_position)",
                                      text, name, NULL);
        T_CHECK(worst < 0.05, "%s: attention %.3g from float32's", precisions[i], worst);
        double sums = t_query_double(db,
                                     "SELECT max(abs(s - 1)) FROM (SELECT sum(weight) AS s FROM "
                                     "bert_attention(?1, json_object('model', ?2)) GROUP BY layer, head, from_position)",
                                     text, name, NULL);
        T_CHECK(sums < 1e-5, "%s: a row of attention sums to 1 %+.3g", precisions[i], sums);
        double cos = t_query_double(db,
                                    "SELECT min(bert_similarity(a.vector, b.vector)) FROM "
                                    "bert_hidden_states(?1, json_object('model', ?2)) AS a "
                                    "JOIN bert_hidden_states(?1, '{\"model\": \"mpnet-st\"}') AS b USING (layer, position)",
                                    text, name, NULL);
        T_CHECK(cos > 0.99, "%s: hidden states at cosine %.4f of float32's", precisions[i], cos);
    }
}

static void errors(sqlite3 *db)
{
    t_case("bert_attention and bert_hidden_states: bad options, types and counts are errors naming the fix");
    t_expect_error(db, "SELECT * FROM bert_attention('a b', '{\"model\": \"bert-plain-f32\", \"layers\": [2]}')", NULL,
                   "layer 2 is out of range", "layers 0 to 1", NULL);
    t_expect_error(db, "SELECT * FROM bert_attention('a b', '{\"model\": \"bert-plain-f32\", \"layers\": [-1]}')", NULL,
                   "layer -1 is out of range", "layers 0 to 1", NULL);
    t_expect_error(db, "SELECT * FROM bert_attention('a b', '{\"model\": \"distil-cls\", \"heads\": [4]}')", NULL,
                   "head 4 is out of range", "heads 0 to 3", NULL);
    t_expect_error(db, "SELECT * FROM bert_hidden_states('a b', '{\"model\": \"bert-plain-f32\", \"layers\": [3]}')",
                   NULL, "layer 3 is out of range", "layers 0 to 2", "embeddings", NULL);
    t_expect_error(db, "SELECT * FROM bert_hidden_states('a b', '{\"model\": \"bert-plain-f32\", \"heads\": [0]}')",
                   NULL, "unknown option \"heads\"", "\"layers\" and \"model\"", NULL);
    t_expect_error(db, "SELECT * FROM bert_attention('a b', '{\"layer\": [0]}')", NULL, "unknown option \"layer\"",
                   "\"layers\", \"heads\" and \"model\"", NULL);
    t_expect_error(db, "SELECT * FROM bert_attention('a b', '{\"layers\": \"all\"}')", NULL,
                   "option \"layers\" must be a number or an array of numbers", NULL);
    t_expect_error(db, "SELECT * FROM bert_attention('a b', '{\"layers\": [0.5]}')", NULL,
                   "option \"layers\" must be", NULL);
    t_expect_error(db, "SELECT * FROM bert_attention('a b', '{\"layers\": []}')", NULL, "it is empty", NULL);
    t_expect_error(db, "SELECT * FROM bert_attention('a b', '{\"model\": 3}')", NULL, "option \"model\" must be",
                   NULL);
    t_expect_error(db, "SELECT * FROM bert_attention('a b', '{\"model\": \"nope\"}')", NULL, "nope", NULL);
    t_expect_error(db, "SELECT * FROM bert_attention('a b', '{layers: 1')", NULL, "options_json is not valid JSON",
                   "{\"layers\": [0, 11]", NULL);
    t_expect_error(db, "SELECT * FROM bert_attention('a b', '[0]')", NULL, "options_json must be a JSON object", NULL);
    t_expect_error(db, "SELECT * FROM bert_attention('a b', 3)", NULL, "argument 2 (options_json)", NULL);
    t_expect_error(db, "SELECT * FROM bert_hidden_states(x'00')", NULL, "argument 1 (text)", NULL);
    t_expect_error(db, "SELECT * FROM bert_attention()", NULL, "bert_attention(text [, options_json])", NULL);
    t_expect_error(db, "SELECT * FROM bert_hidden_states('a', '{}', 3)", NULL,
                   "bert_hidden_states(text [, options_json])", NULL);
    /* A NULL text gives no rows; its options are still checked. */
    t_expect(db, "SELECT count(*) FROM bert_attention(NULL, '{\"model\": \"bert-plain-f32\"}')", NULL, "0");
    t_expect(db, "SELECT count(*) FROM bert_hidden_states(NULL)", NULL, "0");
    t_expect_error(db, "SELECT count(*) FROM bert_attention(NULL, '{\"heads\": \"x\"}')", NULL,
                   "option \"heads\" must be", NULL);
    t_expect(db, "SELECT count(*) FROM bert_functions WHERE name IN ('bert_attention', 'bert_hidden_states')", NULL,
             "2");
}

void suite_model_view(void)
{
    t_case("bert_attention and bert_hidden_states: every layer and head of every family within 1e-5 of PyTorch");
    json_doc *models = t_golden_manifest(GOLDEN_DIR "model_view_models.json");
    json_doc *lines = t_read_jsonl(GOLDEN_DIR "model_view.jsonl");
    sqlite3 *db = t_open();
    int usable = T_CHECK(models && lines && db, "cannot read the goldens or open a database");
    int families = 0;
    for (int c = usable ? models->nodes[0].first_child : -1; c >= 0; c = models->nodes[c].next_sibling) {
        const char *name = models->nodes[c].key;
        if (!t_golden_model_matches(models, c)) {
            usable = 0;
            continue;
        }
        char path[256];
        snprintf(path, sizeof path, MODELS_DIR "%s", t_member_str(models, c, "path"));
        char *got = t_query(db, "SELECT bert_load(?1, ?2, '{\"threads\": 1}')", name, path, NULL);
        usable &= T_CHECK(got && strcmp(got, name) == 0, "bert_load('%s'): %s", name, got ? got : "?");
        free(got);
        families++;
    }
    if (usable) {
        T_CHECK(families == 5 && bert_json_length(lines, 0) == families, "%d models, %d golden lines", families,
                bert_json_length(lines, 0));
        for (int line = lines->nodes[0].first_child; line >= 0; line = lines->nodes[line].next_sibling)
            check_line(db, models, lines, line);
        reduced_precision(db);
        errors(db);
    }
    bert_json_free(models);
    bert_json_free(lines);
    sqlite3_close(db);
}
