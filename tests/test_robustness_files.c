/*
 * test_robustness_files.c - bad bert_load options, config files, vocabularies
 * and tokenizer files: each an SQL error naming the file and the fix, the
 * connection alive afterwards.
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

/* ---- bad options and model directories ---------------------------------------- */

void robustness_options(sqlite3 *db)
{
    t_case("bad bert_load options are refused by name");
    static const struct { const char *json, *fragment; } cases[] = {
        {"{\"max_length\": 2}", "max_length"},
        {"{\"max_length\": -5}", "max_length"},
        {"{\"max_length\": 1e300}", "max_length"},
        {"{\"max_length\": \"64\"}", "max_length"},
        {"{\"max_length\": 513}", "max_position_embeddings"},
        {"{\"threads\": 0}", "threads"},
        {"{\"threads\": 100000}", "threads"},
        {"{\"pooling\": 1}", "pooling"},
        {"{\"normalize\": \"yes\"}", "normalize"},
        {"{\"truncate\": null}", "truncate"},
        {"{\"\": 1}", "unknown bert_load option"},
        {"null", "object"},
        {"[]", "object"},
        {"{", "JSON"},
        {"{\"pooling\": \"mean\"", "JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        t_expect_error(db, "SELECT bert_load('opt', '" GOOD "', ?1)", cases[i].json, cases[i].fragment, NULL);
    t_expect(db, "SELECT count(*) FROM bert_models WHERE name = 'opt'", NULL, "0");

    t_case("pooler pooling on a model without a pooler says what to use instead");
    t_expect(db, "SELECT bert_load('nopooler', '" MLM "', '{\"pooling\": \"pooler\"}')", NULL, "nopooler");
    t_expect_error(db, "SELECT bert_embed('x', 'nopooler')", NULL, "pooler", "cls", NULL);
    t_expect(db, "SELECT bert_unload('nopooler')", NULL, "1");

    t_case("a tiny max_length still gives [CLS] ... [SEP]");
    t_expect(db, "SELECT bert_load('three', '" PRETRAIN "', '{\"max_length\": 3}')", NULL, "three");
    t_expect(db, "SELECT bert_tokenize('many words here', 'three')", NULL, "[\"[CLS]\",\"many\",\"[SEP]\"]");
    t_expect(db, "SELECT length(bert_embed('many words here', 'three'))", NULL, "512");
    t_expect(db, "SELECT typeof(bert_next_sentence('one two', 'three four', 'three'))", NULL, "real");
    t_expect(db, "SELECT bert_unload('three')", NULL, "1");
    rb_expect_alive(db);
}

void robustness_configs(sqlite3 *db)
{
    char dir[256];

    t_case("a missing directory");
    t_expect_error(db, "SELECT bert_load('x', '" ROOT "/no-such-model')", NULL, "no-such-model", "not found", NULL);
    t_expect_error(db, "SELECT bert_load('x', '" GOOD "/config.json')", NULL, "is a file, not a directory", NULL);
    t_expect_error(db, "SELECT bert_load('x', '')", NULL, "not found", NULL);
    t_expect_error(db, "SELECT bert_load('x', replace(hex(zeroblob(3000)), '00', 'a/'))", NULL, "not found", NULL);

    t_case("a missing config.json");
    rb_model_dir(dir, sizeof dir, "no-config");
    remove(ROOT "/no-config/config.json");
    t_expect_error(db, "SELECT bert_load('x', '" ROOT "/no-config')", NULL, "config.json", "does not exist", NULL);

    t_case("a config.json that is a directory");
    rb_model_dir(dir, sizeof dir, "config-dir");
    remove(ROOT "/config-dir/config.json");
    mkdir(ROOT "/config-dir/config.json", 0755);
    t_expect_error(db, "SELECT bert_load('x', '" ROOT "/config-dir')", NULL, "config.json", NULL);
    rmdir(ROOT "/config-dir/config.json");

    t_case("malformed config.json values are named");
    static const struct { const char *json, *f1, *f2; } cases[] = {
        {"", "config.json", "JSON"},
        {"{\"model_type\": \"bert\", \"hidden_size\": 128", "config.json", "JSON"},
        {"\xff\xfe{}", "config.json", "JSON"},
        {"[1, 2, 3]", "config.json", "not a JSON object"},
        {"{}", "config.json", "model_type"},
        {"{\"model_type\": \"gpt2\"}", "model_type", "gpt2"},
        {"{\"model_type\": 7}", "model_type", "bert"},
        {"{\"model_type\": \"bert\", \"hidden_size\": \"128\"}", "hidden_size", "integer"},
        {"{\"model_type\": \"bert\", \"hidden_size\": -128}", "hidden_size", "integer"},
        {"{\"model_type\": \"bert\", \"hidden_size\": 1e30}", "hidden_size", "integer"},
        {"{\"model_type\": \"bert\", \"hidden_size\": 12.5}", "hidden_size", "integer"},
        {"{\"model_type\": \"bert\", \"vocab_size\": 99999999999999999999}", "vocab_size", "integer"},
        {"{\"model_type\": \"bert\", \"num_hidden_layers\": 0}", "num_hidden_layers", "integer"},
        {"{\"model_type\": \"bert\", \"max_position_embeddings\": 1000000}", "max_position_embeddings", "integer"},
        {"{\"model_type\": \"bert\", \"hidden_size\": 128, \"num_attention_heads\": 3}", "num_attention_heads", "multiple"},
        {"{\"model_type\": \"bert\", \"layer_norm_eps\": \"small\"}", "layer_norm_eps", "number"},
        {"{\"model_type\": \"bert\", \"layer_norm_eps\": 0}", "layer_norm_eps", "number"},
        {"{\"model_type\": \"bert\", \"hidden_act\": \"swish\"}", "hidden_act", "swish"},
        {"{\"model_type\": \"bert\", \"hidden_act\": null}", "hidden_act", "gelu"},
    };
    rb_model_dir(dir, sizeof dir, "bad-config");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        rb_write_text(dir, "config.json", cases[i].json);
        t_expect_error(db, "SELECT bert_load('x', '" ROOT "/bad-config')", NULL, cases[i].f1, cases[i].f2, NULL);
    }
    t_expect(db, "SELECT count(*) FROM bert_models WHERE name = 'x'", NULL, "0");

    t_case("a config.json of another model: the weights' shapes disagree");
    rb_model_dir(dir, sizeof dir, "other-config");
    rb_write_text(dir, "config.json", "{\"model_type\": \"bert\", \"vocab_size\": 30522, \"hidden_size\": 64, "
                                   "\"num_hidden_layers\": 2, \"num_attention_heads\": 2, "
                                   "\"intermediate_size\": 256, \"max_position_embeddings\": 512}");
    rb_expect_load_time_error(db, "other", dir, "embeddings.word_embeddings.weight", "[30522, 64]");

    t_case("sentence-transformers files that cannot be honoured");
    rb_model_dir(dir, sizeof dir, "bad-st");
    rb_write_text(dir, "modules.json", "[{\"type\": \"sentence_transformers.models.Dense\", \"path\": \"2_Dense\"}]");
    t_expect_error(db, "SELECT bert_load('x', '" ROOT "/bad-st')", NULL, "modules.json", "Dense", NULL);
    rb_write_text(dir, "modules.json", "{\"not\": \"a list\"}");
    t_expect_error(db, "SELECT bert_load('x', '" ROOT "/bad-st')", NULL, "modules.json", "array", NULL);
    rb_write_text(dir, "modules.json", "[{\"type\": ");
    t_expect_error(db, "SELECT bert_load('x', '" ROOT "/bad-st')", NULL, "modules.json", NULL);
    remove(ROOT "/bad-st/modules.json");
    mkdir(ROOT "/bad-st/1_Pooling", 0755);
    rb_write_text(dir, "1_Pooling/config.json", "{\"pooling_mode_lasttoken\": true}");
    t_expect_error(db, "SELECT bert_load('x', '" ROOT "/bad-st')", NULL, "pooling_mode_lasttoken", NULL);
    remove(ROOT "/bad-st/1_Pooling/config.json");
    rb_write_text(dir, "sentence_bert_config.json", "{\"max_seq_length\": -5}");
    t_expect_error(db, "SELECT bert_load('x', '" ROOT "/bad-st')", NULL, "max_seq_length", NULL);
    rb_expect_alive(db);
}

/* ---- vocabularies and tokenizer files ----------------------------------------- */

/* Writes dir/tokenizer.json with `count` special added tokens tok0, tok1 ...
 * past the end of bert-base's vocabulary. */
static void write_added_tokens(const char *dir, int count)
{
    char *json = malloc((size_t)count * 96 + 64);
    if (!json) exit(2);
    size_t n = (size_t)sprintf(json, "{\"added_tokens\": [");
    for (int i = 0; i < count; i++)
        n += (size_t)sprintf(json + n, "%s{\"id\": %d, \"content\": \"tok%d\", \"special\": true, "
                                       "\"normalized\": false}", i ? ", " : "", 30522 + i, i);
    n += (size_t)sprintf(json + n, "]}");
    char path[512];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    rb_write_file(path, json, n);
    free(json);
}

typedef struct {
    sqlite3 *db;
    const char *sql;
    char *result;
    long allocations;
    long long instructions;    /* -1: not counted */
    int ok;
} tokenizer_cost;

static void run_counted(void *arg)
{
    tokenizer_cost *c = arg;
    long before = t_allocations();
    c->result = rb_query(c->db, c->sql, NULL);
    c->allocations = t_allocations() - before;
}

/* The first bert_tokenize of a freshly registered model (it reads the
 * tokenizer files) with `count` added tokens, checked and counted. */
static tokenizer_cost first_tokenize_cost(sqlite3 *db, const char *model, int count)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT bert_tokenize('hello tok5 world tok%d', '%s')", count - 1, model);
    tokenizer_cost c = {.db = db, .sql = sql};
    c.instructions = t_instructions(run_counted, &c);
    char want[128];
    snprintf(want, sizeof want, "[\"[CLS]\",\"hello\",\"tok5\",\"world\",\"tok%d\",\"[SEP]\"]", count - 1);
    c.ok = T_CHECK(strcmp(c.result, want) == 0, "%d added tokens: %s", count, c.result);
    free(c.result);
    c.result = NULL;
    c.sql = NULL;
    return c;
}

/* vocab.txt missing, empty, a directory, without its specials, of junk, too long. */
static void vocab_txt_files(sqlite3 *db)
{
    char dir[256];

    t_case("vocab.txt missing: bert_load says which tokenizer files it needs");
    rb_model_dir(dir, sizeof dir, "no-vocab");
    remove(ROOT "/no-vocab/vocab.txt");
    t_expect_error(db, "SELECT bert_load('novocab', '" ROOT "/no-vocab')", NULL, "no tokenizer", "vocab.txt",
                   "tokenizer.json", NULL);
    t_expect(db, "SELECT count(*) FROM bert_models WHERE name = 'novocab'", NULL, "0");

    t_case("vocab.txt empty");
    rb_model_dir(dir, sizeof dir, "empty-vocab");
    rb_write_text(dir, "vocab.txt", "");
    if (rb_load_ok(db, "emptyvocab", dir)) {
        t_expect_error(db, "SELECT bert_tokenize('x', 'emptyvocab')", NULL, "vocab.txt", "empty", NULL);
        t_expect_error(db, "SELECT bert_tokenize('x', 'emptyvocab')", NULL, "vocab.txt", "empty", NULL);
        t_expect(db, "SELECT bert_unload('emptyvocab')", NULL, "1");
    }

    t_case("vocab.txt that is a directory");
    rb_model_dir(dir, sizeof dir, "vocab-dir");
    remove(ROOT "/vocab-dir/vocab.txt");
    mkdir(ROOT "/vocab-dir/vocab.txt", 0755);
    if (rb_load_ok(db, "vocabdir", dir)) {
        t_expect_error(db, "SELECT bert_tokenize('x', 'vocabdir')", NULL, "vocab.txt", NULL);
        t_expect(db, "SELECT bert_unload('vocabdir')", NULL, "1");
    }
    rmdir(ROOT "/vocab-dir/vocab.txt");

    t_case("vocab.txt without [UNK] or [CLS]");
    rb_model_dir(dir, sizeof dir, "no-unk");
    rb_write_text(dir, "vocab.txt", "hello\nworld\n");
    if (rb_load_ok(db, "nounk", dir)) {
        t_expect_error(db, "SELECT bert_tokenize('hello', 'nounk')", NULL, "[UNK]", "vocab.txt", NULL);
        t_expect(db, "SELECT bert_unload('nounk')", NULL, "1");
    }
    rb_model_dir(dir, sizeof dir, "no-cls");
    rb_write_text(dir, "vocab.txt", "[UNK]\nhello\n");
    if (rb_load_ok(db, "nocls", dir)) {
        t_expect_error(db, "SELECT bert_tokenize('hello', 'nocls')", NULL, "[CLS]", NULL);
        t_expect_error(db, "SELECT bert_next_sentence('a', 'b', 'nocls')", NULL, NULL);
        t_expect(db, "SELECT bert_unload('nocls')", NULL, "1");
    }

    t_case("vocab.txt of bytes that are not text still tokenizes");
    rb_model_dir(dir, sizeof dir, "junk-vocab");
    {
        unsigned char junk[4096];
        uint32_t x = 12345;
        for (size_t i = 0; i < sizeof junk; i++) {
            x = x * 1103515245u + 12345u;
            junk[i] = (unsigned char)(x >> 16);
        }
        static const char head[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n\n\r\n\n##\n";
        memcpy(junk, head, sizeof head - 1);
        rb_write_file(ROOT "/junk-vocab/vocab.txt", junk, sizeof junk);
    }
    if (rb_load_ok(db, "junk", dir)) {
        t_expect(db, "SELECT json_valid(bert_token_ids(?1, 'junk'))", "some text \xc3\xa9 ## [MASK]", "1");
        t_expect(db, "SELECT typeof(bert_tokenize(?1, 'junk'))", "some text \xc3\xa9 ## [MASK]", "text");
        t_expect(db, "SELECT bert_unload('junk')", NULL, "1");
    }

    t_case("vocab.txt larger than the weights' vocabulary");
    rb_model_dir(dir, sizeof dir, "big-vocab");
    {
        size_t len;
        char *v = t_read_file(GOOD "/vocab.txt", &len);
        if (!v) exit(2);
        char *more = malloc(len + 64);
        if (!more) exit(2);
        memcpy(more, v, len);
        memcpy(more + len, "extra1\nextra2\n", 14);
        rb_write_file(ROOT "/big-vocab/vocab.txt", more, len + 14);
        free(v);
        free(more);
    }
    if (rb_load_ok(db, "bigvocab", dir)) {
        t_expect(db, "SELECT json_array_length(bert_token_ids('extra1', 'bigvocab'))", NULL, "3");
        t_expect_error(db, "SELECT bert_embed('extra1', 'bigvocab')", NULL, "vocab.txt", "do not belong together", NULL);
        t_expect(db, "SELECT bert_unload('bigvocab')", NULL, "1");
    }
}

static void malformed_tokenizer_files(sqlite3 *db)
{
    char dir[256];

    t_case("malformed tokenizer files are named");
    static const struct { const char *file, *json, *f1, *f2; } cases[] = {
        {"tokenizer.json", "{\"model\": ", "tokenizer.json", NULL},
        {"tokenizer.json", "[]", "tokenizer.json", "not a JSON object"},
        {"tokenizer.json", "{\"model\": {\"type\": \"BPE\"}}", "tokenizer.json", "BPE"},
        {"tokenizer.json", "{\"normalizer\": {\"type\": \"NFC\"}}", "tokenizer.json", "NFC"},
        {"tokenizer.json", "{\"pre_tokenizer\": {\"type\": \"Whitespace\"}}", "tokenizer.json", "Whitespace"},
        {"tokenizer.json", "{\"decoder\": {\"type\": \"ByteLevel\"}}", "tokenizer.json", "ByteLevel"},
        {"tokenizer.json", "{\"added_tokens\": [{\"id\": 99999999, \"content\": \"[NEW]\"}]}", "tokenizer.json", "[NEW]"},
        {"tokenizer.json", "{\"added_tokens\": [{\"id\": -1, \"content\": \"[NEW]\"}]}", "tokenizer.json", "added_tokens"},
        {"tokenizer.json", "{\"added_tokens\": [{\"id\": 5}]}", "tokenizer.json", "added_tokens"},
        {"tokenizer.json", "{\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[NOPE]\"}}", "[NOPE]", NULL},
        {"tokenizer_config.json", "{\"do_lower_case\": ", "tokenizer_config.json", NULL},
        {"tokenizer_config.json", "\"text\"", "tokenizer_config.json", "not a JSON object"},
        {"tokenizer_config.json", "{\"unk_token\": \"[NOPE]\"}", "[NOPE]", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        rb_model_dir(dir, sizeof dir, "bad-tokenizer");
        rb_write_text(dir, cases[i].file, cases[i].json);
        if (!rb_load_ok(db, "badtok", dir)) continue;
        t_expect_error(db, "SELECT bert_tokenize('hello', 'badtok')", NULL, cases[i].f1, cases[i].f2, NULL);
        t_expect(db, "SELECT bert_unload('badtok')", NULL, "1");
    }
}

static void fifos_and_devices(sqlite3 *db)
{
    char dir[256];

    t_case("model files that are FIFOs or devices are refused, not waited on or read without end");
    static const struct { const char *file, *target; int call; } specials[] = {
        {"config.json", NULL, 0},               /* a FIFO: bert_load */
        {"vocab.txt", NULL, 1},                 /* a FIFO: the first tokenization */
        {"tokenizer.json", NULL, 1},
        {"model.safetensors", NULL, 2},         /* a FIFO: the first embedding */
        {"vocab.txt", "/dev/null", 1},
        {"vocab.txt", "/dev/zero", 1},          /* endless */
        {"tokenizer_config.json", "/dev/zero", 1},
        {"model.safetensors", "/dev/zero", 2},
    };
    static const char *const calls[] = {
        "SELECT bert_load('special', '" ROOT "/special')",
        "SELECT bert_load('special', '" ROOT "/special') || bert_tokenize('hello', 'special')",
        "SELECT bert_load('special', '" ROOT "/special') || bert_embed('hello', 'special')",
    };
    for (size_t i = 0; i < sizeof specials / sizeof *specials; i++) {
        /* An endless device under a sanitizer would take all the memory it
         * can get before failing: the address space limit needs a plain build. */
        if (SANITIZED && specials[i].target && strcmp(specials[i].target, "/dev/zero") == 0) continue;
        rb_model_dir(dir, sizeof dir, "special");
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, specials[i].file);
        remove(path);
        int made = specials[i].target ? symlink(specials[i].target, path) : mkfifo(path, 0644);
        if (!T_CHECK(made == 0, "cannot make %s", path)) continue;
        char out[1024];
        int rc = rb_query_in_child(db, calls[specials[i].call], NULL, 10, 1024, out, sizeof out);
        T_CHECK(rc == 0 && rb_starts_with(out, "ERROR") && strstr(out, specials[i].file) && !strstr(out, "out of memory"),
                "%s as %s: %s", specials[i].file, specials[i].target ? specials[i].target : "a FIFO", out);
        remove(path);
    }
}

static void added_tokens_in_linear_time(sqlite3 *db)
{
    char dir[256];

    t_case("a tokenizer.json with 40000 added tokens loads in linear time");
    /* Linear: twice the added tokens beyond the first 400 cost twice the
     * work (a quadratic load once took 17 s for 40000).  Work is counted,
     * not timed: allocations everywhere (a copy per token shows there), and
     * instructions where the CPU's counter is available (a scan per token
     * shows only there; virtual machines often have no counter). */
    static const int counts[3] = {400, 20000, 40000};
    tokenizer_cost cost[3];
    int measured = 0;
    for (int k = 0; k < 3; k++, measured++) {
        char name[64];
        snprintf(name, sizeof name, "added-%d", counts[k]);
        rb_model_dir(dir, sizeof dir, name);
        write_added_tokens(dir, counts[k]);
        if (!rb_load_ok(db, "many", dir)) break;
        cost[k] = first_tokenize_cost(db, "many", counts[k]);
        t_expect(db, "SELECT bert_unload('many')", NULL, "1");
        if (!cost[k].ok) break;
    }
    if (measured == 3) {
        printf("  tokenizer with 400 / 20000 / 40000 added tokens: %ld / %ld / %ld allocations", cost[0].allocations,
               cost[1].allocations, cost[2].allocations);
        if (cost[0].instructions >= 0)
            printf(", %lld / %lld / %lld instructions", cost[0].instructions, cost[1].instructions,
                   cost[2].instructions);
        printf("\n");
        double by_allocations = (double)(cost[2].allocations - cost[0].allocations) /
                                (double)(cost[1].allocations - cost[0].allocations);
        T_CHECK(by_allocations >= 1.5 && by_allocations <= 2.5,
                "allocations beyond 400 added tokens grew %.2f times from 20000 to 40000, not about 2", by_allocations);
        if (cost[0].instructions >= 0) {
            double by_instructions = (double)(cost[2].instructions - cost[0].instructions) /
                                     (double)(cost[1].instructions - cost[0].instructions);
            T_CHECK(by_instructions >= 1.5 && by_instructions <= 2.5,
                    "instructions beyond 400 added tokens grew %.2f times from 20000 to 40000, not about 2",
                    by_instructions);
        } else {
            printf("  (no instruction counter on this machine: allocations compared only)\n");
        }
    }
}

static void tokenizer_settings_out_of_range(sqlite3 *db)
{
    char dir[256];

    t_case("tokenizer.json settings out of range do no harm");
    rb_model_dir(dir, sizeof dir, "odd-tokenizer");
    rb_write_text(dir, "tokenizer.json",
               "{\"model\": {\"type\": \"WordPiece\", \"max_input_chars_per_word\": -7, "
               "\"continuing_subword_prefix\": \"\"}, \"decoder\": {\"type\": \"WordPiece\", \"prefix\": \"\"}, "
               "\"added_tokens\": [{\"id\": 30522, \"content\": \"\", \"special\": true}]}");
    if (rb_load_ok(db, "oddtok", dir)) {
        t_expect(db, "SELECT json_valid(t) AND t ->> '$[0]' = '[CLS]' AND t ->> '$[#-1]' = '[SEP]' "
                   "FROM (SELECT bert_tokenize('hello world', 'oddtok') AS t)", NULL, "1");
        t_expect(db, "SELECT bert_unload('oddtok')", NULL, "1");
    }
}

void robustness_vocabularies(sqlite3 *db)
{
    vocab_txt_files(db);
    malformed_tokenizer_files(db);
    fifos_and_devices(db);
    added_tokens_in_linear_time(db);
    tokenizer_settings_out_of_range(db);
    rb_expect_alive(db);
}

