/*
 * vocab.h - a WordPiece vocabulary: id -> token and token -> id.
 *
 * Tokens live back to back in one buffer; the reverse map is an open
 * addressing hash table of ids.  Lookups take the token in two parts (a
 * prefix such as "##" and a piece of the text) so WordPiece never copies a
 * candidate to look it up.  A vocabulary is immutable once built.
 */
#ifndef BERT_VOCAB_H
#define BERT_VOCAB_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *text;          /* every token, each followed by a NUL */
    size_t text_len, text_cap;
    size_t *offset;      /* id -> start of its token in text */
    uint32_t *length;    /* id -> its length in bytes */
    int32_t count;
    size_t cap;          /* room in offset and length */
    int32_t *slots;      /* hash table of ids, -1 for an empty slot */
    uint32_t mask;       /* slot count - 1 (a power of two) */
    size_t max_length;   /* the longest token, in bytes */
} bert_vocab;

/* Reads vocab.txt's contents: one token a line (the line break, \n or \r\n,
 * is not part of it), id = line number from 0.  When a token appears twice,
 * lookups find the later id, as in Hugging Face's loaders.
 * Returns 0, or -1 when out of memory or the file holds too many lines. */
int bert_vocab_parse(bert_vocab *v, const char *data, size_t len);

/* Appends a token with the next id.  Returns the id, or -1 when out of memory. */
int32_t bert_vocab_append(bert_vocab *v, const char *token, size_t len);

void bert_vocab_free(bert_vocab *v);

/* The id of prefix+piece, or -1.  prefix may be NULL when plen is 0. */
int32_t bert_vocab_find2(const bert_vocab *v, const char *prefix, size_t plen, const char *piece, size_t len);

static inline int32_t bert_vocab_find(const bert_vocab *v, const char *token, size_t len)
{
    return bert_vocab_find2(v, NULL, 0, token, len);
}

/* The token of `id` (NUL-terminated) or NULL when out of range. */
static inline const char *bert_vocab_token(const bert_vocab *v, int32_t id)
{
    return id >= 0 && id < v->count ? v->text + v->offset[id] : NULL;
}

static inline size_t bert_vocab_token_length(const bert_vocab *v, int32_t id)
{
    return id >= 0 && id < v->count ? v->length[id] : 0;
}

#endif
