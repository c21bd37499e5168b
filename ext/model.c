/*
 * model.c - reads a Hugging Face BERT directory: config.json, the
 * sentence-transformers files and model.safetensors.
 *
 * Loading binds every weight pointer of a bert_model to a tensor of the
 * mapped file (or files: a sharded checkpoint's shards are one st_file).  The names are BertModel's, with or without the "bert." prefix
 * that BertForMaskedLM and BertForPreTraining add, and LayerNorm parameters
 * may carry the old TensorFlow-era names gamma/beta.  Each tensor's shape is
 * checked against config.json before it is bound, so the encoder can index
 * the weights without checks of its own.
 *
 * float32 tensors stay in the read-only mapping: the page cache is the only
 * copy, shared with every other process that maps the same file.  float16 and
 * bfloat16 tensors (and the rare misaligned float32 one) are converted into
 * one allocation; when nothing is left in the mapping it is dropped at once.
 * At a reduced precision the layers' projections go into a second block as
 * bfloat16 or int8 (a bfloat16 tensor stays in the mapping), and the pages
 * of what was converted are given back.
 */
#include "model.h"
#include "buffer.h"
#include "checkpoint.h"
#include "error.h"
#include "json.h"
#include "file.h"
#include "safetensors.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tensor data is little-endian and used in place. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "model.c reads little-endian safetensors data in place; big-endian hosts are not supported"
#endif

/* Upper bounds on config.json's sizes.  They are far above any published
 * BERT, and low enough that the scratch memory they imply stays bounded. */
#define MAX_VOCAB       (1 << 22)
#define MAX_HIDDEN      16384
#define MAX_LAYERS      256
#define MAX_INTERMEDIATE (1 << 18)
#define MAX_POSITIONS   65536
#define MAX_TYPE_VOCAB  65536

typedef struct {
    st_file *st;          /* NULL when every tensor was converted */
    float *converted;     /* one block for every tensor converted to float32 */
    void *reduced;        /* one block for every bfloat16 / int8 projection made at load */
} model_priv;

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* ---------------------------------------------------------------- config.json */

typedef struct {
    const char *key;
    long long bert_default;   /* BertConfig's default, used when model_type says "bert" */
    long long max;
    int *dst;
} size_field;

int bert_config_load(const char *model_dir, bert_config *cfg, char **err)
{
    *err = NULL;
    memset(cfg, 0, sizeof *cfg);
    char *path = bert_path_join(model_dir, "config.json");
    if (!path) { *err = bert_errorf("out of memory"); return -1; }
    json_doc *doc = NULL;
    int missing = 0, rc = -1;
    char *jerr = NULL;
    if (bert_json_parse_file(path, &doc, &missing, &jerr) != 0) {
        if (missing)
            *err = bert_errorf("%s does not exist; a model directory needs the config.json of its "
                               "Hugging Face checkpoint", path);
        else
            *err = bert_errorf("%s; fix or download the file again", jerr ? jerr : "out of memory");
        free(jerr);
        free(path);
        return -1;
    }
    if (doc->nodes[0].type != JSON_OBJECT) {
        *err = bert_errorf("%s is not a JSON object", path);
        goto done;
    }

    int type_node = bert_json_member(doc, 0, "model_type");
    const char *type = bert_json_str(doc, type_node, NULL);
    if (type_node >= 0 && (!type || (strcmp(type, "bert") != 0 && strcmp(type, "distilbert") != 0))) {
        *err = bert_errorf("%s: model_type is \"%s\" but only BERT and DistilBERT models (model_type "
                           "\"bert\" or \"distilbert\") are supported", path, type ? type : "(not a string)");
        goto done;
    }
    cfg->distilbert = type && strcmp(type, "distilbert") == 0;
    /* Without model_type, the sizes themselves are what make it a BERT. */
    int need_sizes = type_node < 0;

    size_field bert_sizes[] = {
        {"vocab_size", 30522, MAX_VOCAB, &cfg->vocab_size},
        {"hidden_size", 768, MAX_HIDDEN, &cfg->hidden_size},
        {"num_hidden_layers", 12, MAX_LAYERS, &cfg->num_layers},
        {"num_attention_heads", 12, MAX_HIDDEN, &cfg->num_heads},
        {"intermediate_size", 3072, MAX_INTERMEDIATE, &cfg->intermediate_size},
        {"max_position_embeddings", 512, MAX_POSITIONS, &cfg->max_position_embeddings},
        {"type_vocab_size", 2, MAX_TYPE_VOCAB, &cfg->type_vocab_size},
    };
    /* DistilBertConfig's names and defaults; it has no segment embeddings. */
    size_field distil_sizes[] = {
        {"vocab_size", 30522, MAX_VOCAB, &cfg->vocab_size},
        {"dim", 768, MAX_HIDDEN, &cfg->hidden_size},
        {"n_layers", 6, MAX_LAYERS, &cfg->num_layers},
        {"n_heads", 12, MAX_HIDDEN, &cfg->num_heads},
        {"hidden_dim", 3072, MAX_INTERMEDIATE, &cfg->intermediate_size},
        {"max_position_embeddings", 512, MAX_POSITIONS, &cfg->max_position_embeddings},
    };
    size_field *sizes = cfg->distilbert ? distil_sizes : bert_sizes;
    size_t n_sizes = cfg->distilbert ? sizeof distil_sizes / sizeof *distil_sizes
                                     : sizeof bert_sizes / sizeof *bert_sizes;
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
    int eps_node = cfg->distilbert ? -1 : bert_json_member(doc, 0, "layer_norm_eps");
    double eps = eps_node < 0 ? 1e-12 : bert_json_real(doc, eps_node, -1);
    /* The encoder adds eps in float32, where a value below about 1e-45
     * becomes 0 and a constant row would divide by zero. */
    if (!(eps > 0 && eps < 1 && (float)eps > 0)) {
        *err = bert_errorf("%s: layer_norm_eps must be a number between 1e-45 and 1 (BERT uses 1e-12)", path);
        goto done;
    }
    cfg->layer_norm_eps = (float)eps;

    int act_node = bert_json_member(doc, 0, cfg->distilbert ? "activation" : "hidden_act");
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
    rc = 0;
done:
    bert_json_free(doc);
    free(path);
    return rc;
}

/* ------------------------------------------------ sequence-classification head */

#define MAX_LABELS 100000

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
    if (doc->nodes[node].type != JSON_OBJECT || n < 1 || n > MAX_LABELS) {
        *err = bert_errorf("%s: id2label must be an object such as {\"0\": \"negative\", \"1\": "
                           "\"positive\"} with 1 to %d labels", path, MAX_LABELS);
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

int bert_head_config_load(const char *model_dir, bert_head_config *hc, char **err)
{
    *err = NULL;
    memset(hc, 0, sizeof *hc);
    json_doc *doc = NULL;
    char *path = bert_path_join(model_dir, "config.json");
    if (!path) { *err = bert_errorf("out of memory"); return -1; }
    int found = bert_json_read_model_file(model_dir, "config.json", 0, &doc, err), rc = -1;
    if (found <= 0) {
        if (found == 0) *err = bert_errorf("%s does not exist", path);
        free(path);
        return -1;
    }
    if (doc->nodes[0].type != JSON_OBJECT) {
        *err = bert_errorf("%s is not a JSON object", path);
        goto done;
    }
    int id2label = bert_json_member(doc, 0, "id2label");
    if (id2label >= 0 && doc->nodes[id2label].type != JSON_NULL) {
        if (read_id2label(doc, id2label, path, hc, err) != 0) goto done;
    } else {
        int node = bert_json_member(doc, 0, "num_labels");
        long long n = node < 0 ? 0 : bert_json_int(doc, node, -1);
        if (n < 0 || n > MAX_LABELS || (node >= 0 && n == 0)) {
            *err = bert_errorf("%s: num_labels must be an integer from 1 to %d", path, MAX_LABELS);
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
        if (ends_with(first, "ForSequenceClassification")) hc->architecture_task = "sequence_classification";
        else if (ends_with(first, "ForMaskedLM") || ends_with(first, "ForPreTraining")) hc->architecture_task = "fill_mask";
        else if (ends_with(first, "ForNextSentencePrediction")) hc->architecture_task = "next_sentence";
        else if (ends_with(first, "ForTokenClassification")) hc->architecture_task = "token_classification";
        else if (ends_with(first, "ForQuestionAnswering")) hc->architecture_task = "question_answering";
    }
    rc = 0;
done:
    if (rc != 0) bert_head_config_free(hc);
    bert_json_free(doc);
    free(path);
    return rc;
}

/* ------------------------------------------------------ sentence-transformers */

static int read_pooling(const char *model_dir, const char *pooling_dir, bert_st_config *st, char **err)
{
    char *name = bert_path_join(pooling_dir, "config.json");
    if (!name) { *err = bert_errorf("out of memory"); return -1; }
    json_doc *doc = NULL;
    int found = bert_json_read_model_file(model_dir, name, 1, &doc, err);
    if (found <= 0) { free(name); return found; }

    static const struct { const char *key; int mode; } modes[] = {
        {"pooling_mode_mean_tokens", BERT_POOL_MEAN},
        {"pooling_mode_cls_token", BERT_POOL_CLS},
        {"pooling_mode_max_tokens", BERT_POOL_MAX},
        {"pooling_mode_mean_sqrt_len_tokens", -1},
        {"pooling_mode_weightedmean_tokens", -1},
        {"pooling_mode_lasttoken", -1},
    };
    int chosen = 0, rc = 0;
    for (size_t i = 0; i < sizeof modes / sizeof *modes && rc == 0; i++) {
        if (bert_json_bool(doc, bert_json_member(doc, 0, modes[i].key), 0) != 1) continue;
        if (modes[i].mode < 0) {
            *err = bert_errorf("%s/%s asks for %s, which is not supported: only mean, cls and "
                               "max pooling are", model_dir, name, modes[i].key);
            rc = -1;
        } else if (chosen++) {
            *err = bert_errorf("%s/%s combines several pooling modes, which is not supported: "
                               "only one of mean, cls or max can be used", model_dir, name);
            rc = -1;
        } else {
            st->pooling = (bert_pooling)modes[i].mode;
        }
    }
    bert_json_free(doc);
    free(name);
    return rc < 0 ? -1 : 1;
}

int bert_st_config_load(const char *model_dir, bert_st_config *st, char **err)
{
    *err = NULL;
    memset(st, 0, sizeof *st);
    st->pooling = BERT_POOL_MEAN;

    json_doc *doc = NULL;
    char *pooling_dir = NULL;
    int found = bert_json_read_model_file(model_dir, "modules.json", 1, &doc, err), rc = 0;
    if (found < 0) return -1;
    if (found) {
        st->present = 1;
        if (doc->nodes[0].type != JSON_ARRAY) {
            *err = bert_errorf("%s/modules.json is not a JSON array of modules", model_dir);
            bert_json_free(doc);
            return -1;
        }
        for (int c = doc->nodes[0].first_child; c >= 0 && rc == 0; c = doc->nodes[c].next_sibling) {
            const char *type = bert_json_str(doc, bert_json_member(doc, c, "type"), "");
            if (ends_with(type, "Pooling")) {
                const char *p = bert_json_str(doc, bert_json_member(doc, c, "path"), "1_Pooling");
                free(pooling_dir);
                pooling_dir = bert_strdup(p);
                if (!pooling_dir) {
                    *err = bert_errorf("out of memory reading %s/modules.json", model_dir);
                    rc = -1;
                }
            } else if (ends_with(type, "Normalize")) {
                st->normalize = 1;
            } else if (!ends_with(type, "Transformer")) {
                /* A Dense or other projection we cannot run would give
                 * vectors that silently differ from the model's. */
                *err = bert_errorf("%s/modules.json has a module of type \"%s\", which is not "
                                   "supported (only Transformer, Pooling and Normalize are)", model_dir, type);
                rc = -1;
            }
        }
        bert_json_free(doc);
        doc = NULL;
        if (rc != 0) { free(pooling_dir); return -1; }
    }

    int pooled = read_pooling(model_dir, pooling_dir ? pooling_dir : "1_Pooling", st, err);
    free(pooling_dir);
    if (pooled < 0) return -1;
    if (pooled) st->present = 1;

    found = bert_json_read_model_file(model_dir, "sentence_bert_config.json", 1, &doc, err);
    if (found < 0) return -1;
    if (found) {
        int node = bert_json_member(doc, 0, "max_seq_length");
        long long v = node < 0 ? 0 : bert_json_int(doc, node, -1);
        if (v < 0 || v > MAX_POSITIONS) {
            *err = bert_errorf("%s/sentence_bert_config.json: max_seq_length must be a positive integer",
                               model_dir);
            bert_json_free(doc);
            return -1;
        }
        st->max_seq_length = (int)v;
        bert_json_free(doc);
    }
    return 0;
}

/* ---------------------------------------------------------- tensor binding */

/* A tensor and where it goes: a float32 pointer, or (the layers'
 * projections) a bert_matrix held at the model's precision. */
typedef struct {
    const float **dst;
    bert_matrix *matrix;
    const st_tensor *t;
} binding;

typedef struct {
    const st_file *st;
    const char *file;      /* for messages */
    const char *prefix;    /* "" or "bert." for the BertModel tensors */
    binding *list;
    int count;
    char name[256];        /* the name last looked up, for messages */
    char **err;
} binder;

/* Finds a tensor.  BertModel tensors get the checkpoint's prefix; the
 * LayerNorm parameters are also tried under their old names. */
static const st_tensor *lookup(binder *b, const char *name, int in_bert)
{
    snprintf(b->name, sizeof b->name, "%s%s", in_bert ? b->prefix : "", name);
    const st_tensor *t = bert_safetensors_find(b->st, b->name);
    if (t) return t;
    char old[256];
    size_t n = strlen(b->name);
    if (ends_with(b->name, "LayerNorm.weight"))
        snprintf(old, sizeof old, "%.*sgamma", (int)(n - 6), b->name);
    else if (ends_with(b->name, "LayerNorm.bias"))
        snprintf(old, sizeof old, "%.*sbeta", (int)(n - 4), b->name);
    else
        return NULL;
    t = bert_safetensors_find(b->st, old);
    if (t) snprintf(b->name, sizeof b->name, "%s", old);
    return t;
}

/* Binds *dst to tensor `name` of shape [d0] (d1 == 0) or [d0 x d1].  A
 * missing tensor is an error when `required`, else leaves *dst alone and
 * returns 1. */
static int bind(binder *b, const float **dst, const char *name, int in_bert, int required,
                int d0, int d1, const char *why)
{
    const st_tensor *t = lookup(b, name, in_bert);
    if (!t) {
        if (!required) return 1;
        *b->err = bert_errorf("%s has no tensor %s%s (nor its LayerNorm gamma/beta or bert.-prefixed "
                              "form); the file is not a BERT checkpoint or is incomplete", b->file,
                              in_bert ? b->prefix : "", name);
        return -1;
    }
    if (t->dtype != ST_F32 && t->dtype != ST_F16 && t->dtype != ST_BF16) {
        *b->err = bert_errorf("%s: tensor %s is stored as %s; only F32, F16 and BF16 weights are "
                              "supported: convert the checkpoint with torch_dtype=float32", b->file,
                              b->name, t->dtype_name);
        return -1;
    }
    int ok = d1 ? t->ndim == 2 && t->shape[0] == d0 && t->shape[1] == d1
                : t->ndim == 1 && t->shape[0] == d0;
    if (!ok) {
        char got[160] = "";
        size_t used = 0;
        for (int i = 0; i < t->ndim && used < sizeof got - 24; i++)
            used += (size_t)snprintf(got + used, sizeof got - used, "%s%lld", i ? ", " : "",
                                     (long long)t->shape[i]);
        if (d1)
            *b->err = bert_errorf("%s: tensor %s has shape [%s] but config.json (%s) implies [%d, %d]; "
                                  "the weights and config.json belong to different models",
                                  b->file, b->name, got, why, d0, d1);
        else
            *b->err = bert_errorf("%s: tensor %s has shape [%s] but config.json (%s) implies [%d]; "
                                  "the weights and config.json belong to different models",
                                  b->file, b->name, got, why, d0);
        return -1;
    }
    b->list[b->count].dst = dst;
    b->list[b->count].matrix = NULL;
    b->list[b->count].t = t;
    b->count++;
    return 0;
}

/* Binds a required projection weight [d0 x d1] to *dst. */
static int bind_matrix(binder *b, bert_matrix *dst, const char *name, int d0, int d1, const char *why)
{
    const float *unused = NULL;
    if (bind(b, &unused, name, 1, 1, d0, d1, why) != 0) return -1;
    b->list[b->count - 1].dst = NULL;
    b->list[b->count - 1].matrix = dst;
    return 0;
}

/* float16 and bfloat16 widen to float32 exactly, subnormals, infinities and
 * NaN payloads included. */
static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | mant << 13;
    } else if (exp) {
        bits = sign | (exp + 112) << 23 | mant << 13;
    } else if (!mant) {
        bits = sign;
    } else {
        /* subnormal: mant * 2^-24, renormalised */
        uint32_t e = 113;
        while (!(mant & 0x400)) { mant <<= 1; e--; }
        bits = sign | e << 23 | (mant & 0x3ff) << 13;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static int in_place(const st_tensor *t)
{
    return t->dtype == ST_F32 && (uintptr_t)t->data % sizeof(float) == 0;
}

/* n elements of tensor t from element `first` on, as float32 into out. */
static void widen(const st_tensor *t, size_t first, size_t n, float *out)
{
    if (t->dtype == ST_F32) {
        memcpy(out, t->data + first * sizeof(float), n * sizeof(float));
        return;
    }
    const unsigned char *p = t->data + first * sizeof(uint16_t);
    for (size_t i = 0; i < n; i++) {
        uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
        out[i] = t->dtype == ST_F16 ? f16_to_f32(h) : bert_f32_from_bf16(h);
    }
}

static void convert(const st_tensor *t, float *out)
{
    widen(t, 0, t->count, out);
}

/* Row r of tensor t as float32: in place when it can be, else widened
 * into row_buf. */
static const float *float_row(const st_tensor *t, size_t r, size_t cols, float *row_buf)
{
    if (in_place(t)) return (const float *)(const void *)t->data + r * cols;
    widen(t, r * cols, cols, row_buf);
    return row_buf;
}

/* At a reduced precision the 1-D float32 tensors (biases, LayerNorms) are
 * copied out of the mapping: they lie between the projections whose pages
 * were released, and a read of one in place makes the kernel map back the
 * whole page-cache folio around it, megabytes of those projections. */
static int copied_at(const st_tensor *t, bert_precision p)
{
    return p != BERT_PRECISION_FLOAT32 && t->ndim == 1;
}

/* A bfloat16 tensor at bfloat16 precision is used where it lies. */
static int bf16_in_place(const st_tensor *t)
{
    return t->dtype == ST_BF16 && (uintptr_t)t->data % sizeof(uint16_t) == 0;
}

/* Whether the model reads tensor t (bound to `mat`, or to a float32
 * pointer when mat is NULL) where it lies in the mapping. */
static int used_in_place(const st_tensor *t, const bert_matrix *mat, bert_precision p)
{
    if (mat && p != BERT_PRECISION_FLOAT32) return p == BERT_PRECISION_BFLOAT16 && bf16_in_place(t);
    return in_place(t) && !copied_at(t, p);
}

/* The projections' blocks start on cache lines, for the vector kernels. */
#define REDUCED_ALIGN 64
static size_t align_up(size_t n) { return (n + REDUCED_ALIGN - 1) & ~(size_t)(REDUCED_ALIGN - 1); }

/* Bytes of the reduced block that tensor t takes at precision p. */
static size_t reduced_size(const st_tensor *t, bert_precision p)
{
    size_t rows = (size_t)t->shape[0], count = t->count;
    if (p == BERT_PRECISION_BFLOAT16) return bf16_in_place(t) ? 0 : align_up(count * sizeof(uint16_t));
    if (p == BERT_PRECISION_INT8)
        return align_up(count) + align_up(rows * sizeof(float)) + align_up(rows * sizeof(int32_t));
    return 0;
}

/* Fills *mat with tensor t at precision p, carving its arrays from *next
 * (reduced_size(t, p) bytes) and converting row by row through row_buf. */
static void reduce(const st_tensor *t, bert_precision p, unsigned char **next, float *row_buf, bert_matrix *mat)
{
    size_t rows = (size_t)t->shape[0], cols = (size_t)t->shape[1];
    mat->precision = p;
    if (p == BERT_PRECISION_BFLOAT16) {
        if (bf16_in_place(t)) {
            mat->bf16 = (const uint16_t *)(const void *)t->data;
            return;
        }
        uint16_t *out = (uint16_t *)(void *)*next;
        *next += align_up(t->count * sizeof(uint16_t));
        for (size_t r = 0; r < rows; r++) bert_bf16_from_f32(out + r * cols, float_row(t, r, cols, row_buf), cols);
        mat->bf16 = out;
        return;
    }
    int8_t *q = (int8_t *)(void *)*next;
    *next += align_up(t->count);
    float *scale = (float *)(void *)*next;
    *next += align_up(rows * sizeof(float));
    int32_t *row_sum = (int32_t *)(void *)*next;
    *next += align_up(rows * sizeof(int32_t));
    /* One row at a time: a row's scale depends on that row alone. */
    for (size_t r = 0; r < rows; r++)
        bert_int8_quantize_rows(q + r * cols, scale + r, row_sum + r, float_row(t, r, cols, row_buf), 1, (int)cols);
    mat->i8 = q;
    mat->scale = scale;
    mat->row_sum = row_sum;
}

/* Points every bound weight at its data: float32 in place, else converted
 * into one block; the projections at a reduced precision into another.  A
 * tensor converted from the mapping has its pages released: the file is
 * not read again, and the resident set should not hold it twice. */
static int materialize(binder *b, model_priv *priv, bert_model *m)
{
    const bert_precision p = m->precision;
    size_t floats = 0, reduced = 0, cols_max = 0;
    for (int i = 0; i < b->count; i++) {
        const st_tensor *t = b->list[i].t;
        if (b->list[i].matrix && p != BERT_PRECISION_FLOAT32) {
            size_t bytes = reduced_size(t, p);
            reduced += bytes;
            if (bytes && (size_t)t->shape[1] > cols_max) cols_max = (size_t)t->shape[1];
        } else if (!in_place(t) || copied_at(t, p)) {
            floats += t->count;   /* bounded by the file size */
        }
    }
    if (floats) {
        priv->converted = malloc(floats * sizeof(float));
        if (!priv->converted) {
            *b->err = bert_errorf("out of memory converting %zu MB of %s weights to float32",
                                  floats * sizeof(float) >> 20, b->file);
            return -1;
        }
    }
    float *row_buf = NULL;
    unsigned char *next_reduced = NULL;
    if (reduced) {
        priv->reduced = malloc(reduced + REDUCED_ALIGN);
        row_buf = malloc(cols_max * sizeof(float));
        if (!priv->reduced || !row_buf) {
            free(row_buf);
            *b->err = bert_errorf("out of memory holding %zu MB of %s weights as %s", reduced >> 20, b->file,
                                  bert_precision_name(p));
            return -1;
        }
        uintptr_t at = (uintptr_t)priv->reduced;
        next_reduced = (unsigned char *)priv->reduced + (align_up(at) - at);
    }
    float *next = priv->converted;
    int mapped = 0;
    for (int i = 0; i < b->count; i++) {
        const st_tensor *t = b->list[i].t;
        bert_matrix *mat = b->list[i].matrix;
        mapped |= used_in_place(t, mat, p);
        if (mat && p != BERT_PRECISION_FLOAT32) {
            reduce(t, p, &next_reduced, row_buf, mat);
            continue;
        }
        const float *data;
        if (used_in_place(t, mat, p)) {
            data = (const float *)(const void *)t->data;
        } else {
            convert(t, next);
            data = next;
            next += t->count;
        }
        if (mat) {
            mat->precision = BERT_PRECISION_FLOAT32;
            mat->f32 = data;
        } else {
            *b->list[i].dst = data;
        }
    }
    free(row_buf);
    m->converted_bytes = floats * sizeof(float);
    m->reduced_bytes = reduced;
    if (!mapped) {
        bert_safetensors_close(priv->st);
        priv->st = NULL;
        return 0;
    }
    /* Released last: reading a tensor maps back the page-cache folio
     * around it, which may hold the pages of one converted before. */
    for (int i = 0; i < b->count; i++)
        if (!used_in_place(b->list[i].t, b->list[i].matrix, p)) bert_safetensors_release(priv->st, b->list[i].t);
    return 0;
}

/* DistilBERT's names for the same post-LayerNorm block (modeling_distilbert.py). */
static const char *distil_name(const char *bert_name)
{
    static const char *const map[][2] = {
        {"attention.self.query", "attention.q_lin"},
        {"attention.self.key", "attention.k_lin"},
        {"attention.self.value", "attention.v_lin"},
        {"attention.output.dense", "attention.out_lin"},
        {"attention.output.LayerNorm", "sa_layer_norm"},
        {"intermediate.dense", "ffn.lin1"},
        {"output.dense", "ffn.lin2"},
        {"output.LayerNorm", "output_layer_norm"},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
        size_t n = strlen(map[i][0]);
        if (strncmp(bert_name, map[i][0], n) == 0 && bert_name[n] == '.') return map[i][1];
    }
    return NULL;
}

static int bind_layer(binder *b, bert_layer_weights *w, int l, const bert_config *c)
{
    static const char *const hh = "hidden_size x hidden_size", *const h = "hidden_size",
                             *const ih = "intermediate_size x hidden_size",
                             *const hi = "hidden_size x intermediate_size", *const i = "intermediate_size";
    const int H = c->hidden_size, I = c->intermediate_size;
    const struct {
        const float **dst;       /* a float32 tensor, or */
        bert_matrix *matrix;     /* a projection, held at the model's precision */
        const char *name;
        int d0, d1;
        const char *why;
    } t[] = {
        {NULL, &w->q_w, "attention.self.query.weight", H, H, hh},
        {&w->q_b, NULL, "attention.self.query.bias", H, 0, h},
        {NULL, &w->k_w, "attention.self.key.weight", H, H, hh},
        {&w->k_b, NULL, "attention.self.key.bias", H, 0, h},
        {NULL, &w->v_w, "attention.self.value.weight", H, H, hh},
        {&w->v_b, NULL, "attention.self.value.bias", H, 0, h},
        {NULL, &w->out_w, "attention.output.dense.weight", H, H, hh},
        {&w->out_b, NULL, "attention.output.dense.bias", H, 0, h},
        {&w->attn_ln_w, NULL, "attention.output.LayerNorm.weight", H, 0, h},
        {&w->attn_ln_b, NULL, "attention.output.LayerNorm.bias", H, 0, h},
        {NULL, &w->ff_in_w, "intermediate.dense.weight", I, H, ih},
        {&w->ff_in_b, NULL, "intermediate.dense.bias", I, 0, i},
        {NULL, &w->ff_out_w, "output.dense.weight", H, I, hi},
        {&w->ff_out_b, NULL, "output.dense.bias", H, 0, h},
        {&w->ff_ln_w, NULL, "output.LayerNorm.weight", H, 0, h},
        {&w->ff_ln_b, NULL, "output.LayerNorm.bias", H, 0, h},
    };
    char name[160];
    for (size_t k = 0; k < sizeof t / sizeof *t; k++) {
        if (c->distilbert)
            snprintf(name, sizeof name, "transformer.layer.%d.%s%s", l, distil_name(t[k].name),
                     strrchr(t[k].name, '.'));
        else
            snprintf(name, sizeof name, "encoder.layer.%d.%s", l, t[k].name);
        int rc = t[k].matrix ? bind_matrix(b, t[k].matrix, name, t[k].d0, t[k].d1, t[k].why)
                             : bind(b, t[k].dst, name, 1, 1, t[k].d0, t[k].d1, t[k].why);
        if (rc != 0) return -1;
    }
    return 0;
}

/* Optional groups are bound only when complete: a head with missing parts
 * is treated as absent rather than run half-initialised. */
static int all_present(binder *b, const char *const *names, int in_bert)
{
    for (; *names; names++)
        if (!lookup(b, *names, in_bert)) return 0;
    return 1;
}

/* Whether classifier.* runs on every token (BertForTokenClassification,
 * DistilBertForTokenClassification) rather than on the whole sequence.
 * config.json's architectures decide, as the class does in transformers;
 * without them, a classifier with neither a pooler (BERT) nor a
 * pre_classifier (DistilBERT) can only be per token. */
static int classifier_per_token(binder *b, const bert_model *m)
{
    const char *arch = m->head.architecture_task;
    if (arch && strcmp(arch, "token_classification") == 0) return 1;
    if (arch && strcmp(arch, "sequence_classification") == 0) return 0;
    if (m->cfg.distilbert) return !lookup(b, "pre_classifier.weight", 0);
    return !lookup(b, "pooler.dense.weight", 1);
}

/* The classifier's rows must be config.json's labels; when config.json
 * names none, the rows decide.  Binds classifier.* to *w and *bias. */
static int bind_label_rows(binder *b, bert_model *m, const st_tensor *t, const float **w, const float **bias)
{
    const int H = m->cfg.hidden_size;
    int rows = m->head.num_labels;
    char why[96];
    if (rows > 0) {
        snprintf(why, sizeof why, "%d label%s in id2label or num_labels, x hidden_size", rows, rows == 1 ? "" : "s");
    } else {
        rows = t->ndim == 2 && t->shape[0] >= 1 && t->shape[0] <= MAX_LABELS ? (int)t->shape[0] : 1;
        snprintf(why, sizeof why, "no labels named, so the classifier's %d rows, x hidden_size", rows);
    }
    if (bind(b, w, "classifier.weight", 0, 1, rows, H, why) ||
        bind(b, bias, "classifier.bias", 0, 1, rows, 0, "the classifier's labels"))
        return -1;
    if (bert_head_config_default_labels(&m->head, rows) != 0) {
        *b->err = bert_errorf("out of memory loading %s", b->file);
        return -1;
    }
    return 0;
}

/* BertForSequenceClassification's classifier on the pooler's output, or
 * DistilBertForSequenceClassification's pre_classifier + classifier; or,
 * when the classifier runs per token, the token-classification head. */
static int bind_classifier(binder *b, bert_model *m)
{
    const int H = m->cfg.hidden_size;
    const st_tensor *w = lookup(b, "classifier.weight", 0);
    if (!w || !lookup(b, "classifier.bias", 0)) return 0;
    if (classifier_per_token(b, m)) return bind_label_rows(b, m, w, &m->tok_w, &m->tok_b);
    static const char *const pooler[] = {"pooler.dense.weight", "pooler.dense.bias", NULL};
    static const char *const pre[] = {"pre_classifier.weight", "pre_classifier.bias", NULL};
    if (m->cfg.distilbert ? !all_present(b, pre, 0) : !all_present(b, pooler, 1)) return 0;
    if (bind_label_rows(b, m, w, &m->cls_w, &m->cls_b)) return -1;
    if (m->cfg.distilbert &&
        (bind(b, &m->pre_cls_w, pre[0], 0, 1, H, H, "dim x dim") ||
         bind(b, &m->pre_cls_b, pre[1], 0, 1, H, 0, "dim")))
        return -1;
    return 0;
}

/* BertForQuestionAnswering / DistilBertForQuestionAnswering: qa_outputs, a
 * start and an end logit per token. */
static int bind_qa(binder *b, bert_model *m)
{
    static const char *const qa[] = {"qa_outputs.weight", "qa_outputs.bias", NULL};
    if (!all_present(b, qa, 0)) return 0;
    const int H = m->cfg.hidden_size;
    if (bind(b, &m->qa_w, qa[0], 0, 1, 2, H, "start and end logits, x hidden_size") ||
        bind(b, &m->qa_b, qa[1], 0, 1, 2, 0, "start and end logits"))
        return -1;
    return 0;
}

static int bind_heads(binder *b, bert_model *m)
{
    if (m->cfg.distilbert) return bind_classifier(b, m) || bind_qa(b, m) ? -1 : 0;
    const int H = m->cfg.hidden_size, V = m->cfg.vocab_size;
    static const char *const pooler[] = {"pooler.dense.weight", "pooler.dense.bias", NULL};
    if (all_present(b, pooler, 1)) {
        if (bind(b, &m->pooler_w, "pooler.dense.weight", 1, 1, H, H, "hidden_size x hidden_size") ||
            bind(b, &m->pooler_b, "pooler.dense.bias", 1, 1, H, 0, "hidden_size"))
            return -1;
    }

    static const char *const mlm[] = {
        "cls.predictions.transform.dense.weight", "cls.predictions.transform.dense.bias",
        "cls.predictions.transform.LayerNorm.weight", "cls.predictions.transform.LayerNorm.bias", NULL};
    const char *bias = lookup(b, "cls.predictions.bias", 0) ? "cls.predictions.bias"
                     : lookup(b, "cls.predictions.decoder.bias", 0) ? "cls.predictions.decoder.bias"
                     : NULL;
    if (bias && all_present(b, mlm, 0)) {
        if (bind(b, &m->mlm_dense_w, mlm[0], 0, 1, H, H, "hidden_size x hidden_size") ||
            bind(b, &m->mlm_dense_b, mlm[1], 0, 1, H, 0, "hidden_size") ||
            bind(b, &m->mlm_ln_w, mlm[2], 0, 1, H, 0, "hidden_size") ||
            bind(b, &m->mlm_ln_b, mlm[3], 0, 1, H, 0, "hidden_size") ||
            bind(b, &m->mlm_bias, bias, 0, 1, V, 0, "vocab_size"))
            return -1;
        /* Absent when tied to the word embeddings (save_pretrained drops it). */
        int rc = bind(b, &m->mlm_decoder_w, "cls.predictions.decoder.weight", 0, 0, V, H,
                      "vocab_size x hidden_size");
        if (rc < 0) return -1;
    }

    static const char *const nsp[] = {"cls.seq_relationship.weight", "cls.seq_relationship.bias", NULL};
    if (all_present(b, nsp, 0)) {
        if (bind(b, &m->nsp_w, nsp[0], 0, 1, 2, H, "2 x hidden_size") ||
            bind(b, &m->nsp_b, nsp[1], 0, 1, 2, 0, "2"))
            return -1;
    }
    return bind_classifier(b, m) || bind_qa(b, m) ? -1 : 0;
}

static const char *dtype_label(st_dtype t)
{
    return t == ST_F16 ? "float16" : t == ST_BF16 ? "bfloat16" : "float32";
}

int bert_model_load(const char *model_dir, bert_model **out, char **err)
{
    return bert_model_load_precision(model_dir, BERT_PRECISION_FLOAT32, out, err);
}

int bert_model_load_precision(const char *model_dir, bert_precision precision, bert_model **out, char **err)
{
    *out = NULL;
    *err = NULL;
    bert_model *m = calloc(1, sizeof *m);
    model_priv *priv = calloc(1, sizeof *priv);
    char *path = NULL;      /* the weights' file, or a sharded checkpoint's index, for messages */
    binder b = {.err = err};
    if (!m || !priv) {
        free(m);
        free(priv);
        *err = bert_errorf("out of memory loading %s", model_dir);
        return -1;
    }
    m->priv = priv;
    m->precision = precision;
    if (bert_config_load(model_dir, &m->cfg, err) != 0) goto fail;
    const bert_config *c = &m->cfg;
    if (bert_checkpoint_open(model_dir, &priv->st, &path, err) != 0) goto fail;
    /* The head settings matter only to a checkpoint with a classifier: an
     * odd id2label in a fill-mask model's config.json is no reason to fail. */
    if (bert_head_config_load(model_dir, &m->head, err) != 0) {
        if (bert_safetensors_find(priv->st, "classifier.weight")) goto fail;
        free(*err);
        *err = NULL;
        memset(&m->head, 0, sizeof m->head);
    }
    m->file_size = bert_safetensors_size(priv->st);

    m->layers = calloc((size_t)c->num_layers, sizeof *m->layers);
    b.list = calloc((size_t)c->num_layers * 16 + 32, sizeof *b.list);
    if (!m->layers || !b.list) {
        *err = bert_errorf("out of memory loading %s", model_dir);
        goto fail;
    }
    b.st = priv->st;
    b.file = path;
    b.prefix = bert_safetensors_find(priv->st, "bert.embeddings.word_embeddings.weight") ? "bert."
             : bert_safetensors_find(priv->st, "distilbert.embeddings.word_embeddings.weight") ? "distilbert." : "";

    const int H = c->hidden_size;
    if (bind(&b, &m->word_emb, "embeddings.word_embeddings.weight", 1, 1, c->vocab_size, H,
             "vocab_size x hidden_size") ||
        bind(&b, &m->pos_emb, "embeddings.position_embeddings.weight", 1, 1,
             c->max_position_embeddings, H, "max_position_embeddings x hidden_size") ||
        (!c->distilbert &&   /* DistilBERT has no segment embeddings */
         bind(&b, &m->type_emb, "embeddings.token_type_embeddings.weight", 1, 1, c->type_vocab_size,
              H, "type_vocab_size x hidden_size")) ||
        bind(&b, &m->emb_ln_w, "embeddings.LayerNorm.weight", 1, 1, H, 0, "hidden_size") ||
        bind(&b, &m->emb_ln_b, "embeddings.LayerNorm.bias", 1, 1, H, 0, "hidden_size"))
        goto fail;
    m->dtype = dtype_label(b.list[0].t->dtype);
    for (int l = 0; l < c->num_layers; l++)
        if (bind_layer(&b, &m->layers[l], l, c) != 0) goto fail;
    if (bind_heads(&b, m) != 0) goto fail;
    if (materialize(&b, priv, m) != 0) goto fail;
    if (m->mlm_bias && !m->mlm_decoder_w) m->mlm_decoder_w = m->word_emb;   /* tied */

    free(b.list);
    free(path);
    *out = m;
    return 0;
fail:
    free(b.list);
    free(path);
    bert_model_free(m);
    return -1;
}

void bert_model_free(bert_model *m)
{
    if (!m) return;
    model_priv *priv = m->priv;
    if (priv) {
        bert_safetensors_close(priv->st);
        free(priv->converted);
        free(priv->reduced);
        free(priv);
    }
    bert_head_config_free(&m->head);
    free(m->layers);
    free(m);
}

const char *bert_model_task(const bert_model *m)
{
    if (!m) return NULL;
    if (bert_model_has_classifier(m)) return "sequence_classification";
    if (bert_model_has_token_head(m)) return "token_classification";
    if (bert_model_has_qa_head(m)) return "question_answering";
    if (bert_model_has_mlm_head(m)) return "fill_mask";
    if (bert_model_has_nsp_head(m)) return "next_sentence";
    return NULL;
}
