/*
 * model_bert.c - the tensor names of BERT (modeling_bert.py) and DistilBERT
 * (modeling_distilbert.py): BertModel's, with or without the "bert." prefix
 * that the BertFor* classes add (DistilBERT's under "distilbert."), and
 * their heads: masked LM (cls.*, DistilBERT's vocab_*) and next-sentence prediction (cls.*), sequence
 * classification (classifier.* on the pooler, or DistilBERT's
 * pre_classifier), token classification and question answering; and
 * JinaBERT's (bind_jina), BERT's but for its positions and MLP.
 */
#include "model_bind.h"

#include <stdio.h>
#include <string.h>

const char *const bert_layer_names[16] = {
    "attention.self.query.weight", "attention.self.query.bias",
    "attention.self.key.weight", "attention.self.key.bias",
    "attention.self.value.weight", "attention.self.value.bias",
    "attention.output.dense.weight", "attention.output.dense.bias",
    "attention.output.LayerNorm.weight", "attention.output.LayerNorm.bias",
    "intermediate.dense.weight", "intermediate.dense.bias",
    "output.dense.weight", "output.dense.bias",
    "output.LayerNorm.weight", "output.LayerNorm.bias",
};

/* DistilBERT's names for the same post-LayerNorm block. */
const char *const bert_distil_layer_names[16] = {
    "attention.q_lin.weight", "attention.q_lin.bias",
    "attention.k_lin.weight", "attention.k_lin.bias",
    "attention.v_lin.weight", "attention.v_lin.bias",
    "attention.out_lin.weight", "attention.out_lin.bias",
    "sa_layer_norm.weight", "sa_layer_norm.bias",
    "ffn.lin1.weight", "ffn.lin1.bias",
    "ffn.lin2.weight", "ffn.lin2.bias",
    "output_layer_norm.weight", "output_layer_norm.bias",
};

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
    if (m->cfg.family == BERT_FAMILY_DISTILBERT) return !bert_bind_lookup(b, "pre_classifier.weight", 0);
    return !bert_bind_lookup(b, "pooler.dense.weight", 1);
}

/* BertForSequenceClassification's classifier on the pooler's output, or
 * DistilBertForSequenceClassification's pre_classifier + classifier; or,
 * when the classifier runs per token, the token-classification head. */
static int bind_classifier(binder *b, bert_model *m)
{
    const int H = m->cfg.hidden_size;
    const int distil = m->cfg.family == BERT_FAMILY_DISTILBERT;
    static const char *const cls[] = {"classifier.weight", "classifier.bias", NULL};
    if (!bert_bind_all_present(b, cls, 0)) return 0;
    if (classifier_per_token(b, m)) return bert_bind_label_rows(b, m, cls[0], cls[1], &m->tok_w, &m->tok_b);
    static const char *const pooler[] = {"pooler.dense.weight", "pooler.dense.bias", NULL};
    static const char *const pre[] = {"pre_classifier.weight", "pre_classifier.bias", NULL};
    if (distil ? !bert_bind_all_present(b, pre, 0) : !bert_bind_all_present(b, pooler, 1)) return 0;
    if (bert_bind_label_rows(b, m, cls[0], cls[1], &m->cls_w, &m->cls_b)) return -1;
    if (distil && (bert_bind(b, &m->pre_cls_w, pre[0], 0, 1, H, H, "dim x dim") ||
                   bert_bind(b, &m->pre_cls_b, pre[1], 0, 1, H, 0, "dim")))
        return -1;
    return 0;
}

/* BertForMaskedLM / BertForPreTraining: cls.predictions, its decoder tied to
 * the word embeddings when absent, and cls.seq_relationship. */
static int bind_pretraining_heads(binder *b, bert_model *m)
{
    const int H = m->cfg.hidden_size;
    /* The output bias may be saved under the decoder's name too; the
     * decoder is absent when tied to the word embeddings (save_pretrained
     * drops it). */
    static const char *const mlm[7] = {
        "cls.predictions.transform.dense.weight", "cls.predictions.transform.dense.bias",
        "cls.predictions.transform.LayerNorm.weight", "cls.predictions.transform.LayerNorm.bias",
        "cls.predictions.bias", "cls.predictions.decoder.bias", "cls.predictions.decoder.weight"};
    int bound = bert_bind_mlm_head(b, m, mlm);
    if (bound < 0) return -1;
    /* BertPredictionHeadTransform uses config.hidden_act. */
    if (bound) m->mlm_act = m->cfg.hidden_act;
    static const char *const nsp[] = {"cls.seq_relationship.weight", "cls.seq_relationship.bias", NULL};
    if (bert_bind_all_present(b, nsp, 0) &&
        (bert_bind(b, &m->nsp_w, nsp[0], 0, 1, 2, H, "2 x hidden_size") ||
         bert_bind(b, &m->nsp_b, nsp[1], 0, 1, 2, 0, "2")))
        return -1;
    return 0;
}

/* DistilBertForMaskedLM: vocab_transform, the activation, vocab_layer_norm
 * and vocab_projector, tied to the word embeddings when its weight is absent. */
static int bind_distil_mlm_head(binder *b, bert_model *m)
{
    static const char *const mlm[7] = {
        "vocab_transform.weight", "vocab_transform.bias", "vocab_layer_norm.weight", "vocab_layer_norm.bias",
        "vocab_projector.bias", "vocab_projector.bias", "vocab_projector.weight"};
    int bound = bert_bind_mlm_head(b, m, mlm);
    if (bound > 0) m->mlm_act = m->cfg.hidden_act;   /* get_activation(config.activation) */
    return bound < 0 ? -1 : 0;
}

/* JinaBERT's layer (jina-bert-implementation, modeling_bert.py: JinaBertLayer):
 * BertAttention's ten tensors under BERT's names, then JinaBertGLUMLP's
 * mlp.gated_layers [2 intermediate_size x hidden_size] without bias, mlp.wo
 * and mlp.layernorm (after the residual).  The missing bias points at zeros. */
static int bind_jina_layer(binder *b, bert_layer_weights *w, int l, const bert_config *c)
{
    const int H = c->hidden_size, I = c->intermediate_size;
    static const char *const hh = "hidden_size x hidden_size", *const h = "hidden_size";
    bert_matrix *mats[] = {&w->q_w, &w->k_w, &w->v_w, &w->out_w};
    const float **biases[] = {&w->q_b, &w->k_b, &w->v_b, &w->out_b};
    char name[160];
    for (int k = 0; k < 4; k++) {
        snprintf(name, sizeof name, "encoder.layer.%d.%s", l, bert_layer_names[2 * k]);
        if (bert_bind_matrix(b, mats[k], name, H, H, hh)) return -1;
        snprintf(name, sizeof name, "encoder.layer.%d.%s", l, bert_layer_names[2 * k + 1]);
        if (bert_bind(b, biases[k], name, 1, 1, H, 0, h)) return -1;
    }
    const struct {
        const float **dst;
        const char *name;
    } norms[] = {
        {&w->attn_ln_w, "attention.output.LayerNorm.weight"}, {&w->attn_ln_b, "attention.output.LayerNorm.bias"},
        {&w->ff_out_b, "mlp.wo.bias"}, {&w->ff_ln_w, "mlp.layernorm.weight"}, {&w->ff_ln_b, "mlp.layernorm.bias"},
    };
    for (size_t k = 0; k < sizeof norms / sizeof *norms; k++) {
        snprintf(name, sizeof name, "encoder.layer.%d.%s", l, norms[k].name);
        if (bert_bind(b, norms[k].dst, name, 1, 1, H, 0, h)) return -1;
    }
    snprintf(name, sizeof name, "encoder.layer.%d.mlp.gated_layers.weight", l);
    if (bert_bind_matrix(b, &w->ff_in_w, name, 2 * I, H, "2 intermediate_size x hidden_size")) return -1;
    w->ff_in_b = b->zeros;
    snprintf(name, sizeof name, "encoder.layer.%d.mlp.wo.weight", l);
    return bert_bind_matrix(b, &w->ff_out_w, name, H, I, "hidden_size x intermediate_size");
}

/* JinaBertModel: BERT's embeddings without position_embeddings (ALiBi
 * instead), its layers, the pooler, and BERT's heads (JinaBertForMaskedLM's
 * cls.predictions, JinaBertForSequenceClassification's classifier on the
 * pooler), with or without the "bert." prefix. */
static int bind_jina(binder *b, bert_model *m)
{
    const bert_config *c = &m->cfg;
    const int H = c->hidden_size;
    if (bert_bind(b, &m->word_emb, "embeddings.word_embeddings.weight", 1, 1, c->vocab_size, H,
                  "vocab_size x hidden_size") ||
        bert_bind(b, &m->type_emb, "embeddings.token_type_embeddings.weight", 1, 1, c->type_vocab_size, H,
                  "type_vocab_size x hidden_size") ||
        bert_bind(b, &m->emb_ln_w, "embeddings.LayerNorm.weight", 1, 1, H, 0, "hidden_size") ||
        bert_bind(b, &m->emb_ln_b, "embeddings.LayerNorm.bias", 1, 1, H, 0, "hidden_size"))
        return -1;
    for (int l = 0; l < c->num_layers; l++)
        if (bind_jina_layer(b, &m->layers[l], l, c) != 0) return -1;
    if (bert_bind_pooler(b, m) != 0 || bind_pretraining_heads(b, m) != 0) return -1;
    return bind_classifier(b, m) || bert_bind_qa(b, m) ? -1 : 0;
}

int bert_bind_bert(binder *b, bert_model *m)
{
    const bert_config *c = &m->cfg;
    const int distil = c->family == BERT_FAMILY_DISTILBERT;
    b->prefix = bert_safetensors_find(b->st, "bert.embeddings.word_embeddings.weight") ? "bert."
              : bert_safetensors_find(b->st, "distilbert.embeddings.word_embeddings.weight") ? "distilbert." : "";
    if (c->family == BERT_FAMILY_JINA_BERT) return bind_jina(b, m);
    /* DistilBERT has no segment embeddings. */
    if (bert_bind_embeddings(b, m, !distil) != 0) return -1;
    for (int l = 0; l < c->num_layers; l++)
        if (bert_bind_layer(b, &m->layers[l], l, c, distil ? "transformer.layer.%d." : "encoder.layer.%d.",
                            distil ? bert_distil_layer_names : bert_layer_names) != 0)
            return -1;
    if (!distil && (bert_bind_pooler(b, m) != 0 || bind_pretraining_heads(b, m) != 0)) return -1;
    if (distil && bind_distil_mlm_head(b, m) != 0) return -1;
    return bind_classifier(b, m) || bert_bind_qa(b, m) ? -1 : 0;
}
