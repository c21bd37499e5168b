/*
 * model.h - a BERT-family checkpoint as Hugging Face stores it: config.json,
 * model.safetensors and the sentence-transformers files.  The families are
 * BERT, DistilBERT, RoBERTa, XLM-RoBERTa and MPNet: one encoder with
 * small differences in names, positions and heads; ELECTRA, BERT's encoder
 * behind narrower embeddings, and ModernBERT, a pre-LayerNorm encoder with
 * rotary positions, GeGLU and local attention, and DeBERTa-v2, whose
 * attention adds terms of relative positions, and JinaBERT, BERT with
 * ALiBi in place of position embeddings and a gated MLP, and nomic-bert and
 * Alibaba's gte "new" architecture, BERT's post-LayerNorm layers with rotary
 * positions, a fused query-key-value projection and a gated MLP
 * (bert_family_settings).
 *
 * float32 tensors are used in place inside the read-only mapping of
 * model.safetensors; float16 and bfloat16 ones are converted to float32 once,
 * at load.  The layers' projections may instead be held as bfloat16 or int8
 * (bert_model_load_precision).  A loaded model is immutable and may be shared by many threads.
 * Every matrix is row-major [out_features x in_features] as in PyTorch's
 * nn.Linear, so y = x W^T + b.
 */
#ifndef BERT_MODEL_H
#define BERT_MODEL_H

#include "../kernels/linear.h"

#include <stddef.h>

/* SiLU and the sigmoid gate nomic-bert's gated MLPs (swiglu, glu) and its
 * masked-LM head take. */
typedef enum { BERT_ACT_GELU, BERT_ACT_GELU_TANH, BERT_ACT_RELU, BERT_ACT_SILU, BERT_ACT_SIGMOID } bert_activation;

/* config.json's model_type. */
typedef enum {
    BERT_FAMILY_BERT,
    BERT_FAMILY_DISTILBERT,     /* its names, no segments, no pooler */
    BERT_FAMILY_ROBERTA,        /* positions from pad_token_id + 1, RoBERTa's heads */
    BERT_FAMILY_XLM_ROBERTA,    /* RoBERTa's encoder under another model_type */
    BERT_FAMILY_MPNET,          /* no segments, relative position bias, RoBERTa's heads */
    BERT_FAMILY_ELECTRA,        /* BERT's encoder, embeddings of embedding_size projected to hidden_size */
    BERT_FAMILY_MODERNBERT,     /* pre-LayerNorm, rotary, GeGLU, local attention, one prediction head */
    BERT_FAMILY_DEBERTA_V2,     /* disentangled attention over relative positions, ContextPooler */
    BERT_FAMILY_JINA_BERT,      /* model_type "bert" with ALiBi positions and a gated MLP (JinaBERT) */
    BERT_FAMILY_NOMIC_BERT,     /* nomic-bert: rotary, fused Wqkv, SwiGLU (fc11, fc12, fc2), GPT-2's config names */
    BERT_FAMILY_GTE_NEW         /* Alibaba's gte "new": rotary with NTK scaling, fused qkv_proj, gated up_gate_proj */
} bert_family;

/* Separators between the two texts of a pair: BERT's [CLS] a [SEP] b [SEP]
 * has one; RoBERTa's, XLM-RoBERTa's and MPNet's <s> a </s></s> b </s> two. */
static inline int bert_family_pair_seps(bert_family f)
{
    return f == BERT_FAMILY_ROBERTA || f == BERT_FAMILY_XLM_ROBERTA || f == BERT_FAMILY_MPNET ? 2 : 1;
}

/* MPNet buckets relative positions into this many (MPNetEncoder's default). */
#define BERT_MPNET_BUCKETS 32

/* What ELECTRA and ModernBERT have that BERT has not (config.json's keys
 * named); a struct of its own so that the families' settings stay apart
 * from the sizes every family shares. */
typedef struct {
    /* ELECTRA: the width of the embeddings (embedding_size), which
     * embeddings_project widens to hidden_size when they differ.  Every
     * other family: hidden_size. */
    int embedding_size;
    /* ModernBERT: a layer is global when its index is a multiple of
     * global_every (global_attn_every_n_layers), else local: a token sees
     * only those at most local_window / 2 (local_attention / 2) away.  Its
     * queries and keys turn by rotary angles of base rope_theta. */
    int global_every;
    int local_window;
    double global_rope_theta, local_rope_theta;
    int mean_pooling;              /* classifier_pooling "mean" (1) or "cls" (0) */
    bert_activation head_act;      /* classifier_activation, of the prediction head; DeBERTa: pooler_hidden_act */
    /* DeBERTa-v2/v3: relative_attention, its c2p and p2c terms
     * (pos_att_type), position_buckets (0: none) and max_relative_positions;
     * att_span rows each side of encoder.rel_embeddings; the LayerNorm of
     * the relative embeddings (norm_rel_ebd "layer_norm"). */
    int relative_attention, c2p, p2c;
    int position_buckets, max_relative, att_span, rel_norm;
    int position_biased;           /* position_biased_input: absolute positions added to the embeddings */
    /* JinaBERT: the gated MLP's activation (feed_forward_type "geglu":
     * nn.GELU, exact; "reglu": ReLU), on the first intermediate_size
     * columns of mlp.gated_layers, times the second.  Its attention adds
     * -slope(head) |i - j| (ALiBi, symmetric) to the scaled scores. */
    bert_activation glu_act;
    /* nomic-bert and gte "new" (bert_family_rotary): queries and keys turn
     * by rotary angles over their first rotary_dim values of each head
     * (nomic-bert: rotary_emb_fraction of the head; gte: all of it), in
     * halves, or in pairs of neighbours when rotary_interleaved
     * (rotary_emb_interleaved); the inverse frequencies are 1 /
     * rope_theta^(2i / rotary_dim).  gte's NTK scaling (rope_scaling
     * {"type": "ntk"}) multiplies the base by ntk_factor and divides the
     * frequencies by ntk_factor^(2 / rotary_dim) at every length;
     * nomic-bert's (rotary_scaling_factor) raises the base of a sequence
     * longer than max_trained (max_trained_positions) only.  0: none.  The
     * gated MLP is glu_act(gate) * up: nomic-bert's mlp.fc12 gates fc11,
     * gte's second half of up_gate_proj gates its first. */
    int rotary_dim, rotary_interleaved, max_trained;
    double rope_theta, ntk_factor, dynamic_ntk_factor;
} bert_family_settings;

typedef struct {
    bert_family family;
    bert_family_settings fam;      /* ELECTRA's and ModernBERT's own settings */
    int vocab_size;
    int hidden_size;
    int num_layers;
    int num_heads;
    int intermediate_size;
    int max_position_embeddings;
    int type_vocab_size;        /* 0 for DistilBERT, which has no segment embeddings */
    float layer_norm_eps;
    bert_activation hidden_act;
    /* RoBERTa, XLM-RoBERTa and MPNet: padding_idx, whose tokens keep
     * position padding_idx while the others count from position_offset =
     * padding_idx + 1.  BERT and DistilBERT: -1 and 0. */
    int pad_id;
    int position_offset;
    int relative_buckets;       /* MPNet: rows of encoder.relative_attention_bias; else 0 */
    /* For fine-tuning (trainer.h), with transformers' defaults when absent:
     * the word embeddings' padding_idx (pad_token_id: BERT and DistilBERT 0,
     * RoBERTa 1), the new heads' initializer_range (0.02), and config.json's
     * dropout probabilities as each family's modules take them. */
    int pad_token_id;
    float initializer_range;
    float hidden_dropout;       /* hidden_dropout_prob; DistilBERT: dropout */
    float attention_dropout;    /* attention_probs_dropout_prob; DistilBERT: attention_dropout */
    float classifier_dropout;   /* sequence heads: classifier_dropout, else hidden_dropout_prob; DistilBERT: seq_classif_dropout */
    float token_dropout;        /* token classification: classifier_dropout, else hidden_dropout_prob; DistilBERT: dropout */
    float qa_dropout;           /* DistilBERT: qa_dropout; the others' QA heads have none (0) */
    /* DistilBERT's sinusoidal_pos_embds: the position embeddings are fixed
     * sinusoids.  The file holds them (they are the weight of an
     * nn.Embedding), so inference reads them as any other; training keeps
     * them frozen. */
    int sinusoidal_positions;
} bert_config;

/* The longest sequence the position embeddings take. */
static inline int bert_config_max_tokens(const bert_config *c)
{
    return c->max_position_embeddings - c->position_offset;
}

/* transformers' problem_type, which decides the text-classification
 * pipeline's function: softmax, sigmoid or none. */
typedef enum {
    BERT_PROBLEM_UNSET,                  /* by the number of labels */
    BERT_PROBLEM_SINGLE_LABEL,           /* "single_label_classification" */
    BERT_PROBLEM_MULTI_LABEL,            /* "multi_label_classification" */
    BERT_PROBLEM_REGRESSION              /* "regression" */
} bert_problem_type;

/* sentence-transformers' CrossEncoder activation (config.json
 * sentence_transformers.activation_fn). */
typedef enum { BERT_CE_DEFAULT, BERT_CE_SIGMOID, BERT_CE_IDENTITY, BERT_CE_UNSUPPORTED } bert_ce_activation;

/* What config.json says about a sequence-classification head. */
typedef struct {
    int num_labels;                /* id2label's size, else num_labels; 0 when config.json says neither */
    char **labels;                 /* num_labels names in id order (LABEL_<i> when not given); owned */
    bert_problem_type problem;
    bert_ce_activation activation;
    char activation_name[96];      /* as written, for messages */
    const char *architecture_task; /* what config.json's architectures announce, as bert_model_task; static */
} bert_head_config;

typedef enum { BERT_POOL_MEAN, BERT_POOL_CLS, BERT_POOL_MAX, BERT_POOL_POOLER } bert_pooling;

/* What a sentence-transformers directory asks for; defaults when it is not one. */
typedef struct {
    int present;            /* 1 when modules.json or 1_Pooling/config.json exists */
    bert_pooling pooling;   /* default BERT_POOL_MEAN */
    int normalize;          /* a Normalize module in modules.json */
    int max_seq_length;     /* sentence_bert_config.json; 0 when absent */
    int dense;              /* a Dense module after the Transformer: a ColBERT model as PyLate saves it,
                             * whose outputs are token vectors (model_dense.c) */
} bert_st_config;

/* A layer's six projections are held at the model's precision (linear.h);
 * their biases and the LayerNorms stay float32.  ModernBERT's layer uses
 * these fields in its own way: q_w is the fused Wqkv [3H x H] (k_w and v_w
 * unused), out_w is Wo, attn_ln_* is attn_norm (NULL in layer 0, whose
 * attn_norm is the identity) and comes before attention, ff_in_w is the
 * GeGLU's Wi [2I x H], ff_out_w is mlp.Wo and ff_ln_* is mlp_norm, before
 * the MLP.  Biases it lacks (attention_bias, mlp_bias, norm_bias false)
 * point at zeros.  nomic-bert's and gte's layers are BERT's post-LayerNorm
 * ones with q_w the fused Wqkv / qkv_proj [3H x H]; gte's ff_in_w is
 * up_gate_proj [2I x H], nomic-bert's is fc11 beside its gate fc12
 * (ff_gate_w). */
typedef struct {
    bert_matrix q_w, k_w, v_w;                          /* [H x H] */
    const float *q_b, *k_b, *v_b;                       /* [H] */
    bert_matrix out_w;                                  /* attention output dense */
    const float *out_b;
    const float *attn_ln_w, *attn_ln_b;                 /* LayerNorm after attention */
    bert_matrix ff_in_w;                                /* [I x H] */
    const float *ff_in_b;                               /* [I] */
    bert_matrix ff_out_w;                               /* [H x I] */
    const float *ff_out_b;                              /* [H] */
    const float *ff_ln_w, *ff_ln_b;                     /* LayerNorm after the FFN */
    /* nomic-bert's second input projection, mlp.fc12 [I x H], the gate of
     * fc11 (ff_in_w); NULL in every other family. */
    bert_matrix ff_gate_w;
    const float *ff_gate_b;
} bert_layer_weights;

typedef struct bert_model {
    bert_config cfg;
    const float *word_emb;    /* [vocab x H] */
    const float *pos_emb;     /* [max_position x H] */
    const float *type_emb;    /* [type_vocab x H] */
    const float *emb_ln_w, *emb_ln_b;
    const float *rel_bias;               /* MPNet: [relative_buckets x num_heads]; else NULL */
    const float *emb_proj_w, *emb_proj_b; /* ELECTRA's embeddings_project [H x E], [H] when E != H (DeBERTa's embed_proj); else NULL */
    const float *final_norm_w, *final_norm_b; /* ModernBERT's final_norm; else NULL */
    /* ModernBERT's prediction head before a classifier (its dense and
     * activation are pre_cls_w, pre_cls_b and fam.head_act): head.norm. */
    const float *head_norm_w, *head_norm_b;
    /* DeBERTa: encoder.rel_embeddings [2 att_span x H] and its LayerNorm
     * (NULL without norm_rel_ebd).  Its embed_proj is emb_proj_w, without
     * bias, and comes before the embeddings' LayerNorm (over hidden_size). */
    const float *rel_emb, *rel_ln_w, *rel_ln_b;
    bert_layer_weights *layers;          /* cfg.num_layers of them */
    const float *pooler_w, *pooler_b;    /* NULL when the checkpoint has no pooler */
    /* Masked-LM head (BERT's cls.predictions, RoBERTa's and MPNet's
     * lm_head), all NULL when absent.  mlm_decoder_w is word_emb when tied. */
    const float *mlm_dense_w, *mlm_dense_b, *mlm_ln_w, *mlm_ln_b;
    const float *mlm_decoder_w, *mlm_bias;
    bert_activation mlm_act;             /* BERT: hidden_act; RoBERTa, MPNet: GELU */
    const float *nsp_w, *nsp_b;          /* [2 x H], [2]; NULL when absent */
    /* Sequence-classification head, NULL when absent: BERT's classifier on
     * the pooler's output; on the first token, DistilBERT's pre_classifier
     * -> ReLU -> classifier, RoBERTa's and MPNet's classifier.dense -> tanh
     * -> classifier.out_proj. */
    const float *cls_w, *cls_b;          /* [num_labels x H], [num_labels] */
    const float *pre_cls_w, *pre_cls_b;  /* all but BERT: [H x H], [H] */
    /* Token-classification head (classifier.* on every token's hidden
     * state), NULL when absent; its labels are head's. */
    const float *tok_w, *tok_b;          /* [num_labels x H], [num_labels] */
    /* Question-answering head (qa_outputs.*), NULL when absent. */
    const float *qa_w, *qa_b;            /* [2 x H] (start, end), [2] */
    /* A sentence-transformers Dense module after the encoder (PyLate's
     * ColBERT projection, identity activation), NULL when absent. */
    const float *dense_w, *dense_b;      /* [dense_out x H], [dense_out] or NULL */
    int dense_out;
    bert_head_config head;               /* labels etc.; head.num_labels = rows of cls_w or tok_w when bound */
    const char *dtype;                   /* "float32", "float16" or "bfloat16" */
    bert_precision precision;            /* how the layers' projections are held */
    size_t file_size;                    /* bytes of model.safetensors, or of every shard */
    size_t converted_bytes;              /* bytes allocated for tensors converted to float32 */
    size_t reduced_bytes;                /* bytes allocated for bfloat16 / int8 projections */
    size_t packed_bytes;                 /* bytes allocated for projections packed at load: float32
                                          * panels (linear.h, BERT_PANEL), int8 AMX tiles */
    void *priv;                          /* mapping and owned buffers */
} bert_model;

/* nomic-bert and gte "new": BERT's post-LayerNorm layers on rotary positions. */
static inline int bert_family_rotary(bert_family f)
{
    return f == BERT_FAMILY_NOMIC_BERT || f == BERT_FAMILY_GTE_NEW;
}

/* The families whose sequence classifier reads BERT's pooler (pooler.dense, tanh). */
static inline int bert_family_pooled_classifier(bert_family f)
{
    return f == BERT_FAMILY_BERT || f == BERT_FAMILY_JINA_BERT || bert_family_rotary(f);
}

/* The width of the masked-LM head's transform: ELECTRA's generator and
 * DeBERTa's head predict from embedding_size values, every other family
 * from hidden_size. */
static inline int bert_mlm_width(const bert_model *m)
{
    const bert_family f = m->cfg.family;
    return f == BERT_FAMILY_ELECTRA || f == BERT_FAMILY_DEBERTA_V2 ? m->cfg.fam.embedding_size : m->cfg.hidden_size;
}

/* The loader binds a head whole or not at all (model_bind.h). */
static inline int bert_model_has_mlm_head(const bert_model *m)
{
    return m->mlm_dense_w && m->mlm_dense_b && m->mlm_ln_w && m->mlm_ln_b && m->mlm_decoder_w && m->mlm_bias;
}

/* Next-sentence prediction runs on the pooled [CLS], so it needs the pooler too. */
static inline int bert_model_has_nsp_head(const bert_model *m)
{
    return m->nsp_w && m->nsp_b && m->pooler_w && m->pooler_b;
}

/* Sequence classification: BERT's classifier on the pooler, the others' after their dense layer. */
static inline int bert_model_has_classifier(const bert_model *m)
{
    return m->cls_w && m->cls_b &&
           (bert_family_pooled_classifier(m->cfg.family) ? m->pooler_w && m->pooler_b : m->pre_cls_w && m->pre_cls_b);
}

static inline int bert_model_has_token_head(const bert_model *m)
{
    return m->tok_w && m->tok_b;
}

static inline int bert_model_has_qa_head(const bert_model *m)
{
    return m->qa_w && m->qa_b;
}

#endif
