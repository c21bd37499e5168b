/*
 * test_usability.c - what a new user trips over: the query of a search
 * embedded once per statement, a second load of the extension, one directory
 * spelled several ways, clones without Git LFS, arguments in the wrong place,
 * the version, and the extension linked into an application.
 */
#include "test.h"
#include "../ext/sql/sqlite_bert.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ST_MEAN "build/models/st-mean-f16"
#define PLAIN "build/models/bert-plain-f32"

static long long encoder_calls(sqlite3 *db)
{
    char *v = t_query(db, "SELECT encoder_calls FROM bert_models", NULL);
    long long n = v && strncmp(v, "ERROR", 5) != 0 ? atoll(v) : -1;
    free(v);
    return n;
}

/* 200 stored embeddings in table docs(id, embedding). */
static void store_embeddings(sqlite3 *db)
{
    char *r = t_query(db, "SELECT bert_load('default', '" ST_MEAN "')", NULL);
    free(r);
    r = t_query(db, "CREATE TABLE docs AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 "
                    "FROM n WHERE i < 200) SELECT i AS id, bert_embed('document number ' || i) AS "
                    "embedding FROM n", NULL);
    free(r);
}

static void query_embedded_once(void)
{
    t_case("a constant query text is embedded once per statement, not once per row");
    sqlite3 *db = t_open();
    store_embeddings(db);
    long long before = encoder_calls(db);
    T_CHECK(before == 200, "storing 200 embeddings ran the encoder %lld times", before);
    char *by_text = t_query(db, "SELECT group_concat(id) FROM (SELECT id FROM docs ORDER BY "
                                "bert_similarity(embedding, 'a document about dogs') DESC LIMIT 5)", NULL);
    long long after = encoder_calls(db);
    T_CHECK(after - before == 1, "the query text was embedded %lld times for 200 rows", after - before);

    t_case("the cached query gives the same ranking as bert_embed of the query");
    char *by_blob = t_query(db, "SELECT group_concat(id) FROM (SELECT id FROM docs ORDER BY "
                                "bert_similarity(embedding, bert_embed('a document about dogs')) DESC LIMIT 5)",
                            NULL);
    T_CHECK(by_text && by_blob && strcmp(by_text, by_blob) == 0, "%s vs %s", by_text, by_blob);
    char *diff = t_query(db, "SELECT max(abs(bert_similarity(embedding, 'a document about dogs') - "
                             "bert_similarity(embedding, bert_embed('a document about dogs')))) FROM docs", NULL);
    T_CHECK(diff && strcmp(diff, "0.0") == 0, "cached and fresh query vectors differ by %s", diff);
    free(by_text);
    free(by_blob);
    free(diff);

    t_case("a bound query parameter is embedded once too");
    before = encoder_calls(db);
    char *count = t_query(db, "SELECT count(*) FROM docs WHERE bert_similarity(embedding, ?1) > -2",
                          "a query bound as a parameter", NULL);
    T_CHECK(count && strcmp(count, "200") == 0, "got %s", count);
    T_CHECK(encoder_calls(db) - before == 1, "embedded %lld times", encoder_calls(db) - before);
    free(count);

    t_case("a text that changes from row to row is embedded on every row");
    before = encoder_calls(db);
    count = t_query(db, "SELECT count(bert_similarity(embedding, 'row ' || id)) FROM docs", NULL);
    T_CHECK(count && strcmp(count, "200") == 0, "got %s", count);
    T_CHECK(encoder_calls(db) - before == 200, "embedded %lld times", encoder_calls(db) - before);
    free(count);

    t_case("a model named per row is honoured by the cached query");
    char *r = t_query(db, "SELECT bert_load('plain', '" PLAIN "')", NULL);
    free(r);
    /* Rows alternate between two models of different widths: a vector kept
     * for one model must not be used for the other. */
    char *dims = t_query(db, "SELECT group_concat(round(bert_similarity(bert_embed('x', m), 'query', m), 6)) "
                             "FROM (SELECT 'default' AS m UNION ALL SELECT 'plain' UNION ALL SELECT 'default')",
                         NULL);
    char *expect = t_query(db, "SELECT round(bert_similarity(bert_embed('x', 'default'), bert_embed('query', "
                               "'default')), 6) || ',' || round(bert_similarity(bert_embed('x', 'plain'), "
                               "bert_embed('query', 'plain')), 6) || ',' || round(bert_similarity(bert_embed("
                               "'x', 'default'), bert_embed('query', 'default')), 6)", NULL);
    T_CHECK(dims && expect && strcmp(dims, expect) == 0, "%s vs %s", dims, expect);
    free(dims);
    free(expect);
    sqlite3_close(db);
}

static void second_load(void)
{
    t_case("loading the extension again keeps the connection's models");
    sqlite3 *db = t_open();
    t_expect(db, "SELECT bert_load('default', ?1)", ST_MEAN, "default");
    char *err = NULL;
    int rc = sqlite3_bert_init(db, &err, NULL);
    T_CHECK(rc == SQLITE_OK, "second init: %d %s", rc, err ? err : "");
    sqlite3_free(err);
    t_expect(db, "SELECT group_concat(name) FROM bert_models", NULL, "default");
    t_expect(db, "SELECT length(bert_embed('still here'))", NULL, "1024");
    sqlite3_close(db);

    t_case("loading bert.so twice through SQLite's loader keeps the models");
    sqlite3 *plain = NULL;
    T_CHECK(sqlite3_open(":memory:", &plain) == SQLITE_OK, "open");
    sqlite3_enable_load_extension(plain, 1);
    err = NULL;
    rc = sqlite3_load_extension(plain, "./bert", NULL, &err);
    T_CHECK(rc == SQLITE_OK, "first load: %s", err ? err : "");
    sqlite3_free(err);
    t_expect(plain, "SELECT bert_load('default', ?1)", ST_MEAN, "default");
    err = NULL;
    rc = sqlite3_load_extension(plain, "./bert.so", NULL, &err);
    T_CHECK(rc == SQLITE_OK, "second load: %s", err ? err : "");
    sqlite3_free(err);
    t_expect(plain, "SELECT count(*) FROM bert_models", NULL, "1");
    t_expect(plain, "SELECT length(bert_embed('still here'))", NULL, "1024");
    sqlite3_close(plain);
}

/* bert_version() of an older build: refuses to replace it. */
static void old_version(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc; (void)argv;
    sqlite3_result_text(ctx, "0.0.1", -1, SQLITE_STATIC);
}

static void other_version(void)
{
    t_case("a connection holding another version of the extension is left as it is");
    sqlite3 *db = NULL;
    T_CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK, "open");
    sqlite3_create_function(db, "bert_version", 0, SQLITE_UTF8, NULL, old_version, NULL, NULL);
    char *err = NULL;
    int rc = sqlite3_bert_init(db, &err, NULL);
    T_CHECK(rc == SQLITE_ERROR && err && strstr(err, "0.0.1") && strstr(err, "new connection"),
            "rc %d, message %s", rc, err ? err : "(none)");
    sqlite3_free(err);
    t_expect(db, "SELECT bert_version()", NULL, "0.0.1");
    sqlite3_close(db);
}

static void path_spellings(void)
{
    t_case("one directory spelled three ways is one model");
    sqlite3 *db = t_open();
    char absolute[PATH_MAX];
    T_CHECK(realpath(ST_MEAN, absolute) != NULL, "realpath");
    t_expect(db, "SELECT bert_load('m', ?1)", ST_MEAN, "m");
    t_expect(db, "SELECT bert_load('m', ?1)", "./" ST_MEAN "/", "m");
    t_expect(db, "SELECT bert_load('m', ?1)", absolute, "m");
    t_expect(db, "SELECT count(*) FROM bert_models", NULL, "1");

    t_case("options equal to the model's defaults are no conflict");
    /* st-mean-f16 is a sentence-transformers model with mean pooling and Normalize. */
    t_expect(db, "SELECT bert_load('m', ?1, '{\"pooling\": \"mean\", \"normalize\": true, \"truncate\": true}')",
             ST_MEAN, "m");

    t_case("a real conflict names both paths and both option sets");
    t_expect_error(db, "SELECT bert_load('m', ?1, '{\"pooling\": \"cls\"}')", "./" ST_MEAN,
                   "already registered for '" ST_MEAN "'", "\"pooling\": \"mean\"",
                   "asks for './" ST_MEAN "'", "\"pooling\": \"cls\"", "bert_unload('m')", NULL);
    t_expect_error(db, "SELECT bert_load('m', ?1)", PLAIN, "'" ST_MEAN "'", "'" PLAIN "'", NULL);
    sqlite3_close(db);
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

static int copy_file(const char *from, const char *to)
{
    size_t len = 0;
    char *data = t_read_file(from, &len);
    FILE *f = data ? fopen(to, "wb") : NULL;
    int ok = f && fwrite(data, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = 0;
    free(data);
    return ok ? 0 : -1;
}

static const char pointer_text[] =
    "version https://git-lfs.github.com/spec/v1\n"
    "oid sha256:53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db\n"
    "size 90868376\n";

static void lfs_pointers(void)
{
    t_case("a Git LFS pointer instead of model.safetensors says what it is and how to fetch it");
    const char *dir = "build/lfs-pointer-model";
    mkdir(dir, 0755);
    int ok = copy_file(ST_MEAN "/config.json", "build/lfs-pointer-model/config.json") == 0 &&
             copy_file(ST_MEAN "/vocab.txt", "build/lfs-pointer-model/vocab.txt") == 0 &&
             write_file("build/lfs-pointer-model/model.safetensors", pointer_text) == 0;
    if (!T_CHECK(ok, "cannot prepare %s", dir)) return;
    sqlite3 *db = t_open();
    /* bert_load finds it: not a later INSERT, perhaps inside a trigger. */
    t_expect_error(db, "SELECT bert_load('lfs', ?1)", dir, "model.safetensors is a Git LFS pointer",
                   "git lfs pull", NULL);
    t_expect(db, "SELECT count(*) FROM bert_models", NULL, "0");

    t_case("a Git LFS pointer instead of vocab.txt says so too");
    T_CHECK(write_file("build/lfs-pointer-model/vocab.txt", pointer_text) == 0, "write");
    t_expect_error(db, "SELECT bert_load('lfs2', ?1)", dir, "vocab.txt is a Git LFS pointer",
                   "git lfs pull", NULL);
    sqlite3_close(db);
}

static void argument_errors(void)
{
    sqlite3 *db = t_open();
    t_case("bert_load on a file says a directory is expected");
    t_expect_error(db, "SELECT bert_load('x', ?1)", ST_MEAN "/config.json", "is a file, not a directory", NULL);

    t_case("bert_fill_mask with the model in top_k's place shows where the model goes");
    t_expect(db, "SELECT bert_load('m', ?1)", "build/models/mlm-tied-f32", "m");
    t_expect_error(db, "SELECT bert_fill_mask('a [MASK] b', 'm')", NULL, "the model name goes after it",
                   "bert_fill_mask(text, 5, 'm')", NULL);

    t_case("bert_answer_each with the model in top_k's place shows where the model goes");
    t_expect(db, "SELECT bert_load('qa', ?1)", "build/models/qa-f32", "qa");
    t_expect_error(db, "SELECT count(*) FROM bert_answer_each('who?', 'Ann did.', 'qa')", NULL,
                   "the model name goes after it", "bert_answer_each(question, context, 5, 'qa')", NULL);

    t_case("bert_embed_each names the key of an object's value that is not a text");
    t_expect_error(db, "SELECT count(*) FROM bert_embed_each('{\"first\": \"ok\", \"second\": 2}', 'm')", NULL,
                   "key \"second\"", NULL);
    t_expect_error(db, "SELECT count(*) FROM bert_embed_each('[\"a\", null, 3]', 'm')", NULL,
                   "item 3", "index 2", NULL);
    sqlite3_close(db);
}

static void version(void)
{
    t_case("bert_version() gives the version of the public header");
    sqlite3 *db = t_open();
    t_expect(db, "SELECT bert_version()", NULL, SQLITE_BERT_VERSION);
    char expected[32];
    int major = SQLITE_BERT_VERSION_NUMBER / 1000000, minor = SQLITE_BERT_VERSION_NUMBER / 1000 % 1000;
    snprintf(expected, sizeof expected, "%d.%d.%d", major, minor, SQLITE_BERT_VERSION_NUMBER % 1000);
    T_CHECK(strcmp(expected, SQLITE_BERT_VERSION) == 0, "number %s, string %s", expected, SQLITE_BERT_VERSION);
    sqlite3_close(db);
}

static void linked_application(void)
{
    t_case("an application linked with libsqlite_bert.a registers it with sqlite3_auto_extension");
    if (!T_CHECK(t_exists("build/static_app"), "build/static_app was not built (make test builds it)")) return;
    int status = system("build/static_app " ST_MEAN " > build/static_app.out 2>&1");
    char *out = t_read_file("build/static_app.out", NULL);
    T_CHECK(status == 0 && out && strstr(out, "bert_version() = " SQLITE_BERT_VERSION) &&
            strstr(out, "bert_embed: 1024 bytes") && strstr(out, "second connection: 1024 bytes"),
            "exit status %d, output:\n%s", status, out ? out : "(none)");
    free(out);
}

void suite_usability(void)
{
    query_embedded_once();
    second_load();
    other_version();
    path_spellings();
    lfs_pointers();
    argument_errors();
    version();
    linked_application();
}
