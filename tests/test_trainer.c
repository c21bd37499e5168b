/*
 * test_trainer.c - the fine-tuning engine (ext/encoder/trainer.h).
 *
 *   - gradients: the network compiled in double (train_net.h, symbols
 *     _f64) against central finite differences in double, on several
 *     entries of every parameter tensor, for every task and family, with
 *     and without dropout; padding rows get exactly nothing;
 *   - PyTorch: the runs of tests/golden/train/ (make_train_goldens.py, from
 *     tests/reference/train_reference.py) step by step: losses, rates and
 *     gradient norms, then every trained weight;
 *   - the trained weights as a model: the inference encoder on them gives
 *     the training forward's loss;
 *   - a run saved and restored, new heads, dropout, bad batches, a loss
 *     that is not finite, and every allocation failing in turn.
 */
#define BERT_TRAIN_DOUBLE
#include "../ext/encoder/train_net.h"

#include "test.h"
#include "../ext/base/json.h"
#include "../ext/base/model_files.h"
#include "../ext/encoder/encoder.h"
#include "../ext/encoder/trainer.h"
#include "../ext/models/model_dir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* T_CHECK whose condition sets err, which the message then reads: the
 * condition runs first (a function's arguments have no order). */
#define T_CHECK_AFTER(cond, ...) do { int ok_ = !!(cond); T_CHECK(ok_, __VA_ARGS__); } while (0)

/* ------------------------------------------------------------ finite differences */

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

static double unit(uint64_t *s) { return (double)lcg(s) / 2147483648.0 - 1.0; }

typedef struct {
    tn_config c;
    tn_tensor t[TN_TENSORS(2)];
    size_t floats;
    double *w, *g, *scratch_g;
    tn_net *net, *eval;
    bert_train_batch b;
    int32_t ids[6 * 5], types[6 * 5];
    int lengths[6], labels[6 * 5];
    float targets[6 * 4];
} fd_case;

static const char *family_name(bert_family f)
{
    return f == BERT_FAMILY_BERT ? "bert" : f == BERT_FAMILY_DISTILBERT ? "distilbert"
         : f == BERT_FAMILY_MPNET ? "mpnet" : f == BERT_FAMILY_ELECTRA ? "electra (embedding_size 6 < hidden_size 8)"
                                      : "roberta";
}

static const char *task_name(bert_train_task t)
{
    static const char *const names[] = {"classify", "multi-label", "regression", "tokens", "qa", "embed"};
    return names[t];
}

static int fd_setup(fd_case *k, bert_family fam, bert_train_task task, bert_pooling pooling, float dropout)
{
    memset(k, 0, sizeof *k);
    tn_config *c = &k->c;
    c->family = fam;
    c->vocab = 17;
    c->H = 8;
    /* ELECTRA's embeddings narrower than its layers: embeddings_project is in the net. */
    c->E = fam == BERT_FAMILY_ELECTRA ? 6 : 8;
    c->layers = 2;
    c->heads = 2;
    c->FF = 12;
    c->max_pos = 10;
    const int positions_past_pad = fam == BERT_FAMILY_ROBERTA || fam == BERT_FAMILY_MPNET;
    c->type_vocab = fam == BERT_FAMILY_ROBERTA ? 1 : fam == BERT_FAMILY_MPNET ? 0 : 2;
    c->rel_buckets = fam == BERT_FAMILY_MPNET ? BERT_MPNET_BUCKETS : 0;
    c->eps = 1e-5f;
    c->act = fam == BERT_FAMILY_DISTILBERT ? BERT_ACT_GELU_TANH : BERT_ACT_GELU;
    c->word_pad = positions_past_pad ? 1 : 0;
    c->pos_pad = positions_past_pad ? 1 : -1;
    c->task = task;
    c->outputs = task == BERT_TRAIN_REGRESSION ? 1 : task == BERT_TRAIN_QA ? 2 : task == BERT_TRAIN_EMBED ? 0
               : task == BERT_TRAIN_MULTI_LABEL ? 4 : 3;
    c->seq_head = task <= BERT_TRAIN_REGRESSION;
    c->dense_in_dropout = c->seq_head && (positions_past_pad || fam == BERT_FAMILY_ELECTRA);
    c->p_hidden = c->p_attention = c->p_head = dropout;
    c->pooling = pooling;
    c->scale = 5;
    k->floats = tn_layout_f64(c, k->t);
    k->w = malloc(k->floats * sizeof(double));
    k->g = calloc(k->floats, sizeof(double));
    k->scratch_g = calloc(k->floats, sizeof(double));
    if (!k->w || !k->g || !k->scratch_g) return -1;
    uint64_t s = 1234 + (uint64_t)fam * 77 + (uint64_t)task * 13 + (uint64_t)pooling;
    for (int i = 0; i < TN_TENSORS(2); i++) {
        const tn_tensor *t = &k->t[i];
        size_t n = (size_t)t->rows * (size_t)(t->cols > 0 ? t->cols : 1);
        int norm_w = i == TN_EMB_LN_W || (i >= TN_LAYER0 && i < TN_HEAD_DENSE_W(2) &&
                                          ((i - TN_LAYER0) % TN_PER_LAYER == TN_LN1_W ||
                                           (i - TN_LAYER0) % TN_PER_LAYER == TN_LN2_W));
        for (size_t e = 0; e < n; e++) {
            double v = unit(&s);
            k->w[t->off + e] = norm_w ? 1 + 0.2 * v : t->cols > 0 ? v * 1.7 / sqrt((double)t->cols) : 0.2 * v;
            if (i <= TN_TYPE) k->w[t->off + e] = 0.8 * v;
        }
    }
    const int embed = task == BERT_TRAIN_EMBED, n = embed ? 6 : 3, L = 5;
    static const int len3[] = {5, 3, 2}, len6[] = {5, 4, 2, 3, 5, 1};
    k->b.n = n;
    k->b.max_len = L;
    k->b.ids = k->ids;
    k->b.type_ids = fam == BERT_FAMILY_BERT || fam == BERT_FAMILY_ELECTRA ? k->types : NULL;
    k->b.lengths = k->lengths;
    k->b.labels = k->labels;
    k->b.targets = k->targets;
    k->b.columns = pooling == BERT_POOL_MEAN ? 3 : 2;
    for (int i = 0; i < n; i++) {
        k->lengths[i] = embed ? len6[i] : len3[i];
        for (int q = 0; q < L; q++) {
            int e = i * L + q;
            k->ids[e] = q < k->lengths[i] ? 2 + (int)(lcg(&s) % (uint64_t)(c->vocab - 2)) : c->word_pad;
            k->types[e] = q < k->lengths[i] ? (int)(lcg(&s) % 2) : 0;
            k->labels[e] = task == BERT_TRAIN_TOKENS ? (q < k->lengths[i] && q > 0 ? (int)(lcg(&s) % 3) : -100) : 0;
        }
    }
    k->ids[3] = c->word_pad;     /* a pad token inside sequence 0 */
    if (task == BERT_TRAIN_CLASSIFY)
        for (int i = 0; i < n; i++) k->labels[i] = i % 3;
    if (task == BERT_TRAIN_QA) {
        int pos[] = {1, 3, 0, 9, 0, 0};   /* an end past the sequence: ignored */
        memcpy(k->labels, pos, sizeof pos);
    }
    for (int e = 0; e < n * 4; e++)
        k->targets[e] = task == BERT_TRAIN_MULTI_LABEL ? (float)(lcg(&s) % 2) : (float)unit(&s);
    k->net = tn_net_new_f64(c, k->t, k->w, k->g, NULL, 1, 99);
    k->eval = tn_net_new_f64(c, k->t, k->w, k->scratch_g, NULL, 1, 99);
    return k->net && k->eval ? 0 : -1;
}

static void fd_free(fd_case *k)
{
    tn_net_free_f64(k->net);
    tn_net_free_f64(k->eval);
    free(k->w);
    free(k->g);
    free(k->scratch_g);
}

static double fd_loss(fd_case *k)
{
    double loss = NAN;
    char *err = NULL;
    tn_net_reseed_f64(k->eval, 7);
    if (tn_net_accumulate_f64(k->eval, &k->b, 1, &loss, NULL, NULL, &err) != 0) {
        free(err);
        return NAN;
    }
    return loss;
}

/* The largest relative difference seen over every case, for the report. */
static double fd_worst;

static void fd_check(bert_family fam, bert_train_task task, bert_pooling pooling, float dropout)
{
    char name[160];
    snprintf(name, sizeof name, "finite differences in double: %s %s%s%s", family_name(fam), task_name(task),
             task == BERT_TRAIN_EMBED ? (pooling == BERT_POOL_MEAN ? " mean" : pooling == BERT_POOL_MAX ? " max" : " cls")
                                      : "",
             dropout > 0 ? " with dropout 0.1" : "");
    t_case(name);
    fd_case k;
    if (!T_CHECK(fd_setup(&k, fam, task, pooling, dropout) == 0, "out of memory")) {
        fd_free(&k);
        return;
    }
    char *err = NULL;
    double loss = 0;
    tn_net_reseed_f64(k.net, 7);
    int rc = tn_net_accumulate_f64(k.net, &k.b, 1, &loss, NULL, NULL, &err);
    T_CHECK(rc == 0 && isfinite(loss), "accumulate: %s", err ? err : "?");
    free(err);
    uint64_t s = 42;
    int checked = 0;
    double worst = 0;
    for (int i = 0; i < TN_TENSORS(2) && rc == 0; i++) {
        const tn_tensor *t = &k.t[i];
        const int cols = t->cols > 0 ? t->cols : 1;
        const size_t n = (size_t)t->rows * cols;
        if (!n) continue;
        for (int probe = 0; probe < 8; probe++) {
            size_t e = lcg(&s) % n;
            /* Rows the batch uses: every word row of the first sequence. */
            if (i == TN_WORD) e = (size_t)k.ids[probe % 5] * cols + lcg(&s) % cols;
            /* Padding rows are defined to get nothing (checked below), though the loss depends on them. */
            if (t->pad_row >= 0 && (int)(e / cols) == t->pad_row) continue;
            double *p = &k.w[t->off + e], keep = *p, h = 1e-6;
            *p = keep + h;
            double up = fd_loss(&k);
            *p = keep - h;
            double down = fd_loss(&k);
            *p = keep;
            double fd = (up - down) / (2 * h), an = k.g[t->off + e];
            double diff = fabs(fd - an), rel = diff / (fabs(fd) > 1e-3 ? fabs(fd) : 1e-3);
            if (rel > worst) worst = rel;
            T_CHECK(diff <= 1e-7 + 1e-5 * fabs(fd), "tensor %d entry %zu: analytic %.10g, finite differences %.10g", i,
                    e, an, fd);
            checked++;
        }
        if (t->pad_row >= 0) {
            int zero = 1;
            for (int j = 0; j < cols; j++) zero &= k.g[t->off + (size_t)t->pad_row * cols + j] == 0.0;
            T_CHECK(zero, "tensor %d: the padding row %d got a gradient", i, t->pad_row);
        }
    }
    /* The key bias never gets one: the softmax cancels it. */
    for (int l = 0; l < 2; l++) {
        const tn_tensor *kb = &k.t[TN_LAYER0 + TN_PER_LAYER * l + TN_K_B];
        int zero = 1;
        for (int j = 0; j < kb->rows; j++) zero &= k.g[kb->off + j] == 0.0;
        T_CHECK(zero, "layer %d's key bias got a gradient", l);
    }
    T_CHECK(checked > 100, "only %d entries checked", checked);
    if (worst > fd_worst) fd_worst = worst;
    fd_free(&k);
}

/* ------------------------------------------------------------ models and goldens */

#define GOLDEN_DIR "tests/golden/train"

static bert_model *load_model(const char *dir, bert_precision precision)
{
    bert_model *m = NULL;
    char *err = NULL;
    if (bert_model_load_precision(t_dir(dir), precision, &m, &err) != 0) {
        T_CHECK(0, "loading %s: %s", dir, err ? err : "?");
        free(err);
        return NULL;
    }
    return m;
}

/* The float tensors a trainer's model holds, in one order: pointers and sizes. */
typedef struct {
    const float *p;
    size_t n;
} span;

static int model_spans(const bert_model *m, span *out, int max)
{
    const bert_config *c = &m->cfg;
    const size_t H = (size_t)c->hidden_size, F = (size_t)c->intermediate_size;
    const size_t E = c->family == BERT_FAMILY_ELECTRA ? (size_t)c->fam.embedding_size : H;
    int k = 0;
#define ADD(ptr, count) do { if (k < max) { out[k].p = (ptr); out[k].n = (ptr) ? (count) : 0; } k++; } while (0)
    ADD(m->word_emb, (size_t)c->vocab_size * E);
    ADD(m->pos_emb, (size_t)c->max_position_embeddings * E);
    ADD(m->type_emb, (size_t)c->type_vocab_size * E);
    ADD(m->emb_ln_w, E);
    ADD(m->emb_ln_b, E);
    ADD(m->emb_proj_w, H * E);
    ADD(m->emb_proj_b, H);
    ADD(m->rel_bias, (size_t)c->relative_buckets * c->num_heads);
    for (int l = 0; l < c->num_layers; l++) {
        const bert_layer_weights *w = &m->layers[l];
        ADD(w->q_w.f32, H * H); ADD(w->q_b, H); ADD(w->k_w.f32, H * H); ADD(w->k_b, H);
        ADD(w->v_w.f32, H * H); ADD(w->v_b, H); ADD(w->out_w.f32, H * H); ADD(w->out_b, H);
        ADD(w->attn_ln_w, H); ADD(w->attn_ln_b, H); ADD(w->ff_in_w.f32, F * H); ADD(w->ff_in_b, F);
        ADD(w->ff_out_w.f32, H * F); ADD(w->ff_out_b, H); ADD(w->ff_ln_w, H); ADD(w->ff_ln_b, H);
    }
    const size_t L = (size_t)m->head.num_labels;
    ADD(m->pooler_w, H * H); ADD(m->pooler_b, H);
    ADD(m->pre_cls_w, H * H); ADD(m->pre_cls_b, H);
    ADD(m->cls_w, L * H); ADD(m->cls_b, L);
    ADD(m->tok_w, L * H); ADD(m->tok_b, L);
    ADD(m->qa_w, 2 * H); ADD(m->qa_b, 2);
#undef ADD
    return k;
}

/* One golden batch as the trainer takes it, with its arrays. */
typedef struct {
    bert_train_batch b;
    int32_t *ids, *types;
    int *lengths, *labels;
    float *targets;
} batch_arrays;

static void batch_free(batch_arrays *a)
{
    free(a->ids);
    free(a->types);
    free(a->lengths);
    free(a->labels);
    free(a->targets);
}

/* Flattens a JSON array of numbers or of arrays of numbers into out (ints or floats). */
static int flatten(const json_doc *d, int node, int *ints, float *floats, int cap)
{
    int k = 0;
    for (int c = d->nodes[node].first_child; c >= 0; c = d->nodes[c].next_sibling) {
        if (d->nodes[c].type == JSON_ARRAY) {
            k += flatten(d, c, ints ? ints + k : NULL, floats ? floats + k : NULL, cap - k);
            continue;
        }
        if (k >= cap) return k;
        if (ints) ints[k] = (int)bert_json_int(d, c, 0);
        if (floats) floats[k] = (float)bert_json_real(d, c, 0);
        k++;
    }
    return k;
}

static int read_batch(const json_doc *d, int node, int num_labels, batch_arrays *a)
{
    memset(a, 0, sizeof *a);
    int ids = bert_json_member(d, node, "ids"), lengths = bert_json_member(d, node, "lengths");
    int n = bert_json_length(d, ids), L = bert_json_length(d, d->nodes[ids].first_child);
    a->ids = calloc((size_t)n * L, sizeof *a->ids);
    a->types = calloc((size_t)n * L, sizeof *a->types);
    a->lengths = calloc((size_t)n, sizeof *a->lengths);
    a->labels = calloc((size_t)n * L * 2 + 2, sizeof *a->labels);
    a->targets = calloc((size_t)n * (num_labels + 1), sizeof *a->targets);
    int *tmp = calloc((size_t)n * L, sizeof *tmp);
    if (!a->ids || !a->types || !a->lengths || !a->labels || !a->targets || !tmp) { free(tmp); return -1; }
    flatten(d, ids, tmp, NULL, n * L);
    for (int e = 0; e < n * L; e++) a->ids[e] = tmp[e];
    flatten(d, lengths, a->lengths, NULL, n);
    int types = bert_json_member(d, node, "type_ids");
    if (types >= 0) {
        flatten(d, types, tmp, NULL, n * L);
        for (int e = 0; e < n * L; e++) a->types[e] = tmp[e];
    }
    free(tmp);
    int labels = bert_json_member(d, node, "labels"), targets = bert_json_member(d, node, "targets");
    if (labels >= 0) flatten(d, labels, a->labels, NULL, n * L * 2 + 2);
    if (targets >= 0) flatten(d, targets, NULL, a->targets, n * (num_labels + 1));
    a->b.n = n;
    a->b.max_len = L;
    a->b.ids = a->ids;
    a->b.type_ids = types >= 0 ? a->types : NULL;
    a->b.lengths = a->lengths;
    a->b.labels = a->labels;
    a->b.targets = a->targets;
    a->b.columns = (int)bert_json_int(d, bert_json_member(d, node, "columns"), 0);
    return 0;
}

static bert_train_task task_of(const char *s)
{
    return strcmp(s, "multi_label") == 0 ? BERT_TRAIN_MULTI_LABEL : strcmp(s, "regression") == 0 ? BERT_TRAIN_REGRESSION
         : strcmp(s, "tokens") == 0 ? BERT_TRAIN_TOKENS : strcmp(s, "qa") == 0 ? BERT_TRAIN_QA
         : strcmp(s, "embed") == 0 ? BERT_TRAIN_EMBED : BERT_TRAIN_CLASSIFY;
}

static void golden_settings(const json_doc *d, bert_train_settings *s)
{
    bert_train_settings_default(s);
    s->task = task_of(bert_json_str(d, bert_json_member(d, 0, "task"), ""));
    s->num_labels = (int)bert_json_int(d, bert_json_member(d, 0, "num_labels"), 0);
    int st = bert_json_member(d, 0, "settings");
    s->learning_rate = (float)bert_json_real(d, bert_json_member(d, st, "learning_rate"), 0);
    s->weight_decay = (float)bert_json_real(d, bert_json_member(d, st, "weight_decay"), 0);
    s->warmup_steps = bert_json_int(d, bert_json_member(d, st, "warmup_steps"), 0);
    s->total_steps = bert_json_int(d, bert_json_member(d, st, "total_steps"), 1);
    s->max_grad_norm = (float)bert_json_real(d, bert_json_member(d, st, "max_grad_norm"), 1);
    s->freeze_encoder = (int)bert_json_int(d, bert_json_member(d, st, "freeze_encoder"), 0);
    s->dropout = 0;
    s->threads = 1;
    const char *pool = bert_json_str(d, bert_json_member(d, 0, "pooling"), "mean");
    s->pooling = strcmp(pool, "max") == 0 ? BERT_POOL_MAX : strcmp(pool, "cls") == 0 ? BERT_POOL_CLS : BERT_POOL_MEAN;
    s->embed_scale = (float)bert_json_real(d, bert_json_member(d, 0, "scale"), 20);
}

/* Measured over every golden run, for the report. */
static double worst_loss, worst_weight;
static long weights_total, weights_over;

static int compare_floats(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static void golden_run(const char *name)
{
    char path[512], label[200];
    snprintf(label, sizeof label, "against PyTorch: %s, 6 steps", name);
    t_case(label);
    snprintf(path, sizeof path, GOLDEN_DIR "/%s/golden.json", name);
    json_doc *d = NULL;
    char *err = NULL;
    int parsed = bert_json_parse_file(path, &d, &err);
    if (!T_CHECK(parsed == 1, "%s: %s", path, err ? err : "?")) {
        free(err);
        return;
    }
    snprintf(path, sizeof path, GOLDEN_DIR "/%s", name);
    bert_model *base = load_model(path, BERT_PRECISION_FLOAT32);
    snprintf(path, sizeof path, GOLDEN_DIR "/%s/final", name);
    bert_model *final = load_model(path, BERT_PRECISION_FLOAT32);
    bert_train_settings s;
    golden_settings(d, &s);
    bert_trainer *tr = base && final ? bert_trainer_new(base, &s, &err) : NULL;
    T_CHECK(tr, "bert_trainer_new: %s", err ? err : "?");
    free(err);
    err = NULL;
    int steps = bert_json_member(d, 0, "steps"), log = bert_json_member(d, 0, "log");
    int step_node = d->nodes[steps].first_child, log_node = d->nodes[log].first_child;
    for (int step = 0; tr && step_node >= 0 && log_node >= 0;
         step++, step_node = d->nodes[step_node].next_sibling, log_node = d->nodes[log_node].next_sibling) {
        int micro = bert_json_length(d, step_node);
        int want_loss = d->nodes[bert_json_member(d, log_node, "losses")].first_child;
        for (int b = d->nodes[step_node].first_child; b >= 0; b = d->nodes[b].next_sibling) {
            batch_arrays a;
            double loss = NAN, want = bert_json_real(d, want_loss, NAN);
            int rc = read_batch(d, b, s.num_labels, &a) == 0 ? bert_trainer_accumulate(tr, &a.b, 1.0f / (float)micro,
                                                                                        &loss, NULL, NULL, &err)
                                                             : -1;
            T_CHECK(rc == 0, "step %d: %s", step, err ? err : "out of memory");
            free(err);
            err = NULL;
            double diff = fabs(loss - want);
            if (diff > worst_loss) worst_loss = diff;
            T_CHECK(diff <= 1e-4 * fmax(1, fabs(want)), "step %d: loss %.8f, PyTorch %.8f", step, loss, want);
            batch_free(&a);
            want_loss = d->nodes[want_loss].next_sibling;
        }
        double rate = 0, norm = 0;
        double want_rate = bert_json_real(d, bert_json_member(d, log_node, "rate"), NAN);
        double want_norm = bert_json_real(d, bert_json_member(d, log_node, "grad_norm"), NAN);
        T_CHECK_AFTER(bert_trainer_step(tr, &rate, &norm, &err) == 0, "step %d: %s", step, err ? err : "?");
        free(err);
        err = NULL;
        T_CHECK(fabs(rate - want_rate) <= 1e-9, "step %d: rate %g, PyTorch %g", step, rate, want_rate);
        T_CHECK(fabs(norm - want_norm) <= 1e-4 * fmax(1, want_norm), "step %d: gradient norm %.8f, PyTorch %.8f", step,
                norm, want_norm);
    }
    if (tr) {
        span got[256], want[256];
        const bert_model *trained = bert_trainer_model(tr);
        int n = model_spans(trained, got, 256);
        T_CHECK(model_spans(final, want, 256) == n && n <= 256, "tensor lists differ");
        size_t total = 0;
        for (int k = 0; k < n; k++) total += got[k].n;
        float *diffs = malloc((total ? total : 1) * sizeof *diffs);
        size_t at = 0;
        double max = 0;
        for (int k = 0; k < n && diffs; k++) {
            if (!got[k].n) continue;
            if (!T_CHECK(want[k].n == got[k].n, "tensor %d: %zu values, PyTorch's %zu", k, got[k].n, want[k].n)) continue;
            for (size_t e = 0; e < got[k].n; e++) {
                float diff = fabsf(got[k].p[e] - want[k].p[e]);
                if (diff > 2e-6f && getenv("BERT_TEST_VERBOSE"))
                    printf("    tensor %d entry %zu: %.9g, PyTorch %.9g\n", k, e, got[k].p[e], want[k].p[e]);
                diffs[at++] = diff;
                if (diff > max) max = diff;
            }
        }
        if (diffs && at) {
            qsort(diffs, at, sizeof *diffs, compare_floats);
            float p999 = diffs[(size_t)((double)at * 0.999)];
            size_t over = 0;
            for (size_t e = 0; e < at; e++) over += diffs[e] > 2e-6f;
            weights_total += (long)at;
            weights_over += (long)over;
            if (max > worst_weight) worst_weight = max;
            T_CHECK(p999 <= 2e-6f, "99.9%% of the weights within %g, not 2e-6 (%zu of %zu beyond)", p999, over, at);
            T_CHECK(max <= 2.5e-4, "a weight %g from PyTorch's", max);
            if (getenv("BERT_TEST_VERBOSE"))
                printf("  %s: %zu weights, median %.3g, 99.9%% %.3g, max %.3g\n", name, at, diffs[at / 2], p999, max);
        }
        free(diffs);
        if (base->cfg.sinusoidal_positions) {
            /* requires_grad False: not a bit of them moves. */
            const bert_config *c = &base->cfg;
            T_CHECK(memcmp(trained->pos_emb, base->pos_emb,
                           (size_t)c->max_position_embeddings * (size_t)c->hidden_size * sizeof(float)) == 0,
                    "the sinusoidal position embeddings were trained");
        }
    }
    bert_trainer_free(tr);
    bert_model_free(base);
    bert_model_free(final);
    bert_json_free(d);
}

/* ------------------------------------------------------------ the model the trainer shows */

/* The encoder of the extension on the trainer's weights gives the logits
 * the training forward computed its loss from. */
static void inference_matches(const char *name, bert_train_task task)
{
    char path[512], label[200];
    snprintf(label, sizeof label, "bert_encode on the trained weights: %s", name);
    t_case(label);
    snprintf(path, sizeof path, strchr(name, '/') ? "%s" : GOLDEN_DIR "/%s", name);
    if (strchr(name, '/') && !t_exists(path)) {
        t_skip("build/models missing: make test builds them");
        return;
    }
    bert_model *base = load_model(path, BERT_PRECISION_FLOAT32);
    if (!base) return;
    bert_train_settings s;
    bert_train_settings_default(&s);
    s.task = task;
    s.num_labels = base->head.num_labels;
    s.dropout = 0;
    s.threads = 2;
    s.learning_rate = 1e-2f;
    s.total_steps = 10;
    char *err = NULL;
    bert_trainer *tr = bert_trainer_new(base, &s, &err);
    bert_scratch *sc = bert_scratch_new();
    T_CHECK(tr && sc, "bert_trainer_new: %s", err ? err : "?");
    free(err);
    err = NULL;
    /* A batch of three, padded, with a pad token inside. */
    const int n = 3, L = 6, lengths[3] = {6, 4, 2};
    const int pad = base->cfg.pad_token_id;
    int32_t ids[18], types[18] = {0};
    int labels[18];
    for (int e = 0; e < 18; e++) {
        ids[e] = e % L < lengths[e / L] ? 4 + (e * 7) % 25 : pad;
        labels[e] = task == BERT_TRAIN_TOKENS ? (e % L < lengths[e / L] ? e % 2 : -100) : e % 2;
    }
    ids[3] = pad;
    bert_train_batch b = {n, L, ids, types, lengths, labels, NULL, 0};
    for (int round = 0; tr && sc && round < 2; round++) {
        double loss = NAN;
        T_CHECK_AFTER(bert_trainer_accumulate(tr, &b, 1, &loss, NULL, NULL, &err) == 0, "%s", err ? err : "?");
        free(err);
        err = NULL;
        /* The same loss from bert_encode's hidden states and the model's heads. */
        const bert_model *m = bert_trainer_model(tr);
        int32_t packed[18];
        int at = 0;
        for (int i = 0; i < n; i++)
            for (int q = 0; q < lengths[i]; q++) packed[at++] = ids[i * L + q];
        const float *h = bert_encode(m, sc, packed, NULL, lengths, n, NULL, NULL, &err);
        T_CHECK(h, "bert_encode: %s", err ? err : "?");
        free(err);
        err = NULL;
        double want = 0;
        int counted = 0;
        for (int i = 0, row = 0; h && i < n; row += lengths[i], i++) {
            float logits[6 * 16];
            if (task == BERT_TRAIN_TOKENS) {
                T_CHECK_AFTER(bert_token_logits(m, sc, h + (size_t)row * m->cfg.hidden_size, lengths[i], logits, &err) == 0,
                        "token logits");
            } else {
                T_CHECK_AFTER(bert_classifier_logits(m, sc, h + (size_t)row * m->cfg.hidden_size, lengths[i], logits, &err) == 0,
                        "classifier logits: %s", err ? err : "?");
            }
            free(err);
            err = NULL;
            int rows = task == BERT_TRAIN_TOKENS ? lengths[i] : 1;
            for (int r = 0; r < rows; r++) {
                int y = labels[i * (task == BERT_TRAIN_TOKENS ? L : 1) + r];
                if (task == BERT_TRAIN_TOKENS) y = labels[i * L + r];
                else y = labels[i];
                if (y < 0) continue;
                const float *z = logits + r * s.num_labels;
                double max = z[0], sum = 0;
                for (int c = 1; c < s.num_labels; c++)
                    if (z[c] > max) max = z[c];   /* not fmax(): see test_threads */
                for (int c = 0; c < s.num_labels; c++) sum += exp(z[c] - max);
                want += max + log(sum) - z[y];
                counted++;
            }
        }
        want /= counted;
        T_CHECK(fabs(loss - want) <= 1e-5 * fmax(1, fabs(want)), "round %d: training forward %.8f, bert_encode %.8f",
                round, loss, want);
        /* A step in between, so that the second round runs on trained weights. */
        T_CHECK_AFTER(bert_trainer_step(tr, NULL, NULL, &err) == 0, "step: %s", err ? err : "?");
        free(err);
        err = NULL;
    }
    bert_scratch_free(sc);
    bert_trainer_free(tr);
    bert_model_free(base);
}

/* ------------------------------------------------------------ the rest */

static bert_trainer *classify_trainer(bert_model *base, float dropout, uint64_t seed)
{
    bert_train_settings s;
    bert_train_settings_default(&s);
    s.num_labels = 3;
    s.dropout = dropout;
    s.seed = seed;
    s.threads = 1;
    s.total_steps = 4;
    s.warmup_steps = 1;
    s.learning_rate = 1e-2f;
    s.weight_decay = 0.01f;
    char *err = NULL;
    bert_trainer *t = bert_trainer_new(base, &s, &err);
    T_CHECK(t, "bert_trainer_new: %s", err ? err : "?");
    free(err);
    return t;
}

static const int32_t some_ids[8] = {2, 9, 14, 7, 3, 11, 0, 0};
static const int some_lengths[2] = {4, 2};
static const int some_labels[2] = {1, 2};

static double one_loss(bert_trainer *t, const bert_train_batch *b, char **err)
{
    double loss = NAN;
    return bert_trainer_accumulate(t, b, 1, &loss, NULL, NULL, err) == 0 ? loss : NAN;
}

static void test_state_and_dropout(void)
{
    t_case("a run saved and restored continues as if never stopped, dropout included; dropout follows the seed");
    bert_model *base = load_model(GOLDEN_DIR "/bert-classify", BERT_PRECISION_FLOAT32);
    if (!base) return;
    bert_train_batch b = {2, 4, some_ids, NULL, some_lengths, some_labels, NULL, 0};
    char *err = NULL;
    bert_trainer *a = classify_trainer(base, 0.1f, 5), *c = classify_trainer(base, 0.1f, 5),
                 *d = classify_trainer(base, 0.1f, 6), *z = classify_trainer(base, 0, 5);
    if (a && c && d && z) {
        double la = one_loss(a, &b, &err), lc = one_loss(c, &b, &err), ld = one_loss(d, &b, &err),
               lz = one_loss(z, &b, &err);
        T_CHECK(la == lc, "the same seed gave losses %.9g and %.9g", la, lc);
        T_CHECK(la != ld && la != lz, "dropout changed nothing: %.9g %.9g %.9g", la, ld, lz);
        bert_trainer_step(a, NULL, NULL, &err);
        bert_trainer_step(z, NULL, NULL, &err);
        one_loss(z, &b, &err);
        bert_trainer_step(z, NULL, NULL, &err);
        /* A new trainer restored from z's state takes the same third step. */
        bert_trainer *r = classify_trainer(base, 0, 77);
        if (r) {
            T_CHECK_AFTER(bert_trainer_set_state(r, bert_trainer_model(z), bert_trainer_moments(z, 0),
                                           bert_trainer_moments(z, 1), bert_trainer_steps(z), &err) == 0,
                    "set_state: %s", err ? err : "?");
            T_CHECK(bert_trainer_steps(r) == 2, "steps %ld", bert_trainer_steps(r));
            double l1 = one_loss(z, &b, &err), l2 = one_loss(r, &b, &err);
            double r1 = 0, r2 = 0;
            bert_trainer_step(z, &r1, NULL, &err);
            bert_trainer_step(r, &r2, NULL, &err);
            T_CHECK(l1 == l2 && r1 == r2, "restored: loss %.9g against %.9g, rate %g against %g", l2, l1, r2, r1);
            span p[256], q[256];
            int n = model_spans(bert_trainer_model(z), p, 256), same = 1;
            model_spans(bert_trainer_model(r), q, 256);
            for (int k = 0; k < n; k++)
                if (p[k].n) same &= memcmp(p[k].p, q[k].p, p[k].n * sizeof(float)) == 0;
            T_CHECK(same, "the restored run's weights differ after its step");
            /* A state of another shape is refused. */
            bert_model *other = load_model(GOLDEN_DIR "/bert-tokens", BERT_PRECISION_FLOAT32);
            if (other) {
                T_CHECK_AFTER(bert_trainer_set_state(r, other, other, other, 1, &err) == -1 && err, "another head's state taken");
                free(err);
                err = NULL;
            }
            bert_model_free(other);
            bert_trainer_free(r);
        }
        /* With dropout on, a trainer restored from a's state after its step
         * draws a's masks: they follow (seed, step, micro-batch), not a
         * generator's past.  The second micro-batch of a step draws anew. */
        bert_trainer *q = classify_trainer(base, 0.1f, 5);
        if (q) {
            T_CHECK_AFTER(bert_trainer_set_state(q, bert_trainer_model(a), bert_trainer_moments(a, 0),
                                                 bert_trainer_moments(a, 1), bert_trainer_steps(a), &err) == 0,
                          "set_state: %s", err ? err : "?");
            double a1 = one_loss(a, &b, &err), q1 = one_loss(q, &b, &err);
            double a2 = one_loss(a, &b, &err), q2 = one_loss(q, &b, &err);
            T_CHECK(a1 == q1 && a2 == q2, "restored with dropout: %.17g %.17g against %.17g %.17g", q1, q2, a1, a2);
            T_CHECK(a1 != a2, "two micro-batches of a step drew the same masks: %.17g", a1);
            bert_trainer_free(q);
        }
    }
    free(err);
    bert_trainer_free(a);
    bert_trainer_free(c);
    bert_trainer_free(d);
    bert_trainer_free(z);
    bert_model_free(base);
}

static void test_new_head(void)
{
    t_case("a base without the task's head gets a new one: normal(0, initializer_range), zero biases, by seed");
    /* The sentence-embedding checkpoint is a BertModel with a pooler and no classifier. */
    bert_model *base = load_model(GOLDEN_DIR "/bert-embed-mean", BERT_PRECISION_FLOAT32);
    if (!base) return;
    T_CHECK(base->cfg.pad_token_id == 0 && fabsf(base->cfg.initializer_range - 0.02f) < 1e-9f,
            "config: pad_token_id %d, initializer_range %g", base->cfg.pad_token_id, base->cfg.initializer_range);
    bert_trainer *a = classify_trainer(base, 0, 1), *b = classify_trainer(base, 0, 1), *c = classify_trainer(base, 0, 2);
    if (a && b && c) {
        const bert_model *m = bert_trainer_model(a);
        const int H = m->cfg.hidden_size;
        double ss = 0, bias = 0;
        for (int e = 0; e < 3 * H; e++) ss += (double)m->cls_w[e] * m->cls_w[e];
        for (int e = 0; e < 3; e++) bias += fabs(m->cls_b[e]);
        double sd = sqrt(ss / (3 * H));
        T_CHECK(sd > 0.012 && sd < 0.03 && bias == 0, "new classifier: sd %g, biases %g", sd, bias);
        T_CHECK(memcmp(m->pooler_w, base->pooler_w, (size_t)H * H * sizeof(float)) == 0, "the pooler was not kept");
        T_CHECK(memcmp(m->cls_w, bert_trainer_model(b)->cls_w, 3 * (size_t)H * sizeof(float)) == 0,
                "the same seed drew another head");
        T_CHECK(memcmp(m->cls_w, bert_trainer_model(c)->cls_w, 3 * (size_t)H * sizeof(float)) != 0,
                "another seed drew the same head");
        T_CHECK(m->head.num_labels == 3 && m->precision == BERT_PRECISION_FLOAT32 && !m->layers[0].q_w.f32_packed,
                "the model view: %d labels", m->head.num_labels);
    }
    bert_trainer_free(a);
    bert_trainer_free(b);
    bert_trainer_free(c);
    bert_model_free(base);
    /* An MPNetModel keeps its whole encoder, the relative position bias included, under a new head. */
    if (!t_exists("build/models/mpnet-st/model.safetensors")) return;
    bert_model *mp = load_model("build/models/mpnet-st", BERT_PRECISION_FLOAT32);
    bert_trainer *t = mp ? classify_trainer(mp, 0, 3) : NULL;
    if (t) {
        const bert_model *m = bert_trainer_model(t);
        size_t rel = (size_t)mp->cfg.relative_buckets * mp->cfg.num_heads, H = (size_t)mp->cfg.hidden_size;
        T_CHECK(memcmp(m->rel_bias, mp->rel_bias, rel * sizeof(float)) == 0, "MPNet's relative bias was not kept");
        T_CHECK(memcmp(m->layers[1].ff_ln_b, mp->layers[1].ff_ln_b, H * sizeof(float)) == 0 &&
                memcmp(m->word_emb, mp->word_emb, H * 10 * sizeof(float)) == 0, "MPNet's encoder was not kept");
        T_CHECK(m->pre_cls_w && m->cls_b[0] == 0, "MPNet's new head");
    }
    bert_trainer_free(t);
    bert_model_free(mp);
}

static void expect_error(bert_trainer *t, const bert_train_batch *b, const char *fragment)
{
    char *err = NULL;
    double loss = 0;
    int rc = bert_trainer_accumulate(t, b, 1, &loss, NULL, NULL, &err);
    T_CHECK(rc == -1 && err && strstr(err, fragment), "expected an error with \"%s\", got %d: %s", fragment, rc,
            err ? err : "(none)");
    free(err);
}

/* A larger model, whose products and attention are shared out over two
 * threads, gives the gradients of one thread. */
static void test_threads(void)
{
    t_case("two threads give the gradients of one (products and attention shared out)");
    if (!t_exists("build/models/mpnet-cls/model.safetensors")) {
        t_skip("build/models missing: make test builds them");
        return;
    }
    bert_model *base = load_model("build/models/mpnet-cls", BERT_PRECISION_FLOAT32);
    if (!base) return;
    enum { N = 8, L = 48 };
    static int32_t ids[N * L];
    int lengths[N], labels[N];
    for (int i = 0; i < N; i++) {
        lengths[i] = L - 5 * i;
        labels[i] = i % 2;
        for (int q = 0; q < L; q++) ids[i * L + q] = q < lengths[i] ? 5 + (i * 131 + q * 17) % 20000 : 1;
    }
    bert_train_batch b = {N, L, ids, NULL, lengths, labels, NULL, 0};
    const bert_model *g[2] = {NULL, NULL};
    bert_trainer *t[2] = {NULL, NULL};
    double loss[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        bert_train_settings s;
        bert_train_settings_default(&s);
        s.threads = k + 1;
        s.dropout = 0.1f;
        char *err = NULL;
        t[k] = bert_trainer_new(base, &s, &err);
        int rc = t[k] ? bert_trainer_accumulate(t[k], &b, 1, &loss[k], NULL, NULL, &err) : -1;
        T_CHECK(rc == 0, "threads %d: %s", k + 1, err ? err : "?");
        free(err);
        g[k] = t[k] ? bert_trainer_gradients(t[k]) : NULL;
    }
    if (g[0] && g[1]) {
        T_CHECK(fabs(loss[0] - loss[1]) <= 1e-6 * fabs(loss[0]), "losses %.9g and %.9g", loss[0], loss[1]);
        span a[256], c[256];
        int n = model_spans(g[0], a, 256);
        model_spans(g[1], c, 256);
        double worst = 0, scale = 0;
        for (int k = 0; k < n; k++)
            for (size_t e = 0; e < a[k].n; e++) {
                /* Comparisons, not fmax(): aarch64 GCC 12's vectorizer
                 * stops with an internal error on this reduction. */
                double d = fabs((double)a[k].p[e] - c[k].p[e]), v = fabs((double)a[k].p[e]);
                if (d > worst) worst = d;
                if (v > scale) scale = v;
            }
        T_CHECK(scale > 0 && worst <= 1e-5 * scale, "gradients differ by %g (largest %g)", worst, scale);
    }
    bert_trainer_free(t[0]);
    bert_trainer_free(t[1]);
    bert_model_free(base);
}

static int stop_now(void *ctx)
{
    return ++*(int *)ctx > 1;
}

static void test_interrupt(void)
{
    t_case("an interrupted batch returns 1 and the trainer goes on");
    bert_model *base = load_model(GOLDEN_DIR "/bert-classify", BERT_PRECISION_FLOAT32);
    bert_trainer *t = base ? classify_trainer(base, 0, 1) : NULL;
    if (t) {
        bert_train_batch b = {2, 4, some_ids, NULL, some_lengths, some_labels, NULL, 0};
        char *err = NULL;
        double loss = 0;
        int polls = 0;
        T_CHECK_AFTER(bert_trainer_accumulate(t, &b, 1, &loss, stop_now, &polls, &err) == 1, "not interrupted");
        free(err);
        err = NULL;
        T_CHECK_AFTER(isfinite(one_loss(t, &b, &err)) && bert_trainer_step(t, NULL, NULL, &err) == 0, "after: %s",
                err ? err : "?");
        free(err);
    }
    bert_trainer_free(t);
    bert_model_free(base);
}

static void test_errors(void)
{
    t_case("bad batches, a loss that is not finite, and a model that cannot train are errors");
    bert_model *base = load_model(GOLDEN_DIR "/bert-classify", BERT_PRECISION_FLOAT32);
    bert_trainer *t = base ? classify_trainer(base, 0, 1) : NULL;
    if (t) {
        int32_t ids[8];
        int lengths[2], labels[2];
        bert_train_batch b = {2, 4, ids, NULL, lengths, labels, NULL, 0};
#define RESET() (memcpy(ids, some_ids, sizeof ids), memcpy(lengths, some_lengths, sizeof lengths), \
                 memcpy(labels, some_labels, sizeof labels), b.n = 2, b.max_len = 4)
        RESET(); ids[2] = 40; expect_error(t, &b, "outside the model's vocabulary");
        RESET(); ids[5] = -1; expect_error(t, &b, "outside the model's vocabulary");
        RESET(); lengths[1] = 0; expect_error(t, &b, "length 0");
        RESET(); lengths[0] = 5; expect_error(t, &b, "length 5");
        RESET(); b.max_len = 13; expect_error(t, &b, "at most 12");
        RESET(); labels[1] = 3; expect_error(t, &b, "label 3 is out of range");
        RESET(); labels[0] = -2; expect_error(t, &b, "out of range");
        RESET(); b.n = 0; expect_error(t, &b, "at least one sequence");
        RESET(); labels[0] = labels[1] = BERT_TRAIN_IGNORE; expect_error(t, &b, "no sequence of the batch has a label");
        RESET();
        /* A NaN in the weights makes the loss NaN. */
        float *bias = (float *)bert_trainer_model(t)->cls_b, keep = bias[0];
        bias[0] = NAN;
        expect_error(t, &b, "not finite");
        bias[0] = keep;
        char *err = NULL;
        T_CHECK_AFTER(isfinite(one_loss(t, &b, &err)), "the loss after the NaN was taken out: %s", err ? err : "?");
        free(err);
#undef RESET
    }
    bert_trainer_free(t);
    /* A model held at a reduced precision is refused, naming float32. */
    char *err = NULL;
    bert_train_settings s;
    bert_train_settings_default(&s);
    s.num_labels = 3;
    bert_model *bf16 = load_model(GOLDEN_DIR "/bert-classify", BERT_PRECISION_BFLOAT16);
    if (bf16) {
        T_CHECK_AFTER(!bert_trainer_new(bf16, &s, &err) && err && strstr(err, "float32"), "bfloat16: %s", err ? err : "(none)");
        free(err);
        err = NULL;
    }
    bert_model_free(bf16);
    /* The newer encoders' layers are not the network's: refused by name. */
    static const char *const newer[][2] = {{"build/models/modernbert-cls", "ModernBERT"},
                                           {"build/models/deberta-cls", "DeBERTa"},
                                           {"build/models/jina-cls", "JinaBERT"},
                                           {"build/models/nomic-cls", "nomic-bert"},
                                           {"build/models/gte-cls", "gte"}};
    for (int i = 0; i < 5; i++) {
        bert_model *other = load_model(newer[i][0], BERT_PRECISION_FLOAT32);
        if (!other) continue;
        T_CHECK_AFTER(!bert_trainer_new(other, &s, &err) && err && strstr(err, newer[i][1]) &&
                          strstr(err, "BERT, DistilBERT, RoBERTa"),
                      "%s: %s", newer[i][1], err ? err : "(none)");
        free(err);
        err = NULL;
        bert_model_free(other);
    }
    s.num_labels = 1;
    T_CHECK_AFTER(base && !bert_trainer_new(base, &s, &err) && err && strstr(err, "num_labels"), "1 class: %s",
            err ? err : "(none)");
    free(err);
    bert_model_free(base);
}

static void test_out_of_memory(void)
{
    t_case("every allocation of a trainer, a batch and a step failing in turn: an error saying so, never a crash");
    bert_model *base = load_model(GOLDEN_DIR "/bert-classify", BERT_PRECISION_FLOAT32);
    if (!base) return;
    bert_train_batch b = {2, 4, some_ids, NULL, some_lengths, some_labels, NULL, 0};
    bert_train_settings s;
    bert_train_settings_default(&s);
    s.num_labels = 3;
    s.threads = 1;
    int runs = 0, completed = 0, bad = 0;
    for (long fail = 0; fail < 200 && !completed; fail++, runs++) {
        char *err = NULL;
        double loss = 0;
        t_fail_allocation(t_allocations() + fail);
        bert_trainer *t = bert_trainer_new(base, &s, &err);
        int rc = t ? bert_trainer_accumulate(t, &b, 1, &loss, NULL, NULL, &err) : -1;
        if (rc == 0) rc = bert_trainer_step(t, NULL, NULL, &err);
        t_fail_allocation(-1);
        if (rc == 0) completed = 1;
        else if (!err || !strstr(err, "out of memory")) bad++;
        free(err);
        bert_trainer_free(t);
    }
    T_CHECK(completed && !bad && runs > 5, "%d runs, %d without an out-of-memory message, completed %d", runs, bad,
            completed);
    bert_model_free(base);
}

void suite_trainer(void)
{
    static const bert_family families[] = {BERT_FAMILY_BERT, BERT_FAMILY_DISTILBERT, BERT_FAMILY_ROBERTA,
                                           BERT_FAMILY_MPNET, BERT_FAMILY_ELECTRA};
    for (int f = 0; f < 5; f++) {
        for (int task = BERT_TRAIN_CLASSIFY; task <= BERT_TRAIN_QA; task++)
            fd_check(families[f], (bert_train_task)task, BERT_POOL_MEAN, 0);
        fd_check(families[f], BERT_TRAIN_EMBED, BERT_POOL_MEAN, 0);
        fd_check(families[f], BERT_TRAIN_CLASSIFY, BERT_POOL_MEAN, 0.1f);
        fd_check(families[f], BERT_TRAIN_TOKENS, BERT_POOL_MEAN, 0.1f);
        fd_check(families[f], BERT_TRAIN_QA, BERT_POOL_MEAN, 0.1f);
    }
    fd_check(BERT_FAMILY_BERT, BERT_TRAIN_EMBED, BERT_POOL_MAX, 0);
    fd_check(BERT_FAMILY_BERT, BERT_TRAIN_EMBED, BERT_POOL_CLS, 0.1f);

    static const char *const runs[] = {
        "bert-classify", "bert-multi-label", "bert-regression", "bert-tokens", "bert-qa", "bert-embed-mean",
        "bert-embed-max", "bert-embed-cls", "bert-classify-frozen", "distilbert-classify", "distilbert-qa",
        "distilbert-tokens", "distilbert-classify-pair", "distilbert-multi-label", "distilbert-regression",
        "distilbert-embed-mean", "distilbert-sinusoidal-classify", "roberta-classify", "roberta-tokens",
        "roberta-multi-label", "roberta-classify-pair", "roberta-regression", "roberta-qa", "roberta-embed-cls",
        "mpnet-classify", "mpnet-tokens", "electra-classify", "electra-tokens", "electra-qa", "electra-embed-mean",
    };
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) golden_run(runs[i]);
    if (getenv("BERT_TEST_VERBOSE"))
        printf("  trainer: finite differences worst relative %.3g; PyTorch: worst loss %.3g, worst weight %.3g, "
               "%ld of %ld weights beyond 2e-6\n", fd_worst, worst_loss, worst_weight, weights_over, weights_total);

    inference_matches("bert-classify", BERT_TRAIN_CLASSIFY);
    inference_matches("bert-tokens", BERT_TRAIN_TOKENS);
    inference_matches("distilbert-classify", BERT_TRAIN_CLASSIFY);
    /* sinusoidal_pos_embds: the file's sinusoids read as any position embeddings. */
    inference_matches("distilbert-sinusoidal-classify", BERT_TRAIN_CLASSIFY);
    inference_matches("roberta-classify", BERT_TRAIN_CLASSIFY);
    /* XLM-RoBERTa, and a bfloat16 file widened at load. */
    inference_matches("build/models/xlmr-cls-bf16", BERT_TRAIN_CLASSIFY);
    inference_matches("build/models/roberta-ner", BERT_TRAIN_TOKENS);
    inference_matches("build/models/mpnet-cls", BERT_TRAIN_CLASSIFY);
    inference_matches("build/models/mpnet-ner", BERT_TRAIN_TOKENS);
    /* ELECTRA: embeddings_project and the gelu classification head. */
    inference_matches("electra-classify", BERT_TRAIN_CLASSIFY);
    inference_matches("electra-tokens", BERT_TRAIN_TOKENS);
    test_interrupt();
    test_threads();
    test_new_head();
    test_state_and_dropout();
    test_errors();
    test_out_of_memory();
}
