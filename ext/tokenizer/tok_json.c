/*
 * tok_json.c - reading the stages of the general pipeline from
 * tokenizer.json (through SQLite's JSON functions, json.h), or from the
 * older vocab.json + merges.txt of a byte-level BPE tokenizer, with the
 * config files for its special tokens; and the reading of the model files
 * that WordPiece's loader and tokenizer.c share with it (tokenizer.json's
 * vocab, a special token's name, model_max_length).
 */
#include "tok_pipeline.h"

#include "../base/buffer.h"
#include "../base/error.h"
#include "../base/file.h"
#include "../base/unicode_text.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MERGES_MAX_BYTES ((size_t)1 << 30)

typedef struct {
    long long id;
    int node;
} id_node;

static int by_id(const void *a, const void *b)
{
    const id_node *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* The children of `parent` (none when it is -1) in the order of their ids:
 * the child's own value (id_key NULL) or its member id_key, -1 when that
 * is no integer.  *n of them, or NULL when out of memory. */
static id_node *children_by_id(const json_doc *doc, int parent, const char *id_key, size_t *n)
{
    size_t cap = (size_t)bert_json_length(doc, parent), k = 0;
    id_node *order = malloc((cap ? cap : 1) * sizeof *order);
    if (!order) return NULL;
    for (int c = parent >= 0 ? doc->nodes[parent].first_child : -1; c >= 0 && k < cap; c = doc->nodes[c].next_sibling) {
        order[k].id = bert_json_int(doc, id_key ? bert_json_member(doc, c, id_key) : c, -1);
        order[k++].node = c;
    }
    qsort(order, k, sizeof *order, by_id);
    *n = k;
    return order;
}

/* An object of token -> id into `v`, in id order. */
static int object_vocab(const json_doc *doc, int obj, bert_vocab *v, const char *what, char **err)
{
    size_t k;
    id_node *order = children_by_id(doc, obj, NULL, &k);
    if (!order) return -1;
    /* The lowest and the highest id: the first outside 0..k-1, if any. */
    for (size_t end = 0; end < 2 && k > 0; end++) {
        const id_node *o = &order[end ? k - 1 : 0];
        if (o->id < 0 || o->id >= (long long)k) {
            const char *key = doc->nodes[o->node].key;
            *err = bert_errorf("%s: the token \"%s\" has id %lld, outside 0..%zu; use the file the model came with",
                               what, key ? key : "", o->id, k - 1);
            free(order);
            return -1;
        }
    }
    for (size_t i = 0; i < k; i++) {
        if (order[i].id != (long long)i) {
            *err = bert_errorf("%s: the ids of the vocabulary are not 0..%zu without gaps (id %ld is missing or "
                               "repeated); use the file the model came with", what, k - 1, (long)i);
            free(order);
            return -1;
        }
        const char *key = doc->nodes[order[i].node].key;
        if (bert_vocab_append(v, key, strlen(key)) < 0) { free(order); return -1; }
    }
    free(order);
    return 0;
}

int tok_json_vocab(const json_doc *tj, bert_vocab *v, char **err)
{
    if (!tj) return 0;
    int model = bert_json_member(tj, 0, "model");
    int vocab = model >= 0 ? bert_json_member(tj, model, "vocab") : -1;
    /* An empty vocab (as tests and some exports write) leaves vocab.txt's. */
    if (vocab < 0 || tj->nodes[vocab].type != JSON_OBJECT || bert_json_length(tj, vocab) == 0) return 0;
    return object_vocab(tj, vocab, v, "tokenizer.json", err) == 0 ? 1 : -1;
}

int tok_model_max_length_of(const json_doc *doc)
{
    double v = bert_json_real(doc, bert_json_member(doc, 0, "model_max_length"), 0);
    return v >= 1 && v <= INT_MAX ? (int)v : 0;
}

const char *tok_token_name(const json_doc *doc, int node)
{
    if (node < 0) return NULL;
    if (doc->nodes[node].type == JSON_OBJECT) return bert_json_str(doc, bert_json_member(doc, node, "content"), NULL);
    return bert_json_str(doc, node, NULL);
}

static int unsupported(char **err, const char *path, const char *what, const char *type, const char *supported)
{
    *err = bert_errorf("%s: %s \"%s\" is not supported (only %s)", path, what, type, supported);
    return -1;
}

#define MAX_PARTS 16

/* Reads one part of a stage, of type `type` at node `part`, into `item`. */
typedef int (*part_reader)(void *item, const json_doc *doc, int part, const char *type, const char *path, char **err);

/* Reads the stage at `node` (a "Sequence" of members under `list_key`, or
 * one part; nothing for a null or absent stage) into a new array *array of
 * `size`-byte items, counted in *count as each is begun, so that freeing
 * the pipeline frees a part read halfway.  0, or -1 with *err (NULL when
 * out of memory). */
static int read_stage(const json_doc *doc, int node, const char *list_key, void **array, size_t *count, size_t size,
                      part_reader read, const char *path, char **err)
{
    if (node < 0 || doc->nodes[node].type == JSON_NULL) return 0;
    int parts[MAX_PARTS], n = 0;
    if (strcmp(bert_json_str(doc, bert_json_member(doc, node, "type"), ""), "Sequence") != 0) {
        parts[n++] = node;
    } else {
        int list = bert_json_member(doc, node, list_key);
        for (int c = list >= 0 ? doc->nodes[list].first_child : -1; c >= 0; c = doc->nodes[c].next_sibling) {
            if (n == MAX_PARTS) {
                *err = bert_errorf("%s: a Sequence has more than %d %s, more than this loader reads; use "
                                   "the tokenizer.json the model came with", path, MAX_PARTS, list_key);
                return -1;
            }
            parts[n++] = c;
        }
    }
    if (!(*array = calloc((size_t)n + 1, size))) return -1;
    for (int i = 0; i < n; i++) {
        const char *type = bert_json_str(doc, bert_json_member(doc, parts[i], "type"), "");
        if (read((char *)*array + (*count)++ * size, doc, parts[i], type, path, err) != 0) return -1;
    }
    return 0;
}

/* Regex "X{n,}" (a character, possibly escaped, repeated) or a literal. */
static int read_pattern(tok_norm *n, const json_doc *doc, int pattern, const char *path, char **err)
{
    const char *lit = bert_json_str(doc, bert_json_member(doc, pattern, "String"), NULL);
    const char *re = bert_json_str(doc, bert_json_member(doc, pattern, "Regex"), NULL);
    if (lit) {
        n->pattern = bert_strdup(lit);
        n->pattern_len = strlen(lit);
        return n->pattern ? 0 : -1;
    }
    if (re) {
        const char *p = re;
        if (*p == '\\' && p[1]) p++;
        int32_t cp;
        size_t cl = bert_utext_decode((const unsigned char *)p, strlen(p), &cp);
        int min = 0;
        char tail = 0;
        if (strcmp(p + cl, "+") == 0) min = 1;
        else if (sscanf(p + cl, "{%d,}%c", &min, &tail) != 1) min = 0;
        if (min > 0) {
            n->pattern = bert_strndup(p, cl);
            n->pattern_len = cl;
            n->min_repeat = min;
            return n->pattern ? 0 : -1;
        }
        return unsupported(err, path, "the Replace normalizer's regex", re, "one character repeated, as \"X{n,}\" or \"X+\"");
    }
    return unsupported(err, path, "a Replace normalizer's pattern", "", "String or Regex");
}

static int read_normalizer(void *item, const json_doc *doc, int c, const char *type, const char *path, char **err)
{
    tok_norm *t = item;
    if (strcmp(type, "Precompiled") == 0) {
        t->kind = NORM_PRECOMPILED;
        const char *map = bert_json_str(doc, bert_json_member(doc, c, "precompiled_charsmap"), NULL);
        if (map && *map && tok_precompiled_load(map, path, &t->pc, err) != 0) return -1;
    } else if (strcmp(type, "Replace") == 0) {
        t->kind = NORM_REPLACE;
        if (read_pattern(t, doc, bert_json_member(doc, c, "pattern"), path, err) != 0) return -1;
        if (!(t->content = bert_strdup(bert_json_str(doc, bert_json_member(doc, c, "content"), "")))) return -1;
    } else if (strcmp(type, "NFD") == 0) t->kind = NORM_NFD;
    else if (strcmp(type, "NFKD") == 0) t->kind = NORM_NFKD;
    else if (strcmp(type, "NFC") == 0) t->kind = NORM_NFC;
    else if (strcmp(type, "NFKC") == 0) t->kind = NORM_NFKC;
    else if (strcmp(type, "StripAccents") == 0) t->kind = NORM_STRIP_ACCENTS;
    else if (strcmp(type, "Lowercase") == 0) t->kind = NORM_LOWERCASE;
    else if (strcmp(type, "Strip") == 0) {
        t->kind = NORM_STRIP;
        t->left = bert_json_bool(doc, bert_json_member(doc, c, "strip_left"), 1);
        t->right = bert_json_bool(doc, bert_json_member(doc, c, "strip_right"), 1);
    } else if (strcmp(type, "Prepend") == 0) {
        t->kind = NORM_PREPEND;
        if (!(t->content = bert_strdup(bert_json_str(doc, bert_json_member(doc, c, "prepend"), "")))) return -1;
    } else {
        return unsupported(err, path, "the normalizer", type,
                           "Precompiled, Replace, NFD, NFKD, NFC, NFKC, StripAccents, Lowercase, Strip, Prepend "
                           "and Sequence with a BPE or Unigram model; BertNormalizer with WordPiece");
    }
    return 0;
}

static int32_t first_char(const char *s, int32_t fallback)
{
    if (!s || !*s) return fallback;
    int32_t cp;
    bert_utext_decode((const unsigned char *)s, strlen(s), &cp);
    return cp;
}

/* Metaspace's prepend_scheme, or the older add_prefix_space. */
static int prepend_scheme(const json_doc *doc, int node)
{
    const char *s = bert_json_str(doc, bert_json_member(doc, node, "prepend_scheme"), NULL);
    if (s) return strcmp(s, "first") == 0 ? PREPEND_FIRST : strcmp(s, "never") == 0 ? PREPEND_NEVER : PREPEND_ALWAYS;
    return bert_json_bool(doc, bert_json_member(doc, node, "add_prefix_space"), 1) ? PREPEND_ALWAYS : PREPEND_NEVER;
}

static int read_pre_tokenizer(void *item, const json_doc *doc, int c, const char *type, const char *path, char **err)
{
    tok_pre *t = item;
    if (strcmp(type, "ByteLevel") == 0) {
        t->kind = PRE_BYTE_LEVEL;
        t->add_prefix_space = bert_json_bool(doc, bert_json_member(doc, c, "add_prefix_space"), 1);
        t->use_regex = bert_json_bool(doc, bert_json_member(doc, c, "use_regex"), 1);
    } else if (strcmp(type, "Metaspace") == 0) {
        t->kind = PRE_METASPACE;
        t->replacement = first_char(bert_json_str(doc, bert_json_member(doc, c, "replacement"), NULL), 0x2581);
        t->prepend_scheme = prepend_scheme(doc, c);
        t->split = bert_json_bool(doc, bert_json_member(doc, c, "split"), 1);
    } else if (strcmp(type, "WhitespaceSplit") == 0) {
        t->kind = PRE_WHITESPACE_SPLIT;
    } else if (strcmp(type, "Whitespace") == 0) {
        t->kind = PRE_WHITESPACE;
    } else {
        return unsupported(err, path, "the pre_tokenizer", type,
                           "ByteLevel, Metaspace, WhitespaceSplit, Whitespace and Sequence with a BPE or Unigram "
                           "model; BertPreTokenizer with WordPiece");
    }
    return 0;
}

static int read_decoder(void *item, const json_doc *doc, int c, const char *type, const char *path, char **err)
{
    tok_dec *t = item;
    if (strcmp(type, "ByteLevel") == 0) {
        t->kind = DEC_BYTE_LEVEL;
    } else if (strcmp(type, "Metaspace") == 0) {
        t->kind = DEC_METASPACE;
        t->replacement = first_char(bert_json_str(doc, bert_json_member(doc, c, "replacement"), NULL), 0x2581);
        t->prepend_scheme = prepend_scheme(doc, c);
    } else if (strcmp(type, "Replace") == 0) {
        t->kind = DEC_REPLACE;
        const char *from = bert_json_str(doc, bert_json_path(doc, c, "pattern.String"), NULL);
        if (!from) return unsupported(err, path, "the Replace decoder's pattern", "Regex", "String");
        if (!(t->from = bert_strdup(from)) ||
            !(t->to = bert_strdup(bert_json_str(doc, bert_json_member(doc, c, "content"), ""))))
            return -1;
    } else if (strcmp(type, "ByteFallback") == 0) {
        t->kind = DEC_BYTE_FALLBACK;
    } else if (strcmp(type, "Fuse") == 0) {
        t->kind = DEC_FUSE;
    } else if (strcmp(type, "Strip") == 0) {
        t->kind = DEC_STRIP;
        t->strip_char = first_char(bert_json_str(doc, bert_json_member(doc, c, "content"), NULL), ' ');
        t->strip_left = (int)bert_json_int(doc, bert_json_member(doc, c, "start"), 0);
        t->strip_right = (int)bert_json_int(doc, bert_json_member(doc, c, "stop"), 0);
    } else {
        return unsupported(err, path, "the decoder", type,
                           "ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip and Sequence with a BPE "
                           "or Unigram model");
    }
    return 0;
}

/* "a b" (merges.txt and older tokenizer.json) or ["a", "b"]. */
static int add_merge_text(tok_pipeline *p, const char *line, size_t len)
{
    const char *space = memchr(line, ' ', len);
    if (!space) return 1;
    return tok_bpe_add_merge(p->bpe, line, (size_t)(space - line), space + 1, len - (size_t)(space - line) - 1) < 0 ? -1 : 0;
}

static int read_bpe(tok_pipeline *p, const json_doc *doc, int model, const char *path, char **err)
{
    const char *unk = bert_json_str(doc, bert_json_member(doc, model, "unk_token"), NULL);
    p->model_unk = unk ? bert_vocab_find(&p->vocab, unk, strlen(unk)) : -1;
    if (tok_bpe_new(&p->vocab, &p->bpe) != 0) return -1;
    const char *prefix = bert_json_str(doc, bert_json_member(doc, model, "continuing_subword_prefix"), NULL);
    const char *suffix = bert_json_str(doc, bert_json_member(doc, model, "end_of_word_suffix"), NULL);
    tok_bpe_set_options(p->bpe, p->model_unk, bert_json_bool(doc, bert_json_member(doc, model, "fuse_unk"), 0),
                        bert_json_bool(doc, bert_json_member(doc, model, "byte_fallback"), 0),
                        bert_json_bool(doc, bert_json_member(doc, model, "ignore_merges"), 0), prefix, suffix);
    int merges = bert_json_member(doc, model, "merges");
    for (int c = merges >= 0 ? doc->nodes[merges].first_child : -1; c >= 0; c = doc->nodes[c].next_sibling) {
        int rc;
        if (doc->nodes[c].type == JSON_ARRAY) {
            int a = doc->nodes[c].first_child, b = a >= 0 ? doc->nodes[a].next_sibling : -1;
            const char *l = bert_json_str(doc, a, NULL), *r = bert_json_str(doc, b, NULL);
            rc = l && r ? tok_bpe_add_merge(p->bpe, l, strlen(l), r, strlen(r)) : 1;
        } else {
            const char *m = bert_json_str(doc, c, "");
            rc = add_merge_text(p, m, strlen(m));
        }
        if (rc < 0) return -1;
    }
    (void)path;
    (void)err;
    return 0;
}

static int read_unigram(tok_pipeline *p, const json_doc *doc, int model, const char *path, char **err)
{
    int vocab = bert_json_member(doc, model, "vocab");
    size_t n = (size_t)bert_json_length(doc, vocab), k = 0;
    double *scores = malloc((n ? n : 1) * sizeof *scores);
    if (!scores) return -1;
    for (int c = vocab >= 0 ? doc->nodes[vocab].first_child : -1; c >= 0; c = doc->nodes[c].next_sibling) {
        int a = doc->nodes[c].first_child, b = a >= 0 ? doc->nodes[a].next_sibling : -1;
        const char *piece = bert_json_str(doc, a, NULL);
        if (!piece) {
            *err = bert_errorf("%s: entry %zu of the Unigram vocab is not [piece, score]; use the file the model "
                               "came with", path, k);
            free(scores);
            return -1;
        }
        scores[k++] = bert_json_real(doc, b, 0);
        if (bert_vocab_append(&p->vocab, piece, strlen(piece)) < 0) { free(scores); return -1; }
    }
    long long unk = bert_json_int(doc, bert_json_member(doc, model, "unk_id"), -1);
    p->model_unk = unk >= 0 && unk < (long long)k ? (int32_t)unk : -1;
    /* The Rust library's Unigram always fuses unknown pieces. */
    int rc = tok_unigram_new(&p->vocab, scores, p->model_unk,
                             bert_json_bool(doc, bert_json_member(doc, model, "byte_fallback"), 0), 1, &p->unigram);
    free(scores);
    return rc;
}

static int add_added(tok_pipeline *p, const char *content, int32_t id, int special, int normalized, int lstrip,
                     int rstrip, int single_word)
{
    tok_added *g = realloc(p->added, (p->n_added + 1) * sizeof *g);
    if (!g) return -1;
    p->added = g;
    tok_added *a = &g[p->n_added];
    memset(a, 0, sizeof *a);
    if (!(a->content = bert_strdup(content))) return -1;
    p->n_added++;
    a->id = id;
    a->special = special;
    a->normalized = normalized;
    a->lstrip = lstrip;
    a->rstrip = rstrip;
    a->single_word = single_word;
    return 0;
}

/* An added token's id: its own, appended to the vocabulary when it is the
 * next one. */
static int place_added(tok_pipeline *p, const char *content, long long id, const char *path, char **err)
{
    if (id == p->vocab.count) return bert_vocab_append(&p->vocab, content, strlen(content)) < 0 ? -1 : 0;
    if (id < 0 || id > p->vocab.count) {
        *err = bert_errorf("%s: the added token \"%s\" has id %lld but the vocabulary has %ld tokens; use the "
                           "file the model came with", path, content, id, (long)p->vocab.count);
        return -1;
    }
    return 0;
}

static int read_added(tok_pipeline *p, const json_doc *doc, const char *path, char **err)
{
    size_t k;
    id_node *order = children_by_id(doc, bert_json_member(doc, 0, "added_tokens"), "id", &k);
    if (!order) return -1;
    for (size_t i = 0; i < k; i++) {
        int c = order[i].node;
        const char *content = bert_json_str(doc, bert_json_member(doc, c, "content"), NULL);
        if (order[i].id < 0 || order[i].id > INT32_MAX || !content) {
            *err = bert_errorf("%s: an entry of added_tokens lacks its content or id; fix or delete the file", path);
            free(order);
            return -1;
        }
    }
    for (size_t i = 0; i < k; i++) {
        int c = order[i].node;
        const char *content = bert_json_str(doc, bert_json_member(doc, c, "content"), "");
        int special = bert_json_bool(doc, bert_json_member(doc, c, "special"), 0);
        if (place_added(p, content, order[i].id, path, err) != 0 ||
            add_added(p, content, (int32_t)order[i].id, special,
                      bert_json_bool(doc, bert_json_member(doc, c, "normalized"), !special),
                      bert_json_bool(doc, bert_json_member(doc, c, "lstrip"), 0),
                      bert_json_bool(doc, bert_json_member(doc, c, "rstrip"), 0),
                      bert_json_bool(doc, bert_json_member(doc, c, "single_word"), 0)) != 0) {
            free(order);
            return -1;
        }
    }
    free(order);
    return 0;
}

static int read_tokenizer_json(tok_pipeline *p, const char *path, const json_doc *doc, char **err)
{
    int model = bert_json_member(doc, 0, "model");
    int vocab = model >= 0 ? bert_json_member(doc, model, "vocab") : -1;
    if (vocab < 0) {
        const char *type = bert_json_str(doc, bert_json_member(doc, model, "type"), "tokenizer");
        *err = bert_errorf("%s: the %s model has no vocab; use the tokenizer.json the model came with", path, type);
        return -1;
    }
    int rc;
    if (doc->nodes[vocab].type == JSON_ARRAY) {
        rc = read_unigram(p, doc, model, path, err);
    } else {
        if (object_vocab(doc, vocab, &p->vocab, path, err) != 0) return -1;
        rc = read_bpe(p, doc, model, path, err);
    }
    int normalizer = bert_json_member(doc, 0, "normalizer"), pre = bert_json_member(doc, 0, "pre_tokenizer");
    int decoder = bert_json_member(doc, 0, "decoder");
    p->has_decoder = decoder >= 0 && doc->nodes[decoder].type != JSON_NULL;
    if (rc != 0 ||
        read_stage(doc, normalizer, "normalizers", (void **)&p->norm, &p->n_norm, sizeof *p->norm, read_normalizer,
                   path, err) != 0 ||
        read_stage(doc, pre, "pretokenizers", (void **)&p->pre, &p->n_pre, sizeof *p->pre, read_pre_tokenizer, path,
                   err) != 0 ||
        read_stage(doc, decoder, "decoders", (void **)&p->dec, &p->n_dec, sizeof *p->dec, read_decoder, path,
                   err) != 0 ||
        read_added(p, doc, path, err) != 0)
        return -1;
    return 0;
}

/* vocab.json + merges.txt: RoBERTa's byte-level BPE, with the special
 * tokens of the config files (RoBERTa's by default), as transformers
 * converts them. */
static int read_legacy_bpe(tok_pipeline *p, bert_model_files *files, const json_doc *config, const json_doc *map,
                           char **err)
{
    const char *dir = bert_model_files_dir(files);
    const json_doc *vocab = NULL;
    char *merges = NULL, *path = bert_model_files_path(files, "merges.txt");
    int rc = -1;
    if (!path) goto done;
    if (bert_model_files_json(files, "vocab.json", 0, &vocab, err) != 1) {
        if (!*err) *err = bert_errorf("%s: no vocab.json (or vocab.txt or tokenizer.json): the model directory "
                                      "needs its tokenizer files", dir);
        goto done;
    }
    if (object_vocab(vocab, 0, &p->vocab, "vocab.json", err) != 0) goto done;
    size_t len = 0;
    int missing = 0;
    if (!(merges = bert_file_read(path, MERGES_MAX_BYTES, &len, &missing, err))) {
        if (missing) {
            free(*err);
            *err = bert_errorf("%s: missing; a byte-level BPE tokenizer with vocab.json needs the "
                               "merges.txt that came with it", path);
        }
        goto done;
    }
    if (tok_bpe_new(&p->vocab, &p->bpe) != 0) goto done;
    for (size_t i = 0; i < len;) {
        size_t e = i;
        while (e < len && merges[e] != '\n') e++;
        size_t l = e;
        if (l > i && merges[l - 1] == '\r') l--;
        int header = i == 0 && l - i >= 8 && memcmp(merges, "#version", 8) == 0;
        if (!header && l > i && add_merge_text(p, merges + i, l - i) < 0) goto done;
        i = e + 1;
    }
    int add_prefix = 0;
    if (config) add_prefix = bert_json_bool(config, bert_json_member(config, 0, "add_prefix_space"), 0);
    if (!(p->pre = calloc(1, sizeof *p->pre)) || !(p->dec = calloc(1, sizeof *p->dec))) goto done;
    p->pre[0] = (tok_pre){PRE_BYTE_LEVEL, add_prefix, 1, 0, 0, 0};
    p->n_pre = 1;
    p->dec[0].kind = DEC_BYTE_LEVEL;
    p->n_dec = 1;
    p->has_decoder = 1;
    static const char *const keys[] = {"bos_token", "pad_token", "eos_token", "unk_token", "cls_token", "sep_token", "mask_token"};
    static const char *const defaults[] = {"<s>", "<pad>", "</s>", "<unk>", "<s>", "</s>", "<mask>"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        const char *name = NULL;
        if (map) name = tok_token_name(map, bert_json_member(map, 0, keys[k]));
        if (!name && config) name = tok_token_name(config, bert_json_member(config, 0, keys[k]));
        if (!name) name = defaults[k];
        int32_t id = bert_vocab_find(&p->vocab, name, strlen(name));
        int known = 0;
        for (size_t i = 0; i < p->n_added; i++) known |= strcmp(p->added[i].content, name) == 0;
        if (id >= 0 && !known && add_added(p, name, id, 1, 0, strcmp(keys[k], "mask_token") == 0, 0, 0) != 0) goto done;
    }
    rc = 0;
done:
    /* The vocabulary is the pipeline's own now. */
    bert_model_files_drop(files, "vocab.json");
    free(merges);
    free(path);
    return rc;
}

int tok_json_load_stages(tok_pipeline *p, bert_model_files *files, const json_doc *tj, char **err)
{
    const json_doc *config = NULL, *map = NULL;
    int rc = -1;
    char *path = bert_model_files_path(files, "tokenizer.json");
    if (!path) return -1;
    if (bert_model_files_json(files, "tokenizer_config.json", 0, &config, err) < 0 ||
        bert_model_files_json(files, "special_tokens_map.json", 0, &map, err) < 0)
        goto done;
    p->cleanup_spaces = config ? bert_json_bool(config, bert_json_member(config, 0, "clean_up_tokenization_spaces"), 1) : 1;
    if (tj ? read_tokenizer_json(p, path, tj, err) : read_legacy_bpe(p, files, config, map, err)) goto done;
    /* The special tokens by name: the config files', else the usual ones
     * present in the vocabulary. */
    static const char *const keys[][2] = {{"cls_token", "bos_token"}, {"sep_token", "eos_token"}, {"mask_token", NULL},
                                          {"pad_token", NULL}, {"unk_token", NULL}};
    static const char *const defaults[][2] = {{"<s>", "[CLS]"}, {"</s>", "[SEP]"}, {"<mask>", "[MASK]"},
                                              {"<pad>", "[PAD]"}, {"<unk>", "[UNK]"}};
    int32_t found[5];
    for (int k = 0; k < 5; k++) {
        found[k] = -1;
        for (int j = 0; j < 2 && found[k] < 0 && keys[k][j]; j++) {
            const char *name = NULL;
            if (map) name = tok_token_name(map, bert_json_member(map, 0, keys[k][j]));
            if (!name && config) name = tok_token_name(config, bert_json_member(config, 0, keys[k][j]));
            if (name) found[k] = bert_vocab_find(&p->vocab, name, strlen(name));
        }
        for (int j = 0; j < 2 && found[k] < 0; j++) found[k] = bert_vocab_find(&p->vocab, defaults[k][j], strlen(defaults[k][j]));
    }
    p->specials.cls = found[0];
    p->specials.sep = found[1];
    p->specials.mask = found[2];
    p->specials.pad = found[3];
    p->specials.unk = p->model_unk >= 0 ? p->model_unk : found[4];
    rc = 0;
done:
    free(path);
    return rc;
}
