/*
 * model_dense.c - the Dense module of a sentence-transformers directory
 * (sentence_transformers/models/Dense.py): y = activation(x W^T + b),
 * which PyLate puts after the Transformer of a ColBERT model to project
 * every token's hidden state to its token vector.
 */
#include "model_dir.h"
#include "model_bind.h"
#include "safetensors.h"
#include "../base/error.h"
#include "../base/file.h"

#include <stdlib.h>
#include <string.h>

/* The "path" of modules.json's Dense module (borrowed from the parsed
 * file), NULL when there is none.  Whether one is allowed where it stands
 * is bert_st_config_load's rule, asked first. */
static const char *dense_path(bert_model_files *files, char **err, int *failed)
{
    const json_doc *doc = NULL;
    bert_st_config st;
    *failed = bert_st_config_load(files, &st, err) != 0;
    if (*failed || !st.dense) return NULL;
    /* Read already, so only memory can fail here: never a model without its Dense. */
    if (bert_model_files_json(files, "modules.json", 1, &doc, err) <= 0) {
        *failed = 1;
        if (!*err) *err = bert_errorf("out of memory reading %s/modules.json", bert_model_files_dir(files));
        return NULL;
    }
    for (int c = doc->nodes[0].first_child; c >= 0; c = doc->nodes[c].next_sibling)
        if (bert_ends_with(bert_json_str(doc, bert_json_member(doc, c, "type"), ""), "Dense"))
            return bert_json_str(doc, bert_json_member(doc, c, "path"), "1_Dense");
    return NULL;
}

/* Checks the module's config.json against the encoder: 0 with *out and *bias, or -1. */
static int dense_config(bert_model_files *files, const char *dir, int hidden, int *out, int *bias, char **err)
{
    const char *model_dir = bert_model_files_dir(files);
    char *name = bert_path_join(dir, "config.json");
    if (!name) { *err = bert_errorf("out of memory loading %s", model_dir); return -1; }
    const json_doc *doc = NULL;
    int found = bert_model_files_json(files, name, 0, &doc, err), rc = -1;
    if (found < 0) goto done;
    if (!found) {
        *err = bert_errorf("%s/%s is missing: modules.json names a Dense module in %s", model_dir, name, dir);
        goto done;
    }
    long long in = bert_json_int(doc, bert_json_member(doc, 0, "in_features"), -1);
    long long n = bert_json_int(doc, bert_json_member(doc, 0, "out_features"), -1);
    const char *act = bert_json_str(doc, bert_json_member(doc, 0, "activation_function"),
                                    "torch.nn.modules.linear.Identity");
    *bias = bert_json_bool(doc, bert_json_member(doc, 0, "bias"), 1) == 1;
    if (in != hidden) {
        *err = bert_errorf("%s/%s: in_features %lld is not the encoder's hidden_size %d", model_dir, name, in, hidden);
    } else if (n < 1 || n > BERT_MAX_POSITIONS) {
        *err = bert_errorf("%s/%s: out_features must be a positive integer", model_dir, name);
    } else if (!bert_ends_with(act, "Identity")) {
        /* PyLate's ColBERT models use the identity; another activation would
         * give vectors that silently differ. */
        *err = bert_errorf("%s/%s: activation_function \"%s\" is not supported (only "
                           "torch.nn.modules.linear.Identity is)", model_dir, name, act);
    } else {
        *out = (int)n;
        rc = 0;
    }
done:
    free(name);
    return rc;
}

/* Tensor `name` of f, of `count` values (shape [rows] or [rows x cols]), or NULL with *err. */
static const st_tensor *dense_tensor(const st_file *f, const char *file, const char *name, int rows, int cols,
                                     char **err)
{
    const st_tensor *t = bert_safetensors_find(f, name);
    if (!t) {
        *err = bert_errorf("%s has no tensor %s", file, name);
        return NULL;
    }
    int shaped = cols ? t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols : t->ndim == 1 && t->shape[0] == rows;
    if (!shaped || (t->dtype != ST_F32 && t->dtype != ST_F16 && t->dtype != ST_BF16)) {
        *err = bert_errorf("%s: tensor %s must be float32, float16 or bfloat16 of shape [%d%s%.0d]", file, name, rows,
                           cols ? ", " : "", cols);
        return NULL;
    }
    return t;
}

int bert_dense_load(bert_model_files *files, bert_model *m, char **err)
{
    int failed;
    const char *dir = dense_path(files, err, &failed);
    if (!dir) return failed ? -1 : 0;
    const int hidden = m->cfg.hidden_size;
    int out = 0, bias = 0;
    if (dense_config(files, dir, hidden, &out, &bias, err) != 0) return -1;
    char *name = bert_path_join(dir, "model.safetensors");
    char *path = name ? bert_model_files_path(files, name) : NULL;
    st_file *f = NULL;
    int rc = -1;
    if (!path) {
        *err = bert_errorf("out of memory loading %s", bert_model_files_dir(files));
        goto done;
    }
    if (bert_safetensors_open(path, &f, err) != 0) goto done;
    const st_tensor *w = dense_tensor(f, path, "linear.weight", out, hidden, err);
    const st_tensor *b = w && bias ? dense_tensor(f, path, "linear.bias", out, 0, err) : NULL;
    if (!w || (bias && !b)) goto done;
    model_priv *priv = m->priv;
    priv->dense = malloc(((size_t)out * (size_t)hidden + (size_t)out) * sizeof(float));
    if (!priv->dense) {
        *err = bert_errorf("out of memory loading %s", path);
        goto done;
    }
    bert_tensor_widen(w, priv->dense);
    m->dense_w = priv->dense;
    if (b) {
        bert_tensor_widen(b, priv->dense + (size_t)out * (size_t)hidden);
        m->dense_b = priv->dense + (size_t)out * (size_t)hidden;
    }
    m->dense_out = out;
    rc = 0;
done:
    bert_safetensors_close(f);
    free(path);
    free(name);
    return rc;
}
