/* buffer.c - see buffer.h. */
#include "buffer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *bert_grow(void *items, size_t *cap, size_t need, size_t size)
{
    if (items && need <= *cap) return items;
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2) return NULL;
        n *= 2;
    }
    if (n > SIZE_MAX / size) return NULL;
    void *p = realloc(items, n * size);
    if (p) *cap = n;
    return p;
}

int bert_text_add(bert_text *t, const char *s, size_t n)
{
    char *p = t->failed || n > SIZE_MAX - t->len - 1 ? NULL : bert_grow(t->s, &t->cap, t->len + n + 1, 1);
    if (!p) {
        t->failed = 1;
        return -1;
    }
    t->s = p;
    if (n) memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
    return 0;
}

char *bert_strndup(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *bert_strdup(const char *s)
{
    return bert_strndup(s, strlen(s));
}
