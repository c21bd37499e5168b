/*
 * zero_shot.h - bert_zero_shot and bert_zero_shot_each: transformers'
 * zero-shot-classification pipeline on any NLI cross-encoder.  Each label
 * becomes a hypothesis ("This example is {}."), every (text, hypothesis)
 * pair goes through the classifier in one packed batch, and the entailment
 * (and contradiction) logits become the labels' scores.
 */
#ifndef BERT_ZERO_SHOT_H
#define BERT_ZERO_SHOT_H

#include "../base/interrupt.h"
#include "../base/json.h"
#include "../models/registry.h"

/* What a call asks: its labels_json and options_json read. */
typedef struct {
    char *model;                /* option "model"; NULL: the default model */
    char *hypothesis_template;  /* option "hypothesis_template", holds "{}" */
    int multi_label;            /* option "multi_label" */
    json_doc *labels_doc;       /* holds the label strings */
    const char **labels;        /* n_labels of them, in the order given */
    int n_labels;
} bert_zero_shot_request;

/* Reads labels_json (a non-empty JSON array of texts) and options_json
 * (NULL or empty: the defaults) of function fn.  0, or -1 with *err
 * (malloc'd; NULL when memory ran out).  Free with
 * bert_zero_shot_request_free either way. */
int bert_zero_shot_parse(const char *labels_json, size_t labels_len, const char *options_json, size_t options_len,
                         const char *fn, bert_zero_shot_request *out, char **err);
void bert_zero_shot_request_free(bert_zero_shot_request *r);

typedef struct {
    int n;           /* labels */
    int *order;      /* label indices, best first */
    double *scores;  /* by label index */
} bert_zero_shot_result;

/* The pipeline's scores of every label of r for `text`: with multi_label
 * (or one label) each label's softmax over [contradiction, entailment],
 * else the softmax of the entailment logits over the labels. */
int bert_pipeline_zero_shot(bert_entry *e, const char *fn, const char *text, size_t len,
                            const bert_zero_shot_request *r, bert_zero_shot_result *out,
                            bert_interrupt_fn interrupted, void *ctx, char **err);
void bert_zero_shot_result_free(bert_zero_shot_result *r);

#endif
