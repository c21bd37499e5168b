/*
 * zero_shot.c - see zero_shot.h.  Follows transformers'
 * src/transformers/pipelines/zero_shot_classification.py
 * (ZeroShotClassificationPipeline): the argument handler's hypotheses, the
 * only_first truncation of _parse_and_tokenize, entailment_id and
 * postprocess.
 */
#include "zero_shot.h"
#include "pipeline.h"
#include "../models/entry.h"

#include "../base/buffer.h"
#include "../base/error.h"
#include "../base/function_options.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TEMPLATE "This example is {}."

/* A call's labels become as many pairs through the encoder: bounded so
 * that one call cannot ask for unbounded time and memory. */
#define MAX_LABELS 4096

void bert_zero_shot_request_free(bert_zero_shot_request *r)
{
    if (!r) return;
    free(r->model);
    free(r->hypothesis_template);
    free(r->labels);
    bert_json_free(r->labels_doc);
    memset(r, 0, sizeof *r);
}

static int parse_labels(const char *json, size_t len, const char *fn, bert_zero_shot_request *out, char **err)
{
    static const char *const fix = "give a JSON array of label texts such as '[\"sports\", \"politics\"]'";
    char *why = NULL;
    if (bert_json_parse(json, len, &out->labels_doc, &why) != 0) {
        *err = why ? bert_errorf("%s: labels_json is not valid JSON (%s): %s", fn, why, fix) : NULL;
        free(why);
        return -1;
    }
    const json_doc *d = out->labels_doc;
    int n = d->nodes[0].type == JSON_ARRAY ? bert_json_length(d, 0) : 0;
    if (n < 1 || n > MAX_LABELS) {
        *err = bert_errorf("%s: labels_json must be a non-empty JSON array of at most %d texts: %s", fn,
                           MAX_LABELS, fix);
        return -1;
    }
    out->labels = malloc((size_t)n * sizeof *out->labels);
    if (!out->labels) return -1;
    for (int c = d->nodes[0].first_child; c >= 0; c = d->nodes[c].next_sibling) {
        if (d->nodes[c].type != JSON_TEXT) {
            *err = bert_errorf("%s: label %d of labels_json is not a text: %s", fn, out->n_labels + 1, fix);
            return -1;
        }
        out->labels[out->n_labels++] = d->nodes[c].text;
    }
    return 0;
}

static int parse_options(const char *json, size_t len, const char *fn, bert_zero_shot_request *out, char **err)
{
    json_doc *doc = NULL;
    if (bert_fn_options_parse(json, len, fn, "'{\"model\": \"nli\", \"multi_label\": true}'", &doc, err) != 0)
        return -1;
    int rc = -1;
    const char *template = DEFAULT_TEMPLATE;
    for (int c = bert_fn_options_first(doc); c >= 0; c = doc->nodes[c].next_sibling) {
        const json_node *n = &doc->nodes[c];
        const char *wrong = NULL;
        if (strcmp(n->key, "model") == 0) {
            if (bert_fn_options_model(doc, c, fn, &out->model, err) != 0) goto done;
        } else if (strcmp(n->key, "hypothesis_template") == 0) {
            if (n->type == JSON_TEXT) template = n->text;
            else wrong = "a text with {} where the label goes";
        } else if (strcmp(n->key, "multi_label") == 0) {
            out->multi_label = n->type == JSON_TRUE;
            if (n->type != JSON_TRUE && n->type != JSON_FALSE) wrong = "true or false";
        } else {
            wrong = "";
        }
        if (wrong && *wrong) {
            *err = bert_errorf("%s: option \"%s\" must be %s", fn, n->key, wrong);
            goto done;
        } else if (wrong) {
            *err = bert_fn_options_unknown(fn, n->key, "\"model\", \"hypothesis_template\" and \"multi_label\"");
            goto done;
        }
    }
    /* The pipeline's check: a template that formatting leaves unchanged. */
    if (!strstr(template, "{}")) {
        *err = bert_errorf("%s: option \"hypothesis_template\" \"%s\" has no {} for the label to go in: "
                           "write it as \"This example is {}.\"", fn, template);
        goto done;
    }
    if (!(out->hypothesis_template = bert_strdup(template))) goto done;
    rc = 0;
done:
    bert_json_free(doc);
    return rc;
}

int bert_zero_shot_parse(const char *labels_json, size_t labels_len, const char *options_json, size_t options_len,
                         const char *fn, bert_zero_shot_request *out, char **err)
{
    *err = NULL;
    memset(out, 0, sizeof *out);
    return parse_options(options_json, options_len, fn, out, err) != 0 ||
                   parse_labels(labels_json, labels_len, fn, out, err) != 0
               ? -1
               : 0;
}

void bert_zero_shot_result_free(bert_zero_shot_result *r)
{
    if (!r) return;
    free(r->order);
    free(r->scores);
    memset(r, 0, sizeof *r);
}

/* entailment_id: the first label (by id; config.json's label2id keeps that
 * order) whose lowercased name starts with "entail"; -1 when none. */
static int entailment_id(const bert_model *m)
{
    for (int i = 0; i < m->head.num_labels; i++) {
        const char *l = m->head.labels[i];
        static const char prefix[] = "entail";
        size_t k = 0;
        while (k < sizeof prefix - 1 && l[k] && (l[k] | 0x20) == prefix[k]) k++;
        if (k == sizeof prefix - 1) return i;
    }
    return -1;
}

/* The model's labels, for the error of a model without an entailment one. */
static char *label_list(const bert_model *m)
{
    bert_text t = {0};
    for (int i = 0; i < m->head.num_labels && i < 8; i++) {
        bert_text_add(&t, i ? ", \"" : "\"", i ? 3 : 1);
        bert_text_add(&t, m->head.labels[i], strlen(m->head.labels[i]));
        bert_text_add(&t, "\"", 1);
    }
    if (m->head.num_labels > 8) bert_text_add(&t, ", ...", 5);
    if (t.failed) {
        free(t.s);
        return NULL;
    }
    return t.s;
}

static int need_nli(bert_entry *e, const char *fn, int *entail, int *contradict, char **err)
{
    if (bert_pipeline_need_classifier(e, fn, err) != 0) return -1;
    const bert_model *m = e->model;
    *entail = entailment_id(m);
    if (*entail < 0 || m->head.num_labels < 2) {
        char *labels = label_list(m);
        if (!labels) return -1;
        *err = bert_errorf("%s needs an NLI model whose config.json id2label names an entailment label "
                           "(such as {\"0\": \"contradiction\", \"1\": \"neutral\", \"2\": \"entailment\"}); "
                           "model '%s' has the labels %s: use a model fine-tuned on NLI (MNLI, XNLI), or "
                           "rename its entailment label in config.json's id2label and label2id",
                           fn, e->name, labels);
        free(labels);
        return -1;
    }
    /* postprocess: contradiction_id = -1 if entailment_id == 0 else 0. */
    *contradict = *entail == 0 ? m->head.num_labels - 1 : 0;
    return 0;
}

/* The hypotheses: the template with its first {} replaced by each label. */
static char **hypotheses(const bert_zero_shot_request *r, size_t *lens)
{
    char **h = calloc((size_t)r->n_labels, sizeof *h);
    if (!h) return NULL;
    const char *t = r->hypothesis_template, *at = strstr(t, "{}");
    const size_t before = (size_t)(at - t), after = strlen(at + 2);
    for (int i = 0; i < r->n_labels; i++) {
        size_t ll = strlen(r->labels[i]);
        lens[i] = before + ll + after;
        if (!(h[i] = malloc(lens[i] + 1))) {
            for (int k = 0; k < i; k++) free(h[k]);
            free(h);
            return NULL;
        }
        memcpy(h[i], t, before);
        memcpy(h[i] + before, r->labels[i], ll);
        memcpy(h[i] + before + ll, at + 2, after + 1);
    }
    return h;
}

typedef struct {
    int label;
    double score;
} ranked;

/* Best first.  The pipeline orders by reversed(argsort(scores)): of equal
 * scores (numpy's small-array sort is stable) the later label comes first. */
static int by_score(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return y->label - x->label;
}

int bert_pipeline_zero_shot(bert_entry *e, const char *fn, const char *text, size_t len,
                            const bert_zero_shot_request *r, bert_zero_shot_result *out,
                            bert_interrupt_fn interrupted, void *ctx, char **err)
{
    *err = NULL;
    memset(out, 0, sizeof *out);
    int entail, contradict;
    if (need_nli(e, fn, &entail, &contradict, err) != 0) return -1;
    const int n = r->n_labels, width = e->model->head.num_labels;
    size_t *lens = malloc((size_t)n * sizeof *lens);
    char **hyp = lens ? hypotheses(r, lens) : NULL;
    float *logits = malloc((size_t)n * (size_t)width * sizeof *logits);
    ranked *rank = malloc((size_t)n * sizeof *rank);
    out->order = malloc((size_t)n * sizeof *out->order);
    out->scores = malloc((size_t)n * sizeof *out->scores);
    int rc = -1;
    if (!hyp || !logits || !rank || !out->order || !out->scores) {
        *err = bert_errorf("out of memory classifying a text against %d labels", n);
        goto done;
    }
    if (bert_pipeline_pair_logits(e, fn, text, len, (const char *const *)hyp, lens, n, BERT_PAIR_ONLY_FIRST, logits,
                                  interrupted, ctx, err) != 0)
        goto done;
    if (r->multi_label || n == 1) {
        for (int i = 0; i < n; i++) {
            const float *l = logits + (size_t)i * (size_t)width;
            out->scores[i] = 1.0 / (1.0 + exp((double)l[contradict] - (double)l[entail]));
        }
    } else {
        double max = logits[entail], sum = 0;
        for (int i = 1; i < n; i++) {
            /* A plain comparison, not fmax(): aarch64 GCC 12's vectorizer
             * fails on that reduction over a strided float column. */
            double v = logits[(size_t)i * (size_t)width + (size_t)entail];
            if (v > max) max = v;
        }
        for (int i = 0; i < n; i++)
            sum += out->scores[i] = exp((double)logits[(size_t)i * (size_t)width + (size_t)entail] - max);
        for (int i = 0; i < n; i++) out->scores[i] /= sum;
    }
    for (int i = 0; i < n; i++) rank[i] = (ranked){i, out->scores[i]};
    qsort(rank, (size_t)n, sizeof *rank, by_score);
    for (int i = 0; i < n; i++) out->order[i] = rank[i].label;
    out->n = n;
    rc = 0;
done:
    if (rc != 0) bert_zero_shot_result_free(out);
    for (int i = 0; hyp && i < n; i++) free(hyp[i]);
    free(hyp);
    free(lens);
    free(logits);
    free(rank);
    return rc;
}
