/*
 * signatures.c - see signatures.h.
 */
#include "signatures.h"

#include "../base/error.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define SCALAR 0
#define TABLE 1

const bert_signature bert_signatures[] = {
    {"bert_version", "", "TEXT", "the extension's version", 0, 0, SCALAR},
    {"bert_load", "name, path [, options_json]", "TEXT: name",
     "registers the model directory `path` as `name` for this connection", 2, 3, SCALAR},
    {"bert_unload", "name", "INTEGER: 1 if it was registered, 0 if not", "drops a registration", 1, 1, SCALAR},
    {"bert_tokenize", "text [, model]", "JSON array of token strings", "the word pieces, [CLS] ... [SEP] included",
     1, 2, SCALAR},
    {"bert_token_ids", "text [, model]", "JSON array of integers", "the token ids, [CLS] ... [SEP] included", 1, 2,
     SCALAR},
    {"bert_embed", "text [, model | options_json]", "BLOB of hidden_size (or dimensions) float32",
     "the text's embedding (sqlite-vec's format, subtype 223); options model, dimensions", 1, 2, SCALAR},
    {"bert_similarity", "a, b [, model]", "REAL in [-1, 1]",
     "cosine similarity; a and b each TEXT (embedded) or a float32 BLOB", 2, 3, SCALAR},
    {"bert_vector_to_json", "blob", "JSON array of numbers", "the floats of a float32 BLOB", 1, 1, SCALAR},
    {"bert_fill_mask", "text [, top_k [, model]]", "JSON",
     "the best tokens for each [MASK], as the fill-mask pipeline", 1, 3, SCALAR},
    {"bert_next_sentence", "a, b [, model]", "REAL", "probability that b follows a (the NSP head)", 2, 3, SCALAR},
    {"bert_classify", "text [, model]", "JSON array of {label, score}",
     "every label of a sequence classifier, best first", 1, 2, SCALAR},
    {"bert_classify_pair", "text, text_pair [, model]", "JSON array of {label, score}",
     "every label of a pair classifier (NLI, paraphrase), best first", 2, 3, SCALAR},
    {"bert_label", "text [, model]", "TEXT", "the best label of a sequence classifier", 1, 2, SCALAR},
    {"bert_rerank", "query, document [, model]", "REAL", "a cross-encoder's relevance of document to query", 2, 3,
     SCALAR},
    {"bert_ner", "text [, model]", "JSON", "named entities with character offsets, as the token-classification "
     "pipeline", 1, 2, SCALAR},
    {"bert_answer", "question, context [, model]", "JSON {score, start, end, answer}",
     "the best answer span of an extractive QA model (scores of merged identical answers add up, so may "
     "exceed 1)", 2, 3, SCALAR},
    {"bert_truncate", "vector, dimensions [, normalize]", "BLOB of dimensions float32",
     "the first values of a float32 vector, renormalised as bert_embed's dimensions option", 2, 3, SCALAR},
    {"bert_quantize", "vector, kind", "BLOB: sqlite-vec's bit[N] or int8[N]",
     "a float32 vector quantized, kind 'binary' or 'int8', as vec_quantize_binary / vec_quantize_int8(v, 'unit')",
     2, 2, SCALAR},
    {"bert_token_vectors", "text, 'query' | 'document' [, options_json]", "BLOB: n x d float32 token vectors",
     "late interaction: one unit vector per token of a ColBERT model (PyLate's), for bert_maxsim", 2, 3, SCALAR},
    {"bert_maxsim", "query_vectors, document_vectors", "REAL",
     "late interaction: the sum over query tokens of the best dot product with a document token", 2, 2, SCALAR},
    {"bert_models", "", "rows: name, path, loaded, hidden_size, ...", "this connection's registered models", 0, 0,
     TABLE},
    {"bert_functions", "", "rows: name, arguments, returns, summary",
     "every SQL function and table function of the extension", 0, 0, TABLE},
    {"bert_fill_mask_each", "text [, top_k [, model]]",
     "rows: mask_index, rank, token, token_str, score, sequence", "bert_fill_mask as rows", 1, 3, TABLE},
    {"bert_embed_each", "json [, model | options_json]", "rows: key, value, embedding",
     "embeds a JSON array of texts (key = index) or object of key -> text in packed batches", 1, 2, TABLE},
    {"bert_rerank_each", "query, json [, model]", "rows: key, value, score",
     "scores every text of a JSON array or object against query in packed batches", 2, 3, TABLE},
    {"bert_ner_each", "text [, model]", "rows: entity, score, word, start, end, index", "bert_ner as rows", 1, 2,
     TABLE},
    {"bert_answer_each", "question, context [, top_k [, model]]", "rows: rank, answer, score, start, end",
     "the top_k best answers (default 5), best first", 2, 4, TABLE},
    {"bert_tokenize_offsets", "text [, model]", "rows: index, token, id, start, end, word",
     "every token with the characters of text it came from", 1, 2, TABLE},
    {"bert_chunks", "text [, max_tokens [, overlap [, model]]]", "rows: chunk_index, text, start, end, tokens",
     "the text cut between words into pieces the model reads whole", 1, 4, TABLE},
    {"bert_attention", "text [, options_json]",
     "rows: layer, head, from_position, to_position, from_token, to_token, weight",
     "each head's attention probabilities, as transformers' output_attentions", 1, 2, TABLE},
    {"bert_hidden_states", "text [, options_json]", "rows: layer, position, token, start, end, vector",
     "each layer's hidden state of every token (layer 0: the embeddings), as output_hidden_states", 1, 2, TABLE},
    {"bert_sparse", "text [, options_json]", "JSON object {token: weight}",
     "the learned sparse vector (SPLADE) of a masked-LM model, heaviest first", 1, 2, SCALAR},
    {"bert_sparse_terms", "text [, options_json]", "rows: token_id, token, weight",
     "bert_sparse as rows, to fill an inverted index", 1, 2, TABLE},
    {"bert_zero_shot", "text, labels_json [, options_json]", "JSON array of {label, score}",
     "zero-shot classification with an NLI model, as the zero-shot-classification pipeline, best first; "
     "options model, hypothesis_template, multi_label", 2, 3, SCALAR},
    {"bert_zero_shot_each", "text, labels_json [, options_json]", "rows: rank, label, score",
     "bert_zero_shot as rows, every label's pair in one packed batch", 2, 3, TABLE},
    {"bert_train", "output_dir, base, query [, options_json]",
     "rows: step, epoch, loss, learning_rate, examples_per_s, eval, saved",
     "fine-tunes base on the query's rows (classify, regression, tokens, qa, embed) and saves a Hugging Face "
     "model directory, a row every logging_steps", 3, 4, TABLE},
};

const size_t bert_signature_count = sizeof bert_signatures / sizeof bert_signatures[0];

const bert_signature *bert_signature_find(const char *name)
{
    for (size_t i = 0; i < bert_signature_count; i++)
        if (strcmp(bert_signatures[i].name, name) == 0) return &bert_signatures[i];
    return NULL;
}

void bert_signature_argument(const bert_signature *s, int i, char *buf, size_t size)
{
    const char *p = s->arguments;
    for (int k = 0; *p; k++) {
        while (*p && !isalnum((unsigned char)*p) && *p != '_') p++;
        const char *start = p;
        while (*p && (isalnum((unsigned char)*p) || *p == '_')) p++;
        if (p == start) break;
        if (k == i) {
            snprintf(buf, size, "%.*s", (int)(p - start), start);
            return;
        }
    }
    snprintf(buf, size, "?");
}

char *bert_signature_count_error(const bert_signature *s, int given)
{
    char counts[64];
    if (s->min_args == s->max_args)
        snprintf(counts, sizeof counts, "%d argument%s", s->min_args, s->min_args == 1 ? "" : "s");
    else
        snprintf(counts, sizeof counts, "%d to %d arguments", s->min_args, s->max_args);
    return bert_errorf("%s takes %s, not %d: %s%s(%s)%s; %s", s->name, counts, given,
                       s->table ? "SELECT * FROM " : "", s->name, s->arguments,
                       s->min_args < s->max_args ? " (arguments in [ ] may be left out)" : "", BERT_SEE_FUNCTIONS);
}
