/*
 * tok_wordpiece.c - BERT's WordPiece tokenizer, as Hugging Face's tokenizer.json
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
#include "tokens.h"
#include "tok_internal.h"

#include "../base/buffer.h"
#include "../base/error.h"
#include "../base/file.h"
#include "../base/json.h"
#include "../base/unicode_text.h"
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

struct wp_tokenizer {
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



/* ---- loading ------------------------------------------------------------- */

/* vocab.txt of the largest published vocabularies is a few MB. */
#define VOCAB_MAX_BYTES ((size_t)1 << 30)

static char *read_whole_file(const char *path, size_t *len, char **err)
{
    int missing = 0;
    char *data = bert_file_read(path, VOCAB_MAX_BYTES, len, &missing, err);
    if (missing) {
        free(*err);
        *err = bert_errorf("cannot open %s: %s; a model directory needs the vocab.txt of its tokenizer, "
                           "as Hugging Face publishes it", path, strerror(ENOENT));
    }
    return data;
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
static int add_token(wp_tokenizer *t, const char *text, size_t len, int32_t id, int special, int normalized,
                     char **err)
{
    if (len == 0) return 0;
    /* A hash lookup, not a scan: a tokenizer.json may list many thousands. */
    int32_t known = bert_vocab_find(&t->added_index, text, len);
    if (known >= 0) {
        t->added[known].special |= special;
        t->added[known].normalized = normalized;
        return 0;
    }
    if (id == t->vocab.count) {
        if (bert_vocab_append(&t->vocab, text, len) < 0) return -1;
    } else if (id < 0 || id > t->vocab.count) {
        *err = bert_errorf("tokenizer.json: the added token \"%s\" has id %ld but vocab.txt has %ld tokens; "
                           "use the vocab.txt that came with this tokenizer.json",
                           text, (long)id, (long)t->vocab.count);
        return -1;
    }
    added_token *grown = bert_grow(t->added, &t->added_cap, t->n_added + 1, sizeof *grown);
    if (!grown) return -1;
    t->added = grown;
    added_token *a = &t->added[t->n_added];
    if (!(a->text = bert_strndup(text, len))) return -1;
    if (bert_vocab_append(&t->added_index, text, len) != (int32_t)t->n_added) {
        free(a->text);
        return -1;
    }
    a->len = len;
    a->id = id;
    a->special = special;
    a->normalized = normalized;
    t->n_added++;
    return 0;
}

/* The named tokens and additional_special_tokens of one config file. */
static int read_token_names(const json_doc *doc, load_state *ls)
{
    for (int i = 0; i < N_NAMES; i++)
        if (set_name(&ls->names[i], tok_token_name(doc, bert_json_member(doc, 0, name_keys[i]))) != 0) return -1;
    int extra = bert_json_member(doc, 0, "additional_special_tokens");
    if (ls->n_extra == 0 && extra >= 0 && doc->nodes[extra].type == JSON_ARRAY) {
        for (int c = doc->nodes[extra].first_child; c >= 0; c = doc->nodes[c].next_sibling) {
            const char *name = tok_token_name(doc, c);
            if (name && add_extra(ls, name) != 0) return -1;
        }
    }
    return 0;
}

static int read_bool_or_null(const json_doc *doc, int node, int fallback)
{
    if (node < 0) return fallback;
    if (doc->nodes[node].type == JSON_NULL) return -1;
    return bert_json_bool(doc, node, fallback);
}



static int read_tokenizer_config(wp_tokenizer *t, bert_model_files *files, load_state *ls, char **err)
{
    const json_doc *doc = NULL;
    int rc = bert_model_files_json(files, "tokenizer_config.json", 0, &doc, err);
    if (rc <= 0) return rc;
    rc = -1;
    bert_tokenizer_settings *s = &t->settings;
    s->lowercase = bert_json_bool(doc, bert_json_member(doc, 0, "do_lower_case"), s->lowercase);
    s->strip_accents = read_bool_or_null(doc, bert_json_member(doc, 0, "strip_accents"), s->strip_accents);
    s->chinese_chars = bert_json_bool(doc, bert_json_member(doc, 0, "tokenize_chinese_chars"), s->chinese_chars);
    t->cleanup_spaces = bert_json_bool(doc, bert_json_member(doc, 0, "clean_up_tokenization_spaces"), t->cleanup_spaces);
    s->model_max_length = tok_model_max_length_of(doc);
    if (read_token_names(doc, ls) != 0) goto done;
    /* transformers 4.x saves every added token here, keyed by id. */
    int dec = bert_json_member(doc, 0, "added_tokens_decoder");
    if (dec >= 0 && doc->nodes[dec].type == JSON_OBJECT) {
        for (int c = doc->nodes[dec].first_child; c >= 0; c = doc->nodes[c].next_sibling) {
            const char *name = tok_token_name(doc, c);
            int special = bert_json_bool(doc, bert_json_member(doc, c, "special"), 0);
            if (name && special && add_extra(ls, name) != 0) goto done;
        }
    }
    rc = 0;
done:
    return rc;
}

static int read_special_tokens_map(bert_model_files *files, load_state *ls, char **err)
{
    const json_doc *doc = NULL;
    int rc = bert_model_files_json(files, "special_tokens_map.json", 0, &doc, err);
    if (rc <= 0) return rc;
    return read_token_names(doc, ls);
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
static int read_tokenizer_json(wp_tokenizer *t, bert_model_files *files, const json_doc *doc, load_state *ls,
                               char **err)
{
    if (!doc) return 0;
    int rc = -1;
    char *path = bert_model_files_path(files, "tokenizer.json");
    if (!path) return -1;
    bert_tokenizer_settings *s = &t->settings;

    int norm = bert_json_member(doc, 0, "normalizer");
    if (norm >= 0 && doc->nodes[norm].type == JSON_NULL) {
        s->lowercase = s->chinese_chars = s->strip_accents = t->clean_text = 0;
    } else if (norm >= 0) {
        const char *type = bert_json_str(doc, bert_json_member(doc, norm, "type"), "");
        if (strcmp(type, "BertNormalizer") != 0) {
            unsupported(err, path, "the normalizer", type, "BertNormalizer");
            goto done;
        }
        t->clean_text = bert_json_bool(doc, bert_json_member(doc, norm, "clean_text"), 1);
        s->chinese_chars = bert_json_bool(doc, bert_json_member(doc, norm, "handle_chinese_chars"), 1);
        s->strip_accents = read_bool_or_null(doc, bert_json_member(doc, norm, "strip_accents"), -1);
        s->lowercase = bert_json_bool(doc, bert_json_member(doc, norm, "lowercase"), 1);
    }

    int pre = bert_json_member(doc, 0, "pre_tokenizer");
    if (pre >= 0) {
        const char *type = bert_json_str(doc, bert_json_member(doc, pre, "type"), "null");
        if (strcmp(type, "BertPreTokenizer") != 0) {
            unsupported(err, path, "the pre_tokenizer", type, "BertPreTokenizer");
            goto done;
        }
    }

    int model = bert_json_member(doc, 0, "model");
    if (model >= 0) {
        const char *type = bert_json_str(doc, bert_json_member(doc, model, "type"), "WordPiece");
        if (strcmp(type, "WordPiece") != 0) {
            unsupported(err, path, "the model", type, "WordPiece");
            goto done;
        }
        long long chars = bert_json_int(doc, bert_json_member(doc, model, "max_input_chars_per_word"), s->max_input_chars_per_word);
        s->max_input_chars_per_word = chars < 0 ? 0 : chars > INT_MAX ? INT_MAX : (int)chars;
        const char *prefix = bert_json_str(doc, bert_json_member(doc, model, "continuing_subword_prefix"), NULL);
        if (prefix && set_prefix(&t->prefix, &t->prefix_len, prefix) != 0) goto done;
        const char *unk = bert_json_str(doc, bert_json_member(doc, model, "unk_token"), NULL);
        if (unk) {
            free(ls->names[NAME_UNK]);
            ls->names[NAME_UNK] = NULL;
            if (set_name(&ls->names[NAME_UNK], unk) != 0) goto done;
        }
    }

    int decoder = bert_json_member(doc, 0, "decoder");
    if (decoder >= 0 && doc->nodes[decoder].type == JSON_NULL) {
        t->decoder_wordpiece = 0;
    } else if (decoder >= 0) {
        const char *type = bert_json_str(doc, bert_json_member(doc, decoder, "type"), "");
        if (strcmp(type, "WordPiece") != 0) {
            unsupported(err, path, "the decoder", type, "WordPiece");
            goto done;
        }
        t->decoder_cleanup = bert_json_bool(doc, bert_json_member(doc, decoder, "cleanup"), 1);
        const char *prefix = bert_json_str(doc, bert_json_member(doc, decoder, "prefix"), "##");
        if (set_prefix(&t->decoder_prefix, &t->decoder_prefix_len, prefix) != 0) goto done;
    }

    int added = bert_json_member(doc, 0, "added_tokens");
    if (added >= 0 && doc->nodes[added].type == JSON_ARRAY) {
        ls->have_json_added = 1;
        for (int c = doc->nodes[added].first_child; c >= 0; c = doc->nodes[c].next_sibling) {
            const char *content = bert_json_str(doc, bert_json_member(doc, c, "content"), NULL);
            long long id = bert_json_int(doc, bert_json_member(doc, c, "id"), -1);
            if (!content || id < 0 || id > INT32_MAX) {
                *err = bert_errorf("%s: an entry of added_tokens lacks its content or id; fix or delete the file", path);
                goto done;
            }
            int special = bert_json_bool(doc, bert_json_member(doc, c, "special"), 0);
            /* tokenizers' AddedToken defaults: normalized unless special. */
            int normalized = bert_json_bool(doc, bert_json_member(doc, c, "normalized"), !special);
            if (add_token(t, content, strlen(content), (int32_t)id, special, normalized, err) != 0) goto done;
        }
    }
    rc = 0;
done:
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

static char *normalize_text(const wp_tokenizer *t, const char *s, size_t len, size_t *out_len);

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
static int build_token_sets(wp_tokenizer *t)
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

static const added_token *find_renamed(const wp_tokenizer *t, int32_t id)
{
    added_token key = {0};
    key.id = id;
    return t->renamed.n ? bsearch(&key, t->renamed.tokens, t->renamed.n, sizeof key, by_id) : NULL;
}

/* The text of an id as the reference shows it. */
static const char *token_text(const wp_tokenizer *t, int32_t id, size_t *len)
{
    const added_token *r = find_renamed(t, id);
    if (r) { *len = r->len; return r->text; }
    *len = bert_vocab_token_length(&t->vocab, id);
    return bert_vocab_token(&t->vocab, id);
}

/* Records the ids whose text is not vocab.txt's, then flags as special every
 * id whose text is a special token's content: the reference's decode skips
 * by text, so a normalized special token whose form changed is not skipped. */
static int mark_specials(wp_tokenizer *t)
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
            if (a->len == bert_vocab_token_length(&t->vocab, a->id) && memcmp(a->text, bert_vocab_token(&t->vocab, a->id), a->len) == 0)
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
        if (a->special && bert_vocab_find(&special_texts, a->text, a->len) < 0 &&
            bert_vocab_append(&special_texts, a->text, a->len) < 0)
            goto done;
    }
    t->special_id = calloc((size_t)t->vocab.count, 1);
    if (!t->special_id) goto done;
    for (int32_t id = 0; special_texts.count && id < t->vocab.count; id++) {
        size_t len;
        const char *text = token_text(t, id, &len);
        if (bert_vocab_find(&special_texts, text, len) >= 0) t->special_id[id] = 1;
    }
    rc = 0;
done:
    free(renamed);
    bert_vocab_free(&special_texts);
    return rc;
}

/* Without tokenizer.json, the special tokens are the ones the config files
 * name (or BERT's defaults), where the vocabulary has them. */
static int add_named_tokens(wp_tokenizer *t, load_state *ls, char **err)
{
    for (int i = 0; i < N_NAMES; i++) {
        const char *name = ls->names[i] ? ls->names[i] : name_defaults[i];
        int32_t id = bert_vocab_find(&t->vocab, name, strlen(name));
        if (id >= 0 && add_token(t, name, strlen(name), id, 1, 0, err) != 0) return -1;
    }
    for (size_t i = 0; i < ls->n_extra; i++) {
        int32_t id = bert_vocab_find(&t->vocab, ls->extra[i], strlen(ls->extra[i]));
        if (id >= 0 && add_token(t, ls->extra[i], strlen(ls->extra[i]), id, 1, 0, err) != 0) return -1;
    }
    return 0;
}

static int32_t find_name(const wp_tokenizer *t, const load_state *ls, int which)
{
    const char *name = ls->names[which] ? ls->names[which] : name_defaults[which];
    return bert_vocab_find(&t->vocab, name, strlen(name));
}

int wp_load(bert_model_files *files, const json_doc *tj, wp_tokenizer **out, char **err)
{
    *out = NULL;
    *err = NULL;
    load_state ls;
    memset(&ls, 0, sizeof ls);
    wp_tokenizer *t = calloc(1, sizeof *t);
    char *vocab_path = bert_model_files_path(files, "vocab.txt");
    char *data = NULL;
    size_t len = 0;
    if (!t || !vocab_path) goto fail;

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
        set_prefix(&t->decoder_prefix, &t->decoder_prefix_len, "##") != 0) goto fail;

    int from_json = tok_json_vocab(tj, &t->vocab, err);
    if (from_json < 0) goto fail;
    if (!from_json) {
        if (!(data = read_whole_file(vocab_path, &len, err))) goto fail;
        if (bert_vocab_parse(&t->vocab, data, len) != 0) {
            *err = bert_errorf("cannot load %s: out of memory or too many lines", vocab_path);
            goto fail;
        }
        free(data);
        data = NULL;
    }
    if (t->vocab.count == 0) {
        *err = bert_errorf("%s is empty; use the vocab.txt of the model's tokenizer", vocab_path);
        goto fail;
    }

    if (read_tokenizer_config(t, files, &ls, err) != 0) goto fail;
    if (read_special_tokens_map(files, &ls, err) != 0) goto fail;
    if (read_tokenizer_json(t, files, tj, &ls, err) != 0) goto fail;
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

    if (build_token_sets(t) != 0 || mark_specials(t) != 0) goto fail;
    free_tokens(t->added, t->n_added);
    t->added = NULL;
    t->n_added = t->added_cap = 0;
    bert_vocab_free(&t->added_index);

    load_state_free(&ls);
    free(vocab_path);
    *out = t;
    return 0;
fail:
    /* A step that failed without a message ran out of memory. */
    if (!*err) *err = bert_errorf("out of memory loading the tokenizer");
    load_state_free(&ls);
    free(data);
    free(vocab_path);
    wp_free(t);
    return -1;
}

void wp_free(wp_tokenizer *t)
{
    if (!t) return;
    bert_vocab_free(&t->vocab);
    bert_vocab_free(&t->added_index);
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

/* The original text a normalized character came from: characters as SQLite
 * counts them, and bytes. */
typedef struct {
    int64_t start, end;
    int64_t byte_start, byte_end;
} source_span;

/* What an encode that records offsets carries besides the ids: spans
 * parallel to the bytes of the word being built, of the held marks and of
 * the kept normalized text, and where the reading of the text stands. */
typedef struct {
    bert_spans *out;
    size_t ids_base, spans_base;  /* out->len of the ids and the spans when the call began */
    source_span in;               /* the input character being normalized */
    source_span cur;              /* the span the character being emitted takes */
    source_span last;             /* NFD: the span the last character that was not inserted took */
    source_span word_first, word_last;  /* the first and last character of the word */
    source_span *word;            /* per byte of the word */
    size_t word_cap;
    source_span *marks;           /* per held mark that is not an insertion, in the order held */
    size_t n_marks, marks_cap;
    source_span *normalized;      /* per byte of the kept normalized text */
    size_t normalized_cap;
    int64_t chars;                /* SQLite characters read so far */
    int absorb;                   /* the current character started with a byte >= 0xC0 */
    int64_t word_no;              /* the pre-tokenizer word being built */
} span_state;

/* One text's way through the normalizer, the pre-tokenizer and WordPiece,
 * one character at a time. */
typedef struct {
    const wp_tokenizer *tok;
    bert_ids *out;
    bert_encode_buffers buf;    /* marks, word and normalized text, kept by callers who ask */
    size_t n_marks;             /* combining marks waiting for canonical order */
    size_t word_len;            /* the word being built, UTF-8 */
    size_t word_chars;          /* its length in characters (counted on past the limit) */
    int collect;                /* keep the normalized text instead of tokenizing it */
    size_t normalized_len;      /* the normalized text kept, UTF-8 */
    int failed;                 /* out of memory */
    size_t limit;               /* stop once out holds this many ids */
    int full;                   /* the limit was reached */
    span_state *sp;             /* NULL: no offsets wanted */
} encode_pass;

/* A held mark that a decomposition inserted after its first character
 * carries this flag: Hugging Face gives it the span of the character before
 * it, where one that is not inserted takes the next input character's. */
#define MARK_INSERTED ((int32_t)1 << 30)
#define MARK_CODE_POINT(m) ((m) & (MARK_INSERTED - 1))

/* Room for n spans in a span array (with offsets on only). */
static int span_room(encode_pass *p, source_span **a, size_t *cap, size_t n)
{
    if (n <= *cap) return 0;
    source_span *grown = bert_grow(*a, cap, n, sizeof *grown);
    if (!grown) { p->failed = 1; return -1; }
    *a = grown;
    return 0;
}

/* Reads bytes s[0..n) of the text, counting characters as SQLite does;
 * the span of the bytes is the characters they touch. */
static source_span read_bytes(span_state *sp, const unsigned char *s, size_t n, int64_t at)
{
    source_span span = {0, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80 || !sp->absorb) {
            sp->chars++;
            sp->absorb = s[i] >= 0xC0;
        }
        if (i == 0) span.start = sp->chars - 1;
    }
    span.end = sp->chars;
    span.byte_start = at;
    span.byte_end = at + (int64_t)n;
    return span;
}

static void push(encode_pass *p, int32_t id)
{
    if (p->failed || p->full) return;
    if (p->out->len >= p->limit) { p->full = 1; return; }
    if (bert_ids_push(p->out, id) != 0) p->failed = 1;
}

/* push, and with offsets on the span from `first`'s start to `last`'s end. */
static void push_spanning(encode_pass *p, int32_t id, const source_span *first, const source_span *last)
{
    size_t before = p->out->len;
    push(p, id);
    span_state *sp = p->sp;
    if (!sp || p->out->len == before) return;
    bert_spans *v = sp->out;
    if (v->len == v->cap) {
        bert_token_span *grown = bert_grow(v->at, &v->cap, v->len + 1, sizeof *grown);
        if (!grown) { p->failed = 1; return; }
        v->at = grown;
    }
    bert_token_span *t = &v->at[v->len++];
    t->start = first->start;
    t->end = last->end;
    t->byte_start = first->byte_start;
    t->byte_end = last->byte_end;
    t->word = sp->word_no;
}

/* Drops the ids (and spans) appended after out->len was `mark`. */
static inline void roll_back(encode_pass *p, size_t mark)
{
    p->out->len = mark;
    if (p->sp) p->sp->out->len = p->sp->spans_base + (mark - p->sp->ids_base);
}

/* Greedy longest-match-first WordPiece over one word; a word with any part
 * left unmatched, or longer than max_input_chars_per_word, is one [UNK].
 * `spans` is a constant at each call (and equals p->sp != NULL), so the
 * encode without offsets runs the loop it always ran. */
static inline __attribute__((always_inline)) void wordpiece(encode_pass *p, const char *w, size_t len, size_t chars,
                                                           const int spans)
{
    const wp_tokenizer *t = p->tok;
    span_state *sp = spans ? p->sp : NULL;
    if (chars > (size_t)t->settings.max_input_chars_per_word) {
        if (spans) push_spanning(p, t->unk, &sp->word_first, &sp->word_last);
        else push(p, t->unk);
        return;
    }
    size_t mark = p->out->len;
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
            id = bert_vocab_find2(&t->vocab, prefix, plen, w + start, end - start);
            if (id >= 0) break;
            do end--; while (end > start && (w[end] & 0xC0) == 0x80);
        }
        if (id < 0) {
            /* The word's pieces give way to one [UNK], which fits where they
             * did even when the limit stopped them. */
            roll_back(p, mark);
            p->full = 0;
            if (spans) push_spanning(p, t->unk, &sp->word_first, &sp->word_last);
            else push(p, t->unk);
            return;
        }
        if (spans) push_spanning(p, id, &sp->word[start], &sp->word[end - 1]);
        else push(p, id);
        start = end;
    }
}

static void end_word(encode_pass *p)
{
    if (p->word_chars == 0) return;
    if (p->sp) {
        wordpiece(p, p->buf.word, p->word_len, p->word_chars, 1);
        p->sp->word_no++;
    } else {
        wordpiece(p, p->buf.word, p->word_len, p->word_chars, 0);
    }
    p->word_len = 0;
    p->word_chars = 0;
}

/* Grows the word buffer (and with offsets its spans) to hold `need` bytes. */
static int word_room(encode_pass *p, size_t need)
{
    if (need > p->buf.word_cap) {
        char *grown = bert_grow(p->buf.word, &p->buf.word_cap, need, 1);
        if (!grown) { p->failed = 1; return -1; }
        p->buf.word = grown;
    }
    return p->sp ? span_room(p, &p->sp->word, &p->sp->word_cap, p->buf.word_cap) : 0;
}

static void append_to_word(encode_pass *p, int32_t cp)
{
    span_state *sp = p->sp;
    if (sp) {
        if (p->word_chars == 0) sp->word_first = sp->cur;
        sp->word_last = sp->cur;
    }
    /* Past the length limit the word is [UNK] whatever follows: count only. */
    if (p->word_chars++ > (size_t)p->tok->settings.max_input_chars_per_word) return;
    if (p->word_len + 4 > p->buf.word_cap && word_room(p, p->word_len + 4) != 0) return;
    size_t n = bert_utext_encode(cp, p->buf.word + p->word_len);
    if (sp)
        for (size_t i = 0; i < n; i++) sp->word[p->word_len + i] = sp->cur;
    p->word_len += n;
}

/* BertPreTokenizer: whitespace ends a word, punctuation is a word alone. */
static void pre_tokenize(encode_pass *p, int32_t cp)
{
    if (bert_utext_is_whitespace(cp)) {
        end_word(p);
    } else if (bert_utext_is_punctuation(cp)) {
        end_word(p);
        append_to_word(p, cp);
        end_word(p);
    } else {
        append_to_word(p, cp);
    }
}

/* The normalizer's output goes to the pre-tokenizer, or is kept when
 * normalized added tokens must be found in it first. */
static void emit(encode_pass *p, int32_t cp)
{
    if (!p->collect) { pre_tokenize(p, cp); return; }
    if (p->normalized_len + 4 > p->buf.normalized_cap) {
        char *grown = bert_grow(p->buf.normalized, &p->buf.normalized_cap, p->normalized_len + 4, 1);
        if (!grown) { p->failed = 1; return; }
        p->buf.normalized = grown;
    }
    span_state *sp = p->sp;
    if (sp && span_room(p, &sp->normalized, &sp->normalized_cap, p->buf.normalized_cap) != 0) return;
    size_t n = bert_utext_encode(cp, p->buf.normalized + p->normalized_len);
    if (sp)
        for (size_t i = 0; i < n; i++) sp->normalized[p->normalized_len + i] = sp->cur;
    p->normalized_len += n;
}

static void lowercase(encode_pass *p, int32_t cp)
{
    if (!p->tok->settings.lowercase) { emit(p, cp); return; }
    int32_t low[2];
    int n = bert_utext_lowercase(cp, low);
    for (int i = 0; i < n; i++) emit(p, low[i]);
}

static int mark_class(int32_t m) { return bert_utext_combining_class(MARK_CODE_POINT(m)); }

/* Canonical ordering of the held marks (a stable sort by combining class),
 * then strip_accents' removal of the nonspacing ones. */
static void flush_marks(encode_pass *p)
{
    size_t n = p->n_marks;
    int32_t *m = p->buf.marks;
    if (n == 0) return;
    if (n <= 32) {
        for (size_t i = 1; i < n; i++) {
            int32_t c = m[i];
            int k = mark_class(c);
            size_t j = i;
            for (; j > 0 && mark_class(m[j - 1]) > k; j--) m[j] = m[j - 1];
            m[j] = c;
        }
    } else {
        /* Counting sort: a long run of marks must not cost quadratic time. */
        int32_t *sorted = malloc(n * sizeof *sorted);
        size_t start[257] = {0};
        if (!sorted) { p->failed = 1; p->n_marks = 0; return; }
        for (size_t i = 0; i < n; i++) start[mark_class(m[i]) + 1]++;
        for (int k = 1; k <= 256; k++) start[k] += start[k - 1];
        for (size_t i = 0; i < n; i++) sorted[start[mark_class(m[i])]++] = m[i];
        memcpy(m, sorted, n * sizeof *m);
        free(sorted);
    }
    p->n_marks = 0;
    span_state *sp = p->sp;
    if (!sp) {
        for (size_t i = 0; i < n; i++)
            if (!bert_utext_is_nonspacing_mark(m[i])) lowercase(p, m[i]);
        return;
    }
    /* Hugging Face aligns the reordered marks by position: each mark that
     * is not an insertion takes the next held input span in order, an
     * inserted one the span before it. */
    source_span keep = sp->cur;
    size_t next = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(m[i] & MARK_INSERTED) && next < sp->n_marks) sp->last = sp->marks[next++];
        sp->cur = sp->last;
        int32_t cp = MARK_CODE_POINT(m[i]);
        if (!bert_utext_is_nonspacing_mark(cp)) lowercase(p, cp);
    }
    sp->n_marks = 0;
    sp->cur = keep;
}

/* strip_accents: NFD, then drop category Mn. */
static void strip_accents(encode_pass *p, int32_t cp)
{
    if (!p->tok->strip) { lowercase(p, cp); return; }
    span_state *sp = p->sp;
    int32_t d[UTEXT_MAX_DECOMPOSITION];
    int n = bert_utext_decompose(cp, d);
    for (int i = 0; i < n; i++) {
        if (bert_utext_combining_class(d[i]) != 0) {
            if (p->n_marks == p->buf.marks_cap) {
                int32_t *grown = bert_grow(p->buf.marks, &p->buf.marks_cap, p->n_marks + 1, sizeof *grown);
                if (!grown) { p->failed = 1; return; }
                p->buf.marks = grown;
            }
            int32_t held = d[i];
            if (sp && i > 0) held |= MARK_INSERTED;
            if (sp && i == 0) {
                if (span_room(p, &sp->marks, &sp->marks_cap, sp->n_marks + 1) != 0) return;
                sp->marks[sp->n_marks++] = sp->in;
            }
            p->buf.marks[p->n_marks++] = held;
        } else {
            flush_marks(p);
            if (sp) {
                if (i == 0) sp->last = sp->in;
                sp->cur = sp->last;
            }
            if (!bert_utext_is_nonspacing_mark(d[i])) lowercase(p, d[i]);
        }
    }
}

/* clean_text and handle_chinese_chars, on one character of the input. */
static inline __attribute__((always_inline)) void normalize(encode_pass *p, int32_t cp)
{
    const wp_tokenizer *t = p->tok;
    if (t->clean_text) {
        if (cp == 0 || cp == UTEXT_REPLACEMENT || bert_utext_is_control(cp)) return;
        if (bert_utext_is_whitespace(cp)) cp = ' ';
    }
    if (t->settings.chinese_chars && bert_utext_is_chinese(cp)) {
        strip_accents(p, ' ');
        strip_accents(p, cp);
        strip_accents(p, ' ');
    } else {
        strip_accents(p, cp);
    }
}

static int is_ascii_word_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Normalizes s[0..len) (which starts `at` bytes into the text) into the
 * pre-tokenizer (or the kept text).  `spans` is a constant at each call, so
 * the encode without offsets keeps its loop as it was. */
static inline __attribute__((always_inline)) void normalize_run(encode_pass *p, const unsigned char *s, size_t len,
                                                               int64_t at, const int spans)
{
    const wp_tokenizer *t = p->tok;
    span_state *sp = p->sp;
    for (size_t i = 0; i < len && !p->failed && !p->full;) {
        /* ASCII letters and digits pass every stage unchanged but lowercasing. */
        unsigned char c = s[i];
        if (!p->collect && is_ascii_word_char(c) && p->n_marks == 0 &&
            p->word_chars < (size_t)t->settings.max_input_chars_per_word && p->word_len < p->buf.word_cap) {
            if (spans) {
                source_span one = {sp->chars, sp->chars + 1, at + (int64_t)i, at + (int64_t)i + 1};
                sp->chars++;
                sp->absorb = 0;
                if (p->word_chars == 0) sp->word_first = one;
                sp->word_last = one;
                sp->word[p->word_len] = one;
            }
            p->buf.word[p->word_len++] = (char)(c >= 'A' && c <= 'Z' && t->settings.lowercase ? c + 32 : c);
            p->word_chars++;
            i++;
            continue;
        }
        int32_t cp;
        size_t n = bert_utext_decode(s + i, len - i, &cp);
        if (spans) sp->cur = sp->in = read_bytes(sp, s + i, n, at + (int64_t)i);
        i += n;
        normalize(p, cp);
    }
    flush_marks(p);
}

static void normalize_all(encode_pass *p, const unsigned char *s, size_t len, int64_t at)
{
    if (p->sp) normalize_run(p, s, len, at, 1);
    else normalize_run(p, s, len, at, 0);
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

/* Pre-tokenizes s[0..len) of the kept normalized text (valid UTF-8), which
 * starts at byte `from` of it. */
static void pre_tokenize_all(encode_pass *p, const unsigned char *s, size_t len, size_t from)
{
    for (size_t i = 0; i < len && !p->failed && !p->full;) {
        int32_t cp;
        if (p->sp) p->sp->cur = p->sp->normalized[from + i];
        i += bert_utext_decode(s + i, len - i, &cp);
        pre_tokenize(p, cp);
    }
}

/* An added token ends the word before it and is a word of its own. */
static void push_added(encode_pass *p, int32_t id, const source_span *first, const source_span *last)
{
    end_word(p);
    push_spanning(p, id, first, last);
    if (p->sp) p->sp->word_no++;
}

/* A stretch of text between raw-matched added tokens (at byte `at` of the
 * text): normalize, then find the normalized added tokens, pre-tokenize the
 * rest and run WordPiece. */
static void encode_segment(encode_pass *p, const unsigned char *s, size_t len, int64_t at)
{
    const token_set *norm = &p->tok->norm;
    if (norm->n == 0) {
        normalize_all(p, s, len, at);
        end_word(p);
        return;
    }
    p->collect = 1;
    p->normalized_len = 0;
    normalize_all(p, s, len, at);
    p->collect = 0;
    const unsigned char *n = (const unsigned char *)p->buf.normalized;
    size_t nlen = p->normalized_len, piece = 0;
    if (nlen == 0) return;   /* p->buf.normalized may be NULL: no pointer arithmetic on it */
    span_state *sp = p->sp;
    for (size_t i = 0; i < nlen && !p->failed && !p->full;) {
        const added_token *a = match_token(norm, n + i, nlen - i);
        if (!a) { i++; continue; }
        pre_tokenize_all(p, n + piece, i - piece, piece);
        if (sp) push_added(p, a->id, &sp->normalized[i], &sp->normalized[i + a->len - 1]);
        else push_added(p, a->id, NULL, NULL);
        i += a->len;
        piece = i;
    }
    pre_tokenize_all(p, n + piece, nlen - piece, piece);
    end_word(p);
}



static int encode(const wp_tokenizer *tok, const char *text, size_t len, size_t max_ids, bert_ids *out,
                  span_state *sp, bert_encode_buffers *keep)
{
    encode_pass p;
    memset(&p, 0, sizeof p);
    if (keep) p.buf = *keep;
    p.tok = tok;
    p.out = out;
    p.limit = max_ids;
    p.sp = sp;
    /* The fast path writes into the word buffer while it has room, so the
     * word's spans must have as much. */
    if (sp) word_room(&p, p.buf.word_cap);
    const unsigned char *s = (const unsigned char *)text;
    size_t segment = 0;
    /* Added tokens start with an ASCII or lead byte, never inside a
     * character, so matching the raw bytes finds what matching the decoded
     * text would. */
    for (size_t i = 0; i < len && !p.failed && !p.full;) {
        const added_token *a = tok->raw.n ? match_token(&tok->raw, s + i, len - i) : NULL;
        if (!a) { i++; continue; }
        encode_segment(&p, s + segment, i - segment, (int64_t)segment);
        if (sp) {
            source_span span = read_bytes(sp, s + i, a->len, (int64_t)i);
            push_added(&p, a->id, &span, &span);
        } else {
            push_added(&p, a->id, NULL, NULL);
        }
        i += a->len;
        segment = i;
    }
    if (!p.failed && !p.full) encode_segment(&p, s + segment, len - segment, (int64_t)segment);
    if (keep) *keep = p.buf;   /* the buffers, grown or not, go back to the caller */
    else bert_encode_buffers_free(&p.buf);
    return p.failed ? -1 : 0;
}

int wp_encode(const wp_tokenizer *tok, const char *text, size_t len, size_t max_ids,
                          bert_ids *out, bert_encode_buffers *keep)
{
    return encode(tok, text, len, max_ids, out, NULL, keep);
}

int wp_encode_spans(const wp_tokenizer *tok, const char *text, size_t len, size_t max_ids,
                                bert_ids *out, bert_spans *spans, bert_encode_buffers *keep)
{
    span_state sp;
    memset(&sp, 0, sizeof sp);
    sp.out = spans;
    sp.ids_base = out->len;
    sp.spans_base = spans->len;
    int rc = encode(tok, text, len, max_ids, out, &sp, keep);
    free(sp.word);
    free(sp.marks);
    free(sp.normalized);
    if (rc != 0) {
        /* Out of memory: nothing of this call stays, so ids and spans agree. */
        out->len = sp.ids_base;
        spans->len = sp.spans_base;
    }
    return rc;
}


/* An added token's content as the normalizer leaves it (malloc'd). */
static char *normalize_text(const wp_tokenizer *t, const char *s, size_t len, size_t *out_len)
{
    encode_pass p;
    memset(&p, 0, sizeof p);
    p.tok = t;
    p.collect = 1;
    normalize_all(&p, (const unsigned char *)s, len, 0);
    char *text = p.failed ? NULL : bert_strndup(p.buf.normalized ? p.buf.normalized : "", p.normalized_len);
    *out_len = p.normalized_len;
    bert_encode_buffers_free(&p.buf);
    return text;
}

/* ---- decoding ------------------------------------------------------------ */

/* The WordPiece decoder's cleanup (tokenizers' decoders::wordpiece::cleanup). */
static const tok_replacement decoder_cleanup[] = {
    {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
    {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
};

/* The decoder over token strings: WordPiece's ("##" pieces glued, others
 * after a space, each cleaned alone), or a space between tokens when
 * tokenizer.json has no decoder.  Appends to b. */
static void decode_tokens(const wp_tokenizer *tok, const char *const *tokens, size_t n, bert_text *b)
{
    for (size_t i = 0; i < n && !b->failed; i++) {
        const char *token = tokens[i];
        size_t tl = strlen(token), at = b->len;
        if (!tok->decoder_wordpiece) {
            if (i > 0) bert_text_add(b, " ", 1);
            bert_text_add(b, token, tl);
            continue;
        }
        size_t pl = tok->decoder_prefix_len;
        if (i == 0) {
            bert_text_add(b, token, tl);
        } else if (tl >= pl && memcmp(token, tok->decoder_prefix, pl) == 0) {
            /* replacen(prefix, "", 1): the first occurrence, here at the start. */
            bert_text_add(b, token + pl, tl - pl);
        } else {
            bert_text_add(b, " ", 1);
            bert_text_add(b, token, tl);
        }
        /* The decoder cleans each token (with its leading space) alone. */
        if (tok->decoder_cleanup && !b->failed)
            b->len = tok_replace_all(b->s, at, b->len, decoder_cleanup, sizeof decoder_cleanup / sizeof *decoder_cleanup);
    }
}

char *wp_tokens_to_string(const wp_tokenizer *tok, const char *const *tokens, size_t n)
{
    bert_text b = {0};
    bert_text_add(&b, "", 0);
    decode_tokens(tok, tokens, n, &b);
    if (b.failed) { free(b.s); return NULL; }
    return b.s;
}

char *wp_decode(const wp_tokenizer *tok, const int32_t *ids, size_t n, int skip_special)
{
    const char **tokens = malloc((n ? n : 1) * sizeof *tokens);
    if (!tokens) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t tl;
        const char *token = token_text(tok, ids[i], &tl);
        if (!token || (skip_special && tok->special_id[ids[i]])) continue;
        tokens[k++] = token;
    }
    bert_text b = {0};
    bert_text_add(&b, "", 0);
    decode_tokens(tok, tokens, k, &b);
    free(tokens);
    if (tok->cleanup_spaces && !b.failed)
        b.len = tok_clean_up_spaces(b.s, b.len);
    if (b.failed) { free(b.s); return NULL; }
    return b.s;
}

int wp_has_subword_prefix(const wp_tokenizer *tok) { return tok->prefix_len > 0; }

/* ---- queries ------------------------------------------------------------- */

size_t wp_vocab_size(const wp_tokenizer *tok) { return (size_t)tok->vocab.count; }

const char *wp_token(const wp_tokenizer *tok, int32_t id)
{
    size_t len;
    return token_text(tok, id, &len);
}

int32_t wp_find(const wp_tokenizer *tok, const char *token, size_t len)
{
    return bert_vocab_find(&tok->vocab, token, len);
}

const bert_special_ids *wp_specials(const wp_tokenizer *tok) { return &tok->specials; }

int wp_is_special(const wp_tokenizer *tok, int32_t id)
{
    return id >= 0 && id < tok->vocab.count && tok->special_id[id];
}

const bert_tokenizer_settings *wp_get_settings(const wp_tokenizer *tok) { return &tok->settings; }
