/*
 * fuzz_json_config.c - the JSON files of a model directory, and the options
 * of bert_load, as arbitrary bytes.
 *
 * Input: one byte choosing what the rest becomes ('0' + n), then the text:
 *   0 config.json                 bert_config_load, bert_head_config_load
 *   1 modules.json                bert_st_config_load
 *   2 1_Pooling/config.json       bert_st_config_load
 *   3 sentence_bert_config.json   bert_st_config_load
 *   4 tokenizer_config.json       bert_tokenizer_load, then encode and decode
 *   5 tokenizer.json              the same
 *   6 special_tokens_map.json     the same
 *   7 bert_load options           bert_options_parse, then bert_registry_add
 *   8 any JSON                    bert_json_parse, then every accessor on every node
 * The file is written into a copy of the tiny model's directory and removed
 * again, so each input starts from the same directory.  A failure must come
 * with a message; a success must give values inside the documented bounds.
 */
#include "../../ext/base/json.h"
#include "../../ext/models/model_dir.h"
#include "../../ext/models/entry.h"
#include "../../ext/tokenizer/tokenizer.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char model_dir[256];

static const char *const files[] = {
    "config.json", "modules.json", "1_Pooling/config.json", "sentence_bert_config.json",
    "tokenizer_config.json", "tokenizer.json", "special_tokens_map.json",
};

static void reset_dir(void)
{
    char path[512];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/%s", model_dir, files[i]);
        remove(path);
    }
    fuzz_copy(FUZZ_TINY_MODEL "/config.json", model_dir, "config.json");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_scratch(model_dir, sizeof model_dir, "json_config", "model");
    char pooling[300];
    snprintf(pooling, sizeof pooling, "%s/1_Pooling", model_dir);
    mkdir(pooling, 0755);
    fuzz_copy(FUZZ_TINY_MODEL "/vocab.txt", model_dir, "vocab.txt");
    reset_dir();
    return 0;
}

static void expect_message(int rc, char *err, const char *what)
{
    if (rc != 0 && !err) fuzz_die("%s failed without a message", what);
    free(err);
}

/* A fresh reading of the fuzzed model directory. */
static bert_model_files *read_dir(void)
{
    bert_model_files *f = bert_model_files_new(model_dir);
    if (!f) fuzz_die("out of memory");
    return f;
}

static void config(void)
{
    bert_config c;
    char *err = NULL;
    bert_model_files *f = read_dir();
    int rc = bert_config_load(f, &c, &err);
    bert_model_files_free(f);
    expect_message(rc, err, "bert_config_load");
    if (rc != 0) return;
    if (c.vocab_size < 1 || c.hidden_size < 1 || c.num_layers < 1 || c.num_heads < 1 ||
        c.hidden_size % c.num_heads != 0 || c.intermediate_size < 1 || c.max_position_embeddings < 1 ||
        /* DistilBERT and MPNet have no segment embeddings */
        (c.family == BERT_FAMILY_DISTILBERT || c.family == BERT_FAMILY_MPNET ? c.type_vocab_size != 0
                                                                              : c.type_vocab_size < 1) ||
        c.position_offset < 0 || c.position_offset >= c.max_position_embeddings ||
        !(c.layer_norm_eps > 0 && c.layer_norm_eps < 1))
        fuzz_die("bert_config_load accepted sizes %d %d %d %d %d %d %d eps %g", c.vocab_size, c.hidden_size,
                 c.num_layers, c.num_heads, c.intermediate_size, c.max_position_embeddings,
                 c.type_vocab_size, (double)c.layer_norm_eps);
}

/* The classifier settings of the same config.json: labels numbered 0..n-1, all named. */
static void head_config(void)
{
    bert_head_config hc;
    char *err = NULL;
    bert_model_files *f = read_dir();
    int rc = bert_head_config_load(f, &hc, &err);
    bert_model_files_free(f);
    expect_message(rc, err, "bert_head_config_load");
    if (rc != 0) return;
    if (hc.num_labels < 0 || (hc.num_labels > 0 && !hc.labels))
        fuzz_die("bert_head_config_load accepted %d labels without names", hc.num_labels);
    for (int i = 0; i < hc.num_labels; i++)
        if (!hc.labels[i]) fuzz_die("bert_head_config_load left label %d unnamed", i);
    bert_head_config_free(&hc);
}

static void st_config(void)
{
    bert_st_config st;
    char *err = NULL;
    bert_model_files *f = read_dir();
    int rc = bert_st_config_load(f, &st, &err);
    bert_model_files_free(f);
    expect_message(rc, err, "bert_st_config_load");
    if (rc == 0 && (st.max_seq_length < 0 || (int)st.pooling < 0 || st.pooling > BERT_POOL_POOLER))
        fuzz_die("bert_st_config_load accepted max_seq_length %d pooling %d", st.max_seq_length, (int)st.pooling);
}

static void tokenizer(void)
{
    bert_tokenizer *tok = NULL;
    char *err = NULL;
    bert_model_files *f = read_dir();
    int rc = bert_tokenizer_load(f, &tok, &err);
    bert_model_files_free(f);
    expect_message(rc, err, "bert_tokenizer_load");
    if (rc != 0) return;
    static const char text[] = "[CLS] Hello, World! the cat sat on the mat [MASK] caf\xc3\xa9 na\xc3\xafve "
                               "\xe4\xb8\xad\xe6\x96\x87 unaffable 123 <x> [SEP]";
    bert_ids ids = {0};
    if (bert_tokenizer_encode(tok, text, sizeof text - 1, SIZE_MAX, &ids, NULL) != 0) fuzz_die("encode failed");
    size_t vocab = bert_tokenizer_vocab_size(tok);
    for (size_t i = 0; i < ids.len; i++)
        if (ids.ids[i] < 0 || (size_t)ids.ids[i] >= vocab)
            fuzz_die("id %d outside the vocabulary of %zu", (int)ids.ids[i], vocab);
    const bert_special_ids *sp = bert_tokenizer_specials(tok);
    const int32_t specials[] = {sp->cls, sp->sep, sp->mask, sp->pad, sp->unk};
    for (size_t i = 0; i < sizeof specials / sizeof *specials; i++)
        if (specials[i] < -1 || specials[i] >= (int32_t)vocab) fuzz_die("special id %d out of range", (int)specials[i]);
    for (int skip = 0; skip < 2; skip++) {
        char *s = bert_tokenizer_decode(tok, ids.ids, ids.len, skip);
        if (!s) fuzz_die("decode returned NULL");
        free(s);
    }
    bert_ids_free(&ids);
    bert_tokenizer_free(tok);
}

static void options(const char *text)
{
    bert_options o;
    char *err = NULL;
    int rc = bert_options_parse(text, &o, &err);
    expect_message(rc, err, "bert_options_parse");
    if (rc != 0) return;
    bert_registry r = {0};
    rc = bert_registry_add(&r, "fuzz", model_dir, &o, &err);
    expect_message(rc, err, "bert_registry_add");
    if (rc == 0 && (r.head->max_length < 1 || r.head->max_length > r.head->cfg.max_position_embeddings))
        fuzz_die("max_length %d with %d positions", r.head->max_length, r.head->cfg.max_position_embeddings);
    bert_registry_clear(&r);
}

static void any_json(const char *text, size_t len)
{
    json_doc *doc = NULL;
    char *err = NULL;
    int rc = bert_json_parse(text, len, &doc, &err);
    expect_message(rc, err, "bert_json_parse");
    if (rc != 0) return;
    volatile double sum = 0;
    for (int i = 0; i < doc->count; i++) {
        const json_node *n = &doc->nodes[i];
        if (n->parent >= i || (i > 0 && n->parent < 0)) fuzz_die("node %d has parent %d", i, n->parent);
        const char *key = n->key ? n->key : "x";
        sum += (double)bert_json_int(doc, i, 0) + bert_json_real(doc, i, 0) + bert_json_bool(doc, i, 0) + bert_json_length(doc, i);
        sum += (double)strlen(bert_json_str(doc, i, ""));
        if (n->parent >= 0 && doc->nodes[n->parent].type == JSON_OBJECT && bert_json_member(doc, n->parent, key) < 0)
            fuzz_die("member '%s' of node %d is not found", key, n->parent);
        sum += bert_json_path(doc, 0, key);
    }
    (void)sum;
    bert_json_free(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    unsigned which = (uint8_t)(data[0] - '0') % 9;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    if (which < 7) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", model_dir, files[which]);
        fuzz_write(path, text, len);
        if (which == 0) { config(); head_config(); }
        else if (which <= 3) st_config();
        else tokenizer();
        reset_dir();
    } else if (which == 7) {
        char *z = malloc(len + 1);
        if (!z) fuzz_die("out of memory");
        memcpy(z, text, len);
        z[len] = '\0';
        options(z);
        free(z);
    } else {
        any_json(text, len);
    }
    return 0;
}
