/*
 * chunks.c - see chunks.h.
 */
#include "chunks.h"
#include "../models/entry.h"
#include "pipeline.h"

#include "../base/buffer.h"
#include "../base/error.h"
#include "../base/unicode_text.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* How a piece's `word` after bert_chunks_fit differs from the one before:
 * what may cut between them. */
enum { CUT_NONE = 0, CUT_INSIDE = 1, CUT_WORD = 2 };

int bert_tokenize_offsets(bert_entry *e, const char *text, size_t len, bert_ids *ids, bert_spans *spans, char **err)
{
    *err = NULL;
    ids->len = spans->len = 0;
    if (bert_entry_need_tokenizer(e, err) != 0 || bert_pipeline_need_layout(e, err) != 0) return -1;
    /* As bert_tokenize: the template's special tokens around the pieces
     * that fit before the closing ones when the model truncates (tokenizing
     * stops there), all of them otherwise. */
    size_t after = (size_t)bert_tokenizer_add_specials(e->tokenizer, 1, NULL, NULL);
    size_t limit = (size_t)e->max_length > after ? (size_t)e->max_length - after : 0;
    size_t stop = e->truncate ? limit : SIZE_MAX;
    if (bert_tokenizer_add_specials(e->tokenizer, 0, ids, spans) < 0 ||
        bert_tokenizer_encode_spans(e->tokenizer, text, len, stop, ids, spans, &e->tokenizing) != 0 ||
        bert_tokenizer_add_specials(e->tokenizer, 1, ids, spans) < 0) {
        *err = bert_errorf("out of memory tokenizing a text of %zu bytes", len);
        return -1;
    }
    return 0;
}

int bert_token_texts(const bert_entry *e, const int32_t *ids, size_t n, char **names, size_t **at)
{
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++) bytes += strlen(bert_entry_token(e, ids[i])) + 1;
    *names = malloc(bytes ? bytes : 1);
    *at = malloc((n + 1) * sizeof **at);
    if (!*names || !*at) {
        free(*names);
        free(*at);
        *names = NULL;
        *at = NULL;
        return -1;
    }
    for (size_t i = 0, to = 0; i < n; i++) {
        const char *name = bert_entry_token(e, ids[i]);
        size_t size = strlen(name) + 1;
        memcpy(*names + to, name, size);
        (*at)[i] = to;
        to += size;
    }
    return 0;
}

int bert_chunks_tokenize(bert_entry *e, const char *text, size_t len, bert_spans *spans, char **err)
{
    *err = NULL;
    spans->len = 0;
    if (bert_entry_need_tokenizer(e, err) != 0) return -1;
    bert_ids ids = {0};
    int rc = bert_tokenizer_encode_spans(e->tokenizer, text, len, SIZE_MAX, &ids, spans, &e->tokenizing);
    bert_ids_free(&ids);
    if (rc == 0) rc = bert_chunks_fit(text, len, spans->at, spans->len);
    if (rc != 0) *err = bert_errorf("out of memory tokenizing a text of %zu bytes for bert_chunks", len);
    return rc;
}

int bert_chunks_max_tokens(const bert_entry *e) { return e->max_length - 2; }

/* ---- fitting the pieces to whole characters ---------------------------------- */

/* Walks a text one character at a time as SQLite counts characters (a byte
 * >= 0xC0 takes every continuation byte after it), knowing for each whether
 * a grapheme cluster (utf8proc's rules) begins there.  The end of the text
 * counts as a character that begins a cluster. */
typedef struct {
    const unsigned char *s;
    size_t len;
    size_t pos, next;        /* the current character: bytes [pos, next) */
    int64_t chars;           /* characters before pos */
    int32_t cp;              /* its code point; U+FFFD when ill-formed */
    int begins_cluster;
    size_t cluster;          /* where the cluster that holds pos begins */
    int64_t cluster_chars;
    utf8proc_int32_t state;  /* utf8proc's state across a cluster */
} char_walk;

static void walk_classify(char_walk *w, int begins_cluster)
{
    w->begins_cluster = begins_cluster;
    if (begins_cluster) {
        w->cluster = w->pos;
        w->cluster_chars = w->chars;
    }
}

static void walk_read(char_walk *w, int32_t prev)
{
    if (w->pos >= w->len) {
        w->next = w->len;
        walk_classify(w, 1);
        return;
    }
    size_t n = 1;
    if (w->s[w->pos] >= 0xC0)
        while (w->pos + n < w->len && (w->s[w->pos + n] & 0xC0) == 0x80) n++;
    w->next = w->pos + n;
    if (bert_utext_decode(w->s + w->pos, n, &w->cp) != n) w->cp = UTEXT_REPLACEMENT;
    walk_classify(w, w->pos == 0 || utf8proc_grapheme_break_stateful(prev, w->cp, &w->state));
}

static void walk_init(char_walk *w, const char *text, size_t len)
{
    memset(w, 0, sizeof *w);
    w->s = (const unsigned char *)text;
    w->len = len;
    walk_read(w, 0);
}

static void walk_step(char_walk *w)
{
    w->pos = w->next;
    w->chars++;
    walk_read(w, w->cp);
}

/* Where a cut between pieces falls in the text: the left chunk ends at byte
 * `left` (character left_chars), the right one begins at `right`. */
typedef struct {
    size_t left, right;
    int64_t left_chars, right_chars;
} text_cut;

/* The cut between pieces that end by byte `left_end` and pieces that begin
 * at byte `right_start` or later (as the tokenizer decoded them).  The text
 * between them gave no piece (white space, removed control and format
 * characters, stripped accents).  Cuts fall between grapheme clusters: the
 * left chunk ends after the last cluster in between that is not all white
 * space (or at the first cluster boundary), the right one begins at the
 * first such cluster that is not the left pieces' own, or at the cluster
 * of the right pieces' first character.  0 when a cluster (or a character)
 * holds pieces of both sides, so that no cut may fall there.  The walk is
 * left at or before right_start: called for cuts in order, it reads the
 * text once. */
static int cut_text(char_walk *w, int64_t left_end, int64_t right_start, text_cut *cut)
{
    if (left_end > right_start) return 0;
    while ((int64_t)w->pos < left_end) walk_step(w);
    if ((int64_t)w->pos > right_start) return 0;
    size_t gap = w->pos;
    int left_found = 0, right_found = 0, solid = 0;   /* solid: the cluster so far is not all white space */
    for (;;) {
        if (w->begins_cluster) {
            if (!left_found || solid) {
                cut->left = w->pos;
                cut->left_chars = w->chars;
                left_found = 1;
            }
            solid = 0;
        }
        if (w->pos >= w->len || (int64_t)w->next > right_start) break;
        if (!bert_utext_is_whitespace(w->cp)) {
            solid = 1;
            if (!right_found && w->cluster >= gap) {
                cut->right = w->cluster;
                cut->right_chars = w->cluster_chars;
                right_found = 1;
            }
        }
        walk_step(w);
    }
    if (!right_found) {
        cut->right = w->cluster;
        cut->right_chars = w->cluster_chars;
    }
    return left_found && w->cluster >= gap;
}

int bert_chunks_fit(const char *text, size_t len, bert_token_span *at, size_t n)
{
    if (n == 0) return 0;
    /* The earliest start of the pieces from i on: canonical reordering may
     * give a piece a start before the piece ahead of it. */
    int64_t *first_start = malloc((n + 1) * sizeof *first_start);
    if (!first_start) return -1;
    first_start[n] = (int64_t)len;
    for (size_t i = n; i-- > 0;)
        first_start[i] = at[i].byte_start < first_start[i + 1] ? at[i].byte_start : first_start[i + 1];
    char_walk w;
    walk_init(&w, text, len);
    int64_t left_end = 0, cut_id = 0, prev_word = at[0].word;
    for (size_t i = 0; i <= n; i++) {
        if (i > 0 && at[i - 1].byte_end > left_end) left_end = at[i - 1].byte_end;
        text_cut cut = {0, 0, 0, 0};
        int whole = cut_text(&w, left_end, first_start[i], &cut);
        if (i == 0 || (i < n && whole)) {
            at[i].byte_start = (int64_t)cut.right;
            at[i].start = cut.right_chars;
        }
        if (i == n || (i > 0 && whole)) {
            at[i - 1].byte_end = (int64_t)cut.left;
            at[i - 1].end = cut.left_chars;
        }
        if (i > 0 && i < n) {
            cut_id += !whole ? CUT_NONE : at[i].word != prev_word ? CUT_WORD : CUT_INSIDE;
            prev_word = at[i].word;
            at[i].word = cut_id;
        }
    }
    at[0].word = 0;
    free(first_start);
    return 0;
}

/* ---- cutting ------------------------------------------------------------------ */

void bert_chunker_init(bert_chunker *c, const bert_token_span *at, size_t n, size_t max_tokens, size_t overlap)
{
    assert(max_tokens >= 1 && overlap < max_tokens);
    memset(c, 0, sizeof *c);
    c->at = at;
    c->n = n;
    c->max_tokens = max_tokens;
    c->overlap = overlap;
}

/* What cut may fall before piece i (see bert_chunks_fit). */
static int cut_kind(const bert_chunker *c, size_t i)
{
    if (i == 0 || i >= c->n) return CUT_WORD;
    int64_t d = c->at[i].word - c->at[i - 1].word;
    return d >= CUT_WORD ? CUT_WORD : d == CUT_INSIDE ? CUT_INSIDE : CUT_NONE;
}

/* The end of the chunk that starts at piece s: the last word boundary at
 * most max_tokens on; when there is none (the word at s alone is longer),
 * the last cut inside the word (*forced); when there is none either (one
 * character or cluster gives more than max_tokens pieces), the first cut
 * after it. */
static size_t chunk_end(bert_chunker *c, size_t s, int *forced)
{
    size_t limit = c->n - s < c->max_tokens ? c->n : s + c->max_tokens, word_end = 0, any_end = 0;
    for (size_t i = s + 1; i <= limit; i++) {
        c->work++;
        int kind = cut_kind(c, i);
        if (kind == CUT_WORD) word_end = i;
        if (kind != CUT_NONE) any_end = i;
    }
    *forced = word_end == 0;
    if (word_end) return word_end;
    if (any_end) return any_end;
    size_t i = limit + 1;
    for (; cut_kind(c, i) == CUT_NONE; i++) c->work++;
    return i;
}

/* The first cut of at least `kind` in [from, to), or `to`. */
static size_t first_cut(bert_chunker *c, size_t from, size_t to, int kind)
{
    for (size_t i = from; i < to; i++) {
        c->work++;
        if (cut_kind(c, i) >= kind) return i;
    }
    return to;
}

int bert_chunker_next(bert_chunker *c, size_t *first, size_t *end)
{
    if (c->start >= c->n) return 0;
    size_t s = c->start;
    int forced;
    size_t e = chunk_end(c, s, &forced);
    *first = s;
    *end = e;
    if (e >= c->n) { c->start = c->n; return 1; }
    size_t b = e;
    if (c->overlap > 0) {
        /* Inside an over-long word every cut counts as a boundary. */
        int kind = forced ? CUT_INSIDE : CUT_WORD;
        size_t lo = e - s > c->overlap ? e - c->overlap : s + 1;
        /* A chunk from b reaches past e only when the word after e fits
         * with [b, e): b at least (that word's end) - max_tokens. */
        size_t after = first_cut(c, e + 1, e + c->max_tokens, kind);
        if (after < e + c->max_tokens) {
            size_t from = after > lo + c->max_tokens ? after - c->max_tokens : lo;
            b = first_cut(c, from, e, kind);
        }
    }
    c->start = b;
    return 1;
}
