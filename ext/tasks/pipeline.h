/*
 * pipeline.h - what each SQL function computes, on a registered model:
 * tokenize with [CLS]/[SEP] and truncation, embed, fill masks, judge a
 * sentence pair.  Knows nothing of SQLite; the glue formats the results.
 */
#ifndef BERT_PIPELINE_H
#define BERT_PIPELINE_H

#include "../base/interrupt.h"
#include "../models/registry.h"
#include "../tokenizer/tokenizer.h"

/* [CLS] pieces [SEP], cut to the entry's max_length when it truncates (an
 * error when it does not and the text is longer, unless allow_long is set). */
int bert_pipeline_tokenize(bert_entry *e, const char *text, size_t len, int allow_long,
                      bert_ids *out, char **err);

/* The pooled (and, when configured, normalized) embedding: out[hidden_size]. */
int bert_pipeline_embed(bert_entry *e, const char *text, size_t len, float *out,
                   bert_interrupt_fn interrupted, void *ctx, char **err);

/* Embeds n texts at once, packed into batches sorted by length:
 * out[n x hidden_size], in the order given. */
int bert_pipeline_embed_batch(bert_entry *e, const char *const *texts, const size_t *lens, int n,
                         float *out, bert_interrupt_fn interrupted, void *ctx, char **err);

typedef struct {
    int mask_index;     /* 0-based, left to right */
    int rank;           /* 1-based, best first */
    int32_t token;
    double score;       /* softmax over the whole vocabulary */
    char *token_str;    /* decode([token]) */
    char *sequence;     /* the text with the mask filled, decoded as Hugging Face does */
} fill_mask_candidate;

typedef struct {
    fill_mask_candidate *items;   /* n_masks * top_k of them, mask by mask, best first */
    int n_masks;
    int top_k;
} fill_mask_result;

int bert_pipeline_fill_mask(bert_entry *e, const char *text, size_t len, int top_k,
                       fill_mask_result *out, bert_interrupt_fn interrupted, void *ctx, char **err);
void bert_fill_mask_result_free(fill_mask_result *r);

/* Probability that b follows a (the NSP head on [CLS] a [SEP] b [SEP]). */
int bert_pipeline_next_sentence(bert_entry *e, const char *a, size_t alen, const char *b, size_t blen,
                           double *prob, bert_interrupt_fn interrupted, void *ctx, char **err);

/* bert_classify / bert_classify_pair: the scores of every label as the
 * text-classification pipeline computes them by default, for `text` alone
 * (pair NULL) or [CLS] text [SEP] pair [SEP] (longest-first truncation). */
typedef struct {
    int n;                       /* labels */
    int *order;                  /* label ids, best first (ties keep id order) */
    double *scores;              /* by label id */
    const char *const *labels;   /* the model's label names, by id; borrowed */
} classify_result;

int bert_pipeline_classify(bert_entry *e, const char *text, size_t len, const char *pair, size_t pair_len,
                      classify_result *out, bert_interrupt_fn interrupted, void *ctx, char **err);
void bert_classify_result_free(classify_result *r);

/* A cross-encoder's relevance of doc to query, with sentence-transformers'
 * activation (config.json sentence_transformers.activation_fn; sigmoid). */
int bert_pipeline_rerank(bert_entry *e, const char *query, size_t qlen, const char *doc, size_t dlen,
                    double *score, bert_interrupt_fn interrupted, void *ctx, char **err);

/* The same for n documents at once, packed into batches sorted by length:
 * scores[n] in the order given. */
int bert_pipeline_rerank_batch(bert_entry *e, const char *query, size_t qlen, const char *const *docs,
                          const size_t *lens, int n, double *scores, bert_interrupt_fn interrupted,
                          void *ctx, char **err);

/* 0 when e has a sequence-classification head, else -1 with an error that
 * names fn and the checkpoints that have one. */
int bert_pipeline_need_classifier(bert_entry *e, const char *fn, char **err);

/* How a pair longer than max_length is cut: Hugging Face's longest_first
 * (bert_classify_pair, the rerankers) or only_first, which keeps the second
 * text whole (the zero-shot pipeline's hypothesis); an error when the
 * second alone does not fit. */
typedef enum { BERT_PAIR_LONGEST_FIRST, BERT_PAIR_ONLY_FIRST } bert_pair_truncation;

/* The pair through the model's pair template, cut to max_length as `how`
 * says: ids and segment ids (replacing what they held), as
 * bert_classify_pair reads a pair; fine-tuning tokenizes its pairs the same
 * way.  0, or -1 with *err. */
int bert_pipeline_tokenize_pair(bert_entry *e, const char *a, size_t alen, const char *b, size_t blen,
                                bert_pair_truncation how, bert_ids *ids, bert_ids *types, char **err);

/* The classifier's logits of the n pairs (a, bs[i]), packed into batches
 * sorted by length: logits[n x num_labels] in the order given.  fn names
 * the SQL function in the error of a model without the head. */
int bert_pipeline_pair_logits(bert_entry *e, const char *fn, const char *a, size_t alen, const char *const *bs,
                              const size_t *blens, int n, bert_pair_truncation how, float *logits,
                              bert_interrupt_fn interrupted, void *ctx, char **err);

/* ---- token classification and question answering (pipeline_spans.c) ---- */

#include "answers.h"
#include "entities.h"

/* The most word pieces bert_ner reads of a text, and bert_answer of a
 * context: it bounds the time (at most this many pieces' windows through the
 * encoder) and the memory of one call; a longer text is an error that says
 * to cut it with bert_chunks. */
#define PIPELINE_SPAN_MAX_PIECES ((size_t)1 << 16)

/* The overlap, in pieces, of the windows bert_ner reads a long text in:
 * the question-answering pipeline's doc_stride rule, min(128, half a window). */
size_t bert_pipeline_ner_stride(int max_length);

/* bert_ner: the token-classification pipeline with the entry's aggregation;
 * windows of max_length overlapping by pipeline_ner_stride for longer texts. */
int bert_pipeline_ner(bert_entry *e, const char *text, size_t len, ner_entities *out,
                 bert_interrupt_fn interrupted, void *ctx, char **err);

/* bert_answer(_each): the question-answering pipeline's top_k answers in
 * `context`, best first. */
int bert_pipeline_answer(bert_entry *e, const char *question, size_t qlen, const char *context, size_t clen,
                    int top_k, qa_answers *out, bert_interrupt_fn interrupted, void *ctx, char **err);

/* SQuAD 2.0's prediction for one question on the windows bert_answer reads:
 * answers.h's bert_qa_v2_decide (utils_qa.py's version_2_with_negative,
 * null_score_diff_threshold 0) on the windows' logits.  Its return value
 * (1 the bytes of the answer, 0 no answer, 2 utils_qa's placeholder
 * "empty"), or -1 with *err. */
int bert_pipeline_answer_v2(bert_entry *e, const char *question, size_t qlen, const char *context, size_t clen,
                            size_t *byte_start, size_t *byte_end, bert_interrupt_fn interrupted, void *ctx,
                            char **err);

/* "sequence_classification", ..., or "none (a bare encoder)": for errors. */
const char *bert_pipeline_task_phrase(const bert_entry *e);

/* 0, or -1 with *err when the model's tokenizer lacks a special token its
 * own layout puts around every input ([CLS] or [SEP] of a bare vocab.txt). */
int bert_pipeline_need_layout(const bert_entry *e, char **err);

#endif
