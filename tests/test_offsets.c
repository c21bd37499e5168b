/*
 * test_offsets.c - character offsets from the tokenizer, bert_tokenize_offsets
 * and bert_chunks.  The expected offsets and word ids come from Hugging
 * Face's Rust tokenizer (tests/tokenizer/offsets_*.jsonl, written by
 * make_golden.mjs), the expected chunks from a script that cuts the Rust
 * tokenizer's offsets by the documented rule (make_chunks_golden.mjs);
 * substr() checks use SQLite itself.
 */
#include "test.h"
#include "golden_files.h"
#include "../ext/tasks/chunks.h"
#include "../ext/base/json.h"
#include "../ext/tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FIXTURE "tests/fixtures/bert-base-uncased"
#define GOLDEN "tests/tokenizer"
#define PLAIN "build/models/bert-plain-f32"

/* ---- helpers --------------------------------------------------------------- */

static long long at_int(const json_doc *d, int node, int i) { return bert_json_int(d, t_json_child(d, node, i), -1); }

static int write_file(const char *dir, const char *name, const char *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t put = fwrite(data, 1, len, f);
    return fclose(f) == 0 && put == len ? 0 : -1;
}

/* A tokenizer from a model directory written to /tmp: `vocab` (one token a
 * line; NULL: the fixture's vocab.txt), tokenizer_config.json and, when not
 * NULL, tokenizer.json. */
static bert_tokenizer *make_tokenizer(const char *vocab, const char *config, const char *tokenizer_json)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/bert-offsets-test-XXXXXX");
    if (!T_CHECK(mkdtemp(dir) != NULL, "cannot make a directory in /tmp")) return NULL;
    size_t len = 0;
    char *fixture = vocab ? NULL : t_read_file(FIXTURE "/vocab.txt", &len);
    int rc = !vocab && !fixture ? -1 : write_file(dir, "vocab.txt", vocab ? vocab : fixture, vocab ? strlen(vocab) : len);
    free(fixture);
    if (rc == 0) rc = write_file(dir, "tokenizer_config.json", config, strlen(config));
    if (rc == 0 && tokenizer_json) rc = write_file(dir, "tokenizer.json", tokenizer_json, strlen(tokenizer_json));
    bert_tokenizer *tok = NULL;
    char *err = NULL;
    if (T_CHECK(rc == 0, "cannot write the model directory %s", dir) && bert_tokenizer_load(t_dir(dir), &tok, &err) != 0) {
        T_CHECK(0, "cannot load the tokenizer: %s", err ? err : "?");
        free(err);
        tok = NULL;
    }
    static const char *const files[] = {"vocab.txt", "tokenizer_config.json", "tokenizer.json"};
    char path[600];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    return tok;
}

/* Compares one encoding's pieces (no [CLS]/[SEP]) with a golden row whose
 * ids/offsets/words include them when `specials`.  Returns 1 when equal, else
 * 0 with *what describing the first difference. */
static int same_offsets(const bert_tokenizer *tok, const bert_ids *ids, const bert_spans *spans, const json_doc *gi,
                        int ids_node, const json_doc *g, int offsets_node, int words_node, int specials, char *what,
                        size_t size)
{
    int skip = specials ? 1 : 0;
    int n = bert_json_length(g, offsets_node) - 2 * skip;
    if (n != (int)spans->len || bert_json_length(gi, ids_node) - 2 * skip != (int)ids->len) {
        snprintf(what, size, "%zu pieces, want %d", spans->len, n);
        return 0;
    }
    if (specials) {
        const int last = n + 1;
        int o0 = t_json_child(g, offsets_node, 0), o1 = t_json_child(g, offsets_node, last);
        if (at_int(g, o0, 0) != 0 || at_int(g, o0, 1) != 0 || at_int(g, o1, 0) != 0 || at_int(g, o1, 1) != 0) {
            snprintf(what, size, "the reference's [CLS]/[SEP] offsets are not (0, 0)");
            return 0;
        }
    }
    for (int i = 0; i < n; i++) {
        int o = t_json_child(g, offsets_node, i + skip);
        long long start = at_int(g, o, 0), end = at_int(g, o, 1);
        long long word = bert_json_int(g, t_json_child(g, words_node, i + skip), -2);
        long long id = at_int(gi, ids_node, i + skip);
        const bert_token_span *s = &spans->at[i];
        if (ids->ids[i] != id || s->start != start || s->end != end || s->word != word) {
            const char *t = bert_tokenizer_token(tok, ids->ids[i]);
            snprintf(what, size, "piece %d \"%s\" (id %d): [%lld, %lld) word %lld, want id %lld [%lld, %lld) word %lld", i,
                     t ? t : "?", (int)ids->ids[i], (long long)s->start, (long long)s->end, (long long)s->word, id,
                     start, end, word);
            return 0;
        }
    }
    return 1;
}

static json_doc *corpus;

/* ---- the tokenizer's offsets ---------------------------------------------------- */

/* Every corpus line in one configuration: ids and offsets and word ids
 * identical to the Rust tokenizer's. */
static void corpus_offsets(const char *name, const char *config)
{
    char title[160], path[128], ids_path[128];
    snprintf(title, sizeof title, "offsets of every corpus line equal the Rust tokenizer's (%s)", name);
    t_case(title);
    snprintf(path, sizeof path, GOLDEN "/offsets_%s.jsonl", name);
    snprintf(ids_path, sizeof ids_path, GOLDEN "/golden_%s.jsonl", name);
    json_doc *g = t_read_jsonl(path), *gi = t_read_jsonl(ids_path);
    bert_tokenizer *tok = g && gi && corpus ? make_tokenizer(NULL, config, NULL) : NULL;
    if (!T_CHECK(tok != NULL, "cannot read %s, %s or the corpus", path, ids_path)) goto done;
    T_CHECK(bert_json_length(g, 0) == bert_json_length(corpus, 0), "%s: %d rows for %d corpus lines", path,
            bert_json_length(g, 0), bert_json_length(corpus, 0));
    bert_ids ids = {0};
    bert_spans spans = {0};
    int bad = 0, line = 1;
    for (int t = corpus->nodes[0].first_child, r = t_json_child(g, 0, 0), ri = t_json_child(gi, 0, 1); t >= 0 && r >= 0 && ri >= 0;
         t = corpus->nodes[t].next_sibling, r = g->nodes[r].next_sibling, ri = gi->nodes[ri].next_sibling, line++) {
        const char *text = bert_json_str(corpus, t, "");
        ids.len = spans.len = 0;
        if (!T_CHECK(bert_tokenizer_encode_spans(tok, text, strlen(text), SIZE_MAX, &ids, &spans, NULL) == 0,
                     "line %d: encode failed", line))
            break;
        char what[400];
        if (!same_offsets(tok, &ids, &spans, gi, ri, g, bert_json_member(g, r, "offsets"), bert_json_member(g, r, "words"),
                          1, what, sizeof what) &&
            bad++ < 5)
            T_CHECK(0, "%s, corpus line %d \"%.80s\": %s", name, line, text, what);
    }
    T_CHECK(bad == 0 && line - 1 == bert_json_length(corpus, 0), "%s: %d of %d corpus lines differ", name, bad, line - 1);
    bert_ids_free(&ids);
    bert_spans_free(&spans);
done:
    bert_tokenizer_free(tok);
    bert_json_free(g);
    bert_json_free(gi);
}

/* offsets_cases.jsonl: small vocabularies (marks reordered across pieces,
 * transformers' BertTokenizer cases) and added tokens, raw and normalized. */
static void case_offsets(void)
{
    t_case("offsets of reordered marks, small vocabularies and added tokens equal the Rust tokenizer's");
    json_doc *d = t_read_jsonl(GOLDEN "/offsets_cases.jsonl");
    if (!T_CHECK(d != NULL, "cannot read " GOLDEN "/offsets_cases.jsonl")) return;
    bert_tokenizer *tok = NULL;
    bert_ids ids = {0};
    bert_spans spans = {0};
    int cases = 0, setups = 0;
    for (int c = d->nodes[0].first_child; c >= 0; c = d->nodes[c].next_sibling) {
        int cfg = bert_json_member(d, c, "tokenizer_config");
        if (cfg >= 0) {
            bert_tokenizer_free(tok);
            int vocab = bert_json_member(d, c, "vocab");
            char *vocab_text = NULL;
            if (d->nodes[vocab].type == JSON_ARRAY) {
                size_t n = 1;
                for (int v = d->nodes[vocab].first_child; v >= 0; v = d->nodes[v].next_sibling)
                    n += strlen(bert_json_str(d, v, "")) + 1;
                if (!(vocab_text = calloc(n, 1))) break;
                for (int v = d->nodes[vocab].first_child; v >= 0; v = d->nodes[v].next_sibling) {
                    strcat(vocab_text, bert_json_str(d, v, ""));
                    strcat(vocab_text, "\n");
                }
            }
            int tj = bert_json_member(d, c, "tokenizer_json");
            tok = make_tokenizer(vocab_text, bert_json_str(d, cfg, "{}"),
                                 d->nodes[tj].type == JSON_TEXT ? bert_json_str(d, tj, NULL) : NULL);
            free(vocab_text);
            setups++;
            continue;
        }
        if (!tok) continue;
        const char *text = bert_json_str(d, bert_json_member(d, c, "text"), "");
        ids.len = spans.len = 0;
        T_CHECK(bert_tokenizer_encode_spans(tok, text, strlen(text), SIZE_MAX, &ids, &spans, NULL) == 0, "encode failed");
        char what[400];
        int specials = bert_json_bool(d, bert_json_member(d, c, "specials"), 0);
        T_CHECK(same_offsets(tok, &ids, &spans, d, bert_json_member(d, c, "ids"), d, bert_json_member(d, c, "offsets"),
                             bert_json_member(d, c, "words"), specials, what, sizeof what),
                "\"%.80s\": %s", text, what);
        cases++;
    }
    T_CHECK(cases >= 100 && setups >= 10, "only %d cases in %d setups", cases, setups);
    bert_tokenizer_free(tok);
    bert_ids_free(&ids);
    bert_spans_free(&spans);
    bert_json_free(d);
}

/* Stopping at max_ids rolls spans back with the ids ([UNK] giving way, a
 * word cut by the limit), and the ids are those of the encode without
 * offsets; a call appending to non-empty arrays keeps them parallel. */
static void limits_and_parity(void)
{
    t_case("offsets: max_ids keeps ids and spans parallel; ids equal the encode without offsets");
    bert_tokenizer *tok = corpus ? make_tokenizer(NULL, "{\"do_lower_case\": true}", NULL) : NULL;
    if (!tok) return;
    bert_ids all = {0}, some = {0}, plain = {0};
    bert_spans all_spans = {0}, some_spans = {0};
    int line = 0, bad = 0;
    for (int t = corpus->nodes[0].first_child; t >= 0; t = corpus->nodes[t].next_sibling, line++) {
        if (line % 7 != 0) continue;
        const char *text = bert_json_str(corpus, t, "");
        size_t len = strlen(text);
        all.len = all_spans.len = plain.len = 0;
        bert_tokenizer_encode_spans(tok, text, len, SIZE_MAX, &all, &all_spans, NULL);
        bert_tokenizer_encode(tok, text, len, SIZE_MAX, &plain, NULL);
        if (plain.len != all.len || (all.len && memcmp(plain.ids, all.ids, all.len * sizeof *all.ids) != 0)) bad++;
        for (size_t k = 0; k <= all.len; k++) {
            /* Two entries already there: the call appends after them. */
            some.len = 0;
            bert_ids_push(&some, 7);
            bert_ids_push(&some, 8);
            if (some_spans.cap < 2) {
                bert_token_span *p = realloc(some_spans.at, 2 * sizeof *p);
                if (!p) break;
                some_spans.at = p;
                some_spans.cap = 2;
            }
            bert_token_span filler = {0, 0, 0, 0, -1};
            some_spans.at[0] = some_spans.at[1] = filler;
            some_spans.len = 2;
            bert_tokenizer_encode_spans(tok, text, len, k + 2, &some, &some_spans, NULL);
            int ok = some.len == k + 2 && some_spans.len == k + 2;
            for (size_t i = 0; ok && i < k; i++)
                ok = some.ids[i + 2] == all.ids[i] && memcmp(&some_spans.at[i + 2], &all_spans.at[i], sizeof *all_spans.at) == 0;
            if (!ok && bad++ < 3) T_CHECK(0, "corpus line %d cut at %zu ids: ids or spans differ", line + 1, k);
        }
    }
    T_CHECK(bad == 0, "%d cuts differ", bad);
    bert_ids_free(&all);
    bert_ids_free(&some);
    bert_ids_free(&plain);
    bert_spans_free(&all_spans);
    bert_spans_free(&some_spans);
    bert_tokenizer_free(tok);
}

static int hex_value(char c) { return c >= 'a' ? c - 'a' + 10 : c - '0'; }

/* Ill-formed UTF-8: the spans count characters as SQLite does, so substr()
 * of the span is the bytes the token was read from, widened to SQLite's
 * characters, and those hold the token's bytes. */
static void ill_formed(void)
{
    t_case("offsets in ill-formed UTF-8: substr(text, start + 1, end - start) is the token's source");
    json_doc *d = t_read_jsonl(GOLDEN "/bytes.jsonl");
    bert_tokenizer *tok = d ? make_tokenizer(NULL, "{\"do_lower_case\": true}", NULL) : NULL;
    bert_tokenizer *raw = d ? make_tokenizer(NULL, "{\"do_lower_case\": true}",
                                             "{\"normalizer\": null, \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"}}")
                            : NULL;
    sqlite3 *db = t_open();
    sqlite3_stmt *st = NULL;
    if (!T_CHECK(tok && raw && db, "setup failed") ||
        !T_CHECK(sqlite3_prepare_v2(db, "SELECT substr(?1, ?2 + 1, ?3 - ?2), length(?1)", -1, &st, NULL) == SQLITE_OK,
                 "%s", sqlite3_errmsg(db)))
        goto done;
    bert_ids ids = {0};
    bert_spans spans = {0};
    int checked = 0;
    for (int c = d->nodes[0].first_child; c >= 0; c = d->nodes[c].next_sibling) {
        const char *hex = bert_json_str(d, bert_json_member(d, c, "hex"), "");
        size_t len = strlen(hex) / 2;
        char *text = malloc(len + 1);
        if (!text) break;
        for (size_t i = 0; i < len; i++) text[i] = (char)(hex_value(hex[2 * i]) * 16 + hex_value(hex[2 * i + 1]));
        /* SQLite's substr and length stop at a NUL; U+0001 is one byte and
         * one character as well, so substr is checked on that copy. */
        char *visible = malloc(len + 1);
        if (!visible) { free(text); break; }
        for (size_t i = 0; i < len; i++) visible[i] = text[i] ? text[i] : '\x01';
        /* Without the normalizer U+FFFD stays in words, so tokens come from
         * the ill-formed bytes themselves. */
        const bert_tokenizer *both[2] = {tok, raw};
        for (int k = 0; k < 2; k++) {
            ids.len = spans.len = 0;
            bert_tokenizer_encode_spans(both[k], text, len, SIZE_MAX, &ids, &spans, NULL);
            for (size_t i = 0; i < spans.len; i++) {
                const bert_token_span *s = &spans.at[i];
                int64_t b0 = s->byte_start, b1 = s->byte_end;
                bert_text_char_bytes(text, len, &b0, &b1);
                sqlite3_reset(st);
                sqlite3_bind_text(st, 1, visible, (int)len, SQLITE_STATIC);
                sqlite3_bind_int64(st, 2, s->start);
                sqlite3_bind_int64(st, 3, s->end);
                if (!T_CHECK(sqlite3_step(st) == SQLITE_ROW, "%s", sqlite3_errmsg(db))) break;
                const void *got = sqlite3_column_blob(st, 0);
                int n = sqlite3_column_bytes(st, 0);
                int ok = s->byte_start >= b0 && s->byte_end <= b1 && n == b1 - b0 &&
                         (n == 0 || memcmp(got, visible + b0, (size_t)n) == 0) && s->end <= sqlite3_column_int64(st, 1) &&
                         s->start < s->end;
                T_CHECK(ok, "%s (normalizer %s), token %zu: chars [%lld, %lld) bytes [%lld, %lld) widened to [%lld, %lld), "
                        "substr gives %d bytes", hex, k ? "null" : "on", i, (long long)s->start, (long long)s->end,
                        (long long)s->byte_start, (long long)s->byte_end, (long long)b0, (long long)b1, n);
                checked++;
            }
        }
        free(text);
        free(visible);
    }
    T_CHECK(checked > 200, "only %d tokens checked", checked);
    bert_ids_free(&ids);
    bert_spans_free(&spans);
done:
    sqlite3_finalize(st);
    if (db) sqlite3_close(db);
    bert_tokenizer_free(tok);
    bert_tokenizer_free(raw);
    bert_json_free(d);
}

/* Random texts of marks, ideographs, special tokens, controls and stray
 * bytes: the spans are well formed whatever the input (ids as without
 * offsets, each span inside the text and non-empty, starts in order, words
 * numbered without gaps), with the normalizer and without. */
static void random_texts(void)
{
    t_case("offsets of random texts (marks, ideographs, specials, ill-formed bytes) are well formed");
    bert_tokenizer *toks[2] = {make_tokenizer(NULL, "{\"do_lower_case\": true}", NULL),
                               make_tokenizer(NULL, "{\"do_lower_case\": false, \"strip_accents\": true}", NULL)};
    if (!toks[0] || !toks[1]) goto done;
    static const char *const parts[] = {"a", "Z", "x", " ", "  ", "\t", "\n", "!", ",", "-", "\xcc\x81", "\xcc\xa3",
                                        "\xf0\x9d\x85\xa5", "\xf0\x9d\x85\xad", "\xc3\xa9", "\xc4\xb0", "\xe4\xb8\xad",
                                        "\xe6\x96\x87", "[MASK]", "[SEP]", "\xc2\xad", "\x01", "\x80", "\xc3", "\xe2\x82",
                                        "\xff", "\xf0\x9f\x8d\x95", "un", "want", "ed", "\xe1\xba\x9e", "\xef\xbf\xbd"};
    const size_t n_parts = sizeof parts / sizeof *parts;
    unsigned long long seed = 12345;
    bert_ids ids = {0}, plain = {0};
    bert_spans spans = {0};
    char text[400];
    int bad = 0, tokens = 0;
    for (int round = 0; round < 4000; round++) {
        size_t len = 0;
        int count = (int)(seed % 40);
        for (int k = 0; k < count; k++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            const char *part = parts[(seed >> 33) % n_parts];
            size_t pl = strlen(part);
            if (len + pl >= sizeof text) break;
            memcpy(text + len, part, pl);
            len += pl;
        }
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        const bert_tokenizer *tok = toks[round & 1];
        ids.len = spans.len = plain.len = 0;
        bert_tokenizer_encode_spans(tok, text, len, SIZE_MAX, &ids, &spans, NULL);
        bert_tokenizer_encode(tok, text, len, SIZE_MAX, &plain, NULL);
        /* SQLite's count of the characters, by its rule, as the reference. */
        long long chars = 0;
        for (size_t i = 0, absorb = 0; i < len; i++)
            if (((unsigned char)text[i] & 0xC0) != 0x80 || !absorb) {
                chars++;
                absorb = (unsigned char)text[i] >= 0xC0;
            }
        int ok = ids.len == plain.len && spans.len == ids.len &&
                 (ids.len == 0 || memcmp(ids.ids, plain.ids, ids.len * sizeof *ids.ids) == 0);
        for (size_t i = 0; ok && i < spans.len; i++) {
            const bert_token_span *s = &spans.at[i];
            ok = s->start >= 0 && s->start < s->end && s->end <= chars && s->byte_start >= 0 &&
                 s->byte_start < s->byte_end && s->byte_end <= (int64_t)len &&
                 (i == 0 ? s->word == 0
                         : s->start >= spans.at[i - 1].start &&
                               (s->word == spans.at[i - 1].word || s->word == spans.at[i - 1].word + 1));
            tokens++;
        }
        if (!ok && bad++ < 3) T_CHECK(0, "round %d, %zu bytes: ids or spans ill formed", round, len);
    }
    T_CHECK(bad == 0 && tokens > 20000, "%d of 4000 texts ill formed, %d tokens", bad, tokens);
    bert_ids_free(&ids);
    bert_ids_free(&plain);
    bert_spans_free(&spans);
done:
    bert_tokenizer_free(toks[0]);
    bert_tokenizer_free(toks[1]);
}

/* ---- bert_tokenize_offsets ------------------------------------------------------- */

/* The bytes of characters [start, end) of a UTF-8 text, counted by code
 * point here (not by SQLite), into out. */
static size_t code_point_slice(const char *s, long long start, long long end, const char **out)
{
    const unsigned char *p = (const unsigned char *)s;
    long long ch = -1;
    size_t i = 0, from = 0, to = 0;
    for (;; i++) {
        if (p[i] == '\0' || (p[i] & 0xC0) != 0x80) {
            ch++;
            if (ch == start) from = i;
            if (ch == end) { to = i; break; }
        }
        if (p[i] == '\0') { to = i; break; }
    }
    *out = s + from;
    return to - from;
}

static void tokenize_offsets_sql(void)
{
    t_case("bert_tokenize_offsets: every corpus line's rows equal the Rust tokenizer's offsets; substr gives each source");
    if (!t_exists(PLAIN "/config.json")) { t_skip("test models not built (make build/models/.done)"); return; }
    json_doc *g = t_read_jsonl(GOLDEN "/offsets_uncased.jsonl"), *gi = t_read_jsonl(GOLDEN "/golden_uncased.jsonl");
    sqlite3 *db = t_open();
    sqlite3_stmt *st = NULL;
    char *loaded = t_query(db, "SELECT bert_load('plain', '" PLAIN "', '{\"truncate\": false}')", (const char *)NULL);
    T_CHECK(strcmp(loaded, "plain") == 0, "bert_load: %s", loaded);
    free(loaded);
    if (!T_CHECK(g && gi && corpus, "cannot read the goldens") ||
        !T_CHECK(sqlite3_prepare_v2(db, "SELECT \"index\", token, id, start, \"end\", word, "
                                        "substr(?1, start + 1, \"end\" - start) FROM bert_tokenize_offsets(?1, 'plain')",
                                    -1, &st, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db)))
        goto done;
    int line = 1, bad = 0, rows = 0;
    for (int t = corpus->nodes[0].first_child, r = t_json_child(g, 0, 0), ri = t_json_child(gi, 0, 1); t >= 0 && r >= 0 && ri >= 0;
         t = corpus->nodes[t].next_sibling, r = g->nodes[r].next_sibling, ri = gi->nodes[ri].next_sibling, line++) {
        const char *text = bert_json_str(corpus, t, "");
        int offsets = bert_json_member(g, r, "offsets"), words = bert_json_member(g, r, "words");
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
        int i = 0, ok = 1;
        for (; sqlite3_step(st) == SQLITE_ROW; i++, rows++) {
            int o = t_json_child(g, offsets, i);
            long long start = at_int(g, o, 0), end = at_int(g, o, 1);
            int w = t_json_child(g, words, i);
            int special = g->nodes[w].type == JSON_NULL;
            ok = ok && sqlite3_column_int64(st, 0) == i && sqlite3_column_int(st, 2) == at_int(gi, ri, i) &&
                 sqlite3_column_int64(st, 3) == start && sqlite3_column_int64(st, 4) == end &&
                 (special ? sqlite3_column_type(st, 5) == SQLITE_NULL
                          : sqlite3_column_int64(st, 5) == bert_json_int(g, w, -1));
            /* The source: substr equals the code points [start, end) of the text. */
            const char *want;
            size_t n = code_point_slice(text, start, end, &want);
            ok = ok && (size_t)sqlite3_column_bytes(st, 6) == n &&
                 memcmp(sqlite3_column_text(st, 6), want, n) == 0 && (special || n > 0);
            if (!ok && bad++ < 3)
                T_CHECK(0, "corpus line %d \"%.60s\", row %d \"%s\": [%lld, %lld), want [%lld, %lld)", line, text, i,
                        (const char *)sqlite3_column_text(st, 1), (long long)sqlite3_column_int64(st, 3),
                        (long long)sqlite3_column_int64(st, 4), start, end);
            if (!ok) break;
        }
        if (ok && i != bert_json_length(g, offsets) && bad++ < 3)
            T_CHECK(0, "corpus line %d: %d rows, want %d", line, i, bert_json_length(g, offsets));
    }
    T_CHECK(bad == 0, "%d corpus lines differ", bad);
    T_CHECK(rows > 15000, "only %d rows", rows);
done:
    sqlite3_finalize(st);
    sqlite3_close(db);
    bert_json_free(g);
    bert_json_free(gi);
}

static void tokenize_offsets_edges(void)
{
    t_case("bert_tokenize_offsets: [CLS]/[SEP] at (0, 0) with NULL word, truncation as bert_tokenize, NULL and errors");
    if (!t_exists(PLAIN "/config.json")) { t_skip("test models not built (make build/models/.done)"); return; }
    sqlite3 *db = t_open();
    t_expect(db, "SELECT bert_load('plain', '" PLAIN "', '{\"max_length\": 6}')", NULL, "plain");
    t_expect(db, "SELECT group_concat(token || ':' || start || '-' || \"end\" || ':' || ifnull(word, 'null'), ' ') "
                 "FROM bert_tokenize_offsets('Hello, naïve Wörld unwanted!')", NULL,
             "[CLS]:0-0:null hello:0-5:0 ,:5-6:1 naive:7-12:2 world:13-18:3 [SEP]:0-0:null");
    /* The same pieces as bert_tokenize, which also cuts at max_length. */
    t_expect(db, "SELECT json_group_array(token) = bert_tokenize('Hello, naïve Wörld unwanted!') "
                 "FROM bert_tokenize_offsets('Hello, naïve Wörld unwanted!')", NULL, "1");
    t_expect(db, "SELECT count(*) FROM bert_tokenize_offsets(NULL)", NULL, "0");
    t_expect(db, "SELECT group_concat(token, ' ') FROM bert_tokenize_offsets('')", NULL, "[CLS] [SEP]");
    t_expect_error(db, "SELECT * FROM bert_tokenize_offsets(x'41')", NULL, "must be TEXT", NULL);
    t_expect_error(db, "SELECT * FROM bert_tokenize_offsets('a', 'nope')", NULL, "nope", NULL);
    sqlite3_close(db);
}

/* ---- bert_chunks ------------------------------------------------------------------ */

/* The text a chunks_golden.jsonl row describes (malloc'd). */
static char *golden_text(const json_doc *g, int r)
{
    int line = (int)bert_json_int(g, bert_json_member(g, r, "corpus"), 0);
    if (line > 0) return strdup(bert_json_str(corpus, t_json_child(corpus, 0, line - 1), ""));
    int joined = bert_json_member(g, r, "joined");
    if (joined < 0) return strdup(bert_json_str(g, bert_json_member(g, r, "text"), ""));
    int from = (int)bert_json_int(g, bert_json_member(g, joined, "from"), 1);
    int to = (int)bert_json_int(g, bert_json_member(g, joined, "to"), 0);
    const char *sep = bert_json_str(g, bert_json_member(g, joined, "sep"), " ");
    size_t n = 1;
    for (int i = from; i <= to; i++) n += strlen(bert_json_str(corpus, t_json_child(corpus, 0, i - 1), "")) + strlen(sep);
    char *s = calloc(n, 1);
    if (!s) return NULL;
    for (int i = from; i <= to; i++) {
        if (i > from) strcat(s, sep);
        strcat(s, bert_json_str(corpus, t_json_child(corpus, 0, i - 1), ""));
    }
    return s;
}

/* The chunker on the tokenizer's spans cuts as the golden script cut the
 * Rust tokenizer's offsets and word ids. */
static void chunker_golden(void)
{
    t_case("chunks: pieces, offsets, word boundaries and overlap equal the golden cut of the Rust tokenizer's offsets");
    json_doc *g = t_read_jsonl(GOLDEN "/chunks_golden.jsonl");
    bert_tokenizer *tok = g && corpus ? make_tokenizer(NULL, "{\"do_lower_case\": true}", NULL) : NULL;
    if (!T_CHECK(tok != NULL, "cannot read " GOLDEN "/chunks_golden.jsonl or the corpus")) goto done;
    bert_ids ids = {0};
    bert_spans spans = {0};
    int rows = 0, bad = 0, chunks = 0, overlapped = 0, cut_inside = 0;
    for (int r = g->nodes[0].first_child; r >= 0; r = g->nodes[r].next_sibling, rows++) {
        char *text = golden_text(g, r);
        if (!text) break;
        ids.len = spans.len = 0;
        bert_tokenizer_encode_spans(tok, text, strlen(text), SIZE_MAX, &ids, &spans, NULL);
        bert_chunks_fit(text, strlen(text), spans.at, spans.len);
        size_t m = (size_t)bert_json_int(g, bert_json_member(g, r, "max_tokens"), 1);
        size_t o = (size_t)bert_json_int(g, bert_json_member(g, r, "overlap"), 0);
        int want = bert_json_member(g, r, "chunks");
        int ok = (long long)spans.len == bert_json_int(g, bert_json_member(g, r, "pieces"), -1);
        bert_chunker ch;
        bert_chunker_init(&ch, spans.at, spans.len, m, o);
        size_t first, end, prev_end = 0;
        int k = 0;
        for (; ok && bert_chunker_next(&ch, &first, &end); k++) {
            int w = t_json_child(g, want, 4 * k);
            ok = w >= 0 && bert_json_int(g, w, -1) == (long long)first &&
                 bert_json_int(g, g->nodes[w].next_sibling, -1) == (long long)end &&
                 bert_json_int(g, t_json_child(g, want, 4 * k + 2), -1) == spans.at[first].start &&
                 bert_json_int(g, t_json_child(g, want, 4 * k + 3), -1) == spans.at[end - 1].end && end - first <= m;
            if (k > 0 && first < prev_end) overlapped++;
            if (end < spans.len && spans.at[end].word - spans.at[end - 1].word == 1) cut_inside++;
            prev_end = end;
            chunks++;
        }
        ok = ok && 4 * k == bert_json_length(g, want);
        if (!ok && bad++ < 3)
            T_CHECK(0, "golden row %d (max_tokens %zu, overlap %zu, \"%.50s\"): chunk %d differs", rows + 1, m, o, text, k);
        free(text);
    }
    T_CHECK(bad == 0, "%d of %d golden rows differ", bad, rows);
    /* The goldens exercise what they claim to. */
    T_CHECK(rows > 1000 && chunks > 5000 && overlapped > 1000 && cut_inside > 10,
            "%d rows, %d chunks, %d overlapping, %d cut inside a word", rows, chunks, overlapped, cut_inside);
    bert_ids_free(&ids);
    bert_spans_free(&spans);
done:
    bert_tokenizer_free(tok);
    bert_json_free(g);
}

/* bert_chunks in SQL on the long golden texts: rows as the golden says,
 * text = substr of the input. */
static void chunks_sql(void)
{
    t_case("bert_chunks: rows of the long golden texts; text is substr(input, start + 1, end - start)");
    if (!t_exists(PLAIN "/config.json")) { t_skip("test models not built (make build/models/.done)"); return; }
    json_doc *g = t_read_jsonl(GOLDEN "/chunks_golden.jsonl");
    sqlite3 *db = t_open();
    sqlite3_stmt *st = NULL;
    t_expect(db, "SELECT bert_load('plain', '" PLAIN "')", NULL, "plain");
    if (!T_CHECK(g && corpus, "cannot read the goldens") ||
        !T_CHECK(sqlite3_prepare_v2(db, "SELECT chunk_index, start, \"end\", tokens, "
                                        "text = substr(?1, start + 1, \"end\" - start) "
                                        "FROM bert_chunks(?1, ?2, ?3, 'plain')", -1, &st, NULL) == SQLITE_OK,
                 "%s", sqlite3_errmsg(db)))
        goto done;
    int checked = 0, bad = 0;
    for (int r = g->nodes[0].first_child; r >= 0; r = g->nodes[r].next_sibling) {
        if (bert_json_member(g, r, "corpus") >= 0 && bert_json_int(g, bert_json_member(g, r, "corpus"), 0) % 50 != 1)
            continue;
        char *text = golden_text(g, r);
        if (!text) break;
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, bert_json_int(g, bert_json_member(g, r, "max_tokens"), 1));
        sqlite3_bind_int64(st, 3, bert_json_int(g, bert_json_member(g, r, "overlap"), 0));
        int want = bert_json_member(g, r, "chunks"), k = 0, ok = 1;
        for (; ok && sqlite3_step(st) == SQLITE_ROW; k++) {
            long long first = at_int(g, want, 4 * k), end = at_int(g, want, 4 * k + 1);
            ok = sqlite3_column_int64(st, 0) == k && sqlite3_column_int64(st, 1) == at_int(g, want, 4 * k + 2) &&
                 sqlite3_column_int64(st, 2) == at_int(g, want, 4 * k + 3) &&
                 sqlite3_column_int64(st, 3) == end - first && sqlite3_column_int(st, 4) == 1;
        }
        ok = ok && 4 * k == bert_json_length(g, want);
        if (!ok && bad++ < 3) T_CHECK(0, "\"%.50s\": chunk %d differs (%s)", text, k, sqlite3_errmsg(db));
        checked++;
        free(text);
    }
    T_CHECK(bad == 0 && checked >= 20, "%d of %d texts differ", bad, checked);
done:
    sqlite3_finalize(st);
    sqlite3_close(db);
    bert_json_free(g);
}

/* A text of `bytes` bytes of varied corpus sentences (malloc'd). */
static char *long_text(size_t bytes)
{
    char *s = malloc(bytes + 1);
    if (!s) return NULL;
    size_t n = 0;
    for (int t = corpus->nodes[0].first_child; n < bytes; t = corpus->nodes[t].next_sibling) {
        if (t < 0) t = corpus->nodes[0].first_child;
        const char *line = bert_json_str(corpus, t, "");
        size_t len = strlen(line);
        /* Whole characters only, and a space between lines. */
        while (len > 0 && n + len + 1 > bytes) {
            len--;
            while (len > 0 && ((unsigned char)line[len] & 0xC0) == 0x80) len--;
        }
        if (len == 0) break;
        memcpy(s + n, line, len);
        n += len;
        s[n++] = ' ';
    }
    s[n] = '\0';
    return s;
}

/* Work counted, not time: twice the text, (about) twice the work and memory. */
static void chunks_linear(void)
{
    t_case("chunks: linear in the text: 2 MB take about twice the pieces looked at and memory of 1 MB");
    bert_tokenizer *tok = corpus ? make_tokenizer(NULL, "{\"do_lower_case\": true}", NULL) : NULL;
    if (!tok) return;
    unsigned long long work[2] = {0, 0};
    size_t pieces[2] = {0, 0}, held[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        char *text = long_text((size_t)(k + 1) << 20);
        bert_ids ids = {0};
        bert_spans spans = {0};
        if (!T_CHECK(text && bert_tokenizer_encode_spans(tok, text, strlen(text), SIZE_MAX, &ids, &spans, NULL) == 0 &&
                         bert_chunks_fit(text, strlen(text), spans.at, spans.len) == 0,
                     "encode failed")) {
            free(text);
            break;
        }
        bert_chunker ch;
        bert_chunker_init(&ch, spans.at, spans.len, 126, 32);
        size_t first, end, covered = 0;
        while (bert_chunker_next(&ch, &first, &end)) covered = end;
        T_CHECK(covered == spans.len, "the chunks end at piece %zu of %zu", covered, spans.len);
        work[k] = ch.work;
        pieces[k] = spans.len;
        held[k] = spans.cap * sizeof *spans.at + ids.cap * sizeof *ids.ids;
        free(text);
        bert_ids_free(&ids);
        bert_spans_free(&spans);
    }
    double w = (double)work[1] / (double)work[0], p = (double)pieces[1] / (double)pieces[0];
    T_CHECK(pieces[0] > 100000 && p > 1.9 && p < 2.1, "pieces %zu and %zu", pieces[0], pieces[1]);
    T_CHECK(w > 1.8 && w < 2.2, "work %llu for 1 MB, %llu for 2 MB: ratio %.2f", work[0], work[1], w);
    /* Each piece looked at a bounded number of times: max_tokens / (max_tokens - overlap) plus the overlap scan. */
    T_CHECK(work[1] < 3 * pieces[1], "%llu pieces looked at for %zu pieces", work[1], pieces[1]);
    /* Memory: the ids and spans, grown geometrically: under 2 x 44 bytes a piece. */
    T_CHECK(held[1] <= 2 * 44 * pieces[1] + 4096, "%zu bytes held for %zu pieces", held[1], pieces[1]);
    bert_tokenizer_free(tok);
}

/* A 10 MB text in SQL: every piece in exactly one chunk when there is no
 * overlap, the last chunk ends at the text's last piece. */
static void chunks_ten_megabytes(void)
{
    t_case("bert_chunks: a 10 MB text, every piece in one chunk, the last chunk at the end of the text");
    if (!t_exists(PLAIN "/config.json")) { t_skip("test models not built (make build/models/.done)"); return; }
    char *text = corpus ? long_text((size_t)10 << 20) : NULL;
    sqlite3 *db = t_open();
    t_expect(db, "SELECT bert_load('plain', '" PLAIN "')", NULL, "plain");
    t_expect(db, "SELECT bert_load('whole', '" PLAIN "', '{\"truncate\": false}')", NULL, "whole");
    if (T_CHECK(text != NULL, "out of memory")) {
        /* The text ends with a space after a whole corpus line or part of one. */
        char *pieces = t_query(db, "SELECT count(*) - 2 FROM bert_tokenize_offsets(?1, 'whole')", text, (const char *)NULL);
        char *sums = t_query(db, "SELECT sum(tokens) || ' ' || max(tokens) || ' ' || (max(\"end\") = length(rtrim(?1))) "
                                 "FROM bert_chunks(?1, 510, 0, 'plain')", text, (const char *)NULL);
        char want[96];
        snprintf(want, sizeof want, "%s 510 1", pieces);
        T_CHECK(strcmp(sums, want) == 0, "sum(tokens), max(tokens), end at the text's end: %s; want %s", sums, want);
        T_CHECK(atol(pieces) > 1000000, "%s pieces", pieces);
        free(pieces);
        free(sums);
    }
    free(text);
    sqlite3_close(db);
}

static void chunks_arguments(void)
{
    t_case("bert_chunks: defaults, NULL text, word boundaries, and bad arguments as SQL errors naming the fix");
    if (!t_exists(PLAIN "/config.json")) { t_skip("test models not built (make build/models/.done)"); return; }
    sqlite3 *db = t_open();
    t_expect(db, "SELECT bert_load('plain', '" PLAIN "', '{\"max_length\": 10}')", NULL, "plain");
    t_expect(db, "SELECT count(*) FROM bert_chunks(NULL)", NULL, "0");
    t_expect(db, "SELECT count(*) FROM bert_chunks(NULL, 4, 1)", NULL, "0");
    t_expect(db, "SELECT count(*) FROM bert_chunks('')", NULL, "0");
    t_expect(db, "SELECT count(*) FROM bert_chunks('  \t ')", NULL, "0");
    /* Default max_tokens = max_length - 2 = 8, overlap 0. */
    t_expect(db, "SELECT group_concat(tokens, ',') FROM bert_chunks('one two three four five six seven eight nine ten')",
             NULL, "8,2");
    t_expect(db, "SELECT group_concat(tokens, ',') FROM bert_chunks('one two three four five six seven eight nine ten', NULL, NULL)",
             NULL, "8,2");
    /* Whole words: "unaffable" is una ##ffa ##ble, so "an una ##ffa" is no chunk. */
    t_expect(db, "SELECT group_concat(text, '|') FROM bert_chunks('an unaffable dog', 3)", NULL, "an|unaffable|dog");
    /* A word longer than max_tokens is cut between pieces; overlap inside it. */
    t_expect(db, "SELECT group_concat(text || ':' || tokens, '|') FROM bert_chunks('unaffable', 2, 1)", NULL,
             "unaffa:2|ffable:2");
    /* Punctuation is a word of its own: a chunk may start with it. */
    t_expect(db, "SELECT group_concat(text, '|') FROM bert_chunks('Hello there, world.', 2)", NULL, "Hello there|, world|.");
    t_expect(db, "SELECT group_concat(start || '-' || \"end\", ' ') FROM bert_chunks('  Café  au lait ', 2)", NULL,
             "2-10 11-15");
    t_expect_error(db, "SELECT * FROM bert_chunks('a', 0)", NULL, "max_tokens is 0", "positive INTEGER", NULL);
    t_expect_error(db, "SELECT * FROM bert_chunks('a', -3)", NULL, "max_tokens is -3", NULL);
    t_expect_error(db, "SELECT * FROM bert_chunks('a', 9)", NULL, "max_tokens 9", "at most 8", NULL);
    t_expect_error(db, "SELECT * FROM bert_chunks('a', 2.5)", NULL, "max_tokens must be", "INTEGER", NULL);
    t_expect_error(db, "SELECT * FROM bert_chunks('a', 'plain')", NULL, "model name goes last", NULL);
    t_expect_error(db, "SELECT * FROM bert_chunks('a', 4, 4)", NULL, "overlap 4", "0 to max_tokens - 1 (3)", NULL);
    t_expect_error(db, "SELECT * FROM bert_chunks('a', 4, -1)", NULL, "overlap -1", NULL);
    t_expect_error(db, "SELECT * FROM bert_chunks('a', 4, 'plain')", NULL, "model name goes last", NULL);
    t_expect_error(db, "SELECT * FROM bert_chunks('a', NULL, 8)", NULL, "overlap 8", "(7)", NULL);
    t_expect_error(db, "SELECT * FROM bert_chunks(x'41')", NULL, "must be TEXT", NULL);
    t_expect_error(db, "SELECT * FROM bert_chunks(42)", NULL, "must be TEXT", NULL);
    t_expect_error(db, "SELECT * FROM bert_chunks('a', 4, 0, 'nope')", NULL, "nope", NULL);
    sqlite3_close(db);
}

void suite_offsets(void)
{
    corpus = t_read_jsonl(GOLDEN "/corpus.jsonl");
    corpus_offsets("uncased", "{\"do_lower_case\": true, \"strip_accents\": null}");
    corpus_offsets("cased", "{\"do_lower_case\": false, \"strip_accents\": null}");
    corpus_offsets("cased_strip", "{\"do_lower_case\": false, \"strip_accents\": true}");
    corpus_offsets("uncased_nostrip", "{\"do_lower_case\": true, \"strip_accents\": false}");
    case_offsets();
    limits_and_parity();
    ill_formed();
    random_texts();
    tokenize_offsets_sql();
    tokenize_offsets_edges();
    chunker_golden();
    chunks_sql();
    chunks_linear();
    chunks_ten_megabytes();
    chunks_arguments();
    bert_json_free(corpus);
    corpus = NULL;
}
