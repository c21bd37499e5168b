/*
 * trainer.h - fine-tuning: the encoder and one task head in float32,
 * trained by backpropagation with AdamW, as transformers' Trainer does it.
 *
 * A trainer copies every weight of a loaded model into float32 parameters
 * of its own (the model may then be freed), keeps their gradients and
 * AdamW's two moments, and runs batches padded to their longest sequence,
 * as transformers' data collators pad them: the attention mask hides the
 * padding from every query, and the padded positions' outputs are computed
 * (the question-answering loss runs over them, as in PyTorch).
 *
 * One optimizer step is one or more bert_trainer_accumulate() calls
 * (gradient accumulation) followed by bert_trainer_step().  The trainer is
 * one thread's; it runs its products on `threads` threads.
 */
#ifndef BERT_TRAINER_H
#define BERT_TRAINER_H

#include "../base/interrupt.h"
#include "model.h"

#include <stdint.h>

typedef enum {
    BERT_TRAIN_CLASSIFY,     /* a class per sequence (or pair): softmax, cross-entropy */
    BERT_TRAIN_MULTI_LABEL,  /* a 0/1 target per label: sigmoid, binary cross-entropy */
    BERT_TRAIN_REGRESSION,   /* one real target per sequence: one output, mean squared error */
    BERT_TRAIN_TOKENS,       /* a class per token, -100 ignored: cross-entropy over labelled tokens */
    BERT_TRAIN_QA,           /* answer start and end positions: (CE(start) + CE(end)) / 2 */
    BERT_TRAIN_EMBED         /* sentence-transformers' MultipleNegativesRankingLoss on pooled outputs */
} bert_train_task;

/* The label every ignored token carries (PyTorch's CrossEntropyLoss ignore_index). */
#define BERT_TRAIN_IGNORE (-100)

typedef struct {
    bert_train_task task;
    int num_labels;          /* CLASSIFY, MULTI_LABEL, TOKENS: the head's rows; REGRESSION 1; else unused */
    float learning_rate;     /* the peak rate (Trainer: 5e-5) */
    float weight_decay;      /* AdamW's decoupled decay, never on biases and LayerNorm weights (0) */
    float beta1, beta2, epsilon; /* 0.9, 0.999, 1e-8 */
    float max_grad_norm;     /* the global gradient norm is clipped to this before each step; <= 0: never (1.0) */
    long total_steps;        /* optimizer steps of the whole run, for the schedule */
    long warmup_steps;       /* linear warmup from 0 over these, then linear decay to 0 at total_steps */
    float dropout;           /* < 0: config.json's (hidden and attention dropout, the heads'); 0: none (-1) */
    int freeze_encoder;      /* train the head alone (0) */
    uint64_t seed;           /* a new head's initialization and the dropout masks, which are a function
                              * of (seed, optimizer step, micro-batch within the step) (42) */
    bert_pooling pooling;    /* EMBED: how token states become the sentence's (MEAN) */
    float embed_scale;       /* EMBED: cosine similarities are multiplied by this (20) */
    int threads;             /* threads a product; 0: bert_threads_default() */
} bert_train_settings;

/* The defaults above. */
void bert_train_settings_default(bert_train_settings *s);

/*
 * One batch of n sequences padded to max_len (the longest of them).
 * EMBED: the sequences are columns of one table of n / columns rows,
 * column after column: every anchor, then every positive, then (columns 3)
 * every hard negative; the loss of anchor i is cross-entropy over its scaled
 * cosine to every positive and negative of the batch, its own positive the target.
 */
typedef struct {
    int n;                   /* sequences */
    int max_len;             /* padded length */
    const int32_t *ids;      /* [n x max_len], padded with the model's pad id */
    const int32_t *type_ids; /* [n x max_len], or NULL for segment 0 */
    const int *lengths;      /* [n]: the real tokens, which the attention mask keeps */
    const int *labels;       /* CLASSIFY [n]; TOKENS [n x max_len] (BERT_TRAIN_IGNORE where none);
                              * QA [n x 2]: start and end positions (0, 0 for no answer) */
    const float *targets;    /* MULTI_LABEL [n x num_labels] of 0 and 1; REGRESSION [n] */
    int columns;             /* EMBED: 2 (anchor, positive) or 3 (anchor, positive, negative) */
} bert_train_batch;

typedef struct bert_trainer bert_trainer;

/*
 * A trainer for `task` starting from `base`'s weights, which must be
 * float32 (loaded at precision float32; float16 and bfloat16 files are
 * widened at load) and of a family the trainer knows (BERT, DistilBERT,
 * RoBERTa, XLM-RoBERTa, MPNet).  A head of the task that `base` holds with
 * s->num_labels rows is continued; otherwise the head is new: weights
 * normal with config.json's initializer_range (bert_config), biases zero,
 * drawn from s->seed, as transformers' _init_weights does.  The padding
 * token's embedding row (config.json's pad_token_id) is never trained.  BERT's classifier
 * needs the pooler: a base without one gets a new pooler the same way.
 * NULL with *err (malloc'd) naming the problem.
 */
bert_trainer *bert_trainer_new(const bert_model *base, const bert_train_settings *s, char **err);
void bert_trainer_free(bert_trainer *t);

/*
 * Forward and backward over one batch in training mode (dropout as set),
 * adding scale x d(loss)/d(parameter) to the gradients (scale: 1 /
 * gradient_accumulation_steps).  *loss is the batch's loss, averaged as
 * PyTorch averages it (over the sequences; over the labelled tokens for
 * TOKENS).  0; 1 when `interrupted` said stop (gradients then partly
 * added: the caller abandons the step); -1 with *err: a loss that is not
 * finite, a batch that does not fit the model (ids, lengths, labels out of
 * range), memory.
 */
int bert_trainer_accumulate(bert_trainer *t, const bert_train_batch *b, float scale, double *loss,
                            bert_interrupt_fn interrupted, void *ctx, char **err);

/*
 * One optimizer step: the gradients' global norm clipped to max_grad_norm,
 * AdamW at the schedule's rate for this step (Trainer's linear schedule:
 * step 0 of a warmup at rate 0), the gradients zeroed.  *rate is the rate
 * used, *grad_norm the norm before clipping (either may be NULL).
 * 0, or -1 with *err when the gradients are not finite.
 */
int bert_trainer_step(bert_trainer *t, double *rate, double *grad_norm, char **err);

/* Optimizer steps taken (or restored by bert_trainer_set_state). */
long bert_trainer_steps(const bert_trainer *t);

/*
 * The trained weights as a float32 bert_model (precision FLOAT32, nothing
 * packed) whose tensors point into the trainer: valid until the next
 * accumulate or step, or the trainer's end.  Its head is the task's
 * (cls_w ... for CLASSIFY, MULTI_LABEL and REGRESSION, tok_w for TOKENS,
 * qa_w for QA, none for EMBED); head.labels are NULL (the caller names them
 * when it saves).  The encoder runs on it (bert_encode) for evaluation, and
 * the saver writes it (models/model_save.h).
 */
const bert_model *bert_trainer_model(const bert_trainer *t);

/*
 * AdamW's first (which 0) or second (which 1) moments, shaped as the model's
 * tensors and bound at the same places, so the saver writes them as a
 * checkpoint of their own and the loader reads them back.
 */
const bert_model *bert_trainer_moments(const bert_trainer *t, int which);

/*
 * Restores a run saved along the way: the weights (`weights`, as saved from
 * bert_trainer_model), both moments, and the steps taken.  Every tensor the
 * trainer holds must be there with its shape.  0, or -1 with *err.
 */
int bert_trainer_set_state(bert_trainer *t, const bert_model *weights, const bert_model *first,
                           const bert_model *second, long steps, char **err);

/* For the tests: the gradient of every parameter, in the order and with the
 * shapes of bert_trainer_model's tensors, as a model bound alike. */
const bert_model *bert_trainer_gradients(const bert_trainer *t);

#endif
