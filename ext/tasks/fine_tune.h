/*
 * fine_tune.h - a fine-tuning run as bert_train drives it: the base model
 * found (a registered name or a directory), the data prepared
 * (fine_tune_data.h), the trainer (encoder/trainer.h) stepped batch by batch
 * with the Trainer's semantics (dynamic padding, a shuffle per epoch from
 * the seed, gradient accumulation, the linear schedule), a report every
 * logging_steps, checkpoints every save_steps with the optimizer's state,
 * evaluation, and the model saved as a Hugging Face directory
 * (models/model_save.h).  Knows nothing of SQLite: the rows come as plain
 * C values.
 */
#ifndef BERT_FINE_TUNE_H
#define BERT_FINE_TUNE_H

#include "fine_tune_data.h"
#include "../base/interrupt.h"

typedef struct ft_run ft_run;

/* One row of bert_train's output. */
typedef struct {
    long step;                  /* optimizer steps taken */
    double epoch;               /* epochs done, fractional */
    double loss;                /* mean training loss since the previous row; NAN when no step ran since */
    double learning_rate;       /* the rate of the last step */
    double examples_per_s;      /* training examples a second since the previous row */
    char *eval;                 /* JSON of the metrics, or NULL; owned by the run until the next call */
    char *saved;                /* the directory written, or NULL; owned likewise */
} ft_report;

/*
 * Prepares a run, checking everything before anything is written: the
 * options (taken over by the run, even on failure), the base (`base` names
 * a model of `registry`, else it is a model directory), the training rows
 * and the evaluation rows (NULL without eval_query), the output directory
 * (an existing one needs overwrite), the memory the batches need, and the
 * trainer itself.  NULL with *err.
 */
ft_run *ft_run_new(bert_registry *registry, const char *output_dir, const char *base, ft_options *options,
                   const ft_rows *train, const ft_rows *eval, char **err);

/* Trains up to the next report: 1 with *row; 0 when the run is over; -1
 * with *err (a loss that is not finite names its step; an interrupt
 * leaves the last saved checkpoint as it was). */
int ft_run_next(ft_run *r, ft_report *row, bert_interrupt_fn interrupted, void *ctx, char **err);

void ft_run_free(ft_run *r);


/* Evaluates the model `e` computes with (the trained weights, labels named)
 * on the evaluation rows, as the inference functions would answer them:
 * classify accuracy and macro-F1 (multi-label: exact sets and macro-F1 at
 * 0.5), regression mean squared error, tokens entity-level precision, recall
 * and F1 on bert_ner's spans (aggregation "first"), qa exact match and F1
 * of bert_answer's answers (SQuAD's normalisation; no answer counts as ""),
 * embed top-1 retrieval of each anchor's positive among all positives.
 * *json: the metrics as a JSON object (malloc'd).  0, or -1 with *err
 * (fine_tune_eval.c). */
int ft_evaluate(bert_entry *e, ft_task task, ft_how how, const ft_labels *labels, const ft_rows *rows,
                char **json, bert_interrupt_fn interrupted, void *ctx, char **err);

#endif
