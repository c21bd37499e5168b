/*
 * test_zero_shot.c - bert_zero_shot and bert_zero_shot_each on the generated
 * NLI checkpoints (nli-bert: entailment first; nli-roberta: CONTRADICTION,
 * NEUTRAL, ENTAILMENT) against tests/golden/zero_shot.jsonl, which
 * tests/golden/make_zero_shot_goldens.py writes from the Rust tokenizer's ids,
 * the PyTorch references and the zero-shot-classification pipeline's
 * post-processing: labels in order, scores within 1e-4, single- and
 * multi-label, custom templates, a text cut only_first.  Then the errors.
 */
#include "test.h"
#include "golden_files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REPORTS 6

static void errors(sqlite3 *db)
{
    t_case("bert_zero_shot: wrong labels, templates, options and models are errors that say the fix");
    static const char *const nli = "SELECT bert_zero_shot('a text', ?1, '{\"model\": \"nli-bert\"}')";
    t_expect_error(db, nli, "[]", "non-empty JSON array", "[\"sports\", \"politics\"]", NULL);
    t_expect_error(db, nli, "{\"a\": 1}", "non-empty JSON array", NULL);
    t_expect_error(db, nli, "[\"a\", 3]", "label 2 of labels_json is not a text", NULL);
    t_expect_error(db, nli, "sports, politics", "labels_json is not valid JSON", NULL);
    t_expect_error(db, "SELECT bert_zero_shot('a', '[\"x\"]', ?1)",
                   "{\"model\": \"nli-bert\", \"hypothesis_template\": \"This example is\"}", "has no {}",
                   "This example is {}.", NULL);
    t_expect_error(db, "SELECT bert_zero_shot('a', '[\"x\"]', ?1)", "{\"multi_label\": 1}", "\"multi_label\"",
                   "true or false", NULL);
    t_expect_error(db, "SELECT bert_zero_shot('a', '[\"x\"]', ?1)", "{\"top_k\": 1}", "unknown option \"top_k\"",
                   "\"hypothesis_template\"", NULL);
    t_expect_error(db, "SELECT bert_zero_shot('a', '[\"x\"]', ?1)", "[1]", "options_json must be a JSON object",
                   NULL);
    char *got = t_query(db, "SELECT bert_load('cls3', 'build/models/cls-3-f32')", NULL);
    free(got);
    t_expect_error(db, "SELECT bert_zero_shot('a', '[\"x\"]', '{\"model\": \"cls3\"}')", NULL,
                   "entailment label", "\"negative\", \"neutral\", \"positive\"", "id2label", NULL);
    got = t_query(db, "SELECT bert_load('plain', 'build/models/bert-plain-f32')", NULL);
    free(got);
    t_expect_error(db, "SELECT * FROM bert_zero_shot_each('a', '[\"x\"]', '{\"model\": \"plain\"}')", NULL,
                   "no sequence-classification head", "bert_zero_shot_each", NULL);
    t_expect_error(db, "SELECT bert_zero_shot('a')", NULL, "takes 2 to 3 arguments", NULL);
    t_case("bert_zero_shot: NULL text gives NULL (no rows), after the arguments are checked");
    t_expect(db, "SELECT bert_zero_shot(NULL, '[\"x\"]', '{\"model\": \"nli-bert\"}') IS NULL", NULL, "1");
    t_expect(db, "SELECT bert_zero_shot('a', NULL, '{\"model\": \"nli-bert\"}') IS NULL", NULL, "1");
    t_expect(db, "SELECT count(*) FROM bert_zero_shot_each(NULL, '[\"x\"]', '{\"model\": \"nli-bert\"}')", NULL,
             "0");
    t_expect_error(db, "SELECT bert_zero_shot(NULL, '[]')", NULL, "non-empty JSON array", NULL);
    t_case("bert_zero_shot: a hypothesis longer than max_length is an error, not a crash");
    char long_label[400];
    memset(long_label, 'a', sizeof long_label);
    memcpy(long_label, "[\"", 2);
    for (size_t i = 2; i + 3 < sizeof long_label; i += 2) long_label[i] = ' ';
    memcpy(long_label + sizeof long_label - 3, "\"]", 3);
    t_expect_error(db, "SELECT bert_zero_shot('a', ?1, '{\"model\": \"nli-bert\"}')", long_label,
                   "leaves no room", NULL);
}

void suite_zero_shot(void)
{
    t_case("bert_zero_shot and bert_zero_shot_each equal the zero-shot-classification pipeline within 1e-4");
    json_doc *manifest = t_golden_manifest(GOLDEN_DIR "zero_shot_models.json");
    json_doc *lines = t_read_jsonl(GOLDEN_DIR "zero_shot.jsonl");
    sqlite3 *db = t_open();
    if (!T_CHECK(manifest && lines && db, "cannot read the goldens or open a database")) goto done;
    int usable = 1;
    for (int c = manifest->nodes[0].first_child; c >= 0; c = manifest->nodes[c].next_sibling) {
        if (!t_golden_model_matches(manifest, c)) {
            usable = 0;
            continue;
        }
        char path[256];
        snprintf(path, sizeof path, MODELS_DIR "%s", t_member_str(manifest, c, "path"));
        char *got = t_query(db, "SELECT bert_load(?1, ?2)", manifest->nodes[c].key, path, NULL);
        usable &= T_CHECK(got && strncmp(got, "ERROR", 5) != 0, "bert_load: %s", got ? got : "?");
        free(got);
    }
    if (!usable) goto done;
    int checked = 0, failures = 0;
    double worst = 0;
    for (int line = lines->nodes[0].first_child; line >= 0; line = lines->nodes[line].next_sibling) {
        char why[512] = "";
        checked++;
        if (!t_golden_sql_line(db, lines, line, &worst, why, sizeof why) && failures++ < MAX_REPORTS)
            T_CHECK(0, "%s: %s", t_member_str(lines, line, "model"), why);
    }
    T_CHECK(failures == 0 && checked == 36, "%d of %d golden checks failed (36 expected)", failures, checked);
    printf("zero-shot  %d checks  max|diff| %.2g\n", checked, worst);
    errors(db);
done:
    bert_json_free(manifest);
    bert_json_free(lines);
    sqlite3_close(db);
}
