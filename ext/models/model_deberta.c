/*
 * model_deberta.c - the tensor names of DeBERTa-v2 and v3
 * (modeling_deberta_v2.py), under the "deberta." prefix that the
 * DebertaV2For* classes add: the embeddings (word, absolute positions only
 * where position_biased_input, segments where type_vocab_size > 0,
 * embed_proj without bias where embedding_size differs, LayerNorm), BERT's
 * layer layout with query_proj, key_proj and value_proj, the relative
 * position embeddings (encoder.rel_embeddings) and their LayerNorm
 * (encoder.LayerNorm), and the heads: ContextPooler (pooler.dense) and
 * classifier for sequence classification, classifier per token, qa_outputs.
 * The masked-LM head under either name transformers gives it:
 * lm_predictions.lm_head.* (DebertaV2LMPredictionHead, as Microsoft's
 * checkpoints have it: dense, hidden_act, LayerNorm, the word embeddings
 * and bias) or cls.predictions.* (the legacy BERT-style head: transform to
 * embedding_size, decoder tied to the word embeddings, bias).
 */
#include "model_bind.h"

static const char *const deberta_layer[16] = {
    "attention.self.query_proj.weight", "attention.self.query_proj.bias",
    "attention.self.key_proj.weight", "attention.self.key_proj.bias",
    "attention.self.value_proj.weight", "attention.self.value_proj.bias",
    "attention.output.dense.weight", "attention.output.dense.bias",
    "attention.output.LayerNorm.weight", "attention.output.LayerNorm.bias",
    "intermediate.dense.weight", "intermediate.dense.bias",
    "output.dense.weight", "output.dense.bias",
    "output.LayerNorm.weight", "output.LayerNorm.bias",
};

static int bind_embeddings(binder *b, bert_model *m)
{
    const bert_config *c = &m->cfg;
    const int E = c->fam.embedding_size, H = c->hidden_size;
    if (bert_bind(b, &m->word_emb, "embeddings.word_embeddings.weight", 1, 1, c->vocab_size, E,
                  "vocab_size x embedding_size") ||
        (c->fam.position_biased &&
         bert_bind(b, &m->pos_emb, "embeddings.position_embeddings.weight", 1, 1, c->max_position_embeddings, E,
                   "max_position_embeddings x embedding_size")) ||
        (c->type_vocab_size > 0 && bert_bind(b, &m->type_emb, "embeddings.token_type_embeddings.weight", 1, 1,
                                             c->type_vocab_size, E, "type_vocab_size x embedding_size")) ||
        (E != H && bert_bind(b, &m->emb_proj_w, "embeddings.embed_proj.weight", 1, 1, H, E,
                             "hidden_size x embedding_size")) ||
        bert_bind(b, &m->emb_ln_w, "embeddings.LayerNorm.weight", 1, 1, H, 0, "hidden_size") ||
        bert_bind(b, &m->emb_ln_b, "embeddings.LayerNorm.bias", 1, 1, H, 0, "hidden_size"))
        return -1;
    return 0;
}

/* ContextPooler + classifier on the first token, or the classifier per
 * token (DebertaV2ForTokenClassification). */
static int bind_classifier(binder *b, bert_model *m)
{
    const int H = m->cfg.hidden_size;
    static const char *const cls[] = {"classifier.weight", "classifier.bias", NULL};
    static const char *const pooler[] = {"pooler.dense.weight", "pooler.dense.bias", NULL};
    if (!bert_bind_all_present(b, cls, 0)) return 0;
    if (!bert_bind_all_present(b, pooler, 0))
        return bert_bind_label_rows(b, m, cls[0], cls[1], &m->tok_w, &m->tok_b);
    if (bert_bind(b, &m->pre_cls_w, pooler[0], 0, 1, H, H, "pooler_hidden_size x hidden_size") ||
        bert_bind(b, &m->pre_cls_b, pooler[1], 0, 1, H, 0, "pooler_hidden_size"))
        return -1;
    return bert_bind_label_rows(b, m, cls[0], cls[1], &m->cls_w, &m->cls_b);
}

/* Either masked-LM head, bound whole or not at all; hidden_act in both. */
static int bind_mlm(binder *b, bert_model *m)
{
    const int E = m->cfg.fam.embedding_size, H = m->cfg.hidden_size, V = m->cfg.vocab_size;
    static const char *const current[] = {"lm_predictions.lm_head.dense.weight", "lm_predictions.lm_head.dense.bias",
                                          "lm_predictions.lm_head.LayerNorm.weight",
                                          "lm_predictions.lm_head.LayerNorm.bias", "lm_predictions.lm_head.bias", NULL};
    static const char *const legacy[] = {"cls.predictions.transform.dense.weight", "cls.predictions.transform.dense.bias",
                                         "cls.predictions.transform.LayerNorm.weight",
                                         "cls.predictions.transform.LayerNorm.bias", "cls.predictions.bias", NULL};
    /* DebertaV2LMPredictionHead's dense keeps hidden_size and multiplies
     * by the word embeddings: only where embedding_size is hidden_size. */
    const char *const *names = bert_bind_all_present(b, legacy, 0) ? legacy
                               : E == H && bert_bind_all_present(b, current, 0) ? current
                                                                               : NULL;
    if (!names) return 0;
    if (bert_bind(b, &m->mlm_dense_w, names[0], 0, 1, E, H, "embedding_size x hidden_size") ||
        bert_bind(b, &m->mlm_dense_b, names[1], 0, 1, E, 0, "embedding_size") ||
        bert_bind(b, &m->mlm_ln_w, names[2], 0, 1, E, 0, "embedding_size") ||
        bert_bind(b, &m->mlm_ln_b, names[3], 0, 1, E, 0, "embedding_size") ||
        bert_bind(b, &m->mlm_bias, names[4], 0, 1, V, 0, "vocab_size"))
        return -1;
    /* The legacy decoder is tied to the word embeddings when absent. */
    if (names == legacy &&
        bert_bind(b, &m->mlm_decoder_w, "cls.predictions.decoder.weight", 0, 0, V, E, "vocab_size x embedding_size") < 0)
        return -1;
    m->mlm_act = m->cfg.hidden_act;
    return 0;
}

int bert_bind_deberta(binder *b, bert_model *m)
{
    const bert_config *c = &m->cfg;
    const int H = c->hidden_size;
    b->prefix = bert_safetensors_find(b->st, "deberta.embeddings.word_embeddings.weight") ? "deberta." : "";
    if (bind_embeddings(b, m) != 0) return -1;
    for (int l = 0; l < c->num_layers; l++)
        if (bert_bind_layer(b, &m->layers[l], l, c, "encoder.layer.%d.", deberta_layer) != 0) return -1;
    if (c->fam.relative_attention) {
        /* DebertaV2Encoder keeps pos_ebd_size * 2 rows; attention reads the
         * first 2 att_span. */
        const st_tensor *t = bert_bind_lookup(b, "encoder.rel_embeddings.weight", 1);
        int rows = t && t->ndim == 2 && t->shape[0] >= 2 * c->fam.att_span ? (int)t->shape[0] : 2 * c->fam.att_span;
        if (bert_bind(b, &m->rel_emb, "encoder.rel_embeddings.weight", 1, 1, rows, H,
                      "2 position_buckets (or max_relative_positions) x hidden_size"))
            return -1;
        if (c->fam.rel_norm && (bert_bind(b, &m->rel_ln_w, "encoder.LayerNorm.weight", 1, 1, H, 0, "hidden_size") ||
                                bert_bind(b, &m->rel_ln_b, "encoder.LayerNorm.bias", 1, 1, H, 0, "hidden_size")))
            return -1;
    }
    return bind_mlm(b, m) || bind_classifier(b, m) || bert_bind_qa(b, m) ? -1 : 0;
}
