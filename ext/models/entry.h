/*
 * entry.h - the inside of a registered model, for registry.c, which owns
 * it, and pipeline.c, chunks.c and model_view.c, which compute with it.  Everything else sees a
 * bert_entry through registry.h only, the handle API.
 */
#ifndef BERT_ENTRY_H
#define BERT_ENTRY_H

#include "../base/buffer.h"
#include "../encoder/encoder.h"
#include "../base/interrupt.h"
#include "../base/model_files.h"
#include "../encoder/model.h"
#include "registry.h"
#include "../tokenizer/tokenizer.h"

#include <sys/types.h>

struct bert_entry {
    char *name;
    char *path;             /* as the user spelled it */
    bert_model_files *files;  /* the directory, read once for every loader */
    dev_t dir_dev;          /* the directory's identity: two spellings of one */
    ino_t dir_ino;          /* directory are the same model */
    bert_options given;     /* options as the user gave them */
    bert_config cfg;        /* read at registration */
    bert_st_config st;      /* sentence-transformers settings, read at registration */
    bert_head_config announced; /* config.json's architectures and labels, read at registration
                                 * (empty when it names none or they cannot be read) */
    bert_pooling pooling;   /* effective settings */
    int normalize;
    int max_length;
    int truncate;
    int threads;
    bert_aggregation aggregation; /* how bert_ner groups pieces */
    bert_precision precision;    /* of the weights this entry takes from the cache */
    char *prompt;                /* prepended to every text it embeds or tokenizes; NULL for none */
    bert_text prompted;          /* the prompt and the current text, kept between calls */
    bert_tokenizer *tokenizer;   /* NULL until first needed */
    const bert_model *model;     /* NULL until first needed; shared, see weight_cache.h */
    bert_scratch *scratch;       /* this connection's buffers for this model */
    bert_ids ids;                /* token ids of the current text, kept between calls */
    bert_encode_buffers tokenizing; /* the tokenizer's working memory, kept too */
    unsigned long serial;        /* unique in its registry: tells a re-registered name apart */
    long long encoder_calls;     /* forward passes run, for bert_models */
    struct bert_entry *next;
};

/* bert_encode on the entry's weights and scratch (bert_entry_need_model first),
 * counted in encoder_calls. */
const float *bert_entry_encode(bert_entry *e, const int32_t *ids, const int32_t *type_ids,
                          const int *lengths, int n_seqs, bert_interrupt_fn interrupted,
                          void *ctx, char **err);

/* The same where sequence i attends to its first keys[i] positions only
 * (bert_encode_keys). */
const float *bert_entry_encode_keys(bert_entry *e, const int32_t *ids, const int32_t *type_ids, const int *lengths,
                                    const int *keys, int n_seqs, bert_interrupt_fn interrupted, void *ctx,
                                    char **err);

/* The same with an observer (encoder.h), for the model's own view of a text. */
const float *bert_entry_encode_observed(bert_entry *e, const int32_t *ids, const int *lengths, int n_seqs,
                                        const bert_observer *observer, bert_interrupt_fn interrupted, void *ctx,
                                        char **err);

#endif
