/*
 * checkpoint.h - which files make a model directory's checkpoint, found and
 * checked before anything is loaded.
 *
 * The weights are model.safetensors, or the shards that
 * model.safetensors.index.json names (its "weight_map": tensor -> file).
 * A Hugging Face cache folder (models--org--name, with refs/main and
 * snapshots/<commit>/) stands for the snapshot refs/main names.
 */
#ifndef BERT_CHECKPOINT_H
#define BERT_CHECKPOINT_H

#include "../base/model_files.h"
#include "safetensors.h"

/* The model directory `path` stands for: itself, or the snapshot of a
 * Hugging Face cache folder (the folder itself or its snapshots/).  A new
 * malloc'd path, or NULL with *err (malloc'd) saying where to point. */
char *bert_checkpoint_dir(const char *path, char **err);

/* The file whose identity is the weights': model.safetensors, or
 * model.safetensors.index.json when there is no single file.  Malloc'd, or
 * NULL with *err saying what is missing and what to do (a directory with
 * only pytorch_model.bin gets the command that converts it). */
char *bert_checkpoint_weights_file(bert_model_files *files, char **err);

/* Maps the weights, every shard of a sharded checkpoint, as one st_file
 * whose headers are checked (bert_safetensors_open); *label (malloc'd) is
 * the file to name in messages.  0, or -1 with *err. */
int bert_checkpoint_open(bert_model_files *files, st_file **out, char **label, char **err);

/* What bert_load checks before it registers a directory, all of it cheap:
 * a tokenizer file (vocab.txt, tokenizer.json, or vocab.json with
 * merges.txt) that is not a Git LFS pointer, and the weights (present,
 * each safetensors header whole, its tensors' data inside the file, not a
 * Git LFS pointer).  The data itself is neither read nor kept mapped.
 * 0, or -1 with *err. */
int bert_checkpoint_check(bert_model_files *files, char **err);

#endif
