/*
 * tok_pipeline.c - the general tokenizer pipeline, as the Rust library's
 * TokenizerImpl::encode runs it: added tokens that are not normalized are
 * found in the raw text; each stretch between them is normalized, the
 * normalized added tokens are found in it, and the rest is pre-tokenized
 * into words that the model (BPE or Unigram) splits into tokens.  Every
 * token's offsets come from the alignments the normalized string keeps.
 */
#include "tok_pipeline.h"

#include "../base/buffer.h"
#include "../base/error.h"
#include "../base/unicode_text.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* ---- added tokens -------------------------------------------------------- */

static int longest_first(const void *a, const void *b)
{
    const tok_added *x = *(tok_added *const *)a, *y = *(tok_added *const *)b;
    unsigned char fx = (unsigned char)x->match[0], fy = (unsigned char)y->match[0];
    if (fx != fy) return fx < fy ? -1 : 1;
    return (x->match_len < y->match_len) - (x->match_len > y->match_len);
}

static void index_set(tok_added_set *set)
{
    if (set->n > 1) qsort(set->tokens, set->n, sizeof *set->tokens, longest_first);
    for (size_t i = 0, b = 0; b <= 256; b++) {
        while (i < set->n && (unsigned char)set->tokens[i]->match[0] < b) i++;
        set->bucket[b] = i;
    }
}

/* What an added token is matched as: its content, or for a normalized one
 * the content run through the normalizer. */
static int build_added_sets(tok_pipeline *p)
{
    size_t room = p->n_added ? p->n_added : 1;
    if (!(p->raw.tokens = malloc(room * sizeof *p->raw.tokens)) ||
        !(p->normalized.tokens = malloc(room * sizeof *p->normalized.tokens)))
        return -1;
    for (size_t i = 0; i < p->n_added; i++) {
        tok_added *a = &p->added[i];
        if (a->normalized && p->n_norm) {
            tok_str s;
            memset(&s, 0, sizeof s);
            size_t len = strlen(a->content);
            for (size_t k = 0; k < len;) {
                int32_t cp;
                size_t n = tok_utf8_next(a->content + k, len - k, &cp);
                if (tok_str_push(&s, cp, (tok_align){(int64_t)k, (int64_t)(k + n)}) != 0) { tok_str_free(&s); return -1; }
                k += n;
            }
            if (tok_normalize(p->norm, p->n_norm, &s) != 0) { tok_str_free(&s); return -1; }
            a->match = s.s ? s.s : bert_strdup("");
            a->match_len = s.len;
            free(s.al);
            if (!a->match) return -1;
        } else {
            if (!(a->match = bert_strdup(a->content))) return -1;
            a->match_len = strlen(a->match);
        }
        if (a->match_len == 0) continue;
        tok_added_set *set = a->normalized ? &p->normalized : &p->raw;
        set->tokens[set->n++] = a;
    }
    index_set(&p->raw);
    index_set(&p->normalized);
    return 0;
}

static int is_word_char(int32_t cp)
{
    utf8proc_category_t k = utf8proc_category(cp);
    return cp == '_' || (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO) ||
           (k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO);
}

/* The character that ends at byte `end` of s. */
static int32_t char_before(const char *s, size_t end)
{
    size_t b = end - 1;
    while (b > 0 && ((unsigned char)s[b] & 0xC0) == 0x80) b--;
    int32_t cp;
    tok_utf8_next(s + b, end - b, &cp);
    return cp;
}

typedef struct {
    const tok_added *token;
    size_t start, stop;   /* with the whitespace lstrip and rstrip take */
} added_match;

/* The next added token of `set` in s[from..len) after the previous match
 * ended at `prev_stop`, as AddedVocabulary::find_matches takes them:
 * leftmost-longest, single_word ones only between word boundaries, lstrip
 * and rstrip taking the whitespace next to them.  0 when none. */
static int next_match(const tok_added_set *set, const char *s, size_t len, size_t from, size_t prev_stop,
                      added_match *m)
{
    if (set->n == 0) return 0;
    for (size_t i = from; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        const tok_added *hit = NULL;
        for (size_t k = set->bucket[c]; k < set->bucket[c + 1]; k++) {
            const tok_added *a = set->tokens[k];
            if (a->match_len <= len - i && memcmp(a->match, s + i, a->match_len) == 0) { hit = a; break; }
        }
        if (!hit) continue;
        size_t start = i, stop = i + hit->match_len;
        if (hit->single_word) {
            int32_t cp;
            int before = start > 0 && is_word_char(char_before(s, start));
            int after = stop < len && (tok_utf8_next(s + stop, len - stop, &cp), is_word_char(cp));
            if (before || after) { i = stop - 1; continue; }
        }
        if (hit->lstrip) {
            while (start > prev_stop && bert_utext_is_whitespace(char_before(s, start))) {
                size_t b = start - 1;
                while (b > prev_stop && ((unsigned char)s[b] & 0xC0) == 0x80) b--;
                start = b;
            }
        }
        if (hit->rstrip) {
            int32_t cp;
            while (stop < len) {
                size_t n = tok_utf8_next(s + stop, len - stop, &cp);
                if (!bert_utext_is_whitespace(cp)) break;
                stop += n;
            }
        }
        m->token = hit;
        m->start = start;
        m->stop = stop;
        return 1;
    }
    return 0;
}

/* ---- encoding ------------------------------------------------------------ */

typedef struct {
    const tok_pipeline *p;
    bert_ids *out;
    bert_spans *spans;     /* NULL: no offsets */
    int64_t word;          /* the pre-tokenizer word, counted from 0 */
    tok_pieces pieces;
    tok_word_cache *cache; /* or NULL */
} encode_pass;

/* Appends a token spanning original bytes [start, end); the spans hold
 * bytes for now, turned into characters at the end. */
static int push_token(encode_pass *e, int32_t id, int64_t start, int64_t end)
{
    if (bert_ids_push(e->out, id) != 0) return -1;
    if (!e->spans) return 0;
    bert_spans *v = e->spans;
    if (v->len == v->cap) {
        bert_token_span *g = bert_grow(v->at, &v->cap, v->len + 1, sizeof *g);
        if (!g) return -1;
        v->at = g;
    }
    bert_token_span *t = &v->at[v->len++];
    t->byte_start = start;
    t->byte_end = end;
    t->word = e->word;
    return 0;
}

/* Pre-tokenizes and tokenizes one piece of normalized text. */
static int encode_piece(encode_pass *e, tok_str *piece)
{
    const tok_pipeline *p = e->p;
    tok_words words = {0};
    if (tok_pre_tokenize(p->pre, p->n_pre, piece, &words) != 0) return -1;
    int rc = 0;
    for (size_t w = 0; w < words.len && rc == 0; w++) {
        tok_str *word = &words.at[w];
        e->pieces.len = 0;
        int hit = e->cache ? tok_word_cache_get(e->cache, word->s, word->len, &e->pieces) : 0;
        if (hit < 0) { rc = -1; break; }
        if (!hit) {
            rc = p->bpe ? tok_bpe_tokenize(p->bpe, word->s, word->len, &e->pieces)
                        : tok_unigram_tokenize(p->unigram, word->s, word->len, &e->pieces);
            if (rc == 0 && e->cache) tok_word_cache_put(e->cache, word->s, word->len, e->pieces.at, e->pieces.len);
        }
        for (size_t i = 0; i < e->pieces.len && rc == 0; i++) {
            const tok_piece *t = &e->pieces.at[i];
            rc = push_token(e, t->id, word->al[t->start].start, word->al[t->end - 1].end);
        }
        e->word++;
    }
    tok_words_free(&words);
    return rc;
}

/* One stretch of raw text between raw-matched added tokens, from byte
 * `at`: read as characters (an ill-formed sequence as U+FFFD aligned to
 * its bytes), normalized, then split on the normalized added tokens. */
static int encode_segment(encode_pass *e, const char *text, size_t at, size_t end)
{
    const tok_pipeline *p = e->p;
    if (end <= at) return 0;
    tok_str s;
    memset(&s, 0, sizeof s);
    s.origin = (int64_t)at;
    for (size_t i = at; i < end;) {
        int32_t cp;
        size_t n = bert_utext_decode((const unsigned char *)text + i, end - i, &cp);
        if (tok_str_push(&s, cp, (tok_align){(int64_t)i, (int64_t)(i + n)}) != 0) goto oom;
        i += n;
    }
    if (tok_normalize(p->norm, p->n_norm, &s) != 0) goto oom;
    size_t from = 0, prev = 0;
    added_match m;
    while (next_match(&p->normalized, s.s, s.len, from, prev, &m)) {
        tok_str piece;
        if (m.start > prev) {
            if (tok_str_slice(&s, prev, m.start, &piece) != 0 || encode_piece(e, &piece) != 0) { tok_str_free(&piece); goto oom; }
            tok_str_free(&piece);
        }
        if (push_token(e, m.token->id, s.al[m.start].start, s.al[m.stop - 1].end) != 0) goto oom;
        e->word++;
        from = prev = m.stop;
        if (m.stop == m.start) from++;
    }
    if (s.len > prev) {
        tok_str piece;
        if (tok_str_slice(&s, prev, s.len, &piece) != 0 || encode_piece(e, &piece) != 0) { tok_str_free(&piece); goto oom; }
        tok_str_free(&piece);
    }
    tok_str_free(&s);
    return 0;
oom:
    tok_str_free(&s);
    return -1;
}

/* The spans' bytes as characters, counted as SQLite counts them (see
 * bert_token_span). */
static int bytes_to_chars(const char *text, size_t len, bert_spans *v, size_t from)
{
    int64_t *chars_before = malloc((len + 1) * sizeof *chars_before);
    if (!chars_before) return -1;
    int64_t chars = 0;
    int absorb = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        int starts = (c & 0xC0) != 0x80 || !absorb;
        if (starts) absorb = c >= 0xC0;
        chars_before[i] = chars;
        chars += starts;
    }
    chars_before[len] = chars;
    for (size_t i = from; i < v->len; i++) {
        bert_token_span *t = &v->at[i];
        int64_t b = t->byte_start, e = t->byte_end;
        /* Every piece was cut from the text, left to right. */
        assert(0 <= b && b <= e && e <= (int64_t)len);
        /* The character holding byte b; the characters that start before e. */
        t->start = b < (int64_t)len ? chars_before[b + 1] - 1 : chars;
        t->end = e > b ? chars_before[e < (int64_t)len ? e : (int64_t)len] : t->start;
    }
    free(chars_before);
    return 0;
}

/* The caller's word cache, (re)made for this pipeline; NULL without one
 * or when out of memory (encoding then goes without). */
static tok_word_cache *word_cache_of(const tok_pipeline *p, bert_encode_buffers *keep)
{
    if (!keep) return NULL;
    if (keep->words && tok_word_cache_owner(keep->words) != p) {
        tok_word_cache_free(keep->words);
        keep->words = NULL;
    }
    if (!keep->words) keep->words = tok_word_cache_new(p);
    return keep->words;
}

int tok_pipeline_encode(const tok_pipeline *p, const char *text, size_t len, size_t max_ids, bert_ids *out,
                        bert_spans *spans, bert_encode_buffers *keep)
{
    encode_pass e;
    memset(&e, 0, sizeof e);
    e.p = p;
    e.cache = word_cache_of(p, keep);
    e.out = out;
    e.spans = spans;
    size_t ids_base = out->len, spans_base = spans ? spans->len : 0;
    size_t from = 0, prev = 0;
    added_match m;
    int rc = -1;
    while (next_match(&p->raw, text, len, from, prev, &m)) {
        if (encode_segment(&e, text, prev, m.start) != 0) goto done;
        if (push_token(&e, m.token->id, (int64_t)m.start, (int64_t)m.stop) != 0) goto done;
        e.word++;
        from = prev = m.stop;
        if (out->len >= max_ids) break;
    }
    if (out->len < max_ids && encode_segment(&e, text, prev, len) != 0) goto done;
    if (out->len > max_ids) {
        out->len = max_ids > ids_base ? max_ids : ids_base;
        if (spans) spans->len = spans_base + (out->len - ids_base);
    }
    if (spans && bytes_to_chars(text, len, spans, spans_base) != 0) goto done;
    rc = 0;
done:
    free(e.pieces.at);
    if (rc != 0) {
        out->len = ids_base;
        if (spans) spans->len = spans_base;
    }
    return rc;
}

/* ---- loading, decoding, queries ------------------------------------------ */

int tok_pipeline_load(bert_model_files *files, const json_doc *tj, tok_pipeline **out, char **err)
{
    const char *model_dir = bert_model_files_dir(files);
    *out = NULL;
    tok_pipeline *p = calloc(1, sizeof *p);
    if (!p) return -1;
    p->model_unk = -1;
    if (tok_json_load_stages(p, files, tj, err) != 0 || build_added_sets(p) != 0) goto fail;
    if (p->vocab.count == 0) {
        *err = bert_errorf("%s: the tokenizer's vocabulary is empty; use the tokenizer files the model came with",
                           model_dir);
        goto fail;
    }
    if (!(p->special_id = calloc((size_t)p->vocab.count, 1))) goto fail;
    for (size_t i = 0; i < p->n_added; i++)
        if (p->added[i].special) {
            /* The library skips by text: every id whose token is the
             * special token's content. */
            const char *c = p->added[i].content;
            int32_t id = bert_vocab_find(&p->vocab, c, strlen(c));
            if (id >= 0) p->special_id[id] = 1;
            if (p->added[i].id >= 0 && p->added[i].id < p->vocab.count) p->special_id[p->added[i].id] = 1;
        }
    *out = p;
    return 0;
fail:
    tok_pipeline_free(p);
    return -1;
}

void tok_pipeline_free(tok_pipeline *p)
{
    if (!p) return;
    bert_vocab_free(&p->vocab);
    for (size_t i = 0; i < p->n_norm; i++) {
        free(p->norm[i].pattern);
        free(p->norm[i].content);
        tok_precompiled_free(p->norm[i].pc);
    }
    free(p->norm);
    free(p->pre);
    for (size_t i = 0; i < p->n_dec; i++) {
        free(p->dec[i].from);
        free(p->dec[i].to);
    }
    free(p->dec);
    tok_bpe_free(p->bpe);
    tok_unigram_free(p->unigram);
    for (size_t i = 0; i < p->n_added; i++) {
        free(p->added[i].content);
        free(p->added[i].match);
    }
    free(p->added);
    free(p->raw.tokens);
    free(p->normalized.tokens);
    free(p->special_id);
    free(p);
}

char *tok_pipeline_decode(const tok_pipeline *p, const int32_t *ids, size_t n, int skip_special)
{
    const char **tokens = malloc((n ? n : 1) * sizeof *tokens);
    if (!tokens) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *t = bert_vocab_token(&p->vocab, ids[i]);
        if (!t || (skip_special && p->special_id[ids[i]])) continue;
        tokens[k++] = t;
    }
    char *text = tok_decode(p->dec, p->has_decoder ? p->n_dec : 0, tokens, k);
    free(tokens);
    if (text && p->cleanup_spaces) tok_clean_up_spaces(text, strlen(text));
    return text;
}

char *tok_pipeline_tokens_to_string(const tok_pipeline *p, const char *const *tokens, size_t n)
{
    return tok_decode(p->dec, p->has_decoder ? p->n_dec : 0, tokens, n);
}

int tok_pipeline_has_subword_prefix(const tok_pipeline *p) { return p->bpe && tok_bpe_has_prefix(p->bpe); }

size_t tok_pipeline_vocab_size(const tok_pipeline *p) { return (size_t)p->vocab.count; }

const char *tok_pipeline_token(const tok_pipeline *p, int32_t id) { return bert_vocab_token(&p->vocab, id); }

int32_t tok_pipeline_find(const tok_pipeline *p, const char *token, size_t len)
{
    return bert_vocab_find(&p->vocab, token, len);
}

const bert_special_ids *tok_pipeline_specials(const tok_pipeline *p) { return &p->specials; }

int tok_pipeline_is_special(const tok_pipeline *p, int32_t id)
{
    return id >= 0 && id < p->vocab.count && p->special_id[id];
}
