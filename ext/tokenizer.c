/*
 * tokenizer.c - BERT's WordPiece tokenizer, as Hugging Face's tokenizer.json
 * pipeline runs it: added (special) tokens matched in the raw text, then
 * BertNormalizer (clean text, space CJK ideographs, strip accents, lowercase),
 * BertPreTokenizer (split on whitespace, isolate punctuation) and WordPiece.
 *
 * Text streams through those stages one character at a time, so memory stays
 * bounded by the longest word and time is linear in the input.  The one
 * stage that looks across characters is NFD's canonical reordering, which
 * holds back a run of combining marks until the next starter.  Added tokens
 * marked "normalized" are the exception: they are found in the normalized
 * text, so a tokenizer that has them keeps each stretch between raw-matched
 * tokens whole before pre-tokenizing it.
 */
#include "tokenizer.h"

#include "buffer.h"
#include "error.h"
#include "file.h"
#include "json.h"
#include "path.h"
#include "unicode_text.h"
#include "vocab.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *text;      /* what is matched: the content, or its normalized form */
    size_t len;
    int32_t id;
    int special;     /* dropped by decode when skipping special tokens */
    int normalized;  /* matched in the normalized text, not the raw text */
} added_token;

/* Added tokens grouped by first byte, longest first, so that the first
 * candidate that matches at a position is the leftmost-longest match.  Also
 * used, sorted by id, for the ids whose text differs from vocab.txt's. */
typedef struct {
    added_token *tokens;
    size_t n;
    size_t bucket[257];   /* tokens[bucket[b] .. bucket[b+1]) start with byte b */
} token_set;

struct bert_tokenizer {
    bert_vocab vocab;
    bert_tokenizer_settings settings;
    bert_special_ids specials;
    int clean_text;
    int strip;                   /* strip_accents resolved against lowercase */
    char *prefix;                /* WordPiece's continuing_subword_prefix */
    size_t prefix_len;
    int32_t unk;
    /* decode */
    int decoder_wordpiece;       /* 0: tokenizer.json has no decoder: join with spaces */
    char *decoder_prefix;
    size_t decoder_prefix_len;
    int decoder_cleanup;
    int cleanup_spaces;          /* transformers' clean_up_tokenization_spaces */
    /* Added tokens, never split: as listed while loading, then sorted into
     * those matched in the raw text and those matched after normalization. */
    added_token *added;
    size_t n_added, added_cap;
    bert_vocab added_index;      /* while loading: an added token's text -> its index in added */
    token_set raw, norm;
    /* A normalized added token reads as its normalized form, as the
     * reference's id_to_token gives it (and so decode). */
    token_set renamed;
    unsigned char *special_id;   /* per id: 1 when its text is a special token's */
};

int bert_ids_push(bert_ids *v, int32_t id)
{
    if (v->len == v->cap) {
        int32_t *p = bert_grow(v->ids, &v->cap, v->len + 1, sizeof *p);
        if (!p) return -1;
        v->ids = p;
    }
    v->ids[v->len++] = id;
    return 0;
}

void bert_ids_free(bert_ids *v)
{
    free(v->ids);
    v->ids = NULL;
    v->len = v->cap = 0;
}

/* ---- loading ------------------------------------------------------------- */

/* vocab.txt of the largest published vocabularies is a few MB. */
#define VOCAB_MAX_BYTES ((size_t)1 << 30)

static char *read_whole_file(const char *path, size_t *len, char **err)
{
    int missing = 0;
    char *data = file_read(path, VOCAB_MAX_BYTES, len, &missing, err);
    if (missing)
        *err = bert_errorf("cannot open %s: %s; a model directory needs the vocab.txt of its tokenizer, "
                           "as Hugging Face publishes it", path, strerror(ENOENT));
    return data;
}

/* A special token's name as tokenizer_config.json writes it: a string, or an
 * AddedToken object with "content". */
static const char *token_name(const json_doc *doc, int node)
{
    if (node < 0) return NULL;
    if (doc->nodes[node].type == JSON_OBJECT) return json_str(doc, json_member(doc, node, "content"), NULL);
    return json_str(doc, node, NULL);
}

enum { NAME_CLS, NAME_SEP, NAME_MASK, NAME_PAD, NAME_UNK, N_NAMES };
static const char *const name_keys[N_NAMES] = {"cls_token", "sep_token", "mask_token", "pad_token", "unk_token"};
static const char *const name_defaults[N_NAMES] = {"[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]"};

/* What the loader gathers before it builds the tokenizer. */
typedef struct {
    char *names[N_NAMES];        /* from the config files, NULL when unset */
    char **extra;                /* additional_special_tokens */
    size_t n_extra, extra_cap;
    int have_json_added;         /* tokenizer.json listed its added tokens */
} load_state;

static void load_state_free(load_state *ls)
{
    for (int i = 0; i < N_NAMES; i++) free(ls->names[i]);
    for (size_t i = 0; i < ls->n_extra; i++) free(ls->extra[i]);
    free(ls->extra);
}

static int set_name(char **slot, const char *value)
{
    if (*slot || !value) return 0;
    *slot = bert_strdup(value);
    return *slot ? 0 : -1;
}

static int add_extra(load_state *ls, const char *name)
{
    char **p = bert_grow(ls->extra, &ls->extra_cap, ls->n_extra + 1, sizeof *p);
    if (!p) return -1;
    ls->extra = p;
    if (!(ls->extra[ls->n_extra] = bert_strdup(name))) return -1;
    ls->n_extra++;
    return 0;
}

/* Registers an added token, never split.  An id past the end of vocab.txt
 * extends the vocabulary, as tokenizer.json's added tokens do. */
static int add_token(bert_tokenizer *t, const char *text, size_t len, int32_t id, int special, int normalized,
                     char **err)
{
    if (len == 0) return 0;
    /* A hash lookup, not a scan: a tokenizer.json may list many thousands. */
    int32_t known = vocab_find(&t->added_index, text, len);
    if (known >= 0) {
        t->added[known].special |= special;
        t->added[known].normalized = normalized;
        return 0;
    }
    if (id == t->vocab.count) {
        if (vocab_append(&t->vocab, text, len) < 0) goto oom;
    } else if (id < 0 || id > t->vocab.count) {
        *err = bert_errorf("tokenizer.json: the added token \"%s\" has id %ld but vocab.txt has %ld tokens; "
                           "use the vocab.txt that came with this tokenizer.json",
                           text, (long)id, (long)t->vocab.count);
        return -1;
    }
    added_token *grown = bert_grow(t->added, &t->added_cap, t->n_added + 1, sizeof *grown);
    if (!grown) goto oom;
    t->added = grown;
    added_token *a = &t->added[t->n_added];
    if (!(a->text = bert_strndup(text, len))) goto oom;
    if (vocab_append(&t->added_index, text, len) != (int32_t)t->n_added) {
        free(a->text);
        goto oom;
    }
    a->len = len;
    a->id = id;
    a->special = special;
    a->normalized = normalized;
    t->n_added++;
    return 0;
oom:
    *err = bert_errorf("out of memory loading the tokenizer");
    return -1;
}

/* The named tokens and additional_special_tokens of one config file. */
static int read_token_names(const json_doc *doc, load_state *ls)
{
    for (int i = 0; i < N_NAMES; i++)
        if (set_name(&ls->names[i], token_name(doc, json_member(doc, 0, name_keys[i]))) != 0) return -1;
    int extra = json_member(doc, 0, "additional_special_tokens");
    if (ls->n_extra == 0 && extra >= 0 && doc->nodes[extra].type == JSON_ARRAY) {
        for (int c = doc->nodes[extra].first_child; c >= 0; c = doc->nodes[c].next_sibling) {
            const char *name = token_name(doc, c);
            if (name && add_extra(ls, name) != 0) return -1;
        }
    }
    return 0;
}

static int read_bool_or_null(const json_doc *doc, int node, int fallback)
{
    if (node < 0) return fallback;
    if (doc->nodes[node].type == JSON_NULL) return -1;
    return json_bool(doc, node, fallback);
}

/* model_max_length, 0 when absent or unbounded.  transformers writes
 * int(1e30) for "no limit" (and truncates only below int(1e20)); a limit
 * past INT_MAX is past every max_position_embeddings, which caps it anyway. */
static int model_max_length_of(const json_doc *doc)
{
    double v = json_real(doc, json_member(doc, 0, "model_max_length"), 0);
    return v >= 1 && v <= INT_MAX ? (int)v : 0;
}

int bert_tokenizer_model_max_length(const char *model_dir)
{
    json_doc *doc = NULL;
    char *err = NULL;
    int v = json_read_model_file(model_dir, "tokenizer_config.json", 0, &doc, &err) == 1 ? model_max_length_of(doc) : 0;
    free(err);
    json_free(doc);
    return v;
}

static int read_tokenizer_config(bert_tokenizer *t, const char *dir, load_state *ls, char **err)
{
    json_doc *doc = NULL;
    int rc = json_read_model_file(dir, "tokenizer_config.json", 0, &doc, err);
    if (rc <= 0) return rc;
    rc = -1;
    bert_tokenizer_settings *s = &t->settings;
    s->lowercase = json_bool(doc, json_member(doc, 0, "do_lower_case"), s->lowercase);
    s->strip_accents = read_bool_or_null(doc, json_member(doc, 0, "strip_accents"), s->strip_accents);
    s->chinese_chars = json_bool(doc, json_member(doc, 0, "tokenize_chinese_chars"), s->chinese_chars);
    t->cleanup_spaces = json_bool(doc, json_member(doc, 0, "clean_up_tokenization_spaces"), t->cleanup_spaces);
    s->model_max_length = model_max_length_of(doc);
    if (read_token_names(doc, ls) != 0) { *err = bert_errorf("out of memory loading the tokenizer"); goto done; }
    /* transformers 4.x saves every added token here, keyed by id. */
    int dec = json_member(doc, 0, "added_tokens_decoder");
    if (dec >= 0 && doc->nodes[dec].type == JSON_OBJECT) {
        for (int c = doc->nodes[dec].first_child; c >= 0; c = doc->nodes[c].next_sibling) {
            const char *name = token_name(doc, c);
            int special = json_bool(doc, json_member(doc, c, "special"), 0);
            if (name && special && add_extra(ls, name) != 0) {
                *err = bert_errorf("out of memory loading the tokenizer");
                goto done;
            }
        }
    }
    rc = 0;
done:
    json_free(doc);
    return rc;
}

static int read_special_tokens_map(const char *dir, load_state *ls, char **err)
{
    json_doc *doc = NULL;
    int rc = json_read_model_file(dir, "special_tokens_map.json", 0, &doc, err);
    if (rc <= 0) return rc;
    rc = 0;
    if (read_token_names(doc, ls) != 0) {
        *err = bert_errorf("out of memory loading the tokenizer");
        rc = -1;
    }
    json_free(doc);
    return rc;
}

static int unsupported(char **err, const char *path, const char *what, const char *type, const char *supported)
{
    *err = bert_errorf("%s: %s \"%s\" is not supported (only %s); delete tokenizer.json to tokenize "
                       "with vocab.txt and tokenizer_config.json instead", path, what, type, supported);
    return -1;
}

static int set_prefix(char **slot, size_t *len, const char *value)
{
    char *p = bert_strdup(value);
    if (!p) return -1;
    free(*slot);
    *slot = p;
    *len = strlen(p);
    return 0;
}

/* tokenizer.json: the normalizer, pre-tokenizer, model and decoder settings
 * (they win over tokenizer_config.json) and the added tokens.  Its
 * truncation, padding and post-processor are not used: callers add [CLS]
 * and [SEP] and choose their own length. */
static int read_tokenizer_json(bert_tokenizer *t, const char *dir, load_state *ls, char **err)
{
    json_doc *doc = NULL;
    int rc = json_read_model_file(dir, "tokenizer.json", 0, &doc, err);
    if (rc <= 0) return rc;
    rc = -1;
    char *path = path_join(dir, "tokenizer.json");
    if (!path) { *err = bert_errorf("out of memory loading the tokenizer"); json_free(doc); return -1; }
    bert_tokenizer_settings *s = &t->settings;

    int norm = json_member(doc, 0, "normalizer");
    if (norm >= 0 && doc->nodes[norm].type == JSON_NULL) {
        s->lowercase = s->chinese_chars = s->strip_accents = t->clean_text = 0;
    } else if (norm >= 0) {
        const char *type = json_str(doc, json_member(doc, norm, "type"), "");
        if (strcmp(type, "BertNormalizer") != 0) {
            unsupported(err, path, "the normalizer", type, "BertNormalizer");
            goto done;
        }
        t->clean_text = json_bool(doc, json_member(doc, norm, "clean_text"), 1);
        s->chinese_chars = json_bool(doc, json_member(doc, norm, "handle_chinese_chars"), 1);
        s->strip_accents = read_bool_or_null(doc, json_member(doc, norm, "strip_accents"), -1);
        s->lowercase = json_bool(doc, json_member(doc, norm, "lowercase"), 1);
    }

    int pre = json_member(doc, 0, "pre_tokenizer");
    if (pre >= 0) {
        const char *type = json_str(doc, json_member(doc, pre, "type"), "null");
        if (strcmp(type, "BertPreTokenizer") != 0) {
            unsupported(err, path, "the pre_tokenizer", type, "BertPreTokenizer");
            goto done;
        }
    }

    int model = json_member(doc, 0, "model");
    if (model >= 0) {
        const char *type = json_str(doc, json_member(doc, model, "type"), "WordPiece");
        if (strcmp(type, "WordPiece") != 0) {
            unsupported(err, path, "the model", type, "WordPiece");
            goto done;
        }
        long long chars = json_int(doc, json_member(doc, model, "max_input_chars_per_word"), s->max_input_chars_per_word);
        s->max_input_chars_per_word = chars < 0 ? 0 : chars > INT_MAX ? INT_MAX : (int)chars;
        const char *prefix = json_str(doc, json_member(doc, model, "continuing_subword_prefix"), NULL);
        if (prefix && set_prefix(&t->prefix, &t->prefix_len, prefix) != 0) {
            *err = bert_errorf("out of memory loading the tokenizer");
            goto done;
        }
        const char *unk = json_str(doc, json_member(doc, model, "unk_token"), NULL);
        if (unk) {
            free(ls->names[NAME_UNK]);
            ls->names[NAME_UNK] = NULL;
            if (set_name(&ls->names[NAME_UNK], unk) != 0) {
                *err = bert_errorf("out of memory loading the tokenizer");
                goto done;
            }
        }
    }

    int decoder = json_member(doc, 0, "decoder");
    if (decoder >= 0 && doc->nodes[decoder].type == JSON_NULL) {
        t->decoder_wordpiece = 0;
    } else if (decoder >= 0) {
        const char *type = json_str(doc, json_member(doc, decoder, "type"), "");
        if (strcmp(type, "WordPiece") != 0) {
            unsupported(err, path, "the decoder", type, "WordPiece");
            goto done;
        }
        t->decoder_cleanup = json_bool(doc, json_member(doc, decoder, "cleanup"), 1);
        const char *prefix = json_str(doc, json_member(doc, decoder, "prefix"), "##");
        if (set_prefix(&t->decoder_prefix, &t->decoder_prefix_len, prefix) != 0) {
            *err = bert_errorf("out of memory loading the tokenizer");
            goto done;
        }
    }

    int added = json_member(doc, 0, "added_tokens");
    if (added >= 0 && doc->nodes[added].type == JSON_ARRAY) {
        ls->have_json_added = 1;
        for (int c = doc->nodes[added].first_child; c >= 0; c = doc->nodes[c].next_sibling) {
            const char *content = json_str(doc, json_member(doc, c, "content"), NULL);
            long long id = json_int(doc, json_member(doc, c, "id"), -1);
            if (!content || id < 0 || id > INT32_MAX) {
                *err = bert_errorf("%s: an entry of added_tokens lacks its content or id; fix or delete the file", path);
                goto done;
            }
            int special = json_bool(doc, json_member(doc, c, "special"), 0);
            /* tokenizers' AddedToken defaults: normalized unless special. */
            int normalized = json_bool(doc, json_member(doc, c, "normalized"), !special);
            if (add_token(t, content, strlen(content), (int32_t)id, special, normalized, err) != 0) goto done;
        }
    }
    rc = 0;
done:
    json_free(doc);
    free(path);
    return rc;
}

static int by_first_byte_then_longest(const void *a, const void *b)
{
    const added_token *x = a, *y = b;
    unsigned char fx = (unsigned char)x->text[0], fy = (unsigned char)y->text[0];
    if (fx != fy) return fx < fy ? -1 : 1;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return 0;
}

static void free_tokens(added_token *a, size_t n)
{
    for (size_t i = 0; i < n; i++) free(a[i].text);
    free(a);
}

static char *normalize_text(const bert_tokenizer *t, const char *s, size_t len, size_t *out_len);

static void index_set(token_set *set)
{
    if (set->n > 1) qsort(set->tokens, set->n, sizeof *set->tokens, by_first_byte_then_longest);
    for (size_t i = 0, b = 0; b <= 256; b++) {
        while (i < set->n && (unsigned char)set->tokens[i].text[0] < b) i++;
        set->bucket[b] = i;
    }
}

/* Splits the added tokens into the raw and the normalized set; a normalized
 * token is matched by its content run through the normalizer, as tokenizers'
 * AddedVocabulary does. */
static int build_token_sets(bert_tokenizer *t)
{
    /* Room for all in each set at once: growing by one would copy the set
     * for every token. */
    size_t room = t->n_added ? t->n_added : 1;
    if (!(t->raw.tokens = malloc(room * sizeof *t->raw.tokens)) ||
        !(t->norm.tokens = malloc(room * sizeof *t->norm.tokens)))
        return -1;
    for (size_t i = 0; i < t->n_added; i++) {
        const added_token *a = &t->added[i];
        token_set *set = a->normalized ? &t->norm : &t->raw;
        added_token copy = *a;
        copy.text = a->normalized ? normalize_text(t, a->text, a->len, &copy.len) : bert_strndup(a->text, a->len);
        if (!copy.text) return -1;
        if (copy.len == 0) { free(copy.text); continue; }
        set->tokens[set->n++] = copy;
    }
    index_set(&t->raw);
    index_set(&t->norm);
    return 0;
}

static int by_id(const void *a, const void *b)
{
    const added_token *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

static const added_token *find_renamed(const bert_tokenizer *t, int32_t id)
{
    added_token key = {0};
    key.id = id;
    return t->renamed.n ? bsearch(&key, t->renamed.tokens, t->renamed.n, sizeof key, by_id) : NULL;
}

/* The text of an id as the reference shows it. */
static const char *token_text(const bert_tokenizer *t, int32_t id, size_t *len)
{
    const added_token *r = find_renamed(t, id);
    if (r) { *len = r->len; return r->text; }
    *len = vocab_token_length(&t->vocab, id);
    return vocab_token(&t->vocab, id);
}

/* Records the ids whose text is not vocab.txt's, then flags as special every
 * id whose text is a special token's content: the reference's decode skips
 * by text, so a normalized special token whose form changed is not skipped. */
static int mark_specials(bert_tokenizer *t)
{
    /* Linear in the vocabulary and the added tokens: flags per id and a hash
     * of the special texts instead of a scan for each added token. */
    unsigned char *renamed = calloc((size_t)t->vocab.count, 1);
    bert_vocab special_texts;
    memset(&special_texts, 0, sizeof special_texts);
    int rc = -1;
    if (!renamed) goto done;
    if (!(t->renamed.tokens = malloc((t->raw.n + t->norm.n + 1) * sizeof *t->renamed.tokens))) goto done;
    const token_set *sets[2] = {&t->raw, &t->norm};
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < sets[k]->n; i++) {
            const added_token *a = &sets[k]->tokens[i];
            if (a->len == vocab_token_length(&t->vocab, a->id) && memcmp(a->text, vocab_token(&t->vocab, a->id), a->len) == 0)
                continue;
            if (renamed[a->id]) continue;
            renamed[a->id] = 1;
            added_token *r = &t->renamed.tokens[t->renamed.n];
            *r = *a;
            if (!(r->text = bert_strndup(a->text, a->len))) goto done;
            t->renamed.n++;
        }
    }
    if (t->renamed.n > 1) qsort(t->renamed.tokens, t->renamed.n, sizeof *t->renamed.tokens, by_id);
    for (size_t i = 0; i < t->n_added; i++) {
        const added_token *a = &t->added[i];
        if (a->special && vocab_find(&special_texts, a->text, a->len) < 0 &&
            vocab_append(&special_texts, a->text, a->len) < 0)
            goto done;
    }
    t->special_id = calloc((size_t)t->vocab.count, 1);
    if (!t->special_id) goto done;
    for (int32_t id = 0; special_texts.count && id < t->vocab.count; id++) {
        size_t len;
        const char *text = token_text(t, id, &len);
        if (vocab_find(&special_texts, text, len) >= 0) t->special_id[id] = 1;
    }
    rc = 0;
done:
    free(renamed);
    vocab_free(&special_texts);
    return rc;
}

/* Without tokenizer.json, the special tokens are the ones the config files
 * name (or BERT's defaults), where the vocabulary has them. */
static int add_named_tokens(bert_tokenizer *t, load_state *ls, char **err)
{
    for (int i = 0; i < N_NAMES; i++) {
        const char *name = ls->names[i] ? ls->names[i] : name_defaults[i];
        int32_t id = vocab_find(&t->vocab, name, strlen(name));
        if (id >= 0 && add_token(t, name, strlen(name), id, 1, 0, err) != 0) return -1;
    }
    for (size_t i = 0; i < ls->n_extra; i++) {
        int32_t id = vocab_find(&t->vocab, ls->extra[i], strlen(ls->extra[i]));
        if (id >= 0 && add_token(t, ls->extra[i], strlen(ls->extra[i]), id, 1, 0, err) != 0) return -1;
    }
    return 0;
}

static int32_t find_name(const bert_tokenizer *t, const load_state *ls, int which)
{
    const char *name = ls->names[which] ? ls->names[which] : name_defaults[which];
    return vocab_find(&t->vocab, name, strlen(name));
}

int bert_tokenizer_load(const char *model_dir, bert_tokenizer **out, char **err)
{
    *out = NULL;
    *err = NULL;
    load_state ls;
    memset(&ls, 0, sizeof ls);
    bert_tokenizer *t = calloc(1, sizeof *t);
    char *vocab_path = path_join(model_dir, "vocab.txt");
    char *data = NULL;
    size_t len = 0;
    if (!t || !vocab_path) { *err = bert_errorf("out of memory loading the tokenizer"); goto fail; }

    /* BertTokenizer's defaults, for a directory with no tokenizer files. */
    t->settings.lowercase = 1;
    t->settings.strip_accents = -1;
    t->settings.chinese_chars = 1;
    t->settings.max_input_chars_per_word = 100;
    t->clean_text = 1;
    t->decoder_wordpiece = 1;
    t->decoder_cleanup = 1;
    t->cleanup_spaces = 1;
    if (set_prefix(&t->prefix, &t->prefix_len, "##") != 0 ||
        set_prefix(&t->decoder_prefix, &t->decoder_prefix_len, "##") != 0) {
        *err = bert_errorf("out of memory loading the tokenizer");
        goto fail;
    }

    if (!(data = read_whole_file(vocab_path, &len, err))) goto fail;
    if (vocab_parse(&t->vocab, data, len) != 0) {
        *err = bert_errorf("cannot load %s: out of memory or too many lines", vocab_path);
        goto fail;
    }
    free(data);
    data = NULL;
    if (t->vocab.count == 0) {
        *err = bert_errorf("%s is empty; use the vocab.txt of the model's tokenizer", vocab_path);
        goto fail;
    }

    if (read_tokenizer_config(t, model_dir, &ls, err) != 0) goto fail;
    if (read_special_tokens_map(model_dir, &ls, err) != 0) goto fail;
    if (read_tokenizer_json(t, model_dir, &ls, err) != 0) goto fail;
    if (!ls.have_json_added && add_named_tokens(t, &ls, err) != 0) goto fail;

    t->unk = find_name(t, &ls, NAME_UNK);
    if (t->unk < 0) {
        const char *name = ls.names[NAME_UNK] ? ls.names[NAME_UNK] : name_defaults[NAME_UNK];
        *err = bert_errorf("%s has no unknown-word token \"%s\"; use the vocab.txt that belongs to the model, "
                           "or name its unknown token with unk_token in tokenizer_config.json", vocab_path, name);
        goto fail;
    }
    t->specials.cls = find_name(t, &ls, NAME_CLS);
    t->specials.sep = find_name(t, &ls, NAME_SEP);
    t->specials.mask = find_name(t, &ls, NAME_MASK);
    t->specials.pad = find_name(t, &ls, NAME_PAD);
    t->specials.unk = t->unk;
    t->strip = t->settings.strip_accents < 0 ? t->settings.lowercase : t->settings.strip_accents;

    if (build_token_sets(t) != 0 || mark_specials(t) != 0) {
        *err = bert_errorf("out of memory loading the tokenizer");
        goto fail;
    }
    free_tokens(t->added, t->n_added);
    t->added = NULL;
    t->n_added = t->added_cap = 0;
    vocab_free(&t->added_index);

    load_state_free(&ls);
    free(vocab_path);
    *out = t;
    return 0;
fail:
    if (!*err) *err = bert_errorf("out of memory loading the tokenizer");
    load_state_free(&ls);
    free(data);
    free(vocab_path);
    bert_tokenizer_free(t);
    return -1;
}

void bert_tokenizer_free(bert_tokenizer *t)
{
    if (!t) return;
    vocab_free(&t->vocab);
    vocab_free(&t->added_index);
    free_tokens(t->added, t->n_added);
    free_tokens(t->raw.tokens, t->raw.n);
    free_tokens(t->norm.tokens, t->norm.n);
    free_tokens(t->renamed.tokens, t->renamed.n);
    free(t->prefix);
    free(t->decoder_prefix);
    free(t->special_id);
    free(t);
}

/* ---- encoding ------------------------------------------------------------ */

typedef struct {
    const bert_tokenizer *tok;
    bert_ids *out;
    int32_t *marks;             /* combining marks waiting for canonical order */
    size_t n_marks, marks_cap;
    char *word;                 /* the word being built, UTF-8 */
    size_t word_len, word_cap;
    size_t word_chars;          /* its length in characters (counted on past the limit) */
    int collect;                /* keep the normalized text instead of tokenizing it */
    char *normalized;           /* the normalized text kept, UTF-8 */
    size_t normalized_len, normalized_cap;
    int failed;                 /* out of memory */
    size_t limit;               /* stop once out holds this many ids */
    int full;                   /* the limit was reached */
} encoder;

static void push(encoder *e, int32_t id)
{
    if (e->failed || e->full) return;
    if (e->out->len >= e->limit) { e->full = 1; return; }
    if (bert_ids_push(e->out, id) != 0) e->failed = 1;
}

/* Greedy longest-match-first WordPiece over one word; a word with any part
 * left unmatched, or longer than max_input_chars_per_word, is one [UNK]. */
static void wordpiece(encoder *e, const char *w, size_t len, size_t chars)
{
    const bert_tokenizer *t = e->tok;
    if (chars > (size_t)t->settings.max_input_chars_per_word) {
        push(e, t->unk);
        return;
    }
    size_t mark = e->out->len;
    for (size_t start = 0; start < len;) {
        const char *prefix = start > 0 ? t->prefix : NULL;
        size_t plen = start > 0 ? t->prefix_len : 0;
        /* No token is longer than the vocabulary's longest, so longer
         * candidates need not be tried. */
        size_t end = len;
        if (t->vocab.max_length < plen) end = start;
        else if (end - start > t->vocab.max_length - plen) end = start + (t->vocab.max_length - plen);
        while (end < len && (w[end] & 0xC0) == 0x80) end--;
        int32_t id = -1;
        while (end > start) {
            id = vocab_find2(&t->vocab, prefix, plen, w + start, end - start);
            if (id >= 0) break;
            do end--; while (end > start && (w[end] & 0xC0) == 0x80);
        }
        if (id < 0) {
            /* The word's pieces give way to one [UNK], which fits where they
             * did even when the limit stopped them. */
            e->out->len = mark;
            e->full = 0;
            push(e, t->unk);
            return;
        }
        push(e, id);
        start = end;
    }
}

static void end_word(encoder *e)
{
    if (e->word_chars == 0) return;
    wordpiece(e, e->word, e->word_len, e->word_chars);
    e->word_len = 0;
    e->word_chars = 0;
}

static void append_to_word(encoder *e, int32_t cp)
{
    /* Past the length limit the word is [UNK] whatever follows: count only. */
    if (e->word_chars++ > (size_t)e->tok->settings.max_input_chars_per_word) return;
    if (e->word_len + 4 > e->word_cap) {
        char *p = bert_grow(e->word, &e->word_cap, e->word_len + 4, 1);
        if (!p) { e->failed = 1; return; }
        e->word = p;
    }
    e->word_len += utext_encode(cp, e->word + e->word_len);
}

/* BertPreTokenizer: whitespace ends a word, punctuation is a word alone. */
static void pre_tokenize(encoder *e, int32_t cp)
{
    if (utext_is_whitespace(cp)) {
        end_word(e);
    } else if (utext_is_punctuation(cp)) {
        end_word(e);
        append_to_word(e, cp);
        end_word(e);
    } else {
        append_to_word(e, cp);
    }
}

/* The normalizer's output goes to the pre-tokenizer, or is kept when
 * normalized added tokens must be found in it first. */
static void emit(encoder *e, int32_t cp)
{
    if (!e->collect) { pre_tokenize(e, cp); return; }
    if (e->normalized_len + 4 > e->normalized_cap) {
        char *p = bert_grow(e->normalized, &e->normalized_cap, e->normalized_len + 4, 1);
        if (!p) { e->failed = 1; return; }
        e->normalized = p;
    }
    e->normalized_len += utext_encode(cp, e->normalized + e->normalized_len);
}

static void lowercase(encoder *e, int32_t cp)
{
    if (!e->tok->settings.lowercase) { emit(e, cp); return; }
    int32_t low[2];
    int n = utext_lowercase(cp, low);
    for (int i = 0; i < n; i++) emit(e, low[i]);
}

/* Canonical ordering of the held marks (a stable sort by combining class),
 * then strip_accents' removal of the nonspacing ones. */
static void flush_marks(encoder *e)
{
    size_t n = e->n_marks;
    int32_t *m = e->marks;
    if (n == 0) return;
    if (n <= 32) {
        for (size_t i = 1; i < n; i++) {
            int32_t c = m[i];
            int k = utext_combining_class(c);
            size_t j = i;
            for (; j > 0 && utext_combining_class(m[j - 1]) > k; j--) m[j] = m[j - 1];
            m[j] = c;
        }
    } else {
        /* Counting sort: a long run of marks must not cost quadratic time. */
        int32_t *sorted = malloc(n * sizeof *sorted);
        size_t start[257] = {0};
        if (!sorted) { e->failed = 1; e->n_marks = 0; return; }
        for (size_t i = 0; i < n; i++) start[utext_combining_class(m[i]) + 1]++;
        for (int k = 1; k <= 256; k++) start[k] += start[k - 1];
        for (size_t i = 0; i < n; i++) sorted[start[utext_combining_class(m[i])]++] = m[i];
        memcpy(m, sorted, n * sizeof *m);
        free(sorted);
    }
    e->n_marks = 0;
    for (size_t i = 0; i < n; i++)
        if (!utext_is_nonspacing_mark(m[i])) lowercase(e, m[i]);
}

/* strip_accents: NFD, then drop category Mn. */
static void strip_accents(encoder *e, int32_t cp)
{
    if (!e->tok->strip) { lowercase(e, cp); return; }
    int32_t d[UTEXT_MAX_DECOMPOSITION];
    int n = utext_decompose(cp, d);
    for (int i = 0; i < n; i++) {
        if (utext_combining_class(d[i]) != 0) {
            if (e->n_marks == e->marks_cap) {
                int32_t *p = bert_grow(e->marks, &e->marks_cap, e->n_marks + 1, sizeof *p);
                if (!p) { e->failed = 1; return; }
                e->marks = p;
            }
            e->marks[e->n_marks++] = d[i];
        } else {
            flush_marks(e);
            if (!utext_is_nonspacing_mark(d[i])) lowercase(e, d[i]);
        }
    }
}

/* clean_text and handle_chinese_chars, on one character of the input. */
static void normalize(encoder *e, int32_t cp)
{
    const bert_tokenizer *t = e->tok;
    if (t->clean_text) {
        if (cp == 0 || cp == UTEXT_REPLACEMENT || utext_is_control(cp)) return;
        if (utext_is_whitespace(cp)) cp = ' ';
    }
    if (t->settings.chinese_chars && utext_is_chinese(cp)) {
        strip_accents(e, ' ');
        strip_accents(e, cp);
        strip_accents(e, ' ');
    } else {
        strip_accents(e, cp);
    }
}

static int is_ascii_word_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Normalizes s[0..len) into the pre-tokenizer (or the kept text). */
static void normalize_all(encoder *e, const unsigned char *s, size_t len)
{
    const bert_tokenizer *t = e->tok;
    for (size_t i = 0; i < len && !e->failed && !e->full;) {
        /* ASCII letters and digits pass every stage unchanged but lowercasing. */
        unsigned char c = s[i];
        if (!e->collect && is_ascii_word_char(c) && e->n_marks == 0 &&
            e->word_chars < (size_t)t->settings.max_input_chars_per_word && e->word_len < e->word_cap) {
            e->word[e->word_len++] = (char)(c >= 'A' && c <= 'Z' && t->settings.lowercase ? c + 32 : c);
            e->word_chars++;
            i++;
            continue;
        }
        int32_t cp;
        i += utext_decode(s + i, len - i, &cp);
        normalize(e, cp);
    }
    flush_marks(e);
}

/* The longest token of `set` at s[0..len), or NULL. */
static const added_token *match_token(const token_set *set, const unsigned char *s, size_t len)
{
    for (size_t i = set->bucket[s[0]]; i < set->bucket[s[0] + 1]; i++) {
        const added_token *a = &set->tokens[i];
        if (a->len <= len && memcmp(a->text, s, a->len) == 0) return a;
    }
    return NULL;
}

/* Pre-tokenizes already normalized (valid UTF-8) text. */
static void pre_tokenize_all(encoder *e, const unsigned char *s, size_t len)
{
    for (size_t i = 0; i < len && !e->failed && !e->full;) {
        int32_t cp;
        i += utext_decode(s + i, len - i, &cp);
        pre_tokenize(e, cp);
    }
}

/* A stretch of text between raw-matched added tokens: normalize, then find
 * the normalized added tokens, pre-tokenize the rest and run WordPiece. */
static void encode_segment(encoder *e, const unsigned char *s, size_t len)
{
    const token_set *norm = &e->tok->norm;
    if (norm->n == 0) {
        normalize_all(e, s, len);
        end_word(e);
        return;
    }
    e->collect = 1;
    e->normalized_len = 0;
    normalize_all(e, s, len);
    e->collect = 0;
    const unsigned char *n = (const unsigned char *)e->normalized;
    size_t nlen = e->normalized_len, piece = 0;
    if (nlen == 0) return;   /* e->normalized may be NULL: no pointer arithmetic on it */
    for (size_t i = 0; i < nlen && !e->failed && !e->full;) {
        const added_token *a = match_token(norm, n + i, nlen - i);
        if (!a) { i++; continue; }
        pre_tokenize_all(e, n + piece, i - piece);
        end_word(e);
        push(e, a->id);
        i += a->len;
        piece = i;
    }
    pre_tokenize_all(e, n + piece, nlen - piece);
    end_word(e);
}

static void encoder_free(encoder *e)
{
    free(e->marks);
    free(e->word);
    free(e->normalized);
}

int bert_tokenizer_encode(const bert_tokenizer *tok, const char *text, size_t len, bert_ids *out)
{
    return bert_tokenizer_encode_max(tok, text, len, SIZE_MAX, out);
}

int bert_tokenizer_encode_max(const bert_tokenizer *tok, const char *text, size_t len, size_t max_ids,
                              bert_ids *out)
{
    return bert_tokenizer_encode_with(tok, text, len, max_ids, out, NULL);
}

void bert_encode_buffers_free(bert_encode_buffers *b)
{
    if (!b) return;
    free(b->word);
    free(b->marks);
    memset(b, 0, sizeof *b);
}

int bert_tokenizer_encode_with(const bert_tokenizer *tok, const char *text, size_t len, size_t max_ids,
                               bert_ids *out, bert_encode_buffers *keep)
{
    encoder e;
    memset(&e, 0, sizeof e);
    if (keep) {
        e.word = keep->word;
        e.word_cap = keep->word_cap;
        e.marks = keep->marks;
        e.marks_cap = keep->marks_cap;
    }
    e.tok = tok;
    e.out = out;
    e.limit = max_ids;
    const unsigned char *s = (const unsigned char *)text;
    size_t segment = 0;
    /* Added tokens start with an ASCII or lead byte, never inside a
     * character, so matching the raw bytes finds what matching the decoded
     * text would. */
    for (size_t i = 0; i < len && !e.failed && !e.full;) {
        const added_token *a = tok->raw.n ? match_token(&tok->raw, s + i, len - i) : NULL;
        if (!a) { i++; continue; }
        encode_segment(&e, s + segment, i - segment);
        push(&e, a->id);
        i += a->len;
        segment = i;
    }
    if (!e.failed && !e.full) encode_segment(&e, s + segment, len - segment);
    if (keep) {
        /* The buffers, grown or not, go back to the caller. */
        keep->word = e.word;
        keep->word_cap = e.word_cap;
        keep->marks = e.marks;
        keep->marks_cap = e.marks_cap;
        e.word = NULL;
        e.marks = NULL;
    }
    encoder_free(&e);
    return e.failed ? -1 : 0;
}

/* An added token's content as the normalizer leaves it (malloc'd). */
static char *normalize_text(const bert_tokenizer *t, const char *s, size_t len, size_t *out_len)
{
    encoder e;
    memset(&e, 0, sizeof e);
    e.tok = t;
    e.collect = 1;
    normalize_all(&e, (const unsigned char *)s, len);
    char *text = e.failed ? NULL : bert_strndup(e.normalized ? e.normalized : "", e.normalized_len);
    *out_len = e.normalized_len;
    encoder_free(&e);
    return text;
}

/* ---- decoding ------------------------------------------------------------ */

typedef struct {
    const char *from, *to;
} replacement;

/* The WordPiece decoder's cleanup (tokenizers' decoders::wordpiece::cleanup). */
static const replacement decoder_cleanup[] = {
    {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
    {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
};

/* transformers' PreTrainedTokenizerBase.clean_up_tokenization. */
static const replacement python_cleanup[] = {
    {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
    {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
};

/* Applies each replacement in turn to s[from..len), each over the whole
 * text, left to right and without overlap, as str.replace does.  The
 * replacements never lengthen the text, so it is rewritten in place. */
static size_t replace_all(char *s, size_t from, size_t len, const replacement *r, size_t nr)
{
    for (size_t k = 0; k < nr; k++) {
        size_t fl = strlen(r[k].from), tl = strlen(r[k].to), o = from;
        for (size_t i = from; i < len;) {
            if (i + fl <= len && memcmp(s + i, r[k].from, fl) == 0) {
                memmove(s + o, r[k].to, tl);
                o += tl;
                i += fl;
            } else {
                s[o++] = s[i++];
            }
        }
        len = o;
    }
    s[len] = '\0';
    return len;
}

char *bert_tokenizer_decode(const bert_tokenizer *tok, const int32_t *ids, size_t n, int skip_special)
{
    bert_text b = {0};
    bert_text_add(&b, "", 0);
    int first = 1;
    for (size_t i = 0; i < n && !b.failed; i++) {
        size_t tl;
        const char *token = token_text(tok, ids[i], &tl);
        if (!token || (skip_special && tok->special_id[ids[i]])) continue;
        size_t at = b.len;
        if (!tok->decoder_wordpiece) {
            if (!first) bert_text_add(&b, " ", 1);
            bert_text_add(&b, token, tl);
        } else {
            size_t pl = tok->decoder_prefix_len;
            if (first) {
                bert_text_add(&b, token, tl);
            } else if (tl >= pl && memcmp(token, tok->decoder_prefix, pl) == 0) {
                /* replacen(prefix, "", 1): the first occurrence, here at the start. */
                bert_text_add(&b, token + pl, tl - pl);
            } else {
                bert_text_add(&b, " ", 1);
                bert_text_add(&b, token, tl);
            }
            /* The decoder cleans each token (with its leading space) alone. */
            if (tok->decoder_cleanup && !b.failed)
                b.len = replace_all(b.s, at, b.len, decoder_cleanup, sizeof decoder_cleanup / sizeof *decoder_cleanup);
        }
        first = 0;
    }
    if (tok->cleanup_spaces && !b.failed)
        b.len = replace_all(b.s, 0, b.len, python_cleanup, sizeof python_cleanup / sizeof *python_cleanup);
    if (b.failed) { free(b.s); return NULL; }
    return b.s;
}

/* ---- queries ------------------------------------------------------------- */

size_t bert_tokenizer_vocab_size(const bert_tokenizer *tok) { return (size_t)tok->vocab.count; }

const char *bert_tokenizer_token(const bert_tokenizer *tok, int32_t id)
{
    size_t len;
    return token_text(tok, id, &len);
}

int32_t bert_tokenizer_find(const bert_tokenizer *tok, const char *token, size_t len)
{
    return vocab_find(&tok->vocab, token, len);
}

const bert_special_ids *bert_tokenizer_specials(const bert_tokenizer *tok) { return &tok->specials; }

int bert_tokenizer_is_special(const bert_tokenizer *tok, int32_t id)
{
    return id >= 0 && id < tok->vocab.count && tok->special_id[id];
}

const bert_tokenizer_settings *bert_tokenizer_get_settings(const bert_tokenizer *tok) { return &tok->settings; }
