/*
 * model_bind.c - the binder: finds a checkpoint's tensors by name, checks
 * each one's dtype and shape against config.json before it is bound (so the
 * encoder can index the weights without checks of its own), and the parts
 * every family shares: the embeddings, a layer by its names, the pooler, a
 * classifier's label rows and the question-answering head.
 */
#include "model_bind.h"
#include "../base/error.h"

#include <stdio.h>
#include <string.h>

const st_tensor *bert_bind_lookup(binder *b, const char *name, int in_model)
{
    snprintf(b->name, sizeof b->name, "%s%s", in_model ? b->prefix : "", name);
    const st_tensor *t = bert_safetensors_find(b->st, b->name);
    if (t) return t;
    char old[256];
    size_t n = strlen(b->name);
    if (bert_ends_with(b->name, "LayerNorm.weight"))
        snprintf(old, sizeof old, "%.*sgamma", (int)(n - 6), b->name);
    else if (bert_ends_with(b->name, "LayerNorm.bias"))
        snprintf(old, sizeof old, "%.*sbeta", (int)(n - 4), b->name);
    else
        return NULL;
    t = bert_safetensors_find(b->st, old);
    if (t) snprintf(b->name, sizeof b->name, "%s", old);
    return t;
}

int bert_bind(binder *b, const float **dst, const char *name, int in_model, int required, int d0, int d1,
              const char *why)
{
    const st_tensor *t = bert_bind_lookup(b, name, in_model);
    if (!t) {
        if (!required) return 1;
        *b->err = bert_errorf("%s has no tensor %s%s (nor its LayerNorm gamma/beta form); the file is not a "
                              "checkpoint of the model config.json describes, or is incomplete", b->file,
                              in_model ? b->prefix : "", name);
        return -1;
    }
    if (t->dtype != ST_F32 && t->dtype != ST_F16 && t->dtype != ST_BF16) {
        *b->err = bert_errorf("%s: tensor %s is stored as %s; only F32, F16 and BF16 weights are "
                              "supported: convert the checkpoint with torch_dtype=float32", b->file,
                              b->name, t->dtype_name);
        return -1;
    }
    int ok = d1 ? t->ndim == 2 && t->shape[0] == d0 && t->shape[1] == d1
                : t->ndim == 1 && t->shape[0] == d0;
    if (!ok) {
        char got[160] = "";
        size_t used = 0;
        for (int i = 0; i < t->ndim && used < sizeof got - 24; i++)
            used += (size_t)snprintf(got + used, sizeof got - used, "%s%lld", i ? ", " : "",
                                     (long long)t->shape[i]);
        if (d1)
            *b->err = bert_errorf("%s: tensor %s has shape [%s] but config.json (%s) implies [%d, %d]; "
                                  "the weights and config.json belong to different models",
                                  b->file, b->name, got, why, d0, d1);
        else
            *b->err = bert_errorf("%s: tensor %s has shape [%s] but config.json (%s) implies [%d]; "
                                  "the weights and config.json belong to different models",
                                  b->file, b->name, got, why, d0);
        return -1;
    }
    b->list[b->count].dst = dst;
    b->list[b->count].matrix = NULL;
    b->list[b->count].t = t;
    b->count++;
    return 0;
}

int bert_bind_bias_or_zeros(binder *b, const float **dst, const char *name, int in_model, int d0, const char *why)
{
    int rc = bert_bind(b, dst, name, in_model, 0, d0, 0, why);
    if (rc == 1) *dst = b->zeros;
    return rc < 0 ? -1 : 0;
}

int bert_bind_matrix(binder *b, bert_matrix *dst, const char *name, int d0, int d1, const char *why)
{
    const float *unused = NULL;
    if (bert_bind(b, &unused, name, 1, 1, d0, d1, why) != 0) return -1;
    b->list[b->count - 1].dst = NULL;
    b->list[b->count - 1].matrix = dst;
    return 0;
}

int bert_bind_all_present(binder *b, const char *const *names, int in_model)
{
    for (; *names; names++)
        if (!bert_bind_lookup(b, *names, in_model)) return 0;
    return 1;
}

int bert_bind_layer(binder *b, bert_layer_weights *w, int l, const bert_config *c, const char *layer_fmt,
                    const char *const names[16])
{
    static const char *const hh = "hidden_size x hidden_size", *const h = "hidden_size",
                             *const ih = "intermediate_size x hidden_size",
                             *const hi = "hidden_size x intermediate_size", *const i = "intermediate_size";
    const int H = c->hidden_size, I = c->intermediate_size;
    const struct {
        const float **dst;       /* a float32 tensor, or */
        bert_matrix *matrix;     /* a projection, held at the model's precision */
        int d0, d1;
        const char *why;
    } t[16] = {
        {NULL, &w->q_w, H, H, hh},         {&w->q_b, NULL, H, 0, h},
        {NULL, &w->k_w, H, H, hh},         {&w->k_b, NULL, H, 0, h},
        {NULL, &w->v_w, H, H, hh},         {&w->v_b, NULL, H, 0, h},
        {NULL, &w->out_w, H, H, hh},       {&w->out_b, NULL, H, 0, h},
        {&w->attn_ln_w, NULL, H, 0, h},    {&w->attn_ln_b, NULL, H, 0, h},
        {NULL, &w->ff_in_w, I, H, ih},     {&w->ff_in_b, NULL, I, 0, i},
        {NULL, &w->ff_out_w, H, I, hi},    {&w->ff_out_b, NULL, H, 0, h},
        {&w->ff_ln_w, NULL, H, 0, h},      {&w->ff_ln_b, NULL, H, 0, h},
    };
    char name[160], layer[64];
    snprintf(layer, sizeof layer, layer_fmt, l);
    for (size_t k = 0; k < 16; k++) {
        snprintf(name, sizeof name, "%s%s", layer, names[k]);
        int rc = t[k].matrix ? bert_bind_matrix(b, t[k].matrix, name, t[k].d0, t[k].d1, t[k].why)
                             : bert_bind(b, t[k].dst, name, 1, 1, t[k].d0, t[k].d1, t[k].why);
        if (rc != 0) return -1;
    }
    return 0;
}

int bert_bind_embeddings(binder *b, bert_model *m, int with_types)
{
    const bert_config *c = &m->cfg;
    const int H = c->hidden_size;
    if (bert_bind(b, &m->word_emb, "embeddings.word_embeddings.weight", 1, 1, c->vocab_size, H,
                  "vocab_size x hidden_size") ||
        bert_bind(b, &m->pos_emb, "embeddings.position_embeddings.weight", 1, 1, c->max_position_embeddings, H,
                  "max_position_embeddings x hidden_size") ||
        (with_types && bert_bind(b, &m->type_emb, "embeddings.token_type_embeddings.weight", 1, 1,
                                 c->type_vocab_size, H, "type_vocab_size x hidden_size")) ||
        bert_bind(b, &m->emb_ln_w, "embeddings.LayerNorm.weight", 1, 1, H, 0, "hidden_size") ||
        bert_bind(b, &m->emb_ln_b, "embeddings.LayerNorm.bias", 1, 1, H, 0, "hidden_size"))
        return -1;
    return 0;
}

int bert_bind_pooler(binder *b, bert_model *m)
{
    static const char *const pooler[] = {"pooler.dense.weight", "pooler.dense.bias", NULL};
    if (!bert_bind_all_present(b, pooler, 1)) return 0;
    const int H = m->cfg.hidden_size;
    if (bert_bind(b, &m->pooler_w, pooler[0], 1, 1, H, H, "hidden_size x hidden_size") ||
        bert_bind(b, &m->pooler_b, pooler[1], 1, 1, H, 0, "hidden_size"))
        return -1;
    return 0;
}

int bert_bind_label_rows(binder *b, bert_model *m, const char *weight, const char *bias, const float **w,
                         const float **bias_dst)
{
    const int H = m->cfg.hidden_size;
    const st_tensor *t = bert_bind_lookup(b, weight, 0);
    int rows = m->head.num_labels;
    char why[96];
    if (rows > 0) {
        snprintf(why, sizeof why, "%d label%s in id2label or num_labels, x hidden_size", rows, rows == 1 ? "" : "s");
    } else {
        rows = t && t->ndim == 2 && t->shape[0] >= 1 && t->shape[0] <= BERT_MAX_LABELS ? (int)t->shape[0] : 1;
        snprintf(why, sizeof why, "no labels named, so the classifier's %d rows, x hidden_size", rows);
    }
    if (bert_bind(b, w, weight, 0, 1, rows, H, why) ||
        bert_bind(b, bias_dst, bias, 0, 1, rows, 0, "the classifier's labels"))
        return -1;
    if (bert_head_config_default_labels(&m->head, rows) != 0) {
        *b->err = bert_errorf("out of memory loading %s", b->file);
        return -1;
    }
    return 0;
}

int bert_bind_mlm_head(binder *b, bert_model *m, const char *const names[7])
{
    const int H = m->cfg.hidden_size, V = m->cfg.vocab_size;
    const char *const transform[] = {names[0], names[1], names[2], names[3], NULL};
    const char *bias = bert_bind_lookup(b, names[4], 0) ? names[4] : bert_bind_lookup(b, names[5], 0) ? names[5] : NULL;
    if (!bias || !bert_bind_all_present(b, transform, 0)) return 0;
    if (bert_bind(b, &m->mlm_dense_w, names[0], 0, 1, H, H, "hidden_size x hidden_size") ||
        bert_bind(b, &m->mlm_dense_b, names[1], 0, 1, H, 0, "hidden_size") ||
        bert_bind(b, &m->mlm_ln_w, names[2], 0, 1, H, 0, "hidden_size") ||
        bert_bind(b, &m->mlm_ln_b, names[3], 0, 1, H, 0, "hidden_size") ||
        bert_bind(b, &m->mlm_bias, bias, 0, 1, V, 0, "vocab_size"))
        return -1;
    if (bert_bind(b, &m->mlm_decoder_w, names[6], 0, 0, V, H, "vocab_size x hidden_size") < 0) return -1;
    return 1;
}

int bert_bind_qa(binder *b, bert_model *m)
{
    static const char *const qa[] = {"qa_outputs.weight", "qa_outputs.bias", NULL};
    if (!bert_bind_all_present(b, qa, 0)) return 0;
    const int H = m->cfg.hidden_size;
    if (bert_bind(b, &m->qa_w, qa[0], 0, 1, 2, H, "start and end logits, x hidden_size") ||
        bert_bind(b, &m->qa_b, qa[1], 0, 1, 2, 0, "start and end logits"))
        return -1;
    return 0;
}
