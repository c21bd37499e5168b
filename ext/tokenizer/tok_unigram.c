/*
 * tok_unigram.c - the Unigram model of SentencePiece: the segmentation of
 * a word into pieces whose scores sum highest (Viterbi over a lattice), as
 * the Rust library's Unigram::encode_optimized computes it.  A character no
 * piece starts with costs the lowest score less 10 and becomes the unknown
 * piece (consecutive ones fused when fuse_unk); with byte_fallback an
 * unknown piece is spelled as <0xXX> byte pieces instead.
 *
 * The pieces are found with a trie kept as a hash of (node, byte) -> child.
 */
#include "tok_pipeline.h"

#include "../base/buffer.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t key;    /* (node + 1) << 8 | byte; 0: empty */
    int32_t child;
} edge;

struct tok_unigram {
    const bert_vocab *vocab;
    double *scores;
    int32_t *node_id;     /* per trie node: the piece ending there, or -1 */
    size_t n_nodes, nodes_cap;
    edge *edges;
    size_t mask, used;
    int32_t unk;
    int byte_fallback, fuse_unk;
    double unk_score;
};

static size_t hash_key(uint64_t k)
{
    k ^= k >> 29;
    k *= 0xbf58476d1ce4e5b9ULL;
    k ^= k >> 32;
    return (size_t)k;
}

static int32_t child_of(const tok_unigram *u, int32_t node, unsigned char c)
{
    uint64_t key = ((uint64_t)(node + 1) << 8) | c;
    for (size_t i = hash_key(key) & u->mask;; i = (i + 1) & u->mask) {
        if (u->edges[i].key == key) return u->edges[i].child;
        if (u->edges[i].key == 0) return -1;
    }
}

static int grow_edges(tok_unigram *u)
{
    size_t n = (u->mask + 1) * 2;
    edge *e = calloc(n, sizeof *e);
    if (!e) return -1;
    for (size_t i = 0; i <= u->mask; i++) {
        if (!u->edges[i].key) continue;
        size_t j = hash_key(u->edges[i].key) & (n - 1);
        while (e[j].key) j = (j + 1) & (n - 1);
        e[j] = u->edges[i];
    }
    free(u->edges);
    u->edges = e;
    u->mask = n - 1;
    return 0;
}

static int32_t new_node(tok_unigram *u)
{
    if (u->n_nodes == u->nodes_cap) {
        int32_t *g = bert_grow(u->node_id, &u->nodes_cap, u->n_nodes + 1, sizeof *g);
        if (!g) return -1;
        u->node_id = g;
    }
    u->node_id[u->n_nodes] = -1;
    return (int32_t)u->n_nodes++;
}

static int insert(tok_unigram *u, const char *s, size_t len, int32_t id)
{
    int32_t node = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        int32_t next = child_of(u, node, c);
        if (next < 0) {
            if ((u->used + 1) * 2 > u->mask + 1 && grow_edges(u) != 0) return -1;
            if ((next = new_node(u)) < 0) return -1;
            uint64_t key = ((uint64_t)(node + 1) << 8) | c;
            size_t j = hash_key(key) & u->mask;
            while (u->edges[j].key) j = (j + 1) & u->mask;
            u->edges[j].key = key;
            u->edges[j].child = next;
            u->used++;
        }
        node = next;
    }
    /* A piece listed twice: the library's map keeps the later id. */
    u->node_id[node] = id;
    return 0;
}

int tok_unigram_new(const bert_vocab *vocab, const double *scores, int32_t unk, int byte_fallback, int fuse_unk,
                    tok_unigram **out)
{
    tok_unigram *u = calloc(1, sizeof *u);
    if (!u) return -1;
    u->vocab = vocab;
    u->unk = unk;
    u->byte_fallback = byte_fallback;
    u->fuse_unk = fuse_unk;
    u->mask = 4095;
    size_t n = (size_t)vocab->count;
    double min = DBL_MAX;
    if (!(u->scores = malloc((n ? n : 1) * sizeof *u->scores)) || !(u->edges = calloc(u->mask + 1, sizeof *u->edges)) ||
        new_node(u) < 0)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        u->scores[i] = scores[i];
        if (scores[i] < min) min = scores[i];
        if (insert(u, bert_vocab_token(vocab, (int32_t)i), bert_vocab_token_length(vocab, (int32_t)i), (int32_t)i) != 0)
            goto fail;
    }
    u->unk_score = (n ? min : 0) - 10.0;
    *out = u;
    return 0;
fail:
    tok_unigram_free(u);
    return -1;
}

void tok_unigram_free(tok_unigram *u)
{
    if (!u) return;
    free(u->scores);
    free(u->node_id);
    free(u->edges);
    free(u);
}

typedef struct {
    double score;
    int32_t id;
    int32_t starts_at;   /* -1: not reached */
} best_node;

/* One piece of the best path: an id, or the unknown piece fused or spelled
 * in bytes. */
static int emit(const tok_unigram *u, const char *w, size_t start, size_t end, int32_t id, tok_pieces *out)
{
    if (id != u->unk || !u->byte_fallback) return tok_pieces_push(out, id, start, end);
    /* The whole unknown stretch in <0xXX> pieces, each spanning it, when
     * every byte has one. */
    int32_t ids[64];
    size_t n = end - start;
    if (n <= 64) {
        size_t k = 0;
        for (; k < n; k++) {
            char name[8];
            snprintf(name, sizeof name, "<0x%02X>", (unsigned char)w[start + k]);
            if ((ids[k] = bert_vocab_find(u->vocab, name, 6)) < 0) break;
        }
        if (k == n) {
            for (k = 0; k < n; k++)
                if (tok_pieces_push(out, ids[k], start, end) != 0) return -1;
            return 0;
        }
    }
    return tok_pieces_push(out, id, start, end);
}

int tok_unigram_tokenize(const tok_unigram *u, const char *w, size_t len, tok_pieces *out)
{
    if (len == 0) return 0;
    best_node best_stack[65];
    best_node *best = len <= 64 ? best_stack : malloc((len + 1) * sizeof *best);
    if (!best) return -1;
    for (size_t i = 0; i <= len; i++) best[i] = (best_node){0.0, -1, -1};
    best[0].starts_at = 0;
    for (size_t at = 0; at < len;) {
        double here = best[at].score;
        int32_t cp;
        size_t mblen = tok_utf8_next(w + at, len - at, &cp);
        int single = 0;
        int32_t node = 0;
        for (size_t k = at; k < len; k++) {
            node = child_of(u, node, (unsigned char)w[k]);
            if (node < 0) break;
            int32_t id = u->node_id[node];
            if (id < 0) continue;
            size_t key_end = k + 1;
            double cand = here + u->scores[id];
            best_node *t = &best[key_end];
            if (t->starts_at < 0 || cand > t->score) {
                t->score = cand;
                t->starts_at = (int32_t)at;
                t->id = id;
            }
            if (key_end - at == mblen) single = 1;
        }
        if (!single) {
            best_node *t = &best[at + mblen];
            double cand = here + u->unk_score;
            if (t->starts_at < 0 || cand > t->score) {
                t->score = cand;
                t->starts_at = (int32_t)at;
                t->id = u->unk;
            }
        }
        at += mblen;
    }
    /* Back from the end: the path's pieces in reverse, then turned around. */
    size_t first = out->len;
    for (size_t end = len; end > 0;) {
        size_t start = (size_t)best[end].starts_at;
        int32_t id = best[end].id;
        if (u->fuse_unk && id == u->unk && u->unk >= 0) {
            /* Consecutive unknown pieces become one. */
            while (start > 0 && best[start].id == u->unk) start = (size_t)best[start].starts_at;
        }
        if (tok_pieces_push(out, id, start, end) != 0) {
            if (best != best_stack) free(best);
            return -1;
        }
        end = start;
    }
    for (size_t i = first, j = out->len - 1; i < j; i++, j--) {
        tok_piece t = out->at[i];
        out->at[i] = out->at[j];
        out->at[j] = t;
    }
    if (best != best_stack) free(best);
    if (!u->byte_fallback) {
        /* A fused stretch that is itself a piece reads as that piece (the
         * library looks the fused text up). */
        for (size_t i = first; i < out->len; i++) {
            tok_piece *p = &out->at[i];
            if (p->id != u->unk) continue;
            int32_t id = bert_vocab_find(u->vocab, w + p->start, p->end - p->start);
            if (id >= 0) p->id = id;
        }
        return 0;
    }
    /* byte_fallback: spell each unknown piece in bytes (rebuilding the list). */
    tok_pieces spelled = {0};
    for (size_t i = first; i < out->len; i++) {
        tok_piece p = out->at[i];
        int32_t id = p.id == u->unk ? bert_vocab_find(u->vocab, w + p.start, p.end - p.start) : p.id;
        if (emit(u, w, p.start, p.end, id >= 0 ? id : u->unk, &spelled) != 0) { free(spelled.at); return -1; }
    }
    out->len = first;
    for (size_t i = 0; i < spelled.len; i++)
        if (tok_pieces_push(out, spelled.at[i].id, spelled.at[i].start, spelled.at[i].end) != 0) {
            free(spelled.at);
            return -1;
        }
    free(spelled.at);
    return 0;
}
