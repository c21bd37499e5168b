/*
 * pipeline.c - see pipeline.h.
 */
#include "pipeline.h"
#include "../models/entry.h"
#include "../models/model_dir.h"

#include "../base/error.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Tokens packed into one encoder call by bert_pipeline_embed_batch (or one
 * sequence, when max_length is longer).  512 rows already share each weight
 * row among enough inputs; larger batches only push the layer's activations
 * out of cache: at int8 with AMX, one thread, 4,096 tokens a call took 1.27 s
 * for 301 sentences and 4.87 s for 24 texts of ~440 tokens, 512 tokens 0.92 s
 * and 3.68 s (float32 alike either way). */
#define BATCH_TOKENS 512

/* Most tokens bert_fill_mask decodes for one call: every candidate carries
 * the whole sequence, so masks x top_k x length must be bounded, or a text
 * of masks with a large top_k takes minutes and gigabytes. */
#define FILL_MASK_MAX_TOKENS ((size_t)1 << 22)

static int need_special(const bert_entry *e, int32_t id, const char *what, char **err)
{
    if (id >= 0) return 0;
    *err = bert_errorf("model '%s': its %s has no %s token, which this function needs", e->name,
                       bert_tokenizer_source(e->tokenizer), what);
    return -1;
}

int bert_pipeline_need_layout(const bert_entry *e, char **err)
{
    const char *missing = bert_tokenizer_missing_special(e->tokenizer);
    if (!missing) return 0;
    *err = bert_errorf("model '%s': its %s has no %s token, which every input of this model needs: use the %s "
                       "that belongs to the model", e->name, bert_tokenizer_source(e->tokenizer), missing,
                       bert_tokenizer_source(e->tokenizer));
    return -1;
}

/* What a model's heads make it: the `task` column of bert_models and the
 * errors of functions whose head it lacks. */
const char *bert_pipeline_task_phrase(const bert_entry *e)
{
    const char *task = bert_model_task(e->model);
    return task ? task : "none (a bare encoder)";
}

int bert_pipeline_tokenize(bert_entry *e, const char *text, size_t len, int allow_long,
                      bert_ids *out, char **err)
{
    *err = NULL;
    out->len = 0;
    if (bert_entry_need_tokenizer(e, err) != 0 || bert_pipeline_need_layout(e, err) != 0) return -1;
    /* The template's opening special tokens ([CLS], or none for T5 and
     * XLNet) and the pieces that fit before its closing ones, plus one to
     * tell that the text was longer: tokenizing stops there, so memory stays
     * bounded by max_length whatever the text's size. */
    size_t after = (size_t)bert_tokenizer_add_specials(e->tokenizer, 1, NULL, NULL);
    size_t limit = (size_t)e->max_length > after ? (size_t)e->max_length - after : 0;
    size_t stop = e->truncate || !allow_long ? limit + 1 : SIZE_MAX;
    if (e->prompt) {
        /* The prompt and the text are tokenized as one, as
         * sentence-transformers does: a prompt need not end between words. */
        e->prompted.len = 0;
        if (bert_text_add(&e->prompted, e->prompt, strlen(e->prompt)) != 0 ||
            bert_text_add(&e->prompted, text, len) != 0) {
            e->prompted.failed = 0;
            *err = bert_errorf("out of memory tokenizing a text of %zu bytes", len);
            return -1;
        }
        text = e->prompted.s;
        len = e->prompted.len;
    }
    if (bert_tokenizer_add_specials(e->tokenizer, 0, out, NULL) < 0 ||
        bert_tokenizer_encode(e->tokenizer, text, len, stop, out, &e->tokenizing) != 0) {
        *err = bert_errorf("out of memory tokenizing a text of %zu bytes", len);
        return -1;
    }
    if (out->len > limit) {
        if (e->truncate) {
            out->len = limit;
        } else if (!allow_long) {
            *err = bert_errorf("the text is longer than max_length %d tokens of model '%s': "
                               "shorten it, or register the model with '{\"truncate\": true}' to cut "
                               "it silently", e->max_length, e->name);
            return -1;
        }
    }
    if (bert_tokenizer_add_specials(e->tokenizer, 1, out, NULL) < 0) {
        *err = bert_errorf("out of memory tokenizing a text of %zu bytes", len);
        return -1;
    }
    return 0;
}

static int pool_one(bert_entry *e, const float *hidden, int len, float *out, char **err)
{
    if (e->model->dense_w) {
        /* Pooling the encoder's states would skip the projection the model
         * was trained through: a vector that silently means nothing. */
        *err = bert_errorf("model '%s' is a token-vector (ColBERT) model: its modules.json projects every token "
                           "through a Dense module and pools none; use bert_token_vectors(text, 'query' | "
                           "'document') and bert_maxsim instead", e->name);
        return -1;
    }
    if (bert_pool(e->model, hidden, len, e->pooling, e->normalize, out) == 0) return 0;
    *err = bert_errorf("model '%s' has no pooler weights (pooler.dense.*): register it with "
                       "'{\"pooling\": \"cls\"}' or \"mean\" instead", e->name);
    return -1;
}

int bert_pipeline_embed(bert_entry *e, const char *text, size_t len, float *out,
                   bert_interrupt_fn interrupted, void *ctx, char **err)
{
    /* The entry's id buffer: grown once, then reused by every call. */
    if (bert_pipeline_tokenize(e, text, len, 0, &e->ids, err) != 0 || bert_entry_need_model(e, err) != 0) return -1;
    int n = (int)e->ids.len;
    const float *hidden = bert_entry_encode(e, e->ids.ids, NULL, &n, 1, interrupted, ctx, err);
    if (!hidden) return -1;
    return pool_one(e, hidden, n, out, err);
}

typedef struct {
    int index;
    int length;
    size_t offset;
} seq_ref;

static int by_length(const void *a, const void *b)
{
    const seq_ref *x = a, *y = b;
    if (x->length != y->length) return x->length < y->length ? -1 : 1;
    return x->index - y->index;
}

/* Called with each sequence's hidden states [len x H] as a packed batch comes
 * out of the encoder; `index` is its place in the caller's order. */
typedef int (*sequence_fn)(bert_entry *e, const float *hidden, int len, int index, void *arg, char **err);

/* Runs the n tokenized sequences refs[] (token ids in all, segment ids in
 * types or NULL) through the encoder in batches of up to BATCH_TOKENS tokens,
 * shortest first so that the lengths of one batch are alike, and hands every
 * sequence to fn. */
static int encode_sorted(bert_entry *e, const bert_ids *all, const bert_ids *types, seq_ref *refs, int n,
                         sequence_fn fn, void *arg, bert_interrupt_fn interrupted, void *ctx, char **err)
{
    if (bert_entry_need_model(e, err) != 0) return -1;
    qsort(refs, (size_t)n, sizeof *refs, by_length);
    size_t budget = (size_t)e->max_length > BATCH_TOKENS ? (size_t)e->max_length : BATCH_TOKENS;
    int32_t *packed = malloc(budget * sizeof *packed);
    int32_t *packed_types = types ? malloc(budget * sizeof *packed_types) : NULL;
    int *lengths = malloc((size_t)n * sizeof *lengths);
    int rc = -1;
    if (!packed || !lengths || (types && !packed_types)) {
        *err = bert_errorf("out of memory encoding %d texts", n);
        goto done;
    }
    const int hidden_size = e->model->cfg.hidden_size;
    for (int start = 0; start < n;) {
        size_t tokens = 0;
        int count = 0;
        while (start + count < n && tokens + (size_t)refs[start + count].length <= budget) {
            const seq_ref *r = &refs[start + count];
            memcpy(packed + tokens, all->ids + r->offset, (size_t)r->length * sizeof *packed);
            if (types) memcpy(packed_types + tokens, types->ids + r->offset, (size_t)r->length * sizeof *packed);
            lengths[count++] = r->length;
            tokens += (size_t)r->length;
        }
        const float *hidden = bert_entry_encode(e, packed, packed_types, lengths, count, interrupted, ctx, err);
        if (!hidden) goto done;
        for (int i = 0; i < count; i++) {
            if (fn(e, hidden, lengths[i], refs[start + i].index, arg, err) != 0) goto done;
            hidden += (size_t)lengths[i] * (size_t)hidden_size;
        }
        start += count;
    }
    rc = 0;
done:
    free(packed);
    free(packed_types);
    free(lengths);
    return rc;
}

static int pool_into(bert_entry *e, const float *hidden, int len, int index, void *arg, char **err)
{
    float *out = arg;
    return pool_one(e, hidden, len, out + (size_t)index * (size_t)e->model->cfg.hidden_size, err);
}

int bert_pipeline_embed_batch(bert_entry *e, const char *const *texts, const size_t *lens, int n,
                         float *out, bert_interrupt_fn interrupted, void *ctx, char **err)
{
    *err = NULL;
    if (n <= 0) return 0;
    bert_ids all = {0}, one = {0};
    seq_ref *refs = malloc((size_t)n * sizeof *refs);
    int rc = -1;
    if (!refs) goto oom;
    for (int i = 0; i < n; i++) {
        if (bert_pipeline_tokenize(e, texts[i], lens[i], 0, &one, err) != 0) goto done;
        refs[i].index = i;
        refs[i].length = (int)one.len;
        refs[i].offset = all.len;
        for (size_t j = 0; j < one.len; j++)
            if (bert_ids_push(&all, one.ids[j]) != 0) goto oom;
    }
    rc = encode_sorted(e, &all, NULL, refs, n, pool_into, out, interrupted, ctx, err);
    goto done;
oom:
    *err = bert_errorf("out of memory embedding %d texts", n);
done:
    bert_ids_free(&all);
    bert_ids_free(&one);
    free(refs);
    return rc;
}

void bert_fill_mask_result_free(fill_mask_result *r)
{
    if (!r || !r->items) return;
    for (int i = 0; i < r->n_masks * r->top_k; i++) {
        free(r->items[i].token_str);
        free(r->items[i].sequence);
    }
    free(r->items);
    r->items = NULL;
}

/* The top_k entries of probs[0..n), best first, into ids/scores. */
static void top_k_of(const double *probs, int n, int k, int32_t *ids, double *scores)
{
    int filled = 0;
    for (int v = 0; v < n; v++) {
        double p = probs[v];
        if (filled == k && p <= scores[k - 1]) continue;
        int at = filled < k ? filled++ : k - 1;
        while (at > 0 && scores[at - 1] < p) {
            scores[at] = scores[at - 1];
            ids[at] = ids[at - 1];
            at--;
        }
        scores[at] = p;
        ids[at] = v;
    }
}

int bert_pipeline_fill_mask(bert_entry *e, const char *text, size_t len, int top_k,
                       fill_mask_result *out, bert_interrupt_fn interrupted, void *ctx, char **err)
{
    *err = NULL;
    memset(out, 0, sizeof *out);
    if (top_k < 1) {
        *err = bert_errorf("top_k must be at least 1 (it is %d)", top_k);
        return -1;
    }
    bert_ids ids = {0};
    int *rows = NULL;
    float *logits = NULL;
    double *probs = NULL;
    int32_t *filled = NULL;
    int rc = -1;
    if (bert_pipeline_tokenize(e, text, len, 0, &ids, err) != 0) goto done;
    int32_t mask = bert_tokenizer_specials(e->tokenizer)->mask;
    if (need_special(e, mask, "[MASK]", err) != 0) goto done;
    int n_masks = 0;
    for (size_t i = 0; i < ids.len; i++) n_masks += ids.ids[i] == mask;
    if (n_masks == 0) {
        const char *mask_text = bert_tokenizer_token(e->tokenizer, mask);
        *err = bert_errorf("no %s in the text: write %s where the word to predict goes, as in "
                           "'Paris is the %s of France.'%s", mask_text, mask_text, mask_text,
                           e->truncate ? " (text past max_length is cut off before the search)" : "");
        goto done;
    }
    if (bert_entry_need_model(e, err) != 0) goto done;
    const bert_model *m = e->model;
    if (!bert_model_has_mlm_head(m)) {
        *err = bert_errorf("model '%s' has no masked-language-model head (cls.predictions.*, lm_head.*, "
                           "vocab_projector.*, generator_lm_head.* or head.* and decoder.*): fill-mask needs a "
                           "checkpoint saved as BertForMaskedLM, BertForPreTraining, DistilBertForMaskedLM, "
                           "RobertaForMaskedLM, MPNetForMaskedLM, ElectraForMaskedLM (a generator), "
                           "ModernBertForMaskedLM, NomicBertForPreTraining or NewForMaskedLM, "
                           "such as bert-base-uncased or roberta-base; "
                           "this model's task is %s",
                           e->name, bert_pipeline_task_phrase(e));
        goto done;
    }
    const int vocab = m->cfg.vocab_size;
    if (top_k > vocab) top_k = vocab;
    if ((size_t)n_masks * (size_t)top_k * ids.len > FILL_MASK_MAX_TOKENS) {
        *err = bert_errorf("%d [MASK]s x top_k %d over %zu tokens asks for more than %zu candidate "
                           "tokens: lower top_k or use fewer masks", n_masks, top_k, ids.len,
                           FILL_MASK_MAX_TOKENS);
        goto done;
    }
    rows = malloc((size_t)n_masks * sizeof *rows);
    logits = malloc((size_t)n_masks * (size_t)vocab * sizeof *logits);
    probs = malloc((size_t)vocab * sizeof *probs);
    filled = malloc(ids.len * sizeof *filled);
    out->items = calloc((size_t)n_masks * (size_t)top_k, sizeof *out->items);
    if (!rows || !logits || !probs || !filled || !out->items) goto oom;
    out->n_masks = n_masks;
    out->top_k = top_k;
    for (size_t i = 0, j = 0; i < ids.len; i++)
        if (ids.ids[i] == mask) rows[j++] = (int)i;

    int n = (int)ids.len;
    const float *hidden = bert_entry_encode(e, ids.ids, NULL, &n, 1, interrupted, ctx, err);
    if (!hidden || bert_mlm_logits(m, e->scratch, hidden, rows, n_masks, logits, err) != 0) goto done;

    int32_t *best = malloc((size_t)top_k * sizeof *best);
    double *best_p = malloc((size_t)top_k * sizeof *best_p);
    if (!best || !best_p) { free(best); free(best_p); goto oom; }
    for (int k = 0; k < n_masks; k++) {
        const float *row = logits + (size_t)k * (size_t)vocab;
        double max = row[0], sum = 0;
        for (int v = 1; v < vocab; v++) if (row[v] > max) max = row[v];
        for (int v = 0; v < vocab; v++) sum += (probs[v] = exp((double)row[v] - max));
        for (int v = 0; v < vocab; v++) probs[v] /= sum;
        top_k_of(probs, vocab, top_k, best, best_p);
        for (int r = 0; r < top_k; r++) {
            fill_mask_candidate *c = &out->items[k * top_k + r];
            c->mask_index = k;
            c->rank = r + 1;
            c->token = best[r];
            c->score = best_p[r];
            memcpy(filled, ids.ids, ids.len * sizeof *filled);
            filled[rows[k]] = best[r];
            /* Hugging Face keeps the other masks (and so every special token)
             * in the sequence when there are several, to show where they are. */
            c->token_str = bert_tokenizer_decode(e->tokenizer, &best[r], 1, 0);
            c->sequence = bert_tokenizer_decode(e->tokenizer, filled, ids.len, n_masks == 1);
            if (!c->token_str || !c->sequence) { free(best); free(best_p); goto oom; }
        }
    }
    free(best);
    free(best_p);
    rc = 0;
    goto done;
oom:
    *err = bert_errorf("out of memory filling masks");
done:
    if (rc != 0) bert_fill_mask_result_free(out);
    bert_ids_free(&ids);
    free(rows);
    free(logits);
    free(probs);
    free(filled);
    return rc;
}

/* Hugging Face's "longest_first" pair truncation as the Rust tokenizer does
 * it: when the shorter segment fits in half the room, only the longer one is
 * cut; otherwise both get half, the longer one (the second on a tie) the odd
 * token. */
static void truncate_pair(size_t *la, size_t *lb, size_t room)
{
    if (*la + *lb <= room) return;
    size_t *shorter = *la > *lb ? lb : la, *longer = *la > *lb ? la : lb;
    if (2 * *shorter <= room) {
        *longer = room - *shorter;
    } else {
        *shorter = room / 2;
        *longer = room / 2 + room % 2;
    }
}

/* The pair through the file's pair template ([CLS] a [SEP] b [SEP] with
 * segment ids 0 then 1, RoBERTa's <s> a </s></s> b </s>, XLNet's
 * a <sep> b <sep> <cls>), appended to ids and types, cut to the entry's
 * max_length as `how` says. */
static int tokenize_pair(bert_entry *e, const char *a, size_t alen, const char *b, size_t blen,
                         bert_pair_truncation how, bert_ids *ids, bert_ids *types, char **err)
{
    if (bert_entry_need_tokenizer(e, err) != 0 || bert_pipeline_need_layout(e, err) != 0) return -1;
    bert_ids ia = {0}, ib = {0};
    int rc = -1;
    size_t fixed = bert_tokenizer_num_special(e->tokenizer, 1);
    size_t room = (size_t)e->max_length > fixed ? (size_t)e->max_length - fixed : 0;
    /* Neither segment can keep more than `room` tokens, so reading one past
     * that decides every truncation while bounding the memory. */
    if (bert_tokenizer_encode(e->tokenizer, a, alen, room + 1, &ia, NULL) != 0 ||
        bert_tokenizer_encode(e->tokenizer, b, blen, room + 1, &ib, NULL) != 0) goto oom;
    size_t la = ia.len, lb = ib.len;
    if (la + lb > room) {
        if (!e->truncate) {
            *err = bert_errorf("the text pair is longer than max_length %d tokens of model '%s': "
                               "shorten it, or register the model with '{\"truncate\": true}'",
                               e->max_length, e->name);
            goto done;
        }
        if (how == BERT_PAIR_ONLY_FIRST) {
            /* The Rust tokenizer's only_first fails when the second text
             * alone leaves no room; so must we. */
            if (lb >= room) {
                *err = bert_errorf("the second text of a pair (%zu tokens) leaves no room for the first "
                                   "within max_length %d of model '%s': shorten it", lb, e->max_length,
                                   e->name);
                goto done;
            }
            la = room - lb;
        } else {
            truncate_pair(&la, &lb, room);
        }
    }
    /* An empty b is still a pair: it needs a pointer, not NULL. */
    static const int32_t empty[1] = {0};
    if (bert_tokenizer_post_process(e->tokenizer, ia.ids, la, ib.ids ? ib.ids : empty, lb, ids, types) != 0)
        goto oom;
    rc = 0;
    goto done;
oom:
    *err = bert_errorf("out of memory tokenizing a text pair");
done:
    bert_ids_free(&ia);
    bert_ids_free(&ib);
    return rc;
}

int bert_pipeline_tokenize_pair(bert_entry *e, const char *a, size_t alen, const char *b, size_t blen,
                                bert_pair_truncation how, bert_ids *ids, bert_ids *types, char **err)
{
    *err = NULL;
    ids->len = types->len = 0;
    return tokenize_pair(e, a, alen, b, blen, how, ids, types, err);
}

int bert_pipeline_next_sentence(bert_entry *e, const char *a, size_t alen, const char *b, size_t blen,
                           double *prob, bert_interrupt_fn interrupted, void *ctx, char **err)
{
    *err = NULL;
    bert_ids ids = {0}, types = {0};
    int rc = -1;
    if (bert_entry_need_model(e, err) != 0) goto done;
    const bert_model *m = e->model;
    if (!bert_model_has_nsp_head(m)) {
        *err = bert_errorf("model '%s' has no next-sentence-prediction head (cls.seq_relationship.* "
                           "and pooler.dense.*): it needs a checkpoint saved as BertForPreTraining "
                           "or BertForNextSentencePrediction, such as bert-base-uncased; this model's "
                           "task is %s", e->name, bert_pipeline_task_phrase(e));
        goto done;
    }
    if (tokenize_pair(e, a, alen, b, blen, BERT_PAIR_LONGEST_FIRST, &ids, &types, err) != 0) goto done;
    int n = (int)ids.len;
    const float *hidden = bert_entry_encode(e, ids.ids, types.ids, &n, 1, interrupted, ctx, err);
    if (!hidden) goto done;
    if (bert_nsp_probability(m, hidden, prob) != 0) {
        *err = bert_errorf("model '%s': the next-sentence head could not be evaluated", e->name);
        goto done;
    }
    rc = 0;
done:
    bert_ids_free(&ids);
    bert_ids_free(&types);
    return rc;
}

/* ---- sequence classification and cross-encoders ----------------------------- */

int bert_pipeline_need_classifier(bert_entry *e, const char *fn, char **err)
{
    if (bert_entry_need_model(e, err) != 0) return -1;
    if (bert_model_has_classifier(e->model)) return 0;
    *err = bert_errorf("model '%s' has no sequence-classification head (classifier.*): %s needs a "
                       "checkpoint saved as BertForSequenceClassification, DistilBertForSequenceClassification, "
                       "RobertaForSequenceClassification, XLMRobertaForSequenceClassification, "
                       "MPNetForSequenceClassification, ElectraForSequenceClassification, "
                       "ModernBertForSequenceClassification, NomicBertForSequenceClassification or "
                       "NewForSequenceClassification (a fine-tuned classifier or cross-encoder); "
                       "this model's task is %s", e->name, fn, bert_pipeline_task_phrase(e));
    return -1;
}

/* The text-classification pipeline's default function: none for
 * regression, sigmoid for multi-label or one-label models, else softmax. */
static void apply_pipeline_function(const bert_model *m, const float *logits, double *scores)
{
    const int n = m->head.num_labels;
    const bert_problem_type p = m->head.problem;
    if (p == BERT_PROBLEM_REGRESSION) {
        for (int i = 0; i < n; i++) scores[i] = logits[i];
    } else if (p == BERT_PROBLEM_MULTI_LABEL || n == 1) {
        for (int i = 0; i < n; i++) scores[i] = 1.0 / (1.0 + exp(-(double)logits[i]));
    } else {
        double max = logits[0], sum = 0;
        for (int i = 1; i < n; i++) if (logits[i] > max) max = logits[i];
        for (int i = 0; i < n; i++) sum += (scores[i] = exp((double)logits[i] - max));
        for (int i = 0; i < n; i++) scores[i] /= sum;
    }
}

typedef struct {
    int label;
    double score;
} ranked_label;

/* Best first; equal scores keep the label order (Python's stable sort). */
static int by_score(const void *a, const void *b)
{
    const ranked_label *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->label - y->label;
}

void bert_classify_result_free(classify_result *r)
{
    if (!r) return;
    free(r->order);
    free(r->scores);
    r->order = NULL;
    r->scores = NULL;
}

int bert_pipeline_classify(bert_entry *e, const char *text, size_t len, const char *pair, size_t pair_len,
                      classify_result *out, bert_interrupt_fn interrupted, void *ctx, char **err)
{
    *err = NULL;
    memset(out, 0, sizeof *out);
    const char *fn = pair ? "bert_classify_pair" : "bert_classify";
    if (bert_pipeline_need_classifier(e, fn, err) != 0) return -1;
    const bert_model *m = e->model;
    const int n_labels = m->head.num_labels;
    bert_ids ids = {0}, types = {0};
    float *logits = malloc((size_t)n_labels * sizeof *logits);
    ranked_label *ranked = malloc((size_t)n_labels * sizeof *ranked);
    out->order = malloc((size_t)n_labels * sizeof *out->order);
    out->scores = malloc((size_t)n_labels * sizeof *out->scores);
    int rc = -1;
    if (!logits || !ranked || !out->order || !out->scores) {
        *err = bert_errorf("out of memory classifying a text");
        goto done;
    }
    if (pair ? tokenize_pair(e, text, len, pair, pair_len, BERT_PAIR_LONGEST_FIRST, &ids, &types, err)
             : bert_pipeline_tokenize(e, text, len, 0, &ids, err))
        goto done;
    int n = (int)ids.len;
    const float *hidden = bert_entry_encode(e, ids.ids, pair ? types.ids : NULL, &n, 1, interrupted, ctx, err);
    if (!hidden || bert_classifier_logits(m, e->scratch, hidden, n, logits, err) != 0) goto done;
    apply_pipeline_function(m, logits, out->scores);
    for (int i = 0; i < n_labels; i++) ranked[i] = (ranked_label){i, out->scores[i]};
    qsort(ranked, (size_t)n_labels, sizeof *ranked, by_score);
    for (int i = 0; i < n_labels; i++) out->order[i] = ranked[i].label;
    out->n = n_labels;
    out->labels = (const char *const *)m->head.labels;
    rc = 0;
done:
    if (rc != 0) bert_classify_result_free(out);
    bert_ids_free(&ids);
    bert_ids_free(&types);
    free(logits);
    free(ranked);
    return rc;
}

/* A cross-encoder: one label, and an activation we can apply. */
static int need_cross_encoder(bert_entry *e, const char *fn, char **err)
{
    if (bert_pipeline_need_classifier(e, fn, err) != 0) return -1;
    const bert_head_config *h = &e->model->head;
    if (h->num_labels != 1) {
        *err = bert_errorf("%s needs a cross-encoder with one output (a relevance score); model '%s' "
                           "classifies into %d labels (%s, ...): use bert_classify_pair for it",
                           fn, e->name, h->num_labels, h->labels[0]);
        return -1;
    }
    if (h->activation == BERT_CE_UNSUPPORTED) {
        *err = bert_errorf("model '%s': config.json names the cross-encoder activation %s, which is not "
                           "supported (only torch.nn.Sigmoid and torch.nn.Identity are)", e->name,
                           h->activation_name);
        return -1;
    }
    return 0;
}

/* sentence-transformers' CrossEncoder: activation_fn from config.json,
 * Sigmoid for a one-label model when it names none. */
static double cross_encoder_score(const bert_model *m, float logit)
{
    if (m->head.activation == BERT_CE_IDENTITY) return logit;
    return 1.0 / (1.0 + exp(-(double)logit));
}

int bert_pipeline_rerank(bert_entry *e, const char *query, size_t qlen, const char *doc, size_t dlen,
                    double *score, bert_interrupt_fn interrupted, void *ctx, char **err)
{
    *err = NULL;
    if (need_cross_encoder(e, "bert_rerank", err) != 0) return -1;
    bert_ids ids = {0}, types = {0};
    int rc = -1;
    if (tokenize_pair(e, query, qlen, doc, dlen, BERT_PAIR_LONGEST_FIRST, &ids, &types, err) != 0) goto done;
    int n = (int)ids.len;
    float logit;
    const float *hidden = bert_entry_encode(e, ids.ids, types.ids, &n, 1, interrupted, ctx, err);
    if (!hidden || bert_classifier_logits(e->model, e->scratch, hidden, n, &logit, err) != 0) goto done;
    *score = cross_encoder_score(e->model, logit);
    rc = 0;
done:
    bert_ids_free(&ids);
    bert_ids_free(&types);
    return rc;
}

/* Where a sequence's logits go: row `index` of the caller's array. */
static int logits_into(bert_entry *e, const float *hidden, int len, int index, void *arg, char **err)
{
    float *rows = arg;
    return bert_classifier_logits(e->model, e->scratch, hidden, len, rows + (size_t)index * (size_t)e->model->head.num_labels,
                                  err);
}

int bert_pipeline_pair_logits(bert_entry *e, const char *fn, const char *a, size_t alen, const char *const *bs,
                              const size_t *blens, int n, bert_pair_truncation how, float *logits,
                              bert_interrupt_fn interrupted, void *ctx, char **err)
{
    *err = NULL;
    if (n <= 0) return 0;
    if (bert_pipeline_need_classifier(e, fn, err) != 0) return -1;
    bert_ids all = {0}, types = {0};
    seq_ref *refs = malloc((size_t)n * sizeof *refs);
    int rc = -1;
    if (!refs) {
        *err = bert_errorf("out of memory scoring %d text pairs", n);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        refs[i].index = i;
        refs[i].offset = all.len;
        if (tokenize_pair(e, a, alen, bs[i], blens[i], how, &all, &types, err) != 0) goto done;
        refs[i].length = (int)(all.len - refs[i].offset);
    }
    rc = encode_sorted(e, &all, &types, refs, n, logits_into, logits, interrupted, ctx, err);
done:
    bert_ids_free(&all);
    bert_ids_free(&types);
    free(refs);
    return rc;
}

int bert_pipeline_rerank_batch(bert_entry *e, const char *query, size_t qlen, const char *const *docs,
                          const size_t *lens, int n, double *scores, bert_interrupt_fn interrupted,
                          void *ctx, char **err)
{
    *err = NULL;
    if (n <= 0) return 0;
    if (need_cross_encoder(e, "bert_rerank_each", err) != 0) return -1;
    float *logits = malloc((size_t)n * sizeof *logits);
    if (!logits) {
        *err = bert_errorf("out of memory reranking %d documents", n);
        return -1;
    }
    int rc = bert_pipeline_pair_logits(e, "bert_rerank_each", query, qlen, docs, lens, n, BERT_PAIR_LONGEST_FIRST,
                                       logits, interrupted, ctx, err);
    for (int i = 0; rc == 0 && i < n; i++) scores[i] = cross_encoder_score(e->model, logits[i]);
    free(logits);
    return rc;
}
