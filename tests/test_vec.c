/*
 * test_vec.c - vector search with sqlite-vec, and embeddings that stay in
 * sync with their text.
 *
 * sqlite-vec's loadable extension is ./vec0.so (`make sqlite-vec` fetches
 * it); the cases that need it say "skipped" when it is absent.  They load it
 * next to the extension linked into this runner, in one connection, as the
 * sqlite3 shell does with `.load ./vec0` and `.load ./bert`.
 *
 * The references are the extension's own brute-force answers
 * (bert_similarity over every row, bert_embed of the current text), which
 * tests/test_golden.c holds to PyTorch.
 */
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEMO "model/demo"                          /* hidden size 256 */
#define SAME_SIZE "build/models/st-mean-f16"        /* another model, also 256 */
#define OTHER_SIZE "build/models/mlm-tied-f32"      /* hidden size 192 */
#define CORPUS "tests/bench/sentences.txt"
#define VEC0 "./vec0.so"
#define K 10

sqlite3 *t_open_with_vec(void)
{
    if (!t_exists(VEC0)) {
        t_skip("no ./vec0.so: make sqlite-vec");
        return NULL;
    }
    sqlite3 *db = t_open();
    sqlite3_enable_load_extension(db, 1);
    char *err = NULL;
    int rc = sqlite3_load_extension(db, VEC0, NULL, &err);
    T_CHECK(rc == SQLITE_OK, "loading %s: %s", VEC0, err ? err : "?");
    sqlite3_free(err);
    if (rc != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

static int exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    T_CHECK(rc == SQLITE_OK, "%s\n    gave %s", sql, err ? err : "?");
    sqlite3_free(err);
    return rc == SQLITE_OK;
}

/* docs(id, body): one row per line of the corpus. */
static int load_corpus(sqlite3 *db)
{
    char *text = t_read_file(CORPUS, NULL);
    if (!T_CHECK(text != NULL, "cannot read %s", CORPUS)) return 0;
    int ok = exec(db, "CREATE TABLE docs(id INTEGER PRIMARY KEY, body TEXT NOT NULL)");
    sqlite3_stmt *ins = NULL;
    if (ok) ok = sqlite3_prepare_v2(db, "INSERT INTO docs(body) VALUES (?1)", -1, &ins, NULL) == SQLITE_OK;
    for (char *line = text, *next; ok && line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        if (!*line) continue;
        sqlite3_bind_text(ins, 1, line, -1, SQLITE_STATIC);
        ok = sqlite3_step(ins) == SQLITE_DONE;
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    free(text);
    T_CHECK(ok, "filling docs from %s: %s", CORPUS, sqlite3_errmsg(db));
    return ok;
}

/* One ranked answer: row ids and distances (1 - cosine similarity). */
typedef struct {
    long long id[K];
    double distance[K];
    int n;
} ranking;

static int rank(sqlite3 *db, const char *sql, const char *query, ranking *r)
{
    sqlite3_stmt *stmt = NULL;
    r->n = 0;
    if (!T_CHECK(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db)))
        return 0;
    sqlite3_bind_text(stmt, 1, query, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW && r->n < K) {
        r->id[r->n] = sqlite3_column_int64(stmt, 0);
        r->distance[r->n] = sqlite3_column_double(stmt, 1);
        r->n++;
    }
    int ok = T_CHECK(rc == SQLITE_ROW || rc == SQLITE_DONE, "%s: %s", sql, sqlite3_errmsg(db));
    sqlite3_finalize(stmt);
    return ok;
}

/* The vec0 ranking must be the brute-force one: the same ids in the same
 * order, and distances 1 - similarity within 1e-5.  Two rows may trade
 * places only when their brute-force distances tie within that tolerance
 * (the index holds the batched embeddings, the brute force re-embeds each
 * text alone, and the two can differ in the last digits). */
static void compare_rankings(const char *query, const ranking *knn, const ranking *brute, double *worst)
{
    if (!T_CHECK(knn->n == K && brute->n == K, "'%s': %d KNN rows, %d brute-force rows, expected %d",
                 query, knn->n, brute->n, K))
        return;
    for (int i = 0; i < K; i++) {
        double diff = fabs(knn->distance[i] - brute->distance[i]);
        if (diff > *worst) *worst = diff;
        T_CHECK(diff <= 1e-5,
                "'%s' rank %d: vec0 distance %.8f, 1 - bert_similarity %.8f", query, i + 1,
                knn->distance[i], brute->distance[i]);
        if (knn->id[i] == brute->id[i]) continue;
        int tie = 0;
        for (int j = 0; j < K; j++)
            if (brute->id[j] == knn->id[i] && fabs(brute->distance[j] - brute->distance[i]) <= 1e-5) tie = 1;
        T_CHECK(tie, "'%s' rank %d: vec0 gives row %lld, brute force row %lld (distance %.8f)", query, i + 1,
                knn->id[i], brute->id[i], brute->distance[i]);
    }
}

static const char *const queries[] = {
    "a cat sleeping in the sun",
    "buying food at the market",
    "the train was late this morning",
};

static void knn_equals_brute_force(void)
{
    t_case("vec0 KNN over bert_embed_each's vectors ranks as brute-force bert_similarity");
    sqlite3 *db = t_open_with_vec();
    if (!db) return;
    if (!exec(db, "SELECT bert_load('demo', '" DEMO "')") || !load_corpus(db)) goto done;
    /* The index is filled in one statement from batched embeddings.
     * CHUNKS: with bert_chunks, the JSON object becomes one entry per chunk
     * (json_group_object(d.id || ':' || c.chunk_index, c.text) over
     * docs d, bert_chunks(d.body, ...) c) and the index holds chunks. */
    if (!exec(db,
              "CREATE VIRTUAL TABLE docs_vec USING vec0(embedding float[256] distance_metric=cosine);"
              "INSERT INTO docs_vec(rowid, embedding) "
              "  SELECT CAST(key AS INTEGER), embedding "
              "  FROM bert_embed_each((SELECT json_group_object(id, body) FROM docs), 'demo');"
              /* The brute force's side: each text embedded alone, once (not
               * once a query). */
              "CREATE TEMP TABLE docs_alone AS SELECT id, bert_embed(body, 'demo') AS embedding FROM docs;"))
        goto done;
    double worst = 0;
    t_expect(db, "SELECT (SELECT count(*) FROM docs_vec) = (SELECT count(*) FROM docs) "
                 "AND (SELECT count(*) FROM docs) > 200", NULL, "1");
    for (size_t q = 0; q < sizeof queries / sizeof *queries; q++) {
        ranking knn, brute;
        if (!rank(db,
                  "SELECT rowid, distance FROM docs_vec "
                  "WHERE embedding MATCH bert_embed(?1, 'demo') AND k = 10 ORDER BY distance",
                  queries[q], &knn))
            break;
        if (!rank(db,
                  "SELECT id, 1 - bert_similarity(embedding, ?1, 'demo') AS distance FROM docs_alone "
                  "ORDER BY distance, id LIMIT 10",
                  queries[q], &brute))
            break;
        compare_rankings(queries[q], &knn, &brute, &worst);
    }
    printf("  vec0 KNN against brute force: max |distance - (1 - bert_similarity)| %.1e over %d ranks\n",
           worst, (int)(sizeof queries / sizeof *queries) * K);
done:
    sqlite3_close(db);
}

static void subtype_convention(void)
{
    t_case("vec0 takes bert_embed's BLOB (subtype 223) as float32, directly and from a stored column");
    sqlite3 *db = t_open_with_vec();
    if (!db) return;
    if (!exec(db, "SELECT bert_load('demo', '" DEMO "')")) goto done;
    t_expect(db, "SELECT vec_type(bert_embed('a cat'))", NULL, "float32");
    t_expect(db, "SELECT vec_length(bert_embed('a cat'))", NULL, "256");
    /* Read back from the index: the very bytes bert_embed gave. */
    exec(db, "CREATE VIRTUAL TABLE v USING vec0(embedding float[256] distance_metric=cosine);"
             "CREATE TABLE stored(id INTEGER PRIMARY KEY, e BLOB);"
             "INSERT INTO stored VALUES (2, bert_embed('a dog'));"
             "INSERT INTO v(rowid, embedding) VALUES (1, bert_embed('a cat'));"
             "INSERT INTO v(rowid, embedding) SELECT id, e FROM stored;");
    t_expect(db, "SELECT group_concat(embedding = bert_embed(?1), ',') FROM "
                 "(SELECT embedding FROM v WHERE rowid = 1)", "a cat", "1");
    t_expect(db, "SELECT (SELECT embedding FROM v WHERE rowid = 2) = bert_embed(?1)", "a dog", "1");
    /* vec0's cosine distance and ours agree on the same two vectors. */
    t_expect(db, "SELECT abs(vec_distance_cosine(bert_embed('a cat'), bert_embed(?1)) "
                 "- (1 - bert_similarity('a cat', ?1))) < 1e-6", "a dog", "1");
    /* A vector of another model's size is refused by the index. */
    exec(db, "SELECT bert_load('small', '" OTHER_SIZE "')");
    t_expect_error(db, "INSERT INTO v(rowid, embedding) VALUES (3, bert_embed(?1, 'small'))", "a cat",
                   "Expected 256 dimensions but received 192", NULL);
done:
    sqlite3_close(db);
}

/* ---- long documents: chunks, their index, best chunk per document --------- */

/* 1 when bert_chunks cuts "a b c" into pieces of two words at most. */
static int have_chunks(sqlite3 *db)
{
    char *got = t_query(db, "SELECT count(*) FROM bert_chunks('a b c', 2, 0, 'demo')", (const char *)NULL);
    int ok = T_CHECK(strcmp(got, "2") == 0, "bert_chunks on a short text: %s", got);
    free(got);
    return ok;
}

static void document_search(void)
{
    t_case("documents cut by bert_chunks: vec0 KNN over chunks ranks as brute force, best chunk per document");
    sqlite3 *db = t_open_with_vec();
    if (!db) return;
    if (!exec(db, "SELECT bert_load('demo', '" DEMO "')") || !have_chunks(db) || !load_corpus(db)) goto done;
    /* 30 documents of 10 consecutive sentences each (about 150 word pieces),
     * cut into overlapping chunks of at most 24 word pieces. */
    if (!exec(db,
              "CREATE TABLE documents(id INTEGER PRIMARY KEY, body TEXT NOT NULL);"
              "INSERT INTO documents(id, body) SELECT (id - 1) / 10 + 1, group_concat(body, ' ') "
              "  FROM (SELECT id, body FROM docs WHERE id <= 300 ORDER BY id) GROUP BY (id - 1) / 10;"
              "CREATE TABLE chunks(id INTEGER PRIMARY KEY, doc_id INTEGER NOT NULL, chunk_index INTEGER,"
              "  start INTEGER, \"end\" INTEGER, text TEXT NOT NULL);"
              "INSERT INTO chunks(doc_id, chunk_index, start, \"end\", text) "
              "  SELECT d.id, c.chunk_index, c.start, c.\"end\", c.text "
              "  FROM documents AS d, bert_chunks(d.body, 24, 6, 'demo') AS c ORDER BY d.id, c.chunk_index;"
              "CREATE VIRTUAL TABLE chunks_vec USING vec0(embedding float[256] distance_metric=cosine);"
              "INSERT INTO chunks_vec(rowid, embedding) SELECT CAST(key AS INTEGER), embedding "
              "  FROM bert_embed_each((SELECT json_group_object(id, text) FROM chunks), 'demo');"
              "CREATE TEMP TABLE chunks_alone AS SELECT id, doc_id, bert_embed(text, 'demo') AS embedding FROM chunks;"))
        goto done;
    /* Every document is cut into several chunks, each its own substring. */
    t_expect(db, "SELECT min(n) > 3 FROM (SELECT count(*) AS n FROM chunks GROUP BY doc_id)", NULL, "1");
    double worst = 0;
    t_expect(db, "SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.doc_id "
                 "WHERE c.text IS NOT substr(d.body, c.start + 1, c.\"end\" - c.start)", NULL, "0");
    for (size_t q = 0; q < sizeof queries / sizeof *queries; q++) {
        ranking knn, brute;
        if (!rank(db,
                  "SELECT rowid, distance FROM chunks_vec "
                  "WHERE embedding MATCH bert_embed(?1, 'demo') AND k = 10 ORDER BY distance",
                  queries[q], &knn) ||
            !rank(db,
                  "SELECT id, 1 - bert_similarity(embedding, ?1, 'demo') AS distance FROM chunks_alone "
                  "ORDER BY distance, id LIMIT 10",
                  queries[q], &brute))
            break;
        compare_rankings(queries[q], &knn, &brute, &worst);
        /* Documents, best chunk wins: from the index's nearest chunks, and by
         * brute force over every chunk of every document. */
        if (!rank(db,
                  "WITH hits AS (SELECT rowid AS chunk_id, distance FROM chunks_vec"
                  "  WHERE embedding MATCH bert_embed(?1, 'demo') AND k = 100)"
                  "SELECT c.doc_id, min(h.distance) AS distance FROM hits AS h JOIN chunks AS c ON c.id = h.chunk_id "
                  "GROUP BY c.doc_id ORDER BY distance LIMIT 10",
                  queries[q], &knn) ||
            !rank(db,
                  "SELECT doc_id, 1 - max(bert_similarity(embedding, ?1, 'demo')) AS distance FROM chunks_alone "
                  "GROUP BY doc_id ORDER BY distance, doc_id LIMIT 10",
                  queries[q], &brute))
            break;
        compare_rankings(queries[q], &knn, &brute, &worst);
    }
done:
    sqlite3_close(db);
}

/* ---- a generated column ------------------------------------------------------ */

#define GEN_DB "build/test_vec_generated.db"

int sqlite3_bert_init(sqlite3 *db, char **err, const sqlite3_api_routines *api);

/* A connection to GEN_DB, with or without the extension registered. */
static sqlite3 *open_file(int with_extension)
{
    sqlite3 *db = NULL;
    if (sqlite3_open(GEN_DB, &db) != SQLITE_OK) {
        T_CHECK(0, "cannot open %s", GEN_DB);
        sqlite3_close(db);
        return NULL;
    }
    if (with_extension) {
        char *err = NULL;
        int rc = sqlite3_bert_init(db, &err, NULL);
        T_CHECK(rc == SQLITE_OK, "init: %s", err ? err : "?");
        sqlite3_free(err);
    }
    return db;
}

/* How many rows' stored embedding is not bert_embed(body) of the model now
 * registered as 'demo'. */
static const char *const STALE_ROWS =
    "SELECT count(*) FROM docs WHERE embedding IS NOT bert_embed(body, 'demo')";

static void generated_column(void)
{
    t_case("a generated column keeps bert_embed(body) in sync through INSERT and UPDATE");
    unlink(GEN_DB);
    sqlite3 *db = open_file(1);
    if (!db) return;
    if (!exec(db, "SELECT bert_load('demo', '" DEMO "');"
                  "CREATE TABLE docs(id INTEGER PRIMARY KEY, body TEXT NOT NULL, views INTEGER DEFAULT 0,"
                  "  embedding BLOB GENERATED ALWAYS AS (bert_embed(body, 'demo')) STORED);"
                  "INSERT INTO docs(body) VALUES ('The cat slept on the warm windowsill.'),"
                  "  ('A light rain fell over the city.'), ('She bought fresh bread at the market.');"
                  "CREATE TABLE before AS SELECT id, embedding FROM docs;"))
        goto done;
    t_expect(db, "SELECT count(*) || ' ' || sum(length(embedding)) FROM docs", NULL, "3 3072");
    t_expect(db, STALE_ROWS, NULL, "0");
    exec(db, "UPDATE docs SET body = 'The stock market fell sharply today.' WHERE id = 2");
    t_expect(db, STALE_ROWS, NULL, "0");
    t_expect(db, "SELECT group_concat(d.id) FROM docs d JOIN before b USING (id) "
                 "WHERE d.embedding IS NOT b.embedding", NULL, "2");
    t_expect(db, "SELECT embedding = bert_embed(?1, 'demo') FROM docs WHERE id = 2",
             "The stock market fell sharply today.", "1");
    /* bert_embed is accepted because it is registered deterministic;
     * bert_load, which changes the connection's state, is not. */
    t_expect_error(db, "CREATE TABLE bad(path TEXT, name TEXT GENERATED ALWAYS AS (bert_load('x', path)) STORED)",
                   NULL, "non-deterministic", NULL);

    t_case("a generated column: connections without the model or the extension");
    sqlite3 *no_model = open_file(1);
    if (no_model) {
        /* Reading and deleting need no model; writing a row computes the
         * column, and SQLite recomputes it on every UPDATE, whichever
         * column the UPDATE sets. */
        t_expect(no_model, "SELECT count(*) FROM docs WHERE length(embedding) = 1024", NULL, "3");
        t_expect_error(no_model, "INSERT INTO docs(body) VALUES (?1)", "a new text",
                       "unknown model 'demo'", "bert_load('demo'", NULL);
        t_expect_error(no_model, "UPDATE docs SET views = views + 1 WHERE id = 1", NULL,
                       "unknown model 'demo'", NULL);
        sqlite3_close(no_model);
    }
    sqlite3 *plain = open_file(0);
    if (plain) {
        t_expect(plain, "SELECT count(*) FROM docs WHERE length(embedding) = 1024", NULL, "3");
        t_expect_error(plain, "INSERT INTO docs(body) VALUES (?1)", "a new text",
                       "unknown function: bert_embed()", NULL);
        sqlite3_close(plain);
    }
    /* With PRAGMA trusted_schema=OFF (or a build with SQLITE_TRUSTED_SCHEMA=0)
     * SQLite refuses functions not flagged innocuous in the schema. */
    exec(db, "PRAGMA trusted_schema = OFF");
    t_expect_error(db, "INSERT INTO docs(body) VALUES (?1)", "a new text", "unsafe use of bert_embed()", NULL);
    exec(db, "PRAGMA trusted_schema = ON");

    t_case("a generated column: another model under the same name leaves stale rows until rewritten");
    /* While 'demo' is registered, the name cannot point elsewhere. */
    t_expect_error(db, "SELECT bert_load('demo', ?1)", SAME_SIZE, "already registered", "bert_unload('demo')", NULL);
    t_expect(db, STALE_ROWS, NULL, "0");
    exec(db, "SELECT bert_unload('demo'); SELECT bert_load('demo', '" SAME_SIZE "');");
    /* Stored values are not recomputed: every row is now stale, silently
     * (same size, so nothing in the bytes shows it). */
    t_expect(db, STALE_ROWS, NULL, "3");
    exec(db, "INSERT INTO docs(body) VALUES ('A new row, embedded by the new model.')");
    t_expect(db, STALE_ROWS, NULL, "3");
    /* Rewriting every row recomputes the column. */
    exec(db, "UPDATE docs SET body = body");
    t_expect(db, STALE_ROWS, NULL, "0");
    t_expect(db, "SELECT count(*) FROM docs", NULL, "4");
done:
    sqlite3_close(db);
    unlink(GEN_DB);
}

/* ---- triggers keeping a vec0 index in sync ----------------------------------- */

static const char *const TRIGGERS =
    "CREATE TABLE docs(id INTEGER PRIMARY KEY, body TEXT NOT NULL);"
    "CREATE VIRTUAL TABLE docs_vec USING vec0(embedding float[256] distance_metric=cosine);"
    "CREATE TRIGGER docs_vec_insert AFTER INSERT ON docs BEGIN"
    "  INSERT INTO docs_vec(rowid, embedding) VALUES (new.id, bert_embed(new.body, 'demo'));"
    "END;"
    /* vec0 does not move a row to another rowid: delete and insert. */
    "CREATE TRIGGER docs_vec_update AFTER UPDATE OF id, body ON docs BEGIN"
    "  DELETE FROM docs_vec WHERE rowid = old.id;"
    "  INSERT INTO docs_vec(rowid, embedding) VALUES (new.id, bert_embed(new.body, 'demo'));"
    "END;"
    "CREATE TRIGGER docs_vec_delete AFTER DELETE ON docs BEGIN"
    "  DELETE FROM docs_vec WHERE rowid = old.id;"
    "END;";

/* The index holds exactly one vector per document, bert_embed(body). */
static void check_index(sqlite3 *db, const char *after)
{
    char *got = t_query(db,
        "SELECT (SELECT count(*) FROM docs) || ' ' || (SELECT count(*) FROM docs_vec) || ' ' ||"
        " (SELECT count(*) FROM docs d JOIN docs_vec v ON v.rowid = d.id"
        "  WHERE v.embedding = bert_embed(d.body, 'demo'))", (const char *)NULL);
    int docs = -1, vecs = -1, same = -1;
    sscanf(got, "%d %d %d", &docs, &vecs, &same);
    T_CHECK(docs > 0 && docs == vecs && docs == same,
            "after %s: docs, index rows, rows whose vector is bert_embed(body): %s", after, got);
    free(got);
}

static void triggers(void)
{
    t_case("triggers keep a vec0 index in sync through INSERT, UPDATE and DELETE");
    sqlite3 *db = t_open_with_vec();
    if (!db) return;
    if (!exec(db, "SELECT bert_load('demo', '" DEMO "')") || !exec(db, TRIGGERS)) goto done;
    exec(db, "INSERT INTO docs(body) VALUES ('The cat slept on the warm windowsill.'),"
             "  ('A light rain fell over the city.'), ('She bought fresh bread at the market.'),"
             "  ('The train to the coast was late again.')");
    check_index(db, "INSERT");
    const char *nearest = "SELECT rowid FROM docs_vec WHERE embedding MATCH bert_embed(?1, 'demo') AND k = 1";
    t_expect(db, nearest, "a kitten asleep by the window", "1");
    exec(db, "UPDATE docs SET body = 'Kittens nap in the sunny window.' WHERE id = 3");
    check_index(db, "UPDATE of body");
    exec(db, "UPDATE docs SET id = 10 WHERE id = 4");
    check_index(db, "UPDATE of id");
    t_expect(db, "SELECT count(*) FROM docs_vec WHERE rowid = 4", NULL, "0");
    exec(db, "DELETE FROM docs WHERE id = 1");
    check_index(db, "DELETE");
    t_expect(db, nearest, "a kitten asleep by the window", "3");
    /* A failing embedding rolls the whole statement back. */
    exec(db, "SELECT bert_unload('demo')");
    t_expect_error(db, "INSERT INTO docs(body) VALUES (?1)", "no model now", "unknown model 'demo'", NULL);
    exec(db, "SELECT bert_load('demo', '" DEMO "')");
    check_index(db, "a refused INSERT");
    /* An untrusted schema may not use the index or bert_embed in triggers. */
    exec(db, "PRAGMA trusted_schema = OFF");
    t_expect_error(db, "INSERT INTO docs(body) VALUES (?1)", "untrusted", "unsafe use of", NULL);
    exec(db, "PRAGMA trusted_schema = ON");
    check_index(db, "a refused INSERT in an untrusted schema");
done:
    sqlite3_close(db);
}

void suite_vec(void)
{
    subtype_convention();
    knn_equals_brute_force();
    document_search();
    generated_column();
    triggers();
}
