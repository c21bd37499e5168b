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

/*
 * SQuAD 2.0's decision, as transformers'
 * examples/pytorch/question-answering/utils_qa.py (commit
 * 31f57e9efd761882d1296f7f6ade11ee87a3900e) postprocess_qa_predictions does
 * it with version_2_with_negative: in each window the null score is
 * start[0] + end[0] ([CLS]), and the candidates are the spans among the
 * n_best_size highest start and end logits that lie on context pieces, end
 * not before start, at most max_answer_length pieces, scored by the sum of
 * their two logits; over every window of one example the lowest null score
 * is kept; the candidates and the null answer sorted, the best n_best_size
 * kept (the null answer added back), the first whose text is not empty is
 * the best span, and the example has no answer when null score minus that
 * span's logits exceeds null_score_diff_threshold.  Logits, not
 * probabilities, and spans are not widened to whole words.
 */
#define BERT_QA_V2_N_BEST 20
#define BERT_QA_V2_MAX_ANSWER_LEN 30

/* In float32, as numpy adds and subtracts the float32 logits there. */
typedef struct {
    float score;                  /* start logit + end logit */
    float start_logit, end_logit;
    size_t byte_start, byte_end;  /* the span's text in the context */
    int null;                     /* the null answer ([CLS]) */
} qa_v2_candidate;

typedef struct {
    qa_v2_candidate *items;
    size_t n, cap;
    qa_v2_candidate null;         /* the window's null answer of the lowest score so far */
    int windows;
} qa_v2;

void bert_qa_v2_free(qa_v2 *v);

/* Adds one window (laid out as bert_qa_window_answers takes it).  0, or -1
 * when out of memory. */
int bert_qa_v2_window(const float *start, const float *end, int n, int ctx_first, const qa_piece *pieces, int n_ctx,
                      qa_v2 *v);

/* The example's prediction after every window: 1 with the answer's bytes
 * [*byte_start, *byte_end) of the context; 0 for no answer (the empty
 * string); 2 when no span has text and the null answer loses to the
 * placeholder utils_qa.py then puts first (the text "empty", logits 0);
 * -1 when out of memory.  threshold: null_score_diff_threshold (0). */
int bert_qa_v2_decide(qa_v2 *v, double threshold, size_t *byte_start, size_t *byte_end);

#endif
