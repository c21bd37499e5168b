/*
 * model_mpnet.c - the tensor names of MPNet (modeling_mpnet.py): under the
 * "mpnet." prefix, no segment embeddings, attention projections q, k, v, o
 * with the LayerNorm beside them, and the relative position bias
 * (encoder.relative_attention_bias, one value per bucket and head) that
 * every layer adds to its attention scores.  The heads are named as
 * RoBERTa's (model_roberta.c).
 */
#include "model_bind.h"

const char *const bert_mpnet_layer_names[16] = {
    "attention.attn.q.weight", "attention.attn.q.bias",
    "attention.attn.k.weight", "attention.attn.k.bias",
    "attention.attn.v.weight", "attention.attn.v.bias",
    "attention.attn.o.weight", "attention.attn.o.bias",
    "attention.LayerNorm.weight", "attention.LayerNorm.bias",
    "intermediate.dense.weight", "intermediate.dense.bias",
    "output.dense.weight", "output.dense.bias",
    "output.LayerNorm.weight", "output.LayerNorm.bias",
};

int bert_bind_mpnet(binder *b, bert_model *m)
{
    const bert_config *c = &m->cfg;
    b->prefix = bert_safetensors_find(b->st, "mpnet.embeddings.word_embeddings.weight") ? "mpnet." : "";
    if (bert_bind_embeddings(b, m, 0) != 0) return -1;
    if (bert_bind(b, &m->rel_bias, "encoder.relative_attention_bias.weight", 1, 1, c->relative_buckets,
                  c->num_heads, "relative_attention_num_buckets x num_attention_heads") != 0)
        return -1;
    for (int l = 0; l < c->num_layers; l++)
        if (bert_bind_layer(b, &m->layers[l], l, c, "encoder.layer.%d.", bert_mpnet_layer_names) != 0) return -1;
    return bert_bind_roberta_heads(b, m);
}
