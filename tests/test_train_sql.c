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
#include "../ext/models/registry.h"
#include "../ext/tasks/fine_tune_data.h"

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
        {"electra-cls-f16", BERT_SAVE_SEQUENCE, "SELECT bert_classify('not bad at all', '%s')", "label"},
        {"electra-ner", BERT_SAVE_TOKENS, "SELECT bert_ner('Anna flew to Rome', '%s')", "entity_group"},
        {"electra-qa", BERT_SAVE_QA,
         "SELECT json_array(bert_answer('who sings?', 'The bird sings in the tree.', '%s'))", "answer"},
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

/* ---- data preparation ----------------------------------------------------- */

static ft_value text_v(const char *s)
{
    return (ft_value){.type = FT_TEXT, .text = s, .len = strlen(s)};
}

static ft_value int_v(long long i)
{
    return (ft_value){.type = FT_INTEGER, .integer = i};
}

static const ft_value null_v = {.type = FT_NULL};

/* A private registration of a test model, cut at max_length. */
static bert_entry *entry_for(bert_registry *reg, const char *model, int max_length)
{
    bert_options opts;
    char *err = NULL, path[256];
    snprintf(path, sizeof path, MODELS "%s", model);
    bert_options_parse(NULL, &opts, &err);
    opts.max_length = max_length;
    opts.truncate = 1;
    bert_entry *e = NULL;
    if (T_CHECK(bert_registry_add(reg, "m", path, &opts, &err) == 0, "%s", err ? err : "?"))
        e = bert_registry_find(reg, "m", &err);
    free(err);
    return e;
}

/* Labels and examples of rows (n_cols columns) under options `json`:
 * 0, or -1 with *err for the caller to check. */
static int prepare(bert_entry *e, const char *json, int n_cols, const ft_value *values, size_t n_rows, ft_labels *labels,
                   ft_data *d, char **err)
{
    ft_options o;
    ft_rows rows = {.n_cols = n_cols};
    memset(labels, 0, sizeof *labels);
    memset(d, 0, sizeof *d);
    int rc = ft_options_parse(json, json ? strlen(json) : 0, &o, err);
    for (size_t r = 0; rc == 0 && r < n_rows; r++) rc = ft_rows_add(&rows, values + r * (size_t)n_cols);
    ft_how task;
    if (rc == 0) rc = ft_labels_decide(&o, &rows, NULL, 0, labels, &task, err);
    if (rc == 0) rc = ft_data_prepare(e, &o, task, labels, &rows, "query", d, err);
    ft_rows_free(&rows);
    ft_options_free(&o);
    return rc;
}

/* "tok:label" for each token of example x, labels by name ("-" for -100). */
static char *tagged(const bert_entry *e, const ft_data *d, const ft_labels *l, size_t x)
{
    static char buf[2048];
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < d->ex[x].len[0]; i++) {
        size_t at = d->ex[x].at[0] + (size_t)i;
        int lab = d->token_labels[at];
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s:%s", i ? " " : "",
                                 bert_entry_token(e, d->ids[at]), lab < 0 ? "-" : l->names[lab]);
        if (used >= sizeof buf) break;
    }
    return buf;
}

static void data_preparation(void)
{
    bert_registry reg = {0};
    ft_labels labels;
    ft_data d;
    char *err = NULL;

    t_case("data: tokens become BIO tags on the first piece of each word, the other pieces ignored");
    bert_entry *e = entry_for(&reg, "ner-conll-f32", 64);
    if (e) {
        const ft_value rows[] = {
            text_v("John Smith lives in New York"), text_v("[[0, 10, \"PER\"], [20, 28, \"LOC\"]]"),
            text_v("Huggingface is in Paris"), text_v("[[0, 11, \"ORG\"], [18, 23, \"LOC\"]]"),
        };
        if (T_CHECK(prepare(e, "{\"task\": \"tokens\"}", 2, rows, 2, &labels, &d, &err) == 0, "%s", err)) {
            char names[256] = "";
            for (int i = 0; i < labels.n; i++) strcat(strcat(names, i ? "," : ""), labels.names[i]);
            T_CHECK(strcmp(names, "B-LOC,B-ORG,B-PER,I-LOC,I-ORG,I-PER,O") == 0, "labels %s", names);
            T_CHECK(d.n == 2 && d.task == FT_HOW_TOKENS, "%zu examples", d.n);
            const char *want0 = "[CLS]:- john:B-PER smith:I-PER lives:O in:O new:B-LOC york:I-LOC [SEP]:-";
            T_CHECK(strcmp(tagged(e, &d, &labels, 0), want0) == 0, "got %s", tagged(e, &d, &labels, 0));
            const char *want1 = "[CLS]:- hugging:B-ORG ##face:- is:O in:O paris:B-LOC [SEP]:-";
            T_CHECK(strcmp(tagged(e, &d, &labels, 1), want1) == 0, "got %s", tagged(e, &d, &labels, 1));
        }
        free(err);
        err = NULL;
        ft_data_free(&d);
        ft_labels_free(&labels);

        t_case("data: entity spans outside the text, not on word boundaries, overlapping, or unlabelled are refused");
        static const struct { const char *ents, *fragment; } bad[] = {
            {"[[0, 40, \"PER\"]]", "outside the text"},
            {"[[0, 3, \"PER\"]]", "not aligned to the tokenizer's words"},
            {"[[1, 4, \"PER\"]]", "not aligned"},
            {"[[0, 10, \"PER\"], [5, 16, \"LOC\"]]", "overlap"},
            {"[[0, 4]]", "[start, end, label]"},
            {"{\"a\": 1}", "not a JSON array"},
        };
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
            const ft_value rows1[] = {text_v("John Smith lives in New York"), text_v(bad[i].ents)};
            int rc = prepare(e, "{\"task\": \"tokens\"}", 2, rows1, 1, &labels, &d, &err);
            T_CHECK(rc == -1 && err && strstr(err, bad[i].fragment), "%s: got %s", bad[i].ents, err ? err : "success");
            free(err);
            err = NULL;
            ft_data_free(&d);
            ft_labels_free(&labels);
        }
        const ft_value rows2[] = {text_v("John Smith"), text_v("[[0, 10, \"PER\"]]")};
        int rc = prepare(e, "{\"task\": \"tokens\", \"labels\": [\"O\", \"B-LOC\", \"I-LOC\"]}", 2, rows2, 1,
                         &labels, &d, &err);
        T_CHECK(rc == -1 && err && strstr(err, "outside option \"labels\""), "got %s", err ? err : "success");
        free(err);
        err = NULL;
    }
    bert_registry_clear(&reg);

    t_case("data: question-answering windows with doc_stride locate the answer as run_qa.py does");
    e = entry_for(&reg, "qa-f32", 20);
    if (e) {
        const char *context = "The cat sat on the mat. The dog slept under the old table near the door.";
        const ft_value rows[] = {text_v("  where did the dog sleep?"), text_v(context), int_v(44), text_v("the old table"),
                                 text_v("who came?"), text_v("The cat sat."), null_v, null_v};
        if (T_CHECK(prepare(e, "{\"task\": \"qa\", \"doc_stride\": 3}", 4, rows, 2, &labels, &d, &err) == 0, "%s",
                    err)) {
            /* question: where did the dog sleep ? (6 pieces) + [CLS] [SEP] [SEP]: 9 fixed, 11 per window,
             * windows every 8 of the 18 context pieces: 0-11, 8-18; the answer (pieces 11-13)
             * lies wholly in the second only. */
            T_CHECK(d.n == 3, "%zu examples", d.n);
            int found = 0;
            for (size_t x = 0; x < d.n && x < 2; x++) {
                const ft_example *ex = &d.ex[x];
                if (ex->start == 0 && ex->end == 0) continue;
                found++;
                char got[128] = "";
                for (int i = ex->start; i <= ex->end; i++)
                    strcat(strcat(got, i > ex->start ? " " : ""), bert_entry_token(e, d.ids[ex->at[0] + (size_t)i]));
                T_CHECK(x == 1 && strcmp(got, "the old table") == 0, "window %zu: %s", x, got);
                T_CHECK(strcmp(bert_entry_token(e, d.ids[ex->at[0] + 1]), "where") == 0, "question first");
                T_CHECK(d.types[ex->at[0] + (size_t)ex->start] == 1, "context in segment 1");
            }
            T_CHECK(found == 1, "%d windows hold the answer", found);
            T_CHECK(d.n == 3 && d.ex[2].start == 0 && d.ex[2].end == 0 && d.ex[2].row == 1, "no answer points at [CLS]");
        }
        free(err);
        err = NULL;
        ft_data_free(&d);
        ft_labels_free(&labels);

        t_case("data: an answer that is not at answer_start, or a question too long for doc_stride, is refused");
        const ft_value rows1[] = {text_v("where?"), text_v(context), int_v(40), text_v("the old table")};
        int rc = prepare(e, "{\"task\": \"qa\"}", 4, rows1, 1, &labels, &d, &err);
        T_CHECK(rc == -1 && err && strstr(err, "is not at answer_start 40") && strstr(err, "instr(context, answer) - 1"),
                "got %s", err ? err : "success");
        free(err);
        err = NULL;
        const ft_value rows2[] = {text_v("where did the dog sleep?"), text_v(context), int_v(44), text_v("the old table")};
        rc = prepare(e, "{\"task\": \"qa\", \"doc_stride\": 11}", 4, rows2, 1, &labels, &d, &err);
        T_CHECK(rc == -1 && err && strstr(err, "doc_stride"), "got %s", err ? err : "success");
        free(err);
        err = NULL;
    }
    bert_registry_clear(&reg);

    t_case("data: classification labels sorted (numbers as numbers), multi-label targets, and the errors");
    e = entry_for(&reg, "cls-3-f32", 32);
    if (e) {
        const ft_value ints[] = {text_v("a"), int_v(10), text_v("b"), int_v(2), text_v("c"), int_v(1), text_v("d"),
                                 int_v(2)};
        if (T_CHECK(prepare(e, NULL, 2, ints, 4, &labels, &d, &err) == 0, "%s", err))
            T_CHECK(labels.n == 3 && strcmp(labels.names[0], "1") == 0 && strcmp(labels.names[2], "10") == 0 &&
                        d.ex[0].label == 2 && d.ex[1].label == 1 && d.task == FT_HOW_CLASSIFY,
                    "labels %s %s %s", labels.names[0], labels.names[1], labels.names[2]);
        free(err);
        err = NULL;
        ft_data_free(&d);
        ft_labels_free(&labels);
        const ft_value multi[] = {text_v("a"), text_v("[\"x\", \"y\"]"), text_v("b"), text_v("[\"z\"]")};
        if (T_CHECK(prepare(e, NULL, 2, multi, 2, &labels, &d, &err) == 0, "%s", err))
            T_CHECK(d.task == FT_HOW_MULTI_LABEL && labels.n == 3 && d.targets[0] == 1 && d.targets[1] == 1 &&
                        d.targets[2] == 0 && d.targets[5] == 1,
                    "multi-label targets");
        free(err);
        err = NULL;
        ft_data_free(&d);
        ft_labels_free(&labels);
        static const struct { const char *json; int cols; ft_value v[6]; int rows; const char *fragment; } bad[] = {
            {NULL, 2, {{.type = FT_TEXT, .text = "a", .len = 1}, {.type = FT_NULL}}, 1, "the label is NULL"},
            {NULL, 2, {{.type = FT_TEXT, .text = "a", .len = 1}, {.type = FT_TEXT, .text = "x", .len = 1},
                       {.type = FT_TEXT, .text = "b", .len = 1}, {.type = FT_TEXT, .text = "x", .len = 1}}, 2,
             "one class only"},
            {"{\"labels\": [\"x\", \"y\"]}", 2, {{.type = FT_TEXT, .text = "a", .len = 1},
                                                   {.type = FT_TEXT, .text = "z", .len = 1}}, 1,
             "outside option \"labels\""},
            {NULL, 1, {{.type = FT_TEXT, .text = "a", .len = 1}}, 1, "returns 1 column; task \"classify\" takes"},
            {NULL, 2, {{.type = FT_INTEGER, .integer = 3}, {.type = FT_TEXT, .text = "x", .len = 1},
                       {.type = FT_TEXT, .text = "b", .len = 1}, {.type = FT_TEXT, .text = "y", .len = 1}}, 2,
             "column 1 (text) is an INTEGER"},
            {NULL, 2, {{.type = FT_TEXT, .text = "a", .len = 1}, {.type = FT_REAL, .real = 0.5}}, 1, "regression"},
            {"{\"epochs\": \"3\"}", 2, {{.type = FT_TEXT, .text = "a", .len = 1}}, 1, "\"epochs\" must be"},
            {"{\"epoch\": 3}", 2, {{.type = FT_TEXT, .text = "a", .len = 1}}, 1, "unknown option \"epoch\""},
            {"{\"shuffle\": 1}", 2, {{.type = FT_TEXT, .text = "a", .len = 1}}, 1, "true or false"},
            {"[1]", 2, {{.type = FT_TEXT, .text = "a", .len = 1}}, 1, "must be a JSON object"},
        };
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
            int rc = prepare(e, bad[i].json, bad[i].cols, bad[i].v, (size_t)bad[i].rows, &labels, &d, &err);
            T_CHECK(rc == -1 && err && strstr(err, bad[i].fragment), "case %zu: got %s", i, err ? err : "success");
            free(err);
            err = NULL;
            ft_data_free(&d);
            ft_labels_free(&labels);
        }
    }
    bert_registry_clear(&reg);
}

/* Our examples against tests/golden/fine_tune_data.jsonl: run_qa.py's windows
 * and run_ner.py's first-piece tags, computed with Hugging Face's tokenizer
 * by tests/golden/make_fine_tune_goldens.mjs. */
static void data_goldens(void)
{
    t_case("data: QA windows and BIO tags agree with run_qa.py's and run_ner.py's preparation (golden)");
    char *text = t_read_file("tests/golden/fine_tune_data.jsonl", NULL);
    if (!T_CHECK(text, "cannot read tests/golden/fine_tune_data.jsonl")) return;
    sqlite3 *db = t_open();
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db,
                       "SELECT json_extract(?1, '$.task'), json_extract(?1, '$.model'), json_extract(?1, '$.max_length'), "
                       "json_extract(?1, '$.doc_stride'), json_extract(?1, '$.question'), json_extract(?1, '$.context'), "
                       "json_extract(?1, '$.answer_start'), json_extract(?1, '$.answer_text'), "
                       "json_extract(?1, '$.windows'), json_extract(?1, '$.text'), json_extract(?1, '$.entities'), "
                       "json_extract(?1, '$.ids'), json_extract(?1, '$.labels')",
                       -1, &st, NULL);
    int cases = 0, windows = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, line, -1, SQLITE_TRANSIENT);
        if (!T_CHECK(sqlite3_step(st) == SQLITE_ROW, "bad line")) break;
        const char *task = (const char *)sqlite3_column_text(st, 0), *model = (const char *)sqlite3_column_text(st, 1);
        bert_registry reg = {0};
        int max_length = sqlite3_column_type(st, 2) == SQLITE_NULL ? 512 : sqlite3_column_int(st, 2);
        bert_entry *e = entry_for(&reg, model, max_length);
        ft_labels labels;
        ft_data d;
        char *err = NULL, opts[96], got[8192];
        if (e && strcmp(task, "qa") == 0) {
            snprintf(opts, sizeof opts, "{\"task\": \"qa\", \"doc_stride\": %d}", sqlite3_column_int(st, 3));
            ft_value row[4] = {text_v((const char *)sqlite3_column_text(st, 4)),
                               text_v((const char *)sqlite3_column_text(st, 5)),
                               sqlite3_column_type(st, 6) == SQLITE_NULL ? null_v : int_v(sqlite3_column_int(st, 6)),
                               sqlite3_column_type(st, 7) == SQLITE_NULL ? null_v
                                                                         : text_v((const char *)sqlite3_column_text(st, 7))};
            if (T_CHECK(prepare(e, opts, 4, row, 1, &labels, &d, &err) == 0, "%s", err)) {
                /* Ours as the golden's JSON: [{"ids":[...],"start":s,"end":e}, ...]. */
                size_t used = (size_t)snprintf(got, sizeof got, "[");
                for (size_t x = 0; x < d.n && used < sizeof got - 64; x++) {
                    used += (size_t)snprintf(got + used, sizeof got - used, "%s{\"ids\":[", x ? "," : "");
                    for (int i = 0; i < d.ex[x].len[0] && used < sizeof got - 64; i++)
                        used += (size_t)snprintf(got + used, sizeof got - used, "%s%d", i ? "," : "",
                                                 d.ids[d.ex[x].at[0] + (size_t)i]);
                    used += (size_t)snprintf(got + used, sizeof got - used, "],\"start\":%d,\"end\":%d}", d.ex[x].start,
                                             d.ex[x].end);
                }
                snprintf(got + used, sizeof got - used, "]");
                const char *want = (const char *)sqlite3_column_text(st, 8);
                T_CHECK(strcmp(got, want) == 0, "%s max_length %d stride %d, %s:\n ours   %s\n golden %s", model,
                        max_length, sqlite3_column_int(st, 3), (const char *)sqlite3_column_text(st, 4), got, want);
                windows += (int)d.n;
            }
        } else if (e) {
            ft_value row[2] = {text_v((const char *)sqlite3_column_text(st, 9)),
                               text_v((const char *)sqlite3_column_text(st, 10))};
            if (T_CHECK(prepare(e, "{\"task\": \"tokens\"}", 2, row, 1, &labels, &d, &err) == 0, "%s", err)) {
                size_t used = (size_t)snprintf(got, sizeof got, "[");
                for (int i = 0; i < d.ex[0].len[0] && used < sizeof got - 64; i++) {
                    int lab = d.token_labels[d.ex[0].at[0] + (size_t)i];
                    used += (size_t)snprintf(got + used, sizeof got - used, "%s%s%s%s", i ? "," : "",
                                             lab < 0 ? "" : "\"", lab < 0 ? "null" : labels.names[lab], lab < 0 ? "" : "\"");
                }
                snprintf(got + used, sizeof got - used, "]");
                T_CHECK(strcmp(got, (const char *)sqlite3_column_text(st, 12)) == 0, "%s:\n ours   %s\n golden %s",
                        (const char *)sqlite3_column_text(st, 9), got, (const char *)sqlite3_column_text(st, 12));
            }
        }
        free(err);
        ft_data_free(&d);
        ft_labels_free(&labels);
        bert_registry_clear(&reg);
        cases++;
    }
    T_CHECK(cases >= 50 && windows >= 100, "%d cases, %d windows", cases, windows);
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(text);
}

/* ---- bert_train through SQL ---------------------------------------------------- */

#define MAX_ROWS 64

typedef struct {
    int n;
    long step[MAX_ROWS];
    double loss[MAX_ROWS];
    char *eval[MAX_ROWS], *saved[MAX_ROWS];
    char *error;           /* sqlite3_errmsg when the statement failed */
    int rc;                /* the last sqlite3_step's */
} train_rows;

static void rows_free(train_rows *r)
{
    for (int i = 0; i < r->n; i++) {
        free(r->eval[i]);
        free(r->saved[i]);
    }
    free(r->error);
    memset(r, 0, sizeof *r);
}

static char *dup_col(sqlite3_stmt *st, int k)
{
    const char *t = (const char *)sqlite3_column_text(st, k);
    return t ? strdup(t) : NULL;
}

/* Runs SELECT step, loss, eval, saved FROM bert_train(?1, ?2, ?3, ?4). */
static void train(sqlite3 *db, const char *out, const char *base, const char *query, const char *options,
                  train_rows *r)
{
    memset(r, 0, sizeof *r);
    sqlite3_stmt *st = NULL;
    r->rc = sqlite3_prepare_v2(db, "SELECT step, loss, eval, saved FROM bert_train(?1, ?2, ?3, ?4)", -1, &st, NULL);
    if (r->rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, out, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, base, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, query, -1, SQLITE_STATIC);
        if (options) sqlite3_bind_text(st, 4, options, -1, SQLITE_STATIC);
        while ((r->rc = sqlite3_step(st)) == SQLITE_ROW && r->n < MAX_ROWS) {
            r->step[r->n] = sqlite3_column_int64(st, 0);
            r->loss[r->n] = sqlite3_column_type(st, 1) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 1);
            r->eval[r->n] = dup_col(st, 2);
            r->saved[r->n] = dup_col(st, 3);
            r->n++;
        }
    }
    if (r->rc != SQLITE_DONE) r->error = strdup(sqlite3_errmsg(db));
    sqlite3_finalize(st);
}

/* Whether two files hold the same bytes. */
static int same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        int ca = getc(fa), cb = getc(fb);
        same = ca == cb;
        if (ca == EOF) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

/* Whether the first megabyte of a file holds `needle` (a safetensors header, a config.json). */
static int file_contains(const char *path, const char *needle)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char *buf = malloc((1 << 20) + 1);
    size_t n = buf ? fread(buf, 1, 1 << 20, f) : 0;
    fclose(f);
    int found = 0;
    for (size_t i = 0, len = strlen(needle); buf && i + len <= n && !found; i++) found = memcmp(buf + i, needle, len) == 0;
    free(buf);
    return found;
}

static double json_number(sqlite3 *db, const char *json, const char *path)
{
    return t_query_double(db, "SELECT json_extract(?1, ?2)", json ? json : "{}", path, NULL);
}

static void exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    T_CHECK(sqlite3_exec(db, sql, NULL, NULL, &err) == SQLITE_OK, "%s: %s", sql, err ? err : "?");
    sqlite3_free(err);
}

static const char *const fixtures =
    "CREATE TABLE reviews(text, label);"
    "INSERT INTO reviews VALUES ('I love this movie', 'pos'), ('what a great day', 'pos'), ('this is wonderful', 'pos'),"
    " ('I hate it', 'neg'), ('terrible and awful', 'neg'), ('the worst film ever', 'neg'), ('so so', 'meh');"
    "CREATE TABLE ner(text, entities);"
    "INSERT INTO ner VALUES ('John Smith lives in New York', '[[0,10,\"PER\"],[20,28,\"LOC\"]]'),"
    " ('Mary went to Paris', '[[0,4,\"PER\"],[13,18,\"LOC\"]]'), ('Berlin is big', '[[0,6,\"LOC\"]]');"
    "CREATE TABLE qa(q, c, s, a);"
    "INSERT INTO qa VALUES ('Where does John live?', 'John lives in Paris with his dog.', 14, 'Paris'),"
    " ('Who has a dog?', 'John lives in Paris with his dog.', 0, 'John'), ('What is blue?', 'The sky is green.', NULL, NULL);"
    "CREATE TABLE pairs(a, p, n);"
    "INSERT INTO pairs VALUES ('a dog barks', 'the puppy is noisy', 'taxes rise'), ('it rains', 'wet weather today',"
    " 'a cat sleeps'), ('stock prices fell', 'the market dropped', 'rain again');";

static void end_to_end(void)
{
    char dir[128], out[192];
    train_rows r;

    t_case("bert_train: classify on BERT, rows every logging_steps, the saved model's bert_label agrees with eval");
    if (temp_dir(dir, sizeof dir)) {
        sqlite3 *db = t_open();
        exec(db, fixtures);
        snprintf(out, sizeof out, "%s/cls", dir);
        train(db, out, MODELS "cls-3-f32", "SELECT text, label FROM reviews",
              "{\"epochs\": 4, \"batch_size\": 2, \"logging_steps\": 3, \"learning_rate\": 1e-3, "
              "\"eval_query\": \"SELECT text, label FROM reviews\"}", &r);
        /* 7 rows: 4 batches an epoch, 16 steps; rows at 3, 6, 9, 12, 15 and the last at 16. */
        T_CHECK(r.rc == SQLITE_DONE && r.n == 6 && r.step[0] == 3 && r.step[4] == 15 && r.step[5] == 16,
                "rc %d, %d rows, %s", r.rc, r.n, r.error ? r.error : "");
        if (r.n == 6) {
            T_CHECK(r.saved[5] && strcmp(r.saved[5], out) == 0 && !r.saved[0] && !r.eval[0], "saved %s",
                    r.saved[5] ? r.saved[5] : "NULL");
            T_CHECK(isfinite(r.loss[0]) && r.loss[5] < r.loss[0], "loss %g -> %g", r.loss[0], r.loss[5]);
            char *load = t_query(db, "SELECT bert_load('ft', ?1)", out, NULL);
            T_CHECK(strcmp(load, "ft") == 0, "%s", load);
            free(load);
            /* accuracy and macro-F1 of bert_label's answers, computed here. */
            double acc = t_query_double(db, "SELECT avg(bert_label(text, 'ft') = label) FROM reviews", NULL);
            double f1 = t_query_double(db,
                "WITH p AS (SELECT label AS gold, bert_label(text, 'ft') AS pred FROM reviews), "
                "l AS (SELECT gold AS x FROM p UNION SELECT pred FROM p), "
                "c AS (SELECT x, (SELECT count(*) FROM p WHERE gold = x AND pred = x) AS tp, "
                "(SELECT count(*) FROM p WHERE pred = x AND gold != x) AS fp, "
                "(SELECT count(*) FROM p WHERE gold = x AND pred != x) AS fn FROM l) "
                "SELECT avg(2.0 * tp / (2 * tp + fp + fn)) FROM c", NULL);
            T_CHECK(fabs(acc - json_number(db, r.eval[5], "$.accuracy")) < 1e-9 &&
                        fabs(f1 - json_number(db, r.eval[5], "$.f1")) < 1e-9,
                    "eval %s, computed accuracy %g f1 %g", r.eval[5], acc, f1);
            char *labels = t_query(db, "SELECT labels || task FROM bert_models WHERE name = 'ft'", NULL);
            T_CHECK(strcmp(labels, "[\"meh\",\"neg\",\"pos\"]sequence_classification") == 0, "%s", labels);
            free(labels);
        }
        rows_free(&r);
        sqlite3_close(db);
        bert_save_remove_tree(dir);
    }

    static const struct {
        const char *title, *model, *query, *options, *check, *expect;
    } tasks[] = {
        {"tokens on RoBERTa", "roberta-ner", "SELECT * FROM ner",
         "{\"task\": \"tokens\", \"epochs\": 3, \"batch_size\": 2, \"learning_rate\": 1e-3, "
         "\"eval_query\": \"SELECT * FROM ner\"}",
         "SELECT json_type(bert_ner('Mary went to Paris', 'ft')) || (SELECT task FROM bert_models WHERE name = 'ft')",
         "arraytoken_classification"},
        {"qa on DistilBERT", "qa-distil", "SELECT * FROM qa",
         "{\"task\": \"qa\", \"epochs\": 3, \"batch_size\": 2, \"learning_rate\": 1e-3, "
         "\"eval_query\": \"SELECT * FROM qa\"}",
         "SELECT json_type(bert_answer('Where?', 'In Paris.', 'ft'), '$.answer') || "
         "(SELECT task FROM bert_models WHERE name = 'ft')", "textquestion_answering"},
        {"embed with hard negatives on BERT (sentence-transformers)", "st-mean-f16", "SELECT a, p, n FROM pairs",
         "{\"task\": \"embed\", \"epochs\": 2, \"batch_size\": 3, \"eval_query\": \"SELECT a, p FROM pairs\"}",
         "SELECT length(bert_embed('hello', 'ft')) || pooling || normalize FROM bert_models WHERE name = 'ft'",
         "1024mean1"},
        {"multi-label on XLM-RoBERTa", "xlmr-cls-bf16",
         "SELECT text, CASE WHEN label = 'pos' THEN '[\"good\", \"x\"]' ELSE '[\"x\"]' END FROM reviews",
         "{\"epochs\": 1, \"batch_size\": 4}",
         "SELECT json_array_length(bert_classify('fine', 'ft')) || (SELECT labels FROM bert_models WHERE name = 'ft')",
         "2[\"good\",\"x\"]"},
        {"regression on MPNet", "mpnet-cls", "SELECT text, length(text) / 10.0 FROM reviews",
         "{\"task\": \"regression\", \"epochs\": 1, \"batch_size\": 4, "
         "\"eval_query\": \"SELECT text, length(text) / 10.0 FROM reviews\"}",
         "SELECT json_extract(bert_classify('fine', 'ft'), '$[0].label')", "LABEL_0"},
        {"pairs on DistilBERT", "distil-cls", "SELECT text, 'a review', label FROM reviews",
         "{\"epochs\": 1, \"batch_size\": 4}",
         "SELECT json_type(bert_classify_pair('fine', 'a review', 'ft'))", "array"},
        {"classify on ELECTRA (embeddings_project)", "electra-cls-f16", "SELECT text, label FROM reviews",
         "{\"epochs\": 2, \"batch_size\": 4, \"learning_rate\": 1e-3, \"eval_query\": \"SELECT text, label FROM reviews\"}",
         "SELECT (SELECT labels || task FROM bert_models WHERE name = 'ft') || "
         "(bert_label('I love this movie', 'ft') IN ('meh', 'neg', 'pos'))",
         "[\"meh\",\"neg\",\"pos\"]sequence_classification1"},
        {"tokens on ELECTRA", "electra-ner", "SELECT * FROM ner",
         "{\"task\": \"tokens\", \"epochs\": 2, \"batch_size\": 2, \"learning_rate\": 1e-3}",
         "SELECT json_type(bert_ner('Mary went to Paris', 'ft')) || (SELECT task FROM bert_models WHERE name = 'ft')",
         "arraytoken_classification"},
        {"qa on ELECTRA", "electra-qa", "SELECT * FROM qa",
         "{\"task\": \"qa\", \"epochs\": 2, \"batch_size\": 2, \"learning_rate\": 1e-3}",
         "SELECT json_type(bert_answer('Where?', 'In Paris.', 'ft'), '$.answer') || "
         "(SELECT task FROM bert_models WHERE name = 'ft')", "textquestion_answering"},
    };
    for (size_t i = 0; i < sizeof tasks / sizeof *tasks; i++) {
        char title[160];
        snprintf(title, sizeof title, "bert_train: %s, served by bert_load at once", tasks[i].title);
        t_case(title);
        if (!temp_dir(dir, sizeof dir)) continue;
        sqlite3 *db = t_open();
        exec(db, fixtures);
        snprintf(out, sizeof out, "%s/m", dir);
        train(db, out, MODELS "x", "SELECT 1", NULL, &r);   /* a base that does not exist: an error, nothing written */
        T_CHECK(r.rc != SQLITE_DONE && r.error && strstr(r.error, "neither a registered model"), "%s",
                r.error ? r.error : "?");
        rows_free(&r);
        char base[128];
        snprintf(base, sizeof base, MODELS "%s", tasks[i].model);
        train(db, out, base, tasks[i].query, tasks[i].options, &r);
        if (T_CHECK(r.rc == SQLITE_DONE && r.n >= 1 && r.saved[r.n - 1], "%s", r.error ? r.error : "no rows")) {
            free(t_query(db, "SELECT bert_load('ft', ?1)", out, NULL));
            char *got = t_query(db, tasks[i].check, NULL);
            T_CHECK(strcmp(got, tasks[i].expect) == 0, "got %s", got);
            free(got);
            if (strstr(tasks[i].options, "eval_query"))
                T_CHECK(r.eval[r.n - 1] != NULL, "no eval");
        }
        if (i == 0 && r.n >= 1 && r.eval[r.n - 1]) {
            /* entity-level F1 of bert_ner's spans (aggregation first) against the rows, computed here. */
            free(t_query(db, "SELECT bert_load('first', ?1, '{\"aggregation\": \"first\"}')", out, NULL));
            double f1 = t_query_double(db,
                "WITH g AS (SELECT n.rowid AS r, json_extract(e.value, '$[0]') AS s, json_extract(e.value, '$[1]') AS en,"
                " json_extract(e.value, '$[2]') AS l FROM ner n, json_each(n.entities) e), "
                "p AS (SELECT n.rowid AS r, json_extract(e.value, '$.start') AS s, json_extract(e.value, '$.end') AS en,"
                " json_extract(e.value, '$.entity_group') AS l FROM ner n, json_each(bert_ner(n.text, 'first')) e), "
                "t AS (SELECT count(*) AS tp FROM g JOIN p USING (r, s, en, l)) "
                "SELECT CASE WHEN tp = 0 THEN 0 ELSE 2.0 * tp / ((SELECT count(*) FROM g) + (SELECT count(*) FROM p)) END "
                "FROM t", NULL);
            T_CHECK(fabs(f1 - json_number(db, r.eval[r.n - 1], "$.f1")) < 1e-9, "eval %s, computed f1 %g",
                    r.eval[r.n - 1], f1);
        }
        if (strcmp(tasks[i].model, "electra-cls-f16") == 0 && r.n >= 1 && r.eval[r.n - 1]) {
            /* The trained weights, saved under ELECTRA's names, are what bert_label serves. */
            double acc = t_query_double(db, "SELECT avg(bert_label(text, 'ft') = label) FROM reviews", NULL);
            T_CHECK(fabs(acc - json_number(db, r.eval[r.n - 1], "$.accuracy")) < 1e-9, "eval %s, computed accuracy %g",
                    r.eval[r.n - 1], acc);
            char path[256];
            snprintf(path, sizeof path, "%s/model.safetensors", out);
            static const char *const names[] = {"\"electra.embeddings.word_embeddings.weight\"",
                                                "\"electra.embeddings_project.weight\"", "\"classifier.dense.weight\"",
                                                "\"classifier.out_proj.bias\""};
            for (int k = 0; k < 4; k++) T_CHECK(file_contains(path, names[k]), "%s lacks %s", path, names[k]);
            snprintf(path, sizeof path, "%s/config.json", out);
            T_CHECK(file_contains(path, "\"ElectraForSequenceClassification\""), "%s: architectures", path);
        }
        if (i == 2 && r.n >= 1 && r.eval[r.n - 1]) {
            double top1 = t_query_double(db,
                "WITH s AS (SELECT x.rowid AS i, y.rowid AS j, bert_similarity(x.a, y.p, 'ft') AS sim "
                "FROM pairs x, pairs y), b AS (SELECT i, j, max(sim) FROM s GROUP BY i) SELECT avg(i = j) FROM b", NULL);
            T_CHECK(fabs(top1 - json_number(db, r.eval[r.n - 1], "$.top1")) < 1e-9, "eval %s, computed %g",
                    r.eval[r.n - 1], top1);
        }
        rows_free(&r);
        sqlite3_close(db);
        bert_save_remove_tree(dir);
    }
}

typedef struct {
    sqlite3 *db;
    int rows, at;
} interrupt_plan;

static int progress(void *arg)
{
    interrupt_plan *p = arg;
    if (p->rows >= p->at) sqlite3_interrupt(p->db);
    return 0;
}

static void long_runs(void)
{
    char dir[128], out[192], resumed[192], ckpt[256];
    train_rows full, rest;

    t_case("bert_train: resume_from a checkpoint gives the losses of the uninterrupted run");
    if (temp_dir(dir, sizeof dir)) {
        sqlite3 *db = t_open();
        exec(db, fixtures);
        snprintf(out, sizeof out, "%s/full", dir);
        snprintf(resumed, sizeof resumed, "%s/resumed", dir);
        const char *opts = "{\"max_steps\": 6, \"batch_size\": 2, \"logging_steps\": 1, \"save_steps\": 3, "
                           "\"dropout\": 0, \"learning_rate\": 1e-3, \"warmup_ratio\": 0.2}";
        train(db, out, MODELS "cls-3-f32", "SELECT text, label FROM reviews", opts, &full);
        T_CHECK(full.rc == SQLITE_DONE && full.n == 6 && full.saved[2] && strstr(full.saved[2], "checkpoint-3"),
                "%d rows %s", full.n, full.error ? full.error : "");
        snprintf(ckpt, sizeof ckpt, "%s/checkpoint-3", out);
        char resume_opts[512];
        snprintf(resume_opts, sizeof resume_opts,
                 "{\"max_steps\": 6, \"batch_size\": 2, \"logging_steps\": 1, \"save_steps\": 3, \"dropout\": 0, "
                 "\"learning_rate\": 1e-3, \"warmup_ratio\": 0.2, \"resume_from\": \"%s\"}", ckpt);
        train(db, resumed, MODELS "cls-3-f32", "SELECT text, label FROM reviews", resume_opts, &rest);
        T_CHECK(rest.rc == SQLITE_DONE && rest.n == 3 && rest.step[0] == 4, "%d rows from %ld %s", rest.n,
                rest.n ? rest.step[0] : 0L, rest.error ? rest.error : "");
        for (int i = 0; i < rest.n && full.n == 6; i++)
            T_CHECK(fabs(rest.loss[i] - full.loss[3 + i]) <= 1e-6 * fabs(full.loss[3 + i]), "step %ld: %.9g vs %.9g",
                    rest.step[i], rest.loss[i], full.loss[3 + i]);
        rows_free(&full);
        rows_free(&rest);
        sqlite3_close(db);
        bert_save_remove_tree(dir);
    }

    t_case("bert_train: with dropout, accumulation and shuffle, a run resumed mid-epoch ends on the same weights");
    if (temp_dir(dir, sizeof dir)) {
        sqlite3 *db = t_open();
        exec(db, fixtures);
        /* One thread: the products' sums then have one order, so the runs can match to the bit. */
        free(t_query(db, "SELECT bert_load('one', '" MODELS "cls-3-f32', '{\"threads\": 1}')", NULL));
        snprintf(out, sizeof out, "%s/full", dir);
        snprintf(resumed, sizeof resumed, "%s/resumed", dir);
        /* 7 rows, batches of 2, 2 a step: 4 batches, 2 steps an epoch; step 3 ends mid-epoch. */
        const char *common = "\"max_steps\": 6, \"batch_size\": 2, \"gradient_accumulation_steps\": 2, "
                             "\"logging_steps\": 1, \"save_steps\": 3, \"learning_rate\": 1e-3, \"seed\": 7";
        char opts[512], resume_opts[768];
        snprintf(opts, sizeof opts, "{%s, \"dropout\": 0.2}", common);
        train(db, out, "one", "SELECT text, label FROM reviews", opts, &full);
        T_CHECK(full.rc == SQLITE_DONE && full.n == 6 && full.saved[2] && strstr(full.saved[2], "checkpoint-3"),
                "%d rows %s", full.n, full.error ? full.error : "");
        snprintf(ckpt, sizeof ckpt, "%s/checkpoint-3", out);
        snprintf(resume_opts, sizeof resume_opts, "{%s, \"dropout\": 0.2, \"resume_from\": \"%s\"}", common, ckpt);
        train(db, resumed, "one", "SELECT text, label FROM reviews", resume_opts, &rest);
        T_CHECK(rest.rc == SQLITE_DONE && rest.n == 3 && rest.step[0] == 4, "%d rows from %ld %s", rest.n,
                rest.n ? rest.step[0] : 0L, rest.error ? rest.error : "");
        for (int i = 0; i < rest.n && full.n == 6; i++)
            T_CHECK(rest.loss[i] == full.loss[3 + i], "step %ld: %.17g vs %.17g", rest.step[i], rest.loss[i],
                    full.loss[3 + i]);
        char wa[256], wb[256];
        snprintf(wa, sizeof wa, "%s/model.safetensors", out);
        snprintf(wb, sizeof wb, "%s/model.safetensors", resumed);
        T_CHECK(same_file(wa, wb), "the resumed run's weights differ from the uninterrupted run's");
        /* The dropout was on: without it the same run logs other losses. */
        train_rows off;
        char off_dir[192], off_opts[512];
        snprintf(off_dir, sizeof off_dir, "%s/off", dir);
        snprintf(off_opts, sizeof off_opts, "{%s, \"dropout\": 0}", common);
        train(db, off_dir, "one", "SELECT text, label FROM reviews", off_opts, &off);
        int differ = 0;
        for (int i = 0; i < off.n && i < full.n; i++) differ |= off.loss[i] != full.loss[i];
        T_CHECK(off.rc == SQLITE_DONE && differ, "dropout 0.2 changed no loss");
        rows_free(&off);
        rows_free(&full);
        rows_free(&rest);
        sqlite3_close(db);
        bert_save_remove_tree(dir);
    }

    t_case("bert_train: a qa eval_query with unanswerable rows is scored as SQuAD 2.0 (no answer can be right)");
    if (temp_dir(dir, sizeof dir)) {
        sqlite3 *db = t_open();
        exec(db, fixtures);
        snprintf(out, sizeof out, "%s/qa", dir);
        /* Taught only that its one question has no answer, the model points
         * every question at [CLS]: the null answer wins on all three rows,
         * which is right on the unanswerable row alone (squad_v2: an empty
         * prediction against an empty gold answer is exact). */
        train(db, out, MODELS "qa-distil", "SELECT * FROM qa WHERE a IS NULL",
              "{\"task\": \"qa\", \"max_steps\": 30, \"learning_rate\": 1e-3, \"dropout\": 0, "
              "\"logging_steps\": 30, \"eval_query\": \"SELECT * FROM qa\"}", &full);
        if (T_CHECK(full.rc == SQLITE_DONE && full.n >= 1 && full.eval[full.n - 1], "%s",
                    full.error ? full.error : "no eval")) {
            const char *ev = full.eval[full.n - 1];
            T_CHECK(fabs(json_number(db, ev, "$.exact_match") - 100.0 / 3) < 1e-9 &&
                        fabs(json_number(db, ev, "$.f1") - 100.0 / 3) < 1e-9,
                    "eval %s, not one row of three right", ev);
        }
        rows_free(&full);
        sqlite3_close(db);
        bert_save_remove_tree(dir);
    }

    t_case("bert_train: sqlite3_interrupt stops training and leaves the last checkpoint whole");
    if (temp_dir(dir, sizeof dir)) {
        sqlite3 *db = t_open();
        exec(db, fixtures);
        snprintf(out, sizeof out, "%s/run", dir);
        interrupt_plan plan = {db, 0, 2};
        char last[256] = "";
        sqlite3_progress_handler(db, 1, progress, &plan);
        sqlite3_stmt *st = NULL;
        sqlite3_prepare_v2(db, "SELECT step, saved FROM bert_train(?1, '" MODELS "cls-3-f32', 'SELECT text, label FROM "
                               "reviews', '{\"max_steps\": 40, \"batch_size\": 2, \"save_steps\": 2, "
                               "\"logging_steps\": 100}')", -1, &st, NULL);
        sqlite3_bind_text(st, 1, out, -1, SQLITE_STATIC);
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            plan.rows++;
            if (sqlite3_column_text(st, 1)) snprintf(last, sizeof last, "%s", (const char *)sqlite3_column_text(st, 1));
        }
        sqlite3_finalize(st);
        sqlite3_progress_handler(db, 0, NULL, NULL);
        /* SQLite before 3.41 cannot tell the extension within a row, so the
         * statement stops at the next row at the latest. */
        T_CHECK(rc == SQLITE_INTERRUPT && plan.rows >= 2 && plan.rows <= 3 && *last, "rc %d after %d rows", rc,
                plan.rows);
        snprintf(ckpt, sizeof ckpt, "%s", last);
        char *load = t_query(db, "SELECT bert_load('ck', ?1)", ckpt, NULL);
        char *label = t_query(db, "SELECT bert_label('so good', 'ck') IN ('pos', 'neg', 'meh')", NULL);
        T_CHECK(strcmp(load, "ck") == 0 && strcmp(label, "1") == 0, "checkpoint: %s %s", load, label);
        free(load);
        free(label);
        char cmd[256];
        snprintf(cmd, sizeof cmd, "ls -A %s | grep -c saving", out);
        FILE *p = popen(cmd, "r");
        int left = -1;
        if (p && fscanf(p, "%d", &left) != 1) left = -1;
        if (p) pclose(p);
        T_CHECK(left == 0, "%d temporary folders left", left);
        sqlite3_close(db);
        bert_save_remove_tree(dir);
    }
}

/* A base whose head has the run's labels continues from it; other labels get a new head. */
static void continued_heads(void)
{
    char dir[128], out[192];
    train_rows r;
    t_case("bert_train: a base's head with the same labels is continued, with other labels a new one is drawn");
    if (!temp_dir(dir, sizeof dir)) return;
    sqlite3 *db = t_open();
    exec(db, "CREATE TABLE s(text, label); INSERT INTO s VALUES ('good', 'positive'), ('bad', 'negative'), "
             "('fine', 'neutral'), ('great', 'positive');");
    free(t_query(db, "SELECT bert_load('base', '" MODELS "cls-3-f32')", NULL));
    static const char *const runs[2][2] = {
        {"same", "SELECT text, label FROM s"},
        /* three labels as the base's head has, but named otherwise */
        {"other", "SELECT text, CASE label WHEN 'positive' THEN 'p' WHEN 'negative' THEN 'n' ELSE 'u' END FROM s"},
    };
    double diff[2] = {-1, -1};
    for (int i = 0; i < 2; i++) {
        snprintf(out, sizeof out, "%s/%s", dir, runs[i][0]);
        /* One step at a vanishing rate: the weights stay the base's (or the new head's). */
        train(db, out, "base", runs[i][1], "{\"max_steps\": 1, \"learning_rate\": 1e-12, \"dropout\": 0}", &r);
        T_CHECK(r.rc == SQLITE_DONE, "%s", r.error ? r.error : "?");
        rows_free(&r);
        char load[64];
        snprintf(load, sizeof load, "SELECT bert_load('%s', ?1)", runs[i][0]);
        free(t_query(db, load, out, NULL));
        char q[256];
        snprintf(q, sizeof q, "SELECT abs(json_extract(bert_classify('so good', 'base'), '$[0].score') - "
                              "json_extract(bert_classify('so good', '%s'), '$[0].score'))", runs[i][0]);
        diff[i] = t_query_double(db, q, NULL);
    }
    char *labels = t_query(db, "SELECT labels FROM bert_models WHERE name = 'same'", NULL);
    T_CHECK(strcmp(labels, "[\"negative\",\"neutral\",\"positive\"]") == 0, "labels %s", labels);
    free(labels);
    T_CHECK(diff[0] < 1e-5 && diff[1] > 1e-4, "score differences: same labels %g, other labels %g", diff[0], diff[1]);
    sqlite3_close(db);
    bert_save_remove_tree(dir);
}

static void bad_input(void)
{
    char dir[128], out[192];
    train_rows r;
    static const struct {
        const char *query, *options, *fragment;
    } cases[] = {
        {"", NULL, "the query is empty"},
        {"SELECT text FROM reviews", NULL, "returns 1 column; task \"classify\" takes"},
        {"SELECT text, NULL FROM reviews", NULL, "the label is NULL"},
        {"SELECT text, 'pos' FROM reviews", NULL, "one class only"},
        {"SELECT text, label FROM reviews", "{\"labels\": [\"pos\", \"neg\"]}", "\"meh\" of the data is outside"},
        {"SELECT text, '[[0, 99, \"PER\"]]' FROM reviews", "{\"task\": \"tokens\"}", "outside the text"},
        {"SELECT text, '[[0, 2, \"PER\"]]' FROM reviews", "{\"task\": \"tokens\"}", "not aligned"},
        {"SELECT q, c, 3, a FROM qa WHERE a IS NOT NULL", "{\"task\": \"qa\"}", "is not at answer_start 3"},
        {"SELECT text, label FROM reviews", "{\"batch_sizes\": 2}", "unknown option \"batch_sizes\""},
        {"SELECT text, label FROM reviews", "{\"epochs\": 1.5}", "\"epochs\" must be a positive integer"},
        {"SELECT text, label FROM reviews", "{\"learning_rate\": \"fast\"}", "\"learning_rate\" must be"},
        {"SELECT text, 1e200 FROM reviews", "{\"task\": \"regression\"}", "at step 1"},
        {"SELECT printf('%.*c', 3000, 'w'), label FROM reviews", "{\"batch_size\": 1000000}",
         "GB of memory is free"},
        {"DELETE FROM reviews", NULL, "must be a SELECT"},
        {"SELECT text, label FROM reviews", "{\"resume_from\": \"/nonexistent/checkpoint-3\"}",
         "is not a checkpoint of this run"},
        {"SELECT text, label FROM nowhere", NULL, "the query does not run"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char title[200];
        snprintf(title, sizeof title, "bert_train errors: %s %s", cases[i].fragment, "(and nothing is written)");
        t_case(title);
        if (!temp_dir(dir, sizeof dir)) continue;
        sqlite3 *db = t_open();
        exec(db, fixtures);
        snprintf(out, sizeof out, "%s/m", dir);
        train(db, out, MODELS "cls-3-f32", cases[i].query, cases[i].options, &r);
        T_CHECK(r.rc == SQLITE_ERROR && r.error && strstr(r.error, cases[i].fragment), "got rc %d: %s", r.rc,
                r.error ? r.error : "(no error)");
        T_CHECK(!t_exists(out), "%s was written", out);
        rows_free(&r);
        sqlite3_close(db);
        bert_save_remove_tree(dir);
    }

    t_case("bert_train errors: an existing output directory needs \"overwrite\": true; a refused family is named");
    if (temp_dir(dir, sizeof dir)) {
        sqlite3 *db = t_open();
        exec(db, fixtures);
        train(db, dir, MODELS "cls-3-f32", "SELECT text, label FROM reviews", NULL, &r);
        T_CHECK(r.rc == SQLITE_ERROR && r.error && strstr(r.error, "already exists") && strstr(r.error, "overwrite"),
                "%s", r.error ? r.error : "?");
        rows_free(&r);
        snprintf(out, sizeof out, "%s/albert", dir);
        mkdir(out, 0755);
        char path[256];
        snprintf(path, sizeof path, "%s/config.json", out);
        FILE *f = fopen(path, "w");
        if (f) {
            fputs("{\"model_type\": \"albert\", \"hidden_size\": 8}", f);
            fclose(f);
        }
        snprintf(path, sizeof path, "%s/out", dir);
        train(db, path, out, "SELECT text, label FROM reviews", NULL, &r);
        T_CHECK(r.rc == SQLITE_ERROR && r.error && strstr(r.error, "cannot fine-tune") && strstr(r.error, "albert"), "%s",
                r.error ? r.error : "?");
        rows_free(&r);
        /* The families whose layers are not BERT's stay refused, by name, nothing written. */
        static const char *const refused[][2] = {{"modernbert-cls", "ModernBERT"}, {"deberta-cls", "DeBERTa"},
                                                 {"jina-cls", "JinaBERT"}};
        for (int k = 0; k < 3; k++) {
            char base[128];
            snprintf(base, sizeof base, MODELS "%s", refused[k][0]);
            train(db, path, base, "SELECT text, label FROM reviews", NULL, &r);
            T_CHECK(r.rc == SQLITE_ERROR && r.error && strstr(r.error, refused[k][1]) && strstr(r.error, "ELECTRA") &&
                        !t_exists(path),
                    "%s: %s", refused[k][0], r.error ? r.error : "?");
            rows_free(&r);
        }
        sqlite3_close(db);
        bert_save_remove_tree(dir);
    }
}

/* The demo model fine-tuned on three BANKING77 intents against PyTorch on the
 * same batches (tests/golden/fine_tune_parity.json, written by
 * tests/golden/make_fine_tune_parity_golden.py: shuffle off, dropout 0, the
 * head bert_train draws, transformers' Trainer in float64): the loss of
 * every step and the accuracy of bert_label on the test queries. */
static void demo_parity(void)
{
    char dir[128], out[192];
    train_rows r;

    t_case("bert_train: the demo model on three intents, every step's loss and the accuracy as PyTorch's (golden)");
    char *golden = t_read_file("tests/golden/fine_tune_parity.json", NULL);
    if (!T_CHECK(golden, "cannot read tests/golden/fine_tune_parity.json")) return;
    if (access("model/demo/model.safetensors", R_OK) != 0) {
        t_skip("model/demo missing");
        free(golden);
        return;
    }
    if (!temp_dir(dir, sizeof dir)) {
        free(golden);
        return;
    }
    sqlite3 *db = t_open();
    snprintf(out, sizeof out, "%s/intents", dir);
    sqlite3_stmt *st = NULL;
    exec(db, "CREATE TABLE train(text, category); CREATE TABLE test(text, category)");
    const char *fill[2] = {
        "INSERT INTO train SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?1, '$.train')",
        "INSERT INTO test SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?1, '$.test')"};
    for (int k = 0; k < 2; k++) {
        T_CHECK(sqlite3_prepare_v2(db, fill[k], -1, &st, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db));
        sqlite3_bind_text(st, 1, golden, -1, SQLITE_STATIC);
        T_CHECK(sqlite3_step(st) == SQLITE_DONE, "%s", sqlite3_errmsg(db));
        sqlite3_finalize(st);
    }
    char *options = t_query(db, "SELECT json_extract(?1, '$.options')", golden, NULL);
    train(db, out, "model/demo", "SELECT text, category FROM train ORDER BY rowid", options, &r);
    int steps = (int)t_query_double(db, "SELECT json_array_length(?1, '$.losses')", golden, NULL);
    T_CHECK(r.rc == SQLITE_DONE && r.n == steps && steps > 0, "rc %d, %d rows for %d steps, %s", r.rc, r.n, steps,
            r.error ? r.error : "");
    double worst = 0;
    for (int i = 0; i < r.n && i < steps; i++) {
        char path[32];
        snprintf(path, sizeof path, "$.losses[%d]", i);
        double want = json_number(db, golden, path);
        double d = fabs(r.loss[i] - want) / fmax(1.0, fabs(want));
        if (d > worst) worst = d;
        T_CHECK(d <= 1e-4, "step %d: loss %.7f, PyTorch %.7f", i + 1, r.loss[i], want);
    }
    if (r.rc == SQLITE_DONE) {
        char *load = t_query(db, "SELECT bert_load('parity', ?1)", out, NULL);
        T_CHECK(strcmp(load, "parity") == 0, "%s", load);
        free(load);
        double acc = t_query_double(db, "SELECT avg(bert_label(text, 'parity') = category) FROM test", NULL);
        double want = json_number(db, golden, "$.accuracy");
        char *wrong = t_query(db,
                              "SELECT coalesce(group_concat(t.rowid || ':' || bert_label(t.text, 'parity') || '/' || p.value), '')"
                              " FROM test t JOIN json_each(?1, '$.predicted') p ON p.key = t.rowid - 1"
                              " WHERE bert_label(t.text, 'parity') <> p.value",
                              golden, NULL);
        T_CHECK(fabs(acc - want) < 1e-9, "accuracy %.4f, PyTorch %.4f (ours/PyTorch's predictions differ: %s)", acc,
                want, wrong);
        T_CHECK(strcmp(wrong, "") == 0, "predictions ours/PyTorch's differ at %s", wrong);
        free(wrong);
    }
    free(options);
    rows_free(&r);
    sqlite3_close(db);
    bert_save_remove_tree(dir);
    free(golden);
}

void suite_train_sql(void)
{
    saver_round_trip();
    data_preparation();
    data_goldens();
    end_to_end();
    long_runs();
    continued_heads();
    bad_input();
    demo_parity();
}
