/*
 * tok_word_cache.c - see tok_pipeline.h: the pieces the model gave each
 * pre-tokenizer word, so that a word met again (the common case in running
 * text) skips BPE's merges or Unigram's Viterbi.  The model's output is a
 * function of the word's bytes alone, so a hit is exactly what the model
 * would give.  Bounded: when full it is emptied and refilled.
 */
#include "tok_pipeline.h"

#include <stdlib.h>
#include <string.h>

enum {
    CACHE_SLOTS = 1 << 14,          /* power of two; at most half used */
    CACHE_MAX_WORDS = CACHE_SLOTS / 2,
    CACHE_MAX_WORD = 64,            /* bytes; longer words are not kept */
    CACHE_KEY_BYTES = 1 << 18,
    CACHE_MAX_PIECES = 1 << 15
};

typedef struct {
    uint64_t hash;      /* 0: empty */
    uint32_t key, key_len, piece, n_pieces;
} cache_slot;

struct tok_word_cache {
    const void *owner;
    cache_slot *slots;
    size_t used;
    char *keys;         /* CACHE_KEY_BYTES */
    size_t keys_len;
    tok_piece *pieces;  /* CACHE_MAX_PIECES */
    size_t pieces_len;
};

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ULL;   /* FNV-1a */
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h | 1;
}

tok_word_cache *tok_word_cache_new(const void *owner)
{
    tok_word_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->owner = owner;
    c->slots = calloc(CACHE_SLOTS, sizeof *c->slots);
    c->keys = malloc(CACHE_KEY_BYTES);
    c->pieces = malloc((size_t)CACHE_MAX_PIECES * sizeof *c->pieces);
    if (!c->slots || !c->keys || !c->pieces) {
        tok_word_cache_free(c);
        return NULL;
    }
    return c;
}

void tok_word_cache_free(tok_word_cache *c)
{
    if (!c) return;
    free(c->slots);
    free(c->keys);
    free(c->pieces);
    free(c);
}

const void *tok_word_cache_owner(const tok_word_cache *c) { return c->owner; }

static cache_slot *find(const tok_word_cache *c, const char *w, size_t len, uint64_t h)
{
    for (size_t i = h & (CACHE_SLOTS - 1);; i = (i + 1) & (CACHE_SLOTS - 1)) {
        cache_slot *s = &c->slots[i];
        if (s->hash == 0) return s;
        if (s->hash == h && s->key_len == len && memcmp(c->keys + s->key, w, len) == 0) return s;
    }
}

int tok_word_cache_get(const tok_word_cache *c, const char *w, size_t len, tok_pieces *out)
{
    if (len > CACHE_MAX_WORD) return 0;
    const cache_slot *s = find(c, w, len, hash_bytes(w, len));
    if (s->hash == 0) return 0;
    for (uint32_t k = 0; k < s->n_pieces; k++) {
        const tok_piece *p = &c->pieces[s->piece + k];
        if (tok_pieces_push(out, p->id, p->start, p->end) != 0) return -1;
    }
    return 1;
}

void tok_word_cache_put(tok_word_cache *c, const char *w, size_t len, const tok_piece *p, size_t n)
{
    if (len > CACHE_MAX_WORD || n > CACHE_MAX_PIECES) return;
    if (c->used >= CACHE_MAX_WORDS || c->keys_len + len > CACHE_KEY_BYTES || c->pieces_len + n > CACHE_MAX_PIECES) {
        memset(c->slots, 0, CACHE_SLOTS * sizeof *c->slots);
        c->used = c->keys_len = c->pieces_len = 0;
    }
    uint64_t h = hash_bytes(w, len);
    cache_slot *s = find(c, w, len, h);
    if (s->hash) return;
    memcpy(c->keys + c->keys_len, w, len);
    memcpy(c->pieces + c->pieces_len, p, n * sizeof *p);
    *s = (cache_slot){h, (uint32_t)c->keys_len, (uint32_t)len, (uint32_t)c->pieces_len, (uint32_t)n};
    c->keys_len += len;
    c->pieces_len += n;
    c->used++;
}
