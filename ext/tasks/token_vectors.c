/*
 * token_vectors.c - see token_vectors.h.
 *
 * The steps are PyLate's (pylate/models/colbert.py): tokenize() sets the
 * Transformer's max_seq_length to the side's length minus one, pads queries
 * to it with the mask token (query expansion), then inserts the prefix
 * token after the first ([CLS]) with attention 1; encode() runs the
 * Transformer and the Dense module (sentence_transformers/models/Dense.py,
 * identity activation), drops the skiplist's tokens from documents (the ids
 * tokenizer.convert_tokens_to_ids gives the words, [UNK] for a word the
 * vocabulary lacks) and normalises each vector (F.normalize, eps 1e-12).
 */
#include "token_vectors.h"
#include "vectors.h"
#include "../base/error.h"
#include "../base/json.h"
#include "../base/model_files.h"
#include "../models/entry.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

/* PyLate's settings: config_sentence_transformers.json's, else its defaults. */
typedef struct {
    const char *prefix;     /* query_prefix or document_prefix of the side */
    int length;             /* query_length or document_length */
    int expansion_attended; /* attend_to_expansion_tokens */
    const json_doc *doc;    /* the parsed file (owned by the entry's files), or NULL */
    int skiplist;           /* its skiplist_words node, or -1: PyLate's default, string.punctuation */
} colbert_settings;

static const char PUNCTUATION[] = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

static int read_settings(bert_entry *e, bert_tokens_side side, colbert_settings *s, char **err)
{
    const int query = side == BERT_TOKENS_QUERY;
    memset(s, 0, sizeof *s);
    s->prefix = query ? "[Q] " : "[D] ";
    s->length = query ? 32 : 180;
    s->skiplist = -1;
    const json_doc *doc = NULL;
    int found = bert_model_files_json(e->files, "config_sentence_transformers.json", 0, &doc, err);
    if (found < 0) return -1;
    if (!found) return 0;
    s->doc = doc;
    const char *file = bert_model_files_dir(e->files);
    int n = bert_json_member(doc, 0, query ? "query_prefix" : "document_prefix");
    if (n >= 0) s->prefix = bert_json_str(doc, n, s->prefix);
    n = bert_json_member(doc, 0, query ? "query_length" : "document_length");
    long long length = n >= 0 && doc->nodes[n].type != JSON_NULL ? bert_json_int(doc, n, -1) : s->length;
    if (length < 3 || length > 65536) {
        *err = bert_errorf("%s/config_sentence_transformers.json: %s must be an integer of at least 3 ([CLS], the "
                           "prefix and [SEP])", file, query ? "query_length" : "document_length");
        return -1;
    }
    s->length = (int)length;
    s->expansion_attended = bert_json_bool(doc, bert_json_member(doc, 0, "attend_to_expansion_tokens"), 0) == 1;
    n = bert_json_member(doc, 0, "skiplist_words");
    if (n >= 0 && doc->nodes[n].type == JSON_ARRAY) s->skiplist = n;
    else if (n >= 0 && doc->nodes[n].type != JSON_NULL) {
        *err = bert_errorf("%s/config_sentence_transformers.json: skiplist_words must be an array of words", file);
        return -1;
    }
    return 0;
}

/* The id convert_tokens_to_ids gives `word`: its own, else [UNK]'s. */
static int32_t word_id(const bert_entry *e, const char *word, size_t len)
{
    int32_t id = bert_tokenizer_find(e->tokenizer, word, len);
    return id >= 0 ? id : bert_tokenizer_specials(e->tokenizer)->unk;
}

static int skipped(const bert_entry *e, const colbert_settings *s, int32_t id)
{
    if (s->skiplist < 0) {
        for (const char *p = PUNCTUATION; *p; p++)
            if (word_id(e, p, 1) == id) return 1;
        return 0;
    }
    const json_doc *doc = s->doc;
    for (int c = doc->nodes[s->skiplist].first_child; c >= 0; c = doc->nodes[c].next_sibling) {
        const char *w = bert_json_str(doc, c, NULL);
        if (w && word_id(e, w, strlen(w)) == id) return 1;
    }
    return 0;
}

/* PyLate's input ids: [CLS], the prefix, the text's pieces cut to fit,
 * [SEP], and for queries [MASK] up to the length.  *keys: the positions
 * attention sees. */
static int colbert_ids(bert_entry *e, const char *text, size_t len, bert_tokens_side side,
                       const colbert_settings *s, int *keys, char **err)
{
    const bert_special_ids *sp = bert_tokenizer_specials(e->tokenizer);
    const int query = side == BERT_TOKENS_QUERY;
    int32_t prefix = bert_tokenizer_find(e->tokenizer, s->prefix, strlen(s->prefix));
    if (sp->cls < 0 || sp->sep < 0 || (query && sp->mask < 0)) {
        *err = bert_errorf("model '%s': its tokenizer lacks [CLS], [SEP] or [MASK], which ColBERT inputs need",
                           e->name);
        return -1;
    }
    if (prefix < 0) {
        *err = bert_errorf("model '%s' has no token \"%s\" in its tokenizer: bert_token_vectors takes ColBERT "
                           "models as PyLate saves them, with the query and document prefixes as added tokens",
                           e->name, s->prefix);
        return -1;
    }
    bert_ids *ids = &e->ids;
    ids->len = 0;
    size_t pieces = (size_t)s->length - 3;   /* besides [CLS], the prefix and [SEP] */
    if (bert_ids_push(ids, sp->cls) != 0 || bert_ids_push(ids, prefix) != 0 ||
        bert_tokenizer_encode(e->tokenizer, text, len, pieces + 2, ids, &e->tokenizing) != 0)
        goto oom;
    if (ids->len > pieces + 2) ids->len = pieces + 2;
    if (bert_ids_push(ids, sp->sep) != 0) goto oom;
    *keys = (int)ids->len;
    if (query) {
        while (ids->len < (size_t)s->length)
            if (bert_ids_push(ids, sp->mask) != 0) goto oom;
        if (s->expansion_attended) *keys = (int)ids->len;
    }
    return 0;
oom:
    *err = bert_errorf("out of memory tokenizing a text of %zu bytes", len);
    return -1;
}

int bert_pipeline_token_vectors(bert_entry *e, const char *text, size_t len, bert_tokens_side side,
                                unsigned char **blob, size_t *bytes, bert_interrupt_fn interrupted, void *ctx,
                                char **err)
{
    *err = NULL;
    *blob = NULL;
    *bytes = 0;
    colbert_settings s;
    int keys;
    if (bert_entry_need_tokenizer(e, err) != 0 || read_settings(e, side, &s, err) != 0 ||
        colbert_ids(e, text, len, side, &s, &keys, err) != 0 || bert_entry_need_model(e, err) != 0)
        return -1;
    const bert_model *m = e->model;
    int n = (int)e->ids.len, H = m->cfg.hidden_size, d = m->dense_w ? m->dense_out : H;
    const float *hidden = bert_entry_encode_keys(e, e->ids.ids, NULL, &n, &keys, 1, interrupted, ctx, err);
    if (!hidden) return -1;
    int kept = 0;
    for (int i = 0; i < n; i++) kept += side == BERT_TOKENS_QUERY || !skipped(e, &s, e->ids.ids[i]);
    size_t total = bert_token_vectors_bytes(kept, d);
    unsigned char *out = total == SIZE_MAX ? NULL : malloc(total);
    /* Rows projected one by one into an aligned row: the BLOB's values
     * start 16 bytes in, aligned for float, and hold the kept rows only. */
    float *row = malloc((size_t)d * sizeof *row);
    if (!out || !row) {
        free(out);
        free(row);
        *err = bert_errorf("out of memory: %d token vectors of %d values", kept, d);
        return -1;
    }
    bert_token_vectors_header(out, kept, d);
    float *values = (float *)(void *)(out + BERT_TOKEN_VECTORS_HEADER);
    for (int i = 0, r = 0; i < n; i++) {
        if (side == BERT_TOKENS_DOCUMENT && skipped(e, &s, e->ids.ids[i])) continue;
        const float *h = hidden + (size_t)i * H;
        if (m->dense_w) {
            /* y = b + W h; beta 1 on zeros, as OpenBLAS's beta 0 does not clear NaN. */
            if (m->dense_b) memcpy(row, m->dense_b, (size_t)d * sizeof *row);
            else memset(row, 0, (size_t)d * sizeof *row);
            cblas_sgemv(CblasRowMajor, CblasNoTrans, d, H, 1.0f, m->dense_w, H, h, 1, 1.0f, row, 1);
        } else {
            memcpy(row, h, (size_t)d * sizeof *row);
        }
        bert_vector_shorten(row, d, 1);
        memcpy(values + (size_t)r++ * d, row, (size_t)d * sizeof *row);
    }
    free(row);
    *blob = out;
    *bytes = total;
    return 0;
}
