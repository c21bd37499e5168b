/*
 * fine_tune.c - a fine-tuning run (fine_tune.h): the Trainer's loop over
 * the trainer of encoder/trainer.h, its checkpoints and the saved model.
 */
#include "fine_tune.h"

#include "../encoder/trainer.h"
#include "../models/entry.h"
#include "../models/model_dir.h"
#include "../models/model_save.h"
#include "../base/buffer.h"
#include "../base/error.h"
#include "../base/file.h"
#include "../base/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

_Static_assert(FT_HOW_CLASSIFY == (int)BERT_TRAIN_CLASSIFY && FT_HOW_MULTI_LABEL == (int)BERT_TRAIN_MULTI_LABEL &&
                   FT_HOW_REGRESSION == (int)BERT_TRAIN_REGRESSION && FT_HOW_TOKENS == (int)BERT_TRAIN_TOKENS &&
                   FT_HOW_QA == (int)BERT_TRAIN_QA && FT_HOW_EMBED == (int)BERT_TRAIN_EMBED &&
                   FT_IGNORE == BERT_TRAIN_IGNORE,
               "fine_tune_data.h's ft_how mirrors trainer.h's bert_train_task");

/* The moments' folders inside a checkpoint, and its state file. */
#define FT_FIRST_MOMENTS "exp_avg"
#define FT_SECOND_MOMENTS "exp_avg_sq"
#define FT_STATE_FILE "trainer_state.json"

struct ft_run {
    ft_options o;
    char *output_dir;
    bert_registry reg;           /* the base, registered privately: truncating at the run's max_length */
    bert_entry *e;
    ft_labels labels;
    ft_how how;
    ft_data data;
    ft_rows eval_rows;           /* copied: evaluation runs the pipelines on the rows */
    int has_eval;
    bert_train_settings s;
    bert_trainer *t;
    bert_model view;             /* the trained weights with the run's labels, for evaluation */
    /* The schedule. */
    long batches_per_epoch, steps_per_epoch, total_steps;
    long epoch, batch;           /* the position: epochs done, batches done in this epoch */
    size_t *order;               /* this epoch's order of the examples */
    /* The batch being built. */
    int32_t *ids, *types;
    int *lengths, *labels_buf;
    float *targets;
    /* Since the last report. */
    double loss_sum;
    long loss_steps, examples;
    double rate;
    struct timespec since;
    int finished;
    char *eval_json, *saved;     /* the last report's */
};

/* ---- the order of the examples ------------------------------------------------ */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Epoch k's order: a Fisher-Yates shuffle drawn from (seed, k), so that a
 * resumed run draws the same orders without keeping a generator's state;
 * the query's order when shuffle is off. */
static void epoch_order(const ft_run *r, long k, size_t *order, size_t n)
{
    for (size_t i = 0; i < n; i++) order[i] = i;
    if (!r->o.shuffle) return;
    uint64_t state = (uint64_t)r->o.seed * 0x100000001B3ULL + (uint64_t)k;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(splitmix64(&state) % i);
        size_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
}

/* ---- memory --------------------------------------------------------------------- */

/* The bytes a run of `rows` sequences of `len` tokens needs: the trainer's
 * weights, gradients and two moments, and an estimate of the activations
 * its forward pass keeps for the backward one. */
static double ft_memory_estimate(const bert_config *c, int outputs, long rows, int len)
{
    const double H = c->hidden_size, I = c->intermediate_size, heads = c->num_heads, L = len;
    double params = (double)c->vocab_size * H + (double)c->max_position_embeddings * H +
                    (double)c->num_layers * (4 * H * H + 2 * H * I + 9 * H + I) + H * H + (double)outputs * H;
    /* Per token and layer the backward keeps the layer's input, q, k, v, the
     * attention context and output, two LayerNorms' normalized inputs, the
     * intermediate activation before and after GELU, dropout draws, and
     * every head's attention probabilities; the backward's own buffers
     * about as much again for one layer. */
    double per_token_layer = 4 * (10 * H + 2 * I + heads * L) + 3 * H + heads * L;
    double activations = (double)rows * L * (c->num_layers * per_token_layer + 4 * (6 * H + 2 * I + heads * L));
    return 4 * 4 * params + activations;
}

/* Bytes of memory this machine has free for the run. */
static double available_memory(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    double kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    if (f) fclose(f);
    if (kb > 0) return kb * 1024;
    long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (double)pages * (double)size : 1e18;
}

static int check_memory(const ft_run *r, char **err)
{
    const bert_config *c = &r->e->cfg;
    const long rows = (long)r->o.batch_size * r->data.columns;
    const int len = r->data.longest < r->e->max_length ? r->data.longest : r->e->max_length;
    const int outputs = r->labels.n > 0 ? r->labels.n : 2;
    double need = ft_memory_estimate(c, outputs, rows, len), have = available_memory();
    if (need <= have) return 0;
    long fits = 0;
    while (fits < rows && ft_memory_estimate(c, outputs, fits + 1, len) <= have) fits++;
    *err = bert_errorf("bert_train: batch_size %d x %d tokens (the longest sequence%s) needs about %.1f GB for the "
                       "weights, gradients, optimizer and activations, but %.1f GB of memory is free: %s%s",
                       r->o.batch_size, len, r->data.columns > 1 ? ", per column" : "", need / 1e9, have / 1e9,
                       fits >= r->data.columns ? "a batch_size of " : "give a smaller max_length",
                       fits >= r->data.columns ? "" : "");
    if (fits >= r->data.columns) {
        char *longer = bert_errorf("%s%ld fits (or give a smaller max_length, with gradient_accumulation_steps "
                                   "for the same batch)", *err, fits / r->data.columns);
        free(*err);
        *err = longer;
    }
    return -1;
}

/* ---- the base ------------------------------------------------------------------ */

/* Registers the base privately: the user's registration's options (when
 * `base` names one) or the defaults, cut silently at the run's max_length,
 * without a prompt (training reads the texts as given). */
static int register_base(ft_run *r, bert_registry *user, const char *base, char **err)
{
    bert_options opts;
    if (bert_options_parse(NULL, &opts, err) != 0) return -1;
    const char *path = base;
    for (const bert_entry *u = user ? user->head : NULL; u; u = u->next)
        if (strcmp(u->name, base) == 0) {
            opts = u->given;
            path = u->path;
        }
    opts.truncate = 1;
    opts.prompt_kind = BERT_PROMPT_TEXT;
    opts.prompt[0] = '\0';
    opts.precision = BERT_PRECISION_FLOAT32;
    if (r->o.max_length) opts.max_length = r->o.max_length;
    char *why = NULL;
    struct stat st;
    if (bert_registry_add(&r->reg, "base", path, &opts, &why) != 0) {
        if (stat(path, &st) == 0)
            *err = bert_errorf("bert_train: cannot fine-tune '%s': %s", path, why ? why : "out of memory");
        else
            *err = bert_errorf("bert_train: the base '%s' is neither a registered model nor a model directory "
                               "(%s): give a name from bert_models or the path of a Hugging Face model folder",
                               base, why ? why : "out of memory");
        free(why);
        return -1;
    }
    r->e = bert_registry_find(&r->reg, "base", err);
    return r->e && bert_entry_need_tokenizer(r->e, err) == 0 ? 0 : -1;
}

/* 1 when the base's head is the one this run trains, with the same labels in the same order. */
static int head_continues(const ft_run *r, const bert_model *m)
{
    switch (r->how) {
    case FT_HOW_QA: return bert_model_has_qa_head(m);
    case FT_HOW_EMBED: return 0;
    case FT_HOW_TOKENS:
        if (!bert_model_has_token_head(m)) return 0;
        break;
    default: {
        if (!bert_model_has_classifier(m)) return 0;
        bert_problem_type want = r->how == FT_HOW_MULTI_LABEL ? BERT_PROBLEM_MULTI_LABEL
                               : r->how == FT_HOW_REGRESSION ? BERT_PROBLEM_REGRESSION : BERT_PROBLEM_SINGLE_LABEL;
        bert_problem_type have = m->head.problem;
        if (have == BERT_PROBLEM_UNSET) have = m->head.num_labels == 1 ? BERT_PROBLEM_REGRESSION : BERT_PROBLEM_SINGLE_LABEL;
        if (have != want) return 0;
        if (r->how == FT_HOW_REGRESSION) return m->head.num_labels == 1;
    }
    }
    if (m->head.num_labels != r->labels.n || !m->head.labels) return 0;
    for (int i = 0; i < r->labels.n; i++)
        if (strcmp(m->head.labels[i], r->labels.names[i]) != 0) return 0;
    return 1;
}

static int make_trainer(ft_run *r, const bert_model *base, char **err)
{
    /* A head of other labels must not be continued: the trainer is given
     * the base without it, and draws a new one. */
    bert_model shown = *base;
    if (!head_continues(r, base)) {
        if (r->how == FT_HOW_TOKENS) shown.tok_w = shown.tok_b = NULL;
        else if (r->how == FT_HOW_QA) shown.qa_w = shown.qa_b = NULL;
        else if (r->how != FT_HOW_EMBED) {
            shown.cls_w = shown.cls_b = NULL;
            shown.pre_cls_w = shown.pre_cls_b = NULL;
        }
    }
    bert_train_settings *s = &r->s;
    bert_train_settings_default(s);
    s->task = (bert_train_task)r->how;
    s->num_labels = r->how == FT_HOW_REGRESSION ? 1 : r->labels.n;
    s->learning_rate = (float)r->o.learning_rate;
    s->weight_decay = (float)r->o.weight_decay;
    s->max_grad_norm = (float)r->o.max_grad_norm;
    s->total_steps = r->total_steps;
    s->warmup_steps = (long)ceil(r->o.warmup_ratio * (double)r->total_steps);
    s->dropout = (float)r->o.dropout;
    s->freeze_encoder = r->o.freeze_encoder;
    s->seed = (uint64_t)r->o.seed;
    s->pooling = r->e->pooling;
    s->threads = r->e->threads;
    char *why = NULL;
    r->t = bert_trainer_new(&shown, s, &why);
    if (!r->t) {
        *err = bert_errorf("bert_train: %s", why ? why : "out of memory creating the trainer");
        free(why);
        return -1;
    }
    return 0;
}

/* ---- JSON of the run -------------------------------------------------------------- */

static char *training_args(const ft_run *r, char **err)
{
    bert_json_sql *js = bert_json_sql_open(err);
    if (!js) return NULL;
    char v[12][48];
    snprintf(v[0], sizeof v[0], "%ld", r->o.epochs);
    snprintf(v[1], sizeof v[1], "%ld", r->total_steps);
    snprintf(v[2], sizeof v[2], "%d", r->o.batch_size);
    snprintf(v[3], sizeof v[3], "%.17g", r->o.learning_rate);
    snprintf(v[4], sizeof v[4], "%.17g", r->o.warmup_ratio);
    snprintf(v[5], sizeof v[5], "%.17g", r->o.weight_decay);
    snprintf(v[6], sizeof v[6], "%.17g", r->o.max_grad_norm);
    snprintf(v[7], sizeof v[7], "%lld", r->o.seed);
    snprintf(v[8], sizeof v[8], "%d", r->e->max_length);
    snprintf(v[9], sizeof v[9], "%d", r->o.accumulation);
    snprintf(v[10], sizeof v[10], "%ld", r->s.warmup_steps);
    snprintf(v[11], sizeof v[11], "%d", r->o.doc_stride);
    const char *p[15] = {ft_task_name(r->o.task), v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10],
                         v[11], r->o.json ? r->o.json : "{}", r->e->path};
    char *out = NULL;
    bert_json_sql_eval(js,
                       "SELECT json_object('task', ?1, 'num_train_epochs', CAST(?2 AS INTEGER), 'max_steps', "
                       "CAST(?3 AS INTEGER), 'per_device_train_batch_size', CAST(?4 AS INTEGER), 'learning_rate', "
                       "CAST(?5 AS REAL), 'warmup_ratio', CAST(?6 AS REAL), 'weight_decay', CAST(?7 AS REAL), "
                       "'max_grad_norm', CAST(?8 AS REAL), 'seed', CAST(?9 AS INTEGER), 'max_length', "
                       "CAST(?10 AS INTEGER), 'gradient_accumulation_steps', CAST(?11 AS INTEGER), 'warmup_steps', "
                       "CAST(?12 AS INTEGER), 'doc_stride', CAST(?13 AS INTEGER), 'lr_scheduler_type', 'linear', "
                       "'optim', 'adamw_torch', 'options', json(?14), 'base', ?15)",
                       p, 15, &out, err);
    bert_json_sql_close(js);
    return out;
}

static char *trainer_state(const ft_run *r, char **err)
{
    bert_json_sql *js = bert_json_sql_open(err);
    if (!js) return NULL;
    char v[5][48];
    snprintf(v[0], sizeof v[0], "%ld", bert_trainer_steps(r->t));
    snprintf(v[1], sizeof v[1], "%.17g", (double)r->epoch + (double)r->batch / (double)r->batches_per_epoch);
    snprintf(v[2], sizeof v[2], "%ld", r->epoch);
    snprintf(v[3], sizeof v[3], "%ld", r->batch);
    snprintf(v[4], sizeof v[4], "%ld", r->total_steps);
    const char *p[5] = {v[0], v[1], v[2], v[3], v[4]};
    char *out = NULL;
    bert_json_sql_eval(js,
                       "SELECT json_object('global_step', CAST(?1 AS INTEGER), 'epoch', CAST(?2 AS REAL), "
                       "'epochs_done', CAST(?3 AS INTEGER), 'batches_done_in_epoch', CAST(?4 AS INTEGER), "
                       "'max_steps', CAST(?5 AS INTEGER), 'shuffle', 'splitmix64 Fisher-Yates from (seed, epoch)')",
                       p, 5, &out, err);
    bert_json_sql_close(js);
    return out;
}

/* ---- saving ------------------------------------------------------------------------ */

static void fill_view(ft_run *r)
{
    r->view = *bert_trainer_model(r->t);
    r->view.head.labels = r->labels.n ? r->labels.names : NULL;
    r->view.head.num_labels = r->how == FT_HOW_QA || r->how == FT_HOW_EMBED ? 0 : r->labels.n;
}

static int save(ft_run *r, const char *dir, int checkpoint, char **err)
{
    fill_view(r);
    char *args = training_args(r, err), *state = args ? trainer_state(r, err) : NULL;
    if (!state) {
        free(args);
        if (!*err) *err = bert_errorf("out of memory saving %s", dir);
        return -1;
    }
    bert_save_file files[2] = {{"training_args.json", args}, {FT_STATE_FILE, state}};
    bert_model first = *bert_trainer_moments(r->t, 0), second = *bert_trainer_moments(r->t, 1);
    first.head = second.head = r->view.head;
    bert_save_weights moments[2] = {{FT_FIRST_MOMENTS, &first}, {FT_SECOND_MOMENTS, &second}};
    const int embed = r->how == FT_HOW_EMBED;
    bert_save_spec spec = {
        .base_dir = bert_model_files_dir(r->e->files),
        .arch = embed ? BERT_SAVE_BARE : r->how == FT_HOW_TOKENS ? BERT_SAVE_TOKENS
              : r->how == FT_HOW_QA ? BERT_SAVE_QA : BERT_SAVE_SEQUENCE,
        .labels = (const char *const *)r->labels.names,
        .num_labels = r->how == FT_HOW_REGRESSION ? 1 : r->labels.n,
        .problem_type = r->how == FT_HOW_MULTI_LABEL ? "multi_label_classification"
                      : r->how == FT_HOW_REGRESSION ? "regression"
                      : r->how == FT_HOW_CLASSIFY ? "single_label_classification" : NULL,
        .sentence_transformers = embed, .pooling = r->e->pooling, .normalize = r->e->normalize,
        .max_seq_length = r->e->max_length,
        .files = files, .n_files = checkpoint ? 2 : 1,
        .extra = checkpoint ? moments : NULL, .n_extra = checkpoint ? 2 : 0,
        .carry_prefix = checkpoint ? NULL : "checkpoint-",
    };
    int rc = bert_save_model_dir(&r->view, &spec, dir, 1, err);
    free(args);
    free(state);
    return rc;
}

static int evaluate(ft_run *r, bert_interrupt_fn interrupted, void *ctx, char **err)
{
    free(r->eval_json);
    r->eval_json = NULL;
    if (!r->has_eval) return 0;
    fill_view(r);
    bert_entry *e = r->e;
    /* The registration computes with the trained weights for the while:
     * the pipelines then answer as the saved model will. */
    e->model = &r->view;
    bert_aggregation agg = e->aggregation;
    e->aggregation = BERT_AGG_FIRST;
    int rc = bert_entry_need_model(e, err) == 0 && ft_evaluate(e, r->o.task, r->how, &r->labels, &r->eval_rows,
                                                               &r->eval_json, interrupted, ctx, err) == 0
           ? 0 : -1;
    e->aggregation = agg;
    e->model = NULL;
    return rc;
}

/* ---- the run ------------------------------------------------------------------------ */

ft_run *ft_run_new(bert_registry *registry, const char *output_dir, const char *base, ft_options *options,
                   const ft_rows *train, const ft_rows *eval, char **err)
{
    *err = NULL;
    ft_run *r = calloc(1, sizeof *r);
    bert_model *m = NULL, *w = NULL, *m1 = NULL, *m2 = NULL;
    bert_model_files *rf = NULL, *f1 = NULL, *f2 = NULL;
    if (!r) {
        ft_options_free(options);
        return NULL;
    }
    r->o = *options;
    memset(options, 0, sizeof *options);
    if (!(r->output_dir = bert_strdup(output_dir))) goto oom;
    struct stat st;
    if (stat(output_dir, &st) == 0 && !r->o.overwrite && !r->o.resume_from) {
        *err = bert_errorf("bert_train: %s already exists: give another output directory, or '{\"overwrite\": "
                           "true}' to replace it", output_dir);
        goto fail;
    }
    if (register_base(r, registry, base, err) != 0) goto fail;
    if (r->o.task == FT_TASK_EMBED && r->e->pooling == BERT_POOL_POOLER) {
        *err = bert_errorf("bert_train: task \"embed\" needs mean, cls or max pooling, and the base pools with the "
                           "pooler: register it with '{\"pooling\": \"cls\"}' (or mean)");
        goto fail;
    }
    /* The base's weights in float32, its labels for the head's continuation. */
    if (bert_model_load_precision(r->e->files, BERT_PRECISION_FLOAT32, &m, err) != 0) goto fail;
    if (ft_labels_decide(&r->o, train, m->head.labels, m->head.num_labels, &r->labels, &r->how, err) != 0 ||
        ft_data_prepare(r->e, &r->o, r->how, &r->labels, train, "query", &r->data, err) != 0)
        goto fail;
    if (eval) {
        ft_data check;
        if (ft_data_prepare(r->e, &r->o, r->how, &r->labels, eval, "eval_query", &check, err) != 0) goto fail;
        ft_data_free(&check);
        r->eval_rows.n_cols = eval->n_cols;
        for (size_t i = 0; i < eval->n_rows; i++)
            if (ft_rows_add(&r->eval_rows, eval->values + i * (size_t)eval->n_cols) != 0) goto oom;
        r->has_eval = 1;
    }
    /* The Trainer's totals: steps per epoch = ceil(batches / accumulation). */
    r->batches_per_epoch = (long)((r->data.n + (size_t)r->o.batch_size - 1) / (size_t)r->o.batch_size);
    r->steps_per_epoch = (r->batches_per_epoch + r->o.accumulation - 1) / r->o.accumulation;
    r->total_steps = r->o.max_steps ? r->o.max_steps : r->steps_per_epoch * r->o.epochs;
    if (check_memory(r, err) != 0 || make_trainer(r, m, err) != 0) goto fail;
    bert_model_free(m);
    m = NULL;
    if (r->o.resume_from) {
        /* A checkpoint of save_steps: its weights, both moments and where the run stood. */
        char *p1 = bert_path_join(r->o.resume_from, FT_FIRST_MOMENTS), *p2 = bert_path_join(r->o.resume_from, FT_SECOND_MOMENTS);
        char *ps = bert_path_join(r->o.resume_from, FT_STATE_FILE);
        rf = bert_model_files_new(r->o.resume_from);
        f1 = p1 ? bert_model_files_new(p1) : NULL;
        f2 = p2 ? bert_model_files_new(p2) : NULL;
        free(p1);
        free(p2);
        if (!rf || !f1 || !f2 || !ps) {
            free(ps);
            goto oom;
        }
        json_doc *sd = NULL;
        char *why = NULL;
        int got = bert_json_parse_file(ps, &sd, &why);
        free(ps);
        if (got <= 0 || bert_model_load_precision(rf, BERT_PRECISION_FLOAT32, &w, &why) != 0 ||
            bert_model_load_precision(f1, BERT_PRECISION_FLOAT32, &m1, &why) != 0 ||
            bert_model_load_precision(f2, BERT_PRECISION_FLOAT32, &m2, &why) != 0 ||
            bert_trainer_set_state(r->t, w, m1, m2, (long)bert_json_int(sd, bert_json_member(sd, 0, "global_step"), 0),
                                   &why) != 0) {
            *err = bert_errorf("bert_train: resume_from '%s' is not a checkpoint of this run (%s): give a "
                               "checkpoint-<step> folder that save_steps wrote, with the same options",
                               r->o.resume_from, why ? why : "no " FT_STATE_FILE);
            free(why);
            bert_json_free(sd);
            goto fail;
        }
        r->epoch = (long)bert_json_int(sd, bert_json_member(sd, 0, "epochs_done"), 0);
        r->batch = (long)bert_json_int(sd, bert_json_member(sd, 0, "batches_done_in_epoch"), 0);
        bert_json_free(sd);
    }
    const size_t per_batch = (size_t)r->o.batch_size * (size_t)r->data.columns;
    const size_t cells = per_batch * (size_t)r->data.longest;
    const size_t L = (size_t)(r->labels.n > 0 ? r->labels.n : 1);
    r->order = malloc((r->data.n + 1) * sizeof *r->order);
    r->ids = malloc(cells * sizeof *r->ids);
    r->types = malloc(cells * sizeof *r->types);
    r->lengths = malloc(per_batch * sizeof *r->lengths);
    r->labels_buf = malloc((cells > 2 * per_batch ? cells : 2 * per_batch) * sizeof *r->labels_buf);
    r->targets = malloc(per_batch * L * sizeof *r->targets);
    if (!r->order || !r->ids || !r->types || !r->lengths || !r->labels_buf || !r->targets) goto oom;
    epoch_order(r, r->epoch, r->order, r->data.n);
    clock_gettime(CLOCK_MONOTONIC, &r->since);
    goto done;
oom:
    *err = bert_errorf("out of memory preparing the run");
fail:
    ft_run_free(r);
    r = NULL;
done:
    bert_model_free(m);
    bert_model_free(w);
    bert_model_free(m1);
    bert_model_free(m2);
    bert_model_files_free(rf);
    bert_model_files_free(f1);
    bert_model_files_free(f2);
    return r;
}

void ft_run_free(ft_run *r)
{
    if (!r) return;
    if (r->e) r->e->model = NULL;
    bert_trainer_free(r->t);
    bert_registry_clear(&r->reg);
    ft_options_free(&r->o);
    ft_labels_free(&r->labels);
    ft_data_free(&r->data);
    ft_rows_free(&r->eval_rows);
    free(r->output_dir);
    free(r->order);
    free(r->ids);
    free(r->types);
    free(r->lengths);
    free(r->labels_buf);
    free(r->targets);
    free(r->eval_json);
    free(r->saved);
    free(r);
}

/* The batch of examples order[first .. first + n), padded to its longest sequence. */
static void build_batch(ft_run *r, size_t first, int n, bert_train_batch *b)
{
    const ft_data *d = &r->data;
    const int cols = d->columns, L = r->labels.n;
    int max_len = 1;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < cols; k++)
            if (d->ex[r->order[first + (size_t)i]].len[k] > max_len) max_len = d->ex[r->order[first + (size_t)i]].len[k];
    const bert_special_ids *sp = bert_tokenizer_specials(r->e->tokenizer);
    const int32_t pad = sp->pad >= 0 ? sp->pad : r->e->cfg.pad_token_id;
    const int seqs = n * cols;
    for (int k = 0; k < cols; k++)
        for (int i = 0; i < n; i++) {
            /* EMBED: column after column (every anchor, then every positive ...). */
            const int s = k * n + i;
            const ft_example *x = &d->ex[r->order[first + (size_t)i]];
            const size_t row = (size_t)s * (size_t)max_len;
            r->lengths[s] = x->len[k];
            for (int j = 0; j < max_len; j++) {
                int real = j < x->len[k];
                r->ids[row + (size_t)j] = real ? d->ids[x->at[k] + (size_t)j] : pad;
                r->types[row + (size_t)j] = real ? d->types[x->at[k] + (size_t)j] : 0;
                if (r->how == FT_HOW_TOKENS)
                    r->labels_buf[row + (size_t)j] = real ? d->token_labels[x->at[k] + (size_t)j] : FT_IGNORE;
            }
            if (r->how == FT_HOW_CLASSIFY) r->labels_buf[s] = x->label;
            if (r->how == FT_HOW_QA) {
                r->labels_buf[2 * s] = x->start;
                r->labels_buf[2 * s + 1] = x->end;
            }
            if (r->how == FT_HOW_REGRESSION) r->targets[s] = x->target;
            if (r->how == FT_HOW_MULTI_LABEL)
                memcpy(r->targets + (size_t)s * (size_t)L, d->targets + r->order[first + (size_t)i] * (size_t)L,
                       (size_t)L * sizeof *r->targets);
        }
    *b = (bert_train_batch){.n = seqs, .max_len = max_len, .ids = r->ids, .type_ids = r->types,
                            .lengths = r->lengths,
                            .labels = r->how == FT_HOW_CLASSIFY || r->how == FT_HOW_TOKENS ||
                                              r->how == FT_HOW_QA ? r->labels_buf : NULL,
                            .targets = r->how == FT_HOW_REGRESSION || r->how == FT_HOW_MULTI_LABEL ? r->targets
                                                                                                         : NULL,
                            .columns = cols};
}

/* One optimizer step: up to gradient_accumulation_steps batches of this
 * epoch (the epoch's last step may take fewer, as the Trainer's does). */
static int one_step(ft_run *r, bert_interrupt_fn interrupted, void *ctx, char **err)
{
    if (r->batch >= r->batches_per_epoch) {
        r->epoch++;
        r->batch = 0;
        epoch_order(r, r->epoch, r->order, r->data.n);
    }
    const long step = bert_trainer_steps(r->t) + 1;
    double step_loss = 0;
    for (int a = 0; a < r->o.accumulation && r->batch < r->batches_per_epoch; a++) {
        size_t first = (size_t)r->batch * (size_t)r->o.batch_size;
        int n = (int)(r->data.n - first < (size_t)r->o.batch_size ? r->data.n - first : (size_t)r->o.batch_size);
        bert_train_batch b;
        build_batch(r, first, n, &b);
        double loss = 0;
        char *why = NULL;
        int rc = bert_trainer_accumulate(r->t, &b, 1.0f / (float)r->o.accumulation, &loss, interrupted, ctx, &why);
        if (rc == 1) {
            free(why);
            *err = bert_errorf("bert_train: interrupted at step %ld; the last checkpoint saved is whole", step);
            return -1;
        }
        if (rc != 0 || !isfinite(loss)) {
            *err = bert_errorf("bert_train: the loss is %s at step %ld (epoch %ld, batch %ld)%s%s: lower the "
                               "learning_rate, set max_grad_norm, or check the data of that batch",
                               rc == 0 ? "not finite" : "not computable", step, r->epoch + 1, r->batch + 1,
                               why ? ": " : "", why ? why : "");
            free(why);
            return -1;
        }
        step_loss += loss / r->o.accumulation;
        r->examples += n;
        r->batch++;
    }
    char *why = NULL;
    if (bert_trainer_step(r->t, &r->rate, NULL, &why) != 0) {
        *err = bert_errorf("bert_train: step %ld: %s; lower the learning_rate or set max_grad_norm", step,
                           why ? why : "out of memory");
        free(why);
        return -1;
    }
    r->loss_sum += step_loss;
    r->loss_steps++;
    return 0;
}

static void report(ft_run *r, ft_report *row)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double secs = (double)(now.tv_sec - r->since.tv_sec) + 1e-9 * (double)(now.tv_nsec - r->since.tv_nsec);
    row->step = bert_trainer_steps(r->t);
    row->epoch = (double)r->epoch + (double)r->batch / (double)r->batches_per_epoch;
    row->loss = r->loss_steps ? r->loss_sum / (double)r->loss_steps : NAN;
    row->learning_rate = r->rate;
    row->examples_per_s = secs > 0 ? (double)r->examples / secs : 0;
    row->eval = r->eval_json;
    row->saved = r->saved;
    r->loss_sum = 0;
    r->loss_steps = 0;
    r->examples = 0;
    r->since = now;
}

int ft_run_next(ft_run *r, ft_report *row, bert_interrupt_fn interrupted, void *ctx, char **err)
{
    *err = NULL;
    free(r->saved);
    free(r->eval_json);
    r->saved = r->eval_json = NULL;
    if (r->finished) return 0;
    while (bert_trainer_steps(r->t) < r->total_steps) {
        if (one_step(r, interrupted, ctx, err) != 0) return -1;
        long step = bert_trainer_steps(r->t);
        if (step == r->total_steps) break;
        if (r->o.save_steps && step % r->o.save_steps == 0) {
            char name[48];
            snprintf(name, sizeof name, "checkpoint-%ld", step);
            if (!(r->saved = bert_path_join(r->output_dir, name))) {
                *err = bert_errorf("out of memory saving a checkpoint");
                return -1;
            }
            /* The checkpoint goes inside the output directory, made for it. */
            if (mkdir(r->output_dir, 0755) != 0 && errno != EEXIST) {
                *err = bert_errorf("bert_train: cannot create %s: %s", r->output_dir, strerror(errno));
                return -1;
            }
            if (evaluate(r, interrupted, ctx, err) != 0 || save(r, r->saved, 1, err) != 0) return -1;
            report(r, row);
            return 1;
        }
        if (step % r->o.logging_steps == 0) {
            report(r, row);
            return 1;
        }
    }
    /* The last row: the model saved (and evaluated). */
    if (evaluate(r, interrupted, ctx, err) != 0 || save(r, r->output_dir, 0, err) != 0) return -1;
    if (!(r->saved = bert_strdup(r->output_dir))) {
        *err = bert_errorf("out of memory");
        return -1;
    }
    r->finished = 1;
    report(r, row);
    return 1;
}
