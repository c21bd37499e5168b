/*
 * fuzz_tokenizer.c - the tokenizer on arbitrary bytes.
 *
 * Input: one byte choosing a tokenizer configuration ('0' + n), one byte
 * giving an id limit (1 to 64), then the text.  The configurations cover
 * what the loader accepts: uncased and cased, accents kept or stripped,
 * Chinese characters spaced or not, a tokenizer.json with raw and normalized
 * added tokens and short words, no normalizer at all, and a tiny vocabulary
 * where most words fall apart into pieces or [UNK]; and the generated
 * tokenizers of the other families (tests/fixtures/bpe-bytelevel,
 * unigram-xlmr with a precompiled charsmap, unigram-bytes with byte
 * fallback).
 *
 * Checked: every id is inside the vocabulary and has a token; encoding with
 * a limit gives exactly the first ids of the unlimited encoding (what
 * truncation relies on); decode gives a string, for these ids and for
 * arbitrary ones.
 */
#include "../../ext/tokenizer/tokenizer.h"
#include "fuzz_util.h"

enum { N_VARIANTS = 10 };

typedef struct {
    bert_tokenizer *tok[N_VARIANTS];
} tokenizers;

static const char TOKENIZER_JSON[] =
    "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null,\n"
    " \"added_tokens\": [\n"
    "  {\"id\": 0, \"content\": \"[PAD]\", \"special\": true, \"normalized\": false},\n"
    "  {\"id\": 100, \"content\": \"[UNK]\", \"special\": true, \"normalized\": false},\n"
    "  {\"id\": 101, \"content\": \"[CLS]\", \"special\": true, \"normalized\": false},\n"
    "  {\"id\": 102, \"content\": \"[SEP]\", \"special\": true, \"normalized\": false},\n"
    "  {\"id\": 103, \"content\": \"[MASK]\", \"special\": true, \"normalized\": false},\n"
    "  {\"id\": 30522, \"content\": \"Hello World\", \"special\": false, \"normalized\": true},\n"
    "  {\"id\": 30523, \"content\": \"\\u00c9T\\u00c9\", \"special\": true, \"normalized\": true},\n"
    "  {\"id\": 30524, \"content\": \"<x>\", \"special\": false, \"normalized\": false},\n"
    "  {\"id\": 30525, \"content\": \"<x>>\", \"special\": false, \"normalized\": false},\n"
    "  {\"id\": 30526, \"content\": \"\\u4e2d\\u6587\", \"special\": false, \"normalized\": true}\n"
    " ],\n"
    " \"normalizer\": {\"type\": \"BertNormalizer\", \"clean_text\": false, \"handle_chinese_chars\": true,\n"
    "                \"strip_accents\": null, \"lowercase\": true},\n"
    " \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"},\n"
    " \"post_processor\": null,\n"
    " \"decoder\": {\"type\": \"WordPiece\", \"prefix\": \"##\", \"cleanup\": false},\n"
    " \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"continuing_subword_prefix\": \"##\",\n"
    "           \"max_input_chars_per_word\": 12, \"vocab\": {}}}\n";

static const char RAW_JSON[] =
    "{\"normalizer\": null, \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"}, \"decoder\": null,\n"
    " \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"continuing_subword_prefix\": \"@@\"}}\n";

/* The tokenizer of directory `dir`, or a stop naming it. */
static void load_dir(const char *dir, bert_tokenizer **out)
{
    char *err = NULL;
    bert_model_files *files = bert_model_files_new(dir);
    if (!files) fuzz_setup_failed("out of memory", NULL);
    int rc = bert_tokenizer_load(files, out, &err);
    bert_model_files_free(files);
    if (rc != 0) fuzz_setup_failed(dir, err);
}

static void load_variant(tokenizers *t, int i, const char *vocab, const char *file, const char *json)
{
    char dir[256], name[16];
    snprintf(name, sizeof name, "v%d", i);
    fuzz_scratch(dir, sizeof dir, "tokenizer", name);
    fuzz_copy(vocab, dir, "vocab.txt");
    char path[512];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    remove(path);
    if (file) fuzz_write_text(dir, file, json);
    load_dir(dir, &t->tok[i]);
}

static tokenizers *setup(void)
{
    tokenizers *t = calloc(1, sizeof *t);
    if (!t) fuzz_setup_failed("out of memory", NULL);
    load_variant(t, 0, FUZZ_VOCAB, NULL, NULL);
    load_variant(t, 1, FUZZ_VOCAB, "tokenizer_config.json", "{\"do_lower_case\": false}");
    load_variant(t, 2, FUZZ_VOCAB, "tokenizer_config.json",
                 "{\"do_lower_case\": true, \"strip_accents\": false, \"tokenize_chinese_chars\": false}");
    load_variant(t, 3, FUZZ_VOCAB, "tokenizer_config.json",
                 "{\"do_lower_case\": false, \"strip_accents\": true, \"clean_up_tokenization_spaces\": false,"
                 " \"additional_special_tokens\": [\"[unused5]\", {\"content\": \"[unused7]\"}]}");
    load_variant(t, 4, FUZZ_VOCAB, "tokenizer.json", TOKENIZER_JSON);
    load_variant(t, 5, FUZZ_TINY_MODEL "/vocab.txt", NULL, NULL);
    load_variant(t, 6, FUZZ_VOCAB, "tokenizer.json", RAW_JSON);
    static const char *const families[] = {"tests/fixtures/bpe-bytelevel", "tests/fixtures/unigram-xlmr",
                                           "tests/fixtures/unigram-bytes"};
    for (int i = 0; i < 3; i++) load_dir(families[i], &t->tok[7 + i]);
    return t;
}

/* Kept for the life of the process: libFuzzer calls the target repeatedly
 * and the tokenizers are immutable once loaded. */
static tokenizers *loaded;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    loaded = setup();
    return 0;
}

static void check_decode(const bert_tokenizer *tok, const int32_t *ids, size_t n)
{
    for (int skip = 0; skip < 2; skip++) {
        char *s = bert_tokenizer_decode(tok, ids, n, skip);
        if (!s) fuzz_die("decode of %zu ids returned NULL", n);
        free(s);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    int variant = (uint8_t)(data[0] - '0') % N_VARIANTS;
    const bert_tokenizer *tok = loaded->tok[variant];
    /* A byte-level or Metaspace token can span nothing in the Rust library
     * (a 'Ġ' whose space trim_offsets took, a '▁' inserted before the
     * text); a WordPiece token always spans something. */
    int empty_ok = variant >= 7;
    size_t limit = (size_t)(data[1] % 64) + 1;
    const char *text = (const char *)data + 2;
    size_t len = size - 2;

    bert_ids all = {0}, some = {0};
    if (bert_tokenizer_encode(tok, text, len, SIZE_MAX, &all, NULL) != 0) fuzz_die("encode failed on %zu bytes", len);
    size_t vocab = bert_tokenizer_vocab_size(tok);
    for (size_t i = 0; i < all.len; i++) {
        if (all.ids[i] < 0 || (size_t)all.ids[i] >= vocab)
            fuzz_die("id %d at %zu is outside the vocabulary of %zu", (int)all.ids[i], i, vocab);
        if (!bert_tokenizer_token(tok, all.ids[i])) fuzz_die("id %d has no token", (int)all.ids[i]);
    }

    if (bert_tokenizer_encode(tok, text, len, limit, &some, NULL) != 0) fuzz_die("encode_max failed");
    size_t want = all.len < limit ? all.len : limit;
    if (some.len != want || (want && memcmp(some.ids, all.ids, want * sizeof *all.ids) != 0)) {
        size_t at = 0;
        while (at < some.len && at < want && some.ids[at] == all.ids[at]) at++;
        fuzz_die("encode_max(%zu) gave %zu ids, not the first %zu of %zu; they differ from position %zu",
                 limit, some.len, want, all.len, at);
    }

    /* With offsets: the same ids, one span each, inside the text, in order. */
    bert_ids with = {0};
    bert_spans spans = {0};
    if (bert_tokenizer_encode_spans(tok, text, len, SIZE_MAX, &with, &spans, NULL) != 0) fuzz_die("encode_spans failed");
    if (with.len != all.len || spans.len != all.len || (all.len && memcmp(with.ids, all.ids, all.len * sizeof *all.ids) != 0))
        fuzz_die("the encode with offsets gave %zu ids and %zu spans, not the %zu ids without", with.len, spans.len, all.len);
    int64_t last_start = 0;   /* of the last span that is not empty (an empty one may sit after it, as in the Rust library) */
    for (size_t i = 0; i < spans.len; i++) {
        const bert_token_span *sp = &spans.at[i];
        int empty = sp->byte_start == sp->byte_end || sp->start == sp->end;
        if (sp->byte_start < 0 || sp->byte_start > sp->byte_end || sp->byte_end > (int64_t)len || sp->start < 0 ||
            sp->start > sp->end || sp->end > (int64_t)len || (empty && !empty_ok) || (!empty && sp->start < last_start))
            fuzz_die("span %zu: characters [%lld, %lld), bytes [%lld, %lld) of %zu bytes", i, (long long)sp->start,
                     (long long)sp->end, (long long)sp->byte_start, (long long)sp->byte_end, len);
        if (!empty) last_start = sp->start;
    }
    bert_ids_free(&with);
    bert_spans_free(&spans);

    check_decode(tok, all.ids, all.len);
    /* Arbitrary ids, in range or not: decode skips what it does not know. */
    size_t n = len / sizeof(int32_t);
    int32_t *raw = malloc((n ? n : 1) * sizeof *raw);
    if (!raw) fuzz_die("out of memory");
    if (n) memcpy(raw, text, n * sizeof *raw);
    check_decode(tok, raw, n);
    free(raw);
    bert_ids_free(&all);
    bert_ids_free(&some);
    return 0;
}
