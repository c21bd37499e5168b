/*
 * tok_pretokenize.c - the pre-tokenizers of tokenizer.json for byte-level
 * BPE and SentencePiece tokenizers: ByteLevel (GPT-2's split and the byte
 * alphabet), Metaspace, WhitespaceSplit and Whitespace.
 *
 * Each takes the words so far and splits (and for ByteLevel and Metaspace
 * rewrites) each, keeping every byte's alignment to the original text.
 */
#include "tok_pipeline.h"

#include "../base/buffer.h"
#include "../base/unicode_text.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

void tok_words_free(tok_words *w)
{
    for (size_t i = 0; i < w->len; i++) tok_str_free(&w->at[i]);
    free(w->at);
    memset(w, 0, sizeof *w);
}

/* Takes over `s`. */
static int words_push(tok_words *w, tok_str *s)
{
    if (s->len == 0) { tok_str_free(s); return 0; }
    if (w->len == w->cap) {
        tok_str *g = bert_grow(w->at, &w->cap, w->len + 1, sizeof *g);
        if (!g) { tok_str_free(s); return -1; }
        w->at = g;
    }
    w->at[w->len++] = *s;
    memset(s, 0, sizeof *s);
    return 0;
}

static int push_slice(tok_words *w, const tok_str *s, size_t from, size_t to)
{
    if (to <= from) return 0;
    tok_str piece;
    if (tok_str_slice(s, from, to, &piece) != 0) return -1;
    return words_push(w, &piece);
}

/* ---- the byte-level alphabet --------------------------------------------- */

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves,
 * the others for 256, 257, ... in byte order. */
int32_t tok_byte_char(unsigned char b)
{
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE)) return b;
    int n = 0;
    for (int k = 0; k < b; k++)
        if (!((k >= 0x21 && k <= 0x7E) || (k >= 0xA1 && k <= 0xAC) || (k >= 0xAE))) n++;
    return 256 + n;
}

int tok_char_byte(int32_t cp)
{
    if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF)) return cp;
    if (cp < 256 || cp >= 256 + 68) return -1;
    int n = cp - 256;
    for (int k = 0; k < 256; k++)
        if (!((k >= 0x21 && k <= 0x7E) || (k >= 0xA1 && k <= 0xAC) || (k >= 0xAE)) && n-- == 0) return k;
    return -1;
}

/* ---- GPT-2's split ------------------------------------------------------- */

static int is_letter(int32_t cp)
{
    utf8proc_category_t k = utf8proc_category(cp);
    return k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO;
}

static int is_number(int32_t cp)
{
    utf8proc_category_t k = utf8proc_category(cp);
    return k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO;
}

static int32_t char_at(const tok_str *s, size_t i, size_t *n)
{
    int32_t cp = -1;
    *n = i < s->len ? tok_utf8_next(s->s + i, s->len - i, &cp) : 0;
    return cp;
}

/* Bytes from i on while `pred` holds (pred 0: other, 1: letter, 2: number,
 * 3: whitespace). */
static size_t run_of(const tok_str *s, size_t i, int kind)
{
    size_t j = i, n;
    for (;;) {
        int32_t cp = char_at(s, j, &n);
        if (cp < 0) break;
        int k = is_letter(cp) ? 1 : is_number(cp) ? 2 : bert_utext_is_whitespace(cp) ? 3 : 0;
        if (k != kind) break;
        j += n;
    }
    return j - i;
}

static int kind_of(int32_t cp)
{
    return cp < 0 ? -1 : is_letter(cp) ? 1 : is_number(cp) ? 2 : bert_utext_is_whitespace(cp) ? 3 : 0;
}

/* The length of the match of
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * at byte i (the regex matches every character, so never 0). */
static size_t gpt2_match(const tok_str *s, size_t i)
{
    const char *p = s->s + i;
    size_t left = s->len - i, n;
    if (p[0] == '\'' && left >= 2) {
        if (strchr("stmd", p[1])) return 2;
        if (left >= 3 && ((p[1] == 'r' && p[2] == 'e') || (p[1] == 'v' && p[2] == 'e') || (p[1] == 'l' && p[2] == 'l')))
            return 3;
    }
    int32_t cp = char_at(s, i, &n);
    size_t skip = 0;
    if (cp == ' ') {
        size_t n2;
        int k2 = kind_of(char_at(s, i + n, &n2));
        if (k2 == 1 || k2 == 2 || k2 == 0) return n + run_of(s, i + n, k2);
    }
    int k = kind_of(cp);
    if (k != 3) return run_of(s, i + skip, k);
    /* Whitespace: all of it when it ends the text or is followed by more
     * whitespace only; else all but its last character (which then starts
     * the next match), or the one character. */
    size_t run = run_of(s, i, 3);
    if (i + run >= s->len) return run;
    size_t last = i + run, b = last - 1;
    while (b > i && ((unsigned char)s->s[b] & 0xC0) == 0x80) b--;
    return b > i ? b - i : run;
}

/* ---- the pre-tokenizers -------------------------------------------------- */

static int byte_level(const tok_pre *pre, tok_str *w, tok_words *out)
{
    if (pre->add_prefix_space && w->len && w->s[0] != ' ') {
        tok_str spaced;
        memset(&spaced, 0, sizeof spaced);
        spaced.origin = w->origin;
        if (tok_str_push(&spaced, ' ', w->al[0]) != 0) { tok_str_free(&spaced); return -1; }
        for (size_t i = 0; i < w->len;) {
            int32_t cp;
            size_t n = tok_utf8_next(w->s + i, w->len - i, &cp);
            if (tok_str_push(&spaced, cp, w->al[i]) != 0) { tok_str_free(&spaced); return -1; }
            i += n;
        }
        tok_str_free(w);
        *w = spaced;
    }
    for (size_t i = 0; i < w->len;) {
        size_t m = pre->use_regex ? gpt2_match(w, i) : w->len - i;
        /* Each byte becomes its character of the alphabet, aligned to the
         * character it is a byte of. */
        tok_str piece;
        memset(&piece, 0, sizeof piece);
        piece.origin = w->al[i].start;
        for (size_t b = i; b < i + m; b++) {
            size_t lead = b;
            while (lead > i && ((unsigned char)w->s[lead] & 0xC0) == 0x80) lead--;
            if (tok_str_push(&piece, tok_byte_char((unsigned char)w->s[b]), w->al[lead]) != 0) {
                tok_str_free(&piece);
                return -1;
            }
        }
        if (words_push(out, &piece) != 0) return -1;
        i += m;
    }
    return 0;
}

static int metaspace(const tok_pre *pre, tok_str *w, tok_words *out)
{
    char rep[4];
    size_t rlen = bert_utext_encode(pre->replacement, rep);
    tok_str r;
    memset(&r, 0, sizeof r);
    r.origin = w->origin;
    int starts = w->len >= rlen && memcmp(w->s, rep, rlen) == 0;
    if (w->len && !starts && w->s[0] != ' ' &&
        (pre->prepend_scheme == PREPEND_ALWAYS || (pre->prepend_scheme == PREPEND_FIRST && w->al[0].start == 0)))
        if (tok_str_push(&r, pre->replacement, w->al[0]) != 0) goto oom;
    if (w->len && w->s[0] == ' ' && pre->prepend_scheme == PREPEND_NEVER) { /* the space itself becomes ▁ */ }
    for (size_t i = 0; i < w->len;) {
        int32_t cp;
        size_t n = tok_utf8_next(w->s + i, w->len - i, &cp);
        if (tok_str_push(&r, cp == ' ' ? pre->replacement : cp, w->al[i]) != 0) goto oom;
        i += n;
    }
    if (!pre->split) return words_push(out, &r);
    size_t from = 0;
    for (size_t i = 0; i < r.len;) {
        if (i > from && i + rlen <= r.len && memcmp(r.s + i, rep, rlen) == 0) {
            if (push_slice(out, &r, from, i) != 0) goto oom;
            from = i;
        }
        int32_t cp;
        i += tok_utf8_next(r.s + i, r.len - i, &cp);
    }
    if (push_slice(out, &r, from, r.len) != 0) goto oom;
    tok_str_free(&r);
    return 0;
oom:
    tok_str_free(&r);
    return -1;
}

static int is_word_char(int32_t cp)
{
    utf8proc_category_t k = utf8proc_category(cp);
    return is_letter(cp) || is_number(cp) || k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_MC ||
           k == UTF8PROC_CATEGORY_ME || k == UTF8PROC_CATEGORY_PC;
}

/* WhitespaceSplit (whitespace removed), or Whitespace (\w+|[^\w\s]+). */
static int whitespace(const tok_pre *pre, tok_str *w, tok_words *out)
{
    size_t from = 0;
    int cur = -1;   /* the class of the run from `from`: 0 other, 1 word */
    for (size_t i = 0; i < w->len;) {
        int32_t cp;
        size_t n = tok_utf8_next(w->s + i, w->len - i, &cp);
        if (bert_utext_is_whitespace(cp)) {
            if (push_slice(out, w, from, i) != 0) return -1;
            from = i + n;
            cur = -1;
        } else if (pre->kind == PRE_WHITESPACE) {
            int k = is_word_char(cp);
            if (cur >= 0 && k != cur) {
                if (push_slice(out, w, from, i) != 0) return -1;
                from = i;
            }
            cur = k;
        }
        i += n;
    }
    return push_slice(out, w, from, w->len);
}

int tok_pre_tokenize(const tok_pre *pre, size_t count, tok_str *s, tok_words *out)
{
    tok_words cur = {0};
    if (words_push(&cur, s) != 0) return -1;
    for (size_t k = 0; k < count; k++) {
        tok_words next = {0};
        for (size_t i = 0; i < cur.len; i++) {
            int rc;
            switch (pre[k].kind) {
            case PRE_BYTE_LEVEL: rc = byte_level(&pre[k], &cur.at[i], &next); break;
            case PRE_METASPACE: rc = metaspace(&pre[k], &cur.at[i], &next); break;
            default: rc = whitespace(&pre[k], &cur.at[i], &next); break;
            }
            if (rc != 0) { tok_words_free(&next); tok_words_free(&cur); return -1; }
        }
        tok_words_free(&cur);
        cur = next;
    }
    *out = cur;
    return 0;
}
