/*
 * tokenizer.c - the public tokenizer: picks the engine a model directory
 * needs and applies its post-processor.
 *
 * tokenizer.json is the source of truth whenever the directory has it: its
 * model says the family (WordPiece, BPE, Unigram; files older than
 * tokenizers 0.10 have no "type", so the shape of the model tells).  Without
 * it, vocab.txt means WordPiece and vocab.json + merges.txt byte-level BPE.
 */
#include "tokenizer.h"
#include "tok_internal.h"

#include "../base/error.h"
#include "../base/file.h"
#include "../base/json.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct bert_tokenizer {
    wp_tokenizer *wp;          /* BERT's WordPiece family, or */
    tok_pipeline *pipe;        /* the general pipeline */
    tok_post post;
    bert_special_ids specials;
    const char *source;        /* the file read, for messages */
    const char *missing;       /* a special token its layout needs and its vocabulary lacks, or NULL */
};

int bert_tokenizer_model_max_length(bert_model_files *files)
{
    const json_doc *doc = NULL;
    char *err = NULL;
    int v = bert_model_files_json(files, "tokenizer_config.json", 0, &doc, &err) == 1 ? tok_model_max_length_of(doc) : 0;
    free(err);
    return v;
}

void bert_text_char_bytes(const char *text, size_t len, int64_t *byte_start, int64_t *byte_end)
{
    const unsigned char *s = (const unsigned char *)text;
    assert(0 <= *byte_start && *byte_start <= *byte_end && *byte_end <= (int64_t)len);
    /* A continuation byte belongs to the character before it when the
     * nearest byte before it that is not a continuation byte is >= 0xC0. */
    int64_t b = *byte_start;
    if (b > 0 && b < (int64_t)len && (s[b] & 0xC0) == 0x80) {
        int64_t lead = b - 1;
        while (lead > 0 && (s[lead] & 0xC0) == 0x80) lead--;
        if (s[lead] >= 0xC0) b = lead;
    }
    int64_t e = *byte_end;
    if (e > 0 && e < (int64_t)len && (s[e] & 0xC0) == 0x80) {
        int64_t lead = e - 1;
        while (lead > 0 && (s[lead] & 0xC0) == 0x80) lead--;
        if (s[lead] >= 0xC0)
            while (e < (int64_t)len && (s[e] & 0xC0) == 0x80) e++;
    }
    *byte_start = b;
    *byte_end = e;
}

/* The family tokenizer.json's model belongs to. */
typedef enum { FAMILY_WORDPIECE, FAMILY_PIPELINE } family;

static int family_of(const json_doc *tj, const char *path, family *f, char **err)
{
    int model = bert_json_member(tj, 0, "model");
    const char *type = model >= 0 ? bert_json_str(tj, bert_json_member(tj, model, "type"), NULL) : NULL;
    if (!type && model >= 0) {
        /* Files from before tokenizers 0.10 name no type: a Unigram vocab is
         * a list of [piece, score], a BPE model has merges. */
        int vocab = bert_json_member(tj, model, "vocab");
        if (bert_json_member(tj, model, "merges") >= 0) type = "BPE";
        else if (vocab >= 0 && tj->nodes[vocab].type == JSON_ARRAY) type = "Unigram";
        else type = "WordPiece";
    }
    if (!type || strcmp(type, "WordPiece") == 0) { *f = FAMILY_WORDPIECE; return 0; }
    if (strcmp(type, "BPE") == 0 || strcmp(type, "Unigram") == 0) { *f = FAMILY_PIPELINE; return 0; }
    *err = bert_errorf("%s: the model \"%s\" is not supported (only WordPiece, BPE and Unigram)", path, type);
    return -1;
}

int bert_tokenizer_load(bert_model_files *files, bert_tokenizer **out, char **err)
{
    *out = NULL;
    *err = NULL;
    const json_doc *tj = NULL;
    char *path = bert_model_files_path(files, "tokenizer.json");
    bert_tokenizer *t = calloc(1, sizeof *t);
    if (!t || !path) goto fail;
    int have = bert_model_files_json(files, "tokenizer.json", 0, &tj, err);
    if (have < 0) goto fail;
    family f = FAMILY_WORDPIECE;
    t->source = "tokenizer.json";
    if (have) {
        if (family_of(tj, path, &f, err) != 0) goto fail;
    } else {
        /* No tokenizer.json: vocab.json + merges.txt (without vocab.txt) is
         * RoBERTa's byte-level BPE. */
        int txt = bert_model_files_has(files, "vocab.txt"), json = bert_model_files_has(files, "vocab.json");
        if (txt < 0 || json < 0) goto fail;
        if (!txt && json) f = FAMILY_PIPELINE;
        t->source = f == FAMILY_PIPELINE ? "vocab.json" : "vocab.txt";
    }
    const bert_special_ids *sp;
    if (f == FAMILY_WORDPIECE) {
        if (wp_load(files, tj, &t->wp, err) != 0) goto fail;
        sp = wp_specials(t->wp);
    } else {
        if (tok_pipeline_load(files, tj, &t->pipe, err) != 0) goto fail;
        sp = tok_pipeline_specials(t->pipe);
    }
    int pp = tj ? bert_json_member(tj, 0, "post_processor") : TOK_POST_BERT;
    if (pp >= 0 && tj->nodes[pp].type == JSON_NULL) pp = TOK_POST_BERT;
    if (!tj && f == FAMILY_PIPELINE) pp = TOK_POST_ROBERTA;   /* <s> A </s></s> B </s> */
    if (!tj && f == FAMILY_WORDPIECE) {
        /* Which layout a bare vocab.txt has is the tokenizer class's, as
         * transformers picks it. */
        const json_doc *cfg = NULL;
        int have_cfg = bert_model_files_json(files, "tokenizer_config.json", 0, &cfg, err);
        if (have_cfg < 0) goto fail;
        const char *cls_name = have_cfg ? bert_json_str(cfg, bert_json_member(cfg, 0, "tokenizer_class"), "") : "";
        if (strncmp(cls_name, "MPNetTokenizer", 14) == 0) pp = TOK_POST_MPNET;
    }
    if (pp < 0 && (sp->cls < 0 || sp->sep < 0)) {
        /* BERT's, RoBERTa's and MPNet's own layouts put these two around
         * every text: a text without one is not what the model saw.  The
         * tokenizer still loads (its pieces are fine); encoding refuses. */
        const int bpe = pp == TOK_POST_ROBERTA;
        t->missing = sp->cls < 0 ? (bpe ? "<s>" : "[CLS]") : (bpe ? "</s>" : "[SEP]");
    }
    if (tok_post_load(&t->post, tj, pp, sp->cls, sp->sep, path, err) != 0) goto fail;
    /* cls and sep the config files do not name are the post-processor's. */
    t->specials = *sp;
    int32_t cls, sep;
    tok_post_cls_sep(&t->post, &cls, &sep);
    if (t->specials.cls < 0) t->specials.cls = cls;
    if (t->specials.sep < 0) t->specials.sep = sep;
    /* What the tokenizer needs of tokenizer.json (megabytes, parsed) is its own now. */
    bert_model_files_drop(files, "tokenizer.json");
    free(path);
    *out = t;
    return 0;
fail:
    if (!*err) *err = bert_errorf("out of memory loading the tokenizer");
    bert_model_files_drop(files, "tokenizer.json");
    free(path);
    bert_tokenizer_free(t);
    return -1;
}

void bert_tokenizer_free(bert_tokenizer *tok)
{
    if (!tok) return;
    wp_free(tok->wp);
    tok_pipeline_free(tok->pipe);
    tok_post_free(&tok->post);
    free(tok);
}

int bert_tokenizer_encode(const bert_tokenizer *tok, const char *text, size_t len, size_t max_ids, bert_ids *out,
                          bert_encode_buffers *keep)
{
    if (tok->wp) return wp_encode(tok->wp, text, len, max_ids, out, keep);
    return tok_pipeline_encode(tok->pipe, text, len, max_ids, out, NULL, keep);
}

int bert_tokenizer_encode_spans(const bert_tokenizer *tok, const char *text, size_t len, size_t max_ids,
                                bert_ids *out, bert_spans *spans, bert_encode_buffers *keep)
{
    if (tok->wp) return wp_encode_spans(tok->wp, text, len, max_ids, out, spans, keep);
    size_t from = out->len, span_from = spans->len;
    if (tok_pipeline_encode(tok->pipe, text, len, max_ids, out, spans, keep) != 0) return -1;
    if (tok->post.trim_offsets) tok_post_trim_offsets(&tok->post, tok->pipe, out, from, spans, span_from);
    return 0;
}

char *bert_tokenizer_decode(const bert_tokenizer *tok, const int32_t *ids, size_t n, int skip_special)
{
    return tok->wp ? wp_decode(tok->wp, ids, n, skip_special) : tok_pipeline_decode(tok->pipe, ids, n, skip_special);
}

char *bert_tokenizer_tokens_to_string(const bert_tokenizer *tok, const char *const *tokens, size_t n)
{
    return tok->wp ? wp_tokens_to_string(tok->wp, tokens, n) : tok_pipeline_tokens_to_string(tok->pipe, tokens, n);
}

int bert_tokenizer_has_subword_prefix(const bert_tokenizer *tok)
{
    return tok->wp ? wp_has_subword_prefix(tok->wp) : tok_pipeline_has_subword_prefix(tok->pipe);
}

size_t bert_tokenizer_vocab_size(const bert_tokenizer *tok)
{
    return tok->wp ? wp_vocab_size(tok->wp) : tok_pipeline_vocab_size(tok->pipe);
}

const char *bert_tokenizer_token(const bert_tokenizer *tok, int32_t id)
{
    return tok->wp ? wp_token(tok->wp, id) : tok_pipeline_token(tok->pipe, id);
}

const bert_special_ids *bert_tokenizer_specials(const bert_tokenizer *tok) { return &tok->specials; }

size_t bert_tokenizer_num_special(const bert_tokenizer *tok, int pair)
{
    return tok_post_added(&tok->post, pair);
}

int bert_tokenizer_add_specials(const bert_tokenizer *tok, int after, bert_ids *ids, bert_spans *spans)
{
    return tok_post_add_specials(&tok->post, after, ids, spans);
}

const char *bert_tokenizer_source(const bert_tokenizer *tok) { return tok->source; }

const char *bert_tokenizer_missing_special(const bert_tokenizer *tok) { return tok->missing; }

int bert_tokenizer_post_process(const bert_tokenizer *tok, const int32_t *a, size_t na, const int32_t *b,
                                size_t nb, bert_ids *ids, bert_ids *types)
{
    return tok_post_apply(&tok->post, a, na, b, nb, ids, types);
}

int32_t bert_tokenizer_find(const bert_tokenizer *tok, const char *token, size_t len)
{
    return tok->wp ? wp_find(tok->wp, token, len) : tok_pipeline_find(tok->pipe, token, len);
}

int bert_tokenizer_is_special(const bert_tokenizer *tok, int32_t id)
{
    return tok->wp ? wp_is_special(tok->wp, id) : tok_pipeline_is_special(tok->pipe, id);
}

const bert_tokenizer_settings *bert_tokenizer_get_settings(const bert_tokenizer *tok)
{
    static const bert_tokenizer_settings none = {0, 0, 0, 0, 0};
    return tok->wp ? wp_get_settings(tok->wp) : &none;
}
