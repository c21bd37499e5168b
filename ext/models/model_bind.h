/*
 * model_bind.h - binding the tensors of a mapped model.safetensors to a
 * bert_model: the binder every family's file uses (model_bind.c), one
 * binding per architecture (model_bert.c, model_roberta.c, model_mpnet.c,
 * model_electra.c, model_modernbert.c, model_deberta.c, model_nomic.c,
 * model_gte.c)
 * and the conversion of what was bound (model_widen.c).  Internal to the
 * loader; model.h is the interface.
 */
#ifndef BERT_MODEL_BIND_H
#define BERT_MODEL_BIND_H

#include "model_dir.h"
#include "safetensors.h"

/* What a loaded model owns besides its struct. */
typedef struct {
    st_file *st;          /* NULL when every tensor was converted */
    float *converted;     /* one block for every tensor converted to float32 */
    float *dense;         /* the Dense module's weight and bias (model_dense.c), or NULL */
    void *reduced;        /* one block for every bfloat16 / int8 projection made at load,
                           * or at float32 for every projection packed at load */
    float *zeros;         /* ModernBERT, JinaBERT, nomic-bert, gte: the biases a checkpoint leaves out, or NULL */
} model_priv;

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
    const char *prefix;    /* "" or the base model's prefix ("bert.", "roberta.", ...) */
    binding *list;
    int count;
    char name[256];        /* the name last looked up, for messages */
    char **err;
    const float *zeros;    /* ModernBERT: at least max(3 H, 2 I, vocab) zeros for the biases it lacks */
} binder;

/* Finds a tensor; `in_model` puts the base model's prefix before the name.
 * LayerNorm parameters are also tried under their old names gamma/beta. */
const st_tensor *bert_bind_lookup(binder *b, const char *name, int in_model);

/* Binds *dst to tensor `name` of shape [d0] (d1 == 0) or [d0 x d1],
 * checking its dtype and shape (`why` says which config.json sizes imply
 * it).  A missing tensor is an error when `required`, else leaves *dst
 * alone and returns 1.  0, 1, or -1 with *b->err. */
int bert_bind(binder *b, const float **dst, const char *name, int in_model, int required, int d0, int d1,
              const char *why);

/* Binds a bias [d0], or points *dst at the binder's zeros where the
 * checkpoint has none (families whose config turns biases off).  0 or -1. */
int bert_bind_bias_or_zeros(binder *b, const float **dst, const char *name, int in_model, int d0, const char *why);

/* Binds a required projection weight [d0 x d1], held at the model's precision. */
int bert_bind_matrix(binder *b, bert_matrix *dst, const char *name, int d0, int d1, const char *why);

/* Whether every name of the NULL-terminated list is in the file: optional
 * groups (heads) are bound whole or not at all. */
int bert_bind_all_present(binder *b, const char *const *names, int in_model);

/* The sixteen tensors of one encoder layer, in the order of
 * bert_layer_weights' fields (query, key, value, attention output, its
 * LayerNorm, intermediate, output, its LayerNorm: weight then bias each),
 * as `layer_fmt` (e.g. "encoder.layer.%d.") followed by names[k]. */
int bert_bind_layer(binder *b, bert_layer_weights *w, int l, const bert_config *c, const char *layer_fmt,
                    const char *const names[16]);

/* BertLayer's names (modeling_bert.py), which RoBERTa and XLM-RoBERTa keep. */
extern const char *const bert_layer_names[16];
/* DistilBERT's (TransformerBlock) and MPNet's (MPNetLayer) for the same
 * sixteen; the saver (model_save.c) writes them back under these names. */
extern const char *const bert_distil_layer_names[16];
extern const char *const bert_mpnet_layer_names[16];

/* The embeddings every family has: word, position, LayerNorm; segment
 * embeddings when `with_types`. */
int bert_bind_embeddings(binder *b, bert_model *m, int with_types);

/* The base model's pooler (pooler.dense.*), when the file has it. */
int bert_bind_pooler(binder *b, bert_model *m);

/* A classifier whose rows are config.json's labels (or, when it names none,
 * the tensor's rows): binds weight and bias to *w and *bias. */
int bert_bind_label_rows(binder *b, bert_model *m, const char *weight, const char *bias, const float **w,
                         const float **bias_dst);

/* A masked-LM head (BertLMPredictionHead, RobertaLMHead, MPNetLMHead)
 * under its family's names: names[0..3] the transform's dense weight and
 * bias and LayerNorm weight and bias, names[4] and names[5] the two names
 * save_pretrained may give the output bias, names[6] the decoder weight
 * (absent when tied to the word embeddings).  Bound whole or not at all:
 * 1 bound, 0 absent, or -1 with *b->err.  The caller sets mlm_act. */
int bert_bind_mlm_head(binder *b, bert_model *m, const char *const names[7]);

/* The question-answering head (qa_outputs.*), when present. */
int bert_bind_qa(binder *b, bert_model *m);

/* Per architecture: the embeddings, the layers and whichever heads the
 * file holds.  0, or -1 with *b->err. */
int bert_bind_bert(binder *b, bert_model *m);       /* BERT and DistilBERT */
int bert_bind_roberta(binder *b, bert_model *m);    /* RoBERTa and XLM-RoBERTa */
int bert_bind_mpnet(binder *b, bert_model *m);
int bert_bind_electra(binder *b, bert_model *m);
int bert_bind_modernbert(binder *b, bert_model *m);
int bert_bind_deberta(binder *b, bert_model *m);
int bert_bind_nomic(binder *b, bert_model *m);      /* nomic-bert (model_nomic.c) */
int bert_bind_gte(binder *b, bert_model *m);        /* gte's "new" architecture (model_gte.c) */

/* The heads RoBERTa and MPNet name alike (lm_head.*, classifier.dense and
 * classifier.out_proj, or classifier.* per token, qa_outputs.*) and the
 * base model's pooler. */
int bert_bind_roberta_heads(binder *b, bert_model *m);

/* classifier.dense + classifier.out_proj on the first token (RoBERTa's,
 * MPNet's and ELECTRA's sequence heads, whose activations differ), or
 * classifier.* on every token. */
int bert_bind_dense_classifier(binder *b, bert_model *m);

/* Points every bound weight at its data (model_widen.c): float32 in place,
 * else converted into one block; the projections at a reduced precision
 * into another.  0, or -1 with *b->err. */
int bert_bind_materialize(binder *b, model_priv *priv, bert_model *m);

/* A float32, float16 or bfloat16 tensor's t->count values as float32. */
void bert_tensor_widen(const st_tensor *t, float *out);

#endif
