/*
 * pipeline_spans.c - bert_ner and bert_answer: the text tokenized with
 * character offsets, cut into overlapping windows when it is longer than
 * one, the windows run through the encoder in packed batches, the head's
 * logits handed to entities.c / answers.c window by window, in text order.
 */
#include "pipeline.h"

#include "../models/entry.h"

#include "../base/error.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Tokens packed into one encoder call (several windows of one text): as
 * pipeline.c's BATCH_TOKENS, larger calls only push activations out of cache. */
#define SPAN_BATCH_TOKENS 512

/* ---- pieces with offsets --------------------------------------------------------- */

/* A text's word pieces and where each came from. */
typedef struct {
    bert_ids ids;
    bert_spans spans;     /* one per id */
} span_pieces;

static void span_pieces_free(span_pieces *p)
{
    bert_ids_free(&p->ids);
    bert_spans_free(&p->spans);
}

/* The text's word pieces (no [CLS]/[SEP]) with their offsets, at most
 * max_pieces + 1 of them, so that a caller can tell a text over the limit
 * without reading all of it: 0, 1 when the text has more than max_pieces,
 * or -1 with *err. */
static int tokenize_pieces(bert_entry *e, const char *text, size_t len, size_t max_pieces, span_pieces *out,
                           char **err)
{
    out->ids.len = 0;
    if (bert_entry_need_tokenizer(e, err) != 0) return -1;
    const bert_special_ids *sp = bert_tokenizer_specials(e->tokenizer);
    if (sp->cls < 0 || sp->sep < 0) {
        *err = bert_errorf("model '%s': its %s has no [CLS]-like or [SEP]-like token, which the windows "
                           "over long texts need", e->name, bert_tokenizer_source(e->tokenizer));
        return -1;
    }
    if (bert_tokenizer_encode_spans(e->tokenizer, text, len, max_pieces + 1, &out->ids, &out->spans,
                                    &e->tokenizing) != 0) {
        *err = bert_errorf("out of memory tokenizing a text of %zu bytes", len);
        return -1;
    }
    if (out->ids.len > max_pieces) return 1;
    /* Bytes as whole characters the way substr counts them, so that an
     * answer or an [UNK]'s word is exactly substr's span even in ill-formed
     * UTF-8. */
    for (size_t i = 0; i < out->spans.len; i++)
        bert_text_char_bytes(text, len, &out->spans.at[i].byte_start, &out->spans.at[i].byte_end);
    return 0;
}

static void too_long(const char *fn, const char *what, size_t max_pieces, char **err)
{
    *err = bert_errorf("%s: the %s has more than %zu word pieces (about %zu KB of English), the most one "
                       "call reads: cut it with bert_chunks(%s, ...) and call %s on each chunk", fn, what,
                       max_pieces, max_pieces * 4 / 1024, what, fn);
}

/* tokenizers' Encoding::truncate with a stride: windows of `width` pieces
 * starting every width - stride pieces, the last one ending at the last
 * piece.  The number of windows, or -1 when the stride leaves no step. */
static int count_windows(size_t n, size_t width, size_t stride)
{
    if (n <= width) return 1;
    if (stride >= width) return -1;
    size_t step = width - stride;
    return (int)(1 + (n - width + step - 1) / step);
}

static void window_at(size_t n, size_t width, size_t stride, int w, size_t *begin, size_t *end)
{
    *begin = n <= width ? 0 : (size_t)w * (width - stride);
    *end = *begin + width < n ? *begin + width : n;
}

/* Called for each window in text order with its hidden states [len x H]. */
typedef int (*window_fn)(bert_entry *e, int window, const float *hidden, int len, void *arg, char **err);

/* Builds window w's ids (and segment ids) into ids/types. */
typedef void (*window_build)(int window, void *arg, bert_ids *ids, bert_ids *types);

/* Runs n_windows windows of at most max_len tokens through the encoder,
 * several per call, and hands each to fn in order. */
static int run_windows(bert_entry *e, int n_windows, int max_len, int with_types, window_build build,
                       window_fn fn, void *arg, bert_interrupt_fn interrupted, void *ctx, char **err)
{
    if (bert_entry_need_model(e, err) != 0) return -1;
    bert_ids ids = {0}, types = {0};
    int per_call = SPAN_BATCH_TOKENS / max_len > 0 ? SPAN_BATCH_TOKENS / max_len : 1;
    int *lengths = malloc((size_t)per_call * sizeof *lengths);
    int rc = -1;
    if (!lengths) { *err = bert_errorf("out of memory"); goto done; }
    const size_t H = (size_t)e->model->cfg.hidden_size;
    for (int first = 0; first < n_windows; first += per_call) {
        int count = n_windows - first < per_call ? n_windows - first : per_call;
        ids.len = types.len = 0;
        for (int k = 0; k < count; k++) {
            size_t before = ids.len;
            build(first + k, arg, &ids, &types);
            if (ids.len == before || (with_types && types.len != ids.len)) {
                *err = bert_errorf("out of memory building a window of %d tokens", max_len);
                goto done;
            }
            lengths[k] = (int)(ids.len - before);
        }
        const float *hidden = bert_entry_encode(e, ids.ids, with_types ? types.ids : NULL, lengths, count, interrupted,
                                           ctx, err);
        if (!hidden) goto done;
        for (int k = 0; k < count; k++) {
            if (fn(e, first + k, hidden, lengths[k], arg, err) != 0) goto done;
            hidden += (size_t)lengths[k] * H;
        }
    }
    rc = 0;
done:
    bert_ids_free(&ids);
    bert_ids_free(&types);
    free(lengths);
    return rc;
}

/* Pushes ids, and reports failure by leaving ids short (run_windows checks). */
static void push_all(bert_ids *ids, const int32_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (bert_ids_push(ids, v[i]) != 0) return;
}

static void push_n(bert_ids *ids, int32_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (bert_ids_push(ids, v) != 0) return;
}

/* ---- token classification -------------------------------------------------------- */

typedef struct {
    const bert_model *m;
    const char *text;
    size_t text_len;
    const span_pieces *p;
    size_t width, stride;
    int32_t cls, sep, unk;
    bert_aggregation agg;
    ner_piece *window_pieces;   /* [width] */
    float *logits;              /* [(width + 2) x labels] */
    ner_entities *out;
} ner_job;

static void ner_build(int w, void *arg, bert_ids *ids, bert_ids *types)
{
    (void)types;
    const ner_job *j = arg;
    size_t a, b;
    window_at(j->p->ids.len, j->width, j->stride, w, &a, &b);
    size_t before = ids->len;
    push_n(ids, j->cls, 1);
    push_all(ids, j->p->ids.ids + a, b - a);
    push_n(ids, j->sep, 1);
    if (ids->len != before + (b - a) + 2) ids->len = before;   /* out of memory: report it */
}

static int ner_window(bert_entry *e, int w, const float *hidden, int len, void *arg, char **err)
{
    ner_job *j = arg;
    size_t a, b;
    window_at(j->p->ids.len, j->width, j->stride, w, &a, &b);
    if (bert_token_logits(j->m, e->scratch, hidden, len, j->logits, err) != 0) return -1;
    for (size_t i = a; i < b; i++) {
        const bert_token_span *o = &j->p->spans.at[i];
        j->window_pieces[i - a] = (ner_piece){
            .token = bert_tokenizer_token(e->tokenizer, j->p->ids.ids[i]),
            .is_unk = j->p->ids.ids[i] == j->unk,
            .start = o->start, .end = o->end, .byte_start = (size_t)o->byte_start, .byte_end = (size_t)o->byte_end,
            .index = (int)(i + 1)};
        if (!j->window_pieces[i - a].token) j->window_pieces[i - a].token = "";
    }
    const int L = j->m->head.num_labels;
    if (bert_ner_window_entities(e->tokenizer, j->window_pieces, (int)(b - a), j->logits + L, L,
                                 (const char *const *)j->m->head.labels, j->agg, j->text, j->text_len, j->out) != 0) {
        *err = bert_errorf("out of memory grouping the entities of a text");
        return -1;
    }
    return 0;
}

int bert_pipeline_ner(bert_entry *e, const char *text, size_t len, ner_entities *out,
                 bert_interrupt_fn interrupted, void *ctx, char **err)
{
    *err = NULL;
    memset(out, 0, sizeof *out);
    if (bert_entry_need_model(e, err) != 0) return -1;
    const bert_model *m = e->model;
    if (!bert_model_has_token_head(m)) {
        *err = bert_errorf("model '%s' has no token-classification head (classifier.* on every token): "
                           "bert_ner needs a checkpoint saved as BertForTokenClassification, "
                           "DistilBertForTokenClassification, RobertaForTokenClassification, "
                           "XLMRobertaForTokenClassification, MPNetForTokenClassification, "
                           "ElectraForTokenClassification, ModernBertForTokenClassification or NewForTokenClassification "
                           "(a NER model such as "
                           "dslim/bert-base-NER); "
                           "this model's task is %s", e->name, bert_pipeline_task_phrase(e));
        return -1;
    }
    span_pieces p = {0};
    ner_job j = {.m = m, .text = text, .text_len = len, .p = &p, .agg = e->aggregation, .out = out};
    out->aggregation = e->aggregation;
    int rc = -1;
    int got = tokenize_pieces(e, text, len, PIPELINE_SPAN_MAX_PIECES, &p, err);
    if (got > 0) too_long("bert_ner", "text", PIPELINE_SPAN_MAX_PIECES, err);
    if (got != 0) goto done;
    if (p.ids.len == 0) { rc = 0; goto done; }
    const bert_special_ids *sp = bert_tokenizer_specials(e->tokenizer);
    j.cls = sp->cls;
    j.sep = sp->sep;
    j.unk = sp->unk;
    j.width = (size_t)e->max_length - 2;
    j.stride = bert_pipeline_ner_stride(e->max_length);
    int n_windows = count_windows(p.ids.len, j.width, j.stride);
    j.window_pieces = malloc(j.width * sizeof *j.window_pieces);
    j.logits = malloc((j.width + 2) * (size_t)m->head.num_labels * sizeof *j.logits);
    if (!j.window_pieces || !j.logits) {
        *err = bert_errorf("out of memory classifying the tokens of a text");
        goto done;
    }
    if (run_windows(e, n_windows, e->max_length, 0, ner_build, ner_window, &j, interrupted, ctx, err) != 0)
        goto done;
    if (n_windows > 1) bert_ner_merge_overlapping(out);
    rc = 0;
done:
    if (rc != 0) bert_ner_entities_free(out);
    span_pieces_free(&p);
    free(j.window_pieces);
    free(j.logits);
    return rc;
}

size_t bert_pipeline_ner_stride(int max_length)
{
    size_t width = max_length > 2 ? (size_t)max_length - 2 : 1;
    return width / 2 < 128 ? width / 2 : 128;
}

/* ---- question answering ------------------------------------------------------------ */

typedef struct {
    const char *context;
    const span_pieces *q, *c;
    size_t width, stride;       /* context pieces per window, overlap */
    int32_t cls, sep;
    int seps;                   /* separators between question and context (bert_family_pair_seps) */
    int top_k;
    qa_piece *window_pieces;    /* [width] */
    float *start, *end;         /* [max_seq_len] */
    qa_answers *out;            /* the pipeline's spans, or */
    qa_v2 *v2;                  /* SQuAD 2.0's decision (bert_pipeline_answer_v2) */
} qa_job;

static void qa_build(int w, void *arg, bert_ids *ids, bert_ids *types)
{
    const qa_job *j = arg;
    size_t a, b;
    window_at(j->c->ids.len, j->width, j->stride, w, &a, &b);
    size_t before = ids->len, nq = j->q->ids.len;
    push_n(ids, j->cls, 1);
    push_all(ids, j->q->ids.ids, nq);
    push_n(ids, j->sep, (size_t)j->seps);
    push_all(ids, j->c->ids.ids + a, b - a);
    push_n(ids, j->sep, 1);
    push_n(types, 0, nq + 1 + (size_t)j->seps);
    push_n(types, 1, b - a + 1);
    if (ids->len != before + nq + (b - a) + 2 + (size_t)j->seps) ids->len = before;
}

static int qa_window(bert_entry *e, int w, const float *hidden, int len, void *arg, char **err)
{
    qa_job *j = arg;
    size_t a, b;
    window_at(j->c->ids.len, j->width, j->stride, w, &a, &b);
    if (bert_qa_logits(e->model, e->scratch, hidden, len, j->start, j->end, err) != 0) return -1;
    for (size_t i = a; i < b; i++) {
        const bert_token_span *o = &j->c->spans.at[i];
        j->window_pieces[i - a] = (qa_piece){o->start, o->end, (size_t)o->byte_start, (size_t)o->byte_end, o->word};
    }
    const int ctx_first = (int)j->q->ids.len + 1 + j->seps;
    if (j->v2 ? bert_qa_v2_window(j->start, j->end, len, ctx_first, j->window_pieces, (int)(b - a), j->v2)
              : bert_qa_window_answers(j->start, j->end, len, ctx_first, j->window_pieces, (int)(b - a), j->top_k,
                                       BERT_QA_MAX_ANSWER_LEN, j->context, j->out) != 0) {
        *err = bert_errorf("out of memory decoding answer spans");
        return -1;
    }
    return 0;
}

static int answer_run(bert_entry *e, const char *question, size_t qlen, const char *context, size_t clen, int top_k,
                      qa_answers *out, qa_v2 *v2, bert_interrupt_fn interrupted, void *ctx, char **err)
{
    *err = NULL;
    if (bert_entry_need_model(e, err) != 0) return -1;
    const bert_model *m = e->model;
    if (!bert_model_has_qa_head(m)) {
        *err = bert_errorf("model '%s' has no question-answering head (qa_outputs.*): bert_answer needs a "
                           "checkpoint saved as BertForQuestionAnswering, DistilBertForQuestionAnswering, "
                           "RobertaForQuestionAnswering, XLMRobertaForQuestionAnswering, "
                           "MPNetForQuestionAnswering, ElectraForQuestionAnswering, "
                           "ModernBertForQuestionAnswering or NewForQuestionAnswering (a SQuAD model such as distilbert-base-cased-distilled-squad "
                           "or deepset/roberta-base-squad2); this model's task "
                           "is %s", e->name, bert_pipeline_task_phrase(e));
        return -1;
    }
    if (top_k < 1) {
        *err = bert_errorf("bert_answer_each: top_k must be at least 1, not %d", top_k);
        return -1;
    }
    span_pieces q = {0}, c = {0};
    qa_job j = {.context = context, .q = &q, .c = &c, .top_k = top_k, .out = out, .v2 = v2};
    int rc = -1;
    const int max_seq_len = e->max_length < 384 ? e->max_length : 384;
    int got = tokenize_pieces(e, question, qlen, (size_t)max_seq_len, &q, err);
    if (got > 0) {
        *err = bert_errorf("bert_answer: the question is longer than a whole window of %d tokens: shorten it",
                           max_seq_len);
        goto done;
    }
    if (got < 0) goto done;
    got = tokenize_pieces(e, context, clen, PIPELINE_SPAN_MAX_PIECES, &c, err);
    if (got > 0) too_long("bert_answer", "context", PIPELINE_SPAN_MAX_PIECES, err);
    if (got != 0) goto done;
    if (q.ids.len == 0 || c.ids.len == 0) {
        *err = bert_errorf("bert_answer: the %s has no words to read: give a non-empty %s",
                           q.ids.len == 0 ? "question" : "context", q.ids.len == 0 ? "question" : "context");
        goto done;
    }
    const bert_special_ids *sp = bert_tokenizer_specials(e->tokenizer);
    j.cls = sp->cls;
    j.sep = sp->sep;
    j.seps = bert_family_pair_seps(e->cfg.family);
    /* preprocess: doc_stride = min(max_seq_len / 2, 128); the context gets
     * what the question and the special tokens leave of the window. */
    j.stride = (size_t)(max_seq_len / 2 < 128 ? max_seq_len / 2 : 128);
    size_t fixed = q.ids.len + 2 + (size_t)j.seps;
    j.width = fixed < (size_t)max_seq_len ? (size_t)max_seq_len - fixed : 0;
    int n_windows = fixed + c.ids.len <= (size_t)max_seq_len ? 1 : count_windows(c.ids.len, j.width, j.stride);
    if (j.width == 0 || n_windows < 0) {
        *err = bert_errorf("bert_answer: the question is too long: its %zu word pieces leave %zu of the %d "
                           "in a window for the context, which must be more than the overlap of %zu between "
                           "windows; shorten the question", q.ids.len, j.width, max_seq_len, j.stride);
        goto done;
    }
    j.window_pieces = malloc((j.width ? j.width : 1) * sizeof *j.window_pieces);
    j.start = malloc((size_t)max_seq_len * sizeof *j.start);
    j.end = malloc((size_t)max_seq_len * sizeof *j.end);
    if (!j.window_pieces || !j.start || !j.end) {
        *err = bert_errorf("out of memory answering a question");
        goto done;
    }
    if (n_windows == 1) j.width = c.ids.len;
    if (run_windows(e, n_windows, max_seq_len, 1, qa_build, qa_window, &j, interrupted, ctx, err) != 0) goto done;
    rc = 0;
done:
    span_pieces_free(&q);
    span_pieces_free(&c);
    free(j.window_pieces);
    free(j.start);
    free(j.end);
    return rc;
}

int bert_pipeline_answer(bert_entry *e, const char *question, size_t qlen, const char *context, size_t clen,
                    int top_k, qa_answers *out, bert_interrupt_fn interrupted, void *ctx, char **err)
{
    memset(out, 0, sizeof *out);
    if (answer_run(e, question, qlen, context, clen, top_k, out, NULL, interrupted, ctx, err) != 0) {
        bert_qa_answers_free(out);
        return -1;
    }
    bert_qa_answers_finish(out, top_k);
    return 0;
}

int bert_pipeline_answer_v2(bert_entry *e, const char *question, size_t qlen, const char *context, size_t clen,
                            size_t *byte_start, size_t *byte_end, bert_interrupt_fn interrupted, void *ctx,
                            char **err)
{
    qa_v2 v2 = {0};
    int rc = answer_run(e, question, qlen, context, clen, 1, NULL, &v2, interrupted, ctx, err);
    if (rc == 0) {
        rc = bert_qa_v2_decide(&v2, 0.0, byte_start, byte_end);
        if (rc < 0) *err = bert_errorf("out of memory deciding an answer");
    }
    bert_qa_v2_free(&v2);
    return rc;
}
