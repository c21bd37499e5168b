/*
 * model_files.c - see model_files.h.  What has been asked of the directory
 * is kept in a short list: a model directory has a dozen files at most.
 */
#include "model_files.h"

#include "error.h"
#include "file.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct known_file {
    char *name;
    int exists;                 /* 1, 0, or -1 when not asked yet */
    json_doc *doc;              /* parsed, when asked for as JSON */
    struct known_file *next;
} known_file;

struct bert_model_files {
    char *dir;
    known_file *known;
};

bert_model_files *bert_model_files_new(const char *dir)
{
    bert_model_files *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    if (!(f->dir = strdup(dir))) {
        free(f);
        return NULL;
    }
    return f;
}

void bert_model_files_free(bert_model_files *f)
{
    if (!f) return;
    for (known_file *k = f->known, *next; k; k = next) {
        next = k->next;
        bert_json_free(k->doc);
        free(k->name);
        free(k);
    }
    free(f->dir);
    free(f);
}

const char *bert_model_files_dir(const bert_model_files *f)
{
    return f->dir;
}

char *bert_model_files_path(const bert_model_files *f, const char *name)
{
    return bert_path_join(f->dir, name);
}

/* The record of `name`, made on first use; NULL when memory ran out. */
static known_file *known(bert_model_files *f, const char *name)
{
    for (known_file *k = f->known; k; k = k->next)
        if (strcmp(k->name, name) == 0) return k;
    known_file *k = calloc(1, sizeof *k);
    if (!k || !(k->name = strdup(name))) {
        free(k);
        return NULL;
    }
    k->exists = -1;
    k->next = f->known;
    f->known = k;
    return k;
}

int bert_model_files_has(bert_model_files *f, const char *name)
{
    known_file *k = known(f, name);
    if (!k) return -1;
    if (k->exists >= 0) return k->exists;
    char *path = bert_model_files_path(f, name);
    if (!path) return -1;
    struct stat st;
    k->exists = stat(path, &st) == 0;
    free(path);
    return k->exists;
}

void bert_model_files_drop(bert_model_files *f, const char *name)
{
    for (known_file *k = f->known; k; k = k->next) {
        if (strcmp(k->name, name) != 0) continue;
        bert_json_free(k->doc);
        k->doc = NULL;
        k->exists = -1;
    }
}

int bert_model_files_json(bert_model_files *f, const char *name, int allow_array, const json_doc **doc,
                          char **err)
{
    *doc = NULL;
    *err = NULL;
    known_file *k = known(f, name);
    char *path = bert_model_files_path(f, name);
    if (!k || !path) {
        free(path);
        *err = bert_errorf("out of memory reading %s", name);
        return -1;
    }
    if (!k->doc && k->exists != 0) {
        char *perr = NULL;
        int rc = bert_json_parse_file(path, &k->doc, &perr);
        if (rc < 0) {
            *err = bert_errorf("%s; fix the file or remove it", perr ? perr : "out of memory");
            free(perr);
            free(path);
            return -1;
        }
        k->exists = rc > 0;
    }
    int rc = k->exists ? 1 : 0;
    if (rc && k->doc->nodes[0].type != JSON_OBJECT && (!allow_array || k->doc->nodes[0].type != JSON_ARRAY)) {
        *err = bert_errorf("%s is not a JSON object%s; fix or delete the file", path, allow_array ? " nor an array" : "");
        rc = -1;
    } else if (rc) {
        *doc = k->doc;
    }
    free(path);
    return rc;
}
