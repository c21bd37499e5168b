/*
 * buffer.h - the extension's memory helpers: a growing array, a growing
 * NUL-terminated text and a string copy, so that no file writes its own
 * realloc loop.
 *
 *   int32_t *ids = NULL; size_t len = 0, cap = 0;
 *   int32_t *p = bert_grow(ids, &cap, len + 1, sizeof *ids);
 *   if (!p) ... out of memory, ids and cap unchanged ...
 *   ids = p;
 *   ids[len++] = 42;
 */
#ifndef BERT_BUFFER_H
#define BERT_BUFFER_H

#include <stddef.h>

/* Makes room for at least `need` (>= 1) elements of `size` bytes in `items`
 * (NULL when empty), which holds *cap: returns `items` when it is large
 * enough, else a reallocated block, at least doubled, with *cap updated.
 * NULL when out of memory or the size overflows; then `items` and *cap are
 * left as they were. */
void *bert_grow(void *items, size_t *cap, size_t need, size_t size);

/* A growing text, kept NUL-terminated once anything was added.  Zero it
 * before first use; free(t.s) when done. */
typedef struct {
    char *s;
    size_t len, cap;
    int failed;   /* memory ran out: later appends do nothing */
} bert_text;

/* Appends s[0..n).  0, or -1 (and failed set) when out of memory. */
int bert_text_add(bert_text *t, const char *s, size_t n);

/* A malloc'd NUL-terminated copy of s[0..n), or NULL when out of memory. */
char *bert_strndup(const char *s, size_t n);
char *bert_strdup(const char *s);

#endif
