/*
 * internal.h - what the extension itself does not call: functions for the
 * tests, fuzzers and benchmarks, which look inside its modules.
 */
#ifndef BERT_INTERNAL_H
#define BERT_INTERNAL_H

#include "encoder.h"
#include "json.h"
#include "safetensors.h"
#include "tok_internal.h"
#include "tokenizer.h"

/* Bytes currently held by the scratch buffers. */
size_t bert_scratch_bytes(const bert_scratch *s);

/* Validates an in-memory image of a file, which must outlive the result.
 * `label` names it in error messages. */
int bert_safetensors_parse(const unsigned char *buf, size_t size, const char *label, st_file **out, char **err);
int bert_safetensors_count(const st_file *f);
const st_tensor *bert_safetensors_tensor_at(const st_file *f, int i);   /* sorted by name */
/* Bytes per element of a dtype. */
size_t bert_safetensors_dtype_size(st_dtype t);

const bert_tokenizer_settings *bert_tokenizer_get_settings(const bert_tokenizer *tok);
/* The id of a vocabulary entry, or -1. */
int32_t bert_tokenizer_find(const bert_tokenizer *tok, const char *token, size_t len);
/* 1 when `id` is one of the special (never split, skipped in decode) tokens. */
int bert_tokenizer_is_special(const bert_tokenizer *tok, int32_t id);

/* How many distinct weight files are mapped in this process. */
int bert_weight_cache_count(void);

#endif
