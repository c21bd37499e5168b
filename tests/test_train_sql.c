/*
 * test_train_sql.c - fine-tuning in SQL: the saver (a model written back as
 * a Hugging Face directory answers as the original did), the data
 * preparation of every task (labels, BIO tags on the tokenizer's words,
 * question-answering windows as run_qa.py prepares them), bert_train's
 * options and errors, and, with the training engine, runs of every task
 * whose output bert_load serves.
 */
#define _GNU_SOURCE
#include "test.h"

#include "../ext/base/model_files.h"
#include "../ext/models/model_dir.h"
#include "../ext/models/model_save.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MODELS "build/models/"

/* A fresh folder in /tmp for one case's outputs (removed by the case). */
static int temp_dir(char *dir, size_t size)
{
    snprintf(dir, size, "/tmp/bert-train-test-XXXXXX");
    return T_CHECK(mkdtemp(dir) != NULL, "cannot make a directory in /tmp");
}

/* Saves `name` (loaded at float32) as `arch` into out, labels as config.json names them. */
static int save_copy(const char *name, bert_save_arch arch, int st, const char *out)
{
    char dir[256];
    snprintf(dir, sizeof dir, MODELS "%s", name);
    bert_model *m = NULL;
    char *err = NULL;
    if (!T_CHECK(bert_model_load_precision(t_dir(dir), BERT_PRECISION_FLOAT32, &m, &err) == 0, "%s: %s", name,
                 err ? err : "?")) {
        free(err);
        return 0;
    }
    bert_save_spec spec = {.base_dir = dir, .arch = arch, .labels = (const char *const *)m->head.labels,
                           .num_labels = m->head.num_labels,
                           .problem_type = arch == BERT_SAVE_SEQUENCE && m->head.problem == BERT_PROBLEM_MULTI_LABEL
                                               ? "multi_label_classification" : NULL,
                           .sentence_transformers = st, .pooling = BERT_POOL_MEAN, .normalize = 1,
                           .max_seq_length = 128};
    int ok = T_CHECK(bert_save_model_dir(m, &spec, out, 0, &err) == 0, "%s: %s", name, err ? err : "?");
    free(err);
    bert_model_free(m);
    return ok;
}

/* The largest difference between two JSON arrays of {label|entity_group, score}
 * in the same order, or 1e9 when their labels differ. */
static double json_scores_diff(sqlite3 *db, const char *a, const char *b, const char *label_key)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT CASE WHEN json_array_length(?1) != json_array_length(?2) THEN 1e9 ELSE "
             "coalesce((SELECT max(CASE WHEN json_extract(x.value, '$.%s') IS NOT json_extract(y.value, '$.%s') "
             "THEN 1e9 ELSE abs(json_extract(x.value, '$.score') - json_extract(y.value, '$.score')) END) "
             "FROM json_each(?1) x JOIN json_each(?2) y ON x.key = y.key), 0) END",
             label_key, label_key);
    return t_query_double(db, sql, a, b, NULL);
}

static void check_same(sqlite3 *db, const char *fn_sql, const char *label_key, const char *what)
{
    /* fn_sql has %s for the model name. */
    char q1[512], q2[512];
    snprintf(q1, sizeof q1, fn_sql, "orig");
    snprintf(q2, sizeof q2, fn_sql, "saved");
    char *a = t_query(db, q1, NULL), *b = t_query(db, q2, NULL);
    double diff = json_scores_diff(db, a, b, label_key);
    T_CHECK(strncmp(a, "ERROR", 5) != 0 && diff < 1e-5, "%s: original %s, saved %s", what, a, b);
    free(a);
    free(b);
}

static void saver_round_trip(void)
{
    static const struct {
        const char *model;
        bert_save_arch arch;
        const char *sql;       /* %s: the model name */
        const char *key;
    } cases[] = {
        {"cls-3-f32", BERT_SAVE_SEQUENCE, "SELECT bert_classify('the movie was great', '%s')", "label"},
        {"cls-multi4-f16", BERT_SAVE_SEQUENCE, "SELECT bert_classify('an awful day', '%s')", "label"},
        {"distil-cls", BERT_SAVE_SEQUENCE, "SELECT bert_classify('a pleasant surprise', '%s')", "label"},
        {"xlmr-cls-bf16", BERT_SAVE_SEQUENCE, "SELECT bert_classify('ein guter Tag', '%s')", "label"},
        {"mpnet-cls", BERT_SAVE_SEQUENCE, "SELECT bert_classify('so so', '%s')", "label"},
        {"ner-conll-f32", BERT_SAVE_TOKENS, "SELECT bert_ner('John Smith lives in New York', '%s')", "entity_group"},
        {"ner-distil", BERT_SAVE_TOKENS, "SELECT bert_ner('Angela Merkel met Obama in Berlin', '%s')", "entity_group"},
        {"roberta-ner", BERT_SAVE_TOKENS, "SELECT bert_ner('Paris is in France', '%s')", "entity_group"},
        {"qa-f32", BERT_SAVE_QA,
         "SELECT json_array(bert_answer('where does he live?', 'He lives in Paris near the river.', '%s'))", "answer"},
        {"roberta-qa", BERT_SAVE_QA,
         "SELECT json_array(bert_answer('who came?', 'Nobody came to the party but Anna.', '%s'))", "answer"},
        {"qa-distil", BERT_SAVE_QA,
         "SELECT json_array(bert_answer('what colour?', 'The car is red and fast.', '%s'))", "answer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char name[128], dir[128], out[192], src[192];
        snprintf(name, sizeof name, "saver: %s saved and served again", cases[i].model);
        t_case(name);
        if (!temp_dir(dir, sizeof dir)) continue;
        snprintf(out, sizeof out, "%s/saved", dir);
        snprintf(src, sizeof src, MODELS "%s", cases[i].model);
        if (save_copy(cases[i].model, cases[i].arch, 0, out)) {
            sqlite3 *db = t_open();
            char *r1 = t_query(db, "SELECT bert_load('orig', ?1)", src, NULL);
            char *r2 = t_query(db, "SELECT bert_load('saved', ?1)", out, NULL);
            T_CHECK(strcmp(r1, "orig") == 0 && strcmp(r2, "saved") == 0, "load: %s / %s", r1, r2);
            free(r1);
            free(r2);
            check_same(db, cases[i].sql, cases[i].key, cases[i].model);
            char *task = t_query(db, "SELECT (SELECT task FROM bert_models WHERE name = 'orig') IS "
                                     "(SELECT task FROM bert_models WHERE name = 'saved') AND "
                                     "(SELECT labels FROM bert_models WHERE name = 'orig') IS "
                                     "(SELECT labels FROM bert_models WHERE name = 'saved')", NULL);
            T_CHECK(strcmp(task, "1") == 0, "task and labels differ");
            free(task);
            sqlite3_close(db);
        }
        bert_save_remove_tree(dir);
    }

    t_case("saver: a bare encoder saved in the sentence-transformers layout embeds as before");
    char dir[128], out[192];
    if (temp_dir(dir, sizeof dir)) {
        snprintf(out, sizeof out, "%s/st", dir);
        if (save_copy("st-mean-f16", BERT_SAVE_BARE, 1, out)) {
            sqlite3 *db = t_open();
            free(t_query(db, "SELECT bert_load('orig', '" MODELS "st-mean-f16')", NULL));
            free(t_query(db, "SELECT bert_load('saved', ?1)", out, NULL));
            double sim = t_query_double(db, "SELECT bert_similarity(bert_embed('a dog barked', 'orig'), "
                                            "bert_embed('a dog barked', 'saved'))", NULL);
            T_CHECK(sim > 0.99999, "cosine %.8f", sim);
            char *pool = t_query(db, "SELECT pooling || ',' || normalize || ',' || max_length FROM bert_models "
                                     "WHERE name = 'saved'", NULL);
            T_CHECK(strcmp(pool, "mean,1,128") == 0, "got %s", pool);
            free(pool);
            sqlite3_close(db);
        }
        bert_save_remove_tree(dir);
    }

    t_case("saver: an existing directory is kept unless overwrite, and a save replaces it whole");
    if (temp_dir(dir, sizeof dir)) {
        snprintf(out, sizeof out, "%s/m", dir);
        bert_model *m = NULL;
        char *err = NULL;
        if (T_CHECK(bert_model_load_precision(t_dir(MODELS "cls-3-f32"), BERT_PRECISION_FLOAT32, &m, &err) == 0,
                    "%s", err ? err : "?")) {
            bert_save_spec spec = {.base_dir = MODELS "cls-3-f32", .arch = BERT_SAVE_SEQUENCE,
                                   .labels = (const char *const *)m->head.labels, .num_labels = m->head.num_labels};
            T_CHECK(bert_save_model_dir(m, &spec, out, 0, &err) == 0, "%s", err ? err : "?");
            free(err);
            T_CHECK(bert_save_model_dir(m, &spec, out, 0, &err) == -1 && err && strstr(err, "overwrite"),
                    "got %s", err ? err : "success");
            free(err);
            T_CHECK(bert_save_model_dir(m, &spec, out, 1, &err) == 0, "%s", err ? err : "?");
            free(err);
            char path[256];
            snprintf(path, sizeof path, "%s/config.json", out);
            char *config = t_read_file(path, NULL);
            T_CHECK(config && strstr(config, "\"BertForSequenceClassification\"") && strstr(config, "\"num_labels\":3"),
                    "config.json: %s", config ? config : "(none)");
            free(config);
            /* Nothing but the model is left beside it. */
            char *ls = NULL;
            size_t n = 0;
            FILE *p = open_memstream(&ls, &n);
            char cmd[256];
            snprintf(cmd, sizeof cmd, "ls -A %s", dir);
            FILE *pipe = popen(cmd, "r");
            int c;
            while (pipe && (c = fgetc(pipe)) != EOF) fputc(c, p);
            if (pipe) pclose(pipe);
            fclose(p);
            T_CHECK(ls && strcmp(ls, "m\n") == 0, "the folder holds: %s", ls ? ls : "?");
            free(ls);
            bert_model_free(m);
        } else {
            free(err);
        }
        bert_save_remove_tree(dir);
    }
}

void suite_train_sql(void)
{
    saver_round_trip();
}
