/*
 * model_save.h - a float32 bert_model written back as a Hugging Face model
 * directory that transformers, sentence-transformers and bert_load read:
 * model.safetensors (float32, transformers' tensor names for the
 * architecture), config.json (the base's, with the architecture, labels and
 * problem_type set through SQLite's JSON functions), the base's tokenizer
 * files, and for a sentence embedding model the sentence-transformers files.
 *
 * A directory is written beside its target under a temporary name and
 * renamed into place once whole, so a reader never meets a half-written
 * model, and an interrupted save leaves the previous one as it was.
 */
#ifndef BERT_MODEL_SAVE_H
#define BERT_MODEL_SAVE_H

#include "../encoder/model.h"

/* Which transformers class the weights are saved as. */
typedef enum {
    BERT_SAVE_BARE,       /* BertModel ...: no prefix, the pooler when present, no head */
    BERT_SAVE_SEQUENCE,   /* ...ForSequenceClassification: cls_w (and pre_cls_w, BERT's pooler) */
    BERT_SAVE_TOKENS,     /* ...ForTokenClassification: tok_w */
    BERT_SAVE_QA          /* ...ForQuestionAnswering: qa_w */
} bert_save_arch;

/* "BertForSequenceClassification", "DistilBertModel", ...; static. */
const char *bert_save_arch_name(bert_family family, bert_save_arch arch);

/* Writes m's tensors as transformers names them for `arch` into the file
 * `path` (created or replaced): float32, little-endian, with the format
 * "pt" in the header's metadata as save_pretrained writes it.  Every
 * tensor must be float32 (a model loaded at precision float32, or a
 * trainer's).  0, or -1 with *err naming the file. */
int bert_save_safetensors(const bert_model *m, bert_save_arch arch, const char *path, char **err);

/* A JSON file written by the saver beside the model's (training_args.json,
 * trainer_state.json): its name in the directory and its text. */
typedef struct {
    const char *name;
    const char *text;
} bert_save_file;

/* Extra weights written as a directory of their own inside the model's
 * (the optimizer's moments at a checkpoint): `name`/config.json and
 * `name`/model.safetensors, loadable as a model of the same shapes. */
typedef struct {
    const char *name;
    const bert_model *weights;
} bert_save_weights;

typedef struct {
    const char *base_dir;          /* the base model's directory: config.json and tokenizer files */
    bert_save_arch arch;
    const char *const *labels;     /* SEQUENCE and TOKENS: id2label in id order */
    int num_labels;
    const char *problem_type;      /* SEQUENCE: "single_label_classification", ...; else NULL */
    /* BARE: the sentence-transformers files for this pooling (mean, cls or
     * max), Normalize when `normalize`, and max_seq_length. */
    int sentence_transformers;
    bert_pooling pooling;
    int normalize;
    int max_seq_length;
    const bert_save_file *files;   /* n_files JSON files, or NULL */
    int n_files;
    const bert_save_weights *extra;
    int n_extra;
    /* When out_dir exists: its entries whose names start with this (the
     * checkpoints a run wrote inside it) move into the new directory
     * before it takes out_dir's place; NULL: none. */
    const char *carry_prefix;
} bert_save_spec;

/* Writes the model directory `out_dir`: all of it under a temporary name in
 * the same parent folder, then renamed into place; an existing out_dir is
 * replaced only when `overwrite` (else an error that says so), and only
 * once the new one is whole.  0, or -1 with *err, the temporary folder
 * removed and any existing out_dir untouched. */
int bert_save_model_dir(const bert_model *m, const bert_save_spec *spec, const char *out_dir, int overwrite,
                        char **err);

/* Removes a directory tree the saver wrote (its files and folders, not
 * following links).  0, or -1 when something could not be removed. */
int bert_save_remove_tree(const char *dir);

#endif
