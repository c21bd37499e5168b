/*
 * tokenizer.h - Hugging Face's tokenizers, identical to the Rust library's
 * (`tokenizers`): BERT's WordPiece (BertNormalizer + BertPreTokenizer +
 * WordPiece), byte-level BPE (RoBERTa: ByteLevel + BPE) and SentencePiece
 * Unigram (XLM-RoBERTa, T5, XLNet: Precompiled and other normalizers,
 * Metaspace, Unigram), with their added tokens, post-processors and
 * decoders.  Unicode properties come from utf8proc.
 *
 * A tokenizer is read from a model directory (tokenizer.json when present,
 * else vocab.txt, or vocab.json + merges.txt; tokenizer_config.json and
 * special_tokens_map.json for settings and special tokens) and is immutable
 * afterwards, so one tokenizer may be used from several threads at once.
 */
#ifndef BERT_TOKENIZER_H
#define BERT_TOKENIZER_H

/* The ids, spans, special ids and encode buffers this API takes and gives. */
#include "../base/model_files.h"
#include "tokens.h"

#include <stddef.h>
#include <stdint.h>

typedef struct bert_tokenizer bert_tokenizer;

/* Reads the tokenizer files of the directory `files` reads.
 * Returns 0, or -1 with *err set to a malloc'd message naming the file and the fix. */
int bert_tokenizer_load(bert_model_files *files, bert_tokenizer **out, char **err);
void bert_tokenizer_free(bert_tokenizer *tok);

/* The model_max_length of the directory's tokenizer_config.json as the
 * tokenizer's settings read it, without loading the tokenizer. */
int bert_tokenizer_model_max_length(bert_model_files *files);

/* Appends the ids of `text` (len bytes, need not be NUL-terminated, may hold
 * invalid UTF-8, which is read as U+FFFD) to `out`, WITHOUT [CLS]/[SEP] and
 * without truncation.  Special tokens written in the text are kept whole.
 * Linear in len.  Stops reading the text once `out` holds max_ids ids
 * (SIZE_MAX: no limit), so a caller that truncates anyway does not pay for
 * (or hold) the whole text's tokens.  `keep` (or NULL) holds the working
 * memory between calls.  Returns 0, or -1 when out of memory. */
int bert_tokenizer_encode(const bert_tokenizer *tok, const char *text, size_t len, size_t max_ids,
                          bert_ids *out, bert_encode_buffers *keep);

/* bert_tokenizer_encode, also appending to `spans` the span of every id it
 * appends to `out` (one for one: spans->len grows as out->len does).  The
 * same pass; bert_tokenizer_encode does not pay for the spans. */
int bert_tokenizer_encode_spans(const bert_tokenizer *tok, const char *text, size_t len, size_t max_ids,
                                bert_ids *out, bert_spans *spans, bert_encode_buffers *keep);

/* The bytes [*byte_start, *byte_end) widened to whole characters as SQLite
 * counts them (see bert_token_span), so that they are exactly the bytes
 * substr returns for the span's characters.  Looks only at the bytes next
 * to the ends. */
void bert_text_char_bytes(const char *text, size_t len, int64_t *byte_start, int64_t *byte_end);

/* Hugging Face's decode(): joins "##" pieces, drops special tokens when
 * skip_special is set, applies clean_up_tokenization_spaces when the
 * tokenizer config asks for it (the default).  Returns a malloc'd string. */
char *bert_tokenizer_decode(const bert_tokenizer *tok, const int32_t *ids, size_t n, int skip_special);

/* transformers' convert_tokens_to_string for a fast tokenizer: the
 * tokenizer's decoder alone over token strings (which need not be
 * vocabulary entries), without clean_up_tokenization_spaces; tokens
 * joined by spaces when there is no decoder.  A malloc'd string, or NULL
 * when out of memory. */
char *bert_tokenizer_tokens_to_string(const bert_tokenizer *tok, const char *const *tokens, size_t n);

/* 1 when the tokenizer's model has a continuing_subword_prefix (WordPiece's
 * "##"; a BPE that sets one), 0 otherwise (byte-level BPE, Unigram): the
 * token-classification pipeline finds words differently for each. */
int bert_tokenizer_has_subword_prefix(const bert_tokenizer *tok);

/* The post-processor of tokenizer.json (BertProcessing, RobertaProcessing,
 * TemplateProcessing; BERT's when there is none, RoBERTa's for a directory
 * with only vocab.json + merges.txt): how many special tokens it adds to one
 * text (pair 0) or to a pair (pair 1) -- 2 and 3 for BERT's
 * [CLS] A [SEP] B [SEP], 2 and 4 for RoBERTa's <s> A </s></s> B </s>. */
size_t bert_tokenizer_num_special(const bert_tokenizer *tok, int pair);

/* The special tokens the post-processor's template for one text puts
 * before the text (after 0) or after it (after 1): appended to `ids`, and
 * to `spans` (or NULL) with the empty span (0, 0, no word) the Rust library
 * gives them; with ids NULL, only counted.  [CLS] and [SEP] for BERT,
 * nothing and </s> for T5, nothing and <sep> <cls> for XLNet.  Returns how
 * many, or -1 when out of memory. */
int bert_tokenizer_add_specials(const bert_tokenizer *tok, int after, bert_ids *ids, bert_spans *spans);

/* The file the tokenizer was read from: "tokenizer.json", "vocab.txt" or
 * "vocab.json", for messages about its tokens. */
const char *bert_tokenizer_source(const bert_tokenizer *tok);

/* The special token that the tokenizer's own layout (BERT's, RoBERTa's or
 * MPNet's, where no tokenizer.json names another) puts around every text
 * but its vocabulary lacks, such as "[CLS]"; NULL when it has them all. */
const char *bert_tokenizer_missing_special(const bert_tokenizer *tok);

/* Appends to `ids` the post-processed sequence of the pieces a[0..na) (and
 * b[0..nb) when b is not NULL), special tokens included, and to `types`
 * (or NULL) the token type id of each, as the post-processor assigns them
 * (BERT: 0 for A, 1 for B; RoBERTa's RobertaProcessing gives B 1 too,
 * though its models have one token type, so an encoder with
 * type_vocab_size 1 must read them as 0).  The caller truncates a and b
 * first (bert_tokenizer_num_special says how much room the specials take).
 * Returns 0, or -1 when out of memory. */
int bert_tokenizer_post_process(const bert_tokenizer *tok, const int32_t *a, size_t na, const int32_t *b,
                                size_t nb, bert_ids *ids, bert_ids *types);

size_t bert_tokenizer_vocab_size(const bert_tokenizer *tok);
/* The vocabulary entry of `id`, or NULL when out of range. */
const char *bert_tokenizer_token(const bert_tokenizer *tok, int32_t id);
const bert_special_ids *bert_tokenizer_specials(const bert_tokenizer *tok);
/* The id of a vocabulary entry or added token, or -1. */
int32_t bert_tokenizer_find(const bert_tokenizer *tok, const char *token, size_t len);

#endif
