/*
 * chunks.c - see chunks.h.
 */
#include "chunks.h"
#include "entry.h"

#include "buffer.h"
#include "error.h"

#include <stdint.h>
#include <string.h>

static int need_specials(const bert_entry *e, const bert_special_ids *sp, char **err)
{
    if (sp->cls >= 0 && sp->sep >= 0) return 0;
    *err = bert_errorf("model '%s': vocab.txt lacks [CLS] or [SEP], which BERT inputs need", e->name);
    return -1;
}

static int push_special(bert_ids *ids, bert_spans *spans, int32_t id)
{
    if (bert_ids_push(ids, id) != 0) return -1;
    if (spans->len == spans->cap) {
        bert_token_span *grown = bert_grow(spans->at, &spans->cap, spans->len + 1, sizeof *grown);
        if (!grown) return -1;
        spans->at = grown;
    }
    bert_token_span none = {0, 0, 0, 0, -1};
    spans->at[spans->len++] = none;
    return 0;
}

int bert_tokenize_offsets(bert_entry *e, const char *text, size_t len, bert_ids *ids, bert_spans *spans, char **err)
{
    *err = NULL;
    ids->len = spans->len = 0;
    if (bert_entry_need_tokenizer(e, err) != 0) return -1;
    const bert_special_ids *sp = bert_tokenizer_specials(e->tokenizer);
    if (need_specials(e, sp, err) != 0) return -1;
    /* As bert_tokenize: the pieces that fit between [CLS] and [SEP] when the
     * model truncates (tokenizing stops there), all of them otherwise. */
    size_t limit = (size_t)e->max_length - 1;
    size_t stop = e->truncate ? limit : SIZE_MAX;
    if (push_special(ids, spans, sp->cls) != 0 ||
        bert_tokenizer_encode_spans(e->tokenizer, text, len, stop, ids, spans, &e->tokenizing) != 0 ||
        push_special(ids, spans, sp->sep) != 0) {
        *err = bert_errorf("out of memory tokenizing a text of %zu bytes", len);
        return -1;
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
    if (rc != 0) *err = bert_errorf("out of memory tokenizing a text of %zu bytes for bert_chunks", len);
    return rc;
}

int bert_chunks_max_tokens(const bert_entry *e) { return e->max_length - 2; }

void bert_chunker_init(bert_chunker *c, const bert_token_span *at, size_t n, size_t max_tokens, size_t overlap)
{
    memset(c, 0, sizeof *c);
    c->at = at;
    c->n = n;
    c->max_tokens = max_tokens;
    c->overlap = overlap;
}

/* A chunk may end before piece i (and the next start there). */
static int boundary(const bert_chunker *c, size_t i)
{
    return i == 0 || i >= c->n || c->at[i].word != c->at[i - 1].word;
}

/* The end of the chunk that starts at piece s: the last word boundary at
 * most max_tokens on; when there is none (the word at s alone is longer),
 * max_tokens on, inside the word (*forced). */
static size_t chunk_end(bert_chunker *c, size_t s, int *forced)
{
    size_t limit = c->n - s < c->max_tokens ? c->n : s + c->max_tokens, end = 0;
    for (size_t i = s + 1; i <= limit; i++) {
        c->work++;
        if (boundary(c, i)) end = i;
    }
    *forced = end == 0;
    return end ? end : limit;
}

int bert_chunker_next(bert_chunker *c, size_t *first, size_t *end)
{
    if (c->start >= c->n) return 0;
    size_t s = c->start;
    int forced;
    size_t e = c->next_end ? c->next_end : chunk_end(c, s, &forced);
    if (c->next_end) forced = c->next_forced;
    *first = s;
    *end = e;
    c->next_end = 0;
    if (e >= c->n) { c->start = c->n; return 1; }
    size_t b = e;
    if (c->overlap > 0) {
        size_t lo = e - s > c->overlap ? e - c->overlap : s + 1;
        if (forced) {
            b = lo;   /* inside an over-long word every piece is a cut point */
        } else {
            for (size_t i = lo; i < e; i++) {
                c->work++;
                if (boundary(c, i)) { b = i; break; }
            }
        }
        if (b < e) {
            int f;
            size_t next = chunk_end(c, b, &f);
            if (next <= e) {
                b = e;   /* nothing new past the end: no overlap this time */
            } else {
                c->next_end = next;
                c->next_forced = f;
            }
        }
    }
    c->start = b;
    return 1;
}
