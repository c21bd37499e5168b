/*
 * bench_embed.c - times the extension the way a user calls it: through
 * SQLite (the system libsqlite3), with bert.so loaded as a run-time
 * extension, first row by row with bert_embed(), then all texts in one
 * bert_embed_each() call.
 *
 *   bench_embed EXTENSION MODEL_DIR SENTENCES LABEL OUTDIR [LIMIT]
 *
 * Writes OUTDIR/LABEL.ids.json (every sentence's token ids, [CLS] and
 * [SEP] included: the peers encode exactly these) and OUTDIR/LABEL.ours.f32
 * (the batched embeddings, float32, sentence after sentence: the peers
 * compare theirs against them), and prints "RESULT ..." lines for
 * tests/bench/report.py.  The thread count is the extension's default
 * (OPENBLAS_NUM_THREADS, else every core) unless the environment variable
 * BENCH_LOAD_OPTIONS gives bert_load options such as {"threads": 1}.
 *
 * With a `precision` among those options other than float32, the batched
 * embeddings go to OUTDIR/LABEL.PRECISION.f32 instead, and when
 * BENCH_REFERENCE names the float32 run's LABEL.ours.f32, every embedding
 * (row by row and batched) is compared with it: a "CHECK ... min_cos=
 * mean_cos=" line.  Every run prints "MEMORY ... growth_kb=": the
 * process's resident set (VmRSS) after the first embeddings minus before,
 * what holding the model's weights costs.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    char **items;
    int n;
} lines;

#include "bench_clock.h"

static void lines_free(lines *l)
{
    for (int i = 0; i < l->n; i++) free(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

/* One text a line; blank lines and lines starting with '#' are skipped. */
static int read_lines(const char *path, int limit, lines *out)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "bench_embed: cannot open %s: give the sentence list (one text a line)\n", path);
        return -1;
    }
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len;
    int cap_items = 0, rc = 0;
    while ((limit <= 0 || out->n < limit) && (len = getline(&buf, &cap, f)) >= 0) {
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) buf[--len] = 0;
        if (len == 0 || buf[0] == '#') continue;
        if (out->n == cap_items) {
            int grow = cap_items ? 2 * cap_items : 256;
            char **items = realloc(out->items, (size_t)grow * sizeof *items);
            if (!items) { rc = -1; break; }
            out->items = items;
            cap_items = grow;
        }
        if (!(out->items[out->n] = strdup(buf))) { rc = -1; break; }
        out->n++;
    }
    if (rc != 0) fprintf(stderr, "bench_embed: out of memory reading %s\n", path);
    free(buf);
    fclose(f);
    if (rc == 0 && out->n == 0) {
        fprintf(stderr, "bench_embed: %s holds no text\n", path);
        rc = -1;
    }
    return rc;
}

static int fail(sqlite3 *db, const char *what)
{
    fprintf(stderr, "bench_embed: %s: %s\n", what, sqlite3_errmsg(db));
    return -1;
}

/* Runs a one-row query with one text parameter and copies its text result. */
static char *query_text(sqlite3 *db, const char *sql, const char *arg)
{
    sqlite3_stmt *st = NULL;
    char *out = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) { fail(db, sql); return NULL; }
    if (arg) sqlite3_bind_text(st, 1, arg, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
        out = strdup((const char *)sqlite3_column_text(st, 0));
        if (!out) fprintf(stderr, "bench_embed: out of memory\n");
    } else {
        fail(db, sql);
    }
    sqlite3_finalize(st);
    return out;
}

/* Token ids of every sentence, written as a JSON array of arrays; returns
 * the number of tokens, or -1. */
static long write_ids(sqlite3 *db, const lines *s, const char *path, double *seconds)
{
    FILE *f = fopen(path, "w");
    if (!f) { fprintf(stderr, "bench_embed: cannot write %s\n", path); return -1; }
    sqlite3_stmt *st = NULL;
    long tokens = 0;
    if (sqlite3_prepare_v2(db, "SELECT bert_token_ids(?1, 'bench')", -1, &st, NULL) != SQLITE_OK) {
        fail(db, "preparing bert_token_ids");
        fclose(f);
        return -1;
    }
    /* The first call reads vocab.txt: keep that out of the timing. */
    sqlite3_bind_text(st, 1, s->items[0], -1, SQLITE_STATIC);
    sqlite3_step(st);
    sqlite3_reset(st);
    double t0 = now();
    fputc('[', f);
    for (int i = 0; i < s->n; i++) {
        sqlite3_bind_text(st, 1, s->items[i], -1, SQLITE_STATIC);
        const char *ids = sqlite3_step(st) == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
        if (!ids) { fail(db, "bert_token_ids"); tokens = -1; break; }
        fprintf(f, "%s%s\n", i ? "," : "", ids);
        tokens++;       /* a non-empty array of integers: one more id than commas */
        for (const char *c = ids; *c; c++) tokens += *c == ',';
        sqlite3_reset(st);
    }
    fputs("]\n", f);
    *seconds = now() - t0;
    sqlite3_finalize(st);
    if (fclose(f) != 0 && tokens >= 0) { fprintf(stderr, "bench_embed: error writing %s\n", path); return -1; }
    return tokens;
}

/* bert_embed() once per text; the vectors go to out[n x dim]. */
static int embed_rows(sqlite3 *db, const lines *s, int n, int dim, float *out)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT bert_embed(?1, 'bench')", -1, &st, NULL) != SQLITE_OK)
        return fail(db, "preparing bert_embed");
    int rc = 0;
    for (int i = 0; i < n; i++) {
        sqlite3_bind_text(st, 1, s->items[i], -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_bytes(st, 0) != dim * (int)sizeof(float)) {
            rc = fail(db, "bert_embed");
            break;
        }
        memcpy(out + (size_t)i * dim, sqlite3_column_blob(st, 0), (size_t)dim * sizeof(float));
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

/* The process's resident set in kB (VmRSS of /proc/self/status), or -1. */
static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) kb = strtol(line + 6, NULL, 10);
    fclose(f);
    return kb;
}

/* Smallest and mean cosine between the rows of a and b, [n x dim] each. */
static void cosines(const float *a, const float *b, int n, int dim, double *min, double *mean)
{
    *min = 2;
    *mean = 0;
    for (int i = 0; i < n; i++) {
        double ab = 0, aa = 0, bb = 0;
        for (int j = 0; j < dim; j++) {
            double x = a[(size_t)i * dim + j], y = b[(size_t)i * dim + j];
            ab += x * y;
            aa += x * x;
            bb += y * y;
        }
        double c = aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0;
        if (c < *min) *min = c;
        *mean += c / n;
    }
}

/* Compares rows and batch with the float32 run's batched embeddings. */
static void compare_reference(const char *path, const char *label, const char *precision, const float *rows,
                              const float *batch, int n, int dim)
{
    FILE *f = fopen(path, "rb");
    float *ref = malloc((size_t)n * dim * sizeof *ref);
    if (!f || !ref || fread(ref, sizeof(float), (size_t)n * dim, f) != (size_t)n * dim) {
        fprintf(stderr, "bench_embed: cannot read %d float32 embeddings from %s\n", n, path);
    } else {
        double min_r, mean_r, min_b, mean_b;
        cosines(ref, rows, n, dim, &min_r, &mean_r);
        cosines(ref, batch, n, dim, &min_b, &mean_b);
        printf("CHECK model=%s what=%s-vs-float32 min_cos=%.6f mean_cos=%.6f\n", label, precision,
               min_r < min_b ? min_r : min_b, (mean_r + mean_b) / 2);
    }
    if (f) fclose(f);
    free(ref);
}

/* One bert_embed_each() over a JSON array of the texts. */
static int embed_each(sqlite3 *db, const char *json, int n, int dim, float *out)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT key, embedding FROM bert_embed_each(?1, 'bench')", -1, &st, NULL) != SQLITE_OK)
        return fail(db, "preparing bert_embed_each");
    sqlite3_bind_text(st, 1, json, -1, SQLITE_STATIC);
    int rows = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int key = sqlite3_column_int(st, 0);
        if (key < 0 || key >= n || sqlite3_column_bytes(st, 1) != dim * (int)sizeof(float)) {
            fprintf(stderr, "bench_embed: bert_embed_each gave an unexpected row (key %d)\n", key);
            rc = SQLITE_ERROR;
            break;
        }
        memcpy(out + (size_t)key * dim, sqlite3_column_blob(st, 1), (size_t)dim * sizeof(float));
        rows++;
    }
    if (rc != SQLITE_DONE) { sqlite3_finalize(st); return fail(db, "bert_embed_each"); }
    sqlite3_finalize(st);
    if (rows != n) { fprintf(stderr, "bench_embed: bert_embed_each gave %d rows for %d texts\n", rows, n); return -1; }
    return 0;
}

static int run(sqlite3 *db, const char *ext, const char *model, const lines *s, const char *label, const char *outdir)
{
    char *err = NULL;
    sqlite3_enable_load_extension(db, 1);
    if (sqlite3_load_extension(db, ext, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "bench_embed: cannot load %s: %s (build it with make)\n", ext, err ? err : "?");
        sqlite3_free(err);
        return -1;
    }
    /* BENCH_LOAD_OPTIONS: bert_load's options, e.g. {"threads": 1}. */
    const char *options = getenv("BENCH_LOAD_OPTIONS");
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT bert_load('bench', ?1, %s)",
             options && *options ? "json(?2)" : "NULL");
    char *name = NULL;
    sqlite3_stmt *load = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &load, NULL) != SQLITE_OK) return fail(db, sql);
    sqlite3_bind_text(load, 1, model, -1, SQLITE_STATIC);
    if (options && *options) sqlite3_bind_text(load, 2, options, -1, SQLITE_STATIC);
    if (sqlite3_step(load) == SQLITE_ROW && sqlite3_column_text(load, 0))
        name = strdup((const char *)sqlite3_column_text(load, 0));
    else
        fail(db, "bert_load");
    sqlite3_finalize(load);
    if (!name) return -1;
    free(name);
    char *dim_text = query_text(db, "SELECT hidden_size FROM bert_models WHERE name = 'bench'", NULL);
    int dim = dim_text ? atoi(dim_text) : 0;
    free(dim_text);
    if (dim <= 0) return -1;
    char precision[16];
    char *p_text = query_text(db, "SELECT precision FROM bert_models WHERE name = 'bench'", NULL);
    if (!p_text) return -1;
    snprintf(precision, sizeof precision, "%s", p_text);
    free(p_text);
    int reduced = strcmp(precision, "float32") != 0;

    char path[4096];
    snprintf(path, sizeof path, "%s/%s.ids.json", outdir, label);
    double tok_seconds;
    long tokens = write_ids(db, s, path, &tok_seconds);
    if (tokens < 0) return -1;
    if (!reduced)
        printf("RESULT model=%s engine=ours-tokenize batch=1 sentences=%d tokens=%ld seconds=%.6f\n",
               label, s->n, tokens, tok_seconds);

    /* The JSON array of all texts, built by SQLite outside the timed part. */
    sqlite3_exec(db, "CREATE TEMP TABLE texts(i INTEGER PRIMARY KEY, t TEXT)", NULL, NULL, NULL);
    sqlite3_stmt *ins = NULL;
    if (sqlite3_prepare_v2(db, "INSERT INTO texts(t) VALUES (?1)", -1, &ins, NULL) != SQLITE_OK)
        return fail(db, "preparing the text table");
    for (int i = 0; i < s->n; i++) {
        sqlite3_bind_text(ins, 1, s->items[i], -1, SQLITE_STATIC);
        if (sqlite3_step(ins) != SQLITE_DONE) { sqlite3_finalize(ins); return fail(db, "filling the text table"); }
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    char *json = query_text(db, "SELECT json_group_array(t) FROM (SELECT t FROM texts ORDER BY i)", NULL);
    if (!json) return -1;

    float *rows = malloc((size_t)s->n * dim * sizeof *rows);
    float *batch = malloc((size_t)s->n * dim * sizeof *batch);
    int rc = -1;
    if (!rows || !batch) { fprintf(stderr, "bench_embed: out of memory for %d embeddings\n", s->n); goto done; }

    /* Warm-up: maps the weights and grows the scratch buffers.  The
     * tokenizer is loaded already: the growth is the weights' (those read
     * in place, what was converted at load) and the scratch. */
    long rss_before = rss_kb();
    int warm = s->n < 8 ? s->n : 8;
    if (embed_rows(db, s, warm, dim, rows) != 0) goto done;
    long rss_after = rss_kb();
    printf("MEMORY model=%s engine=ours precision=%s rss_before_kb=%ld rss_after_kb=%ld growth_kb=%ld\n", label,
           precision, rss_before, rss_after, rss_before >= 0 && rss_after >= 0 ? rss_after - rss_before : -1);

    double c0 = cpu_now(), t0 = now();
    if (embed_rows(db, s, s->n, dim, rows) != 0) goto done;
    double row_seconds = now() - t0, row_cpu = cpu_now() - c0;
    printf("RESULT model=%s engine=ours batch=1 sentences=%d tokens=%ld seconds=%.6f cpu_seconds=%.3f precision=%s\n",
           label, s->n, tokens, row_seconds, row_cpu, precision);
    fflush(stdout);

    c0 = cpu_now();
    t0 = now();
    if (embed_each(db, json, s->n, dim, batch) != 0) goto done;
    double batch_seconds = now() - t0, batch_cpu = cpu_now() - c0;
    printf("RESULT model=%s engine=ours batch=all sentences=%d tokens=%ld seconds=%.6f cpu_seconds=%.3f precision=%s\n",
           label, s->n, tokens, batch_seconds, batch_cpu, precision);

    /* Packing sequences must not change what each one computes. */
    double worst = 0;
    for (size_t i = 0; i < (size_t)s->n * dim; i++) {
        double d = fabs((double)rows[i] - batch[i]);
        if (d > worst) worst = d;
    }
    printf("CHECK model=%s what=ours-row-vs-batched%s%s max_abs_diff=%.3g\n", label, reduced ? "-" : "",
           reduced ? precision : "", worst);
    const char *reference = getenv("BENCH_REFERENCE");
    if (reduced && reference && *reference) compare_reference(reference, label, precision, rows, batch, s->n, dim);

    if (reduced) snprintf(path, sizeof path, "%s/%s.%s.f32", outdir, label, precision);
    else snprintf(path, sizeof path, "%s/%s.ours.f32", outdir, label);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(batch, sizeof(float), (size_t)s->n * dim, f) != (size_t)s->n * dim) {
        fprintf(stderr, "bench_embed: cannot write %s\n", path);
        if (f) fclose(f);
        goto done;
    }
    if (fclose(f) != 0) { fprintf(stderr, "bench_embed: error writing %s\n", path); goto done; }
    rc = 0;
done:
    free(rows);
    free(batch);
    free(json);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 6 && argc != 7) {
        fprintf(stderr, "usage: bench_embed EXTENSION MODEL_DIR SENTENCES LABEL OUTDIR [LIMIT]\n");
        return 2;
    }
    lines s = {0};
    if (read_lines(argv[3], argc == 7 ? atoi(argv[6]) : 0, &s) != 0) return 1;
    sqlite3 *db = NULL;
    int rc = 1;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) {
        fprintf(stderr, "bench_embed: cannot open an in-memory database\n");
    } else {
        rc = run(db, argv[1], argv[2], &s, argv[4], argv[5]) == 0 ? 0 : 1;
    }
    sqlite3_close(db);
    lines_free(&s);
    return rc;
}
