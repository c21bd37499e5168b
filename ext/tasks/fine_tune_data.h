/*
 * fine_tune_data.h - bert_train's options and data: the options object read
 * and checked, the rows of the training (or evaluation) query as plain C
 * values, and those rows made into tokenized examples for each task as
 * transformers' example scripts prepare them (run_glue.py, run_ner.py,
 * run_qa.py, and sentence-transformers' MultipleNegativesRankingLoss
 * inputs).  Every problem with the data is an error naming the row, the
 * column and the fix.
 */
#ifndef BERT_FINE_TUNE_DATA_H
#define BERT_FINE_TUNE_DATA_H

#include "../models/registry.h"

#include <stddef.h>
#include <stdint.h>

/* What the trainer computes (encoder/trainer.h's bert_train_task, value for
 * value: the SQL layer, which includes this header, may not see the encoder). */
typedef enum { FT_HOW_CLASSIFY, FT_HOW_MULTI_LABEL, FT_HOW_REGRESSION, FT_HOW_TOKENS, FT_HOW_QA, FT_HOW_EMBED } ft_how;

/* A token without a label (trainer.h's BERT_TRAIN_IGNORE). */
#define FT_IGNORE (-100)

/* ---- options ---------------------------------------------------------------- */

typedef enum { FT_TASK_CLASSIFY, FT_TASK_REGRESSION, FT_TASK_TOKENS, FT_TASK_QA, FT_TASK_EMBED } ft_task;

typedef struct {
    ft_task task;
    long epochs;                 /* 3 */
    long max_steps;              /* 0: epochs decide */
    int batch_size;              /* 8 */
    double learning_rate;        /* 5e-5 */
    double warmup_ratio;         /* 0 */
    double weight_decay;         /* 0 */
    double max_grad_norm;        /* 1.0 */
    long long seed;              /* 42 */
    int shuffle;                 /* 1 */
    double dropout;              /* -1: config.json's */
    int max_length;              /* 0: the base's */
    char **labels;               /* NULL: from the data */
    int n_labels;
    char *eval_query;            /* NULL: none */
    long logging_steps;          /* 10 */
    long save_steps;             /* 0: only at the end */
    int accumulation;            /* gradient_accumulation_steps, 1 */
    int freeze_encoder;          /* 0 */
    char *resume_from;           /* NULL */
    int overwrite;               /* 0 */
    int doc_stride;              /* 128 */
    char *json;                  /* the options as given, for training_args.json */
} ft_options;

/* Reads bert_train's options_json (NULL or "" for the defaults).  Unknown
 * names and wrong types are errors that list the options.  0, or -1 with
 * *err; ft_options_free in both cases. */
int ft_options_parse(const char *json, size_t len, ft_options *o, char **err);
void ft_options_free(ft_options *o);

/* "classify", "regression", ... */
const char *ft_task_name(ft_task t);

/* ---- rows ------------------------------------------------------------------- */

typedef enum { FT_NULL, FT_INTEGER, FT_REAL, FT_TEXT } ft_type;

typedef struct {
    ft_type type;
    long long integer;
    double real;
    const char *text;            /* FT_TEXT: NUL-terminated, len bytes */
    size_t len;
} ft_value;

/* The rows of a query, copied: n_rows x n_cols values, row-major. */
typedef struct {
    int n_cols;
    size_t n_rows;
    ft_value *values;
    size_t cap;
    char **texts;                /* the copies the values point into */
    size_t n_texts, texts_cap;
} ft_rows;

/* Appends one row of n_cols values (texts copied).  0, or -1 out of memory. */
int ft_rows_add(ft_rows *r, const ft_value *row);
void ft_rows_free(ft_rows *r);

/* ---- examples --------------------------------------------------------------- */

/* One example: a sequence (or, for EMBED, `columns` sequences) of the
 * token pool, and its targets. */
typedef struct {
    size_t at[3];                /* first token in the pool, per sequence */
    int len[3];                  /* tokens, per sequence */
    int label;                   /* CLASSIFY: the class id */
    int start, end;              /* QA: answer tokens in the window, 0 0 for none */
    float target;                /* REGRESSION */
    size_t row;                  /* the query row it came from, 0-based */
} ft_example;

typedef struct {
    ft_how task;        /* the engine's task */
    int columns;                 /* EMBED: 2 or 3; else 1 */
    int pair;                    /* CLASSIFY, REGRESSION: rows hold text_pair */
    int32_t *ids, *types;        /* the token pool */
    int *token_labels;           /* TOKENS: a label per pooled token (FT_IGNORE where none) */
    size_t n_tokens, cap_tokens;
    ft_example *ex;
    size_t n, cap;
    float *targets;              /* MULTI_LABEL: n x n_labels */
    int longest;                 /* tokens of the longest sequence */
} ft_data;

void ft_data_free(ft_data *d);

/* The label names of a run, in id order. */
typedef struct {
    char **names;
    int n;
} ft_labels;

void ft_labels_free(ft_labels *l);

/* Fixes the run's labels from the training rows: the labels option when
 * given (every label of the data must be among them), else the distinct
 * labels sorted (numbers as numbers), else, when the base's head was
 * trained on the same set (base_labels), the base's order, as run_glue.py
 * keeps a model's own order.  TOKENS: B-x and I-x of every entity label,
 * and O, sorted as strings.  Also decides single- or multi-label
 * classification (*task).  0, or -1 with *err. */
int ft_labels_decide(const ft_options *o, const ft_rows *rows, char *const *base_labels, int n_base_labels,
                     ft_labels *out, ft_how *task, char **err);

/* Tokenizes the rows into examples for `task` with the entry's tokenizer
 * (e: a registration that truncates to the run's max_length).  `what` names
 * the query in errors ("query", "eval_query").  0, or -1 with *err. */
int ft_data_prepare(bert_entry *e, const ft_options *o, ft_how task, const ft_labels *labels,
                    const ft_rows *rows, const char *what, ft_data *out, char **err);

/* What the columns of a task's query are, for errors and the docs:
 * "(text, label) or (text, text_pair, label)" ... */
const char *ft_task_columns(ft_task t);

#endif
