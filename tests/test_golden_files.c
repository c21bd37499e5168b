/*
 * test_golden_files.c - see golden_files.h.
 */
#include "golden_files.h"
#include "test.h"
#include "../ext/encoder/encoder.h"
#include "../ext/models/model_dir.h"

#include <math.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MODELS_DIR "build/models/"
#define MAX_REPORTS 4

json_doc *t_read_jsonl(const char *path)
{
    size_t len = 0;
    char *text = t_read_file(path, &len);
    if (!text) return NULL;
    char *arr = malloc(len + 3);
    if (!arr) { free(text); return NULL; }
    size_t n = 0;
    arr[n++] = '[';
    for (char *line = text, *end; *line; line = end + (*end != '\0')) {
        end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        if (end == line) continue;
        if (n > 1) arr[n++] = ',';
        memcpy(arr + n, line, (size_t)(end - line));
        n += (size_t)(end - line);
    }
    arr[n++] = ']';
    free(text);
    json_doc *doc = NULL;
    char *err = NULL;
    if (bert_json_parse(arr, n, &doc, &err) != 0) {
        printf("  cannot parse %s: %s\n", path, err ? err : "?");
        free(err);
        doc = NULL;
    }
    free(arr);
    return doc;
}

int t_json_child(const json_doc *d, int node, int i)
{
    int c = node >= 0 ? d->nodes[node].first_child : -1;
    while (c >= 0 && i-- > 0) c = d->nodes[c].next_sibling;
    return c;
}

const char *t_member_str(const json_doc *d, int node, const char *key)
{
    return bert_json_str(d, bert_json_member(d, node, key), "");
}

int t_each_golden_line(const char *path, void (*fn)(void *ctx, const json_doc *line, sqlite3 *db), void *ctx,
                       sqlite3 *db)
{
    char *text = t_read_file(path, NULL);
    if (!T_CHECK(text != NULL, "cannot read %s", path)) return -1;
    int lines = 0;
    for (char *line = text, *end; *line; line = end) {
        end = strchr(line, '\n');
        end = end ? end + 1 : line + strlen(line);
        size_t len = (size_t)(end - line);
        if (len <= 1) continue;
        /* Under emulation (BERT_TEST_LIGHT), every third line: each model
         * still has some of each kind. */
        if (lines++ % (t_light() ? 3 : 1) != 0) continue;
        json_doc *d = NULL;
        char *err = NULL;
        if (T_CHECK(bert_json_parse(line, len, &d, &err) == 0, "%s: %s", path, err ? err : "unparsable line"))
            fn(ctx, d, db);
        free(err);
        bert_json_free(d);
    }
    free(text);
    return lines;
}

json_doc *t_golden_manifest(const char *path)
{
    json_doc *d = NULL;
    char *err = NULL;
    int found = bert_json_parse_file(path, &d, &err);
    if (!T_CHECK(found == 1, "%s: %s", path, found == 0 ? "missing" : err ? err : "out of memory"))
        d = NULL;
    free(err);
    return d;
}

int t_golden_model_matches(const json_doc *manifest, int node)
{
    return t_golden_model_file(manifest->nodes[node].key,
                               bert_json_int(manifest, bert_json_member(manifest, node, "safetensors_bytes"), -1),
                               t_member_str(manifest, node, "safetensors_checksum"));
}

golden_model *t_golden_find(golden_model *first, int n, size_t size, const char *name)
{
    for (int i = 0; i < n; i++) {
        golden_model *m = (golden_model *)((char *)first + (size_t)i * size);
        if (strcmp(m->name, name) == 0) return m;
    }
    return NULL;
}

int t_golden_models(const char *path, golden_model *first, int max, size_t size,
                    void (*setup)(void *ctx, const json_doc *manifest, int node, golden_model *m, sqlite3 *db),
                    void *ctx, sqlite3 *db)
{
    json_doc *d = t_golden_manifest(path);
    if (!d) return 0;
    int n = 0;
    for (int c = d->nodes[0].first_child; c >= 0 && n < max; c = d->nodes[c].next_sibling) {
        golden_model *m = (golden_model *)((char *)first + (size_t)n++ * size);
        memset(m, 0, size);
        snprintf(m->name, sizeof m->name, "%s", d->nodes[c].key);
        setup(ctx, d, c, m, db);
    }
    bert_json_free(d);
    return n;
}

typedef struct {
    golden_model *first;
    int n;
    size_t size;
    void (*fn)(void *ctx, golden_model *m, const json_doc *line, sqlite3 *db);
    void *ctx;
} model_lines;

static void model_line(void *ctx, const json_doc *line, sqlite3 *db)
{
    model_lines *ml = ctx;
    golden_model *m = t_golden_find(ml->first, ml->n, ml->size, t_member_str(line, 0, "model"));
    if (m && m->usable) ml->fn(ml->ctx, m, line, db);
}

int t_each_model_line(const char *path, golden_model *first, int n, size_t size,
                      void (*fn)(void *ctx, golden_model *m, const json_doc *line, sqlite3 *db), void *ctx,
                      sqlite3 *db)
{
    model_lines ml = {first, n, size, fn, ctx};
    return t_each_golden_line(path, model_line, &ml, db);
}

void t_golden_register(void *ctx, const json_doc *manifest, int node, golden_model *m, sqlite3 *db)
{
    (void)ctx;
    if (!t_golden_model_matches(manifest, node)) return;
    char path[256];
    snprintf(path, sizeof path, MODELS_DIR "%s", m->name);
    char *got = t_query(db, "SELECT bert_load(?1, ?2)", m->name, path, NULL);
    m->usable = T_CHECK(strcmp(got, m->name) == 0, "bert_load('%s'): %s", m->name, got);
    free(got);
}

int t_golden_check(golden_model *m, int ok, const char *what, const char *text)
{
    if (ok) return T_CHECK(1, "%s", what);   /* counted, so the case shows it checked something */
    if (m->failures++ < MAX_REPORTS) T_CHECK(0, "%s: %s, for \"%.60s\"", m->name, what, text);
    return 0;
}

/* build/models/MODEL/config.json without `label` and the comma before it,
 * written to dir with links to the model's other files.  0, or -1. */
static int mismatched_model(const char *dir, const char *model, const char *label)
{
    static const char *const files[] = {"model.safetensors", "vocab.txt", "tokenizer_config.json"};
    char path[512], target[512];
    char *cwd = getcwd(NULL, 0);
    int ok = cwd != NULL;
    for (size_t i = 0; ok && i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        snprintf(target, sizeof target, "%s/" MODELS_DIR "%s/%s", cwd, model, files[i]);
        ok = symlink(target, path) == 0;
    }
    free(cwd);
    snprintf(path, sizeof path, MODELS_DIR "%s/config.json", model);
    char *config = ok ? t_read_file(path, NULL) : NULL;
    char *at = config ? strstr(config, label) : NULL;
    ok = at != NULL;
    if (ok) {
        char *comma = at;
        while (comma > config && *comma != ',') comma--;
        memmove(comma, at + strlen(label), strlen(at + strlen(label)) + 1);
        snprintf(path, sizeof path, "%s/config.json", dir);
        FILE *f = fopen(path, "w");
        ok = f && fputs(config, f) >= 0;
        if (f) ok &= fclose(f) == 0;
    }
    free(config);
    return ok ? 0 : -1;
}

void t_head_shape_mismatch(sqlite3 *db, const char *model, const char *label, const char *sql, ...)
{
    char dir[] = "/tmp/bert-mismatch-XXXXXX";
    if (!T_CHECK(mkdtemp(dir) != NULL, "cannot make a temporary directory")) return;
    if (T_CHECK(mismatched_model(dir, model, label) == 0, "cannot prepare the mismatched %s in %s", model, dir)) {
        char *q = sqlite3_mprintf(sql, dir);
        va_list fragments;
        va_start(fragments, sql);
        if (T_CHECK(q != NULL, "out of memory")) t_expect_errorv(db, q, NULL, fragments);
        va_end(fragments);
        sqlite3_free(q);
    }
    static const char *const files[] = {"model.safetensors", "vocab.txt", "tokenizer_config.json", "config.json"};
    char path[512];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

int t_golden_encode_line(const json_doc *d, int line, const char *dir, double *worst, char *why, size_t why_size)
{
    int ids_node = bert_json_member(d, line, "encode"), mean = bert_json_member(d, line, "mean");
    int n = bert_json_length(d, ids_node);
    char path[256];
    snprintf(path, sizeof path, MODELS_DIR "%s", dir);
    bert_model *m = NULL;
    bert_scratch *s = bert_scratch_new();
    int32_t *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof *ids);
    char *err = NULL;
    int ok = 0;
    if (!s || !ids || bert_model_load(t_dir(path), &m, &err) != 0) {
        snprintf(why, why_size, "cannot load %s: %s", path, err ? err : "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) ids[i] = (int32_t)bert_json_int(d, t_json_child(d, ids_node, i), -1);
    const float *h = bert_encode(m, s, ids, NULL, &n, 1, NULL, NULL, &err);
    if (!h) {
        snprintf(why, why_size, "bert_encode: %s", err ? err : "?");
        goto done;
    }
    const int hidden = m->cfg.hidden_size;
    if (bert_json_length(d, mean) != hidden) {
        snprintf(why, why_size, "the golden mean has %d values, the model %d", bert_json_length(d, mean), hidden);
        goto done;
    }
    ok = 1;
    for (int j = 0; j < hidden; j++) {
        double sum = 0;
        for (int t = 0; t < n; t++) sum += h[(size_t)t * hidden + j];
        double diff = fabs(sum / n - d->nodes[t_json_child(d, mean, j)].number);
        if (diff > *worst) *worst = diff;
        if (diff > GOLDEN_TOL && ok) {
            snprintf(why, why_size, "%d tokens: hidden state column %d differs by %.3g", n, j, diff);
            ok = 0;
        }
    }
done:
    free(err);
    free(ids);
    bert_model_free(m);
    bert_scratch_free(s);
    return ok;
}
