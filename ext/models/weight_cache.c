/*
 * weight_cache.c - one mapping of each weight file per process.
 */
#include "weight_cache.h"

#include "checkpoint.h"
#include "../base/error.h"
#include "../base/file.h"
#include "model_dir.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A model is its weights file and its config.json: the config decides the
 * sizes and the heads' labels, and two directories may share one weights
 * file (links into a download cache) with different configs.  The same
 * file held at another precision is another copy of the weights. */
typedef struct cache_entry {
    dev_t dev, config_dev;
    ino_t ino, config_ino;
    bert_precision precision;
    bert_model *model;
    int refs;
    struct cache_entry *next;
} cache_entry;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static cache_entry *cache_head;

const bert_model *bert_weight_cache_acquire(bert_model_files *files, bert_precision precision, char **err)
{
    *err = NULL;
    /* A sharded checkpoint is known by its index: each of its shards is
     * then mapped once per process with the rest of the model. */
    char *path = bert_checkpoint_weights_file(files, err);
    if (!path) return NULL;
    struct stat st;
    if (stat(path, &st) != 0) {
        *err = bert_errorf("cannot open %s: %s", path, strerror(errno));
        free(path);
        return NULL;
    }
    free(path);
    struct stat cst;
    char *config = bert_model_files_path(files, "config.json");
    if (!config) return NULL;
    int have_config = stat(config, &cst) == 0;
    free(config);
    if (!have_config) memset(&cst, 0, sizeof cst);   /* bert_model_load reports it */

    pthread_mutex_lock(&cache_lock);
    for (cache_entry *e = cache_head; e; e = e->next) {
        if (e->dev == st.st_dev && e->ino == st.st_ino && e->config_dev == cst.st_dev && e->config_ino == cst.st_ino &&
            e->precision == precision) {
            e->refs++;
            pthread_mutex_unlock(&cache_lock);
            return e->model;
        }
    }
    /* Loading under the lock keeps two connections from mapping the same
     * file twice; loads are rare and a waiting caller needs the result anyway. */
    cache_entry *e = calloc(1, sizeof *e);
    bert_model *m = NULL;
    if (!e || bert_model_load_precision(files, precision, &m, err) != 0) {
        free(e);
        pthread_mutex_unlock(&cache_lock);
        return NULL;
    }
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    e->config_dev = cst.st_dev;
    e->config_ino = cst.st_ino;
    e->precision = precision;
    e->model = m;
    e->refs = 1;
    e->next = cache_head;
    cache_head = e;
    pthread_mutex_unlock(&cache_lock);
    return m;
}

void bert_weight_cache_release(const bert_model *m)
{
    if (!m) return;
    bert_model *to_free = NULL;
    pthread_mutex_lock(&cache_lock);
    for (cache_entry **p = &cache_head; *p; p = &(*p)->next) {
        cache_entry *e = *p;
        if (e->model != m) continue;
        if (--e->refs == 0) {
            *p = e->next;
            to_free = e->model;
            free(e);
        }
        break;
    }
    pthread_mutex_unlock(&cache_lock);
    bert_model_free(to_free);
}

int bert_weight_cache_refs(const bert_model *m)
{
    int refs = 0;
    pthread_mutex_lock(&cache_lock);
    for (cache_entry *e = cache_head; e; e = e->next)
        if (e->model == m) refs = e->refs;
    pthread_mutex_unlock(&cache_lock);
    return refs;
}

int bert_weight_cache_count(void)
{
    int count = 0;
    pthread_mutex_lock(&cache_lock);
    for (cache_entry *e = cache_head; e; e = e->next) count++;
    pthread_mutex_unlock(&cache_lock);
    return count;
}
