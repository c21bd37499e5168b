/*
 * test_golden.c - the extension against golden data, through SQL exactly as
 * users call it (API.md).
 *
 * The models are the deterministic test checkpoints that
 * tests/tools/make_test_models.sh writes to build/models/; the golden files in
 * tests/golden/ come from independent references (Hugging Face's Rust
 * tokenizer, a PyTorch re-implementation of transformers' BERT, the fill-mask
 * pipeline's decoding rules), see tests/golden/make_goldens.sh.  Nothing here
 * computes an expected value beyond L2-normalizing a golden vector.
 *
 * Tolerances: 1e-4 absolute on every float (the reference's own float32 vs
 * float64 difference is below 3e-6); token ids, candidate order, token_str and
 * sequence must match exactly.  The largest difference seen per model is
 * printed, one line each.
 */
#include "test.h"
#include "golden_files.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-4
#define MAX_MODELS 8
#define MAX_REPORTS 4    /* failure messages per model and check, then a count */

/* The kinds of check, for counting failures. */
enum { F_EMBED, F_IDS, F_SIM, F_FILL, F_NSP, F_KINDS };

typedef struct {
    char name[64];
    int hidden, normalize, has_pooler, has_mlm, has_nsp;
    char pooling[16];
    int usable;          /* files present, match the goldens and load */
    /* what was seen */
    double embed_diff, sim_diff, fill_diff, nsp_diff;
    int n_vectors, n_sims, n_fills, n_nsp, n_ids;
    int failures[F_KINDS];
} model_info;

typedef struct {
    model_info models[MAX_MODELS];
    int n_models;
    const char *file;    /* the golden file being read */
    int embedding_lines; /* embedding lines seen (BERT_TEST_LIGHT keeps a few) */
} golden;

/* ---- small helpers ------------------------------------------------------- */

static model_info *find_model(golden *g, const char *name)
{
    for (int i = 0; i < g->n_models; i++)
        if (strcmp(g->models[i].name, name) == 0) return &g->models[i];
    return NULL;
}

/* The model a golden line names, or NULL when there is nothing to compare:
 * a model models.json does not list fails the case (a line nobody checks
 * would otherwise pass unseen); a listed model that is not usable has
 * already failed the manifest or registration check. */
static model_info *line_model(golden *g, const json_doc *d)
{
    const char *name = bert_json_str(d, bert_json_member(d, 0, "model"), "");
    model_info *m = find_model(g, name);
    if (!T_CHECK(m != NULL, "%s: a line names the model \"%s\", which " GOLDEN_DIR "models.json does not list",
                 g->file, name))
        return NULL;
    return m->usable ? m : NULL;
}

/* One comparison of a model's results; a failure prints its message unless
 * this model already reported enough of that kind (the first ones fail the
 * case, later ones are only counted). */
static int check(model_info *m, int kind, int ok, const char *what, const char *text)
{
    if (ok || m->failures[kind]++ < MAX_REPORTS)
        T_CHECK(ok, "%s: %s, for text \"%.60s\"", m->name, what, text);
    return ok;
}

/* Runs a one-row query with text (or NULL) parameters; the statement is left
 * stepped for the caller to read, or NULL with *err (sqlite3_malloc'd). */
static sqlite3_stmt *run(sqlite3 *db, const char *sql, const char **args, int nargs, char **err)
{
    sqlite3_stmt *st = NULL;
    *err = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        *err = sqlite3_mprintf("%s", sqlite3_errmsg(db));
        return NULL;
    }
    for (int i = 0; i < nargs; i++)
        sqlite3_bind_text(st, i + 1, args[i], -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_ROW) {
        *err = sqlite3_mprintf("%s", sqlite3_errmsg(db));
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

/* Reads a JSON array of numbers into out[max]; returns the count or -1. */
static int read_numbers(const json_doc *d, int node, double *out, int max)
{
    if (node < 0 || d->nodes[node].type != JSON_ARRAY) return -1;
    int n = 0;
    for (int c = d->nodes[node].first_child; c >= 0; c = d->nodes[c].next_sibling) {
        if (n == max) return -1;
        json_type t = d->nodes[c].type;
        if (t != JSON_INTEGER && t != JSON_REAL) return -1;
        out[n++] = d->nodes[c].number;
    }
    return n;
}

/* Calls fn(line) for every line of a JSONL file; -1 when it cannot be read. */
/* Every line of a golden file through fn, which reports under g->file. */
static void each_line(const char *path, void (*fn)(void *, const json_doc *, sqlite3 *), golden *g, sqlite3 *db)
{
    g->file = path;
    T_CHECK(t_each_golden_line(path, fn, g, db) != 0,
            "%s has no golden lines: regenerate it with tests/golden/make_goldens.sh", path);
}

static const char *member_str(const json_doc *d, const char *key)
{
    return bert_json_str(d, bert_json_member(d, 0, key), "");
}

/* ---- models ------------------------------------------------------------- */

static void load_manifest(golden *g)
{
    json_doc *d = NULL;
    char *err = NULL;
    int found = bert_json_parse_file(GOLDEN_DIR "models.json", &d, &err);
    if (!T_CHECK(found == 1, "tests/golden/models.json: %s", found == 0 ? "missing" : err ? err : "out of memory")) {
        free(err);
        return;
    }
    T_CHECK(d->nodes[0].type == JSON_OBJECT && bert_json_length(d, 0) > 0,
            GOLDEN_DIR "models.json lists no models: regenerate it with tests/golden/make_goldens.sh");
    T_CHECK(bert_json_length(d, 0) <= MAX_MODELS, GOLDEN_DIR "models.json lists %d models, the runner reads %d: "
            "raise MAX_MODELS in tests/test_golden.c", bert_json_length(d, 0), MAX_MODELS);
    for (int c = d->nodes[0].first_child; c >= 0 && g->n_models < MAX_MODELS; c = d->nodes[c].next_sibling) {
        model_info *m = &g->models[g->n_models++];
        memset(m, 0, sizeof *m);
        snprintf(m->name, sizeof m->name, "%s", d->nodes[c].key);
        m->hidden = (int)bert_json_int(d, bert_json_member(d, c, "hidden_size"), 0);
        snprintf(m->pooling, sizeof m->pooling, "%s", bert_json_str(d, bert_json_member(d, c, "pooling"), "mean"));
        m->normalize = bert_json_bool(d, bert_json_member(d, c, "normalize"), 0);
        m->has_pooler = bert_json_bool(d, bert_json_member(d, c, "has_pooler"), 0);
        m->has_mlm = bert_json_bool(d, bert_json_member(d, c, "has_mlm_head"), 0);
        m->has_nsp = bert_json_bool(d, bert_json_member(d, c, "has_nsp_head"), 0);

        m->usable = t_golden_model_file(m->name, bert_json_int(d, bert_json_member(d, c, "safetensors_bytes"), -1),
                                        bert_json_str(d, bert_json_member(d, c, "safetensors_checksum"), ""));
    }
    bert_json_free(d);
}

/* Registers `model` under `as` with an options object (or none); 0 on success. */
static int load(sqlite3 *db, const model_info *m, const char *as, const char *options)
{
    char path[256];
    snprintf(path, sizeof path, MODELS_DIR "%s", m->name);
    const char *args[] = {as, path, options};
    char *err = NULL;
    sqlite3_stmt *st = run(db, options ? "SELECT bert_load(?1, ?2, ?3)" : "SELECT bert_load(?1, ?2)",
                           args, options ? 3 : 2, &err);
    int ok = T_CHECK(st != NULL, "bert_load('%s', '%s', '%s'): %s", as, path, options ? options : "", err);
    sqlite3_finalize(st);
    sqlite3_free(err);
    return ok ? 0 : -1;
}

/* ---- embeddings and token ids --------------------------------------------- */

static const char *modes[] = {"mean", "cls", "max", "pooler"};

static void embedding_line(void *ctx, const json_doc *d, sqlite3 *db)
{
    golden *g = ctx;
    model_info *m = line_model(g, d);
    if (!m) return;
    const char *text = member_str(d, "text");
    char as[96];
    /* Under emulation, of the lines t_each_golden_line keeps (every third),
     * every third again, of texts up to 64 tokens: each model still gets
     * several texts, every pooling and both normalizations, but no
     * 512-token text, which alone costs minutes under qemu. */
    if (t_light() && (g->embedding_lines++ % 3 != 0 || bert_json_length(d, bert_json_member(d, 0, "ids")) > 64))
        return;

    /* Token ids: what the model reads, [CLS] ... [SEP], truncated to max_length. */
    snprintf(as, sizeof as, "%s/default", m->name);
    const char *args[] = {text, as};
    char *err = NULL;
    sqlite3_stmt *st = run(db, "SELECT bert_token_ids(?1, ?2)", args, 2, &err);
    if (check(m, F_IDS, st != NULL, err ? err : "bert_token_ids failed", text)) {
        const char *got = (const char *)sqlite3_column_text(st, 0);
        json_doc *ids = NULL;
        char *perr = NULL;
        double want[1024], have[1024];
        int nw = read_numbers(d, bert_json_member(d, 0, "ids"), want, 1024);
        int nh = -1;
        if (got && bert_json_parse(got, strlen(got), &ids, &perr) == 0) nh = read_numbers(ids, 0, have, 1024);
        int same = nw > 0 && nw == nh;
        for (int i = 0; same && i < nw; i++) same = want[i] == have[i];
        char msg[160];
        snprintf(msg, sizeof msg, "bert_token_ids gave %d ids, not the golden %d (or different ones): %.60s",
                 nh, nw, got ? got : "NULL");
        check(m, F_IDS, same, msg, text);
        m->n_ids++;
        free(perr);
        bert_json_free(ids);
    }
    sqlite3_finalize(st);
    sqlite3_free(err);

    double want[1024];
    for (int mode = 0; mode < 4; mode++) {
        int n = read_numbers(d, bert_json_member(d, 0, modes[mode]), want, 1024);
        if (n < 0) continue;    /* no pooler in this checkpoint */
        if (!check(m, F_EMBED, n == m->hidden, "golden vector of the wrong size", text)) continue;
        double norm = 0;
        for (int i = 0; i < n; i++) norm += want[i] * want[i];
        norm = fmax(sqrt(norm), 1e-12);    /* torch.nn.functional.normalize */
        /* default: the model's own pooling and normalization (from its files) */
        for (int variant = 0; variant < 3; variant++) {
            int normalize = variant == 2 ? m->normalize : variant;
            if (variant == 2 && strcmp(m->pooling, modes[mode]) != 0) continue;
            if (variant < 2) snprintf(as, sizeof as, "%s/%s/%d", m->name, modes[mode], variant);
            else snprintf(as, sizeof as, "%s/default", m->name);
            const char *eargs[] = {text, as};
            st = run(db, "SELECT bert_embed(?1, ?2)", eargs, 2, &err);
            char what[160];
            snprintf(what, sizeof what, "bert_embed with %s: %s", as, err ? err : "");
            if (check(m, F_EMBED, st != NULL && sqlite3_column_type(st, 0) == SQLITE_BLOB, what, text)) {
                const unsigned char *blob = sqlite3_column_blob(st, 0);
                int bytes = sqlite3_column_bytes(st, 0);
                snprintf(what, sizeof what, "bert_embed with %s gave %d bytes, not %d", as, bytes, 4 * n);
                if (check(m, F_EMBED, bytes == 4 * n, what, text)) {
                    double worst = 0;
                    int at = 0;
                    for (int i = 0; i < n; i++) {
                        uint32_t u = (uint32_t)blob[4 * i] | (uint32_t)blob[4 * i + 1] << 8 |
                                     (uint32_t)blob[4 * i + 2] << 16 | (uint32_t)blob[4 * i + 3] << 24;
                        float f;
                        memcpy(&f, &u, 4);
                        double diff = fabs((double)f - (normalize ? want[i] / norm : want[i]));
                        if (!(diff <= worst)) { worst = diff; at = i; }    /* NaN counts as worst */
                    }
                    if (!(worst <= m->embed_diff)) m->embed_diff = worst;
                    m->n_vectors++;
                    snprintf(what, sizeof what, "bert_embed with %s differs by %.3g at [%d]", as, worst, at);
                    check(m, F_EMBED, worst <= TOL, what, text);
                }
            }
            sqlite3_finalize(st);
            sqlite3_free(err);
        }
    }
}

static void similarity_line(void *ctx, const json_doc *d, sqlite3 *db)
{
    golden *g = ctx;
    model_info *m = line_model(g, d);
    if (!m) return;
    char as[96];
    snprintf(as, sizeof as, "%s/default", m->name);
    const char *a = member_str(d, "a"), *b = member_str(d, "b");
    double want = bert_json_real(d, bert_json_member(d, 0, "cosine"), NAN);
    /* Two texts, and the same through float32 BLOBs. */
    static const char *sql[] = {"SELECT bert_similarity(?1, ?2, ?3)",
                                "SELECT bert_similarity(bert_embed(?1, ?3), bert_embed(?2, ?3), ?3)"};
    for (int k = 0; k < 2; k++) {
        const char *args[] = {a, b, as};
        char *err = NULL;
        sqlite3_stmt *st = run(db, sql[k], args, 3, &err);
        char what[200];
        snprintf(what, sizeof what, "%s: %s", sql[k], err ? err : "");
        if (check(m, F_SIM, st != NULL, what, a)) {
            double got = sqlite3_column_double(st, 0), diff = fabs(got - want);
            if (!(diff <= m->sim_diff)) m->sim_diff = diff;
            m->n_sims++;
            snprintf(what, sizeof what, "%s gave %.7f, reference %.7f", sql[k], got, want);
            check(m, F_SIM, diff <= TOL, what, a);
        }
        sqlite3_finalize(st);
        sqlite3_free(err);
    }
}

/* ---- fill-mask ------------------------------------------------------------- */

/* Compares one list of candidates; returns the largest score difference or
 * -1 when anything but the scores differs. */
static double compare_candidates(const json_doc *w, int wl, const json_doc *h, int hl, char *why, size_t whylen)
{
    if (h->nodes[hl].type != JSON_ARRAY || bert_json_length(h, hl) != bert_json_length(w, wl)) {
        snprintf(why, whylen, "%d candidates where the reference has %d", bert_json_length(h, hl), bert_json_length(w, wl));
        return -1;
    }
    double worst = 0;
    int rank = 0;
    for (int a = w->nodes[wl].first_child, b = h->nodes[hl].first_child; a >= 0 && b >= 0;
         a = w->nodes[a].next_sibling, b = h->nodes[b].next_sibling, rank++) {
        long long wt = bert_json_int(w, bert_json_member(w, a, "token"), -1), ht = bert_json_int(h, bert_json_member(h, b, "token"), -2);
        const char *ws = bert_json_str(w, bert_json_member(w, a, "token_str"), ""), *hs = bert_json_str(h, bert_json_member(h, b, "token_str"), "?");
        const char *wq = bert_json_str(w, bert_json_member(w, a, "sequence"), ""), *hq = bert_json_str(h, bert_json_member(h, b, "sequence"), "?");
        double ws_score = bert_json_real(w, bert_json_member(w, a, "score"), NAN);
        double hs_score = bert_json_real(h, bert_json_member(h, b, "score"), NAN);
        if (h->nodes[b].type != JSON_OBJECT || bert_json_length(h, b) != 4) {
            snprintf(why, whylen, "candidate %d is not an object of exactly score, token, token_str, sequence", rank);
            return -1;
        }
        if (wt != ht) { snprintf(why, whylen, "rank %d is token %lld, reference %lld", rank, ht, wt); return -1; }
        if (strcmp(ws, hs) != 0) { snprintf(why, whylen, "rank %d token_str \"%s\", reference \"%s\"", rank, hs, ws); return -1; }
        if (strcmp(wq, hq) != 0) {
            snprintf(why, whylen, "rank %d sequence \"%.50s\", reference \"%.50s\"", rank, hq, wq);
            return -1;
        }
        double diff = fabs(ws_score - hs_score);
        if (!(diff <= worst)) worst = diff;
    }
    return worst;
}

static void fill_mask_line(void *ctx, const json_doc *d, sqlite3 *db)
{
    golden *g = ctx;
    model_info *m = line_model(g, d);
    if (!m) return;
    const char *text = member_str(d, "text");
    char as[96], top_k[16];
    snprintf(as, sizeof as, "%s/default", m->name);
    snprintf(top_k, sizeof top_k, "%lld", bert_json_int(d, bert_json_member(d, 0, "top_k"), 5));
    const char *args[] = {text, top_k, as};
    char *err = NULL;
    sqlite3_stmt *st = run(db, "SELECT bert_fill_mask(?1, CAST(?2 AS INTEGER), ?3)", args, 3, &err);
    char what[300];
    snprintf(what, sizeof what, "bert_fill_mask: %s", err ? err : "");
    if (check(m, F_FILL, st != NULL, what, text)) {
        const char *got = (const char *)sqlite3_column_text(st, 0);
        json_doc *h = NULL;
        char *perr = NULL;
        if (check(m, F_FILL, got && bert_json_parse(got, strlen(got), &h, &perr) == 0, "unparsable JSON", text)) {
            int wr = bert_json_member(d, 0, "result");
            int several = d->nodes[d->nodes[wr].first_child].type == JSON_ARRAY;
            char why[200] = "";
            double worst = 0;
            if (several) {
                if (h->nodes[0].type != JSON_ARRAY || bert_json_length(h, 0) != bert_json_length(d, wr)) {
                    snprintf(why, sizeof why, "not one list per [MASK] (%d)", bert_json_length(d, wr));
                    worst = -1;
                }
                for (int a = d->nodes[wr].first_child, b = h->nodes[0].first_child; worst >= 0 && a >= 0 && b >= 0;
                     a = d->nodes[a].next_sibling, b = h->nodes[b].next_sibling) {
                    double w = compare_candidates(d, a, h, b, why, sizeof why);
                    worst = w < 0 ? -1 : fmax(worst, w);
                }
            } else {
                worst = compare_candidates(d, wr, h, 0, why, sizeof why);
            }
            snprintf(what, sizeof what, "bert_fill_mask: %s", why);
            if (check(m, F_FILL, worst >= 0, what, text)) {
                if (!(worst <= m->fill_diff)) m->fill_diff = worst;
                m->n_fills++;
                snprintf(what, sizeof what, "bert_fill_mask scores differ by %.3g", worst);
                check(m, F_FILL, worst <= TOL, what, text);
            }
        }
        free(perr);
        bert_json_free(h);
    }
    sqlite3_finalize(st);
    sqlite3_free(err);
}

static void next_sentence_line(void *ctx, const json_doc *d, sqlite3 *db)
{
    golden *g = ctx;
    model_info *m = line_model(g, d);
    if (!m) return;
    char as[96];
    snprintf(as, sizeof as, "%s/default", m->name);
    const char *a = member_str(d, "a"), *b = member_str(d, "b");
    const char *args[] = {a, b, as};
    char *err = NULL;
    sqlite3_stmt *st = run(db, "SELECT bert_next_sentence(?1, ?2, ?3)", args, 3, &err);
    char what[300];
    snprintf(what, sizeof what, "bert_next_sentence: %s", err ? err : "");
    if (check(m, F_NSP, st != NULL && sqlite3_column_type(st, 0) != SQLITE_NULL, what, a)) {
        double want = bert_json_real(d, bert_json_member(d, 0, "probability"), NAN);
        double got = sqlite3_column_double(st, 0), diff = fabs(got - want);
        if (!(diff <= m->nsp_diff)) m->nsp_diff = diff;
        m->n_nsp++;
        /* Segment lengths of the reference input, to tell truncation from arithmetic. */
        double types[1024];
        int n = read_numbers(d, bert_json_member(d, 0, "type_ids"), types, 1024), second = 0;
        for (int i = 0; i < n; i++) second += types[i] != 0;
        snprintf(what, sizeof what, "bert_next_sentence gave %.7f, reference %.7f (%s to %d + %d tokens)",
                 got, want, bert_json_bool(d, bert_json_member(d, 0, "truncated"), 0) ? "truncated longest-first" : "not truncated",
                 n - second - 2, second - 1);
        check(m, F_NSP, diff <= TOL, what, a);
    }
    sqlite3_finalize(st);
    sqlite3_free(err);
}

/* ---- the suite ---------------------------------------------------------------- */

/* Registers every model under "<name>/default" (options from its own files)
 * and "<name>/<pooling>/<0|1>" for each pooling it supports. */
static int register_models(golden *g, sqlite3 *db)
{
    for (int i = 0; i < g->n_models; i++) {
        model_info *m = &g->models[i];
        if (!m->usable) continue;
        char as[96], options[96];
        snprintf(as, sizeof as, "%s/default", m->name);
        if (load(db, m, as, NULL)) { m->usable = 0; continue; }
        for (int mode = 0; mode < 4; mode++) {
            if (mode == 3 && !m->has_pooler) continue;
            for (int norm = 0; norm < 2; norm++) {
                snprintf(as, sizeof as, "%s/%s/%d", m->name, modes[mode], norm);
                snprintf(options, sizeof options, "{\"pooling\":\"%s\",\"normalize\":%s}", modes[mode],
                         norm ? "true" : "false");
                if (load(db, m, as, options)) m->usable = 0;
            }
        }
    }
    return 0;
}

/* What the goldens cannot cover: heads a checkpoint lacks must be SQL errors. */
static void missing_heads(golden *g, sqlite3 *db)
{
    for (int i = 0; i < g->n_models; i++) {
        model_info *m = &g->models[i];
        if (!m->usable) continue;
        char sql[256];
        if (!m->has_mlm) {
            snprintf(sql, sizeof sql, "SELECT bert_fill_mask('a [MASK] b', 5, '%s/default')", m->name);
            char *r = t_query(db, sql, NULL);
            T_CHECK(strncmp(r, "ERROR: ", 7) == 0, "%s has no MLM head, yet fill-mask gave %.60s", m->name, r);
            free(r);
        }
        if (!m->has_nsp) {
            snprintf(sql, sizeof sql, "SELECT bert_next_sentence('a', 'b', '%s/default')", m->name);
            char *r = t_query(db, sql, NULL);
            T_CHECK(strncmp(r, "ERROR: ", 7) == 0, "%s has no NSP head, yet next-sentence gave %.60s", m->name, r);
            free(r);
        }
        if (!m->has_pooler) {
            snprintf(sql, sizeof sql, "SELECT bert_embed('a', bert_load('%s/pooler', '" MODELS_DIR "%s', "
                     "'{\"pooling\":\"pooler\"}'))", m->name, m->name);
            char *r = t_query(db, sql, NULL);
            T_CHECK(strncmp(r, "ERROR: ", 7) == 0, "%s has no pooler, yet pooling \"pooler\" gave a vector", m->name);
            free(r);
        }
    }
}

void suite_golden(void)
{
    golden *g = calloc(1, sizeof *g);
    if (!g) { T_CHECK(0, "out of memory"); return; }

    t_case("test models match the goldens");
    if (!t_exists(MODELS_DIR)) {
        t_skip("no build/models: run tests/tools/make_test_models.sh build/models");
        free(g);
        return;
    }
    load_manifest(g);

    sqlite3 *db = t_open();
    t_case("bert_load registers every golden model, with its own settings and with each pooling");
    register_models(g, db);

    t_case("bert_embed and bert_token_ids match the reference for every pooling");
    each_line(GOLDEN_DIR "embeddings.jsonl", embedding_line, g, db);
    t_case("bert_similarity matches the reference cosine");
    each_line(GOLDEN_DIR "similarity.jsonl", similarity_line, g, db);
    t_case("bert_fill_mask matches the fill-mask pipeline");
    each_line(GOLDEN_DIR "fill_mask.jsonl", fill_mask_line, g, db);
    t_case("bert_next_sentence matches the NSP head, with longest-first truncation");
    each_line(GOLDEN_DIR "next_sentence.jsonl", next_sentence_line, g, db);
    t_case("a head the checkpoint lacks is an SQL error");
    missing_heads(g, db);

    for (int i = 0; i < g->n_models; i++) {
        const model_info *m = &g->models[i];
        printf("golden %-21s %s embed %.1e (%d vectors, %d id lists)", m->name,
               m->usable ? "max|diff|" : "NOT CHECKED", m->embed_diff, m->n_vectors, m->n_ids);
        printf("  similarity %.1e (%d)", m->sim_diff, m->n_sims);
        if (m->has_mlm) printf("  fill-mask %.1e (%d)", m->fill_diff, m->n_fills);
        if (m->has_nsp) printf("  nsp %.1e (%d)", m->nsp_diff, m->n_nsp);
        int failures = 0;
        for (int k = 0; k < F_KINDS; k++) failures += m->failures[k];
        if (failures) printf("  FAILURES %d", failures);
        printf("\n");
    }
    t_case("every golden model was checked");
    for (int i = 0; i < g->n_models; i++) {
        const model_info *m = &g->models[i];
        T_CHECK(m->n_vectors > 0 && m->n_ids > 0 && m->n_sims > 0 && (!m->has_mlm || m->n_fills > 0) &&
                (!m->has_nsp || m->n_nsp > 0), "%s: some golden checks never ran", m->name);
    }
    sqlite3_close(db);
    free(g);
}
