/*
 * entities.h - the token-classification pipeline's post-processing, as
 * transformers' src/transformers/pipelines/token_classification.py does it:
 * softmax per token, the word pieces' words, aggregation into words
 * ("first", "average", "max"), B-/I- grouping ("simple" and the word
 * strategies), labels "O" left out, and, for a text read in several
 * overlapping windows, the merging of entities found twice.
 *
 * Knows nothing of the model or of SQLite: it takes each window's pieces
 * and logits.
 */
#ifndef BERT_ENTITIES_H
#define BERT_ENTITIES_H

#include <stddef.h>
#include <stdint.h>

#include "../models/registry.h"   /* bert_aggregation, a model's option */
#include "../tokenizer/tokenizer.h"


/* One word piece of a window (special tokens left out), in text order. */
typedef struct {
    const char *token;          /* the vocabulary entry, borrowed */
    int is_unk;                 /* [UNK]: its word is the original text */
    int64_t start, end;         /* characters (code points) of the text, end exclusive */
    size_t byte_start, byte_end; /* the same span in bytes */
    int index;                  /* place in the whole text's encoding, [CLS] = 0 */
} ner_piece;

typedef struct {
    char *entity;         /* the label, or for groups its name (after "B-"/"I-"); owned */
    double score;
    char *word;           /* owned */
    int64_t start, end;   /* characters of the text */
    int index;            /* the piece's index for "none", -1 for groups */
} ner_entity;

typedef struct {
    ner_entity *items;
    size_t n, cap;
    bert_aggregation aggregation;   /* how they were formed: "none" lists pieces */
} ner_entities;

void bert_ner_entities_free(ner_entities *e);

/* Appends the entities of one window to out: pieces[n], logits[n x
 * n_labels] (row i is piece i), the model's labels by id, the text (of
 * text_len bytes) the byte offsets point into.  The tokenizer decides how
 * pieces form words and turns pieces and words into text (its decoder, as
 * convert_tokens_to_string).  0, or -1 when out of memory (out keeps what
 * it had). */
int bert_ner_window_entities(const bert_tokenizer *tok, const ner_piece *pieces, int n, const float *logits,
                             int n_labels, const char *const *labels, bert_aggregation agg, const char *text,
                             size_t text_len, ner_entities *out);

/* aggregate_overlapping_entities: sorted by start (stable); of entities that
 * overlap the one kept before them, the longer stays, at equal length the
 * one with the higher score.  For a text read in several windows. */
void bert_ner_merge_overlapping(ner_entities *e);

#endif
