/*
 * tok_normalize.c - the aligned string of the general pipeline and the
 * normalizers of tokenizer.json that SentencePiece and byte-level
 * tokenizers use: Precompiled, Replace, NFD/NFKD/NFC/NFKC, StripAccents,
 * Lowercase, Strip and Prepend.
 *
 * Each normalizer writes its output as NormalizedString's transformations
 * (a character and whether it replaces, inserts or removes) and
 * tok_str_transform applies them with the Rust library's alignment rules,
 * so offsets through any sequence of normalizers are the library's.
 */
#include "tok_pipeline.h"

#include "../base/buffer.h"
#include "../base/error.h"
#include "../base/unicode_text.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* ---- the aligned string -------------------------------------------------- */

void tok_str_free(tok_str *s)
{
    free(s->s);
    free(s->al);
    memset(s, 0, sizeof *s);
}

static int str_room(tok_str *s, size_t need)
{
    if (need + 1 <= s->cap) return 0;
    size_t cap = s->cap;
    char *t = bert_grow(s->s, &cap, need + 1, 1);
    if (!t) return -1;
    s->s = t;
    size_t acap = s->cap;
    tok_align *a = bert_grow(s->al, &acap, cap, sizeof *a);
    if (!a) return -1;
    s->al = a;
    s->cap = cap;
    return 0;
}

int tok_str_push(tok_str *s, int32_t cp, tok_align al)
{
    if (str_room(s, s->len + 4) != 0) return -1;
    size_t n = bert_utext_encode(cp, s->s + s->len);
    for (size_t i = 0; i < n; i++) s->al[s->len + i] = al;
    s->len += n;
    s->s[s->len] = '\0';
    return 0;
}

int tok_str_slice(const tok_str *s, size_t from, size_t to, tok_str *out)
{
    memset(out, 0, sizeof *out);
    if (str_room(out, to - from) != 0) { tok_str_free(out); return -1; }
    memcpy(out->s, s->s + from, to - from);
    memcpy(out->al, s->al + from, (to - from) * sizeof *s->al);
    out->len = to - from;
    out->s[out->len] = '\0';
    out->origin = to > from ? s->al[from].start : s->origin;
    return 0;
}

int tok_changes_push(tok_changes *c, int32_t cp, int32_t change)
{
    if (c->len == c->cap) {
        tok_change *g = bert_grow(c->at, &c->cap, c->len + 1, sizeof *g);
        if (!g) return -1;
        c->at = g;
    }
    c->at[c->len].cp = cp;
    c->at[c->len].change = change;
    c->len++;
    return 0;
}

size_t tok_utf8_next(const char *s, size_t len, int32_t *cp)
{
    return bert_utext_decode((const unsigned char *)s, len, cp);
}

static size_t char_len_at(const tok_str *s, size_t off)
{
    if (off >= s->len) return 0;
    int32_t cp;
    return tok_utf8_next(s->s + off, s->len - off, &cp);
}

int tok_str_transform(tok_str *s, const tok_changes *c, size_t initial_removed)
{
    tok_str out;
    memset(&out, 0, sizeof out);
    out.origin = s->origin;
    if (str_room(&out, s->len) != 0) { tok_str_free(&out); return -1; }
    size_t off = 0;
    for (size_t i = 0; i < initial_removed; i++) off += char_len_at(s, off);
    tok_align none = {s->origin, s->origin};
    for (size_t i = 0; i < c->len; i++) {
        int32_t ch = c->at[i].change;
        tok_align al;
        if (ch > 0) al = off >= 1 ? s->al[off - 1] : none;
        else al = off < s->len ? s->al[off] : off >= 1 ? s->al[off - 1] : none;
        if (ch <= 0) off += char_len_at(s, off);
        for (int32_t k = 0; k < -ch; k++) off += char_len_at(s, off);
        if (tok_str_push(&out, c->at[i].cp, al) != 0) { tok_str_free(&out); return -1; }
    }
    tok_str_free(s);
    *s = out;
    return 0;
}

/* ---- Precompiled --------------------------------------------------------- */

/* SentencePiece's precompiled_charsmap: a darts-clone double-array trie
 * over the UTF-8 of the text to replace, whose values index a blob of
 * NUL-terminated replacements (the spm_precompiled crate's layout: a
 * little-endian u32 trie size in bytes, the trie's u32 units, the blob). */
struct tok_precompiled {
    uint32_t *units;
    size_t n_units;
    char *normalized;
    size_t normalized_len;
};

static int base64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Standard base64 with padding; NULL when malformed or out of memory. */
static unsigned char *base64_decode(const char *in, size_t *out_len)
{
    size_t n = strlen(in);
    unsigned char *out = malloc(n / 4 * 3 + 3);
    if (!out) return NULL;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        if (in[i] == '=') break;
        int v = base64_value((unsigned char)in[i]);
        if (v < 0) { free(out); return NULL; }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    *out_len = o;
    return out;
}

/* The charsmap of a tokenizer.json that is not SentencePiece's. */
static int malformed_charsmap(const char *path, char **err)
{
    *err = bert_errorf("%s: the Precompiled normalizer's precompiled_charsmap is not a valid SentencePiece "
                       "charsmap; use the tokenizer.json the model came with", path);
    return -1;
}

int tok_precompiled_load(const char *base64, const char *path, tok_precompiled **out, char **err)
{
    *out = NULL;
    *err = NULL;
    size_t n;
    for (const char *c = base64; *c; c++)
        if (*c != '=' && base64_value((unsigned char)*c) < 0) return malformed_charsmap(path, err);
    unsigned char *blob = base64_decode(base64, &n);
    if (!blob) return -1;
    tok_precompiled *pc = calloc(1, sizeof *pc);
    int rc = -1;
    if (!pc) goto done;
    uint32_t trie_bytes = 0;
    if (n >= 4) trie_bytes = (uint32_t)blob[0] | (uint32_t)blob[1] << 8 | (uint32_t)blob[2] << 16 | (uint32_t)blob[3] << 24;
    if (n < 4 || (size_t)trie_bytes > n - 4 || trie_bytes % 4 != 0) {
        rc = malformed_charsmap(path, err);
        goto done;
    }
    pc->n_units = trie_bytes / 4;
    pc->normalized_len = n - 4 - trie_bytes;
    pc->units = malloc((pc->n_units ? pc->n_units : 1) * sizeof *pc->units);
    pc->normalized = malloc(pc->normalized_len + 1);
    if (!pc->units || !pc->normalized) goto done;
    for (size_t i = 0; i < pc->n_units; i++) {
        const unsigned char *u = blob + 4 + 4 * i;
        pc->units[i] = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
    }
    memcpy(pc->normalized, blob + 4 + trie_bytes, pc->normalized_len);
    pc->normalized[pc->normalized_len] = '\0';
    *out = pc;
    pc = NULL;
    rc = 0;
done:
    free(blob);
    tok_precompiled_free(pc);
    return rc;
}

void tok_precompiled_free(tok_precompiled *pc)
{
    if (!pc) return;
    free(pc->units);
    free(pc->normalized);
    free(pc);
}

/* darts-clone's unit fields. */
static uint32_t unit_offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }
static uint32_t unit_label(uint32_t u) { return u & ((1u << 31) | 0xFF); }
static int unit_has_leaf(uint32_t u) { return (u >> 8) & 1; }
static uint32_t unit_value(uint32_t u) { return u & ((1u << 31) - 1); }

/* The replacement of s[0..len) as spm_precompiled's transform gives it: the
 * first (shortest) key that is a prefix of the text.  NULL when none. */
static const char *precompiled_find(const tok_precompiled *pc, const char *s, size_t len, size_t *out_len)
{
    if (pc->n_units == 0) return NULL;
    size_t pos = unit_offset(pc->units[0]);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == 0) break;
        pos ^= c;
        if (pos >= pc->n_units) return NULL;
        uint32_t u = pc->units[pos];
        if (unit_label(u) != c) return NULL;
        pos ^= unit_offset(u);
        if (pos >= pc->n_units) return NULL;
        if (unit_has_leaf(u)) {
            size_t at = unit_value(pc->units[pos]);
            if (at >= pc->normalized_len) return NULL;
            *out_len = strlen(pc->normalized + at);
            return pc->normalized + at;
        }
    }
    return NULL;
}

/* spm_precompiled's replace(): the new characters replace the old ones in
 * order; extra ones are insertions, missing ones removals charged to the
 * last character written. */
static int precompiled_replace(tok_changes *c, size_t old_chars, const char *rep, size_t rep_len)
{
    size_t first = c->len, new_chars = 0;
    for (size_t i = 0; i < rep_len;) {
        int32_t cp;
        i += tok_utf8_next(rep + i, rep_len - i, &cp);
        if (tok_changes_push(c, cp, 0) != 0) return -1;
        new_chars++;
    }
    if (new_chars > old_chars) {
        for (size_t k = 0; k < new_chars - old_chars; k++) c->at[c->len - 1 - k].change = 1;
    } else if (new_chars < old_chars && c->len > 0) {
        c->at[c->len - 1].change -= (int32_t)(old_chars - new_chars);
    }
    (void)first;
    return 0;
}

static size_t count_chars(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

/* The Rust normalizer: each extended grapheme cluster shorter than 6 bytes
 * is looked up whole, else (or when not found) each of its characters. */
static int precompiled_normalize(const tok_precompiled *pc, tok_str *s)
{
    tok_changes c = {0};
    int modified = 0, rc = -1;
    for (size_t g = 0; g < s->len;) {
        /* The grapheme cluster starting at g. */
        int32_t cp, prev;
        utf8proc_int32_t state = 0;
        size_t end = g + tok_utf8_next(s->s + g, s->len - g, &prev);
        while (end < s->len) {
            size_t n = tok_utf8_next(s->s + end, s->len - end, &cp);
            if (utf8proc_grapheme_break_stateful(prev, cp, &state)) break;
            prev = cp;
            end += n;
        }
        size_t rlen;
        const char *rep = end - g < 6 ? precompiled_find(pc, s->s + g, end - g, &rlen) : NULL;
        if (rep) {
            modified = 1;
            if (precompiled_replace(&c, count_chars(s->s + g, end - g), rep, rlen) != 0) goto done;
        } else {
            for (size_t i = g; i < end;) {
                size_t n = tok_utf8_next(s->s + i, end - i, &cp);
                rep = precompiled_find(pc, s->s + i, n, &rlen);
                if (rep) {
                    modified = 1;
                    if (precompiled_replace(&c, 1, rep, rlen) != 0) goto done;
                } else if (tok_changes_push(&c, cp, 0) != 0) {
                    goto done;
                }
                i += n;
            }
        }
        g = end;
    }
    rc = modified ? tok_str_transform(s, &c, 0) : 0;
done:
    free(c.at);
    return rc;
}

/* ---- the other normalizers ----------------------------------------------- */

/* Replace: every match of the pattern, left to right, becomes the content;
 * the content's characters are insertions after the removed match. */
static int replace_all(const tok_norm *n, tok_str *s)
{
    tok_str out;
    memset(&out, 0, sizeof out);
    out.origin = s->origin;
    size_t clen = strlen(n->content);
    for (size_t i = 0; i < s->len;) {
        size_t m = 0;
        if (n->min_repeat > 0) {
            size_t k = 0;
            while (i + m + n->pattern_len <= s->len && memcmp(s->s + i + m, n->pattern, n->pattern_len) == 0) {
                m += n->pattern_len;
                k++;
            }
            if (k < (size_t)n->min_repeat) m = 0;
        } else if (n->pattern_len && i + n->pattern_len <= s->len && memcmp(s->s + i, n->pattern, n->pattern_len) == 0) {
            m = n->pattern_len;
        }
        if (m == 0) {
            int32_t cp;
            size_t len = tok_utf8_next(s->s + i, s->len - i, &cp);
            if (tok_str_push(&out, cp, s->al[i]) != 0) goto oom;
            i += len;
            continue;
        }
        tok_align al = s->al[i + m - 1];
        for (size_t k = 0; k < clen;) {
            int32_t cp;
            k += tok_utf8_next(n->content + k, clen - k, &cp);
            if (tok_str_push(&out, cp, al) != 0) goto oom;
        }
        i += m;
    }
    tok_str_free(s);
    *s = out;
    return 0;
oom:
    tok_str_free(&out);
    return -1;
}

/* Keeps the characters `keep` accepts, each with its own alignment (as
 * NormalizedString's filter leaves them). */
static int filter(tok_str *s, int (*drop)(int32_t), int left, int right)
{
    tok_str out;
    memset(&out, 0, sizeof out);
    out.origin = s->origin;
    /* Strip: the whitespace at the ends. */
    size_t from = 0, to = s->len;
    int32_t cp;
    if (left)
        while (from < to) {
            size_t n = tok_utf8_next(s->s + from, to - from, &cp);
            if (!bert_utext_is_whitespace(cp)) break;
            from += n;
        }
    if (right)
        while (to > from) {
            size_t b = to - 1;
            while (b > from && ((unsigned char)s->s[b] & 0xC0) == 0x80) b--;
            tok_utf8_next(s->s + b, to - b, &cp);
            if (!bert_utext_is_whitespace(cp)) break;
            to = b;
        }
    for (size_t i = from; i < to;) {
        size_t n = tok_utf8_next(s->s + i, to - i, &cp);
        if (!(drop && drop(cp)) && tok_str_push(&out, cp, s->al[i]) != 0) { tok_str_free(&out); return -1; }
        i += n;
    }
    tok_str_free(s);
    *s = out;
    return 0;
}

static int lowercase(tok_str *s)
{
    tok_str out;
    memset(&out, 0, sizeof out);
    out.origin = s->origin;
    for (size_t i = 0; i < s->len;) {
        int32_t cp, low[2];
        size_t n = tok_utf8_next(s->s + i, s->len - i, &cp);
        int k = bert_utext_lowercase(cp, low);
        for (int j = 0; j < k; j++)
            if (tok_str_push(&out, low[j], s->al[i]) != 0) { tok_str_free(&out); return -1; }
        i += n;
    }
    tok_str_free(s);
    *s = out;
    return 0;
}

static int prepend(const char *prefix, tok_str *s)
{
    if (s->len == 0 || !*prefix) return 0;
    tok_str out;
    memset(&out, 0, sizeof out);
    out.origin = s->origin;
    size_t plen = strlen(prefix);
    for (size_t k = 0; k < plen;) {
        int32_t cp;
        k += tok_utf8_next(prefix + k, plen - k, &cp);
        if (tok_str_push(&out, cp, s->al[0]) != 0) { tok_str_free(&out); return -1; }
    }
    if (str_room(&out, out.len + s->len) != 0) { tok_str_free(&out); return -1; }
    memcpy(out.s + out.len, s->s, s->len);
    memcpy(out.al + out.len, s->al, s->len * sizeof *s->al);
    out.len += s->len;
    out.s[out.len] = '\0';
    tok_str_free(s);
    *s = out;
    return 0;
}

/* The canonical combining class as the reference's older tables know it:
 * a mark they do not know (added to Unicode since) is a starter there. */
static int reference_class(int32_t cp)
{
    return bert_utext_is_combining_mark(cp) ? utf8proc_get_property(cp)->combining_class : 0;
}

/* Whether Hangul jamo `next` composes with what precedes it, `prev`: a
 * leading consonant with a vowel, a vowel or an LV syllable with a
 * trailing consonant.  These are starters, which composition joins all
 * the same. */
static int hangul_joins(int32_t prev, int32_t next)
{
    const int l = prev >= 0x1100 && prev <= 0x1112, v = prev >= 0x1161 && prev <= 0x1175;
    const int lv = prev >= 0xAC00 && prev <= 0xD7A3 && (prev - 0xAC00) % 28 == 0;
    if (l) return next >= 0x1161 && next <= 0x1175;
    return (v || lv) && next >= 0x11A8 && next <= 0x11C2;
}

/* One segment of NFC or NFKC: each character decomposed, the marks put
 * in canonical order by the reference's combining classes (a mark newer
 * than the Rust library's tables is a starter there, and stays in place),
 * then composed.  The code points go to *buf (grown as needed); returns
 * their count, or -1 out of memory. */
static utf8proc_ssize_t compose_segment(const char *text, size_t len, int compat, int32_t **buf, size_t *cap)
{
    utf8proc_option_t opt = UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0);
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        int32_t cp, boundclass = 0, d[32];
        i += tok_utf8_next(text + i, len - i, &cp);
        utf8proc_ssize_t k = utf8proc_decompose_char(cp, d, 32, opt, &boundclass);
        if (k < 1 || k > 32 || bert_utext_nfkd_kept(cp)) { d[0] = cp; k = 1; }
        if (n + (size_t)k > *cap) {
            size_t want = (n + (size_t)k) * 2;
            int32_t *grown = realloc(*buf, want * sizeof *grown);
            if (!grown) return -1;
            *buf = grown;
            *cap = want;
        }
        memcpy(*buf + n, d, (size_t)k * sizeof *d);
        n += (size_t)k;
    }
    int32_t *b = *buf;
    for (size_t i = 1; i < n; i++) {
        int32_t x = b[i];
        int cc = reference_class(x);
        if (cc == 0) continue;
        size_t j = i;
        while (j > 0) {
            int pc = reference_class(b[j - 1]);
            if (pc == 0 || pc <= cc) break;
            b[j] = b[j - 1];
            j--;
        }
        b[j] = x;
    }
    return utf8proc_normalize_utf32(b, (utf8proc_ssize_t)n, UTF8PROC_COMPOSE | UTF8PROC_STABLE);
}

/* Unicode normalization forms, character by character: a decomposition's
 * first character replaces the source character, the rest are insertions;
 * canonical reordering moves marks with their changes; composition (NFC,
 * NFKC) runs over each starter and the marks after it. */
static int unicode_form(tok_str *s, int compat, int compose)
{
    tok_changes c = {0};
    int32_t d[32], *seg = NULL;
    size_t seg_cap = 0;
    int rc = -1;
    utf8proc_option_t opt = UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0);
    if (!compose) {
        for (size_t i = 0; i < s->len;) {
            int32_t cp, boundclass = 0;
            i += tok_utf8_next(s->s + i, s->len - i, &cp);
            utf8proc_ssize_t n = utf8proc_decompose_char(cp, d, 32, opt, &boundclass);
            if (n < 1 || n > 32 || bert_utext_nfkd_kept(cp)) { d[0] = cp; n = 1; }
            for (utf8proc_ssize_t k = 0; k < n; k++)
                if (tok_changes_push(&c, d[k], k > 0) != 0) goto done;
        }
        /* Canonical ordering: a stable sort by combining class of each run
         * of non-starters.  The characters move, their changes (and so
         * alignments) stay by position, as in the Rust library. */
        for (size_t i = 1; i < c.len; i++) {
            int32_t x = c.at[i].cp;
            int cc = reference_class(x);
            if (cc == 0) continue;
            size_t j = i;
            while (j > 0) {
                int pc = reference_class(c.at[j - 1].cp);
                if (pc == 0 || pc <= cc) break;
                c.at[j].cp = c.at[j - 1].cp;
                j--;
            }
            c.at[j].cp = x;
        }
    } else {
        for (size_t i = 0; i < s->len;) {
            /* A starter and the non-starters after it, and the Hangul
             * jamo that compose with it (L V, LV T: starters too). */
            int32_t cp;
            size_t start = i, chars = 0;
            i += tok_utf8_next(s->s + i, s->len - i, &cp);
            chars++;
            int32_t starter = cp, last = cp;
            while (i < s->len && !bert_utext_nfkd_kept(starter)) {
                size_t n = tok_utf8_next(s->s + i, s->len - i, &cp);
                if (reference_class(cp) == 0 && !hangul_joins(last, cp)) break;
                i += n;
                chars++;
                last = cp;
            }
            if (bert_utext_nfkd_kept(starter)) {
                if (tok_changes_push(&c, starter, 0) != 0) goto done;
                continue;
            }
            utf8proc_ssize_t m = compose_segment(s->s + start, i - start, compat, &seg, &seg_cap);
            if (m < 0) goto done;
            for (utf8proc_ssize_t k = 0; k < m; k++)
                if (tok_changes_push(&c, seg[k], (size_t)k >= chars) != 0) goto done;
            /* The characters composition took are removed right after the
             * segment's first, so the marks after it take the alignments of
             * the source characters by position, as in the Rust library. */
            if ((size_t)m < chars && m > 0) c.at[c.len - (size_t)m].change -= (int32_t)(chars - (size_t)m);
        }
    }
    rc = tok_str_transform(s, &c, 0);
done:
    free(c.at);
    free(seg);
    return rc;
}

int tok_normalize(const tok_norm *n, size_t count, tok_str *s)
{
    for (size_t i = 0; i < count; i++) {
        int rc = 0;
        switch (n[i].kind) {
        case NORM_PRECOMPILED: rc = n[i].pc ? precompiled_normalize(n[i].pc, s) : 0; break;
        case NORM_REPLACE: rc = replace_all(&n[i], s); break;
        case NORM_NFD: rc = unicode_form(s, 0, 0); break;
        case NORM_NFKD: rc = unicode_form(s, 1, 0); break;
        case NORM_NFC: rc = unicode_form(s, 0, 1); break;
        case NORM_NFKC: rc = unicode_form(s, 1, 1); break;
        case NORM_STRIP_ACCENTS: rc = filter(s, bert_utext_is_combining_mark, 0, 0); break;
        case NORM_LOWERCASE: rc = lowercase(s); break;
        case NORM_STRIP: rc = filter(s, NULL, n[i].left, n[i].right); break;
        case NORM_PREPEND: rc = prepend(n[i].content, s); break;
        }
        if (rc != 0) return -1;
    }
    return 0;
}
