/*
 * registry.h - the models one connection has registered by name.
 *
 * bert_load() only records a name, a directory and options after checking
 * that config.json is readable.  The tokenizer is read by the first call that
 * tokenizes, the weights are taken from the process-wide cache by the first
 * call that runs the encoder, and the scratch buffers belong to the entry, so
 * each connection computes in its own memory.
 *
 * This is the handle API: a bert_entry is opaque here, and what the SQL
 * glue may learn of one comes as names and numbers, so the glue sees
 * neither the model nor the kernels (the inside is entry.h, for the
 * registry and the pipeline only).
 */
#ifndef BERT_REGISTRY_H
#define BERT_REGISTRY_H

#include <stdint.h>

/* Option "prompt": the model's default_prompt_name, a name from
 * config_sentence_transformers.json's prompts, or a literal prefix. */
enum { BERT_PROMPT_DEFAULT, BERT_PROMPT_NAME, BERT_PROMPT_TEXT };
#define BERT_PROMPT_MAX 1024

/* Option "aggregation": how bert_ner groups word pieces into entities
 * (tasks/entities.h does the grouping). */
typedef enum {
    BERT_AGG_NONE,      /* every piece, with its index */
    BERT_AGG_SIMPLE,    /* pieces grouped by B-/I- tags */
    BERT_AGG_FIRST,     /* words take their first piece's label */
    BERT_AGG_AVERAGE,   /* words take the label of their pieces' mean scores */
    BERT_AGG_MAX        /* words take the label of their most confident piece */
} bert_aggregation;

#define BERT_AGG_DEFAULT BERT_AGG_SIMPLE

/* "none", "simple", ... ; the name of a strategy, or -1 for an unknown name. */
const char *bert_aggregation_name(bert_aggregation a);
int bert_aggregation_parse(const char *name);

/* What a user may set in bert_load's options JSON; -1 / 0 mean "not given". */
typedef struct {
    int pooling;      /* bert_pooling, or -1 for the model's own */
    int normalize;    /* 1, 0, or -1 for the model's own */
    int max_length;   /* tokens incl. [CLS] and [SEP], 0 for the model's own */
    int truncate;     /* 1 (default): cut silently; 0: error on longer input */
    int threads;      /* OpenBLAS threads, 0 for the default */
    int aggregation;  /* bert_aggregation of bert_ner, -1 for the default ("simple") */
    int precision;    /* bert_precision of the encoder's weights, -1 for the default (float32) */
    int prompt_kind;  /* BERT_PROMPT_DEFAULT, _NAME (prompt names one) or _TEXT (prompt is the text) */
    char prompt[BERT_PROMPT_MAX];
} bert_options;

/* A registered model: opaque outside registry.c and pipeline.c (entry.h). */
typedef struct bert_entry bert_entry;

typedef struct {
    bert_entry *head;
    unsigned long serial;        /* the last serial handed out */
} bert_registry;

/* Parses bert_load's options (NULL or "" for none). 0, or -1 with *err. */
int bert_options_parse(const char *json, bert_options *out, char **err);

/* Registers `path` as `name`.  The same name for the same directory (however
 * spelled) with options of the same effect is a no-op; anything else under a
 * registered name is an error naming both.  0, or -1 with *err (malloc'd). */
int bert_registry_add(bert_registry *r, const char *name, const char *path,
                 const bert_options *opts, char **err);

/* Drops a registration and what it holds. 0, or -1 with *err when unknown. */
int bert_registry_remove(bert_registry *r, const char *name, char **err);

/* The entry called `name`, or the default model when name is NULL: the one
 * named "default", else the only one, else $BERT_MODEL registered as
 * "default".  NULL with *err listing what is registered. */
bert_entry *bert_registry_find(bert_registry *r, const char *name, char **err);

/* Make sure the entry's tokenizer / weights and scratch are loaded. 0 or -1 with *err. */
int bert_entry_need_tokenizer(bert_entry *e, char **err);
int bert_entry_need_model(bert_entry *e, char **err);

void bert_registry_clear(bert_registry *r);

/* What bert_models shows of a registration. */
typedef struct {
    const char *name, *path;
    const char *family;          /* config.json's model_type, as bert_family_name spells it */
    int hidden_size, num_layers, num_heads, vocab_size;
    int max_length, normalize;
    const char *pooling;         /* "mean", "cls", "max" or "pooler" */
    const char *precision;       /* how the encoder's weights are held: "float32", "bfloat16", "int8" */
    int loaded;                  /* 1 once the weights are loaded */
    long long encoder_calls;     /* forward passes run */
    /* What the weights hold once loaded; -1, NULL and 0 before. */
    int has_mlm, has_nsp;
    const char *dtype;           /* the file's: "float32", "float16" or "bfloat16" */
    int refs;                    /* users of the shared weights */
    /* The model's task and labels: its heads' once the weights are loaded,
     * before that what config.json's architectures and id2label announce. */
    const char *task;            /* static; NULL for a bare encoder */
    char *const *labels;         /* num_labels names in id order, or NULL */
    int num_labels;
} bert_entry_info;

/* The registration after `at` (NULL: the first) with its facts in *info, or
 * NULL after the last.  The strings live as long as the registration. */
const bert_entry *bert_registry_next(const bert_registry *r, const bert_entry *at, bert_entry_info *info);

const char *bert_entry_name(const bert_entry *e);
int bert_entry_hidden_size(const bert_entry *e);
/* Unique in its registry: tells a re-registered name apart. */
unsigned long bert_entry_serial(const bert_entry *e);
/* The piece that token `id` stands for, once bert_entry_need_tokenizer (or
 * a pipeline call) loaded the tokenizer; NULL for an id out of range. */
const char *bert_entry_token(const bert_entry *e, int32_t id);

#endif
