/*
 * model_files.h - a model directory as its loaders read it: the files it
 * holds, asked of the file system once each, and its JSON files parsed
 * once each.  The registry makes one per registered model and hands it to
 * every loader (configuration, sentence-transformers files, checkpoint,
 * tokenizer), so that none of them joins paths or probes files itself, and
 * an error still names the file at fault (dir/name).
 *
 * Not thread-safe: it belongs to the one registered model that reads it.
 */
#ifndef BERT_MODEL_FILES_H
#define BERT_MODEL_FILES_H

#include "json.h"

typedef struct bert_model_files bert_model_files;

/* The files of `dir`, not read yet.  NULL when memory ran out. */
bert_model_files *bert_model_files_new(const char *dir);
void bert_model_files_free(bert_model_files *f);

/* The directory, as given. */
const char *bert_model_files_dir(const bert_model_files *f);

/* "dir/name", malloc'd; NULL when memory ran out. */
char *bert_model_files_path(const bert_model_files *f, const char *name);

/* 1 when dir/name exists (a file or a folder), 0 when it does not, -1 when
 * memory ran out. */
int bert_model_files_has(bert_model_files *f, const char *name);

/* The JSON file dir/name, parsed on the first call: 1 with *doc (owned by
 * f, valid until bert_model_files_free), 0 when the file does not exist,
 * -1 with *err (malloc'd) naming the file when it does not parse or its
 * top level is not an object (nor, with allow_array, an array). */
int bert_model_files_json(bert_model_files *f, const char *name, int allow_array, const json_doc **doc,
                          char **err);

/* Frees the parsed JSON of dir/name, a large file (tokenizer.json) that its
 * one reader is done with; a later call parses it again. */
void bert_model_files_drop(bert_model_files *f, const char *name);

#endif
