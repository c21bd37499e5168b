/*
 * bench_tokenizer.c - tokenizer throughput: MB of UTF-8 text per second.
 *
 *   cc -O2 -DSQLITE_CORE -o build/bench_tokenizer tests/bench/bench_tokenizer.c \
 *      ext/tokenizer/tokenizer.c ext/tokenizer/vocab.c ext/base/unicode_text.c ext/base/json.c ext/base/error.c \
 *      -lsqlite3 -lutf8proc
 *   build/bench_tokenizer [model_dir [repeats]]
 *
 * Runs from the project root.  Tokenizes tests/tokenizer/corpus.jsonl (many
 * scripts, marks and symbols) and tests/bench/sentences.txt (plain English)
 * `repeats` times each (default 200) with the model directory's tokenizer
 * (default: the bert-base-uncased fixture) and prints the rates.
 */
#define _POSIX_C_SOURCE 200809L
#include "../../ext/base/json.h"
#include "../../ext/tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    char **text;
    size_t *len;
    size_t n, bytes;
} texts;

static int add_text(texts *t, const char *s, size_t len)
{
    char **text = realloc(t->text, (t->n + 1) * sizeof *text);
    if (!text) return -1;
    t->text = text;
    size_t *lens = realloc(t->len, (t->n + 1) * sizeof *lens);
    if (!lens) return -1;
    t->len = lens;
    if (!(t->text[t->n] = malloc(len + 1))) return -1;
    memcpy(t->text[t->n], s, len);
    t->text[t->n][len] = '\0';
    t->len[t->n++] = len;
    t->bytes += len;
    return 0;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
    fclose(f);
    if (buf) { buf[n] = '\0'; *len = (size_t)n; }
    return buf;
}

/* One text a line; a .jsonl file holds one JSON string a line. */
static int read_texts(const char *path, texts *t)
{
    size_t len;
    char *data = read_file(path, &len);
    if (!data) return -1;
    int jsonl = strstr(path, ".jsonl") != NULL;
    for (char *line = data, *end; *line; line = end + (*end != '\0')) {
        end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        if (end == line) continue;
        if (!jsonl) {
            if (add_text(t, line, (size_t)(end - line)) != 0) { free(data); return -1; }
            continue;
        }
        json_doc *doc = NULL;
        char *err = NULL;
        if (bert_json_parse(line, (size_t)(end - line), &doc, &err) != 0) {
            fprintf(stderr, "%s: %s\n", path, err ? err : "out of memory");
            free(err);
            free(data);
            return -1;
        }
        const char *s = bert_json_str(doc, 0, "");
        int rc = add_text(t, s, strlen(s));
        bert_json_free(doc);
        if (rc != 0) { free(data); return -1; }
    }
    free(data);
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void bench(const bert_tokenizer *tok, const char *name, const texts *t, int repeats)
{
    bert_ids ids = {0};
    /* Working memory kept from call to call, as the extension keeps it per
     * registered model (and with it BPE's and Unigram's word cache). */
    bert_encode_buffers keep = {0};
    size_t tokens = 0;
    double start = now();
    for (int r = 0; r < repeats; r++) {
        for (size_t i = 0; i < t->n; i++) {
            ids.len = 0;
            if (bert_tokenizer_encode(tok, t->text[i], t->len[i], SIZE_MAX, &ids, &keep) != 0) {
                fprintf(stderr, "out of memory\n");
                exit(1);
            }
            tokens += ids.len;
        }
    }
    double secs = now() - start;
    double mb = (double)t->bytes * repeats / 1e6;
    printf("%-34s %6zu texts %8.1f KB x %d: %7.1f MB/s, %6.2f M tokens/s, %5.2f us/text\n", name, t->n,
           t->bytes / 1e3, repeats, mb / secs, tokens / secs / 1e6, secs * 1e6 / ((double)t->n * repeats));
    bert_ids_free(&ids);
    bert_encode_buffers_free(&keep);
}

static void free_texts(texts *t)
{
    for (size_t i = 0; i < t->n; i++) free(t->text[i]);
    free(t->text);
    free(t->len);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "tests/fixtures/bert-base-uncased";
    int repeats = argc > 2 ? atoi(argv[2]) : 200;
    if (repeats < 1) repeats = 1;
    bert_tokenizer *tok = NULL;
    char *err = NULL;
    double t0 = now();
    bert_model_files *model_files = bert_model_files_new(dir);
    int loaded = model_files ? bert_tokenizer_load(model_files, &tok, &err) : -1;
    bert_model_files_free(model_files);
    if (loaded != 0) {
        fprintf(stderr, "%s\n", err ? err : "out of memory");
        free(err);
        return 1;
    }
    printf("load %s: %.1f ms\n", dir, (now() - t0) * 1e3);
    static const char *const files[] = {"tests/tokenizer/corpus.jsonl", "tests/bench/sentences.txt"};
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        texts t = {0};
        if (read_texts(files[f], &t) != 0) {
            fprintf(stderr, "cannot read %s (run from the project root)\n", files[f]);
        } else {
            bench(tok, files[f], &t, repeats);
        }
        free_texts(&t);
    }
    bert_tokenizer_free(tok);
    return 0;
}
