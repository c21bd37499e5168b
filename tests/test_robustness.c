/*
 * test_robustness.c - hostile input through the SQL surface.
 *
 * Every bad argument and every damaged model file must give an SQL error
 * that names the problem (or NULL where the contract says so), and the
 * connection must keep working afterwards.  The damaged models are copies of
 * a generated test model, broken by this file under build/robustness/; the
 * headers of model.safetensors are edited with SQLite's own JSON functions.
 *
 * This file: bad arguments and registrations changing under a running
 * query, and the suite, which runs the other concerns (robustness.h):
 * model files, damaged weights and resource bounds.
 */
#include "robustness.h"

#include <pthread.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- bad arguments --------------------------------------------------------- */

static void null_and_types(sqlite3 *db)
{
    t_case("NULL in any text argument gives NULL");
    t_expect(db, "SELECT quote(bert_embed(NULL, 'good')) || quote(bert_tokenize(NULL, 'good')) || "
               "quote(bert_token_ids(NULL)) || quote(bert_similarity(NULL, 'x', 'good')) || "
               "quote(bert_similarity('x', NULL, 'good')) || quote(bert_fill_mask(NULL, 5, 'mlm')) || "
               "quote(bert_next_sentence(NULL, 'b', 'pre')) || quote(bert_next_sentence('a', NULL, 'pre')) || "
               "quote(bert_vector_to_json(NULL))", NULL, "NULLNULLNULLNULLNULLNULLNULLNULLNULL");
    t_expect(db, "SELECT count(*) FROM bert_fill_mask_each(NULL, 5, 'mlm')", NULL, "0");
    t_expect(db, "SELECT count(*) FROM bert_embed_each(NULL, 'good')", NULL, "0");
    t_expect(db, "SELECT count(*) FROM bert_embed_each('[null, null]', 'good')", NULL, "0");

    t_case("a NULL model name means the default model");
    sqlite3 *one = t_open();
    t_expect(one, "SELECT bert_load('only', '" GOOD "')", NULL, "only");
    t_expect(one, "SELECT bert_embed('x', NULL) = bert_embed('x', 'only')", NULL, "1");
    sqlite3_close(one);

    t_case("BLOB text arguments are errors that name the argument");
    t_expect_error(db, "SELECT bert_embed(x'00ff', 'good')", NULL, "bert_embed", "argument 1", "BLOB", NULL);
    t_expect_error(db, "SELECT bert_tokenize(zeroblob(10), 'good')", NULL, "bert_tokenize", "argument 1", NULL);
    t_expect_error(db, "SELECT bert_token_ids(x'', 'good')", NULL, "bert_token_ids", "argument 1", NULL);
    t_expect_error(db, "SELECT bert_fill_mask(x'41', 5, 'mlm')", NULL, "bert_fill_mask", "argument 1", NULL);
    t_expect_error(db, "SELECT bert_next_sentence('a', x'41', 'pre')", NULL, "bert_next_sentence", "argument 2", NULL);
    t_expect_error(db, "SELECT * FROM bert_fill_mask_each(x'41', 5, 'mlm')", NULL, "TEXT", NULL);
    rb_expect_alive(db);

    t_case("numbers as text arguments are errors that name the argument and point to bert_functions");
    t_expect_error(db, "SELECT bert_tokenize(42, 'good')", NULL, "bert_tokenize", "argument 1 (text)",
                   "not an INTEGER", "bert_functions", NULL);
    t_expect_error(db, "SELECT bert_embed(1.5, 'good')", NULL, "argument 1 (text)", "not a REAL", NULL);
    t_expect_error(db, "SELECT bert_similarity(1, 2, 'good')", NULL, "argument 1 (a)", "float32 BLOB", NULL);
    t_expect(db, "SELECT bert_tokenize(CAST(42 AS TEXT), 'good') = bert_tokenize('42', 'good')", NULL, "1");

    t_case("a model name that is not TEXT is an error");
    t_expect_error(db, "SELECT bert_embed('x', 42)", NULL, "model name", "TEXT", NULL);
    t_expect_error(db, "SELECT bert_embed('x', x'676f6f64')", NULL, "model name", "TEXT", NULL);
    t_expect_error(db, "SELECT bert_tokenize('x', 1.5)", NULL, "model name", NULL);
    t_expect_error(db, "SELECT * FROM bert_embed_each('[\"x\"]', 7)", NULL, "model name", NULL);

    t_case("bert_load and bert_unload refuse what is not TEXT");
    t_expect_error(db, "SELECT bert_load(NULL, '" GOOD "')", NULL, "argument 1", "TEXT", NULL);
    t_expect_error(db, "SELECT bert_load('x', NULL)", NULL, "argument 2", "TEXT", NULL);
    t_expect_error(db, "SELECT bert_load('x', x'00')", NULL, "argument 2", NULL);
    t_expect_error(db, "SELECT bert_load('x', '" GOOD "', 42)", NULL, "argument 3", NULL);
    t_expect_error(db, "SELECT bert_unload(NULL)", NULL, "TEXT", NULL);
    t_expect_error(db, "SELECT bert_load('', '" GOOD "')", NULL, "empty", NULL);
    rb_expect_alive(db);
}

static void unknown_models(sqlite3 *db)
{
    t_case("unknown model names are named in the error, with the registered ones");
    t_expect_error(db, "SELECT bert_embed('x', 'nope')", NULL, "unknown model 'nope'", "'good'", "bert_load", NULL);
    t_expect_error(db, "SELECT bert_fill_mask('[MASK]', 5, 'nope')", NULL, "unknown model 'nope'", NULL);
    t_expect_error(db, "SELECT * FROM bert_fill_mask_each('[MASK]', 5, 'nope')", NULL, "unknown model 'nope'", NULL);
    t_expect_error(db, "SELECT * FROM bert_embed_each('[\"a\"]', 'nope')", NULL, "unknown model 'nope'", NULL);
    /* Quotes and printf directives in a name are shown, not interpreted. */
    t_expect_error(db, "SELECT bert_embed('x', ?1)", "%s%n%x'\"", "unknown model '%s%n%x'\"'", NULL);
    t_expect_error(db, "SELECT bert_embed('x', '')", NULL, "unknown model ''", NULL);
    t_expect(db, "SELECT bert_unload('nope')", NULL, "0");

    t_case("no model at all: the error says how to register one");
    unsetenv("BERT_MODEL");
    sqlite3 *empty = t_open();
    t_expect_error(empty, "SELECT bert_embed('x')", NULL, "no model is registered", "bert_load", NULL);
    t_expect_error(empty, "SELECT bert_tokenize('x')", NULL, "no model is registered", NULL);
    sqlite3_close(empty);
    rb_expect_alive(db);
}

static void odd_text(sqlite3 *db)
{
    t_case("invalid UTF-8 reads as U+FFFD, which the normalizer drops");
    static const char bad[] = "caf\xc3 \xff\xfe abc\x80\xbf def \xed\xa0\x80 \xf4\x90\x80\x80 end";
    static const char replaced[] = "caf\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd abc\xef\xbf\xbd\xef\xbf\xbd def "
                                   "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                                   "\xef\xbf\xbd end";
    char *a = rb_query(db, "SELECT bert_tokenize(?1, 'good')", bad);
    char *b = rb_query(db, "SELECT bert_tokenize(?1, 'good')", replaced);
    T_CHECK(!rb_starts_with(a, "ERROR") && strcmp(a, b) == 0, "invalid bytes give %s\n    U+FFFD gives %s", a, b);
    free(a);
    free(b);
    t_expect(db, "SELECT json_valid(bert_tokenize(?1, 'good')) AND length(bert_embed(?1, 'good')) = 512 "
               "AND json_valid(bert_fill_mask(?1 || ' [MASK]', 3, 'mlm'))", bad, "1");
    t_expect(db, "SELECT json_valid(bert_tokenize(CAST(x'c0afe080bfedbfbff8888080808080' AS TEXT), 'good'))", NULL, "1");

    t_case("a NUL inside the text is dropped like other control characters");
    t_expect(db, "SELECT bert_tokenize(CAST(x'68656c6c6f00776f726c64' AS TEXT), 'good') = "
               "bert_tokenize(CAST(x'68656c6c6fefbfbd776f726c64' AS TEXT), 'good')", NULL, "1");

    t_case("empty text: [CLS] [SEP] only");
    t_expect(db, "SELECT bert_tokenize('', 'good')", NULL, "[\"[CLS]\",\"[SEP]\"]");
    t_expect(db, "SELECT length(bert_embed('', 'good'))", NULL, "512");
    t_expect(db, "SELECT typeof(bert_similarity('', '', 'good'))", NULL, "real");
    t_expect(db, "SELECT typeof(bert_next_sentence('', '', 'pre'))", NULL, "real");
    t_expect_error(db, "SELECT bert_fill_mask('', 5, 'mlm')", NULL, "no [MASK]", NULL);
    t_expect(db, "SELECT count(*) FROM bert_embed_each('[\"\", \"\"]', 'good')", NULL, "2");

    t_case("text of nothing but special tokens");
    static const char specials[] = "[CLS][SEP][PAD][UNK][MASK] [SEP] [CLS]";
    t_expect(db, "SELECT bert_tokenize(?1, 'good')", specials,
           "[\"[CLS]\",\"[CLS]\",\"[SEP]\",\"[PAD]\",\"[UNK]\",\"[MASK]\",\"[SEP]\",\"[CLS]\",\"[SEP]\"]");
    t_expect(db, "SELECT length(bert_embed(?1, 'good'))", specials, "512");
    t_expect(db, "SELECT json_array_length(bert_fill_mask(?1, 2, 'mlm'))", specials, "2");
    t_expect(db, "SELECT typeof(bert_next_sentence(?1, ?1, 'pre'))", specials, "real");
    /* Every token a mask, far past max_length: one list per kept mask. */
    t_expect(db, "SELECT json_array_length(bert_fill_mask(replace(hex(zeroblob(400)), '00', '[MASK]'), 1, 'mlm'))",
           NULL, "254");
    t_expect(db, "SELECT count(*) FROM bert_fill_mask_each(replace(hex(zeroblob(300)), '00', '[MASK]'), 2, 'mlm')",
           NULL, "508");
    rb_expect_alive(db);
}

/* Truncation must keep exactly the first max_length - 2 tokens of the whole
 * text, whatever word the cut falls into (the tokenizer stops early, so a
 * word it abandons half-way must still count as the [UNK] it is). */
static void truncation(sqlite3 *db)
{
    t_case("max_length keeps the first tokens of the untruncated tokenization");
    static const char *const texts[] = {
        "unaffable\xe2\x98\x83 dogs and unaffable\xe2\x98\x83 cats",
        "un\xe2\x98\x83 unaffable snowman\xe2\x98\x83 [MASK] x",
        "averyveryverylongwordwithoutanymeaning\xe2\x98\x83 ok",
    };
    char sql[512];
    for (int len = 3; len <= 9; len++) {
        snprintf(sql, sizeof sql, "SELECT bert_load('len%d', '" GOOD "', '{\"max_length\": %d}')", len, len);
        char *r = rb_query(db, sql, NULL);
        free(r);
    }
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        for (int len = 3; len <= 9; len++) {
            snprintf(sql, sizeof sql,
                     "SELECT bert_tokenize(?1, 'len%d') = (SELECT json_group_array(value) FROM "
                     "(SELECT key, value FROM json_each(bert_tokenize(?1, 'good')) "
                     "WHERE key < min(%d, json_array_length(bert_tokenize(?1, 'good')) - 1) "
                     "UNION ALL SELECT 1e9, '[SEP]' ORDER BY key))", len, len - 1);
            char *got = rb_query(db, sql, texts[i]);
            if (!T_CHECK(strcmp(got, "1") == 0, "max_length %d of '%s': %s", len, texts[i], got)) {
                free(got);
                snprintf(sql, sizeof sql, "SELECT bert_tokenize(?1, 'len%d') || ' vs ' || bert_tokenize(?1, 'good')", len);
                got = rb_query(db, sql, texts[i]);
                printf("    %s\n", got);
            }
            free(got);
        }
    }
    for (int len = 3; len <= 9; len++) {
        snprintf(sql, sizeof sql, "SELECT bert_unload('len%d')", len);
        free(rb_query(db, sql, NULL));
    }
}

static void top_k(sqlite3 *db)
{
    t_case("top_k of 0, negative, huge or not an integer is an error");
    static const char *const bad[] = {"0", "-1", "-9223372036854775808", "9223372036854775807",
                                      "1000001", "4294967301", "1.5", "'5'", "x'05'", "1e300"};
    char sql[256];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(sql, sizeof sql, "SELECT bert_fill_mask('a [MASK] b', %s, 'mlm')", bad[i]);
        t_expect_error(db, sql, NULL, "top_k", NULL);
        snprintf(sql, sizeof sql, "SELECT count(*) FROM bert_fill_mask_each('a [MASK] b', %s, 'mlm')", bad[i]);
        t_expect_error(db, sql, NULL, "top_k", NULL);
    }

    t_case("fill-mask output is bounded: many masks with a huge top_k are refused at once");
    static const char *const greedy[] = {
        "SELECT length(bert_fill_mask(replace(hex(zeroblob(400)), '00', '[MASK]'), 30522, 'mlm'))",
        "SELECT count(*) FROM bert_fill_mask_each(replace(hex(zeroblob(400)), '00', '[MASK] '), 100000, 'mlm')",
    };
    for (size_t i = 0; i < sizeof greedy / sizeof *greedy; i++) {
        char out[1024];
        int rc = rb_query_in_child(db, greedy[i], NULL, 20, 0, out, sizeof out);
        T_CHECK(rc == 0 && rb_starts_with(out, "ERROR") && strstr(out, "top_k"), "%s\n    gave %s", greedy[i], out);
    }

    t_case("top_k NULL is the default; more than the vocabulary gives the whole vocabulary");
    t_expect(db, "SELECT json_array_length(bert_fill_mask('a [MASK] b', NULL, 'mlm'))", NULL, "5");
    t_expect(db, "SELECT json_array_length(bert_fill_mask('a [MASK] b', 1000000, 'mlm'))", NULL, "30522");
    rb_expect_alive(db);
}

static void blobs(sqlite3 *db)
{
    t_case("vectors of the wrong length are errors");
    t_expect_error(db, "SELECT bert_similarity(x'000000', bert_embed('a', 'good'))", NULL, "3 bytes", "float32", NULL);
    t_expect_error(db, "SELECT bert_similarity(bert_embed('a', 'good'), x'0000803f00')", NULL, "argument 2", NULL);
    t_expect_error(db, "SELECT bert_similarity(x'', 'a', 'good')", NULL, "0 bytes", NULL);
    t_expect_error(db, "SELECT bert_similarity(zeroblob(1024), bert_embed('a', 'good'))", NULL, "dimensions", NULL);
    t_expect_error(db, "SELECT bert_similarity('a', x'0000803f', 'good')", NULL, "dimensions", NULL);
    t_expect_error(db, "SELECT bert_vector_to_json(x'0000803f00')", NULL, "float32 BLOB", NULL);
    t_expect_error(db, "SELECT bert_vector_to_json(7)", NULL, "float32 BLOB", NULL);
    t_expect(db, "SELECT bert_vector_to_json(x'')", NULL, "[]");

    t_case("zero, NaN and infinite vectors give NULL, not a crash");
    t_expect(db, "SELECT quote(bert_similarity(zeroblob(512), bert_embed('a', 'good')))", NULL, "NULL");
    t_expect(db, "SELECT quote(bert_similarity(x'0000c07f0000803f', x'0000803f0000803f'))", NULL, "NULL");
    t_expect(db, "SELECT quote(bert_similarity(x'0000807f0000803f', x'0000803f0000803f'))", NULL, "NULL");
    t_expect(db, "SELECT bert_vector_to_json(x'0000c07f0000807f000080ff')", NULL, "[null,null,null]");

    t_case("bert_embed_each refuses what is not a JSON array or object of texts");
    t_expect_error(db, "SELECT * FROM bert_embed_each('nope', 'good')", NULL, "JSON array", NULL);
    t_expect_error(db, "SELECT * FROM bert_embed_each('\"a text\"', 'good')", NULL, "JSON array", NULL);
    t_expect_error(db, "SELECT * FROM bert_embed_each('[\"a\", [\"b\"]]', 'good')", NULL, "item 2", "not a text", NULL);
    t_expect_error(db, "SELECT * FROM bert_embed_each('{\"k\": 1}', 'good')", NULL, "not a text", NULL);
    t_expect_error(db, "SELECT * FROM bert_embed_each(replace(hex(zeroblob(3000)), '00', '[') , 'good')", NULL,
                 "JSON array", NULL);
    rb_expect_alive(db);
}

/* ---- registrations changing under a running query ------------------------------ */

static void unload_while_reading(void)
{
    t_case("bert_unload over bert_models unloads every model");
    sqlite3 *db = t_open();
    t_expect(db, "SELECT bert_load('a', '" GOOD "') || bert_load('b', '" MLM "') || bert_load('c', '" GOOD "')",
           NULL, "abc");
    t_expect(db, "SELECT length(bert_embed('x', 'a')) + length(bert_embed('x', 'c'))", NULL, "1024");
    t_expect(db, "SELECT sum(u) FROM (SELECT bert_unload(name) AS u FROM bert_models)", NULL, "3");
    t_expect(db, "SELECT count(*) FROM bert_models", NULL, "0");

    t_case("bert_unload of the model a bert_embed_each is reading");
    t_expect(db, "SELECT bert_load('a', '" GOOD "')", NULL, "a");
    char sql[512];
    snprintf(sql, sizeof sql, TEXTS_SQL, 600);
    char *texts = rb_query(db, sql, NULL);
    /* Either every row or a clear error: never a read of what was freed. */
    char *got = rb_query(db, "SELECT count(*) || ' ' || sum(length(embedding)) || ' ' || sum(u) FROM "
                          "(SELECT embedding, bert_unload('a') AS u FROM bert_embed_each(?1, 'a'))", texts);
    T_CHECK(strcmp(got, "600 307200 1") == 0 || (rb_starts_with(got, "ERROR") && strstr(got, "'a'")), "gave %s", got);
    free(got);
    free(texts);

    t_case("bert_unload of the model a bert_fill_mask_each is reading");
    t_expect(db, "SELECT bert_load('m', '" MLM "')", NULL, "m");
    t_expect(db, "SELECT count(*) || ' ' || sum(length(token_str) > 0) || ' ' || sum(u) FROM (SELECT token_str, "
               "bert_unload('m') AS u FROM bert_fill_mask_each('a [MASK] b', 3, 'm'))", NULL, "3 3 1");
    sqlite3_close(db);
}


void suite_robustness(void)
{
    if (!t_exists(GOOD "/model.safetensors") || !t_exists(MLM "/model.safetensors") ||
        !t_exists(PRETRAIN "/model.safetensors")) {
        t_case("robustness");
        t_skip("the test models are missing: run make test");
        return;
    }
    sqlite3 *db = t_open();
    t_case("robustness: the test models register as good, mlm and pre");
    t_expect(db, "SELECT bert_load('good', '" GOOD "') || bert_load('mlm', '" MLM "') || "
               "bert_load('pre', '" PRETRAIN "')", NULL, "goodmlmpre");
    unload_while_reading();
    null_and_types(db);
    unknown_models(db);
    odd_text(db);
    truncation(db);
    top_k(db);
    blobs(db);
    robustness_options(db);
    robustness_configs(db);
    robustness_vocabularies(db);
    robustness_weights(db);
    robustness_huge_text(db);
    robustness_interrupt(db);
    sqlite3_close(db);
    robustness_drop_weight_copies();
}

