/*
 * test_hybrid.c - sql/hybrid_search.sql end to end: the recipe's tables,
 * triggers and views, as the file defines them, on a few hundred generated
 * rows inserted, updated and deleted; then each of its rankings against its
 * brute-force counterpart and the fused one against reciprocal-rank fusion
 * computed here:
 *
 *   ranked_fts     a fresh FTS5 table of the final rows, ordered by bm25()
 *   ranked_vec     cosine distances of bert_embed vectors (vec_distance_cosine)
 *   ranked_sparse  dot products of bert_sparse's JSON vectors, computed in C
 *   hybrid         sum of 1 / (60 + rank) over the three, computed in C
 *
 * Needs ./vec0.so (sqlite-vec; `make sqlite-vec`): skipped without it.
 */
#include "test.h"
#include "golden_files.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECIPE "sql/hybrid_search.sql"
#define MAX_DOCS 400
#define DEPTH 20          /* each ranking's length in the recipe */
#define RRF_K 60
#define SPARSE_OPTIONS "{\"model\": \"demo\", \"top_k\": 64}"

typedef struct {
    long long id;
    double score;
} ranked;

static const char *const words[] = {
    "dog", "puppy", "cat", "bread", "flour", "oven", "rome", "empire", "caesar", "river", "bark", "night",
    "training", "walk", "garden", "rose", "winter", "snow", "mountain", "lake", "boat", "fish", "market",
    "price", "coffee", "morning", "music", "piano", "song", "school", "teacher", "lesson", "city", "train",
    "station", "history", "war", "peace", "book", "story", "king", "queen", "castle", "forest", "wolf",
    "bird", "sky", "rain", "summer", "beach", "recipe", "cake", "sugar", "milk", "farm", "horse", "field",
    "doctor", "health", "sleep",
};
#define N_WORDS ((int)(sizeof words / sizeof *words))

/* The recipe's statements, its dot-commands (the shell's) left out. */
static char *recipe_sql(void)
{
    char *text = t_read_file(RECIPE, NULL);
    if (!text) return NULL;
    char *out = malloc(strlen(text) + 1), *o = out;
    for (const char *line = text; out && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line + 1) : strlen(line);
        if (line[0] != '.') {
            memcpy(o, line, len);
            o += len;
        }
        line += len;
    }
    if (out) *o = '\0';
    free(text);
    return out;
}

/* Rows (id, score) of `sql` with ?1 bound to `param` (or nothing). */
static int rows(sqlite3 *db, const char *sql, const char *param, ranked *out, int max)
{
    sqlite3_stmt *st = NULL;
    if (!T_CHECK(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db)))
        return -1;
    if (param) sqlite3_bind_text(st, 1, param, -1, SQLITE_TRANSIENT);
    int n = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && n < max) {
        out[n].id = sqlite3_column_int64(st, 0);
        out[n++].score = sqlite3_column_double(st, 1);
    }
    T_CHECK(rc == SQLITE_ROW || rc == SQLITE_DONE, "%s: %s", sql, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return n;
}

/* The recipe's ranking against the expected one: the same ids in the same
 * order, except where the expected scores tie (within tol). */
static void same_ranking(const char *what, const char *query, const ranked *got, int n_got, const ranked *want,
                         int n_want, double tol)
{
    if (!T_CHECK(n_got == n_want, "%s '%s': %d documents, brute force %d", what, query, n_got, n_want)) return;
    for (int i = 0; i < n_got; i++) {
        if (got[i].id == want[i].id) continue;
        int tie = (i > 0 && fabs(want[i].score - want[i - 1].score) <= tol) ||
                  (i + 1 < n_want && fabs(want[i].score - want[i + 1].score) <= tol);
        if (!T_CHECK(tie, "%s '%s' rank %d: row %lld, brute force row %lld (score %.9g)", what, query, i + 1,
                     got[i].id, want[i].id, want[i].score))
            return;
    }
}

static int by_score_desc(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* bert_sparse's JSON vector of `text`, parsed (NULL after a failed check). */
static json_doc *sparse_vector(sqlite3 *db, const char *text)
{
    char *got = t_query(db, "SELECT bert_sparse(?1, '" SPARSE_OPTIONS "')", text, NULL);
    json_doc *d = NULL;
    char *err = NULL;
    int ok = bert_json_parse(got, strlen(got), &d, &err) == 0 && d->nodes[0].type == JSON_OBJECT;
    T_CHECK(ok, "bert_sparse('%s'): %s", text, got);
    free(err);
    free(got);
    if (!ok) bert_json_free(d);
    return ok ? d : NULL;
}

/* The documents by the dot product of their sparse vectors with the query's. */
static int sparse_brute_force(sqlite3 *db, const char *query, ranked *out)
{
    json_doc *q = sparse_vector(db, query);
    if (!q) return -1;
    sqlite3_stmt *st = NULL;
    int n = 0;
    if (sqlite3_prepare_v2(db, "SELECT id, body FROM docs", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW && n < MAX_DOCS) {
            json_doc *d = sparse_vector(db, (const char *)sqlite3_column_text(st, 1));
            if (!d) break;
            double dot = 0;
            for (int c = d->nodes[0].first_child; c >= 0; c = d->nodes[c].next_sibling)
                dot += d->nodes[c].number * bert_json_real(q, bert_json_member(q, 0, d->nodes[c].key), 0);
            bert_json_free(d);
            /* The recipe's join only sees documents that share a term. */
            if (dot > 0) {
                out[n].id = sqlite3_column_int64(st, 0);
                out[n++].score = dot;
            }
        }
    }
    sqlite3_finalize(st);
    bert_json_free(q);
    qsort(out, (size_t)n, sizeof *out, by_score_desc);
    return n < DEPTH ? n : DEPTH;
}

/* Reciprocal-rank fusion of the three rankings (ids at ranks 1..n). */
static int fuse(const ranked *const lists[3], const int lens[3], ranked *out)
{
    int n = 0;
    for (int l = 0; l < 3; l++)
        for (int r = 0; r < lens[l]; r++) {
            int at = 0;
            while (at < n && out[at].id != lists[l][r].id) at++;
            if (at == n) {
                out[n].id = lists[l][r].id;
                out[n++].score = 0;
            }
            out[at].score += 1.0 / (RRF_K + r + 1);
        }
    qsort(out, (size_t)n, sizeof *out, by_score_desc);
    return n;
}

static void check_query(sqlite3 *db, const char *query, const char *fts_query)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "UPDATE search SET query = ?1, fts_query = ?2", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, query, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, fts_query, -1, SQLITE_STATIC);
        T_CHECK(sqlite3_step(st) == SQLITE_DONE, "UPDATE search: %s", sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
    static ranked fts[DEPTH + 1], vec[DEPTH + 1], sparse[DEPTH + 1], fused[3 * DEPTH + 1];
    static ranked want_fts[DEPTH + 1], want_vec[DEPTH + 1], want_sparse[MAX_DOCS], want_fused[3 * DEPTH + 1];
    int n_fts = rows(db, "SELECT id, rank FROM ranked_fts ORDER BY rank", NULL, fts, DEPTH + 1);
    int n_vec = rows(db, "SELECT id, rank FROM ranked_vec ORDER BY rank", NULL, vec, DEPTH + 1);
    int n_sparse = rows(db, "SELECT id, rank FROM ranked_sparse ORDER BY rank", NULL, sparse, DEPTH + 1);
    int n_fused = rows(db, "SELECT id, score FROM hybrid ORDER BY score DESC, id", NULL, fused, 3 * DEPTH + 1);
    T_CHECK(n_fts > 0 && n_vec == DEPTH && n_sparse == DEPTH, "'%s': %d, %d, %d ranked", query, n_fts, n_vec,
            n_sparse);

    int n = rows(db, "SELECT rowid, bm25(check_fts) AS s FROM check_fts WHERE check_fts MATCH ?1 "
                     "ORDER BY s, rowid LIMIT 20", fts_query, want_fts, DEPTH + 1);
    same_ranking("BM25", query, fts, n_fts, want_fts, n, 1e-9);
    n = rows(db, "SELECT id, vec_distance_cosine(bert_embed(body, 'demo'), bert_embed(?1, 'demo')) AS d "
                 "FROM docs ORDER BY d, id LIMIT 20", query, want_vec, DEPTH + 1);
    same_ranking("vector", query, vec, n_vec, want_vec, n, 1e-6);
    n = sparse_brute_force(db, query, want_sparse);
    same_ranking("sparse", query, sparse, n_sparse, want_sparse, n, 1e-4);

    const ranked *const lists[3] = {fts, vec, sparse};
    const int lens[3] = {n_fts, n_vec, n_sparse};
    n = fuse(lists, lens, want_fused);
    if (!T_CHECK(n_fused == n, "'%s': hybrid has %d documents, the fusion %d", query, n_fused, n)) return;
    for (int i = 0; i < n; i++)
        if (!T_CHECK(fused[i].id == want_fused[i].id && fabs(fused[i].score - want_fused[i].score) < 1e-12,
                     "'%s' fused rank %d: row %lld (%.12f), want row %lld (%.12f)", query, i + 1, fused[i].id,
                     fused[i].score, want_fused[i].id, want_fused[i].score))
            return;
}

/* n documents of 4 to 9 words from the list, the same on every run. */
static void insert_documents(sqlite3 *db, int n)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "INSERT INTO docs(body) VALUES (?1)", -1, &st, NULL) != SQLITE_OK) return;
    unsigned state = 12345;
    for (int i = 0; i < n; i++) {
        char body[256] = "";
        state = state * 1103515245u + 12345u;
        int count = 4 + (int)((state >> 16) % 6);
        for (int w = 0; w < count; w++) {
            state = state * 1103515245u + 12345u;
            snprintf(body + strlen(body), sizeof body - strlen(body), "%s%s", w ? " " : "",
                     words[(state >> 16) % N_WORDS]);
        }
        sqlite3_bind_text(st, 1, body, -1, SQLITE_TRANSIENT);
        if (!T_CHECK(sqlite3_step(st) == SQLITE_DONE, "INSERT: %s", sqlite3_errmsg(db))) break;
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
}

void suite_hybrid(void)
{
    t_case("sql/hybrid_search.sql: BM25, vec0 and sparse rankings, and their fusion, equal brute force");
    if (!t_exists("vec0.so")) {
        t_skip("no ./vec0.so: make sqlite-vec");
        return;
    }
    sqlite3 *db = t_open();
    char *err = NULL;
    sqlite3_enable_load_extension(db, 1);
    int loaded = sqlite3_load_extension(db, "./vec0.so", NULL, &err) == SQLITE_OK;
    T_CHECK(loaded, "loading ./vec0.so: %s", err ? err : "");
    sqlite3_free(err);
    char *sql = recipe_sql();
    err = NULL;
    int ran = loaded && T_CHECK(sql != NULL, "cannot read " RECIPE) &&
              T_CHECK(sqlite3_exec(db, sql, NULL, NULL, &err) == SQLITE_OK, RECIPE ": %s", err ? err : "");
    sqlite3_free(err);
    if (ran) {
        t_expect(db, "DELETE FROM docs", NULL, "NO ROW");
        insert_documents(db, T_LIGHT ? 80 : 200);
        /* The triggers at work: rows changed and deleted after indexing. */
        t_expect(db, "UPDATE docs SET body = 'a puppy learns to walk on a leash' WHERE id % 17 = 3", NULL, "NO ROW");
        t_expect(db, "UPDATE docs SET id = id + 10000 WHERE id % 29 = 5", NULL, "NO ROW");
        t_expect(db, "DELETE FROM docs WHERE id % 13 = 7", NULL, "NO ROW");
        T_CHECK(t_query_double(db, "SELECT (SELECT count(*) FROM docs) = (SELECT count(*) FROM docs_vec) AND "
                                   "(SELECT count(*) FROM docs) = (SELECT count(DISTINCT doc_id) FROM docs_sparse) "
                                   "AND NOT EXISTS (SELECT 1 FROM docs_sparse WHERE doc_id NOT IN "
                                   "(SELECT id FROM docs))") == 1,
                "the vec0 table or the sparse index is out of step with docs");
        t_expect(db, "INSERT INTO docs_fts(docs_fts, rank) VALUES ('integrity-check', 1)", NULL, "NO ROW");
        t_expect(db, "CREATE VIRTUAL TABLE temp.check_fts USING fts5(body)", NULL, "NO ROW");
        t_expect(db, "INSERT INTO check_fts(rowid, body) SELECT id, body FROM docs", NULL, "NO ROW");
        check_query(db, "training a young dog at night", "\"training\" OR \"young\" OR \"dog\" OR \"night\"");
        check_query(db, "the history of rome", "\"history\" OR \"rome\"");
        check_query(db, "bread recipe with milk and sugar", "\"bread\" OR \"recipe\" OR \"milk\" OR \"sugar\"");
    }
    free(sql);
    sqlite3_close(db);
}
