/*
 * sparse.c - see sparse.h.
 *
 * The document side follows SPLADE's pooling as naver/splade defines it
 * (splade/models/transformer_rep.py: log1p(relu(logits)) * attention_mask,
 * then the max over the sequence) and sentence-transformers' SpladePooling
 * (pooling_strategy "max", activation "relu"); special tokens are left out
 * of the result as opensearch-project's neural-sparse models do
 * (values[:, special_token_ids] = 0).  The query side of those models'
 * "doc" variants tokenizes only, each token weighted by idf.json.
 */
#include "sparse.h"
#include "pipeline.h"
#include "../base/error.h"
#include "../base/json.h"
#include "../base/function_options.h"
#include "../base/model_files.h"
#include "../models/entry.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Positions run through the vocabulary projection at once: a GEMM of this
 * many rows shares each row of the projection among enough of them, while
 * the logits (rows x vocab_size floats, 7.8 MB for BERT's vocabulary) stay
 * bounded whatever max_length is. */
#define SPARSE_ROWS 64

void bert_sparse_options_free(bert_sparse_options *o)
{
    if (!o) return;
    free(o->model);
    o->model = NULL;
}

int bert_sparse_options_parse(const char *json, size_t len, const char *fn, bert_sparse_options *out,
                              char **err)
{
    *err = NULL;
    memset(out, 0, sizeof *out);
    out->mode = BERT_SPARSE_DOCUMENT;
    json_doc *doc = NULL;
    if (bert_fn_options_parse(json, len, fn, "'{\"top_k\": 64, \"min_weight\": 0.1}'", &doc, err) != 0) return -1;
    int rc = -1;
    for (int c = bert_fn_options_first(doc); c >= 0; c = doc->nodes[c].next_sibling) {
        const json_node *n = &doc->nodes[c];
        if (strcmp(n->key, "model") == 0) {
            if (bert_fn_options_model(doc, c, fn, &out->model, err) != 0) goto done;
        } else if (strcmp(n->key, "top_k") == 0) {
            if (n->type != JSON_INTEGER || n->integer < 1) {
                *err = bert_errorf("%s: option \"top_k\" must be an integer of at least 1 (the heaviest "
                                   "terms kept), not %s; leave it out to keep every non-zero term", fn,
                                   n->text ? n->text : "that");
                goto done;
            }
            out->top_k = n->integer > 1000000000 ? 1000000000 : (int)n->integer;
        } else if (strcmp(n->key, "min_weight") == 0) {
            if ((n->type != JSON_INTEGER && n->type != JSON_REAL) || !(n->number >= 0)) {
                *err = bert_errorf("%s: option \"min_weight\" must be a number of at least 0 (terms lighter "
                                   "than it are left out), not %s", fn, n->text ? n->text : "that");
                goto done;
            }
            out->min_weight = n->number;
        } else if (strcmp(n->key, "mode") == 0) {
            const char *mode = bert_json_str(doc, c, "");
            if (strcmp(mode, "document") == 0) {
                out->mode = BERT_SPARSE_DOCUMENT;
            } else if (strcmp(mode, "query") == 0) {
                out->mode = BERT_SPARSE_QUERY;
            } else {
                *err = bert_errorf("%s: option \"mode\" must be \"document\" (the masked-LM head's weights, "
                                   "the default) or \"query\" (the tokens weighted by idf.json, for the "
                                   "queries of document-only models), not '%s'", fn, mode);
                goto done;
            }
        } else {
            *err = bert_fn_options_unknown(fn, n->key, "\"model\", \"top_k\", \"min_weight\" and \"mode\"");
            goto done;
        }
    }
    rc = 0;
done:
    bert_json_free(doc);
    if (rc != 0) bert_sparse_options_free(out);
    return rc;
}

void bert_sparse_terms_free(bert_sparse_terms *t)
{
    if (!t || !t->terms) return;
    for (int i = 0; i < t->n; i++) free(t->terms[i].token);
    free(t->terms);
    t->terms = NULL;
    t->n = 0;
}

static int is_special(const bert_special_ids *sp, int32_t id)
{
    return id == sp->cls || id == sp->sep || id == sp->pad || id == sp->unk || id == sp->mask;
}

static int heaviest_first(const void *a, const void *b)
{
    const bert_sparse_term *x = a, *y = b;
    if (x->weight != y->weight) return x->weight > y->weight ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The terms of weights[0..n) that the options keep, sorted, with their
 * tokens; ids the tokenizer has no token for (a vocabulary padded past the
 * tokenizer's) are left out, as nothing tokenized can match them. */
static int collect_terms(const bert_entry *e, const float *weights, int n, const bert_sparse_options *o,
                         bert_sparse_terms *out)
{
    const bert_special_ids *sp = bert_tokenizer_specials(e->tokenizer);
    int count = 0;
    for (int v = 0; v < n; v++)
        count += weights[v] > 0 && weights[v] >= o->min_weight && !is_special(sp, v);
    if (count == 0) return 0;
    out->terms = calloc((size_t)count, sizeof *out->terms);
    if (!out->terms) return -1;
    for (int v = 0; v < n; v++) {
        if (!(weights[v] > 0 && weights[v] >= o->min_weight) || is_special(sp, v) ||
            !bert_tokenizer_token(e->tokenizer, v))
            continue;
        out->terms[out->n].id = v;
        out->terms[out->n++].weight = weights[v];
    }
    qsort(out->terms, (size_t)out->n, sizeof *out->terms, heaviest_first);
    if (o->top_k > 0 && out->n > o->top_k) out->n = o->top_k;
    for (int i = 0; i < out->n; i++) {
        out->terms[i].token = strdup(bert_tokenizer_token(e->tokenizer, out->terms[i].id));
        if (!out->terms[i].token) return -1;
    }
    return 0;
}

/* SPLADE's weights: the max over every position ([CLS] and [SEP] included,
 * as the attention mask has them) of log(1 + relu(logit)), into w[vocab]. */
static int document_weights(bert_entry *e, const bert_ids *ids, float *w, bert_interrupt_fn interrupted,
                            void *ctx, char **err)
{
    const bert_model *m = e->model;
    const int vocab = m->cfg.vocab_size, n = (int)ids->len;
    int len = n;
    const float *hidden = bert_entry_encode(e, ids->ids, NULL, &len, 1, interrupted, ctx, err);
    if (!hidden) return -1;
    const int chunk = n < SPARSE_ROWS ? n : SPARSE_ROWS;
    float *logits = malloc((size_t)chunk * (size_t)vocab * sizeof *logits);
    if (!logits) {
        *err = bert_errorf("out of memory: the sparse vector of %d tokens needs %zu MB of logits", n,
                           (size_t)chunk * (size_t)vocab * sizeof *logits >> 20);
        return -1;
    }
    int rows[SPARSE_ROWS];
    /* relu first: the max starts at 0, and log1p is monotonic, so
     * log1p(max(0, max_i logit_ij)) is max_i log1p(relu(logit_ij)). */
    for (int v = 0; v < vocab; v++) w[v] = 0;
    int rc = -1;
    for (int start = 0; start < n; start += chunk) {
        if (interrupted && interrupted(ctx)) {
            *err = bert_errorf("interrupted");
            goto done;
        }
        int count = n - start < chunk ? n - start : chunk;
        for (int i = 0; i < count; i++) rows[i] = start + i;
        if (bert_mlm_logits(m, e->scratch, hidden, rows, count, logits, err) != 0) goto done;
        for (int i = 0; i < count; i++) {
            const float *row = logits + (size_t)i * (size_t)vocab;
            for (int v = 0; v < vocab; v++)
                if (row[v] > w[v]) w[v] = row[v];
        }
    }
    for (int v = 0; v < vocab; v++) w[v] = (float)log1p((double)w[v]);
    rc = 0;
done:
    free(logits);
    return rc;
}

/* The query side of document-only models: weight idf.json[token] (0 for a
 * token it lacks) or 1 without the file, for each token the text holds. */
static int query_weights(bert_entry *e, const bert_ids *ids, float *w, int vocab, char **err)
{
    const json_doc *idf = NULL;
    int has = bert_model_files_json(e->files, "idf.json", 0, &idf, err);
    if (has < 0) return -1;
    for (int v = 0; v < vocab; v++) w[v] = 0;
    for (size_t i = 0; i < ids->len; i++) {
        int32_t id = ids->ids[i];
        if (id < 0 || id >= vocab || w[id] != 0) continue;
        const char *token = bert_tokenizer_token(e->tokenizer, id);
        if (!has) w[id] = 1;
        else if (token) w[id] = (float)bert_json_real(idf, bert_json_member(idf, 0, token), 0);
    }
    return 0;
}

int bert_pipeline_sparse(bert_entry *e, const char *text, size_t len, const bert_sparse_options *o,
                         bert_sparse_terms *out, bert_interrupt_fn interrupted, void *ctx, char **err)
{
    *err = NULL;
    memset(out, 0, sizeof *out);
    bert_ids ids = {0};
    float *weights = NULL;
    int rc = -1;
    if (bert_pipeline_tokenize(e, text, len, 0, &ids, err) != 0) goto done;
    int vocab;
    if (o->mode == BERT_SPARSE_QUERY) {
        /* No forward pass: the tokenizer's vocabulary is the whole space. */
        vocab = (int)bert_tokenizer_vocab_size(e->tokenizer);
    } else {
        if (bert_entry_need_model(e, err) != 0) goto done;
        if (!bert_model_has_mlm_head(e->model)) {
            *err = bert_errorf("model '%s' has no masked-language-model head (cls.predictions.*, lm_head.* or "
                               "vocab_projector.*): sparse vectors need a checkpoint saved as BertForMaskedLM, "
                               "DistilBertForMaskedLM, RobertaForMaskedLM or MPNetForMaskedLM, such as "
                               "naver/splade-v3 or opensearch-project/opensearch-neural-sparse-encoding-doc-v2-"
                               "distill; this model's task is %s (for the queries of a document-only model "
                               "pass '{\"mode\": \"query\"}', which needs its tokenizer only)",
                               e->name, bert_pipeline_task_phrase(e));
            goto done;
        }
        vocab = e->model->cfg.vocab_size;
    }
    weights = malloc((size_t)vocab * sizeof *weights);
    if (!weights) goto oom;
    if (o->mode == BERT_SPARSE_QUERY ? query_weights(e, &ids, weights, vocab, err)
                                     : document_weights(e, &ids, weights, interrupted, ctx, err))
        goto done;
    if (collect_terms(e, weights, vocab, o, out) != 0) goto oom;
    rc = 0;
    goto done;
oom:
    *err = bert_errorf("out of memory computing a sparse vector");
done:
    if (rc != 0) bert_sparse_terms_free(out);
    bert_ids_free(&ids);
    free(weights);
    return rc;
}
