/*
 * test_families.c - RoBERTa, XLM-RoBERTa and MPNet through SQL: every
 * function on the generated checkpoints of each family and head
 * (tests/tools/make_test_models.sh), against tests/golden/families.jsonl,
 * which tests/golden/make_family_goldens.py writes from the Rust tokenizer's
 * ids and a PyTorch reference transcribed from transformers' modeling files
 * (tests/reference/family_reference.py).
 *
 * Each golden line is an SQL statement, its text arguments (the registered
 * model's name is bound last) and the JSON its one result must be: numbers
 * within 1e-4, everything else identical.  Lines with "encode" run the
 * encoder on raw token ids through the C API instead.
 */
#include "test.h"
#include "checkpoint_fixture.h"
#include "golden_files.h"
#include "../ext/base/buffer.h"
#include "../ext/encoder/encoder.h"
#include "../ext/base/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOL 1e-4
#define MAX_REPORTS 6

/* Whether `got` (node g of gd) is `want` (node w of wd): the same shape,
 * strings and booleans equal, numbers within TOL.  *worst takes the
 * largest numeric difference; *why says where they part. */
static int same_json(const json_doc *gd, int g, const json_doc *wd, int w, double *worst, char *why, size_t why_size)
{
    const json_node *a = &gd->nodes[g], *b = &wd->nodes[w];
    int a_num = a->type == JSON_INTEGER || a->type == JSON_REAL, b_num = b->type == JSON_INTEGER || b->type == JSON_REAL;
    if (a_num && b_num) {
        double d = fabs(a->number - b->number);
        if (d > *worst) *worst = d;
        if (d <= TOL) return 1;
        snprintf(why, why_size, "%s %.9g where %.9g is expected", a->key ? a->key : "number", a->number, b->number);
        return 0;
    }
    if (a->type != b->type) {
        snprintf(why, why_size, "%s is of another JSON type (%d, expected %d)", a->key ? a->key : "a value",
                 (int)a->type, (int)b->type);
        return 0;
    }
    if (a->type == JSON_TEXT) {
        if (strcmp(a->text, b->text) == 0) return 1;
        snprintf(why, why_size, "%s \"%.60s\" where \"%.60s\" is expected", a->key ? a->key : "text", a->text, b->text);
        return 0;
    }
    if (a->type != JSON_ARRAY && a->type != JSON_OBJECT) return 1;
    if (bert_json_length(gd, g) != bert_json_length(wd, w)) {
        snprintf(why, why_size, "%d elements where %d are expected", bert_json_length(gd, g), bert_json_length(wd, w));
        return 0;
    }
    for (int c = b->first_child, k = 0; c >= 0; c = wd->nodes[c].next_sibling, k++) {
        int other = a->type == JSON_OBJECT ? bert_json_member(gd, g, wd->nodes[c].key) : t_json_child(gd, g, k);
        if (other < 0) {
            snprintf(why, why_size, "no member %s", wd->nodes[c].key ? wd->nodes[c].key : "?");
            return 0;
        }
        if (!same_json(gd, other, wd, c, worst, why, why_size)) return 0;
    }
    return 1;
}

int t_golden_sql_line(sqlite3 *db, const json_doc *d, int line, double *worst, char *why, size_t why_size)
{
    const char *model = bert_json_str(d, bert_json_member(d, line, "model"), "");
    const char *sql = bert_json_str(d, bert_json_member(d, line, "sql"), "");
    int args = bert_json_member(d, line, "args"), n = bert_json_length(d, args);
    sqlite3_stmt *st = NULL;
    int ok = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(why, why_size, "%s: %s", sql, sqlite3_errmsg(db));
        return 0;
    }
    for (int i = 0; i < n; i++)
        sqlite3_bind_text(st, i + 1, bert_json_str(d, t_json_child(d, args, i), ""), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, n + 1, model, -1, SQLITE_TRANSIENT);
    int want_error = bert_json_member(d, line, "error");
    int rc = sqlite3_step(st);
    if (want_error >= 0) {
        /* Where the pipeline raises: an SQL error holding every phrase. */
        const char *msg = rc == SQLITE_ROW ? NULL : sqlite3_errmsg(db);
        ok = msg != NULL;
        for (int i = 0; ok && i < bert_json_length(d, want_error); i++)
            ok = strstr(msg, bert_json_str(d, t_json_child(d, want_error, i), "")) != NULL;
        if (!ok)
            snprintf(why, why_size, "%s: %s, not an error naming the problem and the fix", sql,
                     msg ? msg : "a result");
    } else if (rc != SQLITE_ROW) {
        snprintf(why, why_size, "%s: %s", sql, sqlite3_errmsg(db));
    } else {
        const char *text = (const char *)sqlite3_column_text(st, 0);
        json_doc *got = NULL;
        char *err = NULL;
        if (!text || bert_json_parse(text, strlen(text), &got, &err) != 0)
            snprintf(why, why_size, "%s gave %.80s, not JSON", sql, text ? text : "NULL");
        else
            ok = same_json(got, 0, d, bert_json_member(d, line, "expected"), worst, why, why_size);
        free(err);
        bert_json_free(got);
    }
    sqlite3_finalize(st);
    return ok;
}

/* Links each of files (n of them) of directory from into directory to. */
static void link_files(const char *to, const char *from, const char *const *files, size_t n)
{
    char link_path[700], target[700];
    for (size_t i = 0; i < n; i++) {
        snprintf(link_path, sizeof link_path, "%s/%s", to, files[i]);
        if (!T_CHECK(realpath(from, target) != NULL, "no directory %s", from)) return;
        snprintf(target + strlen(target), sizeof target - strlen(target), "/%s", files[i]);
        remove(link_path);
        T_CHECK(symlink(target, link_path) == 0, "cannot link %s", link_path);
    }
}

/* all-mpnet-base-v2's own tokenizer files (its tokenizer.json among them),
 * from ../shared when present: the same ids as the Rust tokenizer gave for
 * the golden texts that mpnet-st did not truncate. */
static void real_mpnet_tokenizer(sqlite3 *db, const json_doc *lines)
{
    static const char *const dir = "../shared/models/sentence-transformers__all-mpnet-base-v2";
    t_case("all-mpnet-base-v2's own tokenizer files give the Rust tokenizer's ids");
    if (!t_exists(dir)) {
        t_skip("../shared/models/sentence-transformers__all-mpnet-base-v2 is absent");
        return;
    }
    /* ../shared holds its tokenizer and configs but not its weights: the
     * generated mpnet-st (the same vocabulary) gives config and weights. */
    tm_dir d = tm_case_dir("real-mpnet-tokenizer");
    static const char *const tokenizer_files[] = {"tokenizer.json", "tokenizer_config.json",
                                                  "special_tokens_map.json", "vocab.txt"};
    static const char *const model_files[] = {"config.json", "model.safetensors", "modules.json",
                                              "sentence_bert_config.json", "1_Pooling"};
    link_files(d.path, dir, tokenizer_files, sizeof tokenizer_files / sizeof *tokenizer_files);
    link_files(d.path, MODELS_DIR "mpnet-st", model_files, sizeof model_files / sizeof *model_files);
    char *got = t_query(db, "SELECT bert_load('real-mpnet', ?1)", d.path, NULL);
    int ok = T_CHECK(got && strcmp(got, "real-mpnet") == 0, "bert_load: %s", got ? got : "?");
    free(got);
    int compared = 0;
    for (int line = lines->nodes[0].first_child; ok && line >= 0; line = lines->nodes[line].next_sibling) {
        const char *model = bert_json_str(lines, bert_json_member(lines, line, "model"), "");
        const char *sql = bert_json_str(lines, bert_json_member(lines, line, "sql"), "");
        int want = bert_json_member(lines, line, "expected");
        if (strcmp(model, "mpnet-st") != 0 || !strstr(sql, "bert_token_ids") || bert_json_length(lines, want) >= 256)
            continue;
        const char *text = bert_json_str(lines, t_json_child(lines, bert_json_member(lines, line, "args"), 0), "");
        char *ids = t_query(db, "SELECT bert_token_ids(?1, 'real-mpnet')", text, NULL);
        json_doc *gd = NULL;
        char *err = NULL, why[256] = "";
        double worst = 0;
        ok = T_CHECK(ids && bert_json_parse(ids, strlen(ids), &gd, &err) == 0 &&
                         same_json(gd, 0, lines, want, &worst, why, sizeof why),
                     "\"%.50s\": %s %s", text, ids ? ids : "?", why);
        compared++;
        bert_json_free(gd);
        free(err);
        free(ids);
    }
    T_CHECK(compared > 50, "only %d texts compared", compared);
}

/* The family column, the prompt option's checks and re-registration. */
static void registrations(sqlite3 *db, const json_doc *models)
{
    t_case("bert_models shows each registration's family");
    for (int c = models->nodes[0].first_child; c >= 0; c = models->nodes[c].next_sibling) {
        char *got = t_query(db, "SELECT family FROM bert_models WHERE name = ?1", models->nodes[c].key, NULL);
        const char *want = bert_json_str(models, bert_json_member(models, c, "model_type"), "?");
        T_CHECK(got && strcmp(got, want) == 0, "%s: family %s, want %s", models->nodes[c].key, got ? got : "?", want);
        free(got);
    }

    t_case("a function whose head the model lacks says which checkpoints have it");
    t_expect_error(db, "SELECT bert_fill_mask('a <mask> b', 5, 'mpnet-st')", NULL, "lm_head.*", "RobertaForMaskedLM",
                   NULL);
    t_expect_error(db, "SELECT bert_classify('a b', 'mpnet-ner')", NULL, "MPNetForSequenceClassification", "token_classification", NULL);
    t_expect_error(db, "SELECT bert_ner('a b', 'roberta-qa')", NULL, "RobertaForTokenClassification", "question_answering", NULL);
    t_expect_error(db, "SELECT bert_answer('a', 'b', 'xlmr-cls-bf16')", NULL, "roberta-base-squad2",
                   "sequence_classification", NULL);

    t_case("reduced precision holds for every family");
    static const char *const precise[] = {"mpnet-st", "roberta-st-f16", "xlmr-e5"};
    for (size_t i = 0; i < sizeof precise / sizeof *precise; i++) {
        char path[128], name[64];
        snprintf(path, sizeof path, MODELS_DIR "%s", precise[i]);
        snprintf(name, sizeof name, "%s-int8", precise[i]);
        char *got = t_query(db, "SELECT bert_load(?1, ?2, '{\"precision\": \"int8\"}')", name, path, NULL);
        free(got);
        double cos = t_query_double(db, "SELECT bert_similarity(bert_embed(?1, ?2), bert_embed(?1, ?3))",
                                    "The quick brown fox jumps over the lazy dog near the river bank.", name,
                                    precise[i], NULL);
        T_CHECK(cos > 0.995, "%s: int8 against float32 cosine %.6f", precise[i], cos);
    }

    t_case("option prompt: checked at registration, part of what makes a registration the same");
    const char *e5 = MODELS_DIR "xlmr-e5", *mpnet = MODELS_DIR "mpnet-st";
    t_expect_error(db, "SELECT bert_load('p1', ?1, '{\"prompt\": \"search\"}')", e5, "no prompt \"search\"",
                   "\"query\", \"passage\"", NULL);
    t_expect_error(db, "SELECT bert_load('p2', ?1, '{\"prompt\": \"query\"}')", mpnet, "has no prompts",
                   "{\"text\"", NULL);
    t_expect_error(db, "SELECT bert_load('p3', ?1, '{\"prompt\": 3}')", e5, "option \"prompt\" must be", NULL);
    t_expect_error(db, "SELECT bert_load('p4', ?1, '{\"prompt\": {\"text\": 5}}')", e5, "option \"prompt\"", NULL);
    t_expect_error(db, "SELECT bert_load('p5', ?1, '{\"prompt\": {\"text\": \"a\", \"name\": \"b\"}}')", e5,
                   "option \"prompt\"", NULL);
    t_expect(db, "SELECT bert_load('xlmr-e5-query', ?1, '{\"prompt\": \"query\"}')", e5, "xlmr-e5-query");
    t_expect_error(db, "SELECT bert_load('xlmr-e5-query', ?1, '{\"prompt\": \"passage\"}')", e5,
                   "already registered", "\"prompt\": {\"text\": \"query: \"}", NULL);
    /* Positions start at pad_token_id + 1 = 2: 130 of them take 128 tokens. */
    t_expect(db, "SELECT max_length FROM bert_models WHERE name = 'xlmr-e5'", NULL, "128");
    t_expect_error(db, "SELECT bert_load('p6', ?1, '{\"max_length\": 129}')", e5, "max_length 129",
                   "128 positions", "max_position_embeddings 130", "use at most 128", NULL);
    /* Without the option, default_prompt_name's prompt: a directory of
     * links to xlmr-e5's files with a config_sentence_transformers.json
     * that names one. */
    tm_dir d = tm_case_dir("default-prompt");
    static const char *const files[] = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                                        "special_tokens_map.json", "modules.json", "sentence_bert_config.json",
                                        "1_Pooling"};
    link_files(d.path, MODELS_DIR "xlmr-e5", files, sizeof files / sizeof *files);
    tm_write_text(d.path, "config_sentence_transformers.json",
                  "{\"prompts\": {\"query\": \"query: \", \"passage\": \"passage: \"}, "
                  "\"default_prompt_name\": \"passage\"}");
    t_expect(db, "SELECT bert_load('e5-default', ?1)", d.path, "e5-default");
    /* The Unigram test tokenizer cuts "passage: hello" into <s> ▁ pa s s age : ▁hello </s>. */
    t_expect(db, "SELECT group_concat(value, '') FROM json_each(bert_tokenize('hello', 'e5-default'))", NULL,
             "<s>\xe2\x96\x81passage:\xe2\x96\x81hello</s>");
    t_expect(db, "SELECT bert_similarity(bert_embed('hello', 'e5-default'), bert_embed('hello', 'xlmr-e5-literal'))"
                 " > 0.9999999", NULL, "1");
    t_expect(db, "SELECT bert_load('e5-default-query', ?1, '{\"prompt\": \"query\"}')", d.path, "e5-default-query");
    t_expect(db, "SELECT group_concat(value, '') FROM json_each(bert_tokenize('hello', 'e5-default-query'))", NULL,
             "<s>\xe2\x96\x81query:\xe2\x96\x81hello</s>");
    /* The same prompt given as text is the same registration. */
    t_expect(db, "SELECT bert_load('xlmr-e5-query', ?1, '{\"prompt\": {\"text\": \"query: \"}}')", e5,
             "xlmr-e5-query");
    /* The prompt counts towards max_length: the text is cut after "query: "'s
     * five pieces (\xe2\x96\x81 qu er y :), not before it. */
    t_expect(db, "SELECT json_array_length(bert_token_ids(?1, 'xlmr-e5-query')) || ' ' || "
                 "(SELECT group_concat(value, '') FROM json_each(bert_tokenize(?1, 'xlmr-e5-query')) "
                 "WHERE key BETWEEN 1 AND 5)",
             "word word word word word word word word word word word word word word word word word word word word "
             "word word word word word word word word word word word word word word word word word word word word "
             "word word word word word word word word word word word word word word word word word word word word "
             "word word word word word word word word word word word word word word word word word word word word "
             "word word word word word word word word word word word word word word word word word word word word "
             "word word word word word word word word word word word word word word word word word word word word "
             "word word word word word word word word word word", "128 \xe2\x96\x81query:");
}

/* roberta-base's own tokenizer files (tokenizer.json, vocab.json, merges.txt)
 * from ../shared when present, beside generated weights of its vocabulary
 * size: bert_token_ids gives the Rust tokenizer's ids on the tokenizer corpus
 * (tests/tokenizer/family_roberta_base.jsonl, computed without special
 * tokens) inside the <s> (0) and </s> (2) of its RobertaProcessing. */
static void real_roberta_tokenizer(sqlite3 *db)
{
    static const char *const dir = "../shared/models/FacebookAI__roberta-base";
    t_case("roberta-base's own tokenizer files with RoBERTa weights give the Rust tokenizer's ids through SQL");
    if (!t_exists(dir)) {
        t_skip("../shared/models/FacebookAI__roberta-base is absent");
        return;
    }
    tm_dir d = tm_case_dir("real-roberta-tokenizer");
    static const char *const tokenizer_files[] = {"tokenizer.json", "tokenizer_config.json", "vocab.json",
                                                  "merges.txt"};
    static const char *const model_files[] = {"config.json", "model.safetensors"};
    link_files(d.path, dir, tokenizer_files, sizeof tokenizer_files / sizeof *tokenizer_files);
    link_files(d.path, MODELS_DIR "roberta-vocab50265", model_files, sizeof model_files / sizeof *model_files);
    json_doc *corpus = t_read_jsonl("tests/tokenizer/corpus.jsonl");
    json_doc *golden = t_read_jsonl("tests/tokenizer/family_roberta_base.jsonl");
    char *got = t_query(db, "SELECT bert_load('real-roberta', ?1)", d.path, NULL);
    int ok = T_CHECK(corpus && golden, "cannot read the tokenizer corpus or its roberta-base golden") &&
             T_CHECK(got && strcmp(got, "real-roberta") == 0, "bert_load: %s", got ? got : "?");
    free(got);
    int compared = 0;
    for (int i = 0; ok && i < bert_json_length(corpus, 0) && compared < 40; i++) {
        const char *text = bert_json_str(corpus, t_json_child(corpus, 0, i), "");
        int ids = bert_json_member(golden, t_json_child(golden, 0, i + 1), "ids");
        int n = bert_json_length(golden, ids);
        if (n < 0 || n > 510) continue;
        bert_text want = {0};
        char num[32];
        bert_text_add(&want, "[0", 2);
        for (int k = 0; k < n; k++) {
            long long id = bert_json_int(golden, t_json_child(golden, ids, k), -1);
            int len = snprintf(num, sizeof num, ",%lld", id);
            bert_text_add(&want, num, (size_t)len);
        }
        bert_text_add(&want, ",2]", 3);
        if (!T_CHECK(want.s != NULL && !want.failed, "out of memory")) {
            free(want.s);
            break;
        }
        char *same = t_query(db, "SELECT bert_token_ids(?1, 'real-roberta') = json(?2)", text, want.s, NULL);
        ok = T_CHECK(same && strcmp(same, "1") == 0, "\"%.50s\": not %.200s", text, want.s);
        compared++;
        free(same);
        free(want.s);
    }
    T_CHECK(compared == 40, "only %d corpus lines compared", compared);
    bert_json_free(corpus);
    bert_json_free(golden);
}

void suite_families(void)
{
    t_case("RoBERTa, XLM-RoBERTa and MPNet: every function within 1e-4 of the PyTorch reference");
    json_doc *models = NULL, *lines = t_read_jsonl(GOLDEN_DIR "families.jsonl");
    char *manifest = t_read_file(GOLDEN_DIR "families_models.json", NULL);
    char *err = NULL;
    sqlite3 *db = t_open();
    if (!T_CHECK(lines && manifest && db, "cannot read the goldens or open a database") ||
        !T_CHECK(bert_json_parse(manifest, strlen(manifest), &models, &err) == 0, "families_models.json: %s",
                 err ? err : "?"))
        goto done;
    int usable = 1;
    for (int c = models->nodes[0].first_child; c >= 0; c = models->nodes[c].next_sibling) {
        const char *dir = bert_json_str(models, bert_json_member(models, c, "path"), "");
        if (!t_golden_model_file(dir, bert_json_int(models, bert_json_member(models, c, "safetensors_bytes"), -1),
                                 bert_json_str(models, bert_json_member(models, c, "safetensors_checksum"), ""))) {
            usable = 0;
            continue;
        }
        char path[256];
        snprintf(path, sizeof path, MODELS_DIR "%s", dir);
        const char *options = bert_json_str(models, bert_json_member(models, c, "options"), NULL);
        char *got = options ? t_query(db, "SELECT bert_load(?1, ?2, ?3)", models->nodes[c].key, path, options, NULL)
                            : t_query(db, "SELECT bert_load(?1, ?2)", models->nodes[c].key, path, NULL);
        usable &= T_CHECK(got && strncmp(got, "ERROR", 5) != 0, "bert_load('%s'): %s", models->nodes[c].key,
                          got ? got : "?");
        free(got);
    }
    if (!usable) goto done;

    int checked = 0, failures = 0;
    double worst = 0;
    for (int line = lines->nodes[0].first_child; line >= 0; line = lines->nodes[line].next_sibling) {
        char why[512] = "";
        const char *model = bert_json_str(lines, bert_json_member(lines, line, "model"), "");
        int ok;
        if (bert_json_member(lines, line, "encode") >= 0) {
            int entry = bert_json_member(models, 0, model);
            ok = t_golden_encode_line(lines, line, bert_json_str(models, bert_json_member(models, entry, "path"), ""), &worst,
                             why, sizeof why);
        } else {
            ok = t_golden_sql_line(db, lines, line, &worst, why, sizeof why);
        }
        checked++;
        if (!ok && failures++ < MAX_REPORTS) {
            int args = bert_json_member(lines, line, "args");
            T_CHECK(0, "%s: %s, for \"%.50s\"", model, why, bert_json_str(lines, t_json_child(lines, args, 0), ""));
        }
    }
    T_CHECK(failures == 0, "%d of %d golden checks failed", failures, checked);
    printf("families  %d checks  max|diff| %.2g\n", checked, worst);
    registrations(db, models);
    real_mpnet_tokenizer(db, lines);
    real_roberta_tokenizer(db);
done:
    free(err);
    free(manifest);
    bert_json_free(models);
    bert_json_free(lines);
    sqlite3_close(db);
}
