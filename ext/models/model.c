/*
 * model.c - loads a Hugging Face checkpoint directory: config.json
 * (model_config.c), the sentence-transformers files (model_st_config.c) and
 * the weights (model.safetensors, or a sharded checkpoint's shards:
 * checkpoint.c), whose tensors the family's file binds (model_bert.c,
 * model_roberta.c, model_mpnet.c, model_electra.c, model_modernbert.c) and model_widen.c converts where they are
 * not used in place.
 */
#include "model_dir.h"
#include "model_bind.h"
#include "checkpoint.h"
#include "../base/error.h"
#include "../base/file.h"

#include <stdlib.h>
#include <string.h>

static const char *dtype_label(st_dtype t)
{
    return t == ST_F16 ? "float16" : t == ST_BF16 ? "bfloat16" : "float32";
}

int bert_model_load(bert_model_files *files, bert_model **out, char **err)
{
    return bert_model_load_precision(files, BERT_PRECISION_FLOAT32, out, err);
}

int bert_model_load_precision(bert_model_files *files, bert_precision precision, bert_model **out, char **err)
{
    const char *model_dir = bert_model_files_dir(files);
    *out = NULL;
    *err = NULL;
    bert_model *m = calloc(1, sizeof *m);
    model_priv *priv = calloc(1, sizeof *priv);
    char *path = NULL;      /* the weights' file, or a sharded checkpoint's index, for messages */
    binder b = {.err = err, .prefix = ""};
    if (!m || !priv) {
        free(m);
        free(priv);
        *err = bert_errorf("out of memory loading %s", model_dir);
        return -1;
    }
    m->priv = priv;
    m->precision = precision;
    if (bert_config_load(files, &m->cfg, err) != 0) goto fail;
    const bert_config *c = &m->cfg;
    if (bert_checkpoint_open(files, &priv->st, &path, err) != 0) goto fail;
    /* The head settings matter only to a checkpoint with a classifier: an
     * odd id2label in a fill-mask model's config.json is no reason to fail. */
    if (bert_head_config_load(files, &m->head, err) != 0) {
        if (bert_safetensors_find(priv->st, "classifier.weight") ||
            bert_safetensors_find(priv->st, "classifier.out_proj.weight"))
            goto fail;
        free(*err);
        *err = NULL;
        memset(&m->head, 0, sizeof m->head);
    }
    m->file_size = bert_safetensors_size(priv->st);

    m->layers = calloc((size_t)c->num_layers, sizeof *m->layers);
    b.list = calloc((size_t)c->num_layers * 16 + 32, sizeof *b.list);
    if (!m->layers || !b.list) {
        *err = bert_errorf("out of memory loading %s", model_dir);
        goto fail;
    }
    if (c->family == BERT_FAMILY_MODERNBERT || c->family == BERT_FAMILY_JINA_BERT || bert_family_rotary(c->family)) {
        /* The biases a ModernBERT checkpoint leaves out (attention_bias,
         * mlp_bias, norm_bias, classifier_bias, decoder_bias false) and
         * JinaBERT's gated_layers, and those nomic-bert and gte leave out
         * (qkv_proj_bias, mlp_fc1_bias, mlp_fc2_bias, up_gate_proj) are
         * zeros, so that every product and
         * norm runs as with a bias. */
        size_t n = (size_t)c->vocab_size;
        if ((size_t)3 * (size_t)c->hidden_size > n) n = (size_t)3 * (size_t)c->hidden_size;
        if ((size_t)2 * (size_t)c->intermediate_size > n) n = (size_t)2 * (size_t)c->intermediate_size;
        priv->zeros = calloc(n, sizeof *priv->zeros);
        if (!priv->zeros) {
            *err = bert_errorf("out of memory loading %s", model_dir);
            goto fail;
        }
        b.zeros = priv->zeros;
    }
    b.st = priv->st;
    b.file = path;
    int rc = c->family == BERT_FAMILY_MPNET ? bert_bind_mpnet(&b, m)
           : c->family == BERT_FAMILY_ROBERTA || c->family == BERT_FAMILY_XLM_ROBERTA ? bert_bind_roberta(&b, m)
           : c->family == BERT_FAMILY_ELECTRA ? bert_bind_electra(&b, m)
           : c->family == BERT_FAMILY_MODERNBERT ? bert_bind_modernbert(&b, m)
           : c->family == BERT_FAMILY_DEBERTA_V2 ? bert_bind_deberta(&b, m)
           : c->family == BERT_FAMILY_NOMIC_BERT ? bert_bind_nomic(&b, m)
           : c->family == BERT_FAMILY_GTE_NEW ? bert_bind_gte(&b, m)
           : bert_bind_bert(&b, m);
    if (rc != 0) goto fail;
    m->dtype = dtype_label(b.list[0].t->dtype);   /* the word embeddings' */
    if (bert_bind_materialize(&b, priv, m) != 0) goto fail;
    if (m->mlm_bias && !m->mlm_decoder_w) m->mlm_decoder_w = m->word_emb;   /* tied */
    if (bert_dense_load(files, m, err) != 0) goto fail;

    free(b.list);
    free(path);
    *out = m;
    return 0;
fail:
    free(b.list);
    free(path);
    bert_model_free(m);
    return -1;
}

void bert_model_free(bert_model *m)
{
    if (!m) return;
    model_priv *priv = m->priv;
    if (priv) {
        bert_safetensors_close(priv->st);
        free(priv->converted);
        free(priv->dense);
        free(priv->reduced);
        free(priv->zeros);
        free(priv);
    }
    bert_head_config_free(&m->head);
    free(m->layers);
    free(m);
}

const char *bert_model_task(const bert_model *m)
{
    if (!m) return NULL;
    if (bert_model_has_classifier(m)) return "sequence_classification";
    if (bert_model_has_token_head(m)) return "token_classification";
    if (bert_model_has_qa_head(m)) return "question_answering";
    if (bert_model_has_mlm_head(m)) return "fill_mask";
    if (bert_model_has_nsp_head(m)) return "next_sentence";
    return NULL;
}
