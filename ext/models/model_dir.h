/*
 * model_dir.h - reading a model directory as Hugging Face stores it:
 * config.json (the encoder's shape, the heads' labels), the
 * sentence-transformers files, and the checkpoint whose tensors fill a
 * bert_model (encoder/model.h).  The encoder computes with what these
 * return; the registry and the weight cache call them, each with the one
 * reading of the directory the registry keeps (base/model_files.h).
 */
#ifndef BERT_MODEL_DIR_H
#define BERT_MODEL_DIR_H

#include "../base/model_files.h"
#include "../encoder/model.h"

#include <string.h>

/* Most labels a classifier may have (config.json's id2label or num_labels). */
#define BERT_MAX_LABELS 100000
/* Most positions config.json (and sentence_bert_config.json) may ask for. */
#define BERT_MAX_POSITIONS 65536

static inline int bert_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* The model_type of a family ("bert", "xlm-roberta", ...); static. */
const char *bert_family_name(bert_family f);

/* Reads and validates the directory's config.json (BertConfig's keys, which
 * RoBERTa, XLM-RoBERTa and MPNet share, or DistilBertConfig's: dim,
 * n_layers, n_heads, hidden_dim, activation).  An unsupported model_type
 * is an error that lists the supported ones.
 * 0, or -1 with *err (malloc'd). */
int bert_config_load(bert_model_files *files, bert_config *cfg, char **err);

/* Reads the head settings of the directory's config.json.  0, or -1 with *err
 * naming the file, the key and the fix (id2label that does not number its
 * labels 0..n-1, an unknown problem_type). */
int bert_head_config_load(bert_model_files *files, bert_head_config *hc, char **err);
void bert_head_config_free(bert_head_config *hc);

/* The label names for a head of n labels: hc's, or LABEL_<i> made up when
 * config.json named none (hc->num_labels 0).  0, or -1 out of memory. */
int bert_head_config_default_labels(bert_head_config *hc, int n);

int bert_st_config_load(bert_model_files *files, bert_st_config *st, char **err);

/* The prompt of config_sentence_transformers.json's "prompts" called
 * `name`, or (name NULL) the one its default_prompt_name names.  *out is a
 * malloc'd copy, or NULL when no prompt applies (no file, no default, an
 * empty prompt).  0, or -1 with *err: an unknown name (the message lists
 * the model's prompts), a file that is not as sentence-transformers writes it. */
int bert_st_prompt(bert_model_files *files, const char *name, char **out, char **err);

/* Maps the directory's model.safetensors, checks every tensor's name, dtype, shape
 * and byte range against config.json and the file size.  0, or -1 with *err
 * (malloc'd) naming the file, the tensor and the fix. */
int bert_model_load(bert_model_files *files, bert_model **out, char **err);

/* The same, with the layers' projections held at `precision`: bfloat16
 * tensors of the file are used in place, anything else is converted or
 * quantized once, and the pages of the file read for it are released. */
int bert_model_load_precision(bert_model_files *files, bert_precision precision, bert_model **out, char **err);
void bert_model_free(bert_model *m);

/* The Dense module modules.json names, if any (sentence-transformers'
 * models.Dense: config.json with in_features, out_features, bias and
 * activation_function; model.safetensors with linear.weight [out x in] and
 * linear.bias), into m->dense_w, dense_b and dense_out, owned by the
 * model.  Only the identity activation, as PyLate saves ColBERT models.
 * 0 (also without one), or -1 with *err naming the file and key. */
int bert_dense_load(bert_model_files *files, bert_model *m, char **err);

/* What the model's heads make it, as bert_models' `task` column says:
 * "sequence_classification", "token_classification", "question_answering",
 * "fill_mask", "next_sentence", or NULL for a bare encoder. */
const char *bert_model_task(const bert_model *m);

#endif
