/* path.c - see path.h. */
#include "path.h"

#include <stdlib.h>
#include <string.h>

char *bert_path_join(const char *dir, const char *name)
{
    size_t d = strlen(dir), n = strlen(name);
    while (d > 1 && dir[d - 1] == '/') d--;
    char *s = malloc(d + n + 2);
    if (!s) return NULL;
    memcpy(s, dir, d);
    s[d] = '/';
    memcpy(s + d + 1, name, n + 1);
    return s;
}
