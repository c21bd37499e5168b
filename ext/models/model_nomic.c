/*
 * model_nomic.c - the tensor names of nomic-bert (nomic-ai's
 * modeling_hf_nomic_bert.py), with or without the "bert." prefix of
 * NomicBertForPreTraining and NomicBertForSequenceClassification:
 * embeddings (word, token type) and emb_ln; per layer the fused
 * attn.Wqkv, attn.out_proj, norm1, the gated MLP's mlp.fc11 (up), mlp.fc12
 * (gate) and mlp.fc2, norm2; the pooler; the masked-LM head
 * cls.predictions (transform.dense, transform.layer_norm, the decoder tied
 * to the word embeddings) and the classifier on the pooler.  Biases the
 * checkpoint leaves out (qkv_proj_bias, mlp_fc1_bias, mlp_fc2_bias false;
 * the head's dense and decoder follow mlp_fc1_bias) point at zeros.
 */
#include "model_bind.h"

#include <stdio.h>

static int bind_layer(binder *b, bert_layer_weights *w, int l, const bert_config *c)
{
    const int H = c->hidden_size, I = c->intermediate_size;
    char name[160];
    const struct {
        bert_matrix *w;
        const float **bias;
        const char *name;
        int rows, cols;
        const char *why, *bias_why;
    } t[] = {
        {&w->q_w, &w->q_b, "attn.Wqkv", 3 * H, H, "3 n_embd x n_embd", "3 n_embd"},
        {&w->out_w, &w->out_b, "attn.out_proj", H, H, "n_embd x n_embd", "n_embd"},
        {&w->ff_in_w, &w->ff_in_b, "mlp.fc11", I, H, "n_inner x n_embd", "n_inner"},
        {&w->ff_gate_w, &w->ff_gate_b, "mlp.fc12", I, H, "n_inner x n_embd", "n_inner"},
        {&w->ff_out_w, &w->ff_out_b, "mlp.fc2", H, I, "n_embd x n_inner", "n_embd"},
    };
    for (size_t k = 0; k < sizeof t / sizeof *t; k++) {
        snprintf(name, sizeof name, "encoder.layers.%d.%s.weight", l, t[k].name);
        if (bert_bind_matrix(b, t[k].w, name, t[k].rows, t[k].cols, t[k].why) != 0) return -1;
        snprintf(name, sizeof name, "encoder.layers.%d.%s.bias", l, t[k].name);
        if (bert_bind_bias_or_zeros(b, t[k].bias, name, 1, t[k].rows, t[k].bias_why) != 0) return -1;
    }
    const struct {
        const float **dst;
        const char *name;
    } norms[] = {
        {&w->attn_ln_w, "norm1.weight"}, {&w->attn_ln_b, "norm1.bias"},
        {&w->ff_ln_w, "norm2.weight"}, {&w->ff_ln_b, "norm2.bias"},
    };
    for (size_t k = 0; k < sizeof norms / sizeof *norms; k++) {
        snprintf(name, sizeof name, "encoder.layers.%d.%s", l, norms[k].name);
        if (bert_bind(b, norms[k].dst, name, 1, 1, H, 0, "n_embd")) return -1;
    }
    return 0;
}

/* NomicBertPreTrainingHeads: transform.dense (SiLU for swiglu, else GELU),
 * transform.layer_norm, the decoder (tied when absent) and its bias. */
static int bind_mlm(binder *b, bert_model *m)
{
    const int H = m->cfg.hidden_size, V = m->cfg.vocab_size;
    if (bert_bind(b, &m->mlm_dense_w, "cls.predictions.transform.dense.weight", 0, 1, H, H, "n_embd x n_embd") ||
        bert_bind_bias_or_zeros(b, &m->mlm_dense_b, "cls.predictions.transform.dense.bias", 0, H, "n_embd") ||
        bert_bind(b, &m->mlm_ln_w, "cls.predictions.transform.layer_norm.weight", 0, 1, H, 0, "n_embd") ||
        bert_bind(b, &m->mlm_ln_b, "cls.predictions.transform.layer_norm.bias", 0, 1, H, 0, "n_embd") ||
        bert_bind_bias_or_zeros(b, &m->mlm_bias, "cls.predictions.decoder.bias", 0, V, "vocab_size") ||
        bert_bind(b, &m->mlm_decoder_w, "cls.predictions.decoder.weight", 0, 0, V, H, "vocab_size x n_embd") < 0)
        return -1;
    m->mlm_act = m->cfg.fam.head_act;
    return 0;
}

int bert_bind_nomic(binder *b, bert_model *m)
{
    const bert_config *c = &m->cfg;
    const int H = c->hidden_size;
    b->prefix = bert_safetensors_find(b->st, "bert.embeddings.word_embeddings.weight") ? "bert." : "";
    if (bert_bind(b, &m->word_emb, "embeddings.word_embeddings.weight", 1, 1, c->vocab_size, H,
                  "vocab_size (padded to pad_vocab_size_multiple) x n_embd") ||
        (c->type_vocab_size > 0 && bert_bind(b, &m->type_emb, "embeddings.token_type_embeddings.weight", 1, 1,
                                             c->type_vocab_size, H, "type_vocab_size x n_embd")) ||
        bert_bind(b, &m->emb_ln_w, "emb_ln.weight", 1, 1, H, 0, "n_embd") ||
        bert_bind(b, &m->emb_ln_b, "emb_ln.bias", 1, 1, H, 0, "n_embd"))
        return -1;
    for (int l = 0; l < c->num_layers; l++)
        if (bind_layer(b, &m->layers[l], l, c) != 0) return -1;
    if (bert_bind_pooler(b, m) != 0) return -1;
    static const char *const mlm[] = {"cls.predictions.transform.dense.weight",
                                      "cls.predictions.transform.layer_norm.weight", NULL};
    if (bert_bind_all_present(b, mlm, 0) && bind_mlm(b, m) != 0) return -1;
    static const char *const cls[] = {"classifier.weight", "classifier.bias", NULL};
    /* Bound tensors are only pointed at once all are found (bert_bind_materialize): look the pooler up. */
    if (bert_bind_lookup(b, "pooler.dense.weight", 1) && bert_bind_all_present(b, cls, 0))
        return bert_bind_label_rows(b, m, cls[0], cls[1], &m->cls_w, &m->cls_b);
    return 0;
}
