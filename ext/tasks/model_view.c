/*
 * model_view.c - see model_view.h.
 */
#include "model_view.h"
#include "chunks.h"
#include "../models/entry.h"

#include "../base/error.h"
#include "../base/json.h"
#include "../base/function_options.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *bert_view_function(bert_view_kind kind)
{
    return kind == BERT_VIEW_ATTENTION ? "bert_attention" : "bert_hidden_states";
}

/* What a well-formed options_json looks like, for the errors. */
static const char *options_example(bert_view_kind kind)
{
    return kind == BERT_VIEW_ATTENTION ? "'{\"layers\": [0, 11], \"heads\": [3], \"model\": \"name\"}'"
                                       : "'{\"layers\": [0, 12], \"model\": \"name\"}'";
}

static char *option_error(bert_view_kind kind, const char *problem, const char *detail)
{
    return bert_errorf("%s: %s%s; give options_json as an object such as %s", bert_view_function(kind), problem,
                       detail, options_example(kind));
}

/* "layers" or "heads": one integer or an array of them, into *out[*n]. */
static int parse_numbers(bert_view_kind kind, const json_doc *d, int node, const char *key, long long **out, int *n,
                         char **err)
{
    const json_node *v = &d->nodes[node];
    int count = v->type == JSON_ARRAY ? bert_json_length(d, node) : 1;
    char problem[96];
    snprintf(problem, sizeof problem, "option \"%s\" must be a number or an array of numbers such as [0, 1]", key);
    if ((v->type != JSON_ARRAY && v->type != JSON_INTEGER) || count < 1) {
        *err = option_error(kind, problem, count < 1 ? " (it is empty)" : "");
        return -1;
    }
    *out = malloc((size_t)count * sizeof **out);
    if (!*out) return -1;
    *n = 0;
    for (int c = v->type == JSON_ARRAY ? v->first_child : node; c >= 0; c = d->nodes[c].next_sibling) {
        if (d->nodes[c].type != JSON_INTEGER) {
            *err = option_error(kind, problem, "");
            return -1;
        }
        (*out)[(*n)++] = d->nodes[c].integer;
        if (c == node) break;   /* a single number */
    }
    return 0;
}

int bert_view_options_parse(bert_view_kind kind, const char *json, size_t len, bert_view_options *out,
                            char **err)
{
    *err = NULL;
    memset(out, 0, sizeof *out);
    out->kind = kind;
    json_doc *d = NULL;
    if (bert_fn_options_parse(json, json ? len : 0, bert_view_function(kind), options_example(kind), &d, err) != 0)
        return -1;
    int rc = 0;
    for (int c = bert_fn_options_first(d); c >= 0 && rc == 0; c = d->nodes[c].next_sibling) {
        const char *key = d->nodes[c].key;
        if (strcmp(key, "layers") == 0) {
            rc = parse_numbers(kind, d, c, key, &out->layers, &out->n_layers, err);
        } else if (strcmp(key, "heads") == 0 && kind == BERT_VIEW_ATTENTION) {
            rc = parse_numbers(kind, d, c, key, &out->heads, &out->n_heads, err);
        } else if (strcmp(key, "model") == 0) {
            rc = bert_fn_options_model(d, c, bert_view_function(kind), &out->model, err);
        } else {
            *err = bert_fn_options_unknown(bert_view_function(kind), key,
                                        kind == BERT_VIEW_ATTENTION ? "\"layers\", \"heads\" and \"model\""
                                                                    : "\"layers\" and \"model\"");
            rc = -1;
        }
    }
    bert_json_free(d);
    if (rc != 0) bert_view_options_free(out);
    return rc;
}

void bert_view_options_free(bert_view_options *o)
{
    free(o->layers);
    free(o->heads);
    free(o->model);
    memset(o, 0, sizeof *o);
}

/* The layers or heads asked for (all of 0..count-1 when given is NULL),
 * ascending and each once, into *out[*n]; slot[i] is where i is in *out,
 * -1 when it is not shown.  An out-of-range number is an error naming the
 * range. */
static int choose(const bert_entry *e, bert_view_kind kind, const char *what, const long long *given, int n_given,
                  int count, int **out, int *n, int *slot, char **err)
{
    for (int i = 0; i < count; i++) slot[i] = given ? -1 : 0;
    for (int i = 0; given && i < n_given; i++) {
        if (given[i] < 0 || given[i] >= count) {
            const char *note = kind == BERT_VIEW_HIDDEN_STATES ? " (0 is the embeddings' output)" : "";
            *err = bert_errorf("%s: %s %lld is out of range: model '%s' has %ss 0 to %d%s; give numbers in that range",
                               bert_view_function(kind), what, given[i], e->name, what, count - 1, note);
            return -1;
        }
        slot[given[i]] = 0;
    }
    *out = malloc((size_t)count * sizeof **out);
    if (!*out) return -1;
    *n = 0;
    for (int i = 0; i < count; i++) {
        if (slot[i] < 0) continue;
        slot[i] = *n;
        (*out)[(*n)++] = i;
    }
    return 0;
}

/* The observer's context: where each wanted layer and head goes. */
typedef struct {
    bert_model_view *view;
    const int *layer_slot, *head_slot;
} view_collector;

static int wants_head(void *ctx, int layer, int head)
{
    const view_collector *c = ctx;
    return c->layer_slot[layer] >= 0 && c->head_slot[head] >= 0;
}

static int keep_attention(void *ctx, int layer, int head, int seq, const float *probs, int len, char **err)
{
    (void)seq; (void)err;
    const view_collector *c = ctx;
    const bert_model_view *v = c->view;
    size_t square = (size_t)len * (size_t)len;
    size_t at = ((size_t)c->layer_slot[layer] * (size_t)v->n_heads + (size_t)c->head_slot[head]) * square;
    memcpy(v->values + at, probs, square * sizeof *probs);
    return 0;
}

static int keep_hidden_states(void *ctx, int layer, const float *states, int tokens, int hidden, char **err)
{
    (void)err;
    const view_collector *c = ctx;
    if (c->layer_slot[layer] < 0) return 0;
    size_t size = (size_t)tokens * (size_t)hidden;
    memcpy(c->view->values + (size_t)c->layer_slot[layer] * size, states, size * sizeof *states);
    return 0;
}

/* Runs the encoder on the view's tokens, keeping the layers (and heads)
 * whose slots are not -1 into the view's values. */
static int observe(bert_entry *e, bert_model_view *v, const int *layer_slot, const int *head_slot,
                   bert_interrupt_fn interrupted, void *ctx, char **err)
{
    const int attention = v->kind == BERT_VIEW_ATTENTION, tokens = (int)v->ids.len;
    v->hidden = e->cfg.hidden_size;
    size_t per_layer = attention ? (size_t)v->n_heads * (size_t)tokens * (size_t)tokens
                                 : (size_t)tokens * (size_t)v->hidden;
    if (per_layer > SIZE_MAX / sizeof(float) / (size_t)v->n_layers ||
        !(v->values = malloc(per_layer * (size_t)v->n_layers * sizeof(float)))) {
        *err = bert_errorf("%s: out of memory: %d layers of %zu values each; ask for fewer layers%s",
                           bert_view_function(v->kind), v->n_layers, per_layer, attention ? " or heads" : "");
        return -1;
    }
    view_collector collector = {v, layer_slot, head_slot};
    bert_observer observer = {&collector, NULL, NULL, NULL};
    if (attention) {
        observer.wants_head = wants_head;
        observer.attention = keep_attention;
    } else {
        observer.hidden_states = keep_hidden_states;
    }
    int lengths[1] = {tokens};
    return bert_entry_encode_observed(e, v->ids.ids, lengths, 1, &observer, interrupted, ctx, err) ? 0 : -1;
}

int bert_model_view_compute(bert_entry *e, const char *text, size_t len, const bert_view_options *o,
                            bert_model_view *out, bert_interrupt_fn interrupted, void *ctx, char **err)
{
    *err = NULL;
    memset(out, 0, sizeof *out);
    out->kind = o->kind;
    const int attention = o->kind == BERT_VIEW_ATTENTION;
    /* The layers' count is the registration's config.json, known before the weights are loaded. */
    const int layers = e->cfg.num_layers + (attention ? 0 : 1), heads = e->cfg.num_heads;
    int *slots = malloc(((size_t)layers + (size_t)heads) * sizeof *slots);
    if (!slots) return -1;
    int rc = choose(e, o->kind, "layer", o->layers, o->n_layers, layers, &out->layers, &out->n_layers, slots, err);
    if (rc == 0 && attention)
        rc = choose(e, o->kind, "head", o->heads, o->n_heads, heads, &out->heads, &out->n_heads, slots + layers, err);
    if (rc == 0) rc = bert_tokenize_offsets(e, text, len, &out->ids, &out->spans, err);
    if (rc == 0) rc = bert_token_texts(e, out->ids.ids, out->ids.len, &out->names, &out->name_at);
    if (rc == 0) rc = bert_entry_need_model(e, err);
    if (rc == 0) rc = observe(e, out, slots, slots + layers, interrupted, ctx, err);
    free(slots);
    if (rc != 0) bert_model_view_free(out);
    return rc;
}

void bert_model_view_free(bert_model_view *v)
{
    bert_ids_free(&v->ids);
    bert_spans_free(&v->spans);
    free(v->names);
    free(v->name_at);
    free(v->layers);
    free(v->heads);
    free(v->values);
    memset(v, 0, sizeof *v);
}
