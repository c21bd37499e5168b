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

/* Working memory of an encode that a caller may keep from one call to the
 * next, so that encoding in steady state does not allocate.  Zero it before
 * first use; free it with bert_encode_buffers_free. */
typedef struct {
    char *word;
    size_t word_cap;
    int32_t *marks;
    size_t marks_cap;
    char *normalized;
    size_t normalized_cap;
} bert_encode_buffers;
void bert_encode_buffers_free(bert_encode_buffers *b);

/* Appends the ids of `text` (len bytes, need not be NUL-terminated, may hold
 * invalid UTF-8, which is read as U+FFFD) to `out`, WITHOUT [CLS]/[SEP] and
 * without truncation.  Special tokens written in the text are kept whole.
 * Linear in len.  Stops reading the text once `out` holds max_ids ids
 * (SIZE_MAX: no limit), so a caller that truncates anyway does not pay for
 * (or hold) the whole text's tokens.  `keep` (or NULL) holds the working
 * memory between calls.  Returns 0, or -1 when out of memory. */
int bert_tokenizer_encode(const bert_tokenizer *tok, const char *text, size_t len, size_t max_ids,
                          bert_ids *out, bert_encode_buffers *keep);

/* Hugging Face's decode(): joins "##" pieces, drops special tokens when
 * skip_special is set, applies clean_up_tokenization_spaces when the
 * tokenizer config asks for it (the default).  Returns a malloc'd string. */
char *bert_tokenizer_decode(const bert_tokenizer *tok, const int32_t *ids, size_t n, int skip_special);

size_t bert_tokenizer_vocab_size(const bert_tokenizer *tok);
/* The vocabulary entry of `id`, or NULL when out of range. */
const char *bert_tokenizer_token(const bert_tokenizer *tok, int32_t id);
const bert_special_ids *bert_tokenizer_specials(const bert_tokenizer *tok);

#endif
