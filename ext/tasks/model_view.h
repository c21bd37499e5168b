/*
 * model_view.h - the model's own view of a text: the attention
 * probabilities of its layers' heads (bert_attention) and the hidden states
 * of its layers (bert_hidden_states), as transformers' output_attentions and
 * output_hidden_states give them.  Knows nothing of SQLite; sql/tables.c
 * formats the rows.
 */
#ifndef BERT_MODEL_VIEW_H
#define BERT_MODEL_VIEW_H

#include "../base/interrupt.h"
#include "../models/registry.h"
#include "../tokenizer/tokenizer.h"

#include <stddef.h>

typedef enum { BERT_VIEW_ATTENTION, BERT_VIEW_HIDDEN_STATES } bert_view_kind;

/* "bert_attention" or "bert_hidden_states", for errors. */
const char *bert_view_function(bert_view_kind kind);

/* A call's options_json: the layers and heads asked for (NULL: all) and
 * the model (NULL: the default). */
typedef struct {
    bert_view_kind kind;
    long long *layers, *heads;
    int n_layers, n_heads;
    char *model;
} bert_view_options;

/* Parses options_json (NULL for none): "layers" (attention: 0 to
 * num_layers - 1; hidden states: 0, the embeddings, to num_layers), "heads"
 * (attention only) and "model".  Whether the numbers are in range is
 * checked on the model.  0, or -1 with *err (NULL: out of memory). */
int bert_view_options_parse(bert_view_kind kind, const char *json, size_t len, bert_view_options *out,
                            char **err);
void bert_view_options_free(bert_view_options *o);

/* What a call computed, for its rows. */
typedef struct {
    bert_view_kind kind;
    bert_ids ids;            /* the tokens, [CLS] and [SEP] (<s>, </s>) included */
    bert_spans spans;        /* their characters in the text; word -1 for the special tokens */
    char *names;             /* their texts, token i at names + name_at[i] */
    size_t *name_at;
    int *layers, n_layers;   /* the layers shown, ascending */
    int *heads, n_heads;     /* attention: the heads shown, ascending */
    int hidden;              /* hidden states: floats a vector */
    /* attention: [n_layers x n_heads x tokens x tokens], rows = from;
     * hidden states: [n_layers x tokens x hidden]. */
    float *values;
} bert_model_view;

/* Tokenizes text as bert_tokenize_offsets does (no prompt: the text as
 * given) and runs the encoder, keeping what the options ask for.  0, or -1
 * with *err (NULL: out of memory). */
int bert_model_view_compute(bert_entry *e, const char *text, size_t len, const bert_view_options *o,
                            bert_model_view *out, bert_interrupt_fn interrupted, void *ctx, char **err);
void bert_model_view_free(bert_model_view *v);

#endif
