/*
 * fine_tune_options.c - bert_train's options_json (fine_tune_data.h): each
 * option's type and range checked, with the Trainer's defaults.
 */
#include "fine_tune_data.h"

#include "../base/buffer.h"
#include "../base/error.h"
#include "../base/function_options.h"
#include "../base/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Every option, as the errors list them. */
#define FT_OPTION_NAMES                                                                                         \
    "task, epochs, max_steps, batch_size, learning_rate, warmup_ratio, weight_decay, max_grad_norm, seed, "     \
    "shuffle, dropout, max_length, labels, eval_query, logging_steps, save_steps, "                             \
    "gradient_accumulation_steps, freeze_encoder, resume_from, overwrite, doc_stride"

const char *ft_task_name(ft_task t)
{
    static const char *const names[] = {"classify", "regression", "tokens", "qa", "embed"};
    return names[t];
}

const char *ft_task_columns(ft_task t)
{
    switch (t) {
    case FT_TASK_CLASSIFY: return "(text, label) or (text, text_pair, label), label TEXT, INTEGER or a JSON array "
                                  "of labels";
    case FT_TASK_REGRESSION: return "(text, label) or (text, text_pair, label), label REAL";
    case FT_TASK_TOKENS: return "(text, entities), entities a JSON array of [start, end, label] character spans";
    case FT_TASK_QA: return "(question, context, answer_start, answer_text), answer NULL when there is none";
    case FT_TASK_EMBED: return "(anchor, positive) or (anchor, positive, negative)";
    }
    return "?";
}

void ft_options_free(ft_options *o)
{
    for (int i = 0; i < o->n_labels; i++) free(o->labels[i]);
    free(o->labels);
    free(o->eval_query);
    free(o->resume_from);
    free(o->json);
    memset(o, 0, sizeof *o);
}

static void defaults(ft_options *o)
{
    memset(o, 0, sizeof *o);
    o->task = FT_TASK_CLASSIFY;
    o->epochs = 3;
    o->batch_size = 8;
    o->learning_rate = 5e-5;
    o->max_grad_norm = 1.0;
    o->seed = 42;
    o->shuffle = 1;
    o->dropout = -1;
    o->logging_steps = 10;
    o->accumulation = 1;
    o->doc_stride = 128;
}

static int type_error(const char *key, const char *want, char **err)
{
    *err = bert_errorf("bert_train: option \"%s\" must be %s", key, want);
    return -1;
}

/* An integer option in [lo, hi]; a REAL with an integral value counts. */
static int read_int(const json_doc *d, int n, const char *key, long long lo, long long hi, long long *out,
                    const char *want, char **err)
{
    const json_node *v = &d->nodes[n];
    if ((v->type != JSON_INTEGER && v->type != JSON_REAL) || v->number != floor(v->number) || v->number < (double)lo ||
        v->number > (double)hi)
        return type_error(key, want, err);
    *out = (long long)v->number;
    return 0;
}

static int read_real(const json_doc *d, int n, const char *key, double lo, double hi, int hi_open, double *out,
                     const char *want, char **err)
{
    const json_node *v = &d->nodes[n];
    if ((v->type != JSON_INTEGER && v->type != JSON_REAL) || !(v->number >= lo) || v->number > hi ||
        (hi_open && v->number >= hi))
        return type_error(key, want, err);
    *out = v->number;
    return 0;
}

static int read_bool(const json_doc *d, int n, const char *key, int *out, char **err)
{
    int b = bert_json_bool(d, n, -1);
    if (b < 0) return type_error(key, "true or false", err);
    *out = b;
    return 0;
}

static int read_text(const json_doc *d, int n, const char *key, char **out, char **err)
{
    const char *s = bert_json_str(d, n, NULL);
    if (!s || !*s) return type_error(key, "a non-empty text", err);
    if (!(*out = bert_strdup(s))) return -1;
    return 0;
}

static int read_labels(const json_doc *d, int n, ft_options *o, char **err)
{
    int count = bert_json_length(d, n);
    if (d->nodes[n].type != JSON_ARRAY || count == 0)
        return type_error("labels", "a non-empty JSON array of label names, such as [\"negative\", \"positive\"]",
                          err);
    if (!(o->labels = calloc((size_t)count, sizeof *o->labels))) return -1;
    for (int c = d->nodes[n].first_child; c >= 0; c = d->nodes[c].next_sibling) {
        const json_node *v = &d->nodes[c];
        if (v->type != JSON_TEXT && v->type != JSON_INTEGER)
            return type_error("labels", "a JSON array of label names (texts or integers)", err);
        if (!(o->labels[o->n_labels] = bert_strdup(v->text ? v->text : ""))) return -1;
        for (int k = 0; k < o->n_labels; k++)
            if (strcmp(o->labels[k], o->labels[o->n_labels]) == 0) {
                *err = bert_errorf("bert_train: option \"labels\" names \"%s\" twice: give each label once",
                                   o->labels[k]);
                o->n_labels++;
                return -1;
            }
        o->n_labels++;
    }
    return 0;
}

static int read_option(const json_doc *d, int n, ft_options *o, char **err)
{
    const char *key = d->nodes[n].key;
    long long i = 0;
    int rc;
    if (strcmp(key, "task") == 0) {
        const char *t = bert_json_str(d, n, "");
        for (int k = 0; k <= FT_TASK_EMBED; k++)
            if (strcmp(t, ft_task_name((ft_task)k)) == 0) {
                o->task = (ft_task)k;
                return 0;
            }
        return type_error(key, "one of \"classify\", \"regression\", \"tokens\", \"qa\" or \"embed\"", err);
    }
    if (strcmp(key, "epochs") == 0) {
        rc = read_int(d, n, key, 1, 1000000, &i, "a positive integer (3 by default)", err);
        o->epochs = (long)i;
        return rc;
    }
    if (strcmp(key, "max_steps") == 0) {
        rc = read_int(d, n, key, 1, 1000000000, &i, "a positive integer, the optimizer steps of the whole run", err);
        o->max_steps = (long)i;
        return rc;
    }
    if (strcmp(key, "batch_size") == 0) {
        rc = read_int(d, n, key, 1, 1000000, &i, "a positive integer (8 by default)", err);
        o->batch_size = (int)i;
        return rc;
    }
    if (strcmp(key, "learning_rate") == 0)
        return read_real(d, n, key, 1e-30, 1e30, 0, &o->learning_rate, "a positive number such as 5e-5", err);
    if (strcmp(key, "warmup_ratio") == 0)
        return read_real(d, n, key, 0, 1, 1, &o->warmup_ratio, "a number from 0 to below 1, such as 0.1", err);
    if (strcmp(key, "weight_decay") == 0)
        return read_real(d, n, key, 0, 1e6, 0, &o->weight_decay, "a number of 0 or more, such as 0.01", err);
    if (strcmp(key, "max_grad_norm") == 0)
        return read_real(d, n, key, -1e30, 1e30, 0, &o->max_grad_norm, "a number (0 or less: no clipping)", err);
    if (strcmp(key, "seed") == 0) {
        rc = read_int(d, n, key, 0, 4294967295LL, &i, "an integer from 0 to 4294967295", err);
        o->seed = i;
        return rc;
    }
    if (strcmp(key, "shuffle") == 0) return read_bool(d, n, key, &o->shuffle, err);
    if (strcmp(key, "dropout") == 0)
        return read_real(d, n, key, 0, 1, 1, &o->dropout, "a number from 0 (no dropout) to below 1", err);
    if (strcmp(key, "max_length") == 0) {
        rc = read_int(d, n, key, 3, 65536, &i, "an integer of 3 or more: tokens per sequence, specials included",
                      err);
        o->max_length = (int)i;
        return rc;
    }
    if (strcmp(key, "labels") == 0) return read_labels(d, n, o, err);
    if (strcmp(key, "eval_query") == 0) return read_text(d, n, key, &o->eval_query, err);
    if (strcmp(key, "logging_steps") == 0) {
        rc = read_int(d, n, key, 1, 1000000000, &i, "a positive integer (10 by default)", err);
        o->logging_steps = (long)i;
        return rc;
    }
    if (strcmp(key, "save_steps") == 0) {
        rc = read_int(d, n, key, 1, 1000000000, &i, "a positive integer: a checkpoint every that many steps", err);
        o->save_steps = (long)i;
        return rc;
    }
    if (strcmp(key, "gradient_accumulation_steps") == 0) {
        rc = read_int(d, n, key, 1, 1000000, &i, "a positive integer (1 by default)", err);
        o->accumulation = (int)i;
        return rc;
    }
    if (strcmp(key, "freeze_encoder") == 0) return read_bool(d, n, key, &o->freeze_encoder, err);
    if (strcmp(key, "resume_from") == 0) return read_text(d, n, key, &o->resume_from, err);
    if (strcmp(key, "overwrite") == 0) return read_bool(d, n, key, &o->overwrite, err);
    if (strcmp(key, "doc_stride") == 0) {
        rc = read_int(d, n, key, 0, 65536, &i, "an integer of 0 or more (128 by default)", err);
        o->doc_stride = (int)i;
        return rc;
    }
    *err = bert_fn_options_unknown("bert_train", key, FT_OPTION_NAMES);
    return -1;
}

int ft_options_parse(const char *json, size_t len, ft_options *o, char **err)
{
    *err = NULL;
    defaults(o);
    json_doc *d = NULL;
    if (bert_fn_options_parse(json, len, "bert_train", "'{\"task\": \"classify\", \"epochs\": 3}'", &d, err) != 0) {
        if (!*err) *err = bert_errorf("out of memory reading bert_train's options");
        return -1;
    }
    if (!d) return 0;
    int rc = 0;
    for (int n = bert_fn_options_first(d); n >= 0 && rc == 0; n = d->nodes[n].next_sibling) rc = read_option(d, n, o, err);
    bert_json_free(d);
    if (rc == 0 && !(o->json = bert_strndup(json, len))) rc = -1;
    if (rc != 0 && !*err) *err = bert_errorf("out of memory reading bert_train's options");
    return rc;
}
