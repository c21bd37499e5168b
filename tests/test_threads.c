/*
 * test_threads.c - connections in different threads using one model at the
 * same time: every thread has its own connection (as SQLite requires), all
 * share the process-wide weights, and every result must be identical to the
 * one computed by a single thread.
 */
#include "test.h"
#include "../ext/models/weight_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 8
#define CALLS 1000
#define MODEL "build/models/bert-plain-f32"

static const char *sentences[] = {
    "The cat sat on the mat.",
    "A quick brown fox jumps over the lazy dog.",
    "SQLite is a small, fast, self-contained SQL database engine.",
    "Où est la bibliothèque ?",
    "Numbers like 3.14159 and 2,718 are tokenized too.",
};
#define N_SENTENCES (int)(sizeof sentences / sizeof *sentences)

typedef struct {
    unsigned char expected[N_SENTENCES][512];
    int mismatches;
    int errors;
    int refs_seen;
} shared_state;

static int embed(sqlite3 *db, const char *text, unsigned char out[512])
{
    sqlite3_stmt *stmt = NULL;
    int ok = sqlite3_prepare_v2(db, "SELECT bert_embed(?1, 'm')", -1, &stmt, NULL) == SQLITE_OK &&
             sqlite3_bind_text(stmt, 1, text, -1, SQLITE_STATIC) == SQLITE_OK &&
             sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_bytes(stmt, 0) == 512;
    if (ok) memcpy(out, sqlite3_column_blob(stmt, 0), 512);
    sqlite3_finalize(stmt);
    return ok;
}

static sqlite3 *open_with_model(void)
{
    sqlite3 *db = t_open();
    char *r = t_query(db, "SELECT bert_load('m', '" MODEL "')", NULL);
    int ok = strcmp(r, "m") == 0;
    free(r);
    if (!ok) { sqlite3_close(db); return NULL; }
    return db;
}

typedef struct {
    shared_state *state;
    int seed;
    int mismatches, errors, refs;
} worker_args;

static void *worker(void *p)
{
    worker_args *w = p;
    sqlite3 *db = open_with_model();
    if (!db) { w->errors++; return NULL; }
    unsigned char got[512];
    for (int i = 0; i < CALLS; i++) {
        int s = (i + w->seed) % N_SENTENCES;
        if (!embed(db, sentences[s], got)) w->errors++;
        else if (memcmp(got, w->state->expected[s], 512) != 0) w->mismatches++;
    }
    char *refs = t_query(db, "SELECT refs FROM bert_models", NULL);
    w->refs = atoi(refs);
    free(refs);
    sqlite3_close(db);
    return NULL;
}

void suite_threads(void)
{
    t_case("8 threads x 1000 calls on one model equal a single thread's results");
    static shared_state state;
    sqlite3 *db = open_with_model();
    if (!T_CHECK(db != NULL, "cannot register " MODEL)) return;
    for (int s = 0; s < N_SENTENCES; s++)
        if (!T_CHECK(embed(db, sentences[s], state.expected[s]), "single-thread embedding %d failed", s)) {
            sqlite3_close(db);
            return;
        }
    int mapped = bert_weight_cache_count();

    pthread_t threads[THREADS];
    worker_args args[THREADS];
    for (int t = 0; t < THREADS; t++) {
        args[t] = (worker_args){.state = &state, .seed = t};
        if (pthread_create(&threads[t], NULL, worker, &args[t]) != 0) {
            T_CHECK(0, "cannot start thread %d", t);
            args[t].errors = -1;
        }
    }
    int errors = 0, mismatches = 0, max_refs = 0;
    for (int t = 0; t < THREADS; t++) {
        if (args[t].errors == -1) continue;
        pthread_join(threads[t], NULL);
        errors += args[t].errors;
        mismatches += args[t].mismatches;
        if (args[t].refs > max_refs) max_refs = args[t].refs;
    }
    T_CHECK(errors == 0, "%d calls failed", errors);
    T_CHECK(mismatches == 0, "%d results differ from the single-thread ones", mismatches);
    T_CHECK(max_refs >= 2, "the weights were never shared (refs %d)", max_refs);
    T_CHECK(bert_weight_cache_count() == mapped, "the threads mapped the weights again");

    t_case("after the threads closed their connections one reference is left");
    char *refs = t_query(db, "SELECT refs FROM bert_models", NULL);
    T_CHECK(strcmp(refs, "1") == 0, "refs %s", refs);
    free(refs);
    sqlite3_close(db);
}
