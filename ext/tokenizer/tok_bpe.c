/*
 * tok_bpe.c - the BPE model: a word's characters merged pair by pair, the
 * pair of lowest rank first (the leftmost among equals), as the Rust
 * library's Word::merge_all does with its priority queue.  The merges are a
 * hash of (left id, right id) -> (rank, merged id); a word costs
 * O(n log n) in its characters, however long.
 */
#include "tok_pipeline.h"

#include "../base/buffer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t key;          /* left << 32 | right; 0 marks an empty slot (ids are < 2^31, so left+1 is stored) */
    int32_t rank, merged;
} merge_slot;

struct tok_bpe {
    const bert_vocab *vocab;
    merge_slot *slots;
    size_t mask, used;
    int32_t n_merges;
    int32_t unk;
    int fuse_unk, byte_fallback, ignore_merges;
    char *prefix, *suffix;
    size_t prefix_len, suffix_len;
};

static uint64_t pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)(a + 1) << 32) | (uint32_t)b; }

static size_t hash_key(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (size_t)k;
}

static const merge_slot *find_merge(const tok_bpe *b, int32_t left, int32_t right)
{
    uint64_t key = pair_key(left, right);
    for (size_t i = hash_key(key) & b->mask;; i = (i + 1) & b->mask) {
        if (b->slots[i].key == key) return &b->slots[i];
        if (b->slots[i].key == 0) return NULL;
    }
}

int tok_bpe_new(const bert_vocab *vocab, tok_bpe **out)
{
    tok_bpe *b = calloc(1, sizeof *b);
    if (!b) return -1;
    b->vocab = vocab;
    b->unk = -1;
    b->mask = 1023;
    if (!(b->slots = calloc(b->mask + 1, sizeof *b->slots))) { free(b); return -1; }
    *out = b;
    return 0;
}

static int grow_slots(tok_bpe *b)
{
    size_t n = (b->mask + 1) * 2;
    merge_slot *s = calloc(n, sizeof *s);
    if (!s) return -1;
    for (size_t i = 0; i <= b->mask; i++) {
        if (!b->slots[i].key) continue;
        size_t j = hash_key(b->slots[i].key) & (n - 1);
        while (s[j].key) j = (j + 1) & (n - 1);
        s[j] = b->slots[i];
    }
    free(b->slots);
    b->slots = s;
    b->mask = n - 1;
    return 0;
}

int tok_bpe_add_merge(tok_bpe *b, const char *left, size_t llen, const char *right, size_t rlen)
{
    int32_t rank = b->n_merges++;
    int32_t l = bert_vocab_find(b->vocab, left, llen), r = bert_vocab_find(b->vocab, right, rlen);
    /* The merged token: right loses the continuing-subword prefix. */
    size_t skip = b->prefix_len && rlen >= b->prefix_len && memcmp(right, b->prefix, b->prefix_len) == 0 ? b->prefix_len : 0;
    int32_t m = bert_vocab_find2(b->vocab, left, llen, right + skip, rlen - skip);
    if (l < 0 || r < 0 || m < 0) return 1;
    if ((b->used + 1) * 2 > b->mask + 1 && grow_slots(b) != 0) return -1;
    uint64_t key = pair_key(l, r);
    size_t i = hash_key(key) & b->mask;
    while (b->slots[i].key && b->slots[i].key != key) i = (i + 1) & b->mask;
    if (!b->slots[i].key) b->used++;
    /* A merge listed twice keeps its later rank, as the library's map does. */
    b->slots[i].key = key;
    b->slots[i].rank = rank;
    b->slots[i].merged = m;
    return 0;
}

void tok_bpe_set_options(tok_bpe *b, int32_t unk, int fuse_unk, int byte_fallback, int ignore_merges,
                         const char *prefix, const char *suffix)
{
    b->unk = unk;
    b->fuse_unk = fuse_unk;
    b->byte_fallback = byte_fallback;
    b->ignore_merges = ignore_merges;
    free(b->prefix);
    free(b->suffix);
    b->prefix = prefix && *prefix ? bert_strdup(prefix) : NULL;
    b->suffix = suffix && *suffix ? bert_strdup(suffix) : NULL;
    b->prefix_len = b->prefix ? strlen(b->prefix) : 0;
    b->suffix_len = b->suffix ? strlen(b->suffix) : 0;
}

int tok_bpe_has_prefix(const tok_bpe *b) { return b->prefix_len > 0; }

void tok_bpe_free(tok_bpe *b)
{
    if (!b) return;
    free(b->slots);
    free(b->prefix);
    free(b->suffix);
    free(b);
}

int tok_pieces_push(tok_pieces *p, int32_t id, size_t start, size_t end)
{
    if (p->len == p->cap) {
        tok_piece *g = bert_grow(p->at, &p->cap, p->len + 1, sizeof *g);
        if (!g) return -1;
        p->at = g;
    }
    p->at[p->len].id = id;
    p->at[p->len].start = (uint32_t)start;
    p->at[p->len].end = (uint32_t)end;
    p->len++;
    return 0;
}

typedef struct {
    int32_t id;
    int32_t prev, next;
    uint32_t start, len;   /* len 0: merged into the symbol before */
} symbol;

typedef struct {
    int32_t rank, pos, merged;
} merge_entry;

static int entry_before(const merge_entry *a, const merge_entry *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void heap_push(merge_entry *h, size_t *n, merge_entry e)
{
    size_t i = (*n)++;
    h[i] = e;
    while (i > 0 && entry_before(&h[i], &h[(i - 1) / 2])) {
        merge_entry t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static merge_entry heap_pop(merge_entry *h, size_t *n)
{
    merge_entry top = h[0];
    h[0] = h[--*n];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < *n && entry_before(&h[l], &h[m])) m = l;
        if (r < *n && entry_before(&h[r], &h[m])) m = r;
        if (m == i) break;
        merge_entry t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
    return top;
}

/* Appends a symbol; the caller made room. */
static void add_symbol(symbol *s, size_t *n, int32_t id, size_t start, size_t len)
{
    s[*n].id = id;
    s[*n].start = (uint32_t)start;
    s[*n].len = (uint32_t)len;
    s[*n].prev = (int32_t)*n - 1;
    s[*n].next = (int32_t)*n + 1;
    (*n)++;
}

int tok_bpe_tokenize(const tok_bpe *b, const char *w, size_t len, tok_pieces *out)
{
    if (len == 0) return 0;
    if (b->ignore_merges) {
        int32_t id = bert_vocab_find(b->vocab, w, len);
        if (id >= 0) return tok_pieces_push(out, id, 0, len);
    }
    /* At most one symbol per byte; one heap entry per merge done or pair.
     * A word of ordinary length needs no allocation. */
    symbol sym_stack[64];
    merge_entry heap_stack[3 * 64];
    int small = len <= 64;
    symbol *sym = small ? sym_stack : malloc(len * sizeof *sym);
    merge_entry *heap = small ? heap_stack : malloc(3 * len * sizeof *heap);
    int rc = -1;
    if (!sym || !heap) goto done;
    size_t n = 0;
    int32_t unk_start = -1;
    size_t unk_len = 0;
    char buf[256];
    for (size_t i = 0; i < len;) {
        int32_t cp;
        size_t cl = tok_utf8_next(w + i, len - i, &cp);
        int first = i == 0, last = i + cl == len;
        int32_t id;
        size_t pl = !first ? b->prefix_len : 0, sl = last ? b->suffix_len : 0;
        if (pl + cl + sl <= sizeof buf && (pl || sl)) {
            if (pl) memcpy(buf, b->prefix, pl);
            memcpy(buf + pl, w + i, cl);
            if (sl) memcpy(buf + pl + cl, b->suffix, sl);
            id = bert_vocab_find(b->vocab, buf, pl + cl + sl);
        } else {
            id = bert_vocab_find(b->vocab, w + i, cl);
        }
        if (id < 0 && b->byte_fallback) {
            int32_t bytes[4];
            size_t k = 0;
            for (; k < cl; k++) {
                char name[8];
                snprintf(name, sizeof name, "<0x%02X>", (unsigned char)w[i + k]);
                if ((bytes[k] = bert_vocab_find(b->vocab, name, 6)) < 0) break;
            }
            if (k == cl) {
                if (unk_start >= 0) { add_symbol(sym, &n, b->unk, (size_t)unk_start, unk_len); unk_start = -1; }
                for (k = 0; k < cl; k++) add_symbol(sym, &n, bytes[k], i + k, 1);
                i += cl;
                continue;
            }
        }
        if (id >= 0) {
            if (unk_start >= 0) { add_symbol(sym, &n, b->unk, (size_t)unk_start, unk_len); unk_start = -1; }
            add_symbol(sym, &n, id, i, cl);
        } else if (b->unk >= 0) {
            if (unk_start >= 0 && b->fuse_unk) {
                unk_len += cl;
            } else {
                if (unk_start >= 0) add_symbol(sym, &n, b->unk, (size_t)unk_start, unk_len);
                unk_start = (int32_t)i;
                unk_len = cl;
            }
        }
        /* Without an unknown token an unknown character is dropped. */
        i += cl;
    }
    if (unk_start >= 0) add_symbol(sym, &n, b->unk, (size_t)unk_start, unk_len);
    if (n) sym[n - 1].next = -1;

    size_t hn = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        const merge_slot *m = find_merge(b, sym[i].id, sym[i + 1].id);
        if (m) heap_push(heap, &hn, (merge_entry){m->rank, (int32_t)i, m->merged});
    }
    while (hn > 0) {
        merge_entry top = heap_pop(heap, &hn);
        symbol *cur = &sym[top.pos];
        if (cur->len == 0 || cur->next < 0) continue;
        symbol *right = &sym[cur->next];
        const merge_slot *m = find_merge(b, cur->id, right->id);
        if (!m || m->merged != top.merged) continue;
        cur->id = top.merged;
        cur->len += right->len;
        right->len = 0;
        cur->next = right->next;
        if (right->next >= 0) sym[right->next].prev = top.pos;
        if (cur->prev >= 0 && (m = find_merge(b, sym[cur->prev].id, cur->id)))
            heap_push(heap, &hn, (merge_entry){m->rank, cur->prev, m->merged});
        if (cur->next >= 0 && (m = find_merge(b, cur->id, sym[cur->next].id)))
            heap_push(heap, &hn, (merge_entry){m->rank, top.pos, m->merged});
    }
    for (size_t i = 0; i < n; i++)
        if (sym[i].len && tok_pieces_push(out, sym[i].id, sym[i].start, sym[i].start + sym[i].len) != 0) goto done;
    rc = 0;
done:
    if (!small) {
        free(sym);
        free(heap);
    }
    return rc;
}
