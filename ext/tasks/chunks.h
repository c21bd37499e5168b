/*
 * chunks.h - a text's word pieces with their character offsets
 * (bert_tokenize_offsets), and a long text cut into pieces of at most a
 * given number of word pieces, between words (bert_chunks).  Knows nothing
 * of SQLite; sql/tables.c formats the rows.
 */
#ifndef BERT_CHUNKS_H
#define BERT_CHUNKS_H

#include "../models/registry.h"
#include "../tokenizer/tokenizer.h"

/* [CLS] pieces [SEP] as bert_tokenize gives them (cut to max_length when
 * the model truncates), each with its span; [CLS] and [SEP] get Hugging
 * Face's (0, 0) and word -1.  0, or -1 with *err. */
int bert_tokenize_offsets(bert_entry *e, const char *text, size_t len, bert_ids *ids, bert_spans *spans, char **err);

/* The texts of tokens ids[0..n) on e, copied into one block, token i at
 * *names + (*at)[i]: a function in the same query may unload the model
 * (and its vocabulary) before a row is read.  0, or -1 when out of memory
 * (*names and *at are then NULL). */
int bert_token_texts(const bert_entry *e, const int32_t *ids, size_t n, char **names, size_t **at);

/* The whole text's pieces (no [CLS]/[SEP], never truncated) with their
 * spans, fitted to the text by bert_chunks_fit, for bert_chunks.  0, or -1
 * with *err. */
int bert_chunks_tokenize(bert_entry *e, const char *text, size_t len, bert_spans *spans, char **err);

/* Rewrites the spans of a whole text's pieces (bert_tokenizer_encode_spans
 * of text, len) for cutting into chunks, in one pass over the text:
 * - where a cut may fall between pieces i-1 and i, piece i-1's end and piece
 *   i's start (bytes and characters) become the ends of chunks that end and
 *   begin there: moved out to whole grapheme clusters, and over the text in
 *   between that gives no piece (removed zero-width and control characters,
 *   stripped accents) up to the white space, so that every character that
 *   is not white space stays in a chunk; the first piece's start and the
 *   last piece's end take the text before and after the pieces alike;
 * - `word` is renumbered to say where a cut may fall: it is the same as the
 *   previous piece's where the two share a character or a grapheme cluster
 *   (a Hangul syllable read as jamo, a letter and its marks: never cut), one
 *   more inside a pre-tokenizer word (cut only when the word alone is longer
 *   than max_tokens), two more at a word boundary.
 * Other spans keep the tokenizer's offsets.  0, or -1 when out of memory. */
int bert_chunks_fit(const char *text, size_t len, bert_token_span *at, size_t n);

/* The largest max_tokens a model allows: its max_length - 2. */
int bert_chunks_max_tokens(const bert_entry *e);

/* Cuts pieces fitted by bert_chunks_fit into chunks, one at a time.  A
 * chunk holds at most max_tokens pieces and ends at a word boundary, the
 * last one that fits; only when the word at the chunk's start alone is
 * longer than max_tokens is it cut inside, at the last cut that fits (and
 * only when one character or cluster alone gives more than max_tokens
 * pieces does a chunk hold more, that whole character).  With an overlap,
 * the next chunk starts at the first boundary at or after `overlap` pieces
 * before the end from which it reaches past that end (inside an over-long
 * word every cut counts as a boundary), so consecutive chunks share at most
 * `overlap` pieces and at least min(overlap, pieces of the chunk - 1,
 * max_tokens - pieces of the word after its end) less those of the longest
 * word; when no boundary does, it starts at the end, without overlap. */
typedef struct {
    const bert_token_span *at;
    size_t n, max_tokens, overlap;
    size_t start;             /* the next chunk's first piece; n when done */
    unsigned long long work;  /* pieces looked at so far: linear in n */
} bert_chunker;

/* 1 <= max_tokens, overlap < max_tokens. */
void bert_chunker_init(bert_chunker *c, const bert_token_span *at, size_t n, size_t max_tokens, size_t overlap);

/* The next chunk's pieces [*first, *end): 1, or 0 when there are no more.
 * Its text is bytes at[*first].byte_start to at[*end - 1].byte_end,
 * characters at[*first].start to at[*end - 1].end. */
int bert_chunker_next(bert_chunker *c, size_t *first, size_t *end);

#endif
