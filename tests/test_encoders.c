/*
 * test_encoders.c - ELECTRA, ModernBERT, DeBERTa-v2, JinaBERT, nomic-bert and gte's
 * "new" architecture through SQL and the encoder:
 * every function on the generated checkpoints of each family and head
 * (tests/golden/make_encoder_models.py) against tests/golden/encoders.jsonl,
 * which tests/golden/make_encoder_goldens.py writes from the Rust
 * tokenizer's ids and a PyTorch reference transcribed from transformers'
 * modeling files (tests/reference/encoder_reference.py); then what
 * config.json may ask that is refused, reduced precisions, and ModernBERT's
 * sliding window as bert_attention shows it.
 *
 * The ModernBERT models carry ModernBERT-large's tokenizer from ../shared,
 * the JinaBERT ones jina-embeddings-v2-base-en's: without them they are not
 * generated and their cases skip.
 */
#include "test.h"
#include "checkpoint_fixture.h"
#include "golden_files.h"
#include "../ext/encoder/encoder.h"
#include "../ext/base/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_REPORTS 6

/* Registers the manifest's models whose names start with `family` and
 * runs their golden lines.  0 when the family's models are absent (the
 * case is skipped with `absent`). */
static int golden_family(sqlite3 *db, const json_doc *models, const json_doc *lines, const char *family,
                         const char *sentinel, const char *absent)
{
    char first[256];
    snprintf(first, sizeof first, MODELS_DIR "%s/model.safetensors", sentinel);
    if (!t_exists(first)) {
        t_skip(absent);
        return 0;
    }
    const size_t prefix = strlen(family);
    int usable = 1;
    for (int c = models->nodes[0].first_child; c >= 0; c = models->nodes[c].next_sibling) {
        const char *name = models->nodes[c].key;
        if (strncmp(name, family, prefix) != 0) continue;
        const char *dir = t_member_str(models, c, "path");
        if (!t_golden_model_file(dir, bert_json_int(models, bert_json_member(models, c, "safetensors_bytes"), -1),
                                 t_member_str(models, c, "safetensors_checksum"))) {
            usable = 0;
            continue;
        }
        char path[256];
        snprintf(path, sizeof path, MODELS_DIR "%s", dir);
        const char *options = bert_json_str(models, bert_json_member(models, c, "options"), NULL);
        char *got = options ? t_query(db, "SELECT bert_load(?1, ?2, ?3)", name, path, options, NULL)
                            : t_query(db, "SELECT bert_load(?1, ?2)", name, path, NULL);
        usable &= T_CHECK(got && strcmp(got, name) == 0, "bert_load('%s'): %s", name, got ? got : "?");
        free(got);
    }
    if (!usable) return 0;
    int checked = 0, failures = 0;
    double worst = 0;
    for (int line = lines->nodes[0].first_child; line >= 0; line = lines->nodes[line].next_sibling) {
        const char *model = t_member_str(lines, line, "model");
        if (strncmp(model, family, prefix) != 0) continue;
        char why[512] = "";
        int ok;
        if (bert_json_member(lines, line, "encode") >= 0) {
            int entry = bert_json_member(models, 0, model);
            ok = t_golden_encode_line(lines, line, t_member_str(models, entry, "path"), &worst, why, sizeof why);
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
    T_CHECK(checked > 100, "only %d golden checks for %s", checked, family);
    printf("%s  %d checks  max|diff| %.2g\n", family, checked, worst);
    return 1;
}

/* A directory with the model's weights and tokenizer and `config` as its
 * config.json, for what config.json may say that is refused. */
static void refused(sqlite3 *db, const char *model, const char *config, const char *phrase, const char *phrase2)
{
    tm_dir d = tm_case_dir("refused-config");
    static const char *const files[] = {"model.safetensors", "vocab.txt", "tokenizer.json", "tokenizer_config.json"};
    char from[512], to[700];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(from, sizeof from, MODELS_DIR "%s/%s", model, files[i]);
        snprintf(to, sizeof to, "%s/%s", d.path, files[i]);
        remove(to);
        char target[600];
        if (t_exists(from) && realpath(from, target)) T_CHECK(symlink(target, to) == 0, "cannot link %s", to);
    }
    tm_write_text(d.path, "config.json", config);
    char name[32];
    static int serial;
    snprintf(name, sizeof name, "refused-%d", serial++);
    char *got = t_query(db, "SELECT bert_embed('a b', bert_load(?1, ?2))", name, d.path, NULL);
    T_CHECK(got && strstr(got, phrase) && (!phrase2 || strstr(got, phrase2)), "%s: %s, not an error naming %s",
            config, got ? got : "a result", phrase);
    free(got);
}

static void refusals(sqlite3 *db, int modern)
{
    t_case("config.json settings of ELECTRA and ModernBERT that are not implemented are refused, naming the key");
    refused(db, "electra-base",
            "{\"model_type\": \"electra\", \"vocab_size\": 30522, \"embedding_size\": 64, \"hidden_size\": 96, "
            "\"num_hidden_layers\": 2, \"num_attention_heads\": 2, \"intermediate_size\": 192, "
            "\"position_embedding_type\": \"relative_key\"}",
            "position_embedding_type", "relative_key");
    refused(db, "electra-base", "{\"model_type\": \"deberta\"}", "\"deberta-v2\", \"nomic_bert\" and \"new\"", "deberta");
    refused(db, "electra-base", "{\"model_type\": \"deberta-v2\", \"relative_attention\": true, \"share_att_key\": false}",
            "share_att_key", NULL);
    refused(db, "electra-base", "{\"model_type\": \"deberta-v2\", \"conv_kernel_size\": 3}", "conv_kernel_size", NULL);
    refused(db, "electra-base", "{\"model_type\": \"deberta-v2\", \"pos_att_type\": [\"p2p\"]}", "pos_att_type",
            "p2p");
    if (!modern) return;
    static const char *const base =
        "{\"model_type\": \"modernbert\", \"vocab_size\": 50368, \"hidden_size\": 64, \"num_hidden_layers\": 4, "
        "\"num_attention_heads\": 4, \"intermediate_size\": 96, \"local_attention\": 16, ";
    char config[1024];
    snprintf(config, sizeof config, "%s\"classifier_pooling\": \"max\"}", base);
    refused(db, "modernbert-mlm", config, "classifier_pooling", "\"cls\" or \"mean\"");
    snprintf(config, sizeof config, "%s\"rope_parameters\": {\"full_attention\": {\"rope_type\": \"yarn\", "
                                    "\"rope_theta\": 160000}}}", base);
    refused(db, "modernbert-mlm", config, "rope_parameters.full_attention", "rope_type");
    snprintf(config, sizeof config, "%s\"layer_types\": [\"full_attention\", \"full_attention\", "
                                    "\"sliding_attention\", \"full_attention\"]}", base);
    refused(db, "modernbert-mlm", config, "layer_types", "global_attn_every_n_layers");
    snprintf(config, sizeof config, "%s\"hidden_activation\": \"silu\"}", base);
    refused(db, "modernbert-mlm", config, "hidden_activation", "silu");
}

/* bfloat16 and int8 projections against float32: the same embeddings
 * within cosine 0.995, the same best fill-mask token. */
static void precisions(sqlite3 *db, const char *const *names, size_t n)
{
    static const char *const text = "The quick brown fox jumps over the lazy dog near the river bank.";
    static const char *const precision[] = {"bfloat16", "int8"};
    for (size_t i = 0; i < n; i++)
        for (size_t p = 0; p < 2; p++) {
            char path[128], name[96], options[64];
            snprintf(path, sizeof path, MODELS_DIR "%s", names[i]);
            snprintf(name, sizeof name, "%s-%s", names[i], precision[p]);
            snprintf(options, sizeof options, "{\"precision\": \"%s\"}", precision[p]);
            char *got = t_query(db, "SELECT bert_load(?1, ?2, ?3)", name, path, options, NULL);
            T_CHECK(got && strcmp(got, name) == 0, "bert_load %s: %s", name, got ? got : "?");
            free(got);
            double cos = t_query_double(db, "SELECT bert_similarity(bert_embed(?1, ?2), bert_embed(?1, ?3))", text,
                                        name, names[i], NULL);
            T_CHECK(cos > 0.995, "%s: %s against float32 cosine %.6f", names[i], precision[p], cos);
        }
}

/* JinaBERT: ALiBi in place of position embeddings, its 8192 positions
 * taken whole; its settings the encoder lacks refused by key; not trained. */
static void jina_checks(sqlite3 *db)
{
    t_case("JinaBERT at reduced precision, past 512 tokens, its family and tasks, refusals");
    static const char *const names[] = {"jina-embed", "jina-cls"};
    precisions(db, names, 2);
    t_expect(db, "SELECT family || ' ' || coalesce(task, '-') FROM bert_models WHERE name = 'jina-mlm'", NULL,
             "bert fill_mask");
    t_expect(db, "SELECT task FROM bert_models WHERE name = 'jina-cls'", NULL, "sequence_classification");
    /* 2000 word pieces, far past BERT's 512: sentence_bert_config's
     * max_seq_length 8192 lets them all through. */
    char *text = malloc(16 * 1000 + 1);
    if (!T_CHECK(text != NULL, "out of memory")) return;
    text[0] = 0;
    for (int i = 0; i < 1000; i++) strcat(text, "river bank ");
    t_expect(db, "SELECT json_array_length(bert_token_ids(?1, 'jina-embed')) > 2000", text, "1");
    t_expect(db, "SELECT json_array_length(bert_vector_to_json(bert_embed(?1, 'jina-embed')))", text, "96");
    free(text);
    /* Symmetric ALiBi: near tokens weigh more than far ones, alike either way. */
    static const char *const words = "one two three four five six seven eight nine ten eleven twelve";
    double near = t_query_double(db, "SELECT avg(weight) FROM bert_attention(?1, '{\"model\": \"jina-mlm\", "
                                     "\"layers\": [0]}') WHERE abs(from_position - to_position) = 1", words, NULL);
    double far = t_query_double(db, "SELECT avg(weight) FROM bert_attention(?1, '{\"model\": \"jina-mlm\", "
                                    "\"layers\": [0]}') WHERE abs(from_position - to_position) > 8", words, NULL);
    T_CHECK(near > far, "ALiBi: neighbours get %.4g on average, tokens 9 or more away %.4g", near, far);
    refused(db, "jina-mlm",
            "{\"model_type\": \"bert\", \"vocab_size\": 30528, \"hidden_size\": 64, \"num_hidden_layers\": 2, "
            "\"num_attention_heads\": 4, \"intermediate_size\": 96, \"max_position_embeddings\": 8192, "
            "\"position_embedding_type\": \"alibi\", \"feed_forward_type\": \"swiglu\"}",
            "feed_forward_type", "swiglu");
}

/* What both rotary families share with every other: bert_embed_each in a
 * batch as bert_embed one by one, bert_similarity, bert_chunks, a text far
 * past 512 tokens. */
static void rotary_functions(sqlite3 *db, const char *model, int width)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM bert_embed_each(json_array('a river bank', 'the heavy rain', "
                              "'search the archive'), '%s') AS e WHERE e.embedding = bert_embed(e.value, '%s')",
             model, model);
    t_expect(db, sql, NULL, "3");
    snprintf(sql, sizeof sql, "SELECT bert_similarity('a dog barked', 'a dog barked', '%s') > 0.9999", model);
    t_expect(db, sql, NULL, "1");
    snprintf(sql, sizeof sql, "SELECT count(*) > 1 AND sum(tokens <= 8) = count(*) FROM bert_chunks("
                              "'one two three four five six seven eight nine ten eleven twelve', 8, 0, '%s')", model);
    t_expect(db, sql, NULL, "1");
    char *text = malloc(16 * 1000 + 1);
    if (!T_CHECK(text != NULL, "out of memory")) return;
    text[0] = 0;
    for (int i = 0; i < 1000; i++) strcat(text, "river bank ");
    snprintf(sql, sizeof sql, "SELECT json_array_length(bert_token_ids(?1, '%s')) > 2000", model);
    t_expect(db, sql, text, "1");
    snprintf(sql, sizeof sql, "SELECT json_array_length(bert_vector_to_json(bert_embed(?1, '%s')))", model);
    char want[16];
    snprintf(want, sizeof want, "%d", width);
    t_expect(db, sql, text, want);
    free(text);
}

/* nomic-bert: reduced precisions, its family and tasks, what it shares
 * with the other families, its prompts, and the config.json settings the
 * encoder does not implement, refused by key. */
static void nomic_checks(sqlite3 *db)
{
    t_case("nomic-bert at reduced precision, past 512 tokens, its prompts, family and tasks, refusals");
    static const char *const names[] = {"nomic-embed", "nomic-cls"};
    precisions(db, names, 2);
    t_expect(db, "SELECT family || ' ' || coalesce(task, '-') FROM bert_models WHERE name = 'nomic-mlm'", NULL,
             "nomic_bert fill_mask");
    t_expect(db, "SELECT task FROM bert_models WHERE name = 'nomic-cls'", NULL, "sequence_classification");
    t_expect(db, "SELECT bert_label('a fine day', 'nomic-cls') IN ('negative', 'neutral', 'positive')", NULL, "1");
    rotary_functions(db, "nomic-embed", 96);
    /* The search_query prompt is config_sentence_transformers.json's text, prepended. */
    t_expect(db, "SELECT bert_embed('what is rope', 'nomic-embed-query') = "
                 "bert_embed('search_query: what is rope', 'nomic-embed')", NULL, "1");
    t_expect_error(db, "SELECT bert_load('nomic-x', ?1, '{\"prompt\": \"search\"}')", MODELS_DIR "nomic-embed",
                   "search_query", "search_document", NULL);
    static const char *const base =
        "{\"model_type\": \"nomic_bert\", \"vocab_size\": 30528, \"n_embd\": 64, \"n_layer\": 2, "
        "\"n_head\": 4, \"n_inner\": 256, \"n_positions\": 2048, ";
/* What nomic-embed-text has, before the setting a case changes. */
#define NOMIC_OK "\"activation_function\": \"swiglu\", \"rotary_emb_fraction\": 1.0, "
    static const char *const bad[][3] = {
        {NOMIC_OK "\"prenorm\": true}", "prenorm", NULL},
        {NOMIC_OK "\"parallel_block\": true}", "parallel_block", NULL},
        {NOMIC_OK "\"use_rms_norm\": true}", "use_rms_norm", NULL},
        {NOMIC_OK "\"rotary_emb_scale_base\": 512}", "rotary_emb_scale_base", NULL},
        {"\"activation_function\": \"swiglu\", \"rotary_emb_fraction\": 0.0}", "rotary_emb_fraction", "absolute"},
        {"\"activation_function\": \"swiglu\", \"rotary_emb_fraction\": 0.3}", "rotary_emb_fraction", NULL},
        {"\"rotary_emb_fraction\": 1.0, \"activation_function\": \"gelu\"}", "activation_function", "swiglu"},
    };
#undef NOMIC_OK
    char config[1024];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(config, sizeof config, "%s%s", base, bad[i][0]);
        refused(db, "nomic-mlm", config, bad[i][1], bad[i][2]);
    }
}

/* gte "new": reduced precisions, its family and tasks, what it shares
 * with the other families, and the settings it refuses by key. */
static void gte_checks(sqlite3 *db)
{
    t_case("gte's \"new\" architecture at reduced precision, past 512 tokens, its family and tasks, refusals");
    static const char *const names[] = {"gte-embed", "gte-cls"};
    precisions(db, names, 2);
    t_expect(db, "SELECT family || ' ' || coalesce(task, '-') FROM bert_models WHERE name = 'gte-mlm'", NULL,
             "new fill_mask");
    t_expect(db, "SELECT group_concat(task, ' ') FROM (SELECT task FROM bert_models WHERE name IN ('gte-cls', "
                 "'gte-ner', 'gte-qa') ORDER BY name)", NULL,
             "sequence_classification token_classification question_answering");
    t_expect(db, "SELECT bert_label('a fine day', 'gte-cls') IN ('negative', 'neutral', 'positive')", NULL, "1");
    rotary_functions(db, "gte-embed", 96);
    static const char *const base =
        "{\"model_type\": \"new\", \"vocab_size\": 30528, \"hidden_size\": 64, \"num_hidden_layers\": 2, "
        "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"max_position_embeddings\": 8192, "
        "\"type_vocab_size\": 0, ";
    static const char *const bad[][3] = {
        {"\"position_embedding_type\": \"absolute\"}", "position_embedding_type", "absolute"},
        {"\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}}", "rope_scaling", "ntk"},
        {"\"rope_scaling\": {\"type\": \"ntk\", \"factor\": 2.0, \"mixed_b\": 1.5}}", "rope_scaling", "mixed_b"},
        {"\"layer_norm_type\": \"rms_norm\"}", "layer_norm_type", "rms_norm"},
        {"\"pack_qkv\": false}", "pack_qkv", NULL},
        {"\"logn_attention_scale\": true}", "logn_attention_scale", NULL},
        {"\"hidden_act\": \"swish\"}", "hidden_act", "swish"},
    };
    char config[1024];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(config, sizeof config, "%s%s", base, bad[i][0]);
        refused(db, "gte-mlm", config, bad[i][1], bad[i][2]);
    }
}

/* In a local layer no token attends to one more than local_attention / 2
 * away; in a global layer, tokens that far get weight. */
static void sliding_window(sqlite3 *db)
{
    t_case("ModernBERT's local layers attend within local_attention / 2 positions, its global layers everywhere");
    static const char *const text =
        "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty twenty-one twenty-two twenty-three twenty-four twenty-five";
    /* modernbert-mlm: local_attention 16, global_attn_every_n_layers 3: layers 0 and 3 global. */
    double far_local = t_query_double(db, "SELECT coalesce(max(weight), 0) FROM bert_attention(?1, "
                                          "'{\"model\": \"modernbert-mlm\", \"layers\": [1, 2]}') "
                                          "WHERE abs(from_position - to_position) > 8", text, NULL);
    double near_local = t_query_double(db, "SELECT min(s) FROM (SELECT sum(weight) AS s FROM bert_attention(?1, "
                                           "'{\"model\": \"modernbert-mlm\", \"layers\": [1]}') WHERE "
                                           "abs(from_position - to_position) <= 8 GROUP BY head, from_position)",
                                    text, NULL);
    double far_global = t_query_double(db, "SELECT max(weight) FROM bert_attention(?1, "
                                           "'{\"model\": \"modernbert-mlm\", \"layers\": [0, 3]}') "
                                           "WHERE abs(from_position - to_position) > 8", text, NULL);
    T_CHECK(far_local == 0.0, "a local layer gives weight %.3g to a token beyond the window", far_local);
    T_CHECK(fabs(near_local - 1.0) < 1e-5, "a local layer's weights within the window sum to %.9f", near_local);
    T_CHECK(far_global > 1e-4, "the global layers give at most %.3g beyond the window", far_global);
}

void suite_encoders(void)
{
    json_doc *models = NULL, *lines = t_read_jsonl(GOLDEN_DIR "encoders.jsonl");
    char *manifest = t_read_file(GOLDEN_DIR "encoders_models.json", NULL);
    char *err = NULL;
    sqlite3 *db = t_open();
    t_case("ELECTRA: every function within 1e-4 of the PyTorch reference");
    if (!T_CHECK(lines && manifest && db, "cannot read the goldens or open a database") ||
        !T_CHECK(bert_json_parse(manifest, strlen(manifest), &models, &err) == 0, "encoders_models.json: %s",
                 err ? err : "?"))
        goto done;
    int electra = golden_family(db, models, lines, "electra", "electra-mlm",
                                "build/models/electra-* missing: make_test_models.sh needs /usr/bin/python3 with numpy");
    t_case("ModernBERT: every function within 1e-4 of the PyTorch reference, past its local window and 512 tokens");
    int modern = golden_family(db, models, lines, "modernbert", "modernbert-mlm",
                               "../shared/models/answerdotai__ModernBERT-large is absent: no ModernBERT test models");
    t_case("DeBERTa-v2/v3: disentangled attention over log-bucketed relative positions, within 1e-4 of the "
           "PyTorch reference");
    int deberta = golden_family(db, models, lines, "deberta", "deberta-cls",
                                "build/models/deberta-* missing: make_test_models.sh needs /usr/bin/python3 with numpy");
    if (deberta) {
        t_case("DeBERTa at reduced precision; bert_attention refuses it");
        static const char *const names[] = {"deberta-cls", "deberta-qa"};
        precisions(db, names, 2);
        t_expect_error(db, "SELECT count(*) FROM bert_attention('a b', '{\"model\": \"deberta-cls\"}')", NULL,
                       "DeBERTa", NULL);
        t_expect(db, "SELECT family || ' ' || task FROM bert_models WHERE name = 'deberta-cls'", NULL,
                 "deberta-v2 sequence_classification");
    }
    if (electra) {
        t_case("ELECTRA at reduced precision");
        static const char *const names[] = {"electra-base", "electra-disc"};
        precisions(db, names, 2);
        t_case("bert_models shows ELECTRA's family and each model's task");
        t_expect(db, "SELECT family || ' ' || coalesce(task, '-') FROM bert_models WHERE name = 'electra-mlm'", NULL,
                 "electra fill_mask");
        t_expect(db, "SELECT coalesce(task, '-') FROM bert_models WHERE name = 'electra-disc'", NULL, "-");
        t_expect(db, "SELECT task FROM bert_models WHERE name = 'electra-qa'", NULL, "question_answering");
        /* Before its weights are read, the task config.json's architectures
         * announce: none for ElectraForPreTraining, the discriminator. */
        t_expect(db, "SELECT bert_load('disc-unread', ?1)", MODELS_DIR "electra-disc", "disc-unread");
        t_expect(db, "SELECT coalesce(task, '-') FROM bert_models WHERE name = 'disc-unread'", NULL, "-");
        t_case("a function whose head an ELECTRA or ModernBERT model lacks names the classes that have it");
        t_expect_error(db, "SELECT bert_fill_mask('a [MASK] b', 5, 'electra-disc')", NULL, "ElectraForMaskedLM",
                       "ModernBertForMaskedLM", NULL);
        t_expect_error(db, "SELECT bert_classify('a b', 'electra-ner')", NULL, "ElectraForSequenceClassification",
                       "token_classification", NULL);
        t_expect_error(db, "SELECT bert_ner('a b', 'electra-qa')", NULL, "ElectraForTokenClassification", NULL);
        t_expect_error(db, "SELECT bert_answer('a', 'b', 'electra-cls-f16')", NULL, "ModernBertForQuestionAnswering",
                       NULL);
    }
    t_case("JinaBERT (jina-embeddings-v2): ALiBi and a gated MLP, within 1e-4 of the PyTorch reference at 6 to "
           "1100 tokens");
    if (golden_family(db, models, lines, "jina", "jina-mlm",
                      "../shared/models/jinaai__jina-embeddings-v2-base-en is absent: no JinaBERT test models"))
        jina_checks(db);
    t_case("nomic-bert (nomic-embed-text, nomic-bert-2048): rotary, SwiGLU, within 1e-4 of the PyTorch reference "
           "at 6 to 1100 tokens");
    if (golden_family(db, models, lines, "nomic", "nomic-mlm",
                      "build/models/nomic-* missing: make_test_models.sh needs /usr/bin/python3 with numpy"))
        nomic_checks(db);
    t_case("gte's \"new\" architecture (gte-*-en-v1.5, gte-multilingual-base): NTK-scaled rotary, gated MLP, within "
           "1e-4 of the PyTorch reference at 6 to 1100 tokens");
    if (golden_family(db, models, lines, "gte", "gte-mlm",
                      "build/models/gte-* missing: make_test_models.sh needs /usr/bin/python3 with numpy"))
        gte_checks(db);
    if (modern) {
        t_case("ModernBERT at reduced precision");
        static const char *const names[] = {"modernbert-mlm", "modernbert-cls"};
        precisions(db, names, 2);
        sliding_window(db);
    }
    refusals(db, modern);
done:
    free(err);
    free(manifest);
    bert_json_free(models);
    bert_json_free(lines);
    sqlite3_close(db);
}
