/*
 * tok_decode.c - the decoders of tokenizer.json for the general pipeline:
 * ByteLevel (the byte alphabet back to UTF-8), Metaspace (▁ back to a
 * space), and the Sequence parts of SentencePiece-style decoders (Replace,
 * ByteFallback, Fuse, Strip), each working on the list of token strings as
 * the Rust library's decode_chain does.
 */
#include "tok_pipeline.h"

#include "../base/buffer.h"
#include "../base/unicode_text.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    char **s;
    size_t n;
} str_list;

static void list_free(str_list *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->s[i]);
    free(l->s);
    l->s = NULL;
    l->n = 0;
}

/* Replaces the list with one string: the bytes of every token, read back
 * through the byte alphabet (a token with a character outside it is taken
 * as its own bytes), as lossy UTF-8. */
static int byte_level(str_list *l)
{
    bert_text raw = {0};
    bert_text_add(&raw, "", 0);
    for (size_t i = 0; i < l->n; i++) {
        const char *t = l->s[i];
        size_t len = strlen(t), at = raw.len;
        int ok = 1;
        for (size_t k = 0; k < len && ok;) {
            int32_t cp;
            k += tok_utf8_next(t + k, len - k, &cp);
            int b = tok_char_byte(cp);
            if (b < 0) ok = 0;
            else {
                char c = (char)b;
                bert_text_add(&raw, &c, 1);
            }
        }
        if (!ok) {
            raw.len = at;
            bert_text_add(&raw, t, len);
        }
    }
    bert_text out = {0};
    bert_text_add(&out, "", 0);
    for (size_t i = 0; i < raw.len && !raw.failed;) {
        int32_t cp;
        i += bert_utext_decode((const unsigned char *)raw.s + i, raw.len - i, &cp);
        char u[4];
        bert_text_add(&out, u, bert_utext_encode(cp, u));
    }
    int failed = raw.failed || out.failed;
    free(raw.s);
    if (failed) { free(out.s); return -1; }
    list_free(l);
    if (!(l->s = malloc(sizeof *l->s))) { free(out.s); return -1; }
    l->s[0] = out.s;
    l->n = 1;
    return 0;
}

/* Rewrites token i by replacing character `from` (or, with from_text, the
 * literal text) with `to`. */
static int replace_in(str_list *l, size_t i, const char *from, const char *to, int drop)
{
    const char *t = l->s[i];
    size_t fl = strlen(from), tl = strlen(to);
    bert_text out = {0};
    bert_text_add(&out, "", 0);
    for (size_t k = 0; t[k];) {
        if (fl && strncmp(t + k, from, fl) == 0) {
            if (!drop) bert_text_add(&out, to, tl);
            k += fl;
        } else {
            bert_text_add(&out, t + k, 1);
            k++;
        }
    }
    if (out.failed) { free(out.s); return -1; }
    free(l->s[i]);
    l->s[i] = out.s;
    return 0;
}

static int metaspace(const tok_dec *d, str_list *l)
{
    char rep[5] = {0};
    bert_utext_encode(d->replacement, rep);
    for (size_t i = 0; i < l->n; i++)
        if (replace_in(l, i, rep, " ", i == 0 && d->prepend_scheme != PREPEND_NEVER) != 0) return -1;
    return 0;
}

static int hex_byte(const char *t)
{
    /* <0xXX> */
    if (strlen(t) != 6 || strncmp(t, "<0x", 3) != 0 || t[5] != '>') return -1;
    int v = 0;
    for (int k = 3; k < 5; k++) {
        char c = t[k];
        int h = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

/* Runs of <0xXX> tokens become the text they spell when it is valid UTF-8,
 * else one U+FFFD per byte. */
static int byte_fallback(str_list *l)
{
    str_list out = {0};
    if (!(out.s = malloc((l->n ? l->n : 1) * sizeof *out.s))) return -1;
    for (size_t i = 0; i < l->n;) {
        size_t j = i;
        while (j < l->n && hex_byte(l->s[j]) >= 0) j++;
        if (j == i) {
            out.s[out.n++] = l->s[i];
            l->s[i] = NULL;
            i++;
            continue;
        }
        size_t nb = j - i;
        char *bytes = malloc(nb * 3 + 1);
        if (!bytes) { list_free(&out); return -1; }
        for (size_t k = 0; k < nb; k++) bytes[k] = (char)hex_byte(l->s[i + k]);
        int valid = 1;
        for (size_t k = 0; k < nb && valid;) {
            int32_t cp;
            size_t n = bert_utext_decode((const unsigned char *)bytes + k, nb - k, &cp);
            if (cp == UTEXT_REPLACEMENT && !(n == 3 && memcmp(bytes + k, "\xEF\xBF\xBD", 3) == 0)) valid = 0;
            k += n;
        }
        if (valid) {
            bytes[nb] = '\0';
        } else {
            for (size_t k = 0; k < nb; k++) memcpy(bytes + 3 * k, "\xEF\xBF\xBD", 3);
            bytes[3 * nb] = '\0';
        }
        out.s[out.n++] = bytes;
        i = j;
    }
    list_free(l);
    *l = out;
    return 0;
}

static int fuse(str_list *l)
{
    bert_text all = {0};
    bert_text_add(&all, "", 0);
    for (size_t i = 0; i < l->n; i++) bert_text_add(&all, l->s[i], strlen(l->s[i]));
    if (all.failed) { free(all.s); return -1; }
    list_free(l);
    if (!(l->s = malloc(sizeof *l->s))) { free(all.s); return -1; }
    l->s[0] = all.s;
    l->n = 1;
    return 0;
}

/* Strip: up to `left` leading and `right` trailing `strip_char`s of each token. */
static int strip(const tok_dec *d, str_list *l)
{
    char c[5] = {0};
    size_t cl = bert_utext_encode(d->strip_char, c);
    for (size_t i = 0; i < l->n; i++) {
        char *t = l->s[i];
        size_t len = strlen(t), from = 0;
        for (int k = 0; k < d->strip_left && len - from >= cl && memcmp(t + from, c, cl) == 0; k++) from += cl;
        for (int k = 0; k < d->strip_right && len - from >= cl && memcmp(t + len - cl, c, cl) == 0; k++) len -= cl;
        memmove(t, t + from, len - from);
        t[len - from] = '\0';
    }
    return 0;
}

char *tok_decode(const tok_dec *d, size_t count, const char *const *tokens, size_t n)
{
    str_list l = {0};
    if (!(l.s = calloc(n ? n : 1, sizeof *l.s))) return NULL;
    for (; l.n < n; l.n++)
        if (!(l.s[l.n] = bert_strdup(tokens[l.n]))) goto fail;
    int joined_by_space = count == 0;
    for (size_t k = 0; k < count; k++) {
        int rc = 0;
        switch (d[k].kind) {
        case DEC_BYTE_LEVEL: rc = byte_level(&l); break;
        case DEC_METASPACE: rc = metaspace(&d[k], &l); break;
        case DEC_REPLACE:
            for (size_t i = 0; i < l.n && rc == 0; i++) rc = replace_in(&l, i, d[k].from, d[k].to, 0);
            break;
        case DEC_BYTE_FALLBACK: rc = byte_fallback(&l); break;
        case DEC_FUSE: rc = fuse(&l); break;
        case DEC_STRIP: rc = strip(&d[k], &l); break;
        default: joined_by_space = 1; break;
        }
        if (rc != 0) goto fail;
    }
    bert_text out = {0};
    bert_text_add(&out, "", 0);
    for (size_t i = 0; i < l.n; i++) {
        if (joined_by_space && i > 0) bert_text_add(&out, " ", 1);
        bert_text_add(&out, l.s[i], strlen(l.s[i]));
    }
    list_free(&l);
    if (out.failed) { free(out.s); return NULL; }
    return out.s;
fail:
    list_free(&l);
    return NULL;
}

size_t tok_replace_all(char *s, size_t from, size_t len, const tok_replacement *r, size_t nr)
{
    for (size_t k = 0; k < nr; k++) {
        size_t fl = strlen(r[k].from), tl = strlen(r[k].to), o = from;
        for (size_t i = from; i < len;) {
            if (i + fl <= len && memcmp(s + i, r[k].from, fl) == 0) {
                memmove(s + o, r[k].to, tl);
                o += tl;
                i += fl;
            } else {
                s[o++] = s[i++];
            }
        }
        len = o;
    }
    s[len] = '\0';
    return len;
}

size_t tok_clean_up_spaces(char *s, size_t len)
{
    /* transformers' PreTrainedTokenizerBase.clean_up_tokenization, rule for rule. */
    static const tok_replacement rules[] = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
        {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
    };
    return tok_replace_all(s, 0, len, rules, sizeof rules / sizeof *rules);
}
