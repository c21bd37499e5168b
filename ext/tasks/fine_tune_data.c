/*
 * fine_tune_data.c - the rows of bert_train's query made into examples
 * (fine_tune_data.h): labels decided, texts tokenized as the inference
 * functions tokenize them, entity spans turned into BIO tags on the
 * tokenizer's words (run_ner.py: the first piece of a word carries its tag,
 * the others -100), answers located in windows of the context as run_qa.py's
 * prepare_train_features does, embedding columns kept side by side.
 */
#include "fine_tune_data.h"

#include "pipeline.h"
#include "../models/entry.h"
#include "../base/buffer.h"
#include "../base/error.h"
#include "../base/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- rows ------------------------------------------------------------------- */

int ft_rows_add(ft_rows *r, const ft_value *row)
{
    ft_value *grown = bert_grow(r->values, &r->cap, (r->n_rows + 1) * (size_t)r->n_cols, sizeof *grown);
    if (!grown) return -1;
    r->values = grown;
    ft_value *dst = &r->values[r->n_rows * (size_t)r->n_cols];
    for (int c = 0; c < r->n_cols; c++) {
        dst[c] = row[c];
        if (row[c].type != FT_TEXT) continue;
        char **texts = bert_grow(r->texts, &r->texts_cap, r->n_texts + 1, sizeof *texts);
        if (!texts) return -1;
        r->texts = texts;
        char *copy = bert_strndup(row[c].text ? row[c].text : "", row[c].len);
        if (!copy) return -1;
        r->texts[r->n_texts++] = copy;
        dst[c].text = copy;
    }
    r->n_rows++;
    return 0;
}

void ft_rows_free(ft_rows *r)
{
    for (size_t i = 0; i < r->n_texts; i++) free(r->texts[i]);
    free(r->texts);
    free(r->values);
    memset(r, 0, sizeof *r);
}

static const ft_value *cell(const ft_rows *r, size_t row, int col)
{
    return &r->values[row * (size_t)r->n_cols + (size_t)col];
}

void ft_data_free(ft_data *d)
{
    free(d->ids);
    free(d->types);
    free(d->token_labels);
    free(d->ex);
    free(d->targets);
    memset(d, 0, sizeof *d);
}

void ft_labels_free(ft_labels *l)
{
    for (int i = 0; i < l->n; i++) free(l->names[i]);
    free(l->names);
    memset(l, 0, sizeof *l);
}

static const char *type_name(ft_type t)
{
    return t == FT_NULL ? "NULL" : t == FT_INTEGER ? "an INTEGER" : t == FT_REAL ? "a REAL" : "TEXT";
}

/* ---- labels ----------------------------------------------------------------- */

/* A set of label names in first-seen order. */
typedef struct {
    char **names;
    size_t n, cap;
} name_set;

static int set_find(const name_set *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->names[i], name) == 0) return (int)i;
    return -1;
}

static int set_add(name_set *s, const char *name)
{
    if (set_find(s, name) >= 0) return 0;
    char **grown = bert_grow(s->names, &s->cap, s->n + 1, sizeof *grown);
    if (!grown) return -1;
    s->names = grown;
    if (!(s->names[s->n] = bert_strdup(name))) return -1;
    s->n++;
    return 0;
}

static void set_free(name_set *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->names[i]);
    free(s->names);
    memset(s, 0, sizeof *s);
}

static int is_integer_text(const char *s)
{
    char *end;
    if (!*s) return 0;
    strtoll(s, &end, 10);
    return *end == '\0';
}

/* Sorts label names: as numbers when every one is an integer (run_glue.py
 * sorts the labels' values), else as strings.  Insertion sort: label sets
 * are small, and qsort would need the choice in a global. */
static void sort_names(char **names, size_t n)
{
    int numeric = 1;
    for (size_t i = 0; i < n; i++) numeric = numeric && is_integer_text(names[i]);
    for (size_t i = 1; i < n; i++) {
        char *x = names[i];
        size_t j = i;
        for (; j > 0; j--) {
            const char *y = names[j - 1];
            int after = numeric ? strtoll(y, NULL, 10) > strtoll(x, NULL, 10) : strcmp(y, x) > 0;
            if (!after) break;
            names[j] = names[j - 1];
        }
        names[j] = x;
    }
}

/* The label of a value (TEXT or INTEGER) as text, into buf. */
static const char *label_text(const ft_value *v, char *buf, size_t size)
{
    if (v->type == FT_INTEGER) {
        snprintf(buf, size, "%lld", v->integer);
        return buf;
    }
    return v->text;
}

/* 1 when a TEXT label is a JSON array (multi-label), with the parsed doc. */
static int json_array_label(const ft_value *v, json_doc **doc)
{
    *doc = NULL;
    if (v->type != FT_TEXT || v->len == 0 || v->text[0] != '[') return 0;
    char *err = NULL;
    if (bert_json_parse(v->text, v->len, doc, &err) != 0) {
        free(err);
        return 0;
    }
    return 1;
}

/* Adds the labels of a multi-label row; -1 with *err for an item that is not a label. */
static int add_array_labels(const json_doc *d, name_set *s, size_t row, char **err)
{
    for (int c = d->nodes[0].first_child; c >= 0; c = d->nodes[c].next_sibling) {
        const json_node *v = &d->nodes[c];
        if ((v->type != JSON_TEXT && v->type != JSON_INTEGER) || !v->text) {
            *err = bert_errorf("bert_train: row %zu: the label array holds something that is not a label name "
                               "(a text or an integer): give a JSON array of label names such as '[\"a\", \"b\"]'",
                               row + 1);
            return -1;
        }
        if (set_add(s, v->text) != 0) return -1;
    }
    return 0;
}

/* The entity spans of a TOKENS row: a JSON array of [start, end, label]. */
typedef struct {
    long long start, end;
    const char *label;
} ft_span;

static int read_spans(const ft_value *v, size_t row, json_doc **doc, ft_span **spans, int *n, char **err)
{
    *doc = NULL;
    *spans = NULL;
    *n = 0;
    static const char *const fix = "give entities as a JSON array of [start, end, label] character spans, such as "
                                   "'[[0, 5, \"PER\"]]' (as bert_ner returns them), or '[]' for none";
    if (v->type != FT_TEXT) {
        *err = bert_errorf("bert_train: row %zu: the entities are %s: %s", row + 1, type_name(v->type), fix);
        return -1;
    }
    char *perr = NULL;
    if (bert_json_parse(v->text, v->len, doc, &perr) != 0 || (*doc)->nodes[0].type != JSON_ARRAY) {
        *err = bert_errorf("bert_train: row %zu: the entities are not a JSON array%s%s: %s", row + 1,
                           perr ? " (" : "", perr ? perr : "", fix);
        free(perr);
        return -1;
    }
    const json_doc *d = *doc;
    int count = bert_json_length(d, 0);
    *spans = calloc((size_t)(count ? count : 1), sizeof **spans);
    if (!*spans) return -1;
    for (int c = d->nodes[0].first_child; c >= 0; c = d->nodes[c].next_sibling) {
        int a = d->nodes[c].first_child, b = a >= 0 ? d->nodes[a].next_sibling : -1,
            l = b >= 0 ? d->nodes[b].next_sibling : -1;
        /* bert_ner's objects are taken too: {"start", "end", "entity_group" or "entity"}. */
        if (d->nodes[c].type == JSON_OBJECT) {
            a = bert_json_member(d, c, "start");
            b = bert_json_member(d, c, "end");
            l = bert_json_member(d, c, "entity_group");
            if (l < 0) l = bert_json_member(d, c, "entity");
        } else if (d->nodes[c].type != JSON_ARRAY || bert_json_length(d, c) != 3) {
            a = -1;
        }
        if (a < 0 || b < 0 || l < 0 || d->nodes[a].type != JSON_INTEGER || d->nodes[b].type != JSON_INTEGER ||
            (d->nodes[l].type != JSON_TEXT && d->nodes[l].type != JSON_INTEGER) || !d->nodes[l].text) {
            *err = bert_errorf("bert_train: row %zu: entity %d is not [start, end, label] with integer offsets: %s",
                               row + 1, *n + 1, fix);
            return -1;
        }
        (*spans)[*n] = (ft_span){d->nodes[a].integer, d->nodes[b].integer, d->nodes[l].text};
        (*n)++;
    }
    return 0;
}

static int tokens_labels_check(const ft_options *o, const name_set *entities, ft_labels *out, char **err)
{
    if (set_find(&(name_set){o->labels, (size_t)o->n_labels, 0}, "O") < 0) {
        *err = bert_errorf("bert_train: option \"labels\" of task \"tokens\" lists the tags (B-..., I-... and O): "
                           "\"O\" is missing");
        return -1;
    }
    for (size_t i = 0; i < entities->n; i++) {
        char b[512], in[512];
        snprintf(b, sizeof b, "B-%s", entities->names[i]);
        snprintf(in, sizeof in, "I-%s", entities->names[i]);
        name_set given = {o->labels, (size_t)o->n_labels, 0};
        if (set_find(&given, b) < 0 || set_find(&given, in) < 0) {
            *err = bert_errorf("bert_train: entity label \"%s\" is outside option \"labels\": add \"%s\" and \"%s\" "
                               "to it, or leave those entities out", entities->names[i], b, in);
            return -1;
        }
    }
    (void)out;
    return 0;
}

/* Copies names into out. */
static int labels_from(char *const *names, int n, ft_labels *out)
{
    if (!(out->names = calloc((size_t)(n ? n : 1), sizeof *out->names))) return -1;
    for (int i = 0; i < n; i++) {
        if (!(out->names[i] = bert_strdup(names[i]))) return -1;
        out->n++;
    }
    return 0;
}

/* 1 when the base's labels are the same set as `s`. */
static int same_set(char *const *base, int n_base, const name_set *s)
{
    if (!base || (size_t)n_base != s->n) return 0;
    for (int i = 0; i < n_base; i++)
        if (set_find(s, base[i]) < 0) return 0;
    return 1;
}

/* The query's shape: its column count for the task, and rows at all. */
static int check_shape(const ft_options *o, const ft_rows *rows, const char *what, char **err)
{
    if (rows->n_rows == 0) {
        *err = bert_errorf("bert_train: the %s returned no rows: give a SELECT that returns the examples, %s",
                           what, ft_task_columns(o->task));
        return -1;
    }
    int nc = rows->n_cols;
    int ok = o->task == FT_TASK_CLASSIFY || o->task == FT_TASK_REGRESSION ? nc == 2 || nc == 3
           : o->task == FT_TASK_TOKENS ? nc == 2 : o->task == FT_TASK_QA ? nc == 4 : nc == 2 || nc == 3;
    if (!ok) {
        *err = bert_errorf("bert_train: the %s returns %d column%s; task \"%s\" takes %s", what, nc, nc == 1 ? "" : "s",
                           ft_task_name(o->task), ft_task_columns(o->task));
        return -1;
    }
    return 0;
}

int ft_labels_decide(const ft_options *o, const ft_rows *rows, char *const *base_labels, int n_base_labels,
                     ft_labels *out, ft_how *task, char **err)
{
    *err = NULL;
    memset(out, 0, sizeof *out);
    if (check_shape(o, rows, "query", err) != 0) return -1;
    name_set seen = {0};
    int rc = -1;
    char buf[32];
    const int col = rows->n_cols - 1;
    switch (o->task) {
    case FT_TASK_QA:
        *task = FT_HOW_QA;
        return 0;
    case FT_TASK_EMBED:
        *task = FT_HOW_EMBED;
        return 0;
    case FT_TASK_REGRESSION: {
        *task = FT_HOW_REGRESSION;
        static char *const one[] = {"LABEL_0"};
        return labels_from(one, 1, out) == 0 ? 0 : -1;
    }
    case FT_TASK_TOKENS: {
        *task = FT_HOW_TOKENS;
        for (size_t r = 0; r < rows->n_rows; r++) {
            json_doc *d = NULL;
            ft_span *spans = NULL;
            int n = 0, bad = read_spans(cell(rows, r, 1), r, &d, &spans, &n, err) != 0;
            for (int i = 0; !bad && i < n; i++) bad = set_add(&seen, spans[i].label) != 0;
            free(spans);
            bert_json_free(d);
            if (bad) goto done;
        }
        if (o->labels) {
            if (tokens_labels_check(o, &seen, out, err) != 0 || labels_from(o->labels, o->n_labels, out) != 0) goto done;
        } else {
            name_set tags = {0};
            int bad = set_add(&tags, "O") != 0;
            for (size_t i = 0; !bad && i < seen.n; i++) {
                char t[512];
                snprintf(t, sizeof t, "B-%s", seen.names[i]);
                bad = set_add(&tags, t) != 0;
                snprintf(t, sizeof t, "I-%s", seen.names[i]);
                bad = bad || set_add(&tags, t) != 0;
            }
            if (!bad) sort_names(tags.names, tags.n);
            if (!bad && same_set(base_labels, n_base_labels, &tags)) bad = labels_from(base_labels, n_base_labels, out);
            else if (!bad) bad = labels_from(tags.names, (int)tags.n, out) != 0;
            set_free(&tags);
            if (bad) goto done;
        }
        rc = 0;
        goto done;
    }
    case FT_TASK_CLASSIFY:
        break;
    }
    /* classify: single-label (TEXT or INTEGER) or multi-label (JSON arrays). */
    int multi = -1;
    for (size_t r = 0; r < rows->n_rows; r++) {
        const ft_value *v = cell(rows, r, col);
        if (v->type == FT_NULL) {
            *err = bert_errorf("bert_train: row %zu: the label is NULL: give every row a label, or leave such rows "
                               "out of the query (WHERE label IS NOT NULL)", r + 1);
            goto done;
        }
        if (v->type == FT_REAL) {
            *err = bert_errorf("bert_train: row %zu: the label is a REAL: classification takes TEXT or INTEGER "
                               "labels; to predict a number, give '{\"task\": \"regression\"}'", r + 1);
            goto done;
        }
        json_doc *d = NULL;
        int is_array = json_array_label(v, &d);
        if (multi >= 0 && multi != is_array) {
            bert_json_free(d);
            *err = bert_errorf("bert_train: row %zu: the label is %s while earlier rows' are %s: give every row one "
                               "label, or every row a JSON array of labels (multi-label)", r + 1,
                               is_array ? "a JSON array" : "a single label", multi ? "JSON arrays" : "single labels");
            goto done;
        }
        multi = is_array;
        int bad = is_array ? add_array_labels(d, &seen, r, err) : set_add(&seen, label_text(v, buf, sizeof buf));
        bert_json_free(d);
        if (bad) goto done;
    }
    *task = multi > 0 ? FT_HOW_MULTI_LABEL : FT_HOW_CLASSIFY;
    if (o->labels) {
        name_set given = {o->labels, (size_t)o->n_labels, 0};
        for (size_t i = 0; i < seen.n; i++)
            if (set_find(&given, seen.names[i]) < 0) {
                *err = bert_errorf("bert_train: label \"%s\" of the data is outside option \"labels\": add it to "
                                   "\"labels\", or leave its rows out", seen.names[i]);
                goto done;
            }
        if (o->n_labels < 2 && *task == FT_HOW_CLASSIFY) {
            *err = bert_errorf("bert_train: option \"labels\" names one class only: classification needs two or "
                               "more (for a score, give '{\"task\": \"regression\"}')");
            goto done;
        }
        if (labels_from(o->labels, o->n_labels, out) != 0) goto done;
    } else {
        if (seen.n < 2 && *task == FT_HOW_CLASSIFY) {
            *err = bert_errorf("bert_train: the query's labels are one class only (\"%s\"): classification needs "
                               "examples of two or more classes; add rows of the other classes, or for a score "
                               "give '{\"task\": \"regression\"}'", seen.n ? seen.names[0] : "");
            goto done;
        }
        sort_names(seen.names, seen.n);
        if (same_set(base_labels, n_base_labels, &seen)) {
            if (labels_from(base_labels, n_base_labels, out) != 0) goto done;
        } else if (labels_from(seen.names, (int)seen.n, out) != 0) {
            goto done;
        }
    }
    rc = 0;
done:
    set_free(&seen);
    if (rc != 0) {
        ft_labels_free(out);
        if (!*err) *err = bert_errorf("out of memory reading the labels");
    }
    return rc;
}

/* ---- examples --------------------------------------------------------------- */

static int label_id(const ft_labels *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->names[i], name) == 0) return i;
    return -1;
}

/* Appends a sequence to the pool; the example's sequence k starts there. */
static int pool_add(ft_data *d, const int32_t *ids, const int32_t *types, size_t n, int type_vocab)
{
    size_t need = d->n_tokens + n;
    size_t cap = d->cap_tokens;
    int32_t *gi = bert_grow(d->ids, &cap, need, sizeof *gi);
    if (!gi) return -1;
    d->ids = gi;
    cap = d->cap_tokens;
    int32_t *gt = bert_grow(d->types, &cap, need, sizeof *gt);
    if (!gt) return -1;
    d->types = gt;
    cap = d->cap_tokens;
    int *gl = bert_grow(d->token_labels, &cap, need, sizeof *gl);
    if (!gl) return -1;
    d->token_labels = gl;
    d->cap_tokens = cap;
    for (size_t i = 0; i < n; i++) {
        d->ids[d->n_tokens + i] = ids[i];
        /* RoBERTa's post-processor numbers the second text 1 too, but its
         * models have one token type. */
        d->types[d->n_tokens + i] = types && type_vocab > 1 ? types[i] : 0;
        d->token_labels[d->n_tokens + i] = FT_IGNORE;
    }
    d->n_tokens = need;
    if ((int)n > d->longest) d->longest = (int)n;
    return 0;
}

static ft_example *new_example(ft_data *d, size_t row)
{
    ft_example *grown = bert_grow(d->ex, &d->cap, d->n + 1, sizeof *grown);
    if (!grown) return NULL;
    d->ex = grown;
    ft_example *x = &d->ex[d->n++];
    memset(x, 0, sizeof *x);
    x->row = row;
    return x;
}

static int need_text(const ft_rows *rows, size_t r, int col, const char *name, const char *what, char **err)
{
    const ft_value *v = cell(rows, r, col);
    if (v->type == FT_TEXT) return 0;
    *err = bert_errorf("bert_train: %s row %zu: column %d (%s) is %s, not TEXT: %s", what, r + 1, col + 1, name,
                       type_name(v->type),
                       v->type == FT_NULL ? "leave such rows out of the query, or COALESCE the column"
                                          : "CAST it AS TEXT");
    return -1;
}

/* A sequence as the inference functions read it: [CLS] text [SEP] (or the pair), cut to max_length. */
static int add_sequence(bert_entry *e, ft_data *d, const ft_value *a, const ft_value *b, bert_ids *ids,
                        bert_ids *types, size_t *at, int *len, char **err)
{
    int rc = b ? bert_pipeline_tokenize_pair(e, a->text, a->len, b->text, b->len, BERT_PAIR_LONGEST_FIRST, ids, types,
                                             err)
               : bert_pipeline_tokenize(e, a->text, a->len, 0, ids, err);
    if (rc != 0) return -1;
    *at = d->n_tokens;
    *len = (int)ids->len;
    if (pool_add(d, ids->ids, b ? types->ids : NULL, ids->len, e->cfg.type_vocab_size) != 0) {
        *err = bert_errorf("out of memory preparing the training examples");
        return -1;
    }
    return 0;
}

/* Characters of s[0..len) as SQLite counts them (every byte but UTF-8 continuation bytes). */
static long long char_count(const char *s, size_t len)
{
    long long n = 0;
    for (size_t i = 0; i < len; i++) n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

/* The byte where character `ch` starts (len when past the end). */
static size_t char_byte(const char *s, size_t len, long long ch)
{
    long long n = -1;
    for (size_t i = 0; i < len; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) n++;
        if (n == ch) return i;
    }
    return len;
}

/* A text's pieces (no specials) with their spans. */
static int pieces_of(bert_entry *e, const char *text, size_t len, bert_ids *ids, bert_spans *spans, char **err)
{
    ids->len = spans->len = 0;
    if (bert_tokenizer_encode_spans(e->tokenizer, text, len, SIZE_MAX, ids, spans, &e->tokenizing) != 0) {
        *err = bert_errorf("out of memory tokenizing a text of %zu bytes", len);
        return -1;
    }
    return 0;
}

/* ---- tokens: BIO tags on words ---------------------------------------------- */

static int prepare_tokens_row(bert_entry *e, const ft_labels *labels, const ft_rows *rows, size_t r, const char *what,
                              ft_data *d, bert_ids *ids, bert_spans *spans, char **err)
{
    const ft_value *text = cell(rows, r, 0);
    json_doc *doc = NULL;
    ft_span *ents = NULL;
    int n_ents = 0, rc = -1;
    int *word_tag = NULL;
    if (read_spans(cell(rows, r, 1), r, &doc, &ents, &n_ents, err) != 0) goto done;
    if (pieces_of(e, text->text, text->len, ids, spans, err) != 0) goto done;
    const long long chars = char_count(text->text, text->len);
    const size_t n = ids->len;
    /* Words: the pre-tokenizer's, numbered from 0 in order. */
    long long n_words = 0;
    for (size_t i = 0; i < n; i++)
        if (spans->at[i].word + 1 > n_words) n_words = spans->at[i].word + 1;
    if (!(word_tag = malloc((size_t)(n_words ? n_words : 1) * sizeof *word_tag))) goto oom;
    for (long long w = 0; w < n_words; w++) word_tag[w] = label_id(labels, "O");
    for (int k = 0; k < n_ents; k++) {
        const ft_span *s = &ents[k];
        if (s->start < 0 || s->end > chars || s->start >= s->end) {
            *err = bert_errorf("bert_train: %s row %zu: entity [%lld, %lld, \"%s\"] lies outside the text of %lld "
                               "characters: give 0 <= start < end <= length(text), as character offsets (end "
                               "exclusive)", what, r + 1, s->start, s->end, s->label, chars);
            goto done;
        }
        for (int j = 0; j < k; j++)
            if (ents[j].start < s->end && s->start < ents[j].end) {
                *err = bert_errorf("bert_train: %s row %zu: entities [%lld, %lld] and [%lld, %lld] overlap: give "
                                   "each character one entity at most", what, r + 1, ents[j].start, ents[j].end,
                                   s->start, s->end);
                goto done;
            }
        /* The span must begin where a word begins and end where one ends:
         * a tag belongs to a whole word. */
        long long first = -1, last = -1, prev_end = -1, next_start = -1;
        for (size_t i = 0; i < n; i++) {
            const bert_token_span *t = &spans->at[i];
            int word_first = i == 0 || spans->at[i - 1].word != t->word;
            int word_last = i + 1 == n || spans->at[i + 1].word != t->word;
            if (word_first && t->start == s->start) first = t->word;
            if (word_last && t->end == s->end) last = t->word;
            if (word_first && t->start <= s->start) prev_end = t->start;
            if (word_last && t->end >= s->end && next_start < 0) next_start = t->end;
        }
        if (first < 0 || last < 0 || last < first) {
            const char *b = text->text + char_byte(text->text, text->len, s->start);
            const char *end = text->text + char_byte(text->text, text->len, s->end);
            *err = bert_errorf("bert_train: %s row %zu: entity [%lld, %lld, \"%s\"] (\"%.*s\") is not aligned to the "
                               "tokenizer's words: a span must start where a word starts and end where one ends "
                               "(the words around it span from %lld to %lld)", what, r + 1, s->start, s->end,
                               s->label, (int)(end - b), b, prev_end < 0 ? 0 : prev_end,
                               next_start < 0 ? chars : next_start);
            goto done;
        }
        char tag[512];
        for (long long w = first; w <= last; w++) {
            snprintf(tag, sizeof tag, "%s-%s", w == first ? "B" : "I", s->label);
            int id = label_id(labels, tag);
            if (id < 0) {
                *err = bert_errorf("bert_train: %s row %zu: entity label \"%s\" is outside the labels of the run "
                                   "(tag %s): train with it, or leave it out", what, r + 1, s->label, tag);
                goto done;
            }
            word_tag[w] = id;
        }
    }
    /* [CLS] pieces [SEP], the pieces cut to what max_length leaves. */
    bert_ids seq = {0};
    size_t before = (size_t)bert_tokenizer_add_specials(e->tokenizer, 0, NULL, NULL);
    size_t after = (size_t)bert_tokenizer_add_specials(e->tokenizer, 1, NULL, NULL);
    size_t room = (size_t)e->max_length > before + after ? (size_t)e->max_length - before - after : 0;
    size_t keep = n < room ? n : room;
    if (bert_tokenizer_add_specials(e->tokenizer, 0, &seq, NULL) < 0) goto oom_seq;
    for (size_t i = 0; i < keep; i++)
        if (bert_ids_push(&seq, ids->ids[i]) != 0) goto oom_seq;
    if (bert_tokenizer_add_specials(e->tokenizer, 1, &seq, NULL) < 0) goto oom_seq;
    ft_example *x = new_example(d, r);
    if (!x) goto oom_seq;
    x->at[0] = d->n_tokens;
    x->len[0] = (int)seq.len;
    if (pool_add(d, seq.ids, NULL, seq.len, e->cfg.type_vocab_size) != 0) goto oom_seq;
    for (size_t i = 0; i < keep; i++)
        if (i == 0 || spans->at[i - 1].word != spans->at[i].word)
            d->token_labels[x->at[0] + before + i] = word_tag[spans->at[i].word];
    bert_ids_free(&seq);
    rc = 0;
    goto done;
oom_seq:
    bert_ids_free(&seq);
oom:
    *err = bert_errorf("out of memory preparing the training examples");
done:
    free(word_tag);
    free(ents);
    bert_json_free(doc);
    return rc;
}

/* ---- question answering: run_qa.py's windows ------------------------------ */

static int prepare_qa_row(bert_entry *e, const ft_options *o, const ft_rows *rows, size_t r, const char *what,
                          ft_data *d, bert_ids *qids, bert_ids *cids, bert_spans *qspans, bert_spans *cspans,
                          char **err)
{
    const ft_value *q = cell(rows, r, 0), *c = cell(rows, r, 1), *start = cell(rows, r, 2), *answer = cell(rows, r, 3);
    long long start_char = -1, end_char = -1;
    if ((start->type == FT_NULL) != (answer->type == FT_NULL)) {
        *err = bert_errorf("bert_train: %s row %zu: answer_start and answer_text must both be NULL (no answer, as "
                           "SQuAD 2.0's unanswerable questions) or both be given", what, r + 1);
        return -1;
    }
    if (start->type != FT_NULL) {
        if (start->type != FT_INTEGER || answer->type != FT_TEXT) {
            *err = bert_errorf("bert_train: %s row %zu: answer_start must be an INTEGER character offset and "
                               "answer_text TEXT (they are %s and %s)", what, r + 1, type_name(start->type),
                               type_name(answer->type));
            return -1;
        }
        start_char = start->integer;
        end_char = start_char + char_count(answer->text, answer->len);
        long long chars = char_count(c->text, c->len);
        size_t b = char_byte(c->text, c->len, start_char);
        if (start_char < 0 || end_char > chars || answer->len == 0 ||
            memcmp(c->text + b, answer->text, answer->len) != 0) {
            size_t shown = start_char >= 0 && b < c->len ? c->len - b : 0;
            if (shown > answer->len) shown = answer->len;
            *err = bert_errorf("bert_train: %s row %zu: the answer \"%s\" is not at answer_start %lld of the context "
                               "(which reads \"%.*s\" there): give the 0-based character offset where the answer "
                               "starts, such as instr(context, answer) - 1", what, r + 1, answer->text, start_char,
                               (int)shown, start_char >= 0 && b < c->len ? c->text + b : "");
            return -1;
        }
    }
    /* run_qa.py strips the question's leading whitespace. */
    const char *qt = q->text;
    size_t ql = q->len;
    while (ql && (*qt == ' ' || *qt == '\t' || *qt == '\n' || *qt == '\r')) qt++, ql--;
    if (pieces_of(e, qt, ql, qids, qspans, err) != 0 || pieces_of(e, c->text, c->len, cids, cspans, err) != 0)
        return -1;
    const size_t specials = bert_tokenizer_num_special(e->tokenizer, 1);
    const size_t fixed = qids->len + specials;
    const size_t stride = (size_t)o->doc_stride;
    if (fixed >= (size_t)e->max_length || (size_t)e->max_length - fixed <= stride) {
        *err = bert_errorf("bert_train: %s row %zu: the question's %zu tokens leave %zu of max_length %d for the "
                           "context, which must be more than doc_stride %zu: shorten the question, or give a larger "
                           "max_length or a smaller doc_stride", what, r + 1, qids->len,
                           fixed < (size_t)e->max_length ? (size_t)e->max_length - fixed : 0, e->max_length, stride);
        return -1;
    }
    const size_t width = (size_t)e->max_length - fixed, n = cids->len;
    const size_t closing = (size_t)bert_tokenizer_add_specials(e->tokenizer, 1, NULL, NULL);
    /* tokenizers' overflow: windows every width - stride pieces until one reaches the end. */
    size_t step = width - stride;
    bert_ids seq = {0}, types = {0};
    int rc = -1;
    for (size_t a = 0;; a += step) {
        size_t b = a + width < n ? a + width : n;
        seq.len = types.len = 0;
        static const int32_t empty[1] = {0};
        if (bert_tokenizer_post_process(e->tokenizer, qids->ids ? qids->ids : empty, qids->len,
                                        cids->ids ? cids->ids + a : empty, b - a, &seq, &types) != 0)
            goto oom;
        ft_example *x = new_example(d, r);
        if (!x) goto oom;
        x->at[0] = d->n_tokens;
        x->len[0] = (int)seq.len;
        if (pool_add(d, seq.ids, types.ids, seq.len, e->cfg.type_vocab_size) != 0) goto oom;
        /* The context's pieces sit just before the closing special token. */
        const size_t off = seq.len - (b - a) - closing;
        x->start = x->end = 0;   /* [CLS]: no answer in this window */
        if (start_char >= 0 && b > a && cspans->at[a].start <= start_char && cspans->at[b - 1].end >= end_char) {
            size_t s = a;
            while (s < b && cspans->at[s].start <= start_char) s++;
            size_t t = b - 1;
            while (t > a && cspans->at[t].end >= end_char) t--;
            /* run_qa.py's scans step one past the answer's pieces. */
            size_t first = s - 1, last = cspans->at[t].end >= end_char ? t : t + 1;
            if (last < first) last = first;
            x->start = (int)(off + first - a);
            x->end = (int)(off + last - a);
        }
        if (b == n) break;
    }
    rc = 0;
    goto done;
oom:
    *err = bert_errorf("out of memory preparing the training examples");
done:
    bert_ids_free(&seq);
    bert_ids_free(&types);
    return rc;
}

int ft_data_prepare(bert_entry *e, const ft_options *o, ft_how task, const ft_labels *labels,
                    const ft_rows *rows, const char *what, ft_data *d, char **err)
{
    *err = NULL;
    memset(d, 0, sizeof *d);
    d->task = task;
    d->columns = 1;
    if (check_shape(o, rows, what, err) != 0) return -1;
    const int nc = rows->n_cols;
    if (bert_entry_need_tokenizer(e, err) != 0 || bert_pipeline_need_layout(e, err) != 0) return -1;
    bert_ids ids = {0}, types = {0}, qids = {0};
    bert_spans spans = {0}, qspans = {0};
    int rc = -1;
    char buf[32];
    if (task == FT_HOW_MULTI_LABEL &&
        !(d->targets = calloc(rows->n_rows * (size_t)labels->n + 1, sizeof *d->targets)))
        goto oom;
    for (size_t r = 0; r < rows->n_rows; r++) {
        switch (o->task) {
        case FT_TASK_CLASSIFY:
        case FT_TASK_REGRESSION: {
            d->pair = nc == 3;
            if (need_text(rows, r, 0, "text", what, err) != 0 ||
                (d->pair && need_text(rows, r, 1, "text_pair", what, err) != 0))
                goto done;
            const ft_value *lab = cell(rows, r, nc - 1);
            ft_example *x = new_example(d, r);
            if (!x) goto oom;
            if (task == FT_HOW_REGRESSION) {
                if (lab->type != FT_REAL && lab->type != FT_INTEGER) {
                    *err = bert_errorf("bert_train: %s row %zu: the label is %s: task \"regression\" takes a REAL "
                                       "number%s", what, r + 1, type_name(lab->type),
                                       lab->type == FT_NULL ? "; leave rows without one out of the query" : "");
                    goto done;
                }
                x->target = (float)(lab->type == FT_REAL ? lab->real : (double)lab->integer);
            } else if (task == FT_HOW_MULTI_LABEL) {
                json_doc *jd = NULL;
                if (lab->type == FT_NULL || !json_array_label(lab, &jd)) {
                    bert_json_free(jd);
                    *err = bert_errorf("bert_train: %s row %zu: the label is %s, not a JSON array of labels as the "
                                       "training rows' are", what, r + 1, type_name(lab->type));
                    goto done;
                }
                for (int c = jd->nodes[0].first_child; c >= 0; c = jd->nodes[c].next_sibling) {
                    int id = jd->nodes[c].text ? label_id(labels, jd->nodes[c].text) : -1;
                    if (id < 0) {
                        *err = bert_errorf("bert_train: %s row %zu: label \"%s\" is outside the labels of the run: "
                                           "add it to option \"labels\", or leave it out", what, r + 1,
                                           jd->nodes[c].text ? jd->nodes[c].text : "?");
                        bert_json_free(jd);
                        goto done;
                    }
                    d->targets[(d->n - 1) * (size_t)labels->n + (size_t)id] = 1;
                }
                bert_json_free(jd);
            } else {
                if (lab->type != FT_TEXT && lab->type != FT_INTEGER) {
                    *err = bert_errorf("bert_train: %s row %zu: the label is %s: give TEXT or INTEGER labels%s", what,
                                       r + 1, type_name(lab->type),
                                       lab->type == FT_NULL ? ", and leave rows without one out of the query" : "");
                    goto done;
                }
                const char *name = label_text(lab, buf, sizeof buf);
                if ((x->label = label_id(labels, name)) < 0) {
                    *err = bert_errorf("bert_train: %s row %zu: label \"%s\" is outside the labels of the run: add "
                                       "it to option \"labels\" (and train with it), or leave its rows out", what,
                                       r + 1, name);
                    goto done;
                }
            }
            ft_example *at = &d->ex[d->n - 1];
            if (add_sequence(e, d, cell(rows, r, 0), d->pair ? cell(rows, r, 1) : NULL, &ids, &types, &at->at[0],
                             &at->len[0], err) != 0)
                goto done;
            break;
        }
        case FT_TASK_TOKENS:
            if (need_text(rows, r, 0, "text", what, err) != 0 ||
                prepare_tokens_row(e, labels, rows, r, what, d, &ids, &spans, err) != 0)
                goto done;
            break;
        case FT_TASK_QA:
            if (need_text(rows, r, 0, "question", what, err) != 0 || need_text(rows, r, 1, "context", what, err) != 0 ||
                prepare_qa_row(e, o, rows, r, what, d, &qids, &ids, &qspans, &spans, err) != 0)
                goto done;
            break;
        case FT_TASK_EMBED: {
            static const char *const names[3] = {"anchor", "positive", "negative"};
            d->columns = nc;
            ft_example *x = new_example(d, r);
            if (!x) goto oom;
            for (int k = 0; k < nc; k++) {
                if (need_text(rows, r, k, names[k], what, err) != 0) goto done;
                x = &d->ex[d->n - 1];
                if (add_sequence(e, d, cell(rows, r, k), NULL, &ids, &types, &x->at[k], &x->len[k], err) != 0)
                    goto done;
            }
            break;
        }
        }
    }
    rc = 0;
    goto done;
oom:
    *err = bert_errorf("out of memory preparing the training examples");
done:
    bert_ids_free(&ids);
    bert_ids_free(&types);
    bert_ids_free(&qids);
    bert_spans_free(&spans);
    bert_spans_free(&qspans);
    if (rc != 0) ft_data_free(d);
    return rc;
}
