/*
 * tokenizer.h - BERT's WordPiece tokenizer, identical to Hugging Face's
 * (the BertNormalizer + BertPreTokenizer + WordPiece pipeline of
 * tokenizer.json).  Unicode properties come from utf8proc.
 *
 * A tokenizer is read from a model directory (vocab.txt, and tokenizer.json
 * and/or tokenizer_config.json when present) and is immutable afterwards, so
 * one tokenizer may be used from several threads at once.
 */
#ifndef BERT_TOKENIZER_H
#define BERT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

typedef struct bert_tokenizer bert_tokenizer;

/* A growable array of token ids. Zero-initialise, then push; free when done. */
typedef struct {
    int32_t *ids;
    size_t len, cap;
} bert_ids;

int bert_ids_push(bert_ids *v, int32_t id);   /* 0, or -1 when out of memory */
void bert_ids_free(bert_ids *v);

/* The settings the tokenizer runs with, read from the model directory. */
typedef struct {
    int lowercase;            /* do_lower_case / normalizer.lowercase */
    int strip_accents;        /* 1, 0, or -1 for null (= follow lowercase) */
    int chinese_chars;        /* tokenize_chinese_chars / handle_chinese_chars */
    int model_max_length;     /* from tokenizer_config.json; 0 when absent or unbounded */
    int max_input_chars_per_word; /* 100 unless tokenizer.json says otherwise */
} bert_tokenizer_settings;

typedef struct {
    int32_t cls, sep, mask, pad, unk;  /* -1 where the vocabulary lacks one */
} bert_special_ids;

/* Reads `model_dir`/vocab.txt and the optional tokenizer files.
 * Returns 0, or -1 with *err set to a malloc'd message naming the file and the fix. */
int bert_tokenizer_load(const char *model_dir, bert_tokenizer **out, char **err);
void bert_tokenizer_free(bert_tokenizer *tok);

/* The model_max_length of `model_dir`/tokenizer_config.json as the
 * tokenizer's settings read it, without loading the tokenizer. */
int bert_tokenizer_model_max_length(const char *model_dir);

/* Appends the ids of `text` (len bytes, need not be NUL-terminated, may hold
 * invalid UTF-8, which is read as U+FFFD) to `out`, WITHOUT [CLS]/[SEP] and
 * without truncation.  Special tokens written in the text are kept whole.
 * Linear in len.  Returns 0, or -1 when out of memory. */
int bert_tokenizer_encode(const bert_tokenizer *tok, const char *text, size_t len, bert_ids *out);

/* The same, but stops reading the text once `out` holds max_ids ids, so a
 * caller that truncates anyway does not pay for (or hold) the whole text's
 * tokens. */
int bert_tokenizer_encode_max(const bert_tokenizer *tok, const char *text, size_t len, size_t max_ids,
                              bert_ids *out);

/* Working memory of an encode that a caller may keep from one call to the
 * next, so that encoding in steady state does not allocate.  Zero it before
 * first use; free it with bert_encode_buffers_free. */
typedef struct {
    char *word;
    size_t word_cap;
    int32_t *marks;
    size_t marks_cap;
} bert_encode_buffers;
void bert_encode_buffers_free(bert_encode_buffers *b);

/* bert_tokenizer_encode_max with kept buffers (NULL: none kept). */
int bert_tokenizer_encode_with(const bert_tokenizer *tok, const char *text, size_t len, size_t max_ids,
                               bert_ids *out, bert_encode_buffers *keep);

/* Hugging Face's decode(): joins "##" pieces, drops special tokens when
 * skip_special is set, applies clean_up_tokenization_spaces when the
 * tokenizer config asks for it (the default).  Returns a malloc'd string. */
char *bert_tokenizer_decode(const bert_tokenizer *tok, const int32_t *ids, size_t n, int skip_special);

size_t bert_tokenizer_vocab_size(const bert_tokenizer *tok);
/* The vocabulary entry of `id`, or NULL when out of range. */
const char *bert_tokenizer_token(const bert_tokenizer *tok, int32_t id);
/* The id of a vocabulary entry, or -1. */
int32_t bert_tokenizer_find(const bert_tokenizer *tok, const char *token, size_t len);
const bert_special_ids *bert_tokenizer_specials(const bert_tokenizer *tok);
/* 1 when `id` is one of the special (never split, skipped in decode) tokens. */
int bert_tokenizer_is_special(const bert_tokenizer *tok, int32_t id);
const bert_tokenizer_settings *bert_tokenizer_get_settings(const bert_tokenizer *tok);

#endif
