/*
 * tok_internal.h - the parts of the tokenizer behind tokenizer.h, as the
 * stages of Hugging Face's tokenizer.json pipeline: normalizer,
 * pre-tokenizer, model, post-processor and decoder.
 *
 * Two engines run them.  BERT's WordPiece family (BertNormalizer,
 * BertPreTokenizer, WordPiece) streams through tok_wordpiece.c one character
 * at a time.  Every other family (byte-level BPE, SentencePiece Unigram) runs
 * the general pipeline of tok_pipeline.c over a normalized string that keeps,
 * for each of its bytes, the span of the original text it came from, as the
 * Rust library's NormalizedString does, so that offsets agree with it.
 */
#ifndef BERT_TOK_INTERNAL_H
#define BERT_TOK_INTERNAL_H

#include "../base/json.h"
#include "tokenizer.h"
#include "vocab.h"

#include <stddef.h>
#include <stdint.h>

/* ---- WordPiece (tok_wordpiece.c) ----------------------------------------- */

/* The settings the tokenizer runs with, read from the model directory. */
typedef struct {
    int lowercase;            /* do_lower_case / normalizer.lowercase */
    int strip_accents;        /* 1, 0, or -1 for null (= follow lowercase) */
    int chinese_chars;        /* tokenize_chinese_chars / handle_chinese_chars */
    int model_max_length;     /* from tokenizer_config.json; 0 when absent or unbounded */
    int max_input_chars_per_word; /* 100 unless tokenizer.json says otherwise */
} bert_tokenizer_settings;

typedef struct wp_tokenizer wp_tokenizer;

/* `tj`: the directory's parsed tokenizer.json, or NULL. */
int wp_load(bert_model_files *files, const json_doc *tj, wp_tokenizer **out, char **err);
void wp_free(wp_tokenizer *t);
int wp_encode(const wp_tokenizer *tok, const char *text, size_t len, size_t max_ids, bert_ids *out,
              bert_encode_buffers *keep);
int wp_encode_spans(const wp_tokenizer *tok, const char *text, size_t len, size_t max_ids, bert_ids *out,
                    bert_spans *spans, bert_encode_buffers *keep);
char *wp_decode(const wp_tokenizer *tok, const int32_t *ids, size_t n, int skip_special);
char *wp_tokens_to_string(const wp_tokenizer *tok, const char *const *tokens, size_t n);
int wp_has_subword_prefix(const wp_tokenizer *tok);
size_t wp_vocab_size(const wp_tokenizer *tok);
const char *wp_token(const wp_tokenizer *tok, int32_t id);
int32_t wp_find(const wp_tokenizer *tok, const char *token, size_t len);
const bert_special_ids *wp_specials(const wp_tokenizer *tok);
int wp_is_special(const wp_tokenizer *tok, int32_t id);
const bert_tokenizer_settings *wp_get_settings(const wp_tokenizer *tok);

/* ---- shared by the loaders (tok_json.c) ---------------------------------- */

/* tokenizer_config.json's model_max_length, 0 when absent or unbounded. */
int tok_model_max_length_of(const json_doc *doc);

/* tokenizer.json's model.vocab when it is an object of token -> id: 1 with
 * `v` filled in id order, 0 when `tj` is NULL or has no such vocab, -1 with
 * *err when an id is missing, repeated or out of range. */
int tok_json_vocab(const json_doc *tj, bert_vocab *v, char **err);

/* A special token's name as the config files write it: a string, or an
 * AddedToken object with "content". */
const char *tok_token_name(const json_doc *doc, int node);

/* ---- decoding text (tok_decode.c) --------------------------------------- */

typedef struct {
    const char *from, *to;
} tok_replacement;

/* Applies each replacement in turn to s[from..len), each over the whole
 * text, left to right and without overlap, as Python's str.replace does;
 * none may lengthen the text, which is rewritten in place.  Returns the new
 * length (s stays NUL-terminated). */
size_t tok_replace_all(char *s, size_t from, size_t len, const tok_replacement *r, size_t nr);

/* transformers' clean_up_tokenization (clean_up_tokenization_spaces). */
size_t tok_clean_up_spaces(char *s, size_t len);

/* ---- the general pipeline (tok_pipeline.c) ------------------------------- */

typedef struct tok_pipeline tok_pipeline;

/* `tj` is the parsed tokenizer.json, or NULL for a directory with only
 * vocab.json + merges.txt (byte-level BPE as RoBERTa's). */
int tok_pipeline_load(bert_model_files *files, const json_doc *tj, tok_pipeline **out, char **err);
void tok_pipeline_free(tok_pipeline *p);
int tok_pipeline_encode(const tok_pipeline *p, const char *text, size_t len, size_t max_ids, bert_ids *out,
                        bert_spans *spans, bert_encode_buffers *keep);
char *tok_pipeline_decode(const tok_pipeline *p, const int32_t *ids, size_t n, int skip_special);
char *tok_pipeline_tokens_to_string(const tok_pipeline *p, const char *const *tokens, size_t n);
int tok_pipeline_has_subword_prefix(const tok_pipeline *p);
size_t tok_pipeline_vocab_size(const tok_pipeline *p);
const char *tok_pipeline_token(const tok_pipeline *p, int32_t id);
int32_t tok_pipeline_find(const tok_pipeline *p, const char *token, size_t len);
const bert_special_ids *tok_pipeline_specials(const tok_pipeline *p);
int tok_pipeline_is_special(const tok_pipeline *p, int32_t id);

/* ---- the post-processor (tok_postprocess.c) ------------------------------ */

/* One item of a template: a special token's ids, or the sequence A or B. */
typedef struct {
    int sequence;          /* 0: special tokens, 1: A, 2: B */
    int32_t *ids;          /* the special token's ids */
    size_t n_ids;
    int32_t type_id;
} tok_template_item;

typedef struct {
    tok_template_item *single, *pair;
    size_t n_single, n_pair;
    int trim_offsets;       /* RobertaProcessing / ByteLevel: trim the spaces 'Ġ' stands for */
    int add_prefix_space;
} tok_post;

/* Without a post_processor node: the layouts with cls and sep that BERT's
 * vocab.txt, RoBERTa's vocab.json + merges.txt and MPNet's vocab.txt
 * (tokenizer_class MPNetTokenizer: transformers' MPNetConverter template,
 * [CLS] A [SEP] [SEP] B [SEP] with B typed 1) imply. */
enum { TOK_POST_BERT = -1, TOK_POST_ROBERTA = -2, TOK_POST_MPNET = -3 };

/* Reads tokenizer.json's post_processor (node `pp`, or TOK_POST_BERT or
 * TOK_POST_ROBERTA).  Returns 0, or -1 with *err. */
int tok_post_load(tok_post *p, const json_doc *doc, int pp, int32_t cls, int32_t sep, const char *path,
                  char **err);
void tok_post_free(tok_post *p);
size_t tok_post_added(const tok_post *p, int pair);
int tok_post_apply(const tok_post *p, const int32_t *a, size_t na, const int32_t *b, size_t nb, bert_ids *ids,
                   bert_ids *types);
/* The single template's special tokens before A (after 0) or after it
 * (after 1), as bert_tokenizer_add_specials. */
int tok_post_add_specials(const tok_post *p, int after, bert_ids *ids, bert_spans *spans);
/* The first special token before A and the first after it in the single
 * template (cls and sep for BERT and RoBERTa; -1 when absent). */
void tok_post_cls_sep(const tok_post *p, int32_t *cls, int32_t *sep);
/* Applies trim_offsets to the spans spans->at[span_from..] of the ids
 * out->ids[from..], which `pipe` encoded (one span for each id). */
void tok_post_trim_offsets(const tok_post *p, const tok_pipeline *pipe, const bert_ids *out, size_t from,
                           bert_spans *spans, size_t span_from);

/* For the tests, which look inside a tokenizer. */
const bert_tokenizer_settings *bert_tokenizer_get_settings(const bert_tokenizer *tok);
/* 1 when `id` is one of the special (never split, skipped in decode) tokens. */
int bert_tokenizer_is_special(const bert_tokenizer *tok, int32_t id);

#endif
