/*
 * registry.h - the models one connection has registered by name.
 *
 * bert_load() only records a name, a directory and options after checking
 * that config.json is readable.  The tokenizer is read by the first call that
 * tokenizes, the weights are taken from the process-wide cache by the first
 * call that runs the encoder, and the scratch buffers belong to the entry, so
 * each connection computes in its own memory.
 */
#ifndef BERT_REGISTRY_H
#define BERT_REGISTRY_H

#include "encoder.h"
#include "entities.h"
#include "model.h"
#include "tokenizer.h"

#include <sys/types.h>

/* What a user may set in bert_load's options JSON; -1 / 0 mean "not given". */
typedef struct {
    int pooling;      /* bert_pooling, or -1 for the model's own */
    int normalize;    /* 1, 0, or -1 for the model's own */
    int max_length;   /* tokens incl. [CLS] and [SEP], 0 for the model's own */
    int truncate;     /* 1 (default): cut silently; 0: error on longer input */
    int threads;      /* OpenBLAS threads, 0 for the default */
    int aggregation;  /* bert_aggregation of bert_ner, -1 for the default ("simple") */
} bert_options;

typedef struct bert_entry {
    char *name;
    char *path;             /* as the user spelled it */
    dev_t dir_dev;          /* the directory's identity: two spellings of one */
    ino_t dir_ino;          /* directory are the same model */
    bert_options given;     /* options as the user gave them */
    bert_config cfg;        /* read at registration */
    bert_st_config st;      /* sentence-transformers settings, read at registration */
    bert_pooling pooling;   /* effective settings */
    int normalize;
    int max_length;
    int truncate;
    int threads;
    bert_aggregation aggregation;
    bert_tokenizer *tokenizer;   /* NULL until first needed */
    const bert_model *model;     /* NULL until first needed; shared, see weight_cache.h */
    bert_scratch *scratch;       /* this connection's buffers for this model */
    bert_ids ids;                /* token ids of the current text, kept between calls */
    bert_encode_buffers tokenizing; /* the tokenizer's working memory, kept too */
    unsigned long serial;        /* unique in its registry: tells a re-registered name apart */
    long long encoder_calls;     /* forward passes run, for bert_models */
    struct bert_entry *next;
} bert_entry;

typedef struct {
    bert_entry *head;
    unsigned long serial;        /* the last serial handed out */
} bert_registry;

/* Parses bert_load's options (NULL or "" for none). 0, or -1 with *err. */
int bert_options_parse(const char *json, bert_options *out, char **err);

/* Registers `path` as `name`.  The same name for the same directory (however
 * spelled) with options of the same effect is a no-op; anything else under a
 * registered name is an error naming both.  0, or -1 with *err (malloc'd). */
int registry_add(bert_registry *r, const char *name, const char *path,
                 const bert_options *opts, char **err);

/* Drops a registration and what it holds. 0, or -1 with *err when unknown. */
int registry_remove(bert_registry *r, const char *name, char **err);

/* The entry called `name`, or the default model when name is NULL: the one
 * named "default", else the only one, else $BERT_MODEL registered as
 * "default".  NULL with *err listing what is registered. */
bert_entry *registry_find(bert_registry *r, const char *name, char **err);

/* Make sure the entry's tokenizer / weights and scratch are loaded. 0 or -1 with *err. */
int entry_need_tokenizer(bert_entry *e, char **err);
int entry_need_model(bert_entry *e, char **err);

/* bert_encode on the entry's weights and scratch (entry_need_model first),
 * counted in encoder_calls. */
const float *entry_encode(bert_entry *e, const int32_t *ids, const int32_t *type_ids,
                          const int *lengths, int n_seqs, bert_interrupt_fn interrupted,
                          void *ctx, char **err);

void registry_clear(bert_registry *r);

const char *bert_pooling_name(bert_pooling p);

#endif
