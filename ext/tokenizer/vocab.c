/*
 * vocab.c - the vocabulary's storage and its open addressing hash table.
 *
 * The table is kept at most half full, so a probe sequence is short even for
 * the misses that dominate WordPiece (most candidates are not tokens).
 */
#include "vocab.h"

#include "../base/buffer.h"

#include <stdlib.h>
#include <string.h>

#define FNV_OFFSET 2166136261u
#define FNV_PRIME 16777619u

static uint32_t fnv_add(uint32_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= FNV_PRIME;
    }
    return h;
}

static int matches(const bert_vocab *v, int32_t id, const char *prefix, size_t plen, const char *piece, size_t len)
{
    if (v->length[id] != plen + len) return 0;
    const char *t = v->text + v->offset[id];
    return (plen == 0 || memcmp(t, prefix, plen) == 0) && memcmp(t + plen, piece, len) == 0;
}

int32_t bert_vocab_find2(const bert_vocab *v, const char *prefix, size_t plen, const char *piece, size_t len)
{
    if (!v->slots || plen + len > v->max_length) return -1;
    uint32_t h = fnv_add(fnv_add(FNV_OFFSET, prefix, plen), piece, len);
    for (uint32_t i = h & v->mask;; i = (i + 1) & v->mask) {
        int32_t id = v->slots[i];
        if (id < 0) return -1;
        if (matches(v, id, prefix, plen, piece, len)) return id;
    }
}

/* Points the token's slot at `id`, replacing an earlier id of the same token. */
static void slot_insert(int32_t *slots, uint32_t mask, const bert_vocab *v, int32_t id)
{
    const char *t = v->text + v->offset[id];
    uint32_t h = fnv_add(FNV_OFFSET, t, v->length[id]);
    for (uint32_t i = h & mask;; i = (i + 1) & mask) {
        int32_t old = slots[i];
        if (old < 0 || matches(v, old, NULL, 0, t, v->length[id])) {
            slots[i] = id;
            return;
        }
    }
}

static int rehash(bert_vocab *v, uint32_t nslots)
{
    int32_t *slots = malloc((size_t)nslots * sizeof *slots);
    if (!slots) return -1;
    memset(slots, 0xFF, (size_t)nslots * sizeof *slots);
    for (int32_t id = 0; id < v->count; id++) slot_insert(slots, nslots - 1, v, id);
    free(v->slots);
    v->slots = slots;
    v->mask = nslots - 1;
    return 0;
}

static int reserve(bert_vocab *v, int32_t ids, size_t bytes)
{
    size_t offset_cap = v->cap;
    size_t *offset = bert_grow(v->offset, &offset_cap, (size_t)ids, sizeof *offset);
    if (!offset) return -1;
    v->offset = offset;
    /* length follows offset to the same capacity, which v->cap records. */
    uint32_t *length = bert_grow(v->length, &v->cap, offset_cap, sizeof *length);
    if (!length) return -1;
    v->length = length;
    char *text = bert_grow(v->text, &v->text_cap, bytes, 1);
    if (!text) return -1;
    v->text = text;
    return 0;
}

/* Stores a token without indexing it. */
static int32_t store(bert_vocab *v, const char *token, size_t len)
{
    if (v->count == INT32_MAX || len > UINT32_MAX) return -1;
    if (reserve(v, v->count + 1, v->text_len + len + 1) != 0) return -1;
    int32_t id = v->count++;
    v->offset[id] = v->text_len;
    v->length[id] = (uint32_t)len;
    memcpy(v->text + v->text_len, token, len);
    v->text[v->text_len + len] = '\0';
    v->text_len += len + 1;
    if (len > v->max_length) v->max_length = len;
    return id;
}

int bert_vocab_parse(bert_vocab *v, const char *data, size_t len)
{
    memset(v, 0, sizeof *v);
    size_t lines = 0;
    for (size_t i = 0; i < len; i++) lines += data[i] == '\n';
    if (lines >= (size_t)INT32_MAX / 4) return -1;
    if (reserve(v, (int32_t)lines + 1, len + 1) != 0) { bert_vocab_free(v); return -1; }
    for (size_t start = 0; start < len;) {
        const char *nl = memchr(data + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - data) : len;
        size_t n = end - start;
        if (n > 0 && data[start + n - 1] == '\r') n--;
        if (store(v, data + start, n) < 0) { bert_vocab_free(v); return -1; }
        start = end + 1;
    }
    uint32_t nslots = 16;
    while (nslots < 2u * (uint32_t)v->count + 2) nslots *= 2;
    if (rehash(v, nslots) != 0) { bert_vocab_free(v); return -1; }
    return 0;
}

int32_t bert_vocab_append(bert_vocab *v, const char *token, size_t len)
{
    int32_t id = store(v, token, len);
    if (id < 0) return -1;
    if (!v->slots || (uint32_t)v->count * 2 > v->mask) {
        uint32_t nslots = v->slots ? (v->mask + 1) * 2 : 16;
        if (rehash(v, nslots) != 0) { v->count--; return -1; }
    } else {
        slot_insert(v->slots, v->mask, v, id);
    }
    return id;
}

void bert_vocab_free(bert_vocab *v)
{
    free(v->text);
    free(v->offset);
    free(v->length);
    free(v->slots);
    memset(v, 0, sizeof *v);
}
