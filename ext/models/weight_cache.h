/*
 * weight_cache.h - the process-wide cache of loaded model weights.
 *
 * A model directory's weights (model.safetensors, or the shards of a sharded
 * checkpoint) are mapped once per process, however
 * many connections use it: entries are keyed by the file's identity (device
 * and inode), its config.json's and the precision the weights are held at,
 * and reference-counted; the last release frees the weights.
 * This is the extension's only global mutable state, and a mutex guards it.
 */
#ifndef BERT_WEIGHT_CACHE_H
#define BERT_WEIGHT_CACHE_H

#include "../base/model_files.h"
#include "../encoder/model.h"

/* Returns the shared model of the directory `files` reads, at `precision`, loading it on
 * first use.  NULL with *err (malloc'd) when it cannot be loaded. */
const bert_model *bert_weight_cache_acquire(bert_model_files *files, bert_precision precision, char **err);

/* Gives back one reference taken by bert_weight_cache_acquire. */
void bert_weight_cache_release(const bert_model *m);

/* How many references (one per connection and model name) hold `m`. */
int bert_weight_cache_refs(const bert_model *m);

/* For the tests: how many distinct weight files are mapped in this process. */
int bert_weight_cache_count(void);

#endif
