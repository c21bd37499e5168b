/*
 * test_oom.c - running out of memory anywhere in the extension.
 *
 * A scenario (register the extension, load a model, run each kind of
 * function once) is run again and again, each time with another one of the
 * extension's allocations failing (t_fail_allocation): the first run
 * fails the first allocation, the next the second, and so on to the last
 * allocation of a run without failures.  Each run must either give
 * the results of a run without failure or stop with an SQL error that says
 * the memory ran out; the process must not crash, and under
 * AddressSanitizer nothing may leak.  SQLite's, OpenBLAS's and libc's own
 * allocations are not counted (they are not linked into the runner), so
 * only the extension's error paths are exercised.
 */
#include "test.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

int sqlite3_bert_init(sqlite3 *db, char **err, const sqlite3_api_routines *api);

#define STEPS 10
#define RESULT_MAX 4096

/* What one run gave: the results of the steps that ran, and the error that
 * stopped it (empty when none did). */
typedef struct {
    char results[STEPS][RESULT_MAX];
    char error[512];
    int failed_step; /* -1 when every step ran */
} run_outcome;

/* The first column of the first row of sql, as text, into out; returns
 * 0, or -1 with the error in err.  No allocation of the runner's own
 * happens here, so an armed failure can only hit SQLite or the extension. */
static int run_step(sqlite3 *db, const char *sql, char *out, char *err, size_t errcap)
{
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(stmt);
        if (rc == SQLITE_ROW) {
            const unsigned char *t = sqlite3_column_text(stmt, 0);
            snprintf(out, RESULT_MAX, "%s", t ? (const char *)t : "NULL");
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            snprintf(out, RESULT_MAX, "NO ROW");
            rc = SQLITE_OK;
        }
    }
    if (rc != SQLITE_OK) snprintf(err, errcap, "%s", sqlite3_errmsg(db));
    sqlite3_finalize(stmt);
    return rc == SQLITE_OK ? 0 : -1;
}

/* Runs the scenario with allocation number `fail_at` (counted from the
 * start of the run; -1: none) failing; returns how many allocations the
 * run made. */
static long run_scenario(const char *const *sql, int steps, long fail_at, run_outcome *o)
{
    memset(o, 0, sizeof *o);
    o->failed_step = -1;
    sqlite3 *db = NULL;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) {
        snprintf(o->error, sizeof o->error, "cannot open a database");
        o->failed_step = 0;
        sqlite3_close(db);
        return 0;
    }
    long start = t_allocations();
    t_fail_allocation(fail_at < 0 ? -1 : start + fail_at);
    char *err = NULL;
    if (sqlite3_bert_init(db, &err, NULL) != SQLITE_OK) {
        snprintf(o->error, sizeof o->error, "init: %s", err ? err : "(no message)");
        o->failed_step = 0;
    }
    sqlite3_free(err);
    for (int i = 0; o->failed_step < 0 && i < steps; i++)
        if (run_step(db, sql[i], o->results[i], o->error, sizeof o->error) != 0) o->failed_step = i;
    t_fail_allocation(-1);
    long used = t_allocations() - start;
    sqlite3_close(db);
    return used;
}

/* Every allocation of the scenario failed in turn. */
static void fail_each_allocation(const char *title, const char *const *sql, int steps)
{
    t_case(title);
    if (!T_CHECK(steps <= STEPS, "%d steps, at most %d", steps, STEPS)) return;
    run_outcome clean, o;
    long used = run_scenario(sql, steps, -1, &clean);
    if (!T_CHECK(clean.failed_step < 0, "without failures, step %d failed: %s", clean.failed_step, clean.error))
        return;
    long runs = 0, errors = 0, survived = 0;
    for (long k = 0; k < used; k++) {
        run_scenario(sql, steps, k, &o);
        runs++;
        if (o.failed_step < 0) {
            /* The failure was absorbed (a cache or a helper thread done
             * without): the results must be exact. */
            survived++;
            for (int i = 0; i < steps; i++)
                if (!T_CHECK(strcmp(o.results[i], clean.results[i]) == 0,
                             "allocation %ld failed: step %d gave %.60s, not %.60s", k, i, o.results[i],
                             clean.results[i]))
                    return;
        } else {
            errors++;
            if (!T_CHECK(strstr(o.error, "out of memory") != NULL,
                         "allocation %ld failed: step %d's error does not say so: %s", k, o.failed_step, o.error))
                return;
        }
    }
    printf("  %s: %ld runs, %ld stopped with \"out of memory\", %ld gave the full results\n", title, runs, errors,
           survived);
}

void suite_oom(void)
{
    if (!t_exists("build/models/mlm-tied-f32")) {
        t_case("oom: every allocation failing in turn");
        t_skip("build/models missing: run make test");
        return;
    }
    static const char *const int8_steps[] = {
        "SELECT bert_load('m', 'build/models/mlm-tied-f32', '{\"precision\": \"int8\", \"threads\": 1}')",
        "SELECT hex(bert_embed('Hello world, café and naïve.', 'm'))",
        "SELECT group_concat(hex(embedding)) FROM bert_embed_each('[\"the cat sat\", \"a dog\", \"x\"]', 'm')",
        "SELECT bert_fill_mask('The cat sat on the [MASK].', 5, 'm')",
        "SELECT group_concat(token || start || '-' || \"end\", ' ') FROM bert_tokenize_offsets('unaffable café 中文', 'm')",
        "SELECT bert_similarity('a cat', 'a kitten', 'm')",
    };
    fail_each_allocation("oom: each allocation failing in turn, int8 model: an error or the full results",
                         int8_steps, sizeof int8_steps / sizeof *int8_steps);
    static const char *const f32_steps[] = {
        "SELECT bert_load('m', 'build/models/mlm-tied-f32', '{\"threads\": 2}')",
        "SELECT hex(bert_embed('Hello world, café and naïve, a longer sentence for two threads.', 'm'))",
        "SELECT group_concat(hex(embedding)) FROM bert_embed_each('[\"the cat sat\", \"a dog\", \"x\"]', 'm')",
    };
    fail_each_allocation("oom: each allocation failing in turn, float32 on two threads", f32_steps, sizeof f32_steps / sizeof *f32_steps);
    static const char *const head_steps[] = {
        "SELECT bert_load('c', 'build/models/cls-3-f32', '{\"threads\": 1}')",
        "SELECT bert_classify('a fine day for a walk', 'c')",
        "SELECT bert_load('r', 'build/models/ce-sigmoid', '{\"precision\": \"bfloat16\", \"threads\": 1}')",
        "SELECT group_concat(key || ':' || score) FROM bert_rerank_each('a cat', '[\"a kitten\", \"the stock market\"]', 'r')",
        "SELECT bert_load('n', 'build/models/ner-conll-f32', '{\"threads\": 1}')",
        "SELECT group_concat(entity || ' ' || word || ' ' || start) FROM bert_ner_each('John Smith lives in Paris.', 'n')",
        "SELECT bert_load('q', 'build/models/qa-f32', '{\"threads\": 1}')",
        "SELECT bert_answer('Where does John live?', 'John Smith lives in Paris, near the river.', 'q')",
        "SELECT group_concat(start || '-' || \"end\") FROM bert_chunks('one two three four five six seven', 3, 1, 'c')",
        "SELECT bert_classify_pair('a question', 'an answer', 'c')",
    };
    fail_each_allocation("oom: each allocation failing in turn, task heads, bfloat16, chunks", head_steps,
                         sizeof head_steps / sizeof *head_steps);
    static const char *const view_steps[] = {
        "SELECT bert_load('v', 'build/models/mpnet-st', '{\"threads\": 1}')",
        "SELECT group_concat(layer || head || from_position || to_position || from_token || printf('%.6f', weight)) "
        "FROM bert_attention('the cat sat', '{\"model\": \"v\", \"layers\": [1], \"heads\": [0, 2]}')",
        "SELECT group_concat(layer || position || token || ifnull(start, '-') || hex(substr(vector, 1, 8))) "
        "FROM bert_hidden_states('the cat', '{\"model\": \"v\", \"layers\": [0, 2]}')",
    };
    fail_each_allocation("oom: each allocation failing in turn, attention and hidden states", view_steps,
                         sizeof view_steps / sizeof *view_steps);
    static const char *const sparse_steps[] = {
        "SELECT bert_load('s', 'build/models/distil-mlm', '{\"threads\": 1}')",
        "SELECT bert_sparse('Sparse retrieval, café.', '{\"model\": \"s\", \"top_k\": 8}')",
        "SELECT group_concat(token_id || ':' || weight) FROM bert_sparse_terms('a cat', '{\"model\": \"s\", \"top_k\": 4}')",
        "SELECT bert_sparse('what is the weather', '{\"model\": \"s\", \"mode\": \"query\"}')",
    };
    fail_each_allocation("oom: each allocation failing in turn, sparse vectors (document and query sides)",
                         sparse_steps, sizeof sparse_steps / sizeof *sparse_steps);
    static const char *const zero_shot_steps[] = {
        "SELECT bert_load('z', 'build/models/nli-roberta', '{\"threads\": 1}')",
        "SELECT bert_zero_shot('The match ended in penalties.', '[\"sports\", \"politics\"]', "
        "'{\"model\": \"z\", \"hypothesis_template\": \"It is about {}.\"}')",
        "SELECT group_concat(rank || label || score) FROM bert_zero_shot_each('a cat', '[\"pets\", \"cars\"]', "
        "'{\"model\": \"z\", \"multi_label\": true}')",
        "SELECT bert_zero_shot(NULL, '[\"pets\"]', '{\"model\": \"z\"}') IS NULL",
    };
    fail_each_allocation("oom: each allocation failing in turn, zero-shot classification", zero_shot_steps,
                         sizeof zero_shot_steps / sizeof *zero_shot_steps);
    static const char *const colbert_steps[] = {
        "SELECT bert_load('c', 'build/models/colbert-dense', '{\"threads\": 1}')",
        "SELECT hex(substr(bert_token_vectors('late interaction?', 'query', 'c'), 1, 24))",
        "SELECT hex(substr(bert_token_vectors('One vector, per token!', 'document', '{\"model\": \"c\"}'), 9, 24))",
        "SELECT round(bert_maxsim(bert_token_vectors('a b', 'query', 'c'), bert_token_vectors('a, b', 'document', "
        "'c')), 4)",
    };
    fail_each_allocation("oom: each allocation failing in turn, ColBERT token vectors (Dense module, both sides)",
                         colbert_steps, sizeof colbert_steps / sizeof *colbert_steps);
    /* Fine-tuning: the rows read, the base loaded, the data prepared, two
     * steps, an evaluation and the model saved (over the last run's). */
    static const char *const train_steps[] = {
        "CREATE TABLE t(text, label)",
        "INSERT INTO t VALUES ('good', 'p'), ('bad', 'n'), ('fine film', 'p')",
        "SELECT bert_load('c', 'build/models/xlmr-cls-bf16', '{\"threads\": 1}')",
        "SELECT step || ' ' || printf('%.6f', loss) || ' ' || eval || ' ' || (saved IS NOT NULL) FROM "
        "bert_train('build/oom-train', 'c', 'SELECT text, label FROM t', '{\"max_steps\": 2, \"batch_size\": 2, "
        "\"logging_steps\": 10, \"overwrite\": true, \"dropout\": 0, \"eval_query\": \"SELECT text, label FROM t\"}')",
        "SELECT bert_load('f', 'build/oom-train', '{\"threads\": 1}')",
        "SELECT bert_classify('good', 'f')",
    };
    fail_each_allocation("oom: each allocation failing in turn, bert_train (data, steps, evaluation, save)",
                         train_steps, sizeof train_steps / sizeof *train_steps);
}
