/*
 * tokens.c - see tokens.h: the growable arrays of ids and spans and the
 * encode's working memory, which every stage of the tokenizer fills and
 * tokenizer.c hands on.
 */
#include "tokens.h"

#include "../base/buffer.h"

#include <stdlib.h>
#include <string.h>

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

void bert_encode_buffers_free(bert_encode_buffers *b)
{
    if (!b) return;
    free(b->word);
    free(b->marks);
    free(b->normalized);
    tok_word_cache_free(b->words);
    memset(b, 0, sizeof *b);
}

int bert_spans_push(bert_spans *v, bert_token_span span)
{
    if (v->len == v->cap) {
        bert_token_span *p = bert_grow(v->at, &v->cap, v->len + 1, sizeof *p);
        if (!p) return -1;
        v->at = p;
    }
    v->at[v->len++] = span;
    return 0;
}

void bert_spans_free(bert_spans *v)
{
    free(v->at);
    v->at = NULL;
    v->len = v->cap = 0;
}
