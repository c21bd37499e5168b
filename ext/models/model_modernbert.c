/*
 * model_modernbert.c - the tensor names of ModernBERT
 * (modeling_modernbert.py), under the "model." prefix that the
 * ModernBertFor* classes add: tok_embeddings and their norm, per layer
 * attn_norm (absent in layer 0, where it is the identity), the fused
 * attn.Wqkv and attn.Wo, mlp_norm, the GeGLU's mlp.Wi (input and gate
 * halves) and mlp.Wo, then final_norm.  Every linear layer and norm may
 * lack its bias (attention_bias, mlp_bias, norm_bias false): those point at
 * zeros.  The heads share ModernBertPredictionHead (head.dense, the
 * classifier_activation, head.norm): ForMaskedLM's decoder (tied to the
 * embeddings, decoder.bias), and a classifier.* that config.json's
 * architectures name sequence classification (on the cls token or the
 * mean), token classification or question answering (two rows, start and
 * end).
 */
#include "model_bind.h"

#include <stdio.h>
#include <string.h>

/* A LayerNorm `base` (".weight", ".bias") of hidden_size. */
static int bind_norm(binder *b, const float **w, const float **bias, const char *base, int in_model, int H)
{
    char name[160];
    snprintf(name, sizeof name, "%s.weight", base);
    if (bert_bind(b, w, name, in_model, 1, H, 0, "hidden_size") != 0) return -1;
    snprintf(name, sizeof name, "%s.bias", base);
    return bert_bind_bias_or_zeros(b, bias, name, in_model, H, "hidden_size");
}

static int bind_layer(binder *b, bert_layer_weights *w, int l, const bert_config *c)
{
    const int H = c->hidden_size, I = c->intermediate_size;
    char name[160], base[64];
    if (l > 0) {
        snprintf(base, sizeof base, "layers.%d.attn_norm", l);
        if (bind_norm(b, &w->attn_ln_w, &w->attn_ln_b, base, 1, H) != 0) return -1;
    }
    snprintf(base, sizeof base, "layers.%d.mlp_norm", l);
    if (bind_norm(b, &w->ff_ln_w, &w->ff_ln_b, base, 1, H) != 0) return -1;
    const struct {
        bert_matrix *w;
        const float **bias;
        const char *name;
        int rows, cols;
        const char *why, *bias_why;
    } t[] = {
        {&w->q_w, &w->q_b, "attn.Wqkv", 3 * H, H, "3 hidden_size x hidden_size", "3 hidden_size"},
        {&w->out_w, &w->out_b, "attn.Wo", H, H, "hidden_size x hidden_size", "hidden_size"},
        {&w->ff_in_w, &w->ff_in_b, "mlp.Wi", 2 * I, H, "2 intermediate_size x hidden_size", "2 intermediate_size"},
        {&w->ff_out_w, &w->ff_out_b, "mlp.Wo", H, I, "hidden_size x intermediate_size", "hidden_size"},
    };
    for (size_t k = 0; k < sizeof t / sizeof *t; k++) {
        snprintf(name, sizeof name, "layers.%d.%s.weight", l, t[k].name);
        if (bert_bind_matrix(b, t[k].w, name, t[k].rows, t[k].cols, t[k].why) != 0) return -1;
        snprintf(name, sizeof name, "layers.%d.%s.bias", l, t[k].name);
        if (bert_bind_bias_or_zeros(b, t[k].bias, name, 1, t[k].rows, t[k].bias_why) != 0) return -1;
    }
    return 0;
}

/* ModernBertForMaskedLM: head, then decoder (tied to tok_embeddings when
 * absent) with decoder.bias (zeros when decoder_bias is false). */
static int bind_mlm(binder *b, bert_model *m)
{
    const int H = m->cfg.hidden_size, V = m->cfg.vocab_size;
    if (bert_bind(b, &m->mlm_dense_w, "head.dense.weight", 0, 1, H, H, "hidden_size x hidden_size") ||
        bert_bind_bias_or_zeros(b, &m->mlm_dense_b, "head.dense.bias", 0, H, "hidden_size") ||
        bind_norm(b, &m->mlm_ln_w, &m->mlm_ln_b, "head.norm", 0, H) ||
        bert_bind_bias_or_zeros(b, &m->mlm_bias, "decoder.bias", 0, V, "vocab_size") ||
        bert_bind(b, &m->mlm_decoder_w, "decoder.weight", 0, 0, V, H, "vocab_size x hidden_size") < 0)
        return -1;
    /* Tied when absent: the loader points the decoder at the embeddings. */
    m->mlm_act = m->cfg.fam.head_act;
    return 0;
}

/* A classifier after the head: which task, config.json's architectures say
 * (ModernBertForQuestionAnswering names its start/end layer classifier too). */
static int bind_classifier(binder *b, bert_model *m)
{
    const int H = m->cfg.hidden_size;
    if (bert_bind(b, &m->pre_cls_w, "head.dense.weight", 0, 1, H, H, "hidden_size x hidden_size") ||
        bert_bind_bias_or_zeros(b, &m->pre_cls_b, "head.dense.bias", 0, H, "hidden_size") ||
        bind_norm(b, &m->head_norm_w, &m->head_norm_b, "head.norm", 0, H))
        return -1;
    const char *arch = m->head.architecture_task;
    if (arch && strcmp(arch, "question_answering") == 0)
        return bert_bind(b, &m->qa_w, "classifier.weight", 0, 1, 2, H, "start and end logits, x hidden_size") ||
                       bert_bind(b, &m->qa_b, "classifier.bias", 0, 1, 2, 0, "start and end logits")
                   ? -1
                   : 0;
    if (arch && strcmp(arch, "token_classification") == 0)
        return bert_bind_label_rows(b, m, "classifier.weight", "classifier.bias", &m->tok_w, &m->tok_b);
    return bert_bind_label_rows(b, m, "classifier.weight", "classifier.bias", &m->cls_w, &m->cls_b);
}

int bert_bind_modernbert(binder *b, bert_model *m)
{
    const bert_config *c = &m->cfg;
    const int H = c->hidden_size;
    b->prefix = bert_safetensors_find(b->st, "model.embeddings.tok_embeddings.weight") ? "model." : "";
    if (bert_bind(b, &m->word_emb, "embeddings.tok_embeddings.weight", 1, 1, c->vocab_size, H,
                  "vocab_size x hidden_size") ||
        bind_norm(b, &m->emb_ln_w, &m->emb_ln_b, "embeddings.norm", 1, H))
        return -1;
    for (int l = 0; l < c->num_layers; l++)
        if (bind_layer(b, &m->layers[l], l, c) != 0) return -1;
    if (bind_norm(b, &m->final_norm_w, &m->final_norm_b, "final_norm", 1, H) != 0) return -1;
    static const char *const head[] = {"head.dense.weight", "head.norm.weight", NULL};
    static const char *const cls[] = {"classifier.weight", "classifier.bias", NULL};
    if (!bert_bind_all_present(b, head, 0)) return 0;
    return bert_bind_all_present(b, cls, 0) ? bind_classifier(b, m) : bind_mlm(b, m);
}
