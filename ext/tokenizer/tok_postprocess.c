/*
 * tok_postprocess.c - tokenizer.json's post_processor: the special tokens
 * around one text or a pair, their token type ids, and the trimming of the
 * offsets of byte-level tokens (trim_offsets).
 *
 * Every kind is read into one template per case (as TemplateProcessing
 * writes it): BertProcessing is [CLS] A [SEP] / [CLS] A [SEP] B [SEP] with
 * B's part typed 1; RobertaProcessing <s> A </s> / <s> A </s> </s> B </s>,
 * all typed 0 (as the Rust library gives them); ByteLevel adds nothing but
 * trims offsets.
 */
#include "tok_internal.h"

#include "../base/buffer.h"
#include "../base/error.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static void free_items(tok_template_item *items, size_t n)
{
    for (size_t i = 0; i < n; i++) free(items[i].ids);
    free(items);
}

void tok_post_free(tok_post *p)
{
    free_items(p->single, p->n_single);
    free_items(p->pair, p->n_pair);
    memset(p, 0, sizeof *p);
}

/* Appends an item: a sequence (1 for A, 2 for B) or, with sequence 0, the
 * special token `id` (skipped when the tokenizer lacks it). */
static int add_item(tok_template_item **items, size_t *n, int sequence, const int32_t *ids, size_t n_ids,
                    int32_t type_id)
{
    if (!sequence && (n_ids == 0 || ids[0] < 0)) return 0;
    tok_template_item *grown = realloc(*items, (*n + 1) * sizeof *grown);
    if (!grown) return -1;
    *items = grown;
    tok_template_item *it = &grown[*n];
    memset(it, 0, sizeof *it);
    it->sequence = sequence;
    it->type_id = type_id;
    if (n_ids) {
        if (!(it->ids = malloc(n_ids * sizeof *it->ids))) return -1;
        memcpy(it->ids, ids, n_ids * sizeof *ids);
        it->n_ids = n_ids;
    }
    (*n)++;
    return 0;
}

/* BertProcessing's and RobertaProcessing's layouts, and MPNet's: RoBERTa's
 * two separators with BERT's type ids. */
static int fixed_layout(tok_post *p, int32_t cls, int32_t sep, int two_seps, int32_t pair_type)
{
    if (add_item(&p->single, &p->n_single, 0, &cls, 1, 0) || add_item(&p->single, &p->n_single, 1, NULL, 0, 0) ||
        add_item(&p->single, &p->n_single, 0, &sep, 1, 0))
        return -1;
    if (add_item(&p->pair, &p->n_pair, 0, &cls, 1, 0) || add_item(&p->pair, &p->n_pair, 1, NULL, 0, 0) ||
        add_item(&p->pair, &p->n_pair, 0, &sep, 1, 0))
        return -1;
    if (two_seps && add_item(&p->pair, &p->n_pair, 0, &sep, 1, 0)) return -1;
    if (add_item(&p->pair, &p->n_pair, 2, NULL, 0, pair_type) || add_item(&p->pair, &p->n_pair, 0, &sep, 1, pair_type))
        return -1;
    return 0;
}

/* ["[CLS]", 101]: the id of a BertProcessing/RobertaProcessing token. */
static int32_t pair_id(const json_doc *doc, int node, int32_t fallback)
{
    if (node < 0 || doc->nodes[node].type != JSON_ARRAY) return fallback;
    int c = doc->nodes[node].first_child;
    if (c >= 0) c = doc->nodes[c].next_sibling;
    return c >= 0 ? (int32_t)bert_json_int(doc, c, fallback) : fallback;
}

/* One list of TemplateProcessing ("single" or "pair"). */
static int read_template(const json_doc *doc, int list, int specials, tok_template_item **items, size_t *n,
                         const char *path, char **err)
{
    if (list < 0 || doc->nodes[list].type != JSON_ARRAY) return 0;
    for (int c = doc->nodes[list].first_child; c >= 0; c = doc->nodes[c].next_sibling) {
        int seq = bert_json_member(doc, c, "Sequence"), sp = bert_json_member(doc, c, "SpecialToken");
        if (seq >= 0) {
            const char *which = bert_json_str(doc, bert_json_member(doc, seq, "id"), "A");
            int32_t type = (int32_t)bert_json_int(doc, bert_json_member(doc, seq, "type_id"), 0);
            if (add_item(items, n, strcmp(which, "B") == 0 ? 2 : 1, NULL, 0, type) != 0) return -1;
        } else if (sp >= 0) {
            const char *name = bert_json_str(doc, bert_json_member(doc, sp, "id"), "");
            int32_t type = (int32_t)bert_json_int(doc, bert_json_member(doc, sp, "type_id"), 0);
            int def = specials >= 0 ? bert_json_member(doc, specials, name) : -1;
            int ids = def >= 0 ? bert_json_member(doc, def, "ids") : -1;
            if (ids < 0 || doc->nodes[ids].type != JSON_ARRAY) {
                *err = bert_errorf("%s: the post_processor's template names the special token \"%s\" but its "
                                   "special_tokens do not define it; use the tokenizer.json the model came with",
                                   path, name);
                return -1;
            }
            size_t k = 0, cnt = (size_t)bert_json_length(doc, ids);
            int32_t *v = malloc((cnt ? cnt : 1) * sizeof *v);
            if (!v) return -1;
            for (int i = doc->nodes[ids].first_child; i >= 0; i = doc->nodes[i].next_sibling)
                v[k++] = (int32_t)bert_json_int(doc, i, -1);
            int rc = add_item(items, n, 0, v, k, type);
            free(v);
            if (rc != 0) return -1;
        }
    }
    return 0;
}

static int read_processor(tok_post *p, const json_doc *doc, int pp, int32_t cls, int32_t sep, const char *path,
                          char **err)
{
    const char *type = bert_json_str(doc, bert_json_member(doc, pp, "type"), "");
    if (strcmp(type, "BertProcessing") == 0 || strcmp(type, "RobertaProcessing") == 0) {
        int roberta = type[0] == 'R';
        if (roberta) {
            p->trim_offsets = bert_json_bool(doc, bert_json_member(doc, pp, "trim_offsets"), 1);
            p->add_prefix_space = bert_json_bool(doc, bert_json_member(doc, pp, "add_prefix_space"), 1);
        }
        return fixed_layout(p, pair_id(doc, bert_json_member(doc, pp, "cls"), cls),
                            pair_id(doc, bert_json_member(doc, pp, "sep"), sep), roberta, roberta ? 0 : 1);
    }
    if (strcmp(type, "TemplateProcessing") == 0) {
        int specials = bert_json_member(doc, pp, "special_tokens");
        return read_template(doc, bert_json_member(doc, pp, "single"), specials, &p->single, &p->n_single, path, err) ||
               read_template(doc, bert_json_member(doc, pp, "pair"), specials, &p->pair, &p->n_pair, path, err)
                   ? -1 : 0;
    }
    if (strcmp(type, "ByteLevel") == 0) {
        p->trim_offsets = bert_json_bool(doc, bert_json_member(doc, pp, "trim_offsets"), 1);
        p->add_prefix_space = bert_json_bool(doc, bert_json_member(doc, pp, "add_prefix_space"), 1);
        return 0;
    }
    if (strcmp(type, "Sequence") == 0) {
        int list = bert_json_member(doc, pp, "processors");
        for (int c = list >= 0 ? doc->nodes[list].first_child : -1; c >= 0; c = doc->nodes[c].next_sibling)
            if (read_processor(p, doc, c, cls, sep, path, err) != 0) return -1;
        return 0;
    }
    *err = bert_errorf("%s: the post_processor \"%s\" is not supported (only BertProcessing, RobertaProcessing, "
                       "TemplateProcessing, ByteLevel and Sequence)", path, type);
    return -1;
}

int tok_post_load(tok_post *p, const json_doc *doc, int pp, int32_t cls, int32_t sep, const char *path, char **err)
{
    memset(p, 0, sizeof *p);
    int rc;
    if (pp == TOK_POST_ROBERTA) {
        p->trim_offsets = 1;
        rc = fixed_layout(p, cls, sep, 1, 0);
    } else if (pp < 0) {
        rc = fixed_layout(p, cls, sep, pp == TOK_POST_MPNET, 1);
    } else {
        rc = read_processor(p, doc, pp, cls, sep, path, err);
        /* A Sequence of ByteLevel alone, or a template without a pair:
         * the sequences themselves, as the Rust library joins them. */
        if (rc == 0 && p->n_single == 0) rc = add_item(&p->single, &p->n_single, 1, NULL, 0, 0);
        if (rc == 0 && p->n_pair == 0)
            rc = add_item(&p->pair, &p->n_pair, 1, NULL, 0, 0) || add_item(&p->pair, &p->n_pair, 2, NULL, 0, 1) ? -1 : 0;
    }
    if (rc != 0) tok_post_free(p);
    return rc;
}

size_t tok_post_added(const tok_post *p, int pair)
{
    const tok_template_item *items = pair ? p->pair : p->single;
    size_t n = pair ? p->n_pair : p->n_single, added = 0;
    for (size_t i = 0; i < n; i++) added += items[i].n_ids;
    return added;
}

int tok_post_apply(const tok_post *p, const int32_t *a, size_t na, const int32_t *b, size_t nb, bert_ids *ids,
                   bert_ids *types)
{
    const tok_template_item *items = b ? p->pair : p->single;
    size_t n = b ? p->n_pair : p->n_single;
    for (size_t i = 0; i < n; i++) {
        const int32_t *src = items[i].sequence == 0 ? items[i].ids : items[i].sequence == 1 ? a : b;
        size_t cnt = items[i].sequence == 0 ? items[i].n_ids : items[i].sequence == 1 ? na : nb;
        for (size_t k = 0; k < cnt; k++)
            if (bert_ids_push(ids, src[k]) != 0 || (types && bert_ids_push(types, items[i].type_id) != 0)) return -1;
    }
    return 0;
}

int tok_post_add_specials(const tok_post *p, int after, bert_ids *ids, bert_spans *spans)
{
    static const bert_token_span none = {0, 0, 0, 0, -1};
    int added = 0, seen_a = 0;
    for (size_t i = 0; i < p->n_single; i++) {
        const tok_template_item *it = &p->single[i];
        if (it->sequence) { seen_a = 1; continue; }
        if (seen_a != after) continue;
        for (size_t k = 0; k < it->n_ids; k++, added++)
            if (ids && (bert_ids_push(ids, it->ids[k]) != 0 || (spans && bert_spans_push(spans, none) != 0)))
                return -1;
    }
    return added;
}

void tok_post_cls_sep(const tok_post *p, int32_t *cls, int32_t *sep)
{
    *cls = *sep = -1;
    int seen_a = 0;
    for (size_t i = 0; i < p->n_single; i++) {
        const tok_template_item *it = &p->single[i];
        if (it->sequence) { seen_a = 1; continue; }
        if (!seen_a && *cls < 0) *cls = it->ids[0];
        if (seen_a && *sep < 0) *sep = it->ids[0];
    }
}

/* The post-processor's trim_offsets (RobertaProcessing, ByteLevel): a
 * token's span loses the spaces that its leading and trailing 'Ġ' stand
 * for, except the one add_prefix_space put before the first token. */
void tok_post_trim_offsets(const tok_post *p, const tok_pipeline *pipe, const bert_ids *out, size_t from,
                           bert_spans *spans, size_t span_from)
{
    static const char space[] = "\xC4\xA0";   /* 'Ġ', the byte-level form of ' ' */
    assert(spans->len - span_from == out->len - from);   /* a span for every id */
    for (size_t i = from; i < out->len; i++) {
        const char *t = tok_pipeline_token(pipe, out->ids[i]);
        if (!t) continue;
        size_t n = strlen(t), lead = 0, trail = 0;
        while (n - 2 * lead >= 2 && memcmp(t + 2 * lead, space, 2) == 0) lead++;
        while (n - 2 * trail >= 2 && memcmp(t + n - 2 * (trail + 1), space, 2) == 0) trail++;
        bert_token_span *s = &spans->at[span_from + (i - from)];
        if (lead > 0) {
            int first = i == from || s->start == 0;
            if (!(first && p->add_prefix_space && lead == 1)) {
                int64_t k = (int64_t)lead;
                if (s->byte_start + k > s->byte_end) k = s->byte_end - s->byte_start;
                if (s->start + k > s->end) k = s->end - s->start;
                s->start += k;
                s->byte_start += k;
            }
        }
        if (trail > 0 && s->end >= (int64_t)trail) {
            int64_t k = (int64_t)trail;
            if (s->end - k < s->start) k = s->end - s->start;
            s->end -= k;
            s->byte_end -= k;
        }
    }
}
