/*
 * bench_query.c - the search pattern the examples teach, over many stored
 * vectors: a constant TEXT query against every row,
 *
 *   ORDER BY bert_similarity(embedding, 'caring for a young dog')
 *
 * against the same query embedded explicitly,
 *
 *   ORDER BY bert_similarity(embedding, bert_embed('caring for a young dog')).
 *
 * The extension embeds a constant argument once per statement, so the two
 * must take about the same time; the ratio says how close they are.
 *
 *   bench_query EXTENSION MODEL_DIR ROWS LABEL
 *
 * The stored vectors are pseudo-random unit vectors of the model's width
 * (the same on every run), made outside the timed part.  Prints "QUERY ..."
 * lines for tests/bench/run.sh.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_clock.h"

static int fail(sqlite3 *db, const char *what)
{
    fprintf(stderr, "bench_query: %s: %s\n", what, sqlite3_errmsg(db));
    return -1;
}

/* `rows` unit vectors of `dim` floats into table v(id, embedding). */
static int fill(sqlite3 *db, int rows, int dim)
{
    float *vec = malloc((size_t)dim * sizeof *vec);
    if (!vec) { fprintf(stderr, "bench_query: out of memory\n"); return -1; }
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_exec(db, "CREATE TABLE v(id INTEGER PRIMARY KEY, embedding BLOB); BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO v(embedding) VALUES (?1)", -1, &st, NULL) != SQLITE_OK) {
        fail(db, "creating the table");
        goto done;
    }
    unsigned seed = 2024;
    for (int r = 0; r < rows; r++) {
        double ss = 0;
        for (int j = 0; j < dim; j++) {
            seed = seed * 1664525u + 1013904223u;
            vec[j] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
            ss += (double)vec[j] * vec[j];
        }
        for (int j = 0; j < dim; j++) vec[j] = (float)(vec[j] / sqrt(ss));
        sqlite3_bind_blob(st, 1, vec, dim * (int)sizeof(float), SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE) { fail(db, "inserting"); goto done; }
        sqlite3_reset(st);
    }
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) { fail(db, "COMMIT"); goto done; }
    rc = 0;
done:
    sqlite3_finalize(st);
    free(vec);
    return rc;
}

/* Runs sql (the five nearest ids) and times it; ids[5] receives them. */
static double timed(sqlite3 *db, const char *sql, long long ids[5])
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) { fail(db, sql); return -1; }
    double t0 = now();
    int n = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (n < 5) ids[n++] = sqlite3_column_int64(st, 0);
    double seconds = now() - t0;
    if (rc != SQLITE_DONE) seconds = fail(db, sql);
    sqlite3_finalize(st);
    return seconds;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: bench_query EXTENSION MODEL_DIR ROWS LABEL\n");
        return 2;
    }
    int rows = atoi(argv[3]);
    sqlite3 *db = NULL;
    char *err = NULL;
    int rc = 1;
    if (rows < 1 || sqlite3_open(":memory:", &db) != SQLITE_OK) {
        fprintf(stderr, "bench_query: ROWS must be positive and :memory: must open\n");
        goto done;
    }
    sqlite3_enable_load_extension(db, 1);
    if (sqlite3_load_extension(db, argv[1], NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "bench_query: cannot load %s: %s\n", argv[1], err ? err : "?");
        goto done;
    }
    sqlite3_stmt *st = NULL;
    int dim = 0;
    if (sqlite3_prepare_v2(db, "SELECT bert_load('bench', ?1), length(bert_embed('warm up', 'bench')) / 4",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, argv[2], -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) dim = sqlite3_column_int(st, 1);
    }
    sqlite3_finalize(st);
    if (dim <= 0) { fail(db, "loading the model"); goto done; }
    if (fill(db, rows, dim) != 0) goto done;

    long long text_ids[5] = {0}, blob_ids[5] = {0};
    double blob = timed(db,
                        "SELECT id FROM v ORDER BY bert_similarity(embedding, "
                        "bert_embed('caring for a young dog', 'bench'), 'bench') DESC LIMIT 5",
                        blob_ids);
    double text = timed(db,
                        "SELECT id FROM v ORDER BY bert_similarity(embedding, "
                        "'caring for a young dog', 'bench') DESC LIMIT 5",
                        text_ids);
    if (blob < 0 || text < 0) goto done;
    printf("QUERY model=%s rows=%d form=bert_embed seconds=%.4f\n", argv[4], rows, blob);
    printf("QUERY model=%s rows=%d form=text seconds=%.4f ratio=%.2f same_top5=%s\n", argv[4], rows, text,
           text / blob, memcmp(text_ids, blob_ids, sizeof text_ids) == 0 ? "yes" : "NO");
    rc = 0;
done:
    sqlite3_free(err);
    sqlite3_close(db);
    return rc;
}
