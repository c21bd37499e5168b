/*
 * test_chunks.c - bert_chunks keeps every character and cuts only where the
 * text of each chunk, tokenized alone, gives the chunk's pieces.  The
 * invariants are checked on every chunk of a large generated corpus (all
 * scripts, emoji with modifiers and ZWJ sequences, NFD, zero-width
 * characters, over-long words), against grapheme clusters computed here
 * from utf8proc and the pieces of each chunk's text encoded again; the
 * defects that were seen each have a case of their own.
 */
#include "test.h"
#include "../ext/tasks/chunks.h"
#include "../ext/tokenizer/tokenizer.h"
#include "../ext/base/unicode_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <utf8proc.h>

#define FIXTURE "tests/fixtures/bert-base-uncased"
#define PLAIN "build/models/bert-plain-f32"

/* The fixture's vocabulary (bert-base-uncased's) with `config` as its
 * tokenizer_config.json, from a directory written to /tmp. */
static bert_tokenizer *load_tokenizer(const char *config)
{
    char dir[64], path[128];
    snprintf(dir, sizeof dir, "/tmp/bert-chunks-test-XXXXXX");
    if (!T_CHECK(mkdtemp(dir) != NULL, "cannot make a directory in /tmp")) return NULL;
    size_t len = 0;
    char *vocab = t_read_file(FIXTURE "/vocab.txt", &len);
    int ok = vocab != NULL;
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    FILE *f = ok ? fopen(path, "wb") : NULL;
    ok = f && fwrite(vocab, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = 0;
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    f = ok ? fopen(path, "wb") : NULL;
    ok = f && fputs(config, f) >= 0;
    if (f && fclose(f) != 0) ok = 0;
    free(vocab);
    bert_tokenizer *tok = NULL;
    char *err = NULL;
    if (T_CHECK(ok, "cannot write a tokenizer to %s", dir) && bert_tokenizer_load(t_dir(dir), &tok, &err) != 0) {
        T_CHECK(0, "cannot load the tokenizer: %s", err ? err : "?");
        free(err);
    }
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    unlink(path);
    rmdir(dir);
    return tok;
}

static size_t pieces_of(const bert_tokenizer *tok, const char *text, size_t len)
{
    bert_ids ids = {0};
    size_t n = bert_tokenizer_encode(tok, text, len, SIZE_MAX, &ids, NULL) == 0 ? ids.len : (size_t)-1;
    bert_ids_free(&ids);
    return n;
}

/* A text's chunks as bert_chunks cuts them: the tokenizer's spans before
 * (raw) and after fitting, and each chunk's pieces. */
typedef struct {
    bert_spans raw, fit;
    size_t n;            /* chunks */
    size_t *first, *end; /* each chunk's pieces */
} chunking;

static void chunking_free(chunking *c)
{
    bert_spans_free(&c->raw);
    bert_spans_free(&c->fit);
    free(c->first);
    free(c->end);
    memset(c, 0, sizeof *c);
}

static int cut(const bert_tokenizer *tok, const char *text, size_t len, size_t max_tokens, size_t overlap,
               chunking *c)
{
    memset(c, 0, sizeof *c);
    bert_ids ids = {0};
    int rc = bert_tokenizer_encode_spans(tok, text, len, SIZE_MAX, &ids, &c->raw, NULL);
    bert_ids_free(&ids);
    if (rc != 0) return -1;
    c->fit.at = malloc((c->raw.len + 1) * sizeof *c->fit.at);
    if (!c->fit.at) return -1;
    if (c->raw.len) memcpy(c->fit.at, c->raw.at, c->raw.len * sizeof *c->fit.at);
    c->fit.len = c->fit.cap = c->raw.len;
    if (bert_chunks_fit(text, len, c->fit.at, c->fit.len) != 0) return -1;
    bert_chunker ch;
    bert_chunker_init(&ch, c->fit.at, c->fit.len, max_tokens, overlap);
    size_t cap = 0, first, end;
    while (bert_chunker_next(&ch, &first, &end)) {
        if (c->n == cap) {
            cap = cap ? 2 * cap : 16;
            size_t *f = realloc(c->first, cap * sizeof *f);
            if (f) c->first = f;
            size_t *e = realloc(c->end, cap * sizeof *e);
            if (e) c->end = e;
            if (!f || !e) return -1;
        }
        c->first[c->n] = first;
        c->end[c->n++] = end;
    }
    return 0;
}

/* The bytes of chunk k. */
static void chunk_bytes(const chunking *c, size_t k, size_t *from, size_t *to)
{
    *from = (size_t)c->fit.at[c->first[k]].byte_start;
    *to = (size_t)c->fit.at[c->end[k] - 1].byte_end;
}

/* ---- the invariants ----------------------------------------------------------- */

/* What the checks know of a (valid UTF-8) text, computed here from utf8proc
 * and the tokenizer's own spans, not from bert_chunks_fit. */
typedef struct {
    size_t len;
    unsigned char *cluster;   /* cluster[b]: a grapheme cluster begins at byte b (and at len) */
    unsigned char *solid;     /* solid[b]: byte b is in a character that is not white space */
    int64_t *chars;           /* chars[b]: characters before byte b, at character starts */
    size_t *word;             /* per raw piece: its word, words joined where a cluster spans their gap */
    size_t *word_pieces;      /* per word: its pieces */
    size_t *unit;             /* per raw piece: its unit (pieces that share a character or cluster) */
    size_t *unit_pieces;
    size_t longest_word, longest_unit;
} text_facts;

static void facts_free(text_facts *t)
{
    free(t->cluster);
    free(t->solid);
    free(t->chars);
    free(t->word);
    free(t->word_pieces);
    free(t->unit);
    free(t->unit_pieces);
}

/* A cluster begins somewhere in bytes [from, to]. */
static int cluster_between(const text_facts *t, int64_t from, int64_t to)
{
    for (int64_t b = from; b <= to; b++)
        if (t->cluster[b]) return 1;
    return 0;
}

static int facts_of(const char *text, size_t len, const bert_spans *raw, text_facts *t)
{
    memset(t, 0, sizeof *t);
    t->len = len;
    size_t n = raw->len;
    t->cluster = calloc(len + 1, 1);
    t->solid = calloc(len + 1, 1);
    t->chars = calloc(len + 1, sizeof *t->chars);
    t->word = calloc(n + 1, sizeof *t->word);
    t->word_pieces = calloc(n + 1, sizeof *t->word_pieces);
    t->unit = calloc(n + 1, sizeof *t->unit);
    t->unit_pieces = calloc(n + 1, sizeof *t->unit_pieces);
    if (!t->cluster || !t->solid || !t->chars || !t->word || !t->word_pieces || !t->unit || !t->unit_pieces) return -1;
    utf8proc_int32_t prev = 0, state = 0, cp;
    int64_t chars = 0;
    for (size_t b = 0; b < len; chars++) {
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)text + b, (utf8proc_ssize_t)(len - b), &cp);
        if (k <= 0) return -1;   /* the generated texts are valid UTF-8 */
        t->cluster[b] = b == 0 || utf8proc_grapheme_break_stateful(prev, cp, &state);
        t->chars[b] = chars;
        memset(t->solid + b, !bert_utext_is_whitespace(cp), (size_t)k);
        prev = cp;
        b += (size_t)k;
    }
    t->cluster[len] = 1;
    t->chars[len] = chars;
    for (size_t i = 0; i < n; i++) {
        int apart = i == 0 || (raw->at[i].byte_start >= raw->at[i - 1].byte_end &&
                               cluster_between(t, raw->at[i - 1].byte_end, raw->at[i].byte_start));
        t->unit[i] = i == 0 ? 0 : t->unit[i - 1] + apart;
        t->word[i] = i == 0 ? 0 : t->word[i - 1] + (apart && raw->at[i].word != raw->at[i - 1].word);
        t->unit_pieces[t->unit[i]]++;
        t->word_pieces[t->word[i]]++;
        if (t->unit_pieces[t->unit[i]] > t->longest_unit) t->longest_unit = t->unit_pieces[t->unit[i]];
        if (t->word_pieces[t->word[i]] > t->longest_word) t->longest_word = t->word_pieces[t->word[i]];
    }
    return 0;
}

/* Counts of what the checks saw, so that a run shows it exercised them. */
typedef struct {
    long chunks, texts, cut_inside, overlapped, over_long, failures;
} tally;

static void fail(tally *y, const char *text, size_t m, size_t o, const char *what, size_t k)
{
    if (y->failures++ < 5) T_CHECK(0, "max_tokens %zu, overlap %zu, \"%.80s\": chunk %zu: %s", m, o, text, k, what);
}

/* Every invariant on every chunk of `text` cut with (m, o). */
static void check_text(const bert_tokenizer *tok, const char *text, size_t len, size_t m, size_t o, tally *y)
{
    chunking c;
    text_facts t = {0};
    if (cut(tok, text, len, m, o, &c) != 0 || facts_of(text, len, &c.raw, &t) != 0) {
        fail(y, text, m, o, "out of memory", 0);
        facts_free(&t);
        chunking_free(&c);
        return;
    }
    y->texts++;
    unsigned char *covered = calloc(len + 1, 1);
    for (size_t k = 0; covered && k < c.n; k++) {
        size_t s = c.first[k], e = c.end[k], from, to;
        chunk_bytes(&c, k, &from, &to);
        y->chunks++;
        if (from > to || to > len) { fail(y, text, m, o, "bytes out of order", k); continue; }
        memset(covered + from, 1, to - from);
        if (!t.cluster[from] || !t.cluster[to]) fail(y, text, m, o, "ends inside a grapheme cluster", k);
        if (c.fit.at[s].start != t.chars[from] || c.fit.at[e - 1].end != t.chars[to])
            fail(y, text, m, o, "character offsets are not those of its bytes", k);
        if (k > 0 && s <= c.first[k - 1]) fail(y, text, m, o, "does not start after the previous chunk", k);
        if (k > 0 && s > c.end[k - 1]) fail(y, text, m, o, "leaves pieces out", k);
        /* Inside a word only when the word alone is longer than max_tokens. */
        int starts_inside = s > 0 && t.word[s] == t.word[s - 1];
        int ends_inside = e < c.raw.len && t.word[e] == t.word[e - 1];
        if ((starts_inside && t.word_pieces[t.word[s]] <= m) || (ends_inside && t.word_pieces[t.word[e - 1]] <= m))
            fail(y, text, m, o, "cut inside a word that fits in max_tokens", k);
        if ((s > 0 && t.unit[s] == t.unit[s - 1]) || (e < c.raw.len && t.unit[e] == t.unit[e - 1]))
            fail(y, text, m, o, "cut between pieces of one character or cluster", k);
        y->cut_inside += ends_inside;
        /* More than max_tokens only for one character that gives more. */
        if (e - s > m && !(t.unit[s] == t.unit[e - 1])) fail(y, text, m, o, "more than max_tokens pieces", k);
        y->over_long += e - s > m;
        /* tokens (e - s) is the pieces of the chunk's text tokenized alone;
         * a chunk that begins inside an over-long word is read from there
         * as a word of its own, as the README says. */
        if (!starts_inside && pieces_of(tok, text + from, to - from) != e - s)
            fail(y, text, m, o, "tokens differs from the pieces of its text tokenized alone", k);
        /* The overlap, to within the longest word (or unit, inside a word). */
        if (k > 0) {
            size_t ps = c.first[k - 1], pe = c.end[k - 1], shared = s < pe ? pe - s : 0;
            int inside = pe < c.raw.len && t.word[pe] == t.word[pe - 1];
            const size_t *group = inside ? t.unit : t.word, *group_pieces = inside ? t.unit_pieces : t.word_pieces;
            size_t longest = inside ? t.longest_unit : t.longest_word;
            long want = (long)o;
            if ((long)(pe - ps) - 1 < want) want = (long)(pe - ps) - 1;
            if ((long)m - (long)group_pieces[group[pe]] < want) want = (long)m - (long)group_pieces[group[pe]];
            want -= (long)longest - 1;
            if (shared > o || (long)shared < want) {
                char what[128];
                snprintf(what, sizeof what, "shares %zu pieces with the previous chunk; want %ld to %zu", shared,
                         want, o);
                fail(y, text, m, o, what, k);
            }
            y->overlapped += shared > 0;
        }
    }
    if (c.n > 0 && c.end[c.n - 1] != c.raw.len) fail(y, text, m, o, "the last chunk ends before the last piece", c.n);
    if (c.raw.len == 0 && c.n != 0) fail(y, text, m, o, "chunks of a text without pieces", 0);
    for (size_t b = 0; covered && c.raw.len > 0 && b < len; b++)
        if (t.solid[b] && !covered[b]) {
            fail(y, text, m, o, "a character that is not white space is in no chunk", (size_t)t.chars[b]);
            break;
        }
    if (!covered) fail(y, text, m, o, "out of memory", 0);
    free(covered);
    facts_free(&t);
    chunking_free(&c);
}

/* ---- the generated corpus ----------------------------------------------------- */

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Words and pieces of words from many scripts, written as they come from
 * real text: NFC and NFD, marks stacked, emoji with skin tones and ZWJ
 * sequences, flags, zero-width characters inside and between words. */
static const char *const parts[] = {
    "the", "cat", "sat", "on", "a", "mat", "unbelievable", "tokenization", "antidisestablishmentarianism",
    "Hello", ",", ".", "!", "?", "...", "(", ")", "\"", "'", "-", ":-)", "[MASK]", "[SEP]", "42", "3.14",
    "caf\xc3\xa9", "cafe\xcc\x81", "nai\xcc\x88ve", "Zwo\xcc\x88lf", "a\xcc\x81\xcc\x82\xcc\xa3", "e\xcc\x81\xcc\x81\xcc\x81",
    "\xcc\x81", "\xcc\xa3\xcc\x81", "o\xcc\x88\xcc\x84", "\xe1\xb8\x89", "c\xcc\xa7\xcc\x81",
    "\xe0\xa4\xb9\xe0\xa4\xbf\xe0\xa4\x82\xe0\xa4\xa6\xe0\xa5\x80",          /* हिंदी */
    "\xe0\xa4\xa8\xe0\xa4\xb9\xe0\xa5\x80\xe0\xa4\x82",                      /* नहीं: ends in a nonspacing mark */
    "\xe0\xa4\x95\xe0\xa5\x8d\xe0\xa4\xb7",                                  /* क्ष */
    "\xe0\xa4\xb8\xe0\xa5\x8d\xe0\xa4\xa4\xe0\xa5\x8d\xe0\xa4\xb0\xe0\xa5\x80", /* स्त्री */
    "\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4", "\xeb\xb0\xb0\xec\x9a\xb0\xeb\x8b\xa4",   /* 한국어 배우다 */
    "\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab",                                  /* 한 as conjoining jamo */
    "\xe4\xb8\xad\xe6\x96\x87\xe5\xad\x97", "\xe9\x87\x8e\xe5\x8f\xa3", "\xe3\x81\xb2\xe3\x82\x89\xe3\x81\x8c\xe3\x81\xaa",
    "\xd8\xa7\xd9\x84\xd8\xb9\xd8\xb1\xd8\xa8\xd9\x90\xd9\x8a\xd9\x8e\xd8\xa9",    /* العربِيَة */
    "\xd7\xa9\xd7\x81\xd6\xb8\xd7\x9c\xd7\x95\xd6\xb9\xd7\x9d",                     /* שָׁלוֹם */
    "\xe0\xb8\xaa\xe0\xb8\xa7\xe0\xb8\xb1\xe0\xb8\xaa\xe0\xb8\x94\xe0\xb8\xb5",     /* สวัสดี */
    "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82", "\xce\x95\xce\xbb\xce\xbb\xce\xac\xce\xb4\xce\xb1",
    "\xf0\x9f\x91\x8d", "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd",                                   /* 👍 👍🏽 */
    "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7\xe2\x80\x8d\xf0\x9f\x91\xa6", /* family */
    "\xf0\x9f\x91\xa9\xf0\x9f\x8f\xbf\xe2\x80\x8d\xf0\x9f\x92\xbb",                            /* 👩🏿‍💻 */
    "\xf0\x9f\x87\xab\xf0\x9f\x87\xb7", "\xf0\x9f\x87\xaf\xf0\x9f\x87\xb5\xf0\x9f\x87\xa9",    /* 🇫🇷, 🇯🇵 and a lone 🇩 */
    "\xe2\x9d\xa4\xef\xb8\x8f", "1\xef\xb8\x8f\xe2\x83\xa3",                                    /* ❤️ 1️⃣ */
    "\xe2\x80\x8b", "\xe2\x80\x8c", "\xe2\x80\x8d", "\xe2\x81\xa0", "\xef\xbb\xbf", "\xc2\xad", /* zero-width, soft hyphen */
    "\x01", "\x7f", "\xef\xbf\xbd",
};

/* What goes between parts: nothing (one word), spaces of several kinds. */
static const char *const gaps[] = {"", "", " ", " ", " ", "  ", "\t", "\n", "\xc2\xa0", "\xe3\x80\x80", " \xe2\x80\x8b "};

/* A text of 1 to 40 parts into buf (cap bytes); its length. */
static size_t random_text(uint64_t *rng, char *buf, size_t cap)
{
    size_t len = 0, parts_n = 1 + next_random(rng) % 40;
    for (size_t p = 0; p < parts_n; p++) {
        const char *gap = p == 0 && next_random(rng) % 4 ? "" : gaps[next_random(rng) % (sizeof gaps / sizeof *gaps)];
        const char *part = parts[next_random(rng) % (sizeof parts / sizeof *parts)];
        size_t repeat = next_random(rng) % 8 == 0 ? 2 + next_random(rng) % 6 : 1;   /* long words */
        if (len + strlen(gap) + repeat * strlen(part) + 1 > cap) break;
        memcpy(buf + len, gap, strlen(gap));
        len += strlen(gap);
        for (size_t r = 0; r < repeat; r++) {
            memcpy(buf + len, part, strlen(part));
            len += strlen(part);
        }
    }
    buf[len] = '\0';
    return len;
}

static void generated_corpus(void)
{
    t_case("chunks: on every chunk of 4000 generated texts in two tokenizers and 13 sizes: no character lost, "
           "no cluster or fitting word cut, tokens = pieces of its text, the overlap kept to within a word");
    static const size_t sizes[][2] = {{1, 0}, {2, 1}, {3, 0}, {3, 2}, {4, 1}, {5, 0}, {5, 2}, {5, 4},
                                      {6, 5}, {8, 3}, {12, 11}, {16, 4}, {32, 8}};
    const char *configs[] = {"{\"do_lower_case\": true}", "{\"do_lower_case\": false, \"strip_accents\": false}"};
    tally y = {0};
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    char buf[1024];
    for (size_t k = 0; k < sizeof configs / sizeof *configs; k++) {
        bert_tokenizer *tok = load_tokenizer(configs[k]);
        if (!tok) return;
        for (int i = 0; i < 2000; i++) {
            size_t len = random_text(&rng, buf, sizeof buf);
            for (int j = 0; j < 3; j++) {
                const size_t *size = sizes[next_random(&rng) % (sizeof sizes / sizeof *sizes)];
                check_text(tok, buf, len, size[0], size[1], &y);
            }
        }
        bert_tokenizer_free(tok);
    }
    T_CHECK(y.failures == 0, "%ld chunks break an invariant", y.failures);
    /* The corpus exercises what the checks claim. */
    T_CHECK(y.texts == 12000 && y.chunks > 100000 && y.cut_inside > 5000 && y.overlapped > 10000 && y.over_long > 10,
            "%ld texts, %ld chunks, %ld cut inside a word, %ld overlapping, %ld over max_tokens", y.texts, y.chunks,
            y.cut_inside, y.overlapped, y.over_long);
}

/* ---- the defects seen --------------------------------------------------------- */

/* The text of chunk k (malloc'd; empty when there is none); *count: the
 * chunks. */
static char *chunk_text(const bert_tokenizer *tok, const char *text, size_t m, size_t o, size_t k, size_t *count)
{
    chunking c;
    char *s = NULL;
    *count = 0;
    if (cut(tok, text, strlen(text), m, o, &c) == 0 && k < c.n) {
        size_t from, to;
        chunk_bytes(&c, k, &from, &to);
        s = strndup(text + from, to - from);
        *count = c.n;
    }
    chunking_free(&c);
    return s ? s : strdup("");
}

static void ends_in_a_mark(void)
{
    t_case("chunks: a text that ends in a combining mark (NFD caf\xc3\xa9) keeps it in its last chunk");
    bert_tokenizer *tok = load_tokenizer("{\"do_lower_case\": true}");
    if (!tok) return;
    size_t n;
    char *last = chunk_text(tok, "un cafe\xcc\x81", 16, 0, 0, &n);
    T_CHECK(n == 1 && strcmp(last, "un cafe\xcc\x81") == 0, "%zu chunks, the first \"%s\"", n, last);
    free(last);
    last = chunk_text(tok, "un cafe\xcc\x81\xcc\xa3  ", 1, 0, 1, &n);
    T_CHECK(n == 2 && strcmp(last, "cafe\xcc\x81\xcc\xa3") == 0, "%zu chunks, the second \"%s\"", n, last);
    free(last);
    bert_tokenizer_free(tok);
}

static void words_with_marks(void)
{
    t_case("chunks: words with combining marks (NFD accents, Devanagari signs, stacked marks) are not cut "
           "when they fit");
    bert_tokenizer *tok = load_tokenizer("{\"do_lower_case\": true}");
    if (!tok) return;
    static const char *const words[] = {
        "cafe\xcc\x81", "nai\xcc\x88ve", "a\xcc\x81\xcc\x82\xcc\xa3", "\xe0\xa4\xa8\xe0\xa4\xb9\xe0\xa5\x80\xe0\xa4\x82",
        "\xe0\xa4\xb9\xe0\xa4\xbf\xe0\xa4\x82\xe0\xa4\xa6\xe0\xa5\x80", "Zwo\xcc\x88lf\xcc\x81",
    };
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        char text[96];
        snprintf(text, sizeof text, "%s next words", words[i]);
        size_t m = pieces_of(tok, words[i], strlen(words[i])), n;
        char *first = chunk_text(tok, text, m, 0, 0, &n);
        T_CHECK(strcmp(first, words[i]) == 0, "\"%s\" in %zu pieces: the first chunk is \"%s\"", words[i], m, first);
        free(first);
    }
    bert_tokenizer_free(tok);
}

static void hangul_jamo(void)
{
    t_case("chunks: a Hangul syllable read as several jamo pieces is never split between chunks");
    bert_tokenizer *tok = load_tokenizer("{\"do_lower_case\": true}");
    if (!tok) return;
    /* 한국어를 배우다: syllables of 3 bytes, each read as 2 or 3 jamo pieces
     * that share its offsets. */
    const char *text = "\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4\xeb\xa5\xbc \xeb\xb0\xb0\xec\x9a\xb0\xeb\x8b\xa4";
    int split = 0, miscounted = 0, checked = 0;
    for (size_t m = 1; m <= 6; m++) {
        chunking c;
        if (!T_CHECK(cut(tok, text, strlen(text), m, 0, &c) == 0, "out of memory")) break;
        for (size_t k = 0; k < c.n; k++) {
            size_t from, to;
            chunk_bytes(&c, k, &from, &to);
            checked++;
            split += (from > 12 ? from - 13 : from) % 3 != 0 || (to > 12 ? to - 13 : to) % 3 != 0;
            /* A chunk that begins a word gives its pieces alone. */
            size_t s = c.first[k];
            if ((s == 0 || c.raw.at[s].word != c.raw.at[s - 1].word) &&
                pieces_of(tok, text + from, to - from) != c.end[k] - s)
                miscounted++;
        }
        chunking_free(&c);
    }
    T_CHECK(split == 0 && miscounted == 0 && checked > 20, "of %d chunks %d split a syllable, %d have tokens "
            "other than the pieces of their text", checked, split, miscounted);
    bert_tokenizer_free(tok);
}

static void large_overlap(void)
{
    t_case("chunks: with max_tokens 5 and overlap 4 consecutive chunks share pieces when whole words allow it");
    bert_tokenizer *tok = load_tokenizer("{\"do_lower_case\": true}");
    if (!tok) return;
    const char *text = "a b c d e unaffable f g h i j unaffable k";
    T_CHECK(pieces_of(tok, "unaffable", 9) == 3, "unaffable is %zu pieces", pieces_of(tok, "unaffable", 9));
    chunking c;
    if (T_CHECK(cut(tok, text, strlen(text), 5, 4, &c) == 0 && c.n > 2, "%zu chunks", c.n))
        for (size_t k = 1; k < c.n; k++)
            T_CHECK(c.first[k] < c.end[k - 1], "chunks %zu [%zu, %zu) and %zu [%zu, %zu) share no piece", k - 1,
                    c.first[k - 1], c.end[k - 1], k, c.first[k], c.end[k]);
    chunking_free(&c);
    bert_tokenizer_free(tok);
}

/* Through SQL: the last character of an NFD text is in the last chunk. */
static void ends_in_a_mark_sql(void)
{
    t_case("bert_chunks: the last chunk of an NFD text ends at its last character");
    if (!t_exists(PLAIN "/config.json")) { t_skip("test models not built (make build/models/.done)"); return; }
    sqlite3 *db = t_open();
    t_expect(db, "SELECT bert_load('plain', '" PLAIN "')", NULL, "plain");
    t_expect(db, "SELECT group_concat(text, '|') || ' ' || max(\"end\") || ' ' || length(?1) "
                 "FROM bert_chunks(?1, 2, 0, 'plain')",
             "un cafe\xcc\x81 de\xcc\x81ja\xcc\x80", "un cafe\xcc\x81|de\xcc\x81ja\xcc\x80 15 15");
    sqlite3_close(db);
}

/* Through SQL on ill-formed UTF-8: every chunk is substr of the input at its
 * offsets, as SQLite counts characters, and the chunks cover the text. */
static void ill_formed_sql(void)
{
    t_case("bert_chunks: on ill-formed UTF-8 each text is substr(input, start + 1, end - start)");
    if (!t_exists(PLAIN "/config.json")) { t_skip("test models not built (make build/models/.done)"); return; }
    sqlite3 *db = t_open();
    t_expect(db, "SELECT bert_load('plain', '" PLAIN "')", NULL, "plain");
    static const char *const texts[] = {
        "ab\xc3\x80\x80\x80" "cd e\xcc\x81\xff f", "\x80\x80 word\xe2\x82 x\xf0\x9f\x91 y\xcc\x81\xcc",
        "caf\xc3 \xc3\xa9\xcc\x81\x80\x80 unbelievable\xed\xa0\x80ly \xe2\x80\x8d\xe2\x80",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
        t_expect(db, "SELECT count(*) >= 2 AND sum(text IS NOT substr(?1, start + 1, \"end\" - start)) = 0 "
                     "AND min(start) = 0 AND max(\"end\") = length(?1) FROM bert_chunks(?1, 2, 1, 'plain')",
                 texts[i], "1");
    sqlite3_close(db);
}

void suite_chunks(void)
{
    ends_in_a_mark();
    words_with_marks();
    hangul_jamo();
    large_overlap();
    ends_in_a_mark_sql();
    ill_formed_sql();
    generated_corpus();
}
