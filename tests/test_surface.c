/*
 * test_surface.c - what a new user meets first: argument counts and types,
 * bert_functions, the NULL model name, what bert_load checks and finds
 * (sharded checkpoints, Hugging Face cache folders, weights only as
 * pytorch_model.bin), what bert_models shows, and the test runner itself.
 */
#include "test.h"
#include "../ext/models/weight_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROOT "build/surface"
#define MLM "build/models/mlm-tied-f32"
#define SHARDED "build/models/mlm-tied-f32-sharded"
#define ST_MEAN "build/models/st-mean-f16"
#define CLS3 "build/models/cls-3-f32"

static void write_text(const char *path, const char *text)
{
    remove(path);
    FILE *f = fopen(path, "wb");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
}

static void link_to(const char *target, const char *path)
{
    remove(path);
    if (symlink(target, path) != 0) {
        fprintf(stderr, "cannot link %s\n", path);
        exit(2);
    }
}

static void runner_refuses_unknown_suites(void)
{
    t_case("build/run_tests with an unknown suite fails and lists the suites");
    mkdir(ROOT, 0755);
    int status = system("build/run_tests no_such_suite > " ROOT "/suites.out 2>&1");
    char *out = t_read_file(ROOT "/suites.out", NULL);
    T_CHECK(status != 0 && out && strstr(out, "no suite named 'no_such_suite'") && strstr(out, " surface") &&
                strstr(out, " robustness") && strstr(out, "make test SUITE=") && !strstr(out, "0 passed"),
            "exit status %d, output:\n%s", status, out ? out : "(none)");
    free(out);
}

static void argument_counts(sqlite3 *db)
{
    t_case("a scalar function called with a wrong number of arguments gives its signature");
    t_expect_error(db, "SELECT bert_embed('a', 'b', 'c')", NULL, "bert_embed takes 1 to 2 arguments, not 3",
                   "bert_embed(text [, model | options_json])", "bert_functions", NULL);
    t_expect_error(db, "SELECT bert_embed()", NULL, "not 0", "bert_embed(text [, model | options_json])", NULL);
    t_expect_error(db, "SELECT bert_version(1)", NULL, "bert_version takes 0 arguments, not 1", NULL);
    t_expect_error(db, "SELECT bert_load('x')", NULL, "bert_load(name, path [, options_json])", NULL);
    t_expect_error(db, "SELECT bert_answer_each_is_no_function(1)", NULL, "no such function", NULL);

    t_case("a table function called with a wrong number of arguments gives its signature");
    t_expect_error(db, "SELECT * FROM bert_embed_each('[]', 'm', 'extra')", NULL,
                   "bert_embed_each takes 1 to 2 arguments, not 3", "bert_embed_each(json [, model | options_json])",
                   "bert_functions", NULL);
    t_expect_error(db, "SELECT * FROM bert_embed_each", NULL, "not 0", "bert_embed_each(json [, model | options_json])", NULL);
    t_expect_error(db, "SELECT * FROM bert_answer_each('q')", NULL, "bert_answer_each takes 2 to 4 arguments, not 1",
                   "question, context [, top_k [, model]]", NULL);
    t_expect_error(db, "SELECT * FROM bert_chunks('a', 1, 0, 'm', 5)", NULL, "not 5", NULL);
    /* Arguments that come from a join are still arguments. */
    t_expect(db, "SELECT count(*) FROM (SELECT '[]' AS j) AS t, bert_embed_each(t.j, 'good') AS e", NULL, "0");

    t_case("an OR over a table function's columns keeps its arguments");
    t_expect(db, "SELECT count(*) FROM bert_tokenize_offsets('hello world', 'good') "
                 "WHERE token = 'hello' OR token = 'world'", NULL, "2");
    t_expect(db, "SELECT group_concat(k.token, ' ') FROM (SELECT 'hello' AS x UNION ALL SELECT 'cat dog') AS t, "
                 "bert_tokenize_offsets(t.x, 'good') AS k WHERE k.token = 'hello' OR k.token = 'dog'", NULL,
             "hello dog");
}

static void functions_table(sqlite3 *db)
{
    t_case("bert_functions lists every SQL function and table function, and nothing else");
    t_expect(db, "SELECT count(*) FROM bert_functions WHERE arguments IS NULL OR returns = '' OR summary = ''", NULL,
             "0");
    /* Every scalar function the connection has, and every module, is a row. */
    t_expect(db, "SELECT group_concat(name) FROM (SELECT DISTINCT name FROM pragma_function_list "
                 "WHERE name LIKE 'bert\\_%' ESCAPE '\\' EXCEPT SELECT name FROM bert_functions)", NULL, "NULL");
    t_expect(db, "SELECT group_concat(name) FROM (SELECT name FROM pragma_module_list "
                 "WHERE name LIKE 'bert\\_%' ESCAPE '\\' EXCEPT SELECT name FROM bert_functions)", NULL, "NULL");
    t_expect(db, "SELECT group_concat(name) FROM (SELECT name FROM bert_functions EXCEPT SELECT name FROM "
                 "(SELECT name FROM pragma_function_list UNION SELECT name FROM pragma_module_list))", NULL, "NULL");
    /* A scalar's registered argument counts are those its row shows. */
    t_expect(db, "SELECT max(narg) FROM pragma_function_list WHERE name = 'bert_fill_mask'", NULL, "3");
    t_expect(db, "SELECT arguments FROM bert_functions WHERE name = 'bert_fill_mask'", NULL, "text [, top_k [, model]]");
    t_expect(db, "SELECT count(*) FROM bert_functions WHERE name = 'bert_chunks' AND returns LIKE 'rows:%'", NULL, "1");
}

static void text_arguments(sqlite3 *db)
{
    t_case("every text argument of a table function follows the scalar functions' rule");
    t_expect_error(db, "SELECT * FROM bert_rerank_each(42, '[\"d\"]', 'good')", NULL, "bert_rerank_each",
                   "argument 1 (query)", "not an INTEGER", "bert_functions", NULL);
    t_expect_error(db, "SELECT * FROM bert_embed_each(42, 'good')", NULL, "argument 1 (json)", "TEXT", NULL);
    t_expect_error(db, "SELECT * FROM bert_rerank_each('q', x'5b5d', 'good')", NULL, "argument 2 (json)", "BLOB", NULL);
    t_expect_error(db, "SELECT * FROM bert_ner_each(x'41', 'good')", NULL, "argument 1 (text)", "BLOB", NULL);
    t_expect_error(db, "SELECT * FROM bert_answer_each('q', 5, 1, 'good')", NULL, "argument 2 (context)", NULL);
    t_expect_error(db, "SELECT * FROM bert_fill_mask_each(1.5, 1, 'good')", NULL, "argument 1 (text)", "REAL", NULL);
    t_expect_error(db, "SELECT * FROM bert_tokenize_offsets(7, 'good')", NULL, "argument 1 (text)", NULL);
    t_expect_error(db, "SELECT bert_rerank('q', 7, 'good')", NULL, "bert_rerank", "argument 2 (document)", NULL);
    t_expect(db, "SELECT count(*) FROM bert_rerank_each(NULL, '[\"d\"]', 'good')", NULL, "0");
    t_expect(db, "SELECT count(*) FROM bert_answer_each('q', NULL)", NULL, "0");
    t_expect_error(db, "SELECT bert_load(NULL, 'x')", NULL, "argument 1 (name)", "not NULL", NULL);

    t_case("a model name that is NULL is named as such, not blamed on the registry");
    sqlite3 *empty = t_open();
    t_expect_error(empty, "SELECT bert_embed('x', NULL)", NULL, "bert_embed", "argument 2 (model) is NULL",
                   "bert_load(", "leave the argument out", NULL);
    t_expect_error(empty, "SELECT * FROM bert_ner_each('x', NULL)", NULL, "argument 2 (model) is NULL", NULL);
    char *got = t_query(empty, "SELECT bert_embed('x', NULL)", NULL);
    T_CHECK(!strstr(got, "no model is registered"), "%s", got);
    free(got);
    sqlite3_close(empty);
}

static void models_table_reads_no_files(sqlite3 *db)
{
    t_case("bert_models shows what registration read: it reads no file while it scans");
    mkdir(ROOT, 0755);
    mkdir(ROOT "/cls", 0755);
    static const char *const files[] = {"config.json", "vocab.txt", "model.safetensors", "tokenizer_config.json"};
    char target[256], path[256];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(target, sizeof target, "../../models/cls-3-f32/%s", files[i]);
        snprintf(path, sizeof path, ROOT "/cls/%s", files[i]);
        link_to(target, path);
    }
    t_expect(db, "SELECT bert_load('cls-copy', '" ROOT "/cls')", NULL, "cls-copy");
    /* The file changes under the registration: what it registered stays. */
    write_text(ROOT "/cls/config.json", "{");
    t_expect(db, "SELECT task || ' ' || labels FROM bert_models WHERE name = 'cls-copy'", NULL,
             "sequence_classification [\"negative\",\"neutral\",\"positive\"]");
    t_expect(db, "SELECT bert_unload('cls-copy')", NULL, "1");
}

static void sharded_checkpoints(sqlite3 *db)
{
    t_case("a sharded checkpoint loads and computes what the single file computes, byte for byte");
    if (!T_CHECK(t_exists(SHARDED "/model.safetensors.index.json") && !t_exists(SHARDED "/model.safetensors"),
                 "run tests/tools/make_test_models.sh build/models"))
        return;
    int before = bert_weight_cache_count();
    t_expect(db, "SELECT bert_load('single', '" MLM "') || bert_load('shards', '" SHARDED "')", NULL, "singleshards");
    static const char *const same[] = {
        "SELECT bert_embed(?1, 'single') = bert_embed(?1, 'shards')",
        "SELECT bert_fill_mask(?1, 5, 'single') = bert_fill_mask(?1, 5, 'shards')",
        "SELECT (SELECT group_concat(hex(embedding)) FROM bert_embed_each(json_array(?1, 'two'), 'single')) = "
        "(SELECT group_concat(hex(embedding)) FROM bert_embed_each(json_array(?1, 'two'), 'shards'))",
    };
    for (size_t i = 0; i < sizeof same / sizeof *same; i++)
        t_expect(db, same[i], "The [MASK] sat on the mat, naïvely.", "1");
    t_expect(db, "SELECT has_mlm_head || ' ' || dtype FROM bert_models WHERE name = 'shards'", NULL, "1 float32");

    t_case("a sharded checkpoint's shards are mapped once per process, whatever uses them");
    sqlite3 *other = t_open();
    t_expect(other, "SELECT length(bert_embed('x', bert_load('s2', '" SHARDED "')))", NULL, "768");
    t_expect(db, "SELECT refs FROM bert_models WHERE name = 'shards'", NULL, "2");
    T_CHECK(bert_weight_cache_count() == before + 2, "the cache holds %d models, expected %d (the single file and "
            "the shards as one)", bert_weight_cache_count(), before + 2);
    sqlite3_close(other);
    t_expect(db, "SELECT bert_unload('single') + bert_unload('shards')", NULL, "2");

    t_case("a sharded checkpoint with a shard missing or not holding its tensors is refused at bert_load");
    mkdir(ROOT, 0755);
    mkdir(ROOT "/shards", 0755);
    static const char *const files[] = {"config.json", "vocab.txt", "tokenizer_config.json",
                                        "model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors"};
    char target[256], path[256];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(target, sizeof target, "../../models/mlm-tied-f32-sharded/%s", files[i]);
        snprintf(path, sizeof path, ROOT "/shards/%s", files[i]);
        link_to(target, path);
    }
    link_to("../../models/mlm-tied-f32-sharded/model.safetensors.index.json", ROOT "/shards/model.safetensors.index.json");
    remove(ROOT "/shards/model-00003-of-00003.safetensors");   /* left by an earlier run */
    t_expect_error(db, "SELECT bert_load('part', '" ROOT "/shards')", NULL, "model-00003-of-00003.safetensors",
                   "does not exist", NULL);
    /* Shard 3's name on shard 2's file: the index names tensors it lacks. */
    link_to("../../models/mlm-tied-f32-sharded/model-00002-of-00003.safetensors",
            ROOT "/shards/model-00003-of-00003.safetensors");
    t_expect_error(db, "SELECT bert_load('part', '" ROOT "/shards')", NULL, "model.safetensors.index.json",
                   "model-00003-of-00003.safetensors, which does not hold it", NULL);
    t_expect(db, "SELECT count(*) FROM bert_models WHERE name = 'part'", NULL, "0");
}

static void cache_folders(sqlite3 *db)
{
    t_case("a Hugging Face cache folder stands for the snapshot refs/main names");
    mkdir(ROOT, 0755);
    mkdir(ROOT "/models--org--tiny", 0755);
    mkdir(ROOT "/models--org--tiny/refs", 0755);
    mkdir(ROOT "/models--org--tiny/snapshots", 0755);
    write_text(ROOT "/models--org--tiny/refs/main", "0123abcd\n");
    link_to("../../../models/st-mean-f16", ROOT "/models--org--tiny/snapshots/0123abcd");
    t_expect(db, "SELECT bert_load('hf', '" ROOT "/models--org--tiny')", NULL, "hf");
    t_expect(db, "SELECT path FROM bert_models WHERE name = 'hf'", NULL, ROOT "/models--org--tiny/snapshots/0123abcd");
    t_expect(db, "SELECT bert_load('direct', '" ST_MEAN "') || (bert_embed('a cache', 'hf') = bert_embed('a cache', "
                 "'direct'))", NULL, "direct1");
    t_expect(db, "SELECT bert_load('hf2', '" ROOT "/models--org--tiny/snapshots')", NULL, "hf2");
    t_expect(db, "SELECT bert_unload('hf') + bert_unload('hf2') + bert_unload('direct')", NULL, "3");

    t_case("a cache folder whose refs/main names no snapshot says where to point");
    write_text(ROOT "/models--org--tiny/refs/main", "ffff0000\n");
    t_expect_error(db, "SELECT bert_load('hf', '" ROOT "/models--org--tiny')", NULL, "refs/main names snapshot ffff0000",
                   ROOT "/models--org--tiny/snapshots/", NULL);
    remove(ROOT "/models--org--tiny/refs/main");
    t_expect_error(db, "SELECT bert_load('hf', '" ROOT "/models--org--tiny')", NULL, "Hugging Face cache folder",
                   "snapshots/<commit>", NULL);
}

static void weights_only_as_bin(sqlite3 *db)
{
    t_case("weights only as pytorch_model.bin: bert_load says how to convert them");
    mkdir(ROOT, 0755);
    mkdir(ROOT "/bin-only", 0755);
    link_to("../../models/bert-plain-f32/config.json", ROOT "/bin-only/config.json");
    link_to("../../models/bert-plain-f32/vocab.txt", ROOT "/bin-only/vocab.txt");
    write_text(ROOT "/bin-only/pytorch_model.bin", "not read");
    t_expect_error(db, "SELECT bert_load('bin', '" ROOT "/bin-only')", NULL, "pytorch_model.bin",
                   "save_pretrained", "safe_serialization=True", NULL);
    t_expect(db, "SELECT count(*) FROM bert_models", NULL, "1");
}

void suite_surface(void)
{
    runner_refuses_unknown_suites();
    sqlite3 *db = t_open();
    t_case("the test models are there");
    if (!T_CHECK(t_exists(CLS3 "/config.json"), "run tests/tools/make_test_models.sh build/models")) {
        sqlite3_close(db);
        return;
    }
    t_expect(db, "SELECT bert_load('good', 'build/models/bert-plain-f32')", NULL, "good");
    argument_counts(db);
    functions_table(db);
    text_arguments(db);
    models_table_reads_no_files(db);
    sharded_checkpoints(db);
    cache_folders(db);
    weights_only_as_bin(db);
    sqlite3_close(db);
}
