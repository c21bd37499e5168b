/*
 * test_tokenizer.c - the WordPiece tokenizer against Hugging Face's Rust
 * tokenizer.  Every expected value comes from the .jsonl files of tests/tokenizer and
 * unicode_ref.txt, written by the scripts next to them from the npm package
 * `tokenizers`; nothing here is typed in by hand except the character facts
 * transformers' own unit tests state.
 */
#include "test.h"
#include "golden_files.h"
#include "../ext/base/json.h"
#include "../ext/tokenizer/tok_internal.h"
#include "../ext/tokenizer/tokenizer.h"
#include "../ext/base/unicode_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIXTURE "tests/fixtures/bert-base-uncased"
#define GOLDEN "tests/tokenizer"

/* ---- helpers --------------------------------------------------------------- */

/* The ids of a JSON array node into v; returns 0, or -1 when malformed. */
static int json_ids(const json_doc *d, int node, bert_ids *v)
{
    v->len = 0;
    if (node < 0 || d->nodes[node].type != JSON_ARRAY) return -1;
    for (int c = d->nodes[node].first_child; c >= 0; c = d->nodes[c].next_sibling)
        if (bert_ids_push(v, (int32_t)bert_json_int(d, c, -1)) != 0) return -1;
    return 0;
}

static int same_ids(const bert_ids *a, const bert_ids *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->ids, b->ids, a->len * sizeof *a->ids) == 0);
}

static void format_ids(const bert_ids *v, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < v->len && n + 16 < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%d", i ? "," : "", (int)v->ids[i]);
    if (n + 16 >= size) snprintf(buf + n, size - n, "...");
}

static int write_file(const char *dir, const char *name, const char *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t put = fwrite(data, 1, len, f);
    return fclose(f) == 0 && put == len ? 0 : -1;
}

static void remove_dir(const char *dir)
{
    static const char *const files[] = {"vocab.txt", "tokenizer_config.json", "tokenizer.json", "special_tokens_map.json"};
    char path[512];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* A fresh model directory under build/test_tokenizer with the given files
 * (NULL: not written; vocab NULL: the fixture's).  Returns 0 and fills dir. */
static int make_dir(char dir[64], const char *vocab, const char *config, const char *tokenizer_json)
{
    mkdir("build", 0755);
    mkdir("build/test_tokenizer", 0755);
    snprintf(dir, 64, "build/test_tokenizer/XXXXXX");
    if (!mkdtemp(dir)) return -1;
    size_t len = 0;
    char *fixture = vocab ? NULL : t_read_file(FIXTURE "/vocab.txt", &len);
    int rc = 0;
    if (!vocab && !fixture) rc = -1;
    else rc = write_file(dir, "vocab.txt", vocab ? vocab : fixture, vocab ? strlen(vocab) : len);
    free(fixture);
    if (rc == 0 && config) rc = write_file(dir, "tokenizer_config.json", config, strlen(config));
    if (rc == 0 && tokenizer_json) rc = write_file(dir, "tokenizer.json", tokenizer_json, strlen(tokenizer_json));
    if (rc != 0) remove_dir(dir);
    return rc;
}

static bert_tokenizer *load_dir(const char *dir)
{
    bert_tokenizer *tok = NULL;
    char *err = NULL;
    if (bert_tokenizer_load(t_dir(dir), &tok, &err) != 0) {
        T_CHECK(0, "cannot load the tokenizer in %s: %s", dir, err ? err : "?");
        free(err);
        return NULL;
    }
    return tok;
}

/* [CLS] text [SEP], as the reference's post-processor gives it. */
static int encode_with_specials(const bert_tokenizer *tok, const char *text, size_t len, bert_ids *out)
{
    out->len = 0;
    const bert_special_ids *sp = bert_tokenizer_specials(tok);
    return bert_ids_push(out, sp->cls) || bert_tokenizer_encode(tok, text, len, SIZE_MAX, out, NULL) || bert_ids_push(out, sp->sep) ? -1 : 0;
}

/* ---- the corpus ------------------------------------------------------------ */

static json_doc *corpus;

/* Checks every corpus line's ids from `tok` against golden rows g[1..]. */
static void compare_corpus(const bert_tokenizer *tok, const json_doc *g, const char *label, const char *path)
{
    bert_ids got = {0}, want = {0};
    int mismatches = 0, line = 1;
    for (int t = corpus->nodes[0].first_child, r = t_json_child(g, 0, 1); t >= 0 && r >= 0;
         t = corpus->nodes[t].next_sibling, r = g->nodes[r].next_sibling, line++) {
        const char *text = bert_json_str(corpus, t, "");
        if (encode_with_specials(tok, text, strlen(text), &got) != 0 || json_ids(g, r, &want) != 0) {
            T_CHECK(0, "line %d: out of memory or a malformed golden row", line);
            break;
        }
        if (!same_ids(&got, &want) && mismatches++ < 3) {
            char a[512], b[512];
            format_ids(&got, a, sizeof a);
            format_ids(&want, b, sizeof b);
            T_CHECK(0, "%s, corpus line %d \"%.120s\":\n      got  [%s]\n      want [%s]", label, line, text, a, b);
        }
    }
    T_CHECK(mismatches == 0, "%s: %d of %d corpus lines differ from %s", label, mismatches, line - 1, path);
    bert_ids_free(&got);
    bert_ids_free(&want);
}

static json_doc *read_golden(const char *name, char *path, size_t size)
{
    snprintf(path, size, GOLDEN "/golden_%s.jsonl", name);
    json_doc *g = t_read_jsonl(path);
    if (!T_CHECK(g && corpus, "cannot read %s or the corpus", path)) { bert_json_free(g); return NULL; }
    T_CHECK(bert_json_length(g, 0) - 1 == bert_json_length(corpus, 0), "%s has %d rows for %d corpus lines", path,
            bert_json_length(g, 0) - 1, bert_json_length(corpus, 0));
    return g;
}

/* Checks every corpus line against one golden file's ids, for every
 * tokenizer_config.json its header lists. */
static void check_golden(const char *name)
{
    char path[256];
    json_doc *g = read_golden(name, path, sizeof path);
    if (!g) return;
    int configs = bert_json_member(g, t_json_child(g, 0, 0), "configs");
    T_CHECK(bert_json_length(g, configs) >= 1, "%s: no configs in its header", path);
    for (int c = configs >= 0 ? g->nodes[configs].first_child : -1; c >= 0; c = g->nodes[c].next_sibling) {
        char config[256];
        int lower = bert_json_bool(g, bert_json_member(g, c, "do_lower_case"), 1);
        int strip = bert_json_bool(g, bert_json_member(g, c, "strip_accents"), -1);
        snprintf(config, sizeof config, "{\"do_lower_case\": %s, \"strip_accents\": %s}",
                 lower ? "true" : "false", strip < 0 ? "null" : strip ? "true" : "false");
        char dir[64];
        if (!T_CHECK(make_dir(dir, NULL, config, NULL) == 0, "cannot make a model directory")) continue;
        bert_tokenizer *tok = load_dir(dir);
        remove_dir(dir);
        if (!tok) continue;
        const bert_tokenizer_settings *s = bert_tokenizer_get_settings(tok);
        T_CHECK(s->lowercase == lower && s->strip_accents == strip, "%s: settings %d/%d read as %d/%d", config,
                lower, strip, s->lowercase, s->strip_accents);
        compare_corpus(tok, g, config, path);
        bert_tokenizer_free(tok);
    }
    bert_json_free(g);
}

/* bert-base-uncased's own tokenizer files (tokenizer.json included), when
 * REF_TOKENIZER_DIR names the directory that holds them. */
static void check_original_files(void)
{
    const char *dir = getenv("REF_TOKENIZER_DIR");
    if (!dir) { t_skip("REF_TOKENIZER_DIR does not name bert-base-uncased's tokenizer files"); return; }
    char tj[512];
    snprintf(tj, sizeof tj, "%s/tokenizer.json", dir);
    if (!t_exists(tj)) { t_skip("no original tokenizer.json; set REF_TOKENIZER_DIR"); return; }
    char path[256];
    json_doc *g = read_golden("uncased", path, sizeof path);
    bert_tokenizer *tok = g ? load_dir(dir) : NULL;
    if (tok) compare_corpus(tok, g, dir, path);
    bert_tokenizer_free(tok);
    bert_json_free(g);
}

/* ---- transformers' unit-test cases ----------------------------------------- */

static void check_hf_cases(void)
{
    json_doc *d = t_read_jsonl(GOLDEN "/hf_cases.jsonl");
    if (!T_CHECK(d != NULL, "cannot read " GOLDEN "/hf_cases.jsonl")) return;
    bert_ids got = {0}, want = {0};
    for (int c = d->nodes[0].first_child; c >= 0; c = d->nodes[c].next_sibling) {
        const char *name = bert_json_str(d, bert_json_member(d, c, "name"), "?");
        int vocab = bert_json_member(d, c, "vocab");
        int cfg = bert_json_member(d, c, "config");
        /* A small vocabulary is written out one token a line. */
        char *vocab_text = NULL;
        if (d->nodes[vocab].type == JSON_ARRAY) {
            size_t n = 0;
            for (int v = d->nodes[vocab].first_child; v >= 0; v = d->nodes[v].next_sibling)
                n += strlen(bert_json_str(d, v, "")) + 1;
            vocab_text = calloc(n + 1, 1);
            if (!vocab_text) break;
            for (int v = d->nodes[vocab].first_child; v >= 0; v = d->nodes[v].next_sibling) {
                strcat(vocab_text, bert_json_str(d, v, ""));
                strcat(vocab_text, "\n");
            }
        }
        char config[256];
        int strip = bert_json_bool(d, bert_json_member(d, cfg, "strip_accents"), -1);
        snprintf(config, sizeof config,
                 "{\"do_lower_case\": %s, \"strip_accents\": %s, \"tokenize_chinese_chars\": %s}",
                 bert_json_bool(d, bert_json_member(d, cfg, "do_lower_case"), 1) ? "true" : "false",
                 strip < 0 ? "null" : strip ? "true" : "false",
                 bert_json_bool(d, bert_json_member(d, cfg, "tokenize_chinese_chars"), 1) ? "true" : "false");
        char dir[64];
        int made = make_dir(dir, vocab_text, config, NULL);
        free(vocab_text);
        if (!T_CHECK(made == 0, "%s: cannot make a model directory", name)) continue;
        bert_tokenizer *tok = load_dir(dir);
        remove_dir(dir);
        if (!tok) continue;
        const char *text = bert_json_str(d, bert_json_member(d, c, "text"), "");
        got.len = 0;
        T_CHECK(bert_tokenizer_encode(tok, text, strlen(text), SIZE_MAX, &got, NULL) == 0, "%s: encode failed", name);
        json_ids(d, bert_json_member(d, c, "ids"), &want);
        char a[512], b[512];
        format_ids(&got, a, sizeof a);
        format_ids(&want, b, sizeof b);
        T_CHECK(same_ids(&got, &want), "%s \"%s\": got [%s], want [%s]", name, text, a, b);
        int toks = bert_json_member(d, c, "tokens");
        size_t i = 0;
        for (int k = d->nodes[toks].first_child; k >= 0 && i < got.len; k = d->nodes[k].next_sibling, i++) {
            const char *t = bert_tokenizer_token(tok, got.ids[i]);
            T_CHECK(t && strcmp(t, bert_json_str(d, k, "")) == 0, "%s: token %zu is \"%s\", want \"%s\"", name, i,
                    t ? t : "(null)", bert_json_str(d, k, ""));
        }
        bert_tokenizer_free(tok);
    }
    bert_ids_free(&got);
    bert_ids_free(&want);
    bert_json_free(d);
}

/* ---- Unicode, code point by code point ------------------------------------- */

#define NCP 0x110000

typedef struct {
    unsigned char *drop, *space, *split, *punct, *chinese, *mark, *reorder;
    int32_t (*strip)[4];   /* strip_accents output, up to 3 code points, 0-ended */
    int32_t (*lower)[3];
} unicode_ref;

static int parse_ref(unicode_ref *u, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        char kind[16];
        unsigned v[4] = {0};
        int n = sscanf(line, "%15s %x %x %x %x", kind, &v[0], &v[1], &v[2], &v[3]);
        if (n < 2 || kind[0] == '#' || v[0] >= NCP) continue;
        unsigned char *set = !strcmp(kind, "drop") ? u->drop : !strcmp(kind, "space") ? u->space
                           : !strcmp(kind, "split") ? u->split : !strcmp(kind, "punct") ? u->punct
                           : !strcmp(kind, "chinese") ? u->chinese : !strcmp(kind, "mark") ? u->mark
                           : !strcmp(kind, "reorder") ? u->reorder : NULL;
        if (set && n >= 3) {
            for (unsigned c = v[0]; c <= v[1] && c < NCP; c++) set[c] = 1;
        } else if (!strcmp(kind, "strip")) {
            for (int i = 1; i < n - 1; i++) u->strip[v[0]][i - 1] = (int32_t)v[i];
            u->strip[v[0]][3] = n - 2;
        } else if (!strcmp(kind, "lower")) {
            for (int i = 1; i < n - 1 && i <= 2; i++) u->lower[v[0]][i - 1] = (int32_t)v[i];
            u->lower[v[0]][2] = n - 2;
        }
    }
    fclose(f);
    return 0;
}

/* strip_accents on one code point: decompose, order the marks, drop Mn. */
static int strip_one(int32_t cp, int32_t out[UTEXT_MAX_DECOMPOSITION])
{
    int32_t d[UTEXT_MAX_DECOMPOSITION];
    int n = bert_utext_decompose(cp, d);
    for (int i = 1; i < n; i++) {
        int32_t c = d[i];
        int k = bert_utext_combining_class(c), j = i;
        if (k == 0) continue;
        for (; j > 0 && bert_utext_combining_class(d[j - 1]) > k; j--) d[j] = d[j - 1];
        d[j] = c;
    }
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!bert_utext_is_nonspacing_mark(d[i])) out[m++] = d[i];
    return m;
}

static void check_unicode(void)
{
    unicode_ref u;
    u.drop = calloc(NCP, 7);
    u.strip = calloc(NCP, sizeof *u.strip);
    u.lower = calloc(NCP, sizeof *u.lower);
    if (!T_CHECK(u.drop && u.strip && u.lower, "out of memory")) goto done;
    u.space = u.drop + NCP;
    u.split = u.space + NCP;
    u.punct = u.split + NCP;
    u.chinese = u.punct + NCP;
    u.mark = u.chinese + NCP;
    u.reorder = u.mark + NCP;
    if (!T_CHECK(parse_ref(&u, GOLDEN "/unicode_ref.txt") == 0, "cannot read " GOLDEN "/unicode_ref.txt")) goto done;
    int bad[8] = {0};
    for (int32_t c = 0; c < NCP; c++) {
        if (c >= 0xD800 && c <= 0xDFFF) continue;
        int drop = c == 0 || c == UTEXT_REPLACEMENT || bert_utext_is_control(c);
        int space = !drop && bert_utext_is_whitespace(c) && c != ' ';
        int split = bert_utext_is_whitespace(c);
        int punct = !split && bert_utext_is_punctuation(c);
        struct { const char *what; int got, want; } props[] = {
            {"dropped by clean_text", drop, u.drop[c]}, {"a space after clean_text", space, u.space[c]},
            {"whitespace", split, u.split[c]}, {"punctuation", punct, u.punct[c]},
            {"a Chinese character", bert_utext_is_chinese(c), u.chinese[c]},
        };
        for (int i = 0; i < 5; i++)
            if (props[i].got != props[i].want && bad[i]++ < 5)
                T_CHECK(0, "U+%04X: %s is %d here, %d in the reference", (unsigned)c, props[i].what, props[i].got, props[i].want);

        int32_t s[UTEXT_MAX_DECOMPOSITION];
        /* Canonical ordering: which characters that do not decompose count as marks. */
        if (bert_utext_decompose(c, s) == 1 && s[0] == c && (bert_utext_combining_class(c) != 0) != u.reorder[c] && bad[7]++ < 5)
            T_CHECK(0, "U+%04X: combining class %d here, %s in the reference", (unsigned)c, bert_utext_combining_class(c),
                    u.reorder[c] ? "not 0" : "0");
        int n = strip_one(c, s);
        int ok;
        if (c >= 0xAC00 && c <= 0xD7A3) ok = n >= 2;              /* Hangul: algorithmic, not listed */
        else if (u.mark[c]) ok = n == 0;
        else if (u.strip[c][3]) ok = n == u.strip[c][3] && !memcmp(s, u.strip[c], (size_t)n * sizeof *s);
        else ok = n == 1 && s[0] == c;
        if (!ok && bad[5]++ < 5) T_CHECK(0, "U+%04X: strip_accents gives %d code points (first U+%04X), not the reference's",
                                         (unsigned)c, n, n ? (unsigned)s[0] : 0u);

        int32_t l[2];
        int m = bert_utext_lowercase(c, l);
        if (u.lower[c][2]) ok = m == u.lower[c][2] && l[0] == u.lower[c][0] && (m < 2 || l[1] == u.lower[c][1]);
        else ok = m == 1 && l[0] == c;
        if (!ok && bad[6]++ < 5) T_CHECK(0, "U+%04X: lowercase gives U+%04X (%d code points), not the reference's",
                                         (unsigned)c, (unsigned)l[0], m);
    }
    T_CHECK(bad[0] + bad[1] + bad[2] + bad[3] + bad[4] + bad[5] + bad[6] + bad[7] == 0,
            "code points that differ from the reference (clean %d/%d, whitespace %d, punctuation %d, Chinese %d, "
            "strip %d, lowercase %d, combining class %d): regenerate ext/base/unicode_text.c's overrides with "
            "tests/tokenizer/gen_unicode_overrides.c", bad[0], bad[1], bad[2], bad[3], bad[4], bad[5], bad[6], bad[7]);
done:
    free(u.drop);
    free(u.strip);
    free(u.lower);
}

/* The character facts transformers' test_tokenization_bert.py states. */
static void check_character_facts(void)
{
    static const int32_t ws[] = {' ', '\t', '\r', '\n', 0xA0}, not_ws[] = {'A', '-'};
    static const int32_t punct[] = {'-', '$', '`', '.'}, not_punct[] = {'A', ' '};
    static const int32_t not_control[] = {'A', ' ', '\t', '\r'};
    for (size_t i = 0; i < sizeof ws / sizeof *ws; i++) T_CHECK(bert_utext_is_whitespace(ws[i]), "U+%04X is whitespace", (unsigned)ws[i]);
    for (size_t i = 0; i < sizeof not_ws / sizeof *not_ws; i++) T_CHECK(!bert_utext_is_whitespace(not_ws[i]), "'%c' is not whitespace", (char)not_ws[i]);
    T_CHECK(bert_utext_is_control(0x05), "U+0005 is a control character");
    for (size_t i = 0; i < sizeof not_control / sizeof *not_control; i++)
        T_CHECK(!bert_utext_is_control(not_control[i]), "U+%04X is not a control character", (unsigned)not_control[i]);
    for (size_t i = 0; i < sizeof punct / sizeof *punct; i++) T_CHECK(bert_utext_is_punctuation(punct[i]), "'%c' is punctuation", (char)punct[i]);
    for (size_t i = 0; i < sizeof not_punct / sizeof *not_punct; i++)
        T_CHECK(!bert_utext_is_punctuation(not_punct[i]), "'%c' is not punctuation", (char)not_punct[i]);
}

/* ---- decoding ---------------------------------------------------------------- */

static void check_decode(const bert_tokenizer *tok)
{
    json_doc *d = t_read_jsonl(GOLDEN "/decode.jsonl");
    if (!T_CHECK(d != NULL, "cannot read " GOLDEN "/decode.jsonl")) return;
    bert_ids ids = {0};
    int bad = 0, n = 0;
    for (int c = d->nodes[0].first_child; c >= 0; c = d->nodes[c].next_sibling, n++) {
        json_ids(d, bert_json_member(d, c, "ids"), &ids);
        int skip = bert_json_bool(d, bert_json_member(d, c, "skip"), 0);
        const char *want = bert_json_str(d, bert_json_member(d, c, "text"), "");
        char *got = bert_tokenizer_decode(tok, ids.ids, ids.len, skip);
        if (!T_CHECK(got != NULL, "decode returned NULL")) break;
        if (strcmp(got, want) != 0 && bad++ < 5) {
            char a[512];
            format_ids(&ids, a, sizeof a);
            T_CHECK(0, "decode([%s], skip=%d) = \"%s\", want \"%s\"", a, skip, got, want);
        }
        free(got);
    }
    T_CHECK(bad == 0 && n > 100, "%d of %d decode cases differ", bad, n);
    bert_ids_free(&ids);
    bert_json_free(d);
}

/* ---- ill-formed UTF-8 ------------------------------------------------------ */

static void check_bytes(const bert_tokenizer *tok)
{
    json_doc *d = t_read_jsonl(GOLDEN "/bytes.jsonl");
    if (!T_CHECK(d != NULL, "cannot read " GOLDEN "/bytes.jsonl")) return;
    bert_ids got = {0}, want = {0};
    int n = 0;
    for (int c = d->nodes[0].first_child; c >= 0; c = d->nodes[c].next_sibling, n++) {
        const char *hex = bert_json_str(d, bert_json_member(d, c, "hex"), "");
        size_t len = strlen(hex) / 2;
        /* An exact-size heap copy, so the sanitizers catch any read past the end. */
        char *bytes = malloc(len ? len : 1);
        if (!bytes) break;
        for (size_t i = 0; i < len; i++) {
            unsigned v = 0;
            sscanf(hex + 2 * i, "%2x", &v);
            bytes[i] = (char)v;
        }
        int rc = encode_with_specials(tok, bytes, len, &got);
        /* The decoder itself, character by character. */
        json_ids(d, bert_json_member(d, c, "cps"), &want);
        size_t k = 0, at = 0;
        int decoded_ok = 1;
        while (at < len) {
            int32_t cp;
            size_t used = bert_utext_decode((const unsigned char *)bytes + at, len - at, &cp);
            decoded_ok &= used >= 1 && at + used <= len && k < want.len && want.ids[k] == cp;
            at += used ? used : 1;
            k++;
        }
        T_CHECK(decoded_ok && k == want.len, "bytes %s: decoded differently from TextDecoder", hex);
        free(bytes);
        json_ids(d, bert_json_member(d, c, "ids"), &want);
        char a[512], b[512];
        format_ids(&got, a, sizeof a);
        format_ids(&want, b, sizeof b);
        T_CHECK(rc == 0 && same_ids(&got, &want), "bytes %s: got [%s], want [%s]", hex, a, b);
    }
    T_CHECK(n > 100, "only %d byte cases", n);
    bert_ids_free(&got);
    bert_ids_free(&want);
    bert_json_free(d);
}

/* ---- long inputs ------------------------------------------------------------- */

#define MB (1024 * 1024)

/* Tokenizes `unit` repeated to 1 MB; returns the id count (or -1). */
static long encode_repeated(const bert_tokenizer *tok, const char *unit, bert_ids *out)
{
    size_t ul = strlen(unit), reps = MB / ul;
    char *text = malloc(reps * ul);
    if (!text) return -1;
    for (size_t i = 0; i < reps; i++) memcpy(text + i * ul, unit, ul);
    out->len = 0;
    int rc = bert_tokenizer_encode(tok, text, reps * ul, SIZE_MAX, out, NULL);
    free(text);
    return rc == 0 ? (long)out->len : -1;
}

static int all_ids(const bert_ids *v, int32_t a, int32_t b)
{
    for (size_t i = 0; i < v->len; i++)
        if (v->ids[i] != (i % 2 ? b : a)) return 0;
    return 1;
}

static void check_long_inputs(const bert_tokenizer *tok)
{
    bert_ids v = {0};
    const bert_special_ids *sp = bert_tokenizer_specials(tok);
    int32_t hello = bert_tokenizer_find(tok, "hello", 5), world = bert_tokenizer_find(tok, "world", 5);
    int32_t dot = bert_tokenizer_find(tok, ".", 1), de = bert_tokenizer_find(tok, "\xe7\x9a\x84", 3);

    long n = encode_repeated(tok, "a", &v);
    T_CHECK(n == 1 && v.ids[0] == sp->unk, "1 MB of 'a' (one word over 100 characters): %ld ids", n);
    n = encode_repeated(tok, "abcdefghij", &v);
    T_CHECK(n == 1 && v.ids[0] == sp->unk, "1 MB without a space: %ld ids", n);
    n = encode_repeated(tok, "hello world ", &v);
    T_CHECK(n == 2 * (MB / 12) && all_ids(&v, hello, world), "1 MB of 'hello world ': %ld ids", n);
    n = encode_repeated(tok, ".", &v);
    T_CHECK(n == MB && all_ids(&v, dot, dot), "1 MB of '.': %ld ids", n);
    n = encode_repeated(tok, "\xe7\x9a\x84", &v);
    T_CHECK(n == MB / 3 && all_ids(&v, de, de), "1 MB of one CJK ideograph: %ld ids", n);
    n = encode_repeated(tok, "[MASK]", &v);
    T_CHECK(n == MB / 6 && all_ids(&v, sp->mask, sp->mask), "1 MB of [MASK]: %ld ids", n);
    /* Acute (230) and grave-below (220) marks alternate, the worst order for
     * the canonical reordering; strip_accents then removes them all. */
    char *zalgo = malloc(MB);
    if (T_CHECK(zalgo != NULL, "out of memory")) {
        memcpy(zalgo, "hello", 5);
        for (size_t i = 5; i + 4 <= MB; i += 4) memcpy(zalgo + i, "\xcc\x81\xcc\x96", 4);
        v.len = 0;
        int rc = bert_tokenizer_encode(tok, zalgo, 5 + (MB - 5) / 4 * 4, SIZE_MAX, &v, NULL);
        T_CHECK(rc == 0 && v.len == 1 && v.ids[0] == hello, "hello + 1 MB of combining marks: %zu ids", v.len);
        /* Random bytes: any ids, but never more than one per byte. */
        unsigned s = 12345;
        for (size_t i = 0; i < MB; i++) { s = s * 1103515245u + 12345u; zalgo[i] = (char)(s >> 16); }
        v.len = 0;
        rc = bert_tokenizer_encode(tok, zalgo, MB, SIZE_MAX, &v, NULL);
        T_CHECK(rc == 0 && v.len > 0 && v.len < MB, "1 MB of random bytes: %zu ids", v.len);
        free(zalgo);
    }
    bert_ids_free(&v);
}

/* ---- tokenizer.json files of their own --------------------------------------- */

/* A setup line writes a model directory with its tokenizer.json and
 * tokenizer_config.json; the case lines after it are checked against it. */
static void check_added_tokens(void)
{
    json_doc *d = t_read_jsonl(GOLDEN "/added_tokens.jsonl");
    if (!T_CHECK(d != NULL, "cannot read " GOLDEN "/added_tokens.jsonl")) return;
    bert_tokenizer *tok = NULL;
    bert_ids got = {0}, want = {0};
    int n = 0, setups = 0;
    for (int c = d->nodes[0].first_child; c >= 0; c = d->nodes[c].next_sibling) {
        int tj = bert_json_member(d, c, "tokenizer_json");
        if (tj >= 0) {
            bert_tokenizer_free(tok);
            tok = NULL;
            char dir[64];
            if (T_CHECK(make_dir(dir, NULL, bert_json_str(d, bert_json_member(d, c, "tokenizer_config"), "{}"),
                                 bert_json_str(d, tj, "{}")) == 0, "cannot make a model directory")) {
                tok = load_dir(dir);
                remove_dir(dir);
            }
            /* The first setup's tokenizer.json says lowercase false, its config true. */
            if (tok && setups++ == 0)
                T_CHECK(bert_tokenizer_get_settings(tok)->lowercase == 0, "tokenizer.json's lowercase false must win");
            continue;
        }
        if (!tok) continue;
        const char *text = bert_json_str(d, bert_json_member(d, c, "text"), "");
        encode_with_specials(tok, text, strlen(text), &got);
        json_ids(d, bert_json_member(d, c, "ids"), &want);
        char a[512], b[512];
        format_ids(&got, a, sizeof a);
        format_ids(&want, b, sizeof b);
        T_CHECK(same_ids(&got, &want), "\"%.80s\": got [%s], want [%s]", text, a, b);
        for (int skip = 0; skip < 2; skip++) {
            const char *expect = bert_json_str(d, bert_json_member(d, c, skip ? "decode_skip" : "decode"), "");
            char *dec = bert_tokenizer_decode(tok, want.ids, want.len, skip);
            T_CHECK(dec && strcmp(dec, expect) == 0, "decode(skip=%d) of \"%.80s\" = \"%s\", want \"%s\"", skip, text,
                    dec ? dec : "(null)", expect);
            free(dec);
        }
        n++;
    }
    T_CHECK(n > 60 && setups >= 2, "only %d cases in %d setups", n, setups);
    bert_ids_free(&got);
    bert_ids_free(&want);
    bert_tokenizer_free(tok);
    bert_json_free(d);
}

/* ---- loading ----------------------------------------------------------------- */

static void check_loading(void)
{
    char dir[64];
    char *err = NULL;
    bert_tokenizer *tok = NULL;

    t_case("the fixture: vocabulary, special tokens and settings");
    tok = load_dir(FIXTURE);
    if (tok) {
        const bert_special_ids *sp = bert_tokenizer_specials(tok);
        const bert_tokenizer_settings *s = bert_tokenizer_get_settings(tok);
        T_CHECK(bert_tokenizer_vocab_size(tok) == 30522, "vocab size %zu", bert_tokenizer_vocab_size(tok));
        T_CHECK(sp->cls == bert_tokenizer_find(tok, "[CLS]", 5) && sp->sep == bert_tokenizer_find(tok, "[SEP]", 5) &&
                sp->mask == bert_tokenizer_find(tok, "[MASK]", 6) && sp->pad == bert_tokenizer_find(tok, "[PAD]", 5) &&
                sp->unk == bert_tokenizer_find(tok, "[UNK]", 5) && sp->cls >= 0 && sp->pad >= 0,
                "special ids %d %d %d %d %d", sp->cls, sp->sep, sp->mask, sp->pad, sp->unk);
        T_CHECK(bert_tokenizer_is_special(tok, sp->mask) && !bert_tokenizer_is_special(tok, bert_tokenizer_find(tok, "the", 3)),
                "special flags");
        T_CHECK(s->lowercase == 1 && s->strip_accents == -1 && s->chinese_chars == 1 && s->model_max_length == 512 &&
                s->max_input_chars_per_word == 100, "settings %d %d %d %d %d", s->lowercase, s->strip_accents,
                s->chinese_chars, s->model_max_length, s->max_input_chars_per_word);
        T_CHECK(bert_tokenizer_token(tok, -1) == NULL && bert_tokenizer_token(tok, 30522) == NULL &&
                strcmp(bert_tokenizer_token(tok, 30521), "##\xef\xbd\x9e") == 0, "token() bounds");
        T_CHECK(bert_tokenizer_find(tok, "hello world", 5) == bert_tokenizer_find(tok, "hello", 5) &&
                bert_tokenizer_find(tok, "zzzzzzzzzzzz", 12) == -1, "find() takes a length");
        bert_tokenizer_free(tok);
    }

    t_case("a directory without tokenizer files: BertTokenizer's uncased defaults");
    if (T_CHECK(make_dir(dir, NULL, NULL, NULL) == 0, "cannot make a model directory")) {
        tok = load_dir(dir);
        remove_dir(dir);
        if (tok) {
            const bert_tokenizer_settings *s = bert_tokenizer_get_settings(tok);
            T_CHECK(s->lowercase == 1 && s->strip_accents == -1 && s->chinese_chars == 1 && s->model_max_length == 0,
                    "settings %d %d %d %d", s->lowercase, s->strip_accents, s->chinese_chars, s->model_max_length);
            bert_tokenizer *fixture = load_dir(FIXTURE);
            const char *text = "H\xc3\xa9llo, [MASK] W\xc3\xb6rld! \xe7\x9a\x84\xe4\xba\xba";
            bert_ids a = {0}, b = {0};
            if (fixture) {
                bert_tokenizer_encode(tok, text, strlen(text), SIZE_MAX, &a, NULL);
                bert_tokenizer_encode(fixture, text, strlen(text), SIZE_MAX, &b, NULL);
                T_CHECK(same_ids(&a, &b) && a.len > 5, "defaults tokenize like bert-base-uncased's config");
            }
            bert_ids_free(&a);
            bert_ids_free(&b);
            bert_tokenizer_free(fixture);
            bert_tokenizer_free(tok);
        }
    }

    t_case("tokenizer.json wins over tokenizer_config.json; its added tokens extend the vocabulary");
    check_added_tokens();

    t_case("model_max_length: transformers' huge \"no limit\" value reads as 0");
    if (T_CHECK(make_dir(dir, NULL, "{\"model_max_length\": 1000000000000000019884624838656}", NULL) == 0,
                "cannot make a model directory")) {
        tok = load_dir(dir);
        remove_dir(dir);
        if (tok) T_CHECK(bert_tokenizer_get_settings(tok)->model_max_length == 0, "model_max_length %d",
                         bert_tokenizer_get_settings(tok)->model_max_length);
        bert_tokenizer_free(tok);
    }

    t_case("load errors name the file and the fix");
    err = NULL;
    tok = NULL;
    T_CHECK(bert_tokenizer_load(t_dir("tests/no/such/model"), &tok, &err) == -1 && !tok && err && strstr(err, "vocab.txt"),
            "missing vocab.txt: %s", err ? err : "(no message)");
    free(err);
    if (T_CHECK(make_dir(dir, "[PAD]\nhello\n", NULL, NULL) == 0, "cannot make a model directory")) {
        err = NULL;
        T_CHECK(bert_tokenizer_load(t_dir(dir), &tok, &err) == -1 && err && strstr(err, "[UNK]"), "no [UNK]: %s", err ? err : "(no message)");
        free(err);
        remove_dir(dir);
    }
    if (T_CHECK(make_dir(dir, NULL, NULL, "{\"normalizer\": {\"type\": \"Lowercase\"}}") == 0, "cannot make a model directory")) {
        err = NULL;
        T_CHECK(bert_tokenizer_load(t_dir(dir), &tok, &err) == -1 && err && strstr(err, "Lowercase") && strstr(err, "tokenizer.json"),
                "unsupported normalizer: %s", err ? err : "(no message)");
        free(err);
        remove_dir(dir);
    }
    if (T_CHECK(make_dir(dir, NULL, "{\"do_lower_case\": tru", NULL) == 0, "cannot make a model directory")) {
        err = NULL;
        T_CHECK(bert_tokenizer_load(t_dir(dir), &tok, &err) == -1 && err && strstr(err, "tokenizer_config.json"),
                "malformed tokenizer_config.json: %s", err ? err : "(no message)");
        free(err);
        remove_dir(dir);
    }

    t_case("vocab.txt: \\r\\n line ends, no final newline, a repeated token");
    if (T_CHECK(make_dir(dir, "[UNK]\r\nrun\r\n##ning\r\nrun\r\n[CLS]", NULL, NULL) == 0, "cannot make a model directory")) {
        tok = load_dir(dir);
        remove_dir(dir);
        if (tok) {
            T_CHECK(bert_tokenizer_vocab_size(tok) == 5 && strcmp(bert_tokenizer_token(tok, 2), "##ning") == 0 &&
                    strcmp(bert_tokenizer_token(tok, 4), "[CLS]") == 0, "tokens read");
            /* A repeated token maps to its last line, as a Python dict built line by line does. */
            T_CHECK(bert_tokenizer_find(tok, "run", 3) == 3, "repeated token id %d", bert_tokenizer_find(tok, "run", 3));
            T_CHECK(bert_tokenizer_specials(tok)->sep == -1 && bert_tokenizer_specials(tok)->cls == 4, "absent [SEP] is -1");
            bert_tokenizer_free(tok);
        }
    }
}

void suite_tokenizer(void)
{
    check_loading();

    t_case("every code point classified, stripped and lowercased as the reference does");
    check_unicode();

    t_case("character facts from transformers' BertTokenizer tests");
    check_character_facts();

    corpus = t_read_jsonl(GOLDEN "/corpus.jsonl");
    t_case("corpus: uncased (as shipped, and strip_accents true)");
    check_golden("uncased");
    t_case("corpus: cased (lowercase off, strip_accents null and false)");
    check_golden("cased");
    t_case("corpus: cased with strip_accents true");
    check_golden("cased_strip");
    t_case("corpus: uncased with strip_accents false");
    check_golden("uncased_nostrip");
    t_case("corpus: bert-base-uncased's original tokenizer.json and config files");
    check_original_files();
    bert_json_free(corpus);
    corpus = NULL;

    t_case("transformers' BertTokenizer unit-test cases");
    check_hf_cases();

    bert_tokenizer *tok = load_dir(FIXTURE);
    if (!tok) return;
    t_case("decode: WordPiece decoder and clean_up_tokenization");
    check_decode(tok);
    t_case("ill-formed UTF-8 reads as U+FFFD per maximal subpart");
    check_bytes(tok);
    t_case("1 MB inputs in linear time");
    check_long_inputs(tok);
    bert_tokenizer_free(tok);
}
