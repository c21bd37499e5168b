/*
 * chunks.h - a text's word pieces with their character offsets
 * (bert_tokenize_offsets), and a long text cut into pieces of at most a
 * given number of word pieces, between words (bert_chunks).  Knows nothing
 * of SQLite; sqlite_vtab.c formats the rows.
 */
#ifndef BERT_CHUNKS_H
#define BERT_CHUNKS_H

#include "registry.h"

/* [CLS] pieces [SEP] as bert_tokenize gives them (cut to max_length when
 * the model truncates), each with its span; [CLS] and [SEP] get Hugging
 * Face's (0, 0) and word -1.  0, or -1 with *err. */
int bert_tokenize_offsets(bert_entry *e, const char *text, size_t len, bert_ids *ids, bert_spans *spans, char **err);

/* The whole text's pieces (no [CLS]/[SEP], never truncated) with their
 * spans, for bert_chunks.  0, or -1 with *err. */
int bert_chunks_tokenize(bert_entry *e, const char *text, size_t len, bert_spans *spans, char **err);

/* The largest max_tokens a model allows: its max_length - 2. */
int bert_chunks_max_tokens(const bert_entry *e);

/* Cuts pieces into chunks, one at a time.  A chunk holds at most
 * max_tokens pieces and ends at a word boundary (pieces of different
 * pre-tokenizer words on either side), the last one that fits; only when
 * the word at the chunk's start alone is longer than max_tokens is it cut
 * between pieces.  The next chunk starts at the first word boundary at or
 * after `overlap` pieces before the end (so consecutive chunks share at most
 * `overlap` pieces, exactly that many when a word boundary falls there;
 * inside an over-long word every piece is a boundary); when that chunk
 * would end where the previous one did, it starts at the previous end
 * instead, without overlap. */
typedef struct {
    const bert_token_span *at;
    size_t n, max_tokens, overlap;
    size_t start;             /* the next chunk's first piece; n when done */
    size_t next_end;          /* that chunk's end, when known (0: not yet) */
    int next_forced;
    unsigned long long work;  /* pieces looked at so far: linear in n */
} bert_chunker;

/* 1 <= max_tokens, overlap < max_tokens. */
void bert_chunker_init(bert_chunker *c, const bert_token_span *at, size_t n, size_t max_tokens, size_t overlap);

/* The next chunk's pieces [*first, *end): 1, or 0 when there are no more. */
int bert_chunker_next(bert_chunker *c, size_t *first, size_t *end);

#endif
