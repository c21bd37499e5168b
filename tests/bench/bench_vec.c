/*
 * bench_vec.c - vector search at scale: N generated rows (default 100,000)
 * embedded with bert_embed_each, indexed with sqlite-vec's vec0, and queried
 * by brute force (bert_similarity over every stored vector) and by vec0 KNN.
 *
 *   bench_vec EXTENSION VEC0 MODEL_DIR SENTENCES [ROWS [QUERIES]]
 *
 * Both extensions are loaded at run time into one in-memory database of the
 * system libsqlite3, as a user's application would.  Row i's text joins the
 * beginning of one sentence of SENTENCES to the end of another, so the rows
 * are distinct, short and read like the corpus.  The queries are other such
 * joins, not in the table.  Prints one line per measurement; every
 * query's top 10 from vec0 is checked against the brute-force top 10.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_clock.h"

#define TOP 10

static void die(sqlite3 *db, const char *what)
{
    fprintf(stderr, "bench_vec: %s: %s\n", what, db ? sqlite3_errmsg(db) : "?");
    exit(1);
}

static void exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "bench_vec: %s\n  %s\n", err ? err : "?", sql);
        exit(1);
    }
}

/* One line a sentence, blank lines skipped; *buffer holds them all. */
static char **read_sentences(const char *path, int *count, char **buffer)
{
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    if (!text || fread(text, 1, (size_t)size, f) != (size_t)size) { fprintf(stderr, "cannot read %s\n", path); exit(1); }
    fclose(f);
    text[size] = '\0';
    char **items = malloc(sizeof *items * ((size_t)size / 2 + 1));
    if (!items) exit(1);
    int n = 0;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        if (*line) items[n++] = line;
    }
    *count = n;
    *buffer = text;
    return items;
}

/* The first `num`/`den` (by words) of `a` followed by the rest of `b` from
 * the same fraction on. */
static void join_parts(const char *a, const char *b, int num, int den, char *out, size_t cap)
{
    int words_a = 1, words_b = 1;
    for (const char *p = a; *p; p++) words_a += *p == ' ';
    for (const char *p = b; *p; p++) words_b += *p == ' ';
    int keep_a = (words_a * num + den - 1) / den, skip_b = words_b * num / den;
    size_t len = 0;
    int w = 0;
    for (const char *p = a; *p && len + 1 < cap; p++) {
        if (*p == ' ' && ++w >= keep_a) break;
        out[len++] = *p;
    }
    const char *tail = b;
    for (w = 0; *tail && w < skip_b; tail++) w += *tail == ' ';
    if (len + 1 < cap) out[len++] = ' ';
    while (*tail && len + 1 < cap) out[len++] = *tail++;
    out[len] = '\0';
}

/* Three cut points (1/2, 1/3, 2/3) times every ordered pair of distinct
 * sentences: 3 n (n - 1) distinct texts. */
static const int cuts[3][2] = {{1, 2}, {1, 3}, {2, 3}};

static long max_texts(int n)
{
    return 3L * n * (n - 1);
}

static void text_for(char **s, int n, long i, char *out, size_t cap)
{
    long pairs = (long)n * (n - 1), j = i % pairs;
    int cut = (int)(i / pairs);
    long a = j % n, b = (a + 1 + (j / n) % (n - 1)) % n;
    join_parts(s[a], s[b], cuts[cut][0], cuts[cut][1], out, cap);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

typedef struct { double wall, cpu; } timing;

/* Runs `sql` (one text parameter) for every query; returns the median wall
 * and CPU seconds; fills ids[q][TOP] when ids is given. */
static timing time_queries(sqlite3 *db, const char *sql, char **queries, int nq, long long (*ids)[TOP])
{
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK) die(db, sql);
    double *t = malloc(sizeof *t * (size_t)nq), *c = malloc(sizeof *c * (size_t)nq);
    if (!t || !c) exit(1);
    for (int q = 0; q < nq; q++) {
        sqlite3_bind_text(stmt, 1, queries[q], -1, SQLITE_STATIC);
        double t0 = now(), c0 = cpu_now();
        int rc, row = 0;
        while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
            if (ids && row < TOP) ids[q][row] = sqlite3_column_int64(stmt, 0);
            row++;
        }
        t[q] = now() - t0;
        c[q] = cpu_now() - c0;
        if (rc != SQLITE_DONE) die(db, sql);
        sqlite3_reset(stmt);
    }
    sqlite3_finalize(stmt);
    timing r = {median(t, nq), median(c, nq)};
    free(t);
    free(c);
    return r;
}

static void report(const char *what, timing t)
{
    printf("  %-60s %8.2f ms wall %8.2f ms CPU\n", what, t.wall * 1e3, t.cpu * 1e3);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: bench_vec EXTENSION VEC0 MODEL_DIR SENTENCES [ROWS [QUERIES]]\n");
        return 2;
    }
    long rows = argc > 5 ? atol(argv[5]) : 100000;
    int nq = argc > 6 ? atoi(argv[6]) : 20;
    if (rows < TOP || nq < 1) { fprintf(stderr, "bench_vec: ROWS >= %d and QUERIES >= 1\n", TOP); return 2; }
    int ns = 0;
    char *sentences = NULL;
    char **s = read_sentences(argv[4], &ns, &sentences);
    if (ns < 3 || rows + nq > max_texts(ns)) { fprintf(stderr, "bench_vec: too few sentences for %ld rows\n", rows); return 2; }

    sqlite3 *db = NULL;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) die(db, "open");
    sqlite3_enable_load_extension(db, 1);
    char *err = NULL;
    if (sqlite3_load_extension(db, argv[2], "sqlite3_vec_init", &err) != SQLITE_OK ||
        sqlite3_load_extension(db, argv[1], "sqlite3_bert_init", &err) != SQLITE_OK) {
        fprintf(stderr, "bench_vec: loading the extensions: %s\n", err ? err : "?");
        return 1;
    }
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db, "SELECT bert_load('default', ?1)", -1, &stmt, NULL) != SQLITE_OK) die(db, "bert_load");
    sqlite3_bind_text(stmt, 1, argv[3], -1, SQLITE_STATIC);
    if (sqlite3_step(stmt) != SQLITE_ROW) die(db, "bert_load");
    sqlite3_finalize(stmt);
    int dim = 0;
    if (sqlite3_prepare_v2(db, "SELECT hidden_size FROM bert_models", -1, &stmt, NULL) != SQLITE_OK ||
        sqlite3_step(stmt) != SQLITE_ROW)
        die(db, "bert_models");
    dim = sqlite3_column_int(stmt, 0);
    sqlite3_finalize(stmt);

    /* The rows. */
    char text[1024];
    exec(db, "CREATE TABLE docs(id INTEGER PRIMARY KEY, body TEXT NOT NULL, embedding BLOB)");
    exec(db, "BEGIN");
    if (sqlite3_prepare_v2(db, "INSERT INTO docs(id, body) VALUES (?1, ?2)", -1, &stmt, NULL) != SQLITE_OK) die(db, "insert");
    for (long i = 0; i < rows; i++) {
        text_for(s, ns, i, text, sizeof text);
        sqlite3_bind_int64(stmt, 1, i + 1);
        sqlite3_bind_text(stmt, 2, text, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(stmt) != SQLITE_DONE) die(db, "insert");
        sqlite3_reset(stmt);
    }
    sqlite3_finalize(stmt);
    exec(db, "COMMIT");
    double tokens = 0;
    if (sqlite3_prepare_v2(db, "SELECT avg(json_array_length(bert_token_ids(body))) FROM "
                               "(SELECT body FROM docs ORDER BY id LIMIT 2000)", -1, &stmt, NULL) != SQLITE_OK ||
        sqlite3_step(stmt) != SQLITE_ROW)
        die(db, "tokens");
    tokens = sqlite3_column_double(stmt, 0);
    sqlite3_finalize(stmt);
    printf("rows %ld, %.1f tokens a row on average ([CLS] and [SEP] included), hidden size %d, %d queries\n",
           rows, tokens, dim, nq);

    /* Embedding: one bert_embed_each over the whole column. */
    double t0 = now(), c0 = cpu_now();
    exec(db, "UPDATE docs SET embedding = e.embedding "
             "FROM bert_embed_each((SELECT json_group_object(id, body) FROM docs)) AS e "
             "WHERE docs.id = CAST(e.key AS INTEGER)");
    double embed_s = now() - t0, embed_cpu = cpu_now() - c0;
    printf("embed   %8.2f s wall, %8.2f s CPU  %7.0f rows/s wall, %7.0f rows/s CPU  (bert_embed_each)\n",
           embed_s, embed_cpu, (double)rows / embed_s, (double)rows / embed_cpu);

    /* The index, from the stored vectors. */
    char sql[512];
    snprintf(sql, sizeof sql,
             "CREATE VIRTUAL TABLE docs_vec USING vec0(embedding float[%d] distance_metric=cosine)", dim);
    exec(db, sql);
    t0 = now();
    exec(db, "INSERT INTO docs_vec(rowid, embedding) SELECT id, embedding FROM docs");
    double index_s = now() - t0;
    printf("index   %8.2f s wall             %7.0f rows/s  (INSERT INTO vec0 SELECT ... FROM docs)\n",
           index_s, (double)rows / index_s);

    /* Queries: texts not in the table. */
    char **queries = malloc(sizeof *queries * (size_t)nq);
    long long (*brute)[TOP] = calloc((size_t)nq, sizeof *brute);
    long long (*knn)[TOP] = calloc((size_t)nq, sizeof *knn);
    if (!queries || !brute || !knn) return 1;
    for (int q = 0; q < nq; q++) {
        text_for(s, ns, max_texts(ns) - 1 - q, text, sizeof text);
        queries[q] = strdup(text);
        if (!queries[q]) return 1;
    }
    timing embed_q = time_queries(db, "SELECT length(bert_embed(?1))", queries, nq, NULL);
    timing brute_text = time_queries(db,
        "SELECT id FROM docs ORDER BY bert_similarity(embedding, ?1) DESC, id LIMIT 10", queries, nq, brute);
    timing brute_blob = time_queries(db,
        "SELECT id FROM docs ORDER BY bert_similarity(embedding, bert_embed(?1)) DESC, id LIMIT 10",
        queries, nq, NULL);
    timing brute_vec = time_queries(db,
        "SELECT id FROM docs ORDER BY vec_distance_cosine(embedding, bert_embed(?1)), id LIMIT 10",
        queries, nq, NULL);
    timing knn_s = time_queries(db,
        "SELECT rowid FROM docs_vec WHERE embedding MATCH bert_embed(?1) AND k = 10 ORDER BY distance",
        queries, nq, knn);
    int same = 0;
    for (int q = 0; q < nq; q++) same += memcmp(brute[q], knn[q], sizeof brute[q]) == 0;
    printf("query   median of %d queries, top 10:\n", nq);
    report("bert_embed(query) alone", embed_q);
    report("brute force: bert_similarity(embedding, 'query text')", brute_text);
    report("brute force: bert_similarity(embedding, bert_embed(...))", brute_blob);
    report("brute force: vec_distance_cosine(embedding, bert_embed(...))", brute_vec);
    report("vec0 KNN: embedding MATCH bert_embed(...) AND k = 10", knn_s);
    printf("top 10 of vec0 = top 10 of bert_similarity for %d of %d queries\n", same, nq);

    for (int q = 0; q < nq; q++) free(queries[q]);
    free(queries);
    free(brute);
    free(knn);
    free(sentences);
    free(s);
    sqlite3_close(db);
    return 0;
}
