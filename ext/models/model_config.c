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
    {"electra", BERT_FAMILY_ELECTRA},
    {"modernbert", BERT_FAMILY_MODERNBERT},
    {"deberta-v2", BERT_FAMILY_DEBERTA_V2},
    /* model_type "bert" reads as BERT (the first entry); JinaBERT is told
     * by its position_embedding_type (read_jina) and keeps the name. */
    {"bert", BERT_FAMILY_JINA_BERT},
    {"nomic_bert", BERT_FAMILY_NOMIC_BERT},
    {"new", BERT_FAMILY_GTE_NEW},
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
    if (cfg->family != BERT_FAMILY_ROBERTA && cfg->family != BERT_FAMILY_XLM_ROBERTA && cfg->family != BERT_FAMILY_MPNET)
        return 0;
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
    if (distil) {
        node = bert_json_member(doc, 0, "sinusoidal_pos_embds");
        if (node >= 0 && doc->nodes[node].type != JSON_TRUE && doc->nodes[node].type != JSON_FALSE) {
            *err = bert_errorf("%s: sinusoidal_pos_embds must be true or false", path);
            return -1;
        }
        cfg->sinusoidal_positions = node >= 0 && doc->nodes[node].type == JSON_TRUE;
    }
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

/* An activation under config.json's `key` (default "gelu"). */
static int read_activation(const json_doc *doc, const char *path, const char *key, bert_activation *out, char **err)
{
    int act_node = bert_json_member(doc, 0, key);
    const char *act = act_node < 0 ? "gelu" : bert_json_str(doc, act_node, "");
    if (strcmp(act, "gelu") == 0)
        *out = BERT_ACT_GELU;
    else if (strcmp(act, "gelu_new") == 0 || strcmp(act, "gelu_pytorch_tanh") == 0 || strcmp(act, "gelu_fast") == 0)
        *out = BERT_ACT_GELU_TANH;
    else if (strcmp(act, "relu") == 0)
        *out = BERT_ACT_RELU;
    else {
        *err = bert_errorf("%s: %s \"%s\" is not supported; use \"gelu\", \"gelu_new\", "
                           "\"gelu_pytorch_tanh\", \"gelu_fast\" or \"relu\"", path, key, act);
        return -1;
    }
    return 0;
}

/* ELECTRA's encoder is BERT's, with absolute positions only: the
 * relative_key variants add a distance embedding the encoder lacks. */
static int read_absolute_positions(const json_doc *doc, const char *path, char **err)
{
    int node = bert_json_member(doc, 0, "position_embedding_type");
    const char *type = node < 0 || doc->nodes[node].type == JSON_NULL ? "absolute" : bert_json_str(doc, node, "");
    if (strcmp(type, "absolute") != 0) {
        *err = bert_errorf("%s: position_embedding_type \"%s\" is not supported; only \"absolute\" is", path, type);
        return -1;
    }
    return 0;
}

/* A positive number under `key`, or `fallback` when absent. */
static int read_positive(const json_doc *doc, const char *path, const char *key, double fallback, double *out,
                         char **err)
{
    int node = bert_json_member(doc, 0, key);
    *out = node < 0 || doc->nodes[node].type == JSON_NULL ? fallback : bert_json_real(doc, node, -1);
    if (!(*out > 0 && *out < 1e12)) {
        *err = bert_errorf("%s: %s must be a positive number", path, key);
        return -1;
    }
    return 0;
}

/* rope_parameters, as newer transformers write it: one entry per layer
 * type ("full_attention", "sliding_attention"), each {"rope_type":
 * "default", "rope_theta": ...}.  Only the default (unscaled) rotation is
 * implemented. */
static int read_rope_parameters(const json_doc *doc, const char *path, bert_family_settings *f, char **err)
{
    int node = bert_json_member(doc, 0, "rope_parameters");
    if (node < 0 || doc->nodes[node].type == JSON_NULL) return 0;
    static const char *const types[] = {"full_attention", "sliding_attention"};
    double *thetas[] = {&f->global_rope_theta, &f->local_rope_theta};
    for (int i = 0; i < 2; i++) {
        int entry = bert_json_member(doc, node, types[i]);
        if (entry < 0) continue;
        const char *type = bert_json_str(doc, bert_json_member(doc, entry, "rope_type"), "default");
        int theta = bert_json_member(doc, entry, "rope_theta");
        if (strcmp(type, "default") != 0 || (theta >= 0 && !(bert_json_real(doc, theta, -1) > 0))) {
            *err = bert_errorf("%s: rope_parameters.%s must have rope_type \"default\" and a positive rope_theta; "
                               "scaled rotary positions are not supported", path, types[i]);
            return -1;
        }
        if (theta >= 0) *thetas[i] = bert_json_real(doc, theta, -1);
    }
    return 0;
}

/* ModernBertConfig's settings: alternating global and local attention,
 * the two rotary bases, the prediction head's pooling and activation. */
static int read_modernbert(const json_doc *doc, const char *path, bert_config *cfg, char **err)
{
    bert_family_settings *f = &cfg->fam;
    double every, window;
    if (read_positive(doc, path, "global_attn_every_n_layers", 3, &every, err) ||
        read_positive(doc, path, "local_attention", 128, &window, err) ||
        read_positive(doc, path, "global_rope_theta", 160000.0, &f->global_rope_theta, err) ||
        read_positive(doc, path, "local_rope_theta", 10000.0, &f->local_rope_theta, err) ||
        read_rope_parameters(doc, path, f, err))
        return -1;
    if (every != (int)every || every > MAX_LAYERS || window != (int)window || window < 2 ||
        window > BERT_MAX_POSITIONS) {
        *err = bert_errorf("%s: global_attn_every_n_layers and local_attention must be integers (1 to %d, "
                           "2 to %d)", path, MAX_LAYERS, BERT_MAX_POSITIONS);
        return -1;
    }
    f->global_every = (int)every;
    f->local_window = (int)window;
    if ((cfg->hidden_size / cfg->num_heads) % 2 != 0) {
        *err = bert_errorf("%s: hidden_size / num_attention_heads must be even for rotary positions (it is %d)",
                           path, cfg->hidden_size / cfg->num_heads);
        return -1;
    }
    /* layer_types, when written, must say what global_attn_every_n_layers does. */
    int types = bert_json_member(doc, 0, "layer_types");
    if (types >= 0 && doc->nodes[types].type != JSON_NULL) {
        int l = 0, ok = doc->nodes[types].type == JSON_ARRAY && bert_json_length(doc, types) == cfg->num_layers;
        for (int c = ok ? doc->nodes[types].first_child : -1; c >= 0; c = doc->nodes[c].next_sibling, l++) {
            const char *want = l % f->global_every == 0 ? "full_attention" : "sliding_attention";
            ok &= strcmp(bert_json_str(doc, c, ""), want) == 0;
        }
        if (!ok) {
            *err = bert_errorf("%s: layer_types must list num_hidden_layers entries, \"full_attention\" where the "
                               "layer index is a multiple of global_attn_every_n_layers (%d), else "
                               "\"sliding_attention\"", path, f->global_every);
            return -1;
        }
    }
    int pooling = bert_json_member(doc, 0, "classifier_pooling");
    const char *pool = pooling < 0 ? "cls" : bert_json_str(doc, pooling, "");
    if (strcmp(pool, "cls") != 0 && strcmp(pool, "mean") != 0) {
        *err = bert_errorf("%s: classifier_pooling \"%s\" is not supported; use \"cls\" or \"mean\"", path, pool);
        return -1;
    }
    f->mean_pooling = strcmp(pool, "mean") == 0;
    return read_activation(doc, path, "classifier_activation", &f->head_act, err);
}

/* An integer under `key` from lo to hi, or `fallback` when absent or null. */
static int read_int(const json_doc *doc, const char *path, const char *key, long long fallback, long long lo,
                    long long hi, int *out, char **err)
{
    int node = bert_json_member(doc, 0, key);
    long long v = node < 0 || doc->nodes[node].type == JSON_NULL ? fallback : bert_json_int(doc, node, lo - 1);
    if (v < lo || v > hi) {
        *err = bert_errorf("%s: %s must be an integer from %lld to %lld", path, key, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* DebertaV2Config's settings: relative_attention with the c2p and p2c
 * terms of pos_att_type over log-bucketed relative positions, the keys and
 * queries of positions from the layer's own key_proj and query_proj
 * (share_att_key, as every published v2 and v3 checkpoint has it),
 * absolute positions only where position_biased_input, the ContextPooler's
 * activation.  What the encoder does not implement is refused by key. */
static int read_deberta(const json_doc *doc, const char *path, bert_config *cfg, char **err)
{
    bert_family_settings *f = &cfg->fam;
    int biased = 1, conv = 0, pooler = 0, head = 0;
    if (read_int(doc, path, "type_vocab_size", 0, 0, MAX_TYPE_VOCAB, &cfg->type_vocab_size, err) ||
        read_int(doc, path, "embedding_size", cfg->hidden_size, 1, MAX_HIDDEN, &f->embedding_size, err) ||
        read_int(doc, path, "position_buckets", -1, -1, BERT_MAX_POSITIONS, &f->position_buckets, err) ||
        read_int(doc, path, "max_relative_positions", -1, -1, BERT_MAX_POSITIONS, &f->max_relative, err) ||
        read_int(doc, path, "conv_kernel_size", 0, 0, 0, &conv, err) ||
        read_int(doc, path, "pooler_hidden_size", cfg->hidden_size, cfg->hidden_size, cfg->hidden_size, &pooler, err) ||
        read_int(doc, path, "attention_head_size", cfg->hidden_size / cfg->num_heads, cfg->hidden_size / cfg->num_heads,
                 cfg->hidden_size / cfg->num_heads, &head, err))
        return -1;
    int node = bert_json_member(doc, 0, "position_biased_input");
    if (node >= 0) biased = bert_json_bool(doc, node, 1);
    node = bert_json_member(doc, 0, "relative_attention");
    f->relative_attention = node >= 0 && bert_json_bool(doc, node, 0);
    node = bert_json_member(doc, 0, "share_att_key");
    if (f->relative_attention && !(node >= 0 && bert_json_bool(doc, node, 0))) {
        *err = bert_errorf("%s: share_att_key false (separate pos_key_proj and pos_query_proj) is not supported", path);
        return -1;
    }
    /* pos_att_type: a list (or "p2c|c2p" in old configs) of c2p and p2c. */
    node = bert_json_member(doc, 0, "pos_att_type");
    if (node >= 0 && doc->nodes[node].type == JSON_ARRAY) {
        for (int c = doc->nodes[node].first_child; c >= 0; c = doc->nodes[c].next_sibling) {
            const char *t = bert_json_str(doc, c, "");
            if (strcmp(t, "c2p") == 0) f->c2p = 1;
            else if (strcmp(t, "p2c") == 0) f->p2c = 1;
            else {
                *err = bert_errorf("%s: pos_att_type \"%s\" is not supported; use \"c2p\" and \"p2c\"", path, t);
                return -1;
            }
        }
    } else if (node >= 0 && doc->nodes[node].type == JSON_TEXT) {
        const char *t = bert_json_str(doc, node, "");
        f->c2p = strstr(t, "c2p") != NULL;
        f->p2c = strstr(t, "p2c") != NULL;
    }
    if (f->max_relative < 1) f->max_relative = cfg->max_position_embeddings;
    f->att_span = f->position_buckets > 0 ? f->position_buckets : f->max_relative;
    node = bert_json_member(doc, 0, "norm_rel_ebd");
    f->rel_norm = node >= 0 && strstr(bert_json_str(doc, node, ""), "layer_norm") != NULL;
    /* Absolute positions only where position_biased_input: a table the
     * binder looks for; without it, none (pos_emb stays NULL). */
    cfg->position_offset = 0;
    cfg->pad_id = -1;
    f->position_biased = biased;
    return read_activation(doc, path, "pooler_hidden_act", &f->head_act, err);
}

/* JinaBertConfig (jinaai/jina-bert-implementation, configuration_bert.py):
 * model_type "bert" whose position_embedding_type "alibi" replaces the
 * position embeddings with ALiBi, its MLP then gated (feed_forward_type
 * "geglu" or "reglu", JinaBertGLUMLP).  Called for every "bert" config;
 * makes it JinaBERT when the positions say alibi. */
static int read_jina(const json_doc *doc, const char *path, bert_config *cfg, char **err)
{
    int node = bert_json_member(doc, 0, "position_embedding_type");
    const char *type = node < 0 || doc->nodes[node].type == JSON_NULL ? "absolute" : bert_json_str(doc, node, "");
    if (strcmp(type, "alibi") != 0) return 0;
    cfg->family = BERT_FAMILY_JINA_BERT;
    node = bert_json_member(doc, 0, "feed_forward_type");
    const char *ff = node < 0 || doc->nodes[node].type == JSON_NULL ? "geglu" : bert_json_str(doc, node, "");
    if (strcmp(ff, "geglu") == 0)
        cfg->fam.glu_act = BERT_ACT_GELU;
    else if (strcmp(ff, "reglu") == 0)
        cfg->fam.glu_act = BERT_ACT_RELU;
    else {
        *err = bert_errorf("%s: feed_forward_type \"%s\" is not supported with position_embedding_type \"alibi\"; "
                           "use \"geglu\" or \"reglu\"", path, ff);
        return -1;
    }
    return 0;
}

/* A boolean under `key`, `fallback` when absent or null. */
static int read_flag(const json_doc *doc, const char *key, int fallback)
{
    int node = bert_json_member(doc, 0, key);
    return node < 0 || doc->nodes[node].type == JSON_NULL ? fallback : bert_json_bool(doc, node, fallback);
}

/* A setting the encoder does not implement, refused by its key when set to
 * anything but what every published checkpoint has. */
static int refuse_flag(const json_doc *doc, const char *path, const char *key, int supported, const char *why,
                       char **err)
{
    if (read_flag(doc, key, supported) == supported) return 0;
    *err = bert_errorf("%s: %s %s is not supported (%s); only %s is", path, key, supported ? "false" : "true", why,
                       supported ? "true" : "false");
    return -1;
}

/* The rotary dimensions of a head, which must be even. */
static int check_rotary_dim(const char *path, const char *key, bert_config *cfg, char **err)
{
    const int dh = cfg->hidden_size / cfg->num_heads, rd = cfg->fam.rotary_dim;
    if (rd < 2 || rd > dh || rd % 2 != 0) {
        *err = bert_errorf("%s: %s gives %d rotary dimensions of a head of %d; rotary positions need an even number "
                           "from 2 to the head size", path, key, rd, dh);
        return -1;
    }
    return 0;
}

/* NomicBertConfig (configuration_hf_nomic_bert.py, a GPT2Config): the
 * sizes under GPT-2's names are read with the others; here the gated MLP
 * (activation_function, n_inner rounded up to a multiple of 256 as
 * NomciBertGatedMLP does), the vocabulary padded to pad_vocab_size_multiple
 * (NomicBertModel), the rotary settings, and the variants of the block
 * the encoder does not implement, refused by key. */
static int read_nomic(const json_doc *doc, const char *path, bert_config *cfg, char **err)
{
    bert_family_settings *f = &cfg->fam;
    int multiple = 1, inner = 0;
    if (read_int(doc, path, "type_vocab_size", 2, 0, MAX_TYPE_VOCAB, &cfg->type_vocab_size, err) ||
        read_int(doc, path, "pad_vocab_size_multiple", 1, 1, 65536, &multiple, err) ||
        read_int(doc, path, "n_inner", 0, 0, MAX_INTERMEDIATE, &inner, err) ||
        read_int(doc, path, "max_trained_positions", 2048, 1, BERT_MAX_POSITIONS, &f->max_trained, err))
        return -1;
    long long vocab = ((long long)cfg->vocab_size + multiple - 1) / multiple * multiple;
    if (vocab > MAX_VOCAB) {
        *err = bert_errorf("%s: vocab_size padded to pad_vocab_size_multiple is above %d", path, MAX_VOCAB);
        return -1;
    }
    cfg->vocab_size = (int)vocab;
    int node = bert_json_member(doc, 0, "activation_function");
    const char *act = node < 0 ? "gelu_new" : bert_json_str(doc, node, "");
    if (strcmp(act, "swiglu") == 0) {
        f->glu_act = f->head_act = BERT_ACT_SILU;
    } else if (strcmp(act, "geglu") == 0 || strcmp(act, "glu") == 0) {
        /* F.gelu or the sigmoid of F.glu on the gate; the masked-LM head's nn.GELU(). */
        f->glu_act = act[1] == 'e' ? BERT_ACT_GELU : BERT_ACT_SIGMOID;
        f->head_act = BERT_ACT_GELU;
    } else {
        *err = bert_errorf("%s: activation_function \"%s\" is not supported for nomic_bert; its gated MLPs "
                           "\"swiglu\" (nomic-embed-text, nomic-bert-2048), \"geglu\" and \"glu\" are", path, act);
        return -1;
    }
    cfg->hidden_act = f->head_act;
    if (!inner) inner = 8 * cfg->hidden_size / 3;
    cfg->intermediate_size = (inner + 255) / 256 * 256;
    if (refuse_flag(doc, path, "prenorm", 0, "pre-LayerNorm blocks", err) ||
        refuse_flag(doc, path, "parallel_block", 0, "parallel attention and MLP", err) ||
        refuse_flag(doc, path, "use_rms_norm", 0, "RMSNorm", err) ||
        refuse_flag(doc, path, "causal", 0, "causal attention", err))
        return -1;
    node = bert_json_member(doc, 0, "rotary_emb_scale_base");
    if (node >= 0 && doc->nodes[node].type != JSON_NULL) {
        *err = bert_errorf("%s: rotary_emb_scale_base (xPos scaling) is not supported; it must be null", path);
        return -1;
    }
    node = bert_json_member(doc, 0, "num_heads_kv");
    if (node >= 0 && doc->nodes[node].type != JSON_NULL && bert_json_int(doc, node, -1) != cfg->num_heads) {
        *err = bert_errorf("%s: num_heads_kv (grouped keys and values) is not supported; it must be null or n_head",
                           path);
        return -1;
    }
    double fraction = 0;
    node = bert_json_member(doc, 0, "rotary_emb_fraction");
    if (node >= 0) fraction = bert_json_real(doc, node, -1);
    const double rd = fraction * (cfg->hidden_size / cfg->num_heads);
    if (!(fraction > 0 && fraction <= 1) || rd != (int)rd) {
        *err = bert_errorf("%s: rotary_emb_fraction must be above 0 and at most 1, a whole number of a head's "
                           "dimensions (nomic-bert uses 1.0); absolute position embeddings are not supported", path);
        return -1;
    }
    f->rotary_dim = (int)rd;
    f->rotary_interleaved = read_flag(doc, "rotary_emb_interleaved", 0);
    if (check_rotary_dim(path, "rotary_emb_fraction", cfg, err) ||
        read_positive(doc, path, "rotary_emb_base", 10000.0, &f->rope_theta, err))
        return -1;
    node = bert_json_member(doc, 0, "rotary_scaling_factor");
    if (node >= 0 && doc->nodes[node].type != JSON_NULL &&
        read_positive(doc, path, "rotary_scaling_factor", 1.0, &f->dynamic_ntk_factor, err))
        return -1;
    return 0;
}

/* NewConfig (Alibaba-NLP/new-impl, configuration.py): rotary positions
 * (position_embedding_type "rope", rope_theta, rope_scaling of type "ntk"
 * without mixed_b), the fused qkv_proj (pack_qkv), LayerNorm
 * (layer_norm_type); the gated MLP's activation is hidden_act.
 * unpad_inputs and use_memory_efficient_attention change how it is computed,
 * not what. */
static int read_gte(const json_doc *doc, const char *path, bert_config *cfg, char **err)
{
    bert_family_settings *f = &cfg->fam;
    if (read_int(doc, path, "type_vocab_size", 1, 0, MAX_TYPE_VOCAB, &cfg->type_vocab_size, err) ||
        read_positive(doc, path, "rope_theta", 10000.0, &f->rope_theta, err))
        return -1;
    int node = bert_json_member(doc, 0, "position_embedding_type");
    const char *type = node < 0 || doc->nodes[node].type == JSON_NULL ? "rope" : bert_json_str(doc, node, "");
    if (strcmp(type, "rope") != 0) {
        *err = bert_errorf("%s: position_embedding_type \"%s\" is not supported for model_type \"new\"; only \"rope\" "
                           "is", path, type);
        return -1;
    }
    node = bert_json_member(doc, 0, "layer_norm_type");
    type = node < 0 || doc->nodes[node].type == JSON_NULL ? "layer_norm" : bert_json_str(doc, node, "");
    if (strcmp(type, "layer_norm") != 0) {
        *err = bert_errorf("%s: layer_norm_type \"%s\" is not supported; only \"layer_norm\" is", path, type);
        return -1;
    }
    if (refuse_flag(doc, path, "pack_qkv", 1, "separate q_proj, k_proj and v_proj", err) ||
        refuse_flag(doc, path, "logn_attention_scale", 0, "attention scaled by the log of the length", err))
        return -1;
    node = bert_json_member(doc, 0, "rope_scaling");
    if (node >= 0 && doc->nodes[node].type != JSON_NULL) {
        const char *kind = bert_json_str(doc, bert_json_member(doc, node, "type"), "");
        int factor = bert_json_member(doc, node, "factor"), mixed = bert_json_member(doc, node, "mixed_b");
        f->ntk_factor = factor < 0 ? 0 : bert_json_real(doc, factor, -1);
        if (doc->nodes[node].type != JSON_OBJECT || strcmp(kind, "ntk") != 0 || !(f->ntk_factor >= 1) ||
            f->ntk_factor > 1e6 || (mixed >= 0 && doc->nodes[mixed].type != JSON_NULL)) {
            *err = bert_errorf("%s: rope_scaling must be null or {\"type\": \"ntk\", \"factor\": F} with F at least "
                               "1 (and no mixed_b); other scalings are not supported", path);
            return -1;
        }
    }
    f->rotary_dim = cfg->hidden_size / cfg->num_heads;
    f->glu_act = cfg->hidden_act;
    f->head_act = cfg->hidden_act;
    return check_rotary_dim(path, "hidden_size / num_attention_heads", cfg, err);
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
                           "\"bert\", \"distilbert\", \"roberta\", \"xlm-roberta\", \"mpnet\", \"electra\", "
                           "\"modernbert\", \"deberta-v2\", \"nomic_bert\" and \"new\"", path,
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
    /* ElectraConfig's defaults, and the width of its embeddings. */
    size_field electra_sizes[] = {
        {"vocab_size", 30522, MAX_VOCAB, &cfg->vocab_size},
        {"embedding_size", 128, MAX_HIDDEN, &cfg->fam.embedding_size},
        {"hidden_size", 256, MAX_HIDDEN, &cfg->hidden_size},
        {"num_hidden_layers", 12, MAX_LAYERS, &cfg->num_layers},
        {"num_attention_heads", 4, MAX_HIDDEN, &cfg->num_heads},
        {"intermediate_size", 1024, MAX_INTERMEDIATE, &cfg->intermediate_size},
        {"max_position_embeddings", 512, BERT_MAX_POSITIONS, &cfg->max_position_embeddings},
        {"type_vocab_size", 2, MAX_TYPE_VOCAB, &cfg->type_vocab_size},
    };
    /* ModernBertConfig's defaults; no segments, no position table. */
    size_field modern_sizes[] = {
        {"vocab_size", 50368, MAX_VOCAB, &cfg->vocab_size},
        {"hidden_size", 768, MAX_HIDDEN, &cfg->hidden_size},
        {"num_hidden_layers", 22, MAX_LAYERS, &cfg->num_layers},
        {"num_attention_heads", 12, MAX_HIDDEN, &cfg->num_heads},
        {"intermediate_size", 1152, MAX_INTERMEDIATE, &cfg->intermediate_size},
        {"max_position_embeddings", 8192, BERT_MAX_POSITIONS, &cfg->max_position_embeddings},
    };
    /* DebertaV2Config's defaults; type_vocab_size (0 by default) and
     * embedding_size are read in read_deberta. */
    size_field deberta_sizes[] = {
        {"vocab_size", 128100, MAX_VOCAB, &cfg->vocab_size},
        {"hidden_size", 1536, MAX_HIDDEN, &cfg->hidden_size},
        {"num_hidden_layers", 24, MAX_LAYERS, &cfg->num_layers},
        {"num_attention_heads", 24, MAX_HIDDEN, &cfg->num_heads},
        {"intermediate_size", 6144, MAX_INTERMEDIATE, &cfg->intermediate_size},
        {"max_position_embeddings", 512, BERT_MAX_POSITIONS, &cfg->max_position_embeddings},
    };
    /* NomicBertConfig's sizes under GPT2Config's names and defaults;
     * n_inner and type_vocab_size are read in read_nomic. */
    size_field nomic_sizes[] = {
        {"vocab_size", 50257, MAX_VOCAB, &cfg->vocab_size},
        {"n_embd", 768, MAX_HIDDEN, &cfg->hidden_size},
        {"n_layer", 12, MAX_LAYERS, &cfg->num_layers},
        {"n_head", 12, MAX_HIDDEN, &cfg->num_heads},
        {"n_positions", 1024, BERT_MAX_POSITIONS, &cfg->max_position_embeddings},
    };
    /* NewConfig's defaults; type_vocab_size (0 in gte-*-en-v1.5) is read in read_gte. */
    size_field gte_sizes[] = {
        {"vocab_size", 30528, MAX_VOCAB, &cfg->vocab_size},
        {"hidden_size", 768, MAX_HIDDEN, &cfg->hidden_size},
        {"num_hidden_layers", 12, MAX_LAYERS, &cfg->num_layers},
        {"num_attention_heads", 12, MAX_HIDDEN, &cfg->num_heads},
        {"intermediate_size", 3072, MAX_INTERMEDIATE, &cfg->intermediate_size},
        {"max_position_embeddings", 2048, BERT_MAX_POSITIONS, &cfg->max_position_embeddings},
    };
    const int electra = cfg->family == BERT_FAMILY_ELECTRA, modern = cfg->family == BERT_FAMILY_MODERNBERT;
    const int deberta = cfg->family == BERT_FAMILY_DEBERTA_V2, nomic = cfg->family == BERT_FAMILY_NOMIC_BERT;
    const int gte = cfg->family == BERT_FAMILY_GTE_NEW;
    size_field *sizes = distil    ? distil_sizes
                        : electra ? electra_sizes
                        : modern  ? modern_sizes
                        : deberta ? deberta_sizes
                        : nomic   ? nomic_sizes
                        : gte     ? gte_sizes
                                  : bert_sizes;
    size_t n_sizes = distil    ? sizeof distil_sizes / sizeof *distil_sizes
                     : electra ? sizeof electra_sizes / sizeof *electra_sizes
                     : modern  ? sizeof modern_sizes / sizeof *modern_sizes
                     : deberta ? sizeof deberta_sizes / sizeof *deberta_sizes
                     : nomic   ? sizeof nomic_sizes / sizeof *nomic_sizes
                     : gte     ? sizeof gte_sizes / sizeof *gte_sizes
                               : sizeof bert_sizes / sizeof *bert_sizes;
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

    if (!electra) cfg->fam.embedding_size = cfg->hidden_size;

    /* DistilBERT's LayerNorms use eps 1e-12, fixed in its code; its
     * activation is under "activation".  ModernBERT's norms take norm_eps
     * (1e-5 by default), its MLP hidden_activation. */
    int eps_node = distil ? -1
                   : bert_json_member(doc, 0, modern ? "norm_eps" : nomic ? "layer_norm_epsilon" : "layer_norm_eps");
    double eps = eps_node < 0 ? (modern || nomic ? 1e-5 : deberta ? 1e-7 : 1e-12) : bert_json_real(doc, eps_node, -1);
    /* The encoder adds eps in float32, where a value below about 1e-45
     * becomes 0 and a constant row would divide by zero. */
    if (!(eps > 0 && eps < 1 && (float)eps > 0)) {
        *err = bert_errorf("%s: layer_norm_eps must be a number between 1e-45 and 1 (BERT uses 1e-12)", path);
        goto done;
    }
    cfg->layer_norm_eps = (float)eps;

    if (!nomic && read_activation(doc, path, distil ? "activation" : modern ? "hidden_activation" : "hidden_act",
                                  &cfg->hidden_act, err) != 0)
        goto done;
    if (electra && read_absolute_positions(doc, path, err) != 0) goto done;
    if (cfg->family == BERT_FAMILY_BERT && read_jina(doc, path, cfg, err) != 0) goto done;
    if (modern && read_modernbert(doc, path, cfg, err) != 0) goto done;
    if (deberta && read_deberta(doc, path, cfg, err) != 0) goto done;
    if (nomic && read_nomic(doc, path, cfg, err) != 0) goto done;
    if (gte && read_gte(doc, path, cfg, err) != 0) goto done;
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
        /* ElectraForPreTraining is the discriminator, whose replaced-token
         * head is not served: a bare encoder. */
        else if (strcmp(first, "ElectraForPreTraining") == 0) hc->architecture_task = NULL;
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

