/*
 * test_tok_families.c - the byte-level BPE, Unigram and WordPiece tokenizers
 * of other model families against Hugging Face's Rust tokenizer: ids,
 * offsets and decoded text of every line of the tokenizer corpus, and
 * pairs through the post-processor.  The expected values are the
 * family_<name>.jsonl files that tests/tokenizer/make_family_golden.mjs
 * wrote from the npm package `tokenizers`; the tokenizers are the ones
 * tests/tokenizer/make_family_fixtures.py generated (committed) and the
 * real ones of ../shared/models (skipped where it is absent).
 */
#include "test.h"
#include "golden_files.h"
#include "../ext/base/json.h"
#include "../ext/tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GOLDEN "tests/tokenizer"

static json_doc *corpus;

static int ids_of(const json_doc *d, int node, bert_ids *v)
{
    v->len = 0;
    if (node < 0 || d->nodes[node].type != JSON_ARRAY) return -1;
    for (int c = d->nodes[node].first_child; c >= 0; c = d->nodes[c].next_sibling)
        if (bert_ids_push(v, (int32_t)bert_json_int(d, c, -1)) != 0) return -1;
    return 0;
}

static int same(const bert_ids *a, const bert_ids *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->ids, b->ids, a->len * sizeof *a->ids) == 0);
}

/* One corpus line: ids, offsets, decode, encoding with the working memory
 * `keep` (and its word cache).  Returns 1 when all agree. */
static int check_line(bert_tokenizer *tok, const json_doc *g, int line, const char *text, int report,
                      bert_encode_buffers *keep)
{
    bert_ids want = {0}, got = {0}, offs = {0};
    bert_spans spans = {0};
    int ok = ids_of(g, bert_json_member(g, line, "ids"), &want) == 0 &&
             ids_of(g, bert_json_member(g, line, "offsets"), &offs) == 0 &&
             bert_tokenizer_encode_spans(tok, text, strlen(text), SIZE_MAX, &got, &spans, keep) == 0;
    int same_ids = ok && same(&want, &got);
    int same_offsets = same_ids && offs.len == 2 * spans.len;
    for (size_t i = 0; same_offsets && i < spans.len; i++)
        same_offsets = spans.at[i].start == offs.ids[2 * i] && spans.at[i].end == offs.ids[2 * i + 1];
    char *decoded = ok ? bert_tokenizer_decode(tok, want.ids, want.len, 0) : NULL;
    const char *want_decode = bert_json_str(g, bert_json_member(g, line, "decode"), "");
    int same_decode = decoded && strcmp(decoded, want_decode) == 0;
    if (report && !(same_ids && same_offsets && same_decode)) {
        char a[200] = "", b[200] = "";
        size_t na = 0, nb = 0;
        for (size_t i = 0; i < want.len && na < 150; i++) na += (size_t)snprintf(a + na, sizeof a - na, "%d,", want.ids[i]);
        for (size_t i = 0; i < got.len && nb < 150; i++) nb += (size_t)snprintf(b + nb, sizeof b - nb, "%d,", got.ids[i]);
        printf("    %.60s\n      ids %s: want %s got %s\n", text, same_ids ? "same" : "DIFFER", a, b);
        if (same_ids && !same_offsets)
            for (size_t i = 0; i < spans.len; i++)
                if (spans.at[i].start != offs.ids[2 * i] || spans.at[i].end != offs.ids[2 * i + 1]) {
                    printf("      offset of token %zu (%d): want %d-%d got %lld-%lld\n", i, got.ids[i], offs.ids[2 * i],
                           offs.ids[2 * i + 1], (long long)spans.at[i].start, (long long)spans.at[i].end);
                    break;
                }
        if (!same_decode) printf("      decode: want [%s] got [%s]\n", want_decode, decoded ? decoded : "(null)");
    }
    free(decoded);
    bert_ids_free(&want);
    bert_ids_free(&got);
    bert_ids_free(&offs);
    bert_spans_free(&spans);
    return same_ids && same_offsets && same_decode;
}

/* A pair through the post-processor, and its decode without specials. */
static int check_pair(bert_tokenizer *tok, const json_doc *g, int line)
{
    const char *a = bert_json_str(g, bert_json_member(g, line, "a"), "");
    const char *b = bert_json_str(g, bert_json_member(g, line, "b"), "");
    bert_ids ia = {0}, ib = {0}, ids = {0}, types = {0}, want = {0}, want_types = {0};
    int ok = bert_tokenizer_encode(tok, a, strlen(a), SIZE_MAX, &ia, NULL) == 0 &&
             bert_tokenizer_encode(tok, b, strlen(b), SIZE_MAX, &ib, NULL) == 0 &&
             bert_tokenizer_post_process(tok, ia.ids, ia.len, ib.ids ? ib.ids : (const int32_t *)"", ib.len, &ids, &types) == 0 &&
             ids_of(g, bert_json_member(g, line, "ids"), &want) == 0 &&
             ids_of(g, bert_json_member(g, line, "types"), &want_types) == 0;
    ok = ok && same(&ids, &want) && same(&types, &want_types) &&
         ids.len == ia.len + ib.len + bert_tokenizer_num_special(tok, 1);
    T_CHECK(ok, "pair (%s | %s): ids or type ids differ from the post-processor's", a, b);
    if (ok) {
        char *d = bert_tokenizer_decode(tok, ids.ids, ids.len, 1);
        const char *w = bert_json_str(g, bert_json_member(g, line, "decode_skip"), "");
        T_CHECK(d && strcmp(d, w) == 0, "decode without specials: want [%s] got [%s]", w, d ? d : "(null)");
        free(d);
    }
    bert_ids_free(&ia);
    bert_ids_free(&ib);
    bert_ids_free(&ids);
    bert_ids_free(&types);
    bert_ids_free(&want);
    bert_ids_free(&want_types);
    return ok;
}

static void check_family(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, GOLDEN "/family_%s.jsonl", name);
    json_doc *g = t_read_jsonl(path);
    if (!T_CHECK(g != NULL, "cannot read %s", path)) return;
    int head = t_json_child(g, 0, 0);
    const char *dir = bert_json_str(g, bert_json_member(g, head, "dir"), "");
    if (strncmp(dir, "tests/", 6) != 0 && !t_exists(dir)) {
        char why[300];
        snprintf(why, sizeof why, "%s is absent", dir);
        t_skip(why);
        bert_json_free(g);
        return;
    }
    bert_tokenizer *tok = NULL;
    char *err = NULL;
    if (!T_CHECK(bert_tokenizer_load(t_dir(dir), &tok, &err) == 0, "cannot load %s: %s", dir, err ? err : "")) {
        free(err);
        bert_json_free(g);
        return;
    }
    /* Three passes: no kept memory; kept memory whose word cache fills as
     * the corpus goes; the same again, when most words are found in it. */
    int n = bert_json_length(corpus, 0), reported = 0;
    bert_encode_buffers keep = {0};
    for (int pass = 0; pass < 3; pass++) {
        int bad = 0;
        for (int i = 0; i < n; i++) {
            const char *text = bert_json_str(corpus, t_json_child(corpus, 0, i), "");
            int line = t_json_child(g, 0, i + 1);
            if (!check_line(tok, g, line, text, reported < 3, pass ? &keep : NULL)) {
                bad++;
                reported++;
            }
        }
        T_CHECK(bad == 0, "%s: %d of %d corpus lines differ from the Rust tokenizer (pass %d)", name, bad, n, pass);
    }
    bert_encode_buffers_free(&keep);
    for (int i = n + 1; i < bert_json_length(g, 0); i++) check_pair(tok, g, t_json_child(g, 0, i));
    bert_tokenizer_free(tok);
    bert_json_free(g);
}

/* A model directory under build/test_tok_families with up to two files. */
static int write_dir(char dir[64], const char *name1, const char *text1, const char *name2, const char *text2)
{
    mkdir("build", 0755);
    mkdir("build/test_tok_families", 0755);
    snprintf(dir, 64, "build/test_tok_families/XXXXXX");
    if (!mkdtemp(dir)) return -1;
    const char *names[2] = {name1, name2}, *texts[2] = {text1, text2};
    for (int i = 0; i < 2; i++) {
        if (!names[i]) continue;
        char path[128];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "wb");
        if (!f) return -1;
        fputs(texts[i], f);
        if (fclose(f) != 0) return -1;
    }
    return 0;
}

static void remove_dir(const char *dir)
{
    static const char *const files[] = {"tokenizer.json", "vocab.json", "merges.txt", "special_tokens_map.json"};
    char path[128];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

#define BPE_MODEL "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [\"a b\"]}"
#define UNIGRAM_MODEL "\"model\": {\"type\": \"Unigram\", \"unk_id\": 0, \"vocab\": [[\"<unk>\", 0], [\"a\", -1]]}"

#define LOWERCASE4 "{\"type\": \"Lowercase\"}, {\"type\": \"Lowercase\"}, {\"type\": \"Lowercase\"}, " \
                   "{\"type\": \"Lowercase\"}"

/* Bad tokenizer files of the new families: a clear error naming the file
 * and the problem, never a crash. */
static void check_bad_files(void)
{
    static const struct { const char *name1, *text1, *name2, *text2, *want; } cases[] = {
        {"tokenizer.json", "{" BPE_MODEL ", \"normalizer\": {\"type\": \"Foo\"}}", NULL, NULL, "Foo"},
        {"tokenizer.json", "{" BPE_MODEL ", \"pre_tokenizer\": {\"type\": \"Digits\"}}", NULL, NULL, "Digits"},
        {"tokenizer.json", "{" BPE_MODEL ", \"decoder\": {\"type\": \"CTC\"}}", NULL, NULL, "CTC"},
        {"tokenizer.json", "{" BPE_MODEL ", \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": "
                           "[{\"SpecialToken\": {\"id\": \"<x>\", \"type_id\": 0}}], \"special_tokens\": {}}}",
         NULL, NULL, "<x>"},
        {"tokenizer.json", "{" UNIGRAM_MODEL ", \"normalizer\": {\"type\": \"Precompiled\", "
                           "\"precompiled_charsmap\": \"!!\"}}", NULL, NULL, "precompiled_charsmap"},
        {"tokenizer.json", "{" UNIGRAM_MODEL ", \"normalizer\": {\"type\": \"Replace\", \"pattern\": "
                           "{\"Regex\": \"[a-z]+\"}, \"content\": \"\"}}", NULL, NULL, "[a-z]+"},
        {"tokenizer.json", "{\"model\": {\"type\": \"Unigram\", \"vocab\": [5]}}", NULL, NULL, "Unigram vocab"},
        {"tokenizer.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 2}, \"merges\": []}}",
         NULL, NULL, "outside"},
        {"vocab.json", "{\"a\": 0}", NULL, NULL, "merges.txt"},
        {"tokenizer.json", "{\"model\": {\"type\": \"Bogus\", \"vocab\": {}}}", NULL, NULL, "Bogus"},
        /* 17 normalizers: more than the loader reads, an error rather than the first 16. */
        {"tokenizer.json", "{" BPE_MODEL ", \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": ["
                           LOWERCASE4 "," LOWERCASE4 "," LOWERCASE4 "," LOWERCASE4 ", {\"type\": \"Lowercase\"}]}}",
         NULL, NULL, "more than 16 normalizers"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char dir[64];
        if (!T_CHECK(write_dir(dir, cases[i].name1, cases[i].text1, cases[i].name2, cases[i].text2) == 0,
                     "cannot write a model directory")) return;
        bert_tokenizer *tok = NULL;
        char *err = NULL;
        int rc = bert_tokenizer_load(t_dir(dir), &tok, &err);
        T_CHECK(rc != 0 && err && strstr(err, cases[i].want) && strstr(err, dir),
                "case %zu: want an error naming the file and \"%s\", got %s", i, cases[i].want, err ? err : "success");
        free(err);
        bert_tokenizer_free(tok);
        remove_dir(dir);
    }
}

/* A charsmap whose trie points past its end, and one that is empty: text
 * still tokenizes, reading nothing outside the blob. */
static void check_odd_charsmap(void)
{
    /* Trie of 2 units (8 bytes): the root's offset and a unit with a far
     * offset; then a 2-byte blob.  base64 of
     * 08000000 00fcffff 61000100 7800 */
    static const char *const maps[] = {"CAAAAAD8//9hAAEAeAA=", "AAAAAA==", ""};
    for (size_t i = 0; i < sizeof maps / sizeof *maps; i++) {
        char json[512], dir[64];
        snprintf(json, sizeof json, "{" UNIGRAM_MODEL ", \"normalizer\": {\"type\": \"Precompiled\", "
                 "\"precompiled_charsmap\": \"%s\"}, \"pre_tokenizer\": {\"type\": \"Metaspace\"}}", maps[i]);
        if (!T_CHECK(write_dir(dir, "tokenizer.json", json, NULL, NULL) == 0, "cannot write a model directory")) return;
        bert_tokenizer *tok = NULL;
        char *err = NULL;
        if (T_CHECK(bert_tokenizer_load(t_dir(dir), &tok, &err) == 0, "charsmap %zu: %s", i, err ? err : "")) {
            bert_ids ids = {0};
            T_CHECK(bert_tokenizer_encode(tok, "a\x7f\xff b aa", 9, SIZE_MAX, &ids, NULL) == 0 && ids.len > 0,
                    "charsmap %zu: the text did not tokenize", i);
            bert_ids_free(&ids);
        }
        free(err);
        bert_tokenizer_free(tok);
        remove_dir(dir);
    }
}

/* Every allocation of a load, an encode with offsets and a decode failing
 * in turn: an error (or the full, right result), never a crash. */
static void check_out_of_memory(void)
{
    static const char *const jsons[] = {
        "{" BPE_MODEL ", \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Replace\", "
        "\"pattern\": {\"String\": \"x\"}, \"content\": \"ab\"}, {\"type\": \"Lowercase\"}, {\"type\": \"NFKD\"}]}, "
        "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}, \"decoder\": {\"type\": \"ByteLevel\"}, "
        "\"post_processor\": {\"type\": \"RobertaProcessing\", \"sep\": [\"b\", 1], \"cls\": [\"a\", 0]}, "
        "\"added_tokens\": [{\"id\": 3, \"content\": \"<m>\", \"special\": true, \"lstrip\": true}, "
        "{\"id\": 4, \"content\": \"AB\", \"special\": false, \"normalized\": true}]}",
        "{" UNIGRAM_MODEL ", \"normalizer\": {\"type\": \"Precompiled\", \"precompiled_charsmap\": \"CAAAAAD8//9hAAEAeAA=\"}, "
        "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"WhitespaceSplit\"}, "
        "{\"type\": \"Metaspace\"}]}, \"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", "
        "\"pattern\": {\"String\": \"\\u2581\"}, \"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}]}}",
    };
    static const char text[] = "ab AB <m> xa \xff\xfe aaa b";
    for (size_t k = 0; k < sizeof jsons / sizeof *jsons; k++) {
        char dir[64];
        if (!T_CHECK(write_dir(dir, "tokenizer.json", jsons[k], NULL, NULL) == 0, "cannot write a model directory")) return;
        bert_ids want = {0};
        char *want_text = NULL;
        int runs = 0, errors = 0, full = 0;
        for (long fail = -1;; fail++) {
            long start = t_allocations();
            t_fail_allocation(fail < 0 ? -1 : start + fail);
            bert_tokenizer *tok = NULL;
            char *err = NULL;
            bert_ids ids = {0};
            bert_spans spans = {0};
            char *decoded = NULL;
            /* The directory's reading is made inside the failing window too. */
            bert_model_files *files = bert_model_files_new(dir);
            int ok = files && bert_tokenizer_load(files, &tok, &err) == 0 &&
                     bert_tokenizer_encode_spans(tok, text, sizeof text - 1, SIZE_MAX, &ids, &spans, NULL) == 0 &&
                     (decoded = bert_tokenizer_decode(tok, ids.ids, ids.len, 0)) != NULL;
            t_fail_allocation(-1);
            long used = t_allocations() - start;
            runs++;
            if (fail < 0) {
                if (!T_CHECK(ok, "tokenizer %zu does not work without failures: %s", k, err ? err : "")) break;
                for (size_t i = 0; i < ids.len; i++) bert_ids_push(&want, ids.ids[i]);
                want_text = decoded;
                decoded = NULL;
            } else if (ok) {
                full++;
                T_CHECK(same(&ids, &want) && strcmp(decoded, want_text) == 0,
                        "tokenizer %zu, allocation %ld failing: a success with other results", k, fail);
            } else {
                errors++;
            }
            free(decoded);
            free(err);
            bert_ids_free(&ids);
            bert_spans_free(&spans);
            bert_tokenizer_free(tok);
            bert_model_files_free(files);
            if (fail >= used) break;
        }
        T_CHECK(errors > 0, "tokenizer %zu: no failing allocation gave an error in %d runs", k, runs);
        free(want_text);
        bert_ids_free(&want);
        remove_dir(dir);
    }
}

/* ---- the post-processor's template, as the SQL functions give it ------------ */

/* A golden line's ids (or numbers) up to " ; " as bert_token_ids writes
 * them, "[1,2,3]", and the part after it as it is. */
static int split_golden(char *line, char *json, size_t cap, const char **rest)
{
    char *semi = strstr(line, " ; ");
    if (!semi) return -1;
    *semi = '\0';
    *rest = semi + 3;
    size_t n = (size_t)snprintf(json, cap, "[");
    for (const char *c = line; *c && n + 2 < cap; c++) json[n++] = *c == ' ' ? ',' : *c;
    if (n + 2 >= cap) return -1;
    json[n++] = ']';
    json[n] = '\0';
    return 0;
}

/* One text as bert_tokenize_offsets and bert_token_ids build it: the
 * template's special tokens around the pieces.  ids as "[..]", offsets as
 * "start end ...", as the golden writes them. */
static int single_as_golden(const bert_tokenizer *tok, const char *text, char *json, char *offs, size_t cap)
{
    bert_ids ids = {0};
    bert_spans spans = {0};
    int ok = bert_tokenizer_add_specials(tok, 0, &ids, &spans) >= 0 &&
             bert_tokenizer_encode_spans(tok, text, strlen(text), SIZE_MAX, &ids, &spans, NULL) == 0 &&
             bert_tokenizer_add_specials(tok, 1, &ids, &spans) >= 0;
    size_t n = (size_t)snprintf(json, cap, "["), m = 0;
    offs[0] = '\0';
    for (size_t i = 0; ok && i < ids.len; i++) {
        n += (size_t)snprintf(json + n, cap - n, "%s%d", i ? "," : "", ids.ids[i]);
        m += (size_t)snprintf(offs + m, cap - m, "%s%lld %lld", i ? " " : "", (long long)spans.at[i].start,
                              (long long)spans.at[i].end);
        ok = n + 2 < cap && m < cap;
    }
    if (ok) snprintf(json + n, cap - n, "]");
    bert_ids_free(&ids);
    bert_spans_free(&spans);
    return ok ? 0 : -1;
}

/* The pair of corpus lines i, i + 1 through the post-processor: ids as
 * "[..]" and type ids one digit each, as the golden writes them. */
static int pair_as_golden(const bert_tokenizer *tok, const char *a, const char *b, char *json, char *types,
                          size_t cap)
{
    static const int32_t empty[1] = {0};   /* an empty b is still a pair */
    bert_ids ia = {0}, ib = {0}, ids = {0}, ty = {0};
    int ok = bert_tokenizer_encode(tok, a, strlen(a), SIZE_MAX, &ia, NULL) == 0 &&
             bert_tokenizer_encode(tok, b, strlen(b), SIZE_MAX, &ib, NULL) == 0 &&
             bert_tokenizer_post_process(tok, ia.ids, ia.len, ib.ids ? ib.ids : empty, ib.len, &ids, &ty) == 0 &&
             ids.len < cap;
    size_t n = (size_t)snprintf(json, cap, "[");
    for (size_t i = 0; ok && i < ids.len; i++) {
        n += (size_t)snprintf(json + n, cap - n, "%s%d", i ? "," : "", ids.ids[i]);
        ok = n + 2 < cap;
        types[i] = (char)('0' + ty.ids[i]);
    }
    if (ok) {
        snprintf(json + n, cap - n, "]");
        types[ids.len] = '\0';
    }
    bert_ids_free(&ia);
    bert_ids_free(&ib);
    bert_ids_free(&ids);
    bert_ids_free(&ty);
    return ok ? 0 : -1;
}

/* tests/tokenizer/template_<name>.txt (make_template_golden.mjs): every
 * corpus line as bert_tokenize_offsets builds it, and pairs through the
 * post-processor, against the Rust library's encode with
 * add_special_tokens.  (bert_load refuses these directories: their
 * model types are not encoders the extension runs.) */
static void check_template(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, GOLDEN "/template_%s.txt", name);
    char *golden = t_read_file(path, NULL);
    if (!T_CHECK(golden != NULL, "cannot read %s", path)) return;
    char *line = golden, *next = strchr(line, '\n');
    const char *dir = line + 4;
    if (next) *next++ = '\0';
    if (!t_exists(dir)) {
        char why[300];
        snprintf(why, sizeof why, "%s is absent", dir);
        t_skip(why);
        free(golden);
        return;
    }
    bert_tokenizer *tok = NULL;
    char *err = NULL;
    if (!T_CHECK(bert_tokenizer_load(t_dir(dir), &tok, &err) == 0, "cannot load %s: %s", dir, err ? err : "")) {
        free(err);
        free(golden);
        return;
    }
    enum { CAP = 1 << 16 };
    char *want = malloc(CAP), *got = malloc(CAP), *types = malloc(CAP);
    int n = bert_json_length(corpus, 0), i = 0, bad = 0, pairs = 0;
    for (line = next; want && got && types && line && *line; line = next) {
        if ((next = strchr(line, '\n'))) *next++ = '\0';
        /* The golden goes s(i), p(i, i + 1), s(i + 1): a pair follows the single of its first text. */
        int single = line[0] == 's', at = single ? i++ : i - 1;
        const char *rest = NULL, *text = bert_json_str(corpus, t_json_child(corpus, 0, at), "");
        if (!T_CHECK(at >= 0 && at + !single < n && split_golden(line + 2, want, CAP, &rest) == 0,
                     "%s: bad golden line for corpus line %d", path, at))
            break;
        if (single) {
            if (single_as_golden(tok, text, got, types, CAP) != 0) snprintf(got, CAP, "ERROR");
        } else {
            pairs++;
            const char *b = bert_json_str(corpus, t_json_child(corpus, 0, at + 1), "");
            if (pair_as_golden(tok, text, b, got, types, CAP) != 0) snprintf(got, CAP, "ERROR");
        }
        int same_ids = strcmp(got, want) == 0, same_rest = strcmp(types, rest) == 0;
        if (!same_ids || !same_rest) {
            if (bad++ < 3)
                T_CHECK(0, "%s, corpus line %d (%s): %s\n      want %.300s ; %.200s\n      got  %.300s ; %.200s", name, at,
                        single ? "single" : "pair", text, want, rest, got, types);
        }
    }
    T_CHECK(want && got && types, "out of memory");
    T_CHECK(bad == 0, "%s: %d golden lines differ from the Rust tokenizer", name, bad);
    T_CHECK(i == n && pairs == n / 2, "%s: %d lines and %d pairs in the golden, for %d corpus lines", name, i, pairs, n);
    free(want);
    free(got);
    free(types);
    bert_tokenizer_free(tok);
    free(golden);
}

void suite_tok_families(void)
{
    t_case("each allocation failing in turn: an error or the full result");
    check_out_of_memory();
    t_case("bad tokenizer files of the BPE and Unigram families are named, with the problem");
    check_bad_files();
    t_case("an odd precompiled_charsmap is read within its bounds");
    check_odd_charsmap();

    corpus = t_read_jsonl(GOLDEN "/corpus.jsonl");
    static const char *const names[][2] = {
        {"bpe_bytelevel", "generated byte-level BPE: add_prefix_space, single_word/rstrip/normalized added tokens"},
        {"unigram_xlmr", "generated Unigram, XLM-R layout: Precompiled charsmap, Strip, Replace, Metaspace"},
        {"unigram_bytes", "generated Unigram with byte_fallback, NFKD, StripAccents, Lowercase, Metaspace first"},
        {"deberta_v3", "generated DeBERTa-v3-shaped Unigram: Strip, Precompiled charsmap, Replace, Sequence[Metaspace]"},
        {"roberta_base", "roberta-base (tokenizer.json)"},
        {"distilroberta", "all-distilroberta-v1 (tokenizer.json)"},
        {"roberta_squad2", "roberta-base-squad2 (vocab.json + merges.txt only)"},
        {"twitter_roberta", "twitter-roberta-base-sentiment-latest (vocab.json + merges.txt only)"},
        {"mpnet", "all-mpnet-base-v2 (WordPiece with <s> </s>, RobertaProcessing)"},
        {"t5_small", "t5-small (Unigram, Precompiled, WhitespaceSplit + Metaspace)"},
        {"xlnet", "xlnet-base-cased (Unigram, Replace, NFKD, StripAccents, Precompiled)"},
        {"bert_uncased", "bert-base-uncased (tokenizer.json)"},
    };
    for (size_t i = 0; corpus && i < sizeof names / sizeof *names; i++) {
        t_case(names[i][1]);
        check_family(names[i][0]);
    }
    static const char *const templates[][2] = {
        {"t5_small", "t5-small with its special tokens: the template $A </s>, ids and offsets as the Rust tokenizer"},
        {"xlnet", "xlnet-base-cased with its special tokens: $A <sep> <cls>, pairs typed 0, 1 and 2"},
        {"modernbert_large", "ModernBERT-large: byte-level BPE pieces, [CLS] $A [SEP] and pairs, ids and offsets as the "
                             "Rust tokenizer"},
        {"deberta_v3", "generated DeBERTa-v3-shaped Unigram with its special tokens: [CLS] $A [SEP] $B [SEP], ids, "
                       "offsets and types as the Rust tokenizer"},
    };
    for (size_t i = 0; corpus && i < sizeof templates / sizeof *templates; i++) {
        t_case(templates[i][1]);
        check_template(templates[i][0]);
    }
    bert_json_free(corpus);
    corpus = NULL;
}
