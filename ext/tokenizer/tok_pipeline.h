/*
 * tok_pipeline.h - the stages of the general tokenizer pipeline (byte-level
 * BPE, Unigram), shared by its files:
 *
 *   tok_normalize.c    the aligned string and the normalizers
 *   tok_pretokenize.c  pre-tokenizers: ByteLevel, Metaspace, WhitespaceSplit
 *   tok_bpe.c          the BPE model (merges by rank)
 *   tok_unigram.c      the Unigram model (Viterbi over piece scores)
 *   tok_decode.c       decoders
 *   tok_json.c         reading tokenizer.json, vocab.json and merges.txt
 *   tok_pipeline.c     added tokens and the encode that runs the stages
 */
#ifndef BERT_TOK_PIPELINE_H
#define BERT_TOK_PIPELINE_H

#include "tok_internal.h"
#include "vocab.h"

#include <stddef.h>
#include <stdint.h>

/* ---- the aligned string -------------------------------------------------- */

/* The span of the original text (bytes) one byte of a normalized string
 * came from. */
typedef struct {
    int64_t start, end;
} tok_align;

/* A normalized string, valid UTF-8, with the alignment of each byte, as the
 * Rust library's NormalizedString keeps them.  `origin` is where its
 * original text starts: an inserted character with nothing before it is
 * aligned to the empty span there. */
typedef struct {
    char *s;
    tok_align *al;
    size_t len, cap;
    int64_t origin;
} tok_str;

/* One character of a transformation: the new character and `change`: 1 for
 * an inserted character, 0 for one that replaces the next character, -N for
 * one that replaces it and removes the N after it (NormalizedString's
 * transform). */
typedef struct {
    int32_t cp;
    int32_t change;
} tok_change;

typedef struct {
    tok_change *at;
    size_t len, cap;
} tok_changes;

void tok_str_free(tok_str *s);
/* Appends one character aligned to `al`.  0, or -1 when out of memory. */
int tok_str_push(tok_str *s, int32_t cp, tok_align al);
/* A copy of s[from..to) (bytes on character boundaries). */
int tok_str_slice(const tok_str *s, size_t from, size_t to, tok_str *out);
int tok_changes_push(tok_changes *c, int32_t cp, int32_t change);
/* Rewrites `s` by the changes, after dropping its first `initial_removed`
 * characters, with the Rust library's alignment rules.  0, or -1. */
int tok_str_transform(tok_str *s, const tok_changes *c, size_t initial_removed);
/* Decodes one character of valid UTF-8 at s[0..len): returns its length. */
size_t tok_utf8_next(const char *s, size_t len, int32_t *cp);

/* ---- normalizers --------------------------------------------------------- */

typedef struct tok_precompiled tok_precompiled;

typedef enum {
    NORM_PRECOMPILED, NORM_REPLACE, NORM_NFD, NORM_NFKD, NORM_NFC, NORM_NFKC, NORM_STRIP_ACCENTS,
    NORM_LOWERCASE, NORM_STRIP, NORM_PREPEND
} tok_norm_kind;

typedef struct {
    tok_norm_kind kind;
    char *pattern;        /* Replace: the text matched (one character for a repeat) */
    size_t pattern_len;
    int min_repeat;       /* Replace with Regex "X{n,}": at least n of the character; 0: the literal pattern */
    char *content;        /* Replace: the replacement; Prepend: the prefix */
    int left, right;      /* Strip */
    tok_precompiled *pc;
} tok_norm;

/* Decodes a Precompiled normalizer's charsmap (base64) of the file `path`:
 * 0, or -1 with *err (naming the file when the charsmap is malformed). */
int tok_precompiled_load(const char *base64, const char *path, tok_precompiled **out, char **err);
void tok_precompiled_free(tok_precompiled *pc);
/* Runs the normalizers in turn.  0, or -1 when out of memory. */
int tok_normalize(const tok_norm *n, size_t count, tok_str *s);

/* ---- pre-tokenizers ------------------------------------------------------ */

typedef enum { PRE_BYTE_LEVEL, PRE_METASPACE, PRE_WHITESPACE_SPLIT, PRE_WHITESPACE } tok_pre_kind;
enum { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER };

typedef struct {
    tok_pre_kind kind;
    int add_prefix_space;   /* ByteLevel */
    int use_regex;          /* ByteLevel: GPT-2's split */
    int32_t replacement;    /* Metaspace */
    int prepend_scheme;     /* Metaspace */
    int split;              /* Metaspace */
} tok_pre;

/* The words of a pre-tokenizer, each an aligned string. */
typedef struct {
    tok_str *at;
    size_t len, cap;
} tok_words;

void tok_words_free(tok_words *w);
/* Runs the pre-tokenizers in turn over `s` (which they take over), leaving
 * the words in `out`.  0, or -1 when out of memory. */
int tok_pre_tokenize(const tok_pre *pre, size_t count, tok_str *s, tok_words *out);
/* The byte-level alphabet: the character that stands for byte b. */
int32_t tok_byte_char(unsigned char b);
/* The byte a byte-level character stands for, or -1. */
int tok_char_byte(int32_t cp);

/* ---- models -------------------------------------------------------------- */

/* A token of a word: its id and its bytes in the word. */
typedef struct {
    int32_t id;
    uint32_t start, end;
} tok_piece;

typedef struct {
    tok_piece *at;
    size_t len, cap;
} tok_pieces;

typedef struct tok_bpe tok_bpe;
typedef struct tok_unigram tok_unigram;

/* `vocab` stays the caller's. merges are "left right" pairs, in rank
 * order; an id of -1 in `unk` means no unknown token. */
int tok_bpe_new(const bert_vocab *vocab, tok_bpe **out);
/* Adds the merge of rank `rank` (lower merges first); -1 when out of
 * memory, 1 when a part is not in the vocabulary (skipped). */
int tok_bpe_add_merge(tok_bpe *b, const char *left, size_t llen, const char *right, size_t rlen);
void tok_bpe_set_options(tok_bpe *b, int32_t unk, int fuse_unk, int byte_fallback, int ignore_merges,
                         const char *prefix, const char *suffix);
void tok_bpe_free(tok_bpe *b);
/* 1 when the model has a continuing_subword_prefix. */
int tok_bpe_has_prefix(const tok_bpe *b);
int tok_bpe_tokenize(const tok_bpe *b, const char *word, size_t len, tok_pieces *out);

/* Pieces in id order with their scores. */
int tok_unigram_new(const bert_vocab *vocab, const double *scores, int32_t unk, int byte_fallback,
                    int fuse_unk, tok_unigram **out);
void tok_unigram_free(tok_unigram *u);
int tok_unigram_tokenize(const tok_unigram *u, const char *word, size_t len, tok_pieces *out);

int tok_pieces_push(tok_pieces *p, int32_t id, size_t start, size_t end);

/* tok_word_cache.c: the model's pieces of recent words, for one owner (the
 * pipeline it was filled by); kept by a caller between encodes, used by one
 * thread at a time. */
tok_word_cache *tok_word_cache_new(const void *owner);
const void *tok_word_cache_owner(const tok_word_cache *c);
/* 1 with the word's pieces appended to out, 0 when not kept, -1 when out of memory. */
int tok_word_cache_get(const tok_word_cache *c, const char *w, size_t len, tok_pieces *out);
void tok_word_cache_put(tok_word_cache *c, const char *w, size_t len, const tok_piece *p, size_t n);

/* ---- decoders ------------------------------------------------------------ */

typedef enum { DEC_NONE, DEC_BYTE_LEVEL, DEC_METASPACE, DEC_WORDPIECE, DEC_REPLACE, DEC_BYTE_FALLBACK,
               DEC_FUSE, DEC_STRIP } tok_dec_kind;

typedef struct {
    tok_dec_kind kind;
    int32_t replacement;    /* Metaspace */
    int prepend_scheme;     /* Metaspace */
    char *from, *to;        /* Replace (a literal pattern); WordPiece: the prefix in from */
    int cleanup;            /* WordPiece */
    int strip_left, strip_right;  /* Strip: characters (of `content`) */
    int32_t strip_char;
} tok_dec;

/* Decodes the tokens (NUL-terminated strings) into a malloc'd text. */
char *tok_decode(const tok_dec *d, size_t count, const char *const *tokens, size_t n);

/* ---- the pipeline itself ------------------------------------------------- */

/* An added token of tokenizer.json (or the config files). */
typedef struct {
    char *content;        /* as written */
    char *match;          /* what is matched: the content, or its normalized form */
    size_t match_len;
    int32_t id;
    int special, normalized, lstrip, rstrip, single_word;
} tok_added;

/* Added tokens matched in one text (raw or normalized), grouped by first
 * byte, longest first. */
typedef struct {
    tok_added **tokens;
    size_t n;
    size_t bucket[257];
} tok_added_set;

struct tok_pipeline {
    bert_vocab vocab;            /* id -> token, the model's and the added ones */
    tok_norm *norm;
    size_t n_norm;
    tok_pre *pre;
    size_t n_pre;
    tok_bpe *bpe;                /* the model: BPE, or */
    tok_unigram *unigram;        /* Unigram */
    tok_dec *dec;
    size_t n_dec;
    int has_decoder;             /* 0: tokens joined with spaces */
    tok_added *added;
    size_t n_added;
    tok_added_set raw, normalized;
    unsigned char *special_id;   /* per id: 1 for a special added token */
    bert_special_ids specials;
    int32_t model_unk;
    int cleanup_spaces;
};

/* tok_json.c: the stages from tokenizer.json, or vocab.json + merges.txt. */
int tok_json_load_stages(tok_pipeline *p, bert_model_files *files, const json_doc *tj, char **err);

#endif
