/*
 * entities.c - see entities.h.  Every step names the function of
 * transformers' token_classification.py it follows.
 */
#include "entities.h"

#include "../base/buffer.h"
#include "../tokenizer/tokenizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void bert_ner_entities_free(ner_entities *e)
{
    if (!e) return;
    for (size_t i = 0; i < e->n; i++) {
        free(e->items[i].word);
        free(e->items[i].entity);
    }
    free(e->items);
    e->items = NULL;
    e->n = e->cap = 0;
}

/* ---- gather_pre_entities, aggregate, aggregate_word(s) ---------------------- */

typedef struct {
    char *word;           /* the token, or the original text for [UNK]; owned */
    const double *scores; /* the piece's softmax, n_labels */
    int64_t start, end;
    int index;
    int is_subword;
} pre_entity;

/* One labelled token or word before grouping. */
typedef struct {
    int label;
    double score;
    char *word;           /* owned */
    int64_t start, end;
    int index;
} labelled;

static size_t codepoints(const char *s)
{
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static int argmax(const double *v, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++) if (v[i] > v[best]) best = i;   /* numpy: the first of equals */
    return best;
}

static double max_of(const double *v, int n) { return v[argmax(v, n)]; }

/* aggregate_word: one word of pieces p[0..n). */
static int aggregate_word(const bert_tokenizer *tok, const pre_entity *p, int n, int n_labels,
                          bert_aggregation agg, double *avg, const char **words, labelled *out)
{
    const double *scores = p[0].scores;           /* "first" */
    if (agg == BERT_AGG_MAX) {
        int best = 0;
        for (int i = 1; i < n; i++)
            if (max_of(p[i].scores, n_labels) > max_of(p[best].scores, n_labels)) best = i;
        scores = p[best].scores;
    } else if (agg == BERT_AGG_AVERAGE) {
        for (int l = 0; l < n_labels; l++) {
            double sum = 0;
            for (int i = 0; i < n; i++) sum += p[i].scores[l];
            avg[l] = sum / n;
        }
        scores = avg;
    }
    out->label = argmax(scores, n_labels);
    out->score = scores[out->label];
    for (int i = 0; i < n; i++) words[i] = p[i].word;
    out->word = bert_tokenizer_tokens_to_string(tok, words, (size_t)n);
    out->start = p[0].start;
    out->end = p[n - 1].end;
    out->index = -1;
    return out->word ? 0 : -1;
}

/* ---- group_entities ------------------------------------------------------------ */

/* get_tag: "B-x" and "I-x" give their prefix and x; any other label is an
 * I- continuation of itself. */
static const char *get_tag(const char *label, int *is_b)
{
    *is_b = strncmp(label, "B-", 2) == 0;
    if (*is_b || strncmp(label, "I-", 2) == 0) return label + 2;
    return label;
}

/* group_sub_entities' entity_group: the label after its first "-". */
static const char *group_name(const char *label)
{
    const char *dash = strchr(label, '-');
    return dash ? dash + 1 : label;
}

static int push(ner_entities *out, const ner_entity *e)
{
    ner_entity *items = bert_grow(out->items, &out->cap, out->n + 1, sizeof *items);
    if (!items) return -1;
    out->items = items;
    out->items[out->n++] = *e;
    return 0;
}

/* Emits the group g[0..n) unless it is "O". */
static int emit_group(const bert_tokenizer *tok, const labelled *g, int n, const char *const *labels,
                      const char **words, ner_entities *out)
{
    const char *name = group_name(labels[g[0].label]);
    if (strcmp(name, "O") == 0) return 0;   /* ignore_labels ["O"] */
    double sum = 0;
    for (int i = 0; i < n; i++) sum += g[i].score;
    ner_entity e = {.entity = bert_strdup(name), .score = sum / n, .start = g[0].start, .end = g[n - 1].end,
                    .index = -1};
    for (int i = 0; i < n; i++) words[i] = g[i].word;
    e.word = bert_tokenizer_tokens_to_string(tok, words, (size_t)n);
    if (!e.word || !e.entity || push(out, &e) != 0) {
        free(e.word);
        free(e.entity);
        return -1;
    }
    return 0;
}

static int group_entities(const bert_tokenizer *tok, const labelled *items, int n, const char *const *labels,
                          const char **words, ner_entities *out)
{
    int first = 0;
    for (int i = 1; i <= n; i++) {
        if (i < n) {
            int is_b, last_b;
            const char *tag = get_tag(labels[items[i].label], &is_b);
            const char *last = get_tag(labels[items[i - 1].label], &last_b);
            if (strcmp(tag, last) == 0 && !is_b) continue;
        }
        if (emit_group(tok, items + first, i - first, labels, words, out) != 0) return -1;
        first = i;
    }
    return 0;
}

/* ---- one window ------------------------------------------------------------------ */

int bert_ner_window_entities(const bert_tokenizer *tok, const ner_piece *pieces, int n, const float *logits,
                             int n_labels, const char *const *labels, bert_aggregation agg, const char *text,
                             size_t text_len, ner_entities *out)
{
    if (n <= 0) return 0;
    size_t had = out->n;
    double *probs = malloc((size_t)n * (size_t)n_labels * sizeof *probs);
    double *avg = malloc((size_t)n_labels * sizeof *avg);
    pre_entity *pre = calloc((size_t)n, sizeof *pre);
    labelled *items = calloc((size_t)n, sizeof *items);
    const char **words = malloc((size_t)n * sizeof *words);
    int n_items = 0, rc = -1;
    if (!probs || !avg || !pre || !items || !words) goto done;

    /* postprocess: softmax with the row's maximum subtracted. */
    for (int i = 0; i < n; i++) {
        const float *x = logits + (size_t)i * n_labels;
        double *p = probs + (size_t)i * n_labels, max = x[0], sum = 0;
        for (int l = 1; l < n_labels; l++) if (x[l] > max) max = x[l];
        for (int l = 0; l < n_labels; l++) sum += (p[l] = exp((double)x[l] - max));
        for (int l = 0; l < n_labels; l++) p[l] /= sum;
    }
    /* gather_pre_entities: a tokenizer whose model has a
     * continuing_subword_prefix (WordPiece's "##") calls a piece a subword
     * when its string and its span of the text differ in length; any other
     * (byte-level BPE, Unigram) when neither the character before the piece
     * nor its first is a space (the pipeline's fallback heuristic).  [UNK]
     * shows the text itself and starts a word. */
    int by_length = bert_tokenizer_has_subword_prefix(tok);
    for (int i = 0; i < n; i++) {
        const ner_piece *q = &pieces[i];
        pre[i].scores = probs + (size_t)i * n_labels;
        pre[i].start = q->start;
        pre[i].end = q->end;
        pre[i].index = q->index;
        if (q->is_unk) {
            pre[i].word = bert_strndup(text + q->byte_start, q->byte_end - q->byte_start);
            pre[i].is_subword = 0;
        } else {
            pre[i].word = bert_strdup(q->token);
            if (by_length)
                pre[i].is_subword = (int64_t)codepoints(q->token) != q->end - q->start;
            else   /* a space is one byte, never part of another character */
                pre[i].is_subword = q->byte_start > 0 && text[q->byte_start - 1] != ' ' &&
                                    !(q->byte_start < text_len && text[q->byte_start] == ' ');
        }
        if (!pre[i].word) goto done;
    }

    if (agg == BERT_AGG_NONE || agg == BERT_AGG_SIMPLE) {
        for (int i = 0; i < n; i++) {
            labelled *it = &items[n_items++];
            it->label = argmax(pre[i].scores, n_labels);
            it->score = pre[i].scores[it->label];
            it->word = pre[i].word;
            pre[i].word = NULL;
            it->start = pre[i].start;
            it->end = pre[i].end;
            it->index = pre[i].index;
        }
    } else {
        /* aggregate_words: a word is a piece and the subwords after it. */
        for (int i = 0; i < n;) {
            int j = i + 1;
            while (j < n && pre[j].is_subword) j++;
            if (aggregate_word(tok, pre + i, j - i, n_labels, agg, avg, words, &items[n_items]) != 0) goto done;
            n_items++;
            i = j;
        }
    }

    if (agg == BERT_AGG_NONE) {
        for (int i = 0; i < n_items; i++) {
            if (strcmp(labels[items[i].label], "O") == 0) continue;
            ner_entity e = {.entity = bert_strdup(labels[items[i].label]), .score = items[i].score,
                            .word = items[i].word, .start = items[i].start, .end = items[i].end,
                            .index = items[i].index};
            if (!e.entity || push(out, &e) != 0) { free(e.entity); goto done; }
            items[i].word = NULL;
        }
    } else if (group_entities(tok, items, n_items, labels, words, out) != 0) {
        goto done;
    }
    rc = 0;
done:
    if (rc != 0) {
        for (size_t i = had; i < out->n; i++) {
            free(out->items[i].word);
            free(out->items[i].entity);
        }
        out->n = had;
    }
    for (int i = 0; pre && i < n; i++) free(pre[i].word);
    for (int i = 0; items && i < n_items; i++) free(items[i].word);
    free(probs);
    free(avg);
    free(pre);
    free(items);
    free(words);
    return rc;
}

/* ---- aggregate_overlapping_entities --------------------------------------------- */

static int by_start(const void *a, const void *b)
{
    const ner_entity *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return 0;
}

void bert_ner_merge_overlapping(ner_entities *e)
{
    if (e->n < 2) return;
    /* A stable sort: insertion sort, since entities arrive almost sorted
     * (window after window). */
    for (size_t i = 1; i < e->n; i++) {
        ner_entity cur = e->items[i];
        size_t j = i;
        while (j > 0 && by_start(&e->items[j - 1], &cur) > 0) {
            e->items[j] = e->items[j - 1];
            j--;
        }
        e->items[j] = cur;
    }
    size_t kept = 0;
    ner_entity prev = e->items[0];
    for (size_t i = 1; i < e->n; i++) {
        ner_entity cur = e->items[i];
        if (prev.start <= cur.start && cur.start < prev.end) {
            int64_t cur_len = cur.end - cur.start, prev_len = prev.end - prev.start;
            if (cur_len > prev_len || (cur_len == prev_len && cur.score > prev.score)) {
                free(prev.word);
                free(prev.entity);
                prev = cur;
            } else {
                free(cur.word);
                free(cur.entity);
            }
        } else {
            e->items[kept++] = prev;
            prev = cur;
        }
    }
    e->items[kept++] = prev;
    e->n = kept;
}
