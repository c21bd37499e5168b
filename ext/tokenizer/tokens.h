/*
 * tokens.h - what a tokenizer's output is made of: growable arrays of token
 * ids and of their spans in the text, a model's special ids, and the
 * working memory an encode may keep between calls.
 *
 * The stages of the tokenizer write into these and tokenizer.c hands them to
 * its callers, so they stand below both; tokenizer.h includes this header,
 * so the layers above see them through it.
 */
#ifndef BERT_TOKENS_H
#define BERT_TOKENS_H

#include <stddef.h>
#include <stdint.h>

typedef struct tok_word_cache tok_word_cache;

/* A growable array of token ids. Zero-initialise, then push; free when done. */
typedef struct {
    int32_t *ids;
    size_t len, cap;
} bert_ids;

int bert_ids_push(bert_ids *v, int32_t id);   /* 0, or -1 when out of memory */
void bert_ids_free(bert_ids *v);

/* The model's own special tokens, whatever the family: cls is BERT's [CLS]
 * or RoBERTa's <s> (the bos token), sep [SEP] or </s> (eos), mask [MASK] or
 * <mask>.  -1 where the tokenizer lacks one. */
typedef struct {
    int32_t cls, sep, mask, pad, unk;
} bert_special_ids;

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
    /* BPE and Unigram: the pieces of recent words (bounded), for the
     * tokenizer that filled it; another tokenizer starts it afresh. */
    tok_word_cache *words;
} bert_encode_buffers;
void bert_encode_buffers_free(bert_encode_buffers *b);
/* tok_word_cache.c's, for bert_encode_buffers_free. */
void tok_word_cache_free(tok_word_cache *c);

/* Where a token came from in the text it was read from, as Hugging Face's
 * offset mapping gives it: a word piece spans its characters (a "##" piece
 * without the prefix), a word that became one [UNK] the whole word, an
 * added token its match; through lowercasing, accent stripping, CJK spacing
 * and removed control characters every normalized character keeps the span
 * of the original character it came from. */
typedef struct {
    /* Characters, end exclusive, counted as SQLite's substr and length
     * count them, so substr(text, start + 1, end - start) is the span.  For
     * valid UTF-8 a character is a code point (as Python and the Rust
     * library's Node binding count); in ill-formed UTF-8 a character starts
     * at every byte except a continuation byte (10xxxxxx) that follows a
     * byte >= 0xC0 or its continuation bytes.  (SQLite's substr and length
     * stop at a NUL character; these offsets count on past it.) */
    int64_t start, end;
    /* The bytes the token was decoded from.  In valid UTF-8 they are the
     * bytes of characters start..end; in ill-formed UTF-8 the characters
     * may take a few more continuation bytes (bert_text_char_bytes in
     * tokenizer.h). */
    int64_t byte_start, byte_end;
    /* The pre-tokenizer word, from 0 in each call: the pieces of one word
     * share it; an added token is a word of its own. */
    int64_t word;
} bert_token_span;

/* A growable array of spans. Zero-initialise; free when done. */
typedef struct {
    bert_token_span *at;
    size_t len, cap;
} bert_spans;
int bert_spans_push(bert_spans *v, bert_token_span span);   /* 0, or -1 when out of memory */
void bert_spans_free(bert_spans *v);

#endif
