/*
 * model_config.c - config.json: the encoder's sizes and family
 * (model_type), and what it says about a classification head.
 */
#include "model_dir.h"
#include "../base/error.h"
#include "../base/file.h"
#include "../base/json.h"
#include "../base/buffer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Upper bounds on config.json's sizes.  They are far above any published
 * BERT, and low enough that the scratch memory they imply stays bounded. */
#define MAX_VOCAB       (1 << 22)
#define MAX_HIDDEN      16384
#define MAX_LAYERS      256
#define MAX_INTERMEDIATE (1 << 18)
#define MAX_TYPE_VOCAB  65536

static const struct {
    const char *model_type;
    bert_family family;
} families[] = {
    {"bert", BERT_FAMILY_BERT},
    {"distilbert", BERT_FAMILY_DISTILBERT},
    {"roberta", BERT_FAMILY_ROBERTA},
    {"xlm-roberta", BERT_FAMILY_XLM_ROBERTA},
    {"mpnet", BERT_FAMILY_MPNET},
};

static int family_of(const char *model_type, bert_family *out)
{
    for (size_t i = 0; i < sizeof families / sizeof *families; i++)
        if (strcmp(model_type, families[i].model_type) == 0) {
            *out = families[i].family;
            return 0;
        }
    return -1;
}

const char *bert_family_name(bert_family f)
{
    for (size_t i = 0; i < sizeof families / sizeof *families; i++)
        if (families[i].family == f) return families[i].model_type;
    return "bert";
}

/* Where positions start and MPNet's buckets.  RoBERTa, XLM-RoBERTa and MPNet
 * count positions from padding_idx + 1 (create_position_ids_from_input_ids):
 * RoBERTa's padding_idx is config.json's pad_token_id, MPNet's is 1 whatever
 * the config says (MPNetEmbeddings). */
static int read_positions(const json_doc *doc, const char *path, bert_config *cfg, char **err)
{
    cfg->pad_id = -1;
    cfg->position_offset = 0;
    if (cfg->family == BERT_FAMILY_BERT || cfg->family == BERT_FAMILY_DISTILBERT) return 0;
    long long pad = 1;
    if (cfg->family != BERT_FAMILY_MPNET) {
        int node = bert_json_member(doc, 0, "pad_token_id");
        pad = node < 0 ? 1 : bert_json_int(doc, node, -1);
    }
    if (pad < 0 || pad >= cfg->vocab_size || pad + 2 > cfg->max_position_embeddings) {
        *err = bert_errorf("%s: pad_token_id must be an integer from 0 to %d, below vocab_size and with room "
                           "for a token after it in max_position_embeddings %d (RoBERTa uses 1)", path,
                           cfg->vocab_size - 1, cfg->max_position_embeddings);
        return -1;
    }
    cfg->pad_id = (int)pad;
    cfg->position_offset = (int)pad + 1;
    if (cfg->family == BERT_FAMILY_MPNET) {
        /* MPNetEncoder.compute_position_bias buckets relative positions
         * into 32, whatever the table's size; a smaller table cannot be
         * indexed. */
        int node = bert_json_member(doc, 0, "relative_attention_num_buckets");
        long long n = node < 0 ? 32 : bert_json_int(doc, node, -1);
        if (n < BERT_MPNET_BUCKETS || n > MAX_HIDDEN) {
            *err = bert_errorf("%s: relative_attention_num_buckets must be an integer from %d to %d (MPNet uses 32)",
                               path, BERT_MPNET_BUCKETS, MAX_HIDDEN);
            return -1;
        }
        cfg->relative_buckets = (int)n;
    }
    return 0;
}

/* A probability of config.json (or `fallback` when absent or null) into *out. */
static int read_probability(const json_doc *doc, const char *key, double fallback, const char *path, float *out,
                            char **err)
{
    int node = bert_json_member(doc, 0, key);
    double v = node < 0 || doc->nodes[node].type == JSON_NULL ? fallback : bert_json_real(doc, node, -1);
    if (!(v >= 0 && v < 1)) {
        *err = bert_errorf("%s: %s must be a number from 0 to below 1", path, key);
        return -1;
    }
    *out = (float)v;
    return 0;
}

/* What fine-tuning reads: pad_token_id (the word embeddings' padding_idx),
 * initializer_range and the dropouts, with the defaults of BertConfig,
 * DistilBertConfig and RobertaConfig. */
static int read_training(const json_doc *doc, const char *path, bert_config *cfg, char **err)
{
    const int distil = cfg->family == BERT_FAMILY_DISTILBERT;
    int node = bert_json_member(doc, 0, "pad_token_id");
    long long pad = cfg->pad_id >= 0 ? cfg->pad_id
                  : node < 0 || doc->nodes[node].type == JSON_NULL ? 0 : bert_json_int(doc, node, -1);
    if (pad < 0 || pad >= cfg->vocab_size) {
        *err = bert_errorf("%s: pad_token_id must be an integer from 0 to %d (below vocab_size)", path,
                           cfg->vocab_size - 1);
        return -1;
    }
    cfg->pad_token_id = (int)pad;
    node = bert_json_member(doc, 0, "initializer_range");
    double range = node < 0 ? 0.02 : bert_json_real(doc, node, -1);
    if (!(range > 0 && range < 10)) {
        *err = bert_errorf("%s: initializer_range must be a number above 0 and below 10 (BERT uses 0.02)", path);
        return -1;
    }
    cfg->initializer_range = (float)range;
    if (distil)
        return read_probability(doc, "dropout", 0.1, path, &cfg->hidden_dropout, err) ||
               read_probability(doc, "attention_dropout", 0.1, path, &cfg->attention_dropout, err) ||
               read_probability(doc, "seq_classif_dropout", 0.2, path, &cfg->classifier_dropout, err) ||
               read_probability(doc, "dropout", 0.1, path, &cfg->token_dropout, err) ||
               read_probability(doc, "qa_dropout", 0.1, path, &cfg->qa_dropout, err) ? -1 : 0;
    cfg->qa_dropout = 0;
    if (read_probability(doc, "hidden_dropout_prob", 0.1, path, &cfg->hidden_dropout, err) ||
        read_probability(doc, "attention_probs_dropout_prob", 0.1, path, &cfg->attention_dropout, err) ||
        read_probability(doc, "classifier_dropout", cfg->hidden_dropout, path, &cfg->classifier_dropout, err))
        return -1;
    cfg->token_dropout = cfg->classifier_dropout;
    return 0;
}

typedef struct {
    const char *key;
    long long bert_default;   /* BertConfig's default, used when model_type says "bert" */
    long long max;
    int *dst;
} size_field;

int bert_config_load(bert_model_files *files, bert_config *cfg, char **err)
{
    *err = NULL;
    memset(cfg, 0, sizeof *cfg);
    char *path = bert_model_files_path(files, "config.json");
    if (!path) { *err = bert_errorf("out of memory"); return -1; }
    const json_doc *doc = NULL;
    int rc = -1;
    int found = bert_model_files_json(files, "config.json", 0, &doc, err);
    if (found != 1) {
        if (found == 0)
            *err = bert_errorf("%s does not exist; a model directory needs the config.json of its "
                               "Hugging Face checkpoint", path);
        free(path);
        return -1;
    }

    int type_node = bert_json_member(doc, 0, "model_type");
    const char *type = bert_json_str(doc, type_node, NULL);
    if (type_node >= 0 && (!type || family_of(type, &cfg->family) != 0)) {
        *err = bert_errorf("%s: model_type is \"%s\", which is not supported; the supported model types are "
                           "\"bert\", \"distilbert\", \"roberta\", \"xlm-roberta\" and \"mpnet\"", path,
                           type ? type : "(not a string)");
        goto done;
    }
    const int distil = cfg->family == BERT_FAMILY_DISTILBERT;
    /* Without model_type, the sizes themselves are what make it a BERT. */
    int need_sizes = type_node < 0;

    size_field bert_sizes[] = {
        {"vocab_size", 30522, MAX_VOCAB, &cfg->vocab_size},
        {"hidden_size", 768, MAX_HIDDEN, &cfg->hidden_size},
        {"num_hidden_layers", 12, MAX_LAYERS, &cfg->num_layers},
        {"num_attention_heads", 12, MAX_HIDDEN, &cfg->num_heads},
        {"intermediate_size", 3072, MAX_INTERMEDIATE, &cfg->intermediate_size},
        {"max_position_embeddings", 512, BERT_MAX_POSITIONS, &cfg->max_position_embeddings},
        {"type_vocab_size", 2, MAX_TYPE_VOCAB, &cfg->type_vocab_size},
    };
    /* DistilBertConfig's names and defaults; it has no segment embeddings. */
    size_field distil_sizes[] = {
        {"vocab_size", 30522, MAX_VOCAB, &cfg->vocab_size},
        {"dim", 768, MAX_HIDDEN, &cfg->hidden_size},
        {"n_layers", 6, MAX_LAYERS, &cfg->num_layers},
        {"n_heads", 12, MAX_HIDDEN, &cfg->num_heads},
        {"hidden_dim", 3072, MAX_INTERMEDIATE, &cfg->intermediate_size},
        {"max_position_embeddings", 512, BERT_MAX_POSITIONS, &cfg->max_position_embeddings},
    };
    size_field *sizes = distil ? distil_sizes : bert_sizes;
    size_t n_sizes = distil ? sizeof distil_sizes / sizeof *distil_sizes : sizeof bert_sizes / sizeof *bert_sizes;
    /* MPNet has no segment embeddings, so no type_vocab_size (bert_sizes' last). */
    if (cfg->family == BERT_FAMILY_MPNET) n_sizes--;
    for (size_t i = 0; i < n_sizes; i++) {
        int node = bert_json_member(doc, 0, sizes[i].key);
        int optional = !need_sizes || strcmp(sizes[i].key, "type_vocab_size") == 0;
        if (node < 0 && !optional) {
            *err = bert_errorf("%s has neither model_type nor %s; add \"model_type\": \"bert\" or the "
                               "missing size", path, sizes[i].key);
            goto done;
        }
        long long v = node < 0 ? sizes[i].bert_default : bert_json_int(doc, node, -1);
        if (v < 1 || v > sizes[i].max) {
            *err = bert_errorf("%s: %s must be an integer from 1 to %lld", path, sizes[i].key, sizes[i].max);
            goto done;
        }
        *sizes[i].dst = (int)v;
    }
    if (cfg->hidden_size % cfg->num_heads != 0) {
        *err = bert_errorf("%s: hidden_size %d is not a multiple of num_attention_heads %d", path,
                           cfg->hidden_size, cfg->num_heads);
        goto done;
    }

    /* DistilBERT's LayerNorms use eps 1e-12, fixed in its code; its
     * activation is under "activation". */
    int eps_node = distil ? -1 : bert_json_member(doc, 0, "layer_norm_eps");
    double eps = eps_node < 0 ? 1e-12 : bert_json_real(doc, eps_node, -1);
    /* The encoder adds eps in float32, where a value below about 1e-45
     * becomes 0 and a constant row would divide by zero. */
    if (!(eps > 0 && eps < 1 && (float)eps > 0)) {
        *err = bert_errorf("%s: layer_norm_eps must be a number between 1e-45 and 1 (BERT uses 1e-12)", path);
        goto done;
    }
    cfg->layer_norm_eps = (float)eps;

    int act_node = bert_json_member(doc, 0, distil ? "activation" : "hidden_act");
    const char *act = act_node < 0 ? "gelu" : bert_json_str(doc, act_node, "");
    if (strcmp(act, "gelu") == 0)
        cfg->hidden_act = BERT_ACT_GELU;
    else if (strcmp(act, "gelu_new") == 0 || strcmp(act, "gelu_pytorch_tanh") == 0 ||
             strcmp(act, "gelu_fast") == 0)
        cfg->hidden_act = BERT_ACT_GELU_TANH;
    else if (strcmp(act, "relu") == 0)
        cfg->hidden_act = BERT_ACT_RELU;
    else {
        *err = bert_errorf("%s: hidden_act \"%s\" is not supported; use \"gelu\", \"gelu_new\", "
                           "\"gelu_pytorch_tanh\", \"gelu_fast\" or \"relu\"", path, act);
        goto done;
    }
    if (read_positions(doc, path, cfg, err) != 0) goto done;
    if (read_training(doc, path, cfg, err) != 0) goto done;
    rc = 0;
done:
    free(path);
    return rc;
}

/* ------------------------------------------------ sequence-classification head */

void bert_head_config_free(bert_head_config *hc)
{
    if (!hc) return;
    if (hc->labels)
        for (int i = 0; i < hc->num_labels; i++) free(hc->labels[i]);
    free(hc->labels);
    hc->labels = NULL;
}

int bert_head_config_default_labels(bert_head_config *hc, int n)
{
    if (hc->labels) return 0;
    hc->labels = calloc((size_t)n, sizeof *hc->labels);
    if (!hc->labels) return -1;
    hc->num_labels = n;
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "LABEL_%d", i);
        if (!(hc->labels[i] = bert_strdup(name))) return -1;   /* freed with the rest */
    }
    return 0;
}

/* id2label: {"0": "negative", "1": "positive"}, every id from 0 to n-1 once. */
static int read_id2label(const json_doc *doc, int node, const char *path, bert_head_config *hc, char **err)
{
    int n = bert_json_length(doc, node);
    if (doc->nodes[node].type != JSON_OBJECT || n < 1 || n > BERT_MAX_LABELS) {
        *err = bert_errorf("%s: id2label must be an object such as {\"0\": \"negative\", \"1\": "
                           "\"positive\"} with 1 to %d labels", path, BERT_MAX_LABELS);
        return -1;
    }
    hc->labels = calloc((size_t)n, sizeof *hc->labels);
    if (!hc->labels) { *err = bert_errorf("out of memory reading %s", path); return -1; }
    hc->num_labels = n;
    for (int c = doc->nodes[node].first_child; c >= 0; c = doc->nodes[c].next_sibling) {
        const char *key = doc->nodes[c].key, *label = bert_json_str(doc, c, NULL);
        char *end = NULL;
        long id = key ? strtol(key, &end, 10) : -1;
        if (!key || !*key || *end || id < 0 || id >= n || hc->labels[id] || !label) {
            *err = bert_errorf("%s: id2label must number its labels 0 to %d, each once, with a string "
                               "name; \"%s\" is not such an entry", path, n - 1, key ? key : "?");
            return -1;
        }
        if (!(hc->labels[id] = bert_strdup(label))) { *err = bert_errorf("out of memory reading %s", path); return -1; }
    }
    return 0;
}

static bert_ce_activation ce_activation(const char *name)
{
    static const struct { const char *name; bert_ce_activation a; } known[] = {
        {"torch.nn.modules.activation.Sigmoid", BERT_CE_SIGMOID},
        {"torch.nn.Sigmoid", BERT_CE_SIGMOID},
        {"torch.nn.modules.linear.Identity", BERT_CE_IDENTITY},
        {"torch.nn.Identity", BERT_CE_IDENTITY},
    };
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (strcmp(name, known[i].name) == 0) return known[i].a;
    /* CrossEncoder imports only "torch." paths (others need
     * trust_remote_code) and falls back to its default. */
    return strncmp(name, "torch.", 6) == 0 ? BERT_CE_UNSUPPORTED : BERT_CE_DEFAULT;
}

int bert_head_config_load(bert_model_files *files, bert_head_config *hc, char **err)
{
    *err = NULL;
    memset(hc, 0, sizeof *hc);
    const json_doc *doc = NULL;
    char *path = bert_model_files_path(files, "config.json");
    if (!path) { *err = bert_errorf("out of memory"); return -1; }
    int found = bert_model_files_json(files, "config.json", 0, &doc, err), rc = -1;
    if (found <= 0) {
        if (found == 0) *err = bert_errorf("%s does not exist", path);
        free(path);
        return -1;
    }
    int id2label = bert_json_member(doc, 0, "id2label");
    if (id2label >= 0 && doc->nodes[id2label].type != JSON_NULL) {
        if (read_id2label(doc, id2label, path, hc, err) != 0) goto done;
    } else {
        int node = bert_json_member(doc, 0, "num_labels");
        long long n = node < 0 ? 0 : bert_json_int(doc, node, -1);
        if (n < 0 || n > BERT_MAX_LABELS || (node >= 0 && n == 0)) {
            *err = bert_errorf("%s: num_labels must be an integer from 1 to %d", path, BERT_MAX_LABELS);
            goto done;
        }
        if (n > 0 && bert_head_config_default_labels(hc, (int)n) != 0) {
            *err = bert_errorf("out of memory reading %s", path);
            goto done;
        }
    }
    int pt = bert_json_member(doc, 0, "problem_type");
    const char *problem = pt < 0 ? NULL : bert_json_str(doc, pt, NULL);
    if (pt >= 0 && doc->nodes[pt].type != JSON_NULL) {
        if (problem && strcmp(problem, "single_label_classification") == 0) hc->problem = BERT_PROBLEM_SINGLE_LABEL;
        else if (problem && strcmp(problem, "multi_label_classification") == 0) hc->problem = BERT_PROBLEM_MULTI_LABEL;
        else if (problem && strcmp(problem, "regression") == 0) hc->problem = BERT_PROBLEM_REGRESSION;
        else {
            *err = bert_errorf("%s: problem_type \"%s\" is not one of \"single_label_classification\", "
                               "\"multi_label_classification\" or \"regression\"", path,
                               problem ? problem : "(not a string)");
            goto done;
        }
    }
    /* sentence-transformers 4 and later, then the name older versions used. */
    int act = bert_json_path(doc, 0, "sentence_transformers.activation_fn");
    if (act < 0) act = bert_json_member(doc, 0, "sbert_ce_default_activation_function");
    const char *act_name = act < 0 ? NULL : bert_json_str(doc, act, NULL);
    if (act_name) {
        hc->activation = ce_activation(act_name);
        snprintf(hc->activation_name, sizeof hc->activation_name, "%s", act_name);
    }
    int arch = bert_json_member(doc, 0, "architectures");
    if (arch >= 0 && doc->nodes[arch].type == JSON_ARRAY) {
        const char *first = bert_json_str(doc, doc->nodes[arch].first_child, "");
        if (bert_ends_with(first, "ForSequenceClassification")) hc->architecture_task = "sequence_classification";
        else if (bert_ends_with(first, "ForMaskedLM") || bert_ends_with(first, "ForPreTraining")) hc->architecture_task = "fill_mask";
        else if (bert_ends_with(first, "ForNextSentencePrediction")) hc->architecture_task = "next_sentence";
        else if (bert_ends_with(first, "ForTokenClassification")) hc->architecture_task = "token_classification";
        else if (bert_ends_with(first, "ForQuestionAnswering")) hc->architecture_task = "question_answering";
    }
    rc = 0;
done:
    if (rc != 0) bert_head_config_free(hc);
    free(path);
    return rc;
}

