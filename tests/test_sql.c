/*
 * test_sql.c - the SQL surface and the model registry: registration,
 * laziness, sharing of weights between connections, the default model,
 * argument handling and error messages.  Numerical agreement with the
 * reference is test_golden.c's business; here results are compared with
 * each other (batched vs row by row, BLOB vs TEXT arguments).
 */
#include "test.h"
#include "../ext/models/weight_cache.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#define PLAIN "build/models/bert-plain-f32"
#define ST_MEAN "build/models/st-mean-f16"
#define MLM "build/models/mlm-tied-f32"
#define PRETRAIN "build/models/pretrain-untied-bf16"

static void expect(sqlite3 *db, const char *sql, const char *expected)
{
    t_expect(db, sql, NULL, expected);
}

/* Checks that `sql` fails with a message containing each of the NULL-ended fragments. */
static void expect_error(sqlite3 *db, const char *sql, ...)
{
    va_list ap;
    va_start(ap, sql);
    t_expect_errorv(db, sql, NULL, ap);
    va_end(ap);
}

static void registration(void)
{
    t_case("bert_load returns the name and only reads config.json");
    sqlite3 *db = t_open();
    expect(db, "SELECT bert_load('plain', '" PLAIN "')", "plain");
    expect(db, "SELECT loaded || ',' || hidden_size || ',' || num_layers || ',' || num_heads || ',' || "
               "vocab_size || ',' || max_length || ',' || pooling FROM bert_models WHERE name = 'plain'",
           "0,128,2,2,30522,512,mean");

    t_case("tokenizing does not load the weights");
    expect(db, "SELECT json_array_length(bert_token_ids('hello world', 'plain'))", "4");
    expect(db, "SELECT loaded FROM bert_models WHERE name = 'plain'", "0");

    t_case("the first embedding loads the weights");
    expect(db, "SELECT length(bert_embed('hello', 'plain'))", "512");
    expect(db, "SELECT loaded || ',' || dtype || ',' || refs FROM bert_models", "1,float32,1");

    t_case("registering the same name and path again is a no-op");
    expect(db, "SELECT bert_load('plain', '" PLAIN "')", "plain");
    expect(db, "SELECT count(*) FROM bert_models", "1");

    t_case("the same name for another path is an error that says what to do");
    expect_error(db, "SELECT bert_load('plain', '" MLM "')", "already registered", "bert_unload", NULL);

    t_case("an unknown model name lists the registered ones");
    expect(db, "SELECT bert_load('mlm', '" MLM "')", "mlm");
    expect_error(db, "SELECT bert_embed('x', 'plai')", "unknown model 'plai'", "'plain'", "'mlm'", NULL);

    t_case("several models and no 'default': the name is required");
    expect_error(db, "SELECT bert_embed('x')", "several models", "'default'", NULL);

    t_case("a model named 'default' is the default");
    expect(db, "SELECT bert_load('default', '" ST_MEAN "')", "default");
    expect(db, "SELECT length(bert_embed('x'))", "1024");

    t_case("bert_unload drops the registration");
    expect(db, "SELECT bert_unload('mlm')", "1");
    expect(db, "SELECT bert_unload('mlm')", "0");
    expect(db, "SELECT group_concat(name) FROM (SELECT name FROM bert_models ORDER BY name)", "default,plain");
    sqlite3_close(db);

    t_case("a missing directory or config.json is a clear error");
    db = t_open();
    expect_error(db, "SELECT bert_load('x', 'build/models/no-such-model')", "not found", NULL);
    expect_error(db, "SELECT bert_load('x', 'tests')", "config.json", NULL);
    expect(db, "SELECT count(*) FROM bert_models", "0");

    t_case("no model at all: the error says how to register one");
    expect_error(db, "SELECT bert_embed('x')", "bert_load", "BERT_MODEL", NULL);

    t_case("bad options are rejected by name");
    expect_error(db, "SELECT bert_load('x', '" PLAIN "', '{\"pooling\": \"median\"}')", "pooling", NULL);
    expect_error(db, "SELECT bert_load('x', '" PLAIN "', '{\"colour\": 1}')", "colour", NULL);
    expect_error(db, "SELECT bert_load('x', '" PLAIN "', '{\"max_length\": 100000}')", "max_position_embeddings", NULL);
    expect_error(db, "SELECT bert_load('x', '" PLAIN "', 'not json')", "JSON", NULL);
    expect_error(db, "SELECT bert_load('x', '" PLAIN "', '[1]')", "object", NULL);
    expect(db, "SELECT count(*) FROM bert_models", "0");
    sqlite3_close(db);
}

static void default_from_environment(void)
{
    t_case("BERT_MODEL registers the default lazily");
    setenv("BERT_MODEL", PLAIN, 1);
    sqlite3 *db = t_open();
    expect(db, "SELECT count(*) FROM bert_models", "0");
    expect(db, "SELECT length(bert_embed('hello'))", "512");
    expect(db, "SELECT name || ' ' || path FROM bert_models", "default " PLAIN);
    sqlite3_close(db);

    t_case("a BERT_MODEL that does not exist is named in the error");
    setenv("BERT_MODEL", "build/models/nowhere", 1);
    db = t_open();
    expect_error(db, "SELECT bert_embed('hello')", "BERT_MODEL", "nowhere", NULL);
    sqlite3_close(db);
    unsetenv("BERT_MODEL");
}

/* The process's resident set size, from /proc/self/statm (Linux). */
static long resident_kib(void)
{
    long pages_total = 0, pages_resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    if (fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = 0;
    fclose(f);
    return pages_resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static long file_kib_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)(st.st_size / 1024) : 0;
}

static void sharing(void)
{
    t_case("two connections share one mapping of the weights");
    int before = bert_weight_cache_count();
    sqlite3 *a = t_open(), *b = t_open();
    expect(a, "SELECT bert_load('m', '" PLAIN "')", "m");
    expect(b, "SELECT bert_load('other-name', '" PLAIN "')", "other-name");
    expect(a, "SELECT length(bert_embed('one', 'm'))", "512");
    expect(b, "SELECT length(bert_embed('two', 'other-name'))", "512");
    expect(a, "SELECT refs FROM bert_models", "2");
    T_CHECK(bert_weight_cache_count() == before + 1, "%d weight files mapped, expected %d", bert_weight_cache_count(), before + 1);

    t_case("a second connection on the same float32 weights adds no copy of them");
    sqlite3 *c = t_open(), *d = t_open();
    expect(c, "SELECT bert_load('m', '" MLM "')", "m");
    expect(d, "SELECT bert_load('m', '" MLM "')", "m");
    /* Fill-mask reads every weight, the tied decoder included. */
    long before_c = resident_kib();
    expect(c, "SELECT json_array_length(bert_fill_mask('a [MASK] b', 1, 'm'))", "1");
    long after_c = resident_kib();
    expect(d, "SELECT json_array_length(bert_fill_mask('a [MASK] b', 1, 'm'))", "1");
    long after_d = resident_kib();
    long file_kib = file_kib_of(MLM "/model.safetensors");
    printf("  memory: model file %ld KiB; first connection +%ld KiB, second connection +%ld KiB\n",
           file_kib, after_c - before_c, after_d - after_c);
    T_CHECK(after_d - after_c < file_kib / 4, "the second connection grew the process by %ld KiB "
            "(file %ld KiB)", after_d - after_c, file_kib);
    sqlite3_close(c);
    sqlite3_close(d);

    t_case("closing a connection gives its reference back");
    sqlite3_close(b);
    expect(a, "SELECT refs FROM bert_models", "1");

    t_case("unloading the last user frees the weights");
    expect(a, "SELECT bert_unload('m')", "1");
    T_CHECK(bert_weight_cache_count() == before, "%d weight files mapped, expected %d", bert_weight_cache_count(), before);
    sqlite3_close(a);
}

/* Largest absolute difference between two float32 BLOB results. */
/* subtype_of(x): the subtype SQLite passes along with x (0 for none), so a
 * test can see what sqlite-vec and SQLite's JSON functions see.  SQLite 3.45
 * and later want SQLITE_SUBTYPE on a function that reads subtypes. */
static void subtype_of(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    sqlite3_result_int(ctx, (int)sqlite3_value_subtype(argv[0]));
}

#ifdef SQLITE_SUBTYPE
#define READS_SUBTYPE SQLITE_SUBTYPE
#else
#define READS_SUBTYPE 0
#endif

static void add_subtype_of(sqlite3 *db)
{
    int rc = sqlite3_create_function(db, "subtype_of", 1, SQLITE_UTF8 | READS_SUBTYPE, NULL, subtype_of, NULL, NULL);
    T_CHECK(rc == SQLITE_OK, "cannot register subtype_of: %s", sqlite3_errmsg(db));
}

static double blob_diff(sqlite3 *db, const char *sql_a, const char *sql_b)
{
    sqlite3_stmt *sa = NULL, *sb = NULL;
    double worst = INFINITY;
    if (sqlite3_prepare_v2(db, sql_a, -1, &sa, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql_b, -1, &sb, NULL) == SQLITE_OK &&
        sqlite3_step(sa) == SQLITE_ROW && sqlite3_step(sb) == SQLITE_ROW &&
        sqlite3_column_bytes(sa, 0) == sqlite3_column_bytes(sb, 0) && sqlite3_column_bytes(sa, 0) > 0) {
        int n = sqlite3_column_bytes(sa, 0) / 4;
        const unsigned char *pa = sqlite3_column_blob(sa, 0), *pb = sqlite3_column_blob(sb, 0);
        worst = 0;
        for (int i = 0; i < n; i++) {
            float x, y;
            memcpy(&x, pa + 4 * i, 4);
            memcpy(&y, pb + 4 * i, 4);
            if (fabs((double)x - y) > worst) worst = fabs((double)x - y);
        }
    }
    sqlite3_finalize(sa);
    sqlite3_finalize(sb);
    return worst;
}

static void functions(void)
{
    sqlite3 *db = t_open();
    expect(db, "SELECT bert_load('default', '" ST_MEAN "')", "default");
    expect(db, "SELECT bert_load('mlm', '" MLM "')", "mlm");
    expect(db, "SELECT bert_load('pre', '" PRETRAIN "')", "pre");

    t_case("NULL text gives NULL");
    expect(db, "SELECT bert_embed(NULL) IS NULL AND bert_tokenize(NULL) IS NULL AND bert_token_ids(NULL) IS NULL "
               "AND bert_similarity(NULL, 'x') IS NULL AND bert_fill_mask(NULL) IS NULL "
               "AND bert_next_sentence('a', NULL, 'pre') IS NULL AND bert_vector_to_json(NULL) IS NULL", "1");

    t_case("wrong argument types are errors that name the argument");
    expect_error(db, "SELECT bert_embed(x'00ff')", "argument 1", "TEXT", NULL);
    expect_error(db, "SELECT bert_embed('x', 42)", "model name", NULL);
    expect_error(db, "SELECT bert_vector_to_json('text')", "float32 BLOB", NULL);
    expect_error(db, "SELECT bert_vector_to_json(x'000000')", "float32 BLOB", NULL);
    expect_error(db, "SELECT bert_load(1, 2)", "TEXT", NULL);

    t_case("the embedding is a float32 BLOB with sqlite-vec's subtype");
    expect(db, "SELECT typeof(bert_embed('a cat')) || ' ' || length(bert_embed('a cat'))", "blob 1024");
    add_subtype_of(db);
    /* 223 is 'ß', sqlite-vec's SQLITE_VEC_ELEMENT_TYPE_FLOAT32. */
    expect(db, "SELECT subtype_of(bert_embed('a cat'))", "223");
    expect(db, "SELECT subtype_of(embedding) FROM bert_embed_each(json_array('a cat', 'a dog')) WHERE key = 1", "223");
    expect(db, "SELECT subtype_of(x'0000803f')", "0");

    t_case("JSON results carry SQLite's JSON subtype, so JSON functions nest them instead of quoting");
    /* Compared with what SQLite's own json() gives, and with the number 74 ('J') it uses. */
    expect(db, "SELECT subtype_of(json('[1]')) || ' ' || subtype_of('[1]')", "74 0");
    expect(db, "SELECT subtype_of(bert_tokenize('a cat')) = subtype_of(json('[]')) AND "
               "subtype_of(bert_tokenize('a cat')) = 74", "1");
    expect(db, "SELECT subtype_of(bert_token_ids('a cat'))", "74");
    expect(db, "SELECT subtype_of(bert_vector_to_json(x'0000803f'))", "74");
    expect(db, "SELECT subtype_of(bert_fill_mask('the [MASK] sat.', 2, 'mlm'))", "74");
    expect(db, "SELECT json_array(bert_tokenize('a cat'))", "[[\"[CLS]\",\"a\",\"cat\",\"[SEP]\"]]");
    expect(db, "SELECT json_array(bert_vector_to_json(x'0000803f'))", "[[1.0]]");

    t_case("normalized models give unit vectors");
    double norm = t_query_double(db, "SELECT sqrt(sum(value * value)) FROM json_each(bert_vector_to_json(bert_embed('a cat sat')))", NULL);
    T_CHECK(fabs(norm - 1.0) < 1e-5, "norm %.8f", norm);

    t_case("similarity of TEXT and of stored BLOBs agree");
    double by_text = t_query_double(db, "SELECT bert_similarity('a cat sat', 'the dog ran')", NULL);
    double by_blob = t_query_double(db, "SELECT bert_similarity(bert_embed('a cat sat'), bert_embed('the dog ran'))", NULL);
    double mixed = t_query_double(db, "SELECT bert_similarity('a cat sat', bert_embed('the dog ran'))", NULL);
    T_CHECK(fabs(by_text - by_blob) < 1e-6 && fabs(by_text - mixed) < 1e-6 && by_text > -1 && by_text < 1,
            "text %.8f blob %.8f mixed %.8f", by_text, by_blob, mixed);
    double self = t_query_double(db, "SELECT bert_similarity('same words', 'same words')", NULL);
    T_CHECK(fabs(self - 1.0) < 1e-6, "self-similarity %.8f", self);

    t_case("similarity of vectors of different sizes is an error");
    expect_error(db, "SELECT bert_similarity(bert_embed('a'), bert_embed('a', 'mlm'))", "dimensions", NULL);
    expect_error(db, "SELECT bert_similarity(x'0000803f00', 'a')", "float32", NULL);

    t_case("bert_vector_to_json round-trips the floats");
    expect(db, "SELECT bert_vector_to_json(x'0000803f000000c0')", "[1.0,-2.0]");

    t_case("bert_tokenize returns the token strings");
    expect(db, "SELECT bert_tokenize('Hello, [MASK]!')", "[\"[CLS]\",\"hello\",\",\",\"[MASK]\",\"!\",\"[SEP]\"]");

    t_case("truncation: silent by default, an error when asked");
    expect(db, "SELECT json_array_length(bert_token_ids(replace(hex(zeroblob(300)), '0', 'word ')))", "128");
    expect(db, "SELECT bert_load('strict', '" ST_MEAN "', '{\"truncate\": false}')", "strict");
    expect_error(db, "SELECT bert_embed(replace(hex(zeroblob(300)), '0', 'word '), 'strict')",
                 "max_length 128", "truncate", NULL);
    expect(db, "SELECT json_array_length(bert_token_ids(replace(hex(zeroblob(300)), '0', 'word '), 'strict'))", "602");

    t_case("fill-mask: one list for one mask, one list per mask for several");
    expect(db, "SELECT json_array_length(bert_fill_mask('the [MASK] sat.', 3, 'mlm'))", "3");
    expect(db, "SELECT json_array_length(bert_fill_mask('the [MASK] sat [MASK].', 4, 'mlm'))", "2");
    expect(db, "SELECT json_array_length(bert_fill_mask('the [MASK] sat [MASK].', 4, 'mlm'), '$[1]')", "4");
    expect(db, "SELECT json_array_length(bert_fill_mask('the [MASK] sat.', NULL, 'mlm'))", "5");
    double sum = t_query_double(db, "SELECT sum(value ->> 'score') FROM json_each(bert_fill_mask('a [MASK] b', 30522, 'mlm'))", NULL);
    T_CHECK(fabs(sum - 1.0) < 1e-4, "scores over the whole vocabulary sum to %.6f", sum);
    expect(db, "SELECT (SELECT json_group_array(json_object('token', token, 'score', round(score, 6))) FROM "
               "bert_fill_mask_each('the [MASK] sat.', 3, 'mlm')) = (SELECT json_group_array(json_object('token', "
               "value ->> 'token', 'score', round(value ->> 'score', 6))) FROM json_each(bert_fill_mask('the [MASK] sat.', 3, 'mlm')))", "1");
    expect(db, "SELECT count(*) || ' ' || max(mask_index) || ' ' || max(rank) FROM bert_fill_mask_each('[MASK] and [MASK]', 2, 'pre')", "4 1 2");

    t_case("fill-mask errors: no mask, no head, bad top_k");
    expect_error(db, "SELECT bert_fill_mask('no mask here', 5, 'mlm')", "no [MASK]", NULL);
    expect_error(db, "SELECT bert_fill_mask('a [MASK]')", "no masked-language-model head", NULL);
    expect_error(db, "SELECT bert_fill_mask('a [MASK]', 0, 'mlm')", "top_k", NULL);
    expect_error(db, "SELECT bert_fill_mask('a [MASK]', -3, 'mlm')", "top_k", NULL);
    expect_error(db, "SELECT bert_fill_mask('a [MASK]', 'five', 'mlm')", "top_k", NULL);
    expect_error(db, "SELECT * FROM bert_fill_mask_each('a [MASK]', 0, 'mlm')", "top_k", NULL);
    expect(db, "SELECT json_array_length(bert_fill_mask('a [MASK]', 1000000, 'mlm'))", "30522");

    t_case("next sentence: a probability; models without the head say so");
    double p = t_query_double(db, "SELECT bert_next_sentence('The sky is blue.', 'It is sunny.', 'pre')", NULL);
    T_CHECK(p >= 0 && p <= 1, "probability %f", p);
    expect_error(db, "SELECT bert_next_sentence('a', 'b', 'mlm')", "next-sentence", NULL);

    t_case("batched embedding equals row by row");
    double worst = blob_diff(db,
        "SELECT embedding FROM bert_embed_each(json_array('short', 'a much longer sentence about cats and dogs', 'x')) WHERE key = 1",
        "SELECT bert_embed('a much longer sentence about cats and dogs')");
    T_CHECK(worst < 1e-5, "max difference %g", worst);
    expect(db, "SELECT group_concat(key) FROM bert_embed_each(json_object('a', 'one', 'b', 'two'))", "a,b");
    expect(db, "SELECT count(*) FROM bert_embed_each('[]')", "0");
    expect_error(db, "SELECT * FROM bert_embed_each('[1, 2]')", "not a text", NULL);
    expect_error(db, "SELECT * FROM bert_embed_each('nope')", "JSON array", NULL);
    sqlite3_close(db);
}

void suite_sql(void)
{
    registration();
    default_from_environment();
    sharing();
    functions();
}
