/*
 * model_gte.c - the tensor names of Alibaba's gte "new" architecture
 * (Alibaba-NLP/new-impl's modeling.py), with or without the "new." prefix
 * its NewFor* classes add: embeddings (word, token type when
 * type_vocab_size > 0, LayerNorm); per layer attention.qkv_proj (fused),
 * attention.o_proj, attn_ln, mlp.up_gate_proj (up then gate, without
 * bias), mlp.down_proj, mlp_ln; the pooler; NewForMaskedLM's lm_head
 * (dense, norm, decoder tied to the word embeddings when absent),
 * NewForSequenceClassification's classifier on the pooler,
 * NewForTokenClassification's classifier per token and
 * NewForQuestionAnswering's qa_outputs.
 */
#include "model_bind.h"

#include <stdio.h>
#include <string.h>

static int bind_layer(binder *b, bert_layer_weights *w, int l, const bert_config *c)
{
    const int H = c->hidden_size, I = c->intermediate_size;
    char name[160];
    snprintf(name, sizeof name, "encoder.layer.%d.mlp.up_gate_proj.weight", l);
    if (bert_bind_matrix(b, &w->ff_in_w, name, 2 * I, H, "2 intermediate_size x hidden_size")) return -1;
    w->ff_in_b = b->zeros;
    const struct {
        bert_matrix *w;
        const float **bias;
        const char *name;
        int rows, cols;
        const char *why, *bias_why;
    } t[] = {
        {&w->q_w, &w->q_b, "attention.qkv_proj", 3 * H, H, "3 hidden_size x hidden_size", "3 hidden_size"},
        {&w->out_w, &w->out_b, "attention.o_proj", H, H, "hidden_size x hidden_size", "hidden_size"},
        {&w->ff_out_w, &w->ff_out_b, "mlp.down_proj", H, I, "hidden_size x intermediate_size", "hidden_size"},
    };
    for (size_t k = 0; k < sizeof t / sizeof *t; k++) {
        snprintf(name, sizeof name, "encoder.layer.%d.%s.weight", l, t[k].name);
        if (bert_bind_matrix(b, t[k].w, name, t[k].rows, t[k].cols, t[k].why) != 0) return -1;
        snprintf(name, sizeof name, "encoder.layer.%d.%s.bias", l, t[k].name);
        if (bert_bind(b, t[k].bias, name, 1, 1, t[k].rows, 0, t[k].bias_why) != 0) return -1;
    }
    const struct {
        const float **dst;
        const char *name;
    } norms[] = {
        {&w->attn_ln_w, "attn_ln.weight"}, {&w->attn_ln_b, "attn_ln.bias"},
        {&w->ff_ln_w, "mlp_ln.weight"}, {&w->ff_ln_b, "mlp_ln.bias"},
    };
    for (size_t k = 0; k < sizeof norms / sizeof *norms; k++) {
        snprintf(name, sizeof name, "encoder.layer.%d.%s", l, norms[k].name);
        if (bert_bind(b, norms[k].dst, name, 1, 1, H, 0, "hidden_size")) return -1;
    }
    return 0;
}

/* classifier.*: per token when config.json's architectures say
 * NewForTokenClassification, or when there is no pooler to read; else on
 * the pooler. */
static int bind_classifier(binder *b, bert_model *m)
{
    static const char *const cls[] = {"classifier.weight", "classifier.bias", NULL};
    if (!bert_bind_all_present(b, cls, 0)) return 0;
    const char *arch = m->head.architecture_task;
    if ((arch && strcmp(arch, "token_classification") == 0) || !bert_bind_lookup(b, "pooler.dense.weight", 1))
        return bert_bind_label_rows(b, m, cls[0], cls[1], &m->tok_w, &m->tok_b);
    return bert_bind_label_rows(b, m, cls[0], cls[1], &m->cls_w, &m->cls_b);
}

int bert_bind_gte(binder *b, bert_model *m)
{
    const bert_config *c = &m->cfg;
    const int H = c->hidden_size;
    b->prefix = bert_safetensors_find(b->st, "new.embeddings.word_embeddings.weight") ? "new." : "";
    if (bert_bind(b, &m->word_emb, "embeddings.word_embeddings.weight", 1, 1, c->vocab_size, H,
                  "vocab_size x hidden_size") ||
        (c->type_vocab_size > 0 && bert_bind(b, &m->type_emb, "embeddings.token_type_embeddings.weight", 1, 1,
                                             c->type_vocab_size, H, "type_vocab_size x hidden_size")) ||
        bert_bind(b, &m->emb_ln_w, "embeddings.LayerNorm.weight", 1, 1, H, 0, "hidden_size") ||
        bert_bind(b, &m->emb_ln_b, "embeddings.LayerNorm.bias", 1, 1, H, 0, "hidden_size"))
        return -1;
    for (int l = 0; l < c->num_layers; l++)
        if (bind_layer(b, &m->layers[l], l, c) != 0) return -1;
    if (bert_bind_pooler(b, m) != 0) return -1;
    /* NewLMPredictionHead: dense, hidden_act, norm, decoder with its bias. */
    static const char *const mlm[7] = {"lm_head.dense.weight", "lm_head.dense.bias", "lm_head.norm.weight",
                                       "lm_head.norm.bias", "lm_head.decoder.bias", "lm_head.decoder.bias",
                                       "lm_head.decoder.weight"};
    int bound = bert_bind_mlm_head(b, m, mlm);
    if (bound < 0) return -1;
    if (bound) m->mlm_act = c->fam.head_act;
    return bind_classifier(b, m) || bert_bind_qa(b, m) ? -1 : 0;
}
