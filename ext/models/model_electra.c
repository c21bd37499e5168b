/*
 * model_electra.c - the tensor names of ELECTRA (modeling_electra.py):
 * BERT's layers under the "electra." prefix that the ElectraFor* classes
 * add, embeddings of embedding_size values widened to hidden_size by
 * embeddings_project when the two differ (the small checkpoints), and the
 * heads: ElectraForMaskedLM's generator (generator_predictions: dense to
 * embedding_size, gelu, LayerNorm; generator_lm_head tied to the word
 * embeddings), ElectraClassificationHead (classifier.dense, gelu,
 * classifier.out_proj on the first token), token classification
 * (classifier.*) and question answering (qa_outputs.*).  The
 * discriminator's replaced-token head (discriminator_predictions.*) is
 * left unbound: such a checkpoint serves as a bare encoder.
 */
#include "model_bind.h"

#include <stdio.h>

/* ElectraEmbeddings: word, position and segment embeddings and their
 * LayerNorm, all embedding_size wide; then embeddings_project. */
static int bind_embeddings(binder *b, bert_model *m)
{
    const bert_config *c = &m->cfg;
    const int E = c->fam.embedding_size, H = c->hidden_size;
    if (bert_bind(b, &m->word_emb, "embeddings.word_embeddings.weight", 1, 1, c->vocab_size, E,
                  "vocab_size x embedding_size") ||
        bert_bind(b, &m->pos_emb, "embeddings.position_embeddings.weight", 1, 1, c->max_position_embeddings, E,
                  "max_position_embeddings x embedding_size") ||
        bert_bind(b, &m->type_emb, "embeddings.token_type_embeddings.weight", 1, 1, c->type_vocab_size, E,
                  "type_vocab_size x embedding_size") ||
        bert_bind(b, &m->emb_ln_w, "embeddings.LayerNorm.weight", 1, 1, E, 0, "embedding_size") ||
        bert_bind(b, &m->emb_ln_b, "embeddings.LayerNorm.bias", 1, 1, E, 0, "embedding_size"))
        return -1;
    /* ElectraModel has embeddings_project only when the sizes differ. */
    if (E == H) return 0;
    if (bert_bind(b, &m->emb_proj_w, "embeddings_project.weight", 1, 1, H, E, "hidden_size x embedding_size") ||
        bert_bind(b, &m->emb_proj_b, "embeddings_project.bias", 1, 1, H, 0, "hidden_size"))
        return -1;
    return 0;
}

/* ElectraGeneratorPredictions and generator_lm_head, bound whole or not
 * at all; the head calls gelu whatever hidden_act says. */
static int bind_generator(binder *b, bert_model *m)
{
    const int E = m->cfg.fam.embedding_size, H = m->cfg.hidden_size, V = m->cfg.vocab_size;
    static const char *const names[] = {"generator_predictions.dense.weight", "generator_predictions.dense.bias",
                                        "generator_predictions.LayerNorm.weight",
                                        "generator_predictions.LayerNorm.bias", "generator_lm_head.bias", NULL};
    if (!bert_bind_all_present(b, names, 0)) return 0;
    if (bert_bind(b, &m->mlm_dense_w, names[0], 0, 1, E, H, "embedding_size x hidden_size") ||
        bert_bind(b, &m->mlm_dense_b, names[1], 0, 1, E, 0, "embedding_size") ||
        bert_bind(b, &m->mlm_ln_w, names[2], 0, 1, E, 0, "embedding_size") ||
        bert_bind(b, &m->mlm_ln_b, names[3], 0, 1, E, 0, "embedding_size") ||
        bert_bind(b, &m->mlm_bias, names[4], 0, 1, V, 0, "vocab_size"))
        return -1;
    /* Absent when tied to the word embeddings (save_pretrained drops it). */
    if (bert_bind(b, &m->mlm_decoder_w, "generator_lm_head.weight", 0, 0, V, E, "vocab_size x embedding_size") < 0)
        return -1;
    m->mlm_act = BERT_ACT_GELU;
    return 0;
}

int bert_bind_electra(binder *b, bert_model *m)
{
    const bert_config *c = &m->cfg;
    b->prefix = bert_safetensors_find(b->st, "electra.embeddings.word_embeddings.weight") ? "electra." : "";
    if (bind_embeddings(b, m) != 0) return -1;
    for (int l = 0; l < c->num_layers; l++)
        if (bert_bind_layer(b, &m->layers[l], l, c, "encoder.layer.%d.", bert_layer_names) != 0) return -1;
    /* ElectraClassificationHead has RobertaClassificationHead's names (gelu
     * where RoBERTa has tanh: the encoder's head step knows the family). */
    return bind_generator(b, m) || bert_bind_dense_classifier(b, m) || bert_bind_qa(b, m) ? -1 : 0;
}
