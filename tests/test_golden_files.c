/*
 * test_golden_files.c - see golden_files.h.
 */
#include "golden_files.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_doc *t_read_jsonl(const char *path)
{
    size_t len = 0;
    char *text = t_read_file(path, &len);
    if (!text) return NULL;
    char *arr = malloc(len + 3);
    if (!arr) { free(text); return NULL; }
    size_t n = 0;
    arr[n++] = '[';
    for (char *line = text, *end; *line; line = end + (*end != '\0')) {
        end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        if (end == line) continue;
        if (n > 1) arr[n++] = ',';
        memcpy(arr + n, line, (size_t)(end - line));
        n += (size_t)(end - line);
    }
    arr[n++] = ']';
    free(text);
    json_doc *doc = NULL;
    char *err = NULL;
    if (bert_json_parse(arr, n, &doc, &err) != 0) {
        printf("  cannot parse %s: %s\n", path, err ? err : "?");
        free(err);
        doc = NULL;
    }
    free(arr);
    return doc;
}

int t_json_child(const json_doc *d, int node, int i)
{
    int c = node >= 0 ? d->nodes[node].first_child : -1;
    while (c >= 0 && i-- > 0) c = d->nodes[c].next_sibling;
    return c;
}
