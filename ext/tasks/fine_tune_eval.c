/*
 * fine_tune_eval.c - bert_train's eval column (ft_evaluate in fine_tune.h):
 * the evaluation rows answered by the same pipelines the SQL functions run
 * (bert_classify, bert_ner, bert_answer, bert_embed), so that the metrics
 * are those a user computes from the saved model, and scored as the
 * example scripts score them (accuracy and macro-F1; seqeval's entity F1 on
 * spans; SQuAD's exact match and F1; top-1 retrieval).  Question answering
 * with unanswerable rows is SQuAD 2.0's: run_qa.py's decision to answer or
 * not (answers.h), which no pipeline function makes, and the squad_v2 metric.
 */
#include "fine_tune.h"

#include "pipeline.h"
#include "../models/entry.h"
#include "../base/buffer.h"
#include "../base/error.h"
#include "../base/json.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const ft_value *cell(const ft_rows *r, size_t row, int col)
{
    return &r->values[row * (size_t)r->n_cols + (size_t)col];
}

static int label_of(const ft_labels *l, const ft_value *v)
{
    char buf[32];
    const char *name = v->type == FT_INTEGER ? (snprintf(buf, sizeof buf, "%lld", v->integer), buf) : v->text;
    for (int i = 0; name && i < l->n; i++)
        if (strcmp(l->names[i], name) == 0) return i;
    return -1;
}

/* Per-label counts for F1. */
typedef struct {
    double *tp, *fp, *fn;
    int n;
} f1_counts;

/* Macro-F1 over the labels that occur in the gold or the predictions (sklearn's labels=None). */
static double macro_f1(const f1_counts *c)
{
    double sum = 0;
    int used = 0;
    for (int i = 0; i < c->n; i++) {
        if (c->tp[i] + c->fp[i] + c->fn[i] == 0) continue;
        used++;
        double denom = 2 * c->tp[i] + c->fp[i] + c->fn[i];
        sum += denom > 0 ? 2 * c->tp[i] / denom : 0;
    }
    return used ? sum / used : 0;
}

static char *metrics_json(const char *const *names, const double *values, int n, char **err)
{
    bert_json_sql *js = bert_json_sql_open(err);
    if (!js) return NULL;
    char *out = NULL;
    if (bert_json_sql_eval(js, "SELECT '{}'", NULL, 0, &out, err) != 0) goto done;
    for (int i = 0; i < n; i++) {
        char num[40];
        snprintf(num, sizeof num, "%.17g", values[i]);
        const char *p[3] = {out, names[i], num};
        char *longer = NULL;
        if (bert_json_sql_eval(js, "SELECT json_set(?1, '$.' || ?2, CAST(?3 AS REAL))", p, 3, &longer, err) != 0) {
            free(out);
            out = NULL;
            goto done;
        }
        free(out);
        out = longer;
    }
done:
    bert_json_sql_close(js);
    return out;
}

static int eval_classify(bert_entry *e, ft_how how, const ft_labels *labels, const ft_rows *rows,
                         char **json, bert_interrupt_fn interrupted, void *ctx, char **err)
{
    const int L = labels->n, pair = rows->n_cols == 3;
    f1_counts c = {calloc((size_t)L, sizeof(double)), calloc((size_t)L, sizeof(double)),
                   calloc((size_t)L, sizeof(double)), L};
    double correct = 0, sq = 0;
    int rc = -1;
    if (!c.tp || !c.fp || !c.fn) {
        *err = bert_errorf("out of memory evaluating");
        goto done;
    }
    for (size_t r = 0; r < rows->n_rows; r++) {
        const ft_value *t = cell(rows, r, 0), *p = pair ? cell(rows, r, 1) : NULL, *gold = cell(rows, r, rows->n_cols - 1);
        classify_result res;
        if (bert_pipeline_classify(e, t->text, t->len, p ? p->text : NULL, p ? p->len : 0, &res, interrupted, ctx,
                                   err) != 0)
            goto done;
        if (how == FT_HOW_REGRESSION) {
            double want = gold->type == FT_REAL ? gold->real : (double)gold->integer;
            sq += (res.scores[0] - want) * (res.scores[0] - want);
        } else if (how == FT_HOW_CLASSIFY) {
            int want = label_of(labels, gold), got = res.order[0];
            correct += want == got;
            if (want == got) c.tp[got]++;
            else {
                c.fp[got]++;
                if (want >= 0) c.fn[want]++;
            }
        } else {
            /* Multi-label: the labels scored over 0.5 (sigmoid) against the row's array. */
            json_doc *d = NULL;
            char *perr = NULL;
            int *want = calloc((size_t)L, sizeof *want);
            if (!want || bert_json_parse(gold->text, gold->len, &d, &perr) != 0) {
                free(want);
                free(perr);
                bert_classify_result_free(&res);
                *err = bert_errorf("out of memory evaluating");
                goto done;
            }
            for (int k = d->nodes[0].first_child; k >= 0; k = d->nodes[k].next_sibling)
                for (int i = 0; i < L; i++)
                    if (d->nodes[k].text && strcmp(d->nodes[k].text, labels->names[i]) == 0) want[i] = 1;
            int all = 1;
            for (int i = 0; i < L; i++) {
                int got = res.scores[i] > 0.5;
                all = all && got == want[i];
                c.tp[i] += got && want[i];
                c.fp[i] += got && !want[i];
                c.fn[i] += !got && want[i];
            }
            correct += all;
            free(want);
            bert_json_free(d);
        }
        bert_classify_result_free(&res);
    }
    const double n = (double)rows->n_rows;
    if (how == FT_HOW_REGRESSION) {
        const char *names[] = {"mse"};
        double v[] = {sq / n};
        *json = metrics_json(names, v, 1, err);
    } else {
        const char *names[] = {"accuracy", "f1"};
        double v[] = {correct / n, macro_f1(&c)};
        *json = metrics_json(names, v, 2, err);
    }
    rc = *json ? 0 : -1;
done:
    free(c.tp);
    free(c.fp);
    free(c.fn);
    return rc;
}

static int eval_tokens(bert_entry *e, const ft_rows *rows, char **json, bert_interrupt_fn interrupted, void *ctx,
                       char **err)
{
    double tp = 0, n_pred = 0, n_gold = 0;
    for (size_t r = 0; r < rows->n_rows; r++) {
        const ft_value *t = cell(rows, r, 0), *g = cell(rows, r, 1);
        ner_entities found;
        if (bert_pipeline_ner(e, t->text, t->len, &found, interrupted, ctx, err) != 0) return -1;
        json_doc *d = NULL;
        char *perr = NULL;
        if (bert_json_parse(g->text, g->len, &d, &perr) != 0) {
            free(perr);
            bert_ner_entities_free(&found);
            *err = bert_errorf("out of memory evaluating");
            return -1;
        }
        n_pred += (double)found.n;
        for (int k = d->nodes[0].first_child; k >= 0; k = d->nodes[k].next_sibling) {
            /* [start, end, label] (checked when the rows were prepared), or bert_ner's objects. */
            int a, b, l;
            if (d->nodes[k].type == JSON_OBJECT) {
                a = bert_json_member(d, k, "start");
                b = bert_json_member(d, k, "end");
                l = bert_json_member(d, k, "entity_group");
                if (l < 0) l = bert_json_member(d, k, "entity");
            } else {
                a = d->nodes[k].first_child;
                b = d->nodes[a].next_sibling;
                l = d->nodes[b].next_sibling;
            }
            n_gold++;
            for (size_t i = 0; i < found.n; i++)
                if (found.items[i].start == d->nodes[a].integer && found.items[i].end == d->nodes[b].integer &&
                    strcmp(found.items[i].entity, d->nodes[l].text) == 0) {
                    tp++;
                    break;
                }
        }
        bert_json_free(d);
        bert_ner_entities_free(&found);
    }
    double p = n_pred ? tp / n_pred : 0, rcl = n_gold ? tp / n_gold : 0;
    const char *names[] = {"precision", "recall", "f1"};
    double v[] = {p, rcl, p + rcl > 0 ? 2 * p * rcl / (p + rcl) : 0};
    *json = metrics_json(names, v, 3, err);
    return *json ? 0 : -1;
}

/* SQuAD's normalize_answer: lower case, no punctuation, no articles, single spaces;
 * into a list of words (NUL-separated in buf), their count returned. */
static int squad_words(const char *s, size_t len, char *buf, const char **words, int max_words)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 128 && ispunct(ch)) continue;
        buf[n++] = ch < 128 ? (char)tolower(ch) : (char)ch;
    }
    buf[n] = 0;
    int count = 0;
    for (char *p = buf; *p && count < max_words;) {
        while (*p && isspace((unsigned char)*p)) *p++ = 0;
        if (!*p) break;
        char *w = p;
        while (*p && !isspace((unsigned char)*p)) p++;
        if (*p) *p++ = 0;
        if (strcmp(w, "a") != 0 && strcmp(w, "an") != 0 && strcmp(w, "the") != 0) words[count++] = w;
    }
    return count;
}

#define SQUAD_MAX_WORDS 512

static void squad_scores(const char *pred, size_t plen, const char *gold, size_t glen, double *em, double *f1)
{
    char *pb = malloc(plen + 1), *gb = malloc(glen + 1);
    const char **pw = malloc(SQUAD_MAX_WORDS * sizeof *pw), **gw = malloc(SQUAD_MAX_WORDS * sizeof *gw);
    char *used = calloc(SQUAD_MAX_WORDS, 1);
    *em = *f1 = 0;
    if (pb && gb && pw && gw && used) {
        int np = squad_words(pred, plen, pb, pw, SQUAD_MAX_WORDS), ng = squad_words(gold, glen, gb, gw, SQUAD_MAX_WORDS);
        int same = np == ng;
        for (int i = 0; same && i < np; i++) same = strcmp(pw[i], gw[i]) == 0;
        *em = same;
        if (np == 0 || ng == 0) {
            *f1 = np == ng;
        } else {
            int common = 0;
            for (int i = 0; i < np; i++)
                for (int j = 0; j < ng; j++)
                    if (!used[j] && strcmp(pw[i], gw[j]) == 0) {
                        used[j] = 1;
                        common++;
                        break;
                    }
            double p = (double)common / np, r = (double)common / ng;
            *f1 = common ? 2 * p * r / (p + r) : 0;
        }
    }
    free(pb);
    free(gb);
    free(pw);
    free(gw);
    free(used);
}

static int eval_qa(bert_entry *e, const ft_rows *rows, char **json, bert_interrupt_fn interrupted, void *ctx,
                   char **err)
{
    double em_sum = 0, f1_sum = 0;
    /* Unanswerable rows make it SQuAD 2.0: run_qa.py's
     * version_2_with_negative, where the model may answer nothing, and the
     * squad_v2 metric, where an empty prediction is right on such a row. */
    int v2 = 0;
    for (size_t r = 0; r < rows->n_rows; r++) v2 |= cell(rows, r, 3)->type != FT_TEXT;
    for (size_t r = 0; r < rows->n_rows; r++) {
        const ft_value *q = cell(rows, r, 0), *c = cell(rows, r, 1), *g = cell(rows, r, 3);
        const char *pred = "";
        size_t plen = 0;
        if (v2) {
            size_t b0 = 0, b1 = 0;
            int got = bert_pipeline_answer_v2(e, q->text, q->len, c->text, c->len, &b0, &b1, interrupted, ctx, err);
            if (got < 0) return -1;
            if (got == 1) {
                pred = c->text + b0;
                plen = b1 - b0;
            } else if (got == 2) {
                pred = "empty";
                plen = 5;
            }
        } else {
            qa_answers found;
            if (bert_pipeline_answer(e, q->text, q->len, c->text, c->len, 1, &found, interrupted, ctx, err) != 0)
                return -1;
            if (found.n > 0) {
                pred = c->text + found.items[0].byte_start;
                plen = found.items[0].byte_end - found.items[0].byte_start;
            }
            bert_qa_answers_free(&found);
        }
        double em, f1;
        squad_scores(pred, plen, g->type == FT_TEXT ? g->text : "", g->type == FT_TEXT ? g->len : 0, &em, &f1);
        em_sum += em;
        f1_sum += f1;
    }
    const char *names[] = {"exact_match", "f1"};
    double v[] = {100 * em_sum / (double)rows->n_rows, 100 * f1_sum / (double)rows->n_rows};
    *json = metrics_json(names, v, 2, err);
    return *json ? 0 : -1;
}

static int eval_embed(bert_entry *e, const ft_rows *rows, char **json, bert_interrupt_fn interrupted, void *ctx,
                      char **err)
{
    const size_t n = rows->n_rows, H = (size_t)e->cfg.hidden_size;
    const char **texts = calloc(2 * n + 1, sizeof *texts);
    size_t *lens = calloc(2 * n + 1, sizeof *lens);
    float *v = malloc(2 * n * H * sizeof *v);
    int rc = -1;
    if (!texts || !lens || !v) {
        *err = bert_errorf("out of memory evaluating");
        goto done;
    }
    for (size_t r = 0; r < n; r++)
        for (int k = 0; k < 2; k++) {
            texts[k * n + r] = cell(rows, r, k)->text;
            lens[k * n + r] = cell(rows, r, k)->len;
        }
    if (bert_pipeline_embed_batch(e, texts, lens, (int)(2 * n), v, interrupted, ctx, err) != 0) goto done;
    for (size_t i = 0; i < 2 * n; i++) {
        double norm = 0;
        for (size_t k = 0; k < H; k++) norm += (double)v[i * H + k] * v[i * H + k];
        norm = norm > 0 ? 1 / sqrt(norm) : 0;
        for (size_t k = 0; k < H; k++) v[i * H + k] = (float)(v[i * H + k] * norm);
    }
    double hits = 0;
    for (size_t a = 0; a < n; a++) {
        size_t best = 0;
        double best_sim = -2;
        for (size_t p = 0; p < n; p++) {
            double sim = 0;
            for (size_t k = 0; k < H; k++) sim += (double)v[a * H + k] * v[(n + p) * H + k];
            if (sim > best_sim) {
                best_sim = sim;
                best = p;
            }
        }
        hits += best == a;
    }
    const char *names[] = {"top1"};
    double m[] = {hits / (double)n};
    *json = metrics_json(names, m, 1, err);
    rc = *json ? 0 : -1;
done:
    free(texts);
    free(lens);
    free(v);
    return rc;
}

int ft_evaluate(bert_entry *e, ft_task task, ft_how how, const ft_labels *labels, const ft_rows *rows,
                char **json, bert_interrupt_fn interrupted, void *ctx, char **err)
{
    *json = NULL;
    *err = NULL;
    int rc;
    switch (task) {
    case FT_TASK_TOKENS: rc = eval_tokens(e, rows, json, interrupted, ctx, err); break;
    case FT_TASK_QA: rc = eval_qa(e, rows, json, interrupted, ctx, err); break;
    case FT_TASK_EMBED: rc = eval_embed(e, rows, json, interrupted, ctx, err); break;
    default: rc = eval_classify(e, how, labels, rows, json, interrupted, ctx, err); break;
    }
    if (rc != 0 && !*err) *err = bert_errorf("out of memory evaluating");
    return rc;
}
