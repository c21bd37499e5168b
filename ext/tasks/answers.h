/*
 * answers.h - the question-answering pipeline's span decoding, as
 * transformers' src/transformers/pipelines/question_answering.py (4.37 and
 * later) does it for each window [CLS] question [SEP] context-part [SEP]:
 * question and special tokens masked, softmax over the window ([CLS] kept
 * in it, then given probability 0), the top_k spans of at most
 * max_answer_len pieces by p(start) x p(end), each widened to whole words
 * (align_to_words), and an answer whose text equals, ignoring case, one
 * already found has its score added to that one.
 *
 * Knows nothing of the model or of SQLite.
 */
#ifndef BERT_ANSWERS_H
#define BERT_ANSWERS_H

#include <stddef.h>
#include <stdint.h>

#define BERT_QA_MAX_ANSWER_LEN 15

/* One context piece of a window. */
typedef struct {
    int64_t start, end;           /* characters (code points) of the context, end exclusive */
    size_t byte_start, byte_end;  /* the same span in bytes */
    int64_t word;                 /* the pre-tokenizer word it belongs to (pieces of one word share it) */
} qa_piece;

typedef struct {
    double score;
    int64_t start, end;           /* characters of the context */
    size_t byte_start, byte_end;
    size_t order;                 /* when it was found: equal scores keep this order */
} qa_answer;

typedef struct {
    qa_answer *items;
    size_t n, cap;
} qa_answers;

void bert_qa_answers_free(qa_answers *a);

/* Adds one window's best spans to out.  start/end: the window's logits [n];
 * its context pieces are positions ctx_first .. ctx_first + n_ctx - 1, given
 * in pieces[n_ctx]; position 0 is [CLS].  0, or -1 when out of memory. */
int bert_qa_window_answers(const float *start, const float *end, int n, int ctx_first, const qa_piece *pieces,
                      int n_ctx, int top_k, int max_answer_len, const char *context, qa_answers *out);

/* The pipeline's last step: best first (stable), at most top_k. */
void bert_qa_answers_finish(qa_answers *a, int top_k);

#endif
