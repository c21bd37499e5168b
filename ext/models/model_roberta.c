/*
 * model_roberta.c - the tensor names of RoBERTa and XLM-RoBERTa
 * (modeling_roberta.py, modeling_xlm_roberta.py: the same module under
 * another name).  The encoder is BERT's, with its names, under the
 * "roberta." prefix that the RobertaFor* classes add; what differs is the
 * heads: RobertaLMHead (lm_head.*: dense, GELU, layer_norm, a decoder tied
 * to the word embeddings) and RobertaClassificationHead (classifier.dense,
 * tanh, classifier.out_proj on <s>).  MPNet names its heads the same way.
 */
#include "model_bind.h"


/* RobertaLMHead / MPNetLMHead. */
static int bind_lm_head(binder *b, bert_model *m)
{
    /* The bias is lm_head.bias, which save_pretrained may also write as
     * the decoder's (the two are one parameter); the decoder is absent
     * when tied to the word embeddings. */
    static const char *const lm[7] = {"lm_head.dense.weight", "lm_head.dense.bias", "lm_head.layer_norm.weight",
                                      "lm_head.layer_norm.bias", "lm_head.bias", "lm_head.decoder.bias",
                                      "lm_head.decoder.weight"};
    int bound = bert_bind_mlm_head(b, m, lm);
    if (bound <= 0) return bound;
    /* The head calls gelu() itself, whatever config.hidden_act says. */
    m->mlm_act = BERT_ACT_GELU;
    return 0;
}

/* RobertaClassificationHead / MPNetClassificationHead on the first token,
 * or RobertaForTokenClassification's classifier on every token. */
int bert_bind_dense_classifier(binder *b, bert_model *m)
{
    const int H = m->cfg.hidden_size;
    static const char *const seq[] = {"classifier.dense.weight", "classifier.dense.bias",
                                      "classifier.out_proj.weight", "classifier.out_proj.bias", NULL};
    static const char *const tok[] = {"classifier.weight", "classifier.bias", NULL};
    if (bert_bind_all_present(b, seq, 0)) {
        if (bert_bind(b, &m->pre_cls_w, seq[0], 0, 1, H, H, "hidden_size x hidden_size") ||
            bert_bind(b, &m->pre_cls_b, seq[1], 0, 1, H, 0, "hidden_size"))
            return -1;
        return bert_bind_label_rows(b, m, seq[2], seq[3], &m->cls_w, &m->cls_b);
    }
    if (bert_bind_all_present(b, tok, 0)) return bert_bind_label_rows(b, m, tok[0], tok[1], &m->tok_w, &m->tok_b);
    return 0;
}

int bert_bind_roberta_heads(binder *b, bert_model *m)
{
    return bert_bind_pooler(b, m) || bind_lm_head(b, m) || bert_bind_dense_classifier(b, m) || bert_bind_qa(b, m) ? -1 : 0;
}

int bert_bind_roberta(binder *b, bert_model *m)
{
    const bert_config *c = &m->cfg;
    b->prefix = bert_safetensors_find(b->st, "roberta.embeddings.word_embeddings.weight") ? "roberta." : "";
    if (bert_bind_embeddings(b, m, 1) != 0) return -1;
    for (int l = 0; l < c->num_layers; l++)
        if (bert_bind_layer(b, &m->layers[l], l, c, "encoder.layer.%d.", bert_layer_names) != 0) return -1;
    return bert_bind_roberta_heads(b, m);
}
