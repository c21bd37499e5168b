/*
 * answers.c - see answers.h.  The steps name the functions of transformers'
 * question_answering.py they follow.
 */
#include "answers.h"

#include "../base/buffer.h"
#include "../base/unicode_text.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void bert_qa_answers_free(qa_answers *a)
{
    if (!a) return;
    free(a->items);
    a->items = NULL;
    a->n = a->cap = 0;
}

/* Python's str.lower() equality of two spans of text. */
static int same_lowercase(const char *a, size_t alen, const char *b, size_t blen)
{
    int32_t la[2], lb[2];
    int na = 0, nb = 0, ia = 0, ib = 0;
    size_t pa = 0, pb = 0;
    for (;;) {
        if (ia == na && pa < alen) {
            int32_t cp;
            pa += bert_utext_decode((const unsigned char *)a + pa, alen - pa, &cp);
            na = bert_utext_lowercase(cp, la);
            ia = 0;
        }
        if (ib == nb && pb < blen) {
            int32_t cp;
            pb += bert_utext_decode((const unsigned char *)b + pb, blen - pb, &cp);
            nb = bert_utext_lowercase(cp, lb);
            ib = 0;
        }
        int a_done = ia == na && pa >= alen, b_done = ib == nb && pb >= blen;
        if (a_done || b_done) return a_done && b_done;
        if (la[ia++] != lb[ib++]) return 0;
    }
}

typedef struct {
    double score;
    int s, e;     /* window positions */
} span;

/* select_starts_ends: the masked softmax of one row of logits. */
static void masked_softmax(const float *logits, int n, int ctx_first, int n_ctx, double *p)
{
    double max = -INFINITY, sum = 0;
    for (int i = 0; i < n; i++) {
        int allowed = i == 0 || (i >= ctx_first && i < ctx_first + n_ctx);
        p[i] = allowed ? (double)logits[i] : -10000.0;
        if (p[i] > max) max = p[i];
    }
    for (int i = 0; i < n; i++) sum += (p[i] = exp(p[i] - max));
    for (int i = 0; i < n; i++) p[i] /= sum;
    p[0] = 0.0;   /* [CLS]: handle_impossible_answer is off */
}

int bert_qa_window_answers(const float *start, const float *end, int n, int ctx_first, const qa_piece *pieces,
                      int n_ctx, int top_k, int max_answer_len, const char *context, qa_answers *out)
{
    if (n_ctx <= 0 || top_k <= 0) return 0;
    double *ps = malloc((size_t)n * sizeof *ps), *pe = malloc((size_t)n * sizeof *pe);
    span *best = malloc((size_t)top_k * sizeof *best);
    int rc = -1, kept = 0;
    if (!ps || !pe || !best) goto done;
    masked_softmax(start, n, ctx_first, n_ctx, ps);
    masked_softmax(end, n, ctx_first, n_ctx, pe);

    /* decode_spans: 0 <= end - start < max_answer_len, top_k by score.  The
     * spans are visited in the order of the flattened matrix, so of equal
     * scores the first stays ahead, as np.argmax keeps it. */
    for (int s = ctx_first; s < ctx_first + n_ctx; s++) {
        int last = s + max_answer_len - 1 < ctx_first + n_ctx - 1 ? s + max_answer_len - 1 : ctx_first + n_ctx - 1;
        for (int e = s; e <= last; e++) {
            double score = ps[s] * pe[e];
            if (!(score > 0)) continue;
            if (kept == top_k && !(score > best[kept - 1].score)) continue;
            int k = kept < top_k ? kept++ : kept - 1;
            while (k > 0 && best[k - 1].score < score) {
                best[k] = best[k - 1];
                k--;
            }
            best[k] = (span){score, s, e};
        }
    }

    for (int k = 0; k < kept; k++) {
        /* get_indices, align_to_words: the words of the start and end pieces,
         * as far as this window holds them, give the characters. */
        int a = best[k].s - ctx_first, b = best[k].e - ctx_first;
        while (a > 0 && pieces[a - 1].word == pieces[a].word) a--;
        while (b + 1 < n_ctx && pieces[b + 1].word == pieces[b].word) b++;
        qa_answer ans = {best[k].score, pieces[a].start, pieces[b].end, pieces[a].byte_start, pieces[b].byte_end,
                         out->n};
        size_t i;
        for (i = 0; i < out->n; i++) {
            const qa_answer *o = &out->items[i];
            if (same_lowercase(context + o->byte_start, o->byte_end - o->byte_start, context + ans.byte_start,
                               ans.byte_end - ans.byte_start))
                break;
        }
        if (i < out->n) {
            out->items[i].score += ans.score;   /* the same answer found again */
            continue;
        }
        qa_answer *items = bert_grow(out->items, &out->cap, out->n + 1, sizeof *items);
        if (!items) goto done;
        out->items = items;
        out->items[out->n++] = ans;
    }
    rc = 0;
done:
    free(ps);
    free(pe);
    free(best);
    return rc;
}

static int by_score(const void *x, const void *y)
{
    const qa_answer *a = x, *b = y;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

void bert_qa_answers_finish(qa_answers *a, int top_k)
{
    if (a->n > 1) qsort(a->items, a->n, sizeof *a->items, by_score);
    if (top_k >= 0 && a->n > (size_t)top_k) a->n = (size_t)top_k;
}

/* ---- SQuAD 2.0's decision (utils_qa.py's postprocess_qa_predictions) ---- */

void bert_qa_v2_free(qa_v2 *v)
{
    if (!v) return;
    free(v->items);
    memset(v, 0, sizeof *v);
}

static int v2_push(qa_v2 *v, qa_v2_candidate c)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 64;
        qa_v2_candidate *p = realloc(v->items, cap * sizeof *p);
        if (!p) return -1;
        v->items = p;
        v->cap = cap;
    }
    v->items[v->n++] = c;
    return 0;
}

/* np.argsort(logits)[-1 : -k - 1 : -1]: the k highest, highest first; of
 * equal logits the later position first, as the reversed ascending order
 * puts them. */
static int top_positions(const float *logits, int n, int k, int *out)
{
    int got = 0;
    for (int i = 0; i < n; i++) {
        int at = got < k ? got++ : k;
        if (at == k && !(logits[i] >= logits[out[k - 1]])) continue;
        if (at == k) at = k - 1;
        while (at > 0 && logits[i] >= logits[out[at - 1]]) {
            out[at] = out[at - 1];
            at--;
        }
        out[at] = i;
    }
    return got;
}

int bert_qa_v2_window(const float *start, const float *end, int n, int ctx_first, const qa_piece *pieces, int n_ctx,
                      qa_v2 *v)
{
    const float null = start[0] + end[0];
    if (v->windows == 0 || null < v->null.score) v->null = (qa_v2_candidate){null, start[0], end[0], 0, 0, 1};
    v->windows++;
    int ss[BERT_QA_V2_N_BEST], es[BERT_QA_V2_N_BEST];
    int ns = top_positions(start, n, BERT_QA_V2_N_BEST, ss), ne = top_positions(end, n, BERT_QA_V2_N_BEST, es);
    for (int a = 0; a < ns; a++)
        for (int b = 0; b < ne; b++) {
            int s = ss[a], e = es[b];
            /* offset_mapping is None outside the context. */
            if (s < ctx_first || s >= ctx_first + n_ctx || e < ctx_first || e >= ctx_first + n_ctx) continue;
            if (e < s || e - s + 1 > BERT_QA_V2_MAX_ANSWER_LEN) continue;
            qa_v2_candidate c = {start[s] + end[e], start[s], end[e], pieces[s - ctx_first].byte_start,
                                 pieces[e - ctx_first].byte_end, 0};
            if (v2_push(v, c) != 0) return -1;
        }
    return 0;
}

static int by_score_desc(const void *pa, const void *pb)
{
    const qa_v2_candidate *a = pa, *b = pb;
    return (a->score < b->score) - (a->score > b->score);
}

/* Python's sorted is stable: equal scores keep the order they were found in. */
static void stable_sort(qa_v2_candidate *c, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        qa_v2_candidate x = c[i];
        size_t j = i;
        while (j > 0 && by_score_desc(&c[j - 1], &x) > 0) {
            c[j] = c[j - 1];
            j--;
        }
        c[j] = x;
    }
}

int bert_qa_v2_decide(qa_v2 *v, double threshold, size_t *byte_start, size_t *byte_end)
{
    *byte_start = *byte_end = 0;
    if (v->windows == 0) return 0;
    if (v2_push(v, v->null) != 0) return -1;
    stable_sort(v->items, v->n);
    size_t kept = v->n < BERT_QA_V2_N_BEST ? v->n : BERT_QA_V2_N_BEST;
    /* The null answer's text is empty too, so whether it was added back
     * after the n_best_size cut changes nothing below. */
    for (size_t i = 0; i < kept; i++) {
        const qa_v2_candidate *c = &v->items[i];
        if (c->null || c->byte_end <= c->byte_start) continue;
        float diff = v->null.score - c->start_logit - c->end_logit;
        if (diff > threshold) return 0;
        *byte_start = c->byte_start;
        *byte_end = c->byte_end;
        return 1;
    }
    /* No span with text: utils_qa puts a fake "empty" answer of logits 0 first. */
    if (v->null.score > threshold) return 0;
    return 2;
}
