/*
 * registry.c - see registry.h.
 */
#include "registry.h"
#include "entry.h"

#include "../base/buffer.h"
#include "checkpoint.h"
#include "../base/error.h"
#include "../base/json.h"
#include "model_dir.h"
#include "weight_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const agg_names[] = {"none", "simple", "first", "average", "max"};

const char *bert_aggregation_name(bert_aggregation a)
{
    return (unsigned)a < sizeof agg_names / sizeof *agg_names ? agg_names[a] : "?";
}

int bert_aggregation_parse(const char *name)
{
    for (size_t i = 0; name && i < sizeof agg_names / sizeof *agg_names; i++)
        if (strcmp(name, agg_names[i]) == 0) return (int)i;
    return -1;
}

/* Upper bound on OpenBLAS threads a user may ask for. */
#define MAX_THREADS 256

static const char *pooling_name(bert_pooling p)
{
    switch (p) {
    case BERT_POOL_CLS: return "cls";
    case BERT_POOL_MAX: return "max";
    case BERT_POOL_POOLER: return "pooler";
    case BERT_POOL_MEAN: break;
    }
    return "mean";
}

static int pooling_from_name(const char *s)
{
    static const char *names[] = {"mean", "cls", "max", "pooler"};
    static const bert_pooling values[] = {BERT_POOL_MEAN, BERT_POOL_CLS, BERT_POOL_MAX, BERT_POOL_POOLER};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(s, names[i]) == 0) return (int)values[i];
    return -1;
}

int bert_options_parse(const char *text, bert_options *out, char **err)
{
    *err = NULL;
    out->pooling = -1;
    out->normalize = -1;
    out->max_length = 0;
    out->truncate = 1;
    out->threads = 0;
    out->aggregation = -1;
    out->precision = -1;
    out->prompt_kind = BERT_PROMPT_DEFAULT;
    out->prompt[0] = '\0';
    if (!text || !*text) return 0;

    json_doc *doc = NULL;
    char *perr = NULL;
    if (bert_json_parse(text, strlen(text), &doc, &perr) != 0) {
        *err = bert_errorf("bert_load options are not valid JSON (%s): pass an object such as "
                           "'{\"pooling\": \"mean\", \"normalize\": true}'", perr ? perr : "out of memory");
        free(perr);
        return -1;
    }
    int rc = -1;
    if (doc->nodes[0].type != JSON_OBJECT) {
        *err = bert_errorf("bert_load options must be a JSON object such as '{\"max_length\": 256}'");
        goto done;
    }
    for (int c = doc->nodes[0].first_child; c >= 0; c = doc->nodes[c].next_sibling) {
        const json_node *n = &doc->nodes[c];
        const char *key = n->key;
        if (strcmp(key, "pooling") == 0) {
            const char *s = bert_json_str(doc, c, NULL);
            out->pooling = s ? pooling_from_name(s) : -1;
            if (out->pooling < 0) {
                *err = bert_errorf("option \"pooling\" must be one of \"mean\", \"cls\", \"max\", \"pooler\"");
                goto done;
            }
        } else if (strcmp(key, "normalize") == 0 || strcmp(key, "truncate") == 0) {
            int b = bert_json_bool(doc, c, -1);
            if (b < 0) {
                *err = bert_errorf("option \"%s\" must be true or false", key);
                goto done;
            }
            if (key[0] == 'n') out->normalize = b; else out->truncate = b;
        } else if (strcmp(key, "max_length") == 0) {
            long long v = bert_json_int(doc, c, -1);
            if (v < 3 || v > 1000000) {
                *err = bert_errorf("option \"max_length\" must be an integer of at least 3 "
                                   "(tokens, [CLS] and [SEP] included)");
                goto done;
            }
            out->max_length = (int)v;
        } else if (strcmp(key, "threads") == 0) {
            long long v = bert_json_int(doc, c, -1);
            if (v < 1 || v > MAX_THREADS) {
                *err = bert_errorf("option \"threads\" must be an integer from 1 to %d", MAX_THREADS);
                goto done;
            }
            out->threads = (int)v;
        } else if (strcmp(key, "aggregation") == 0) {
            const char *s = bert_json_str(doc, c, NULL);
            out->aggregation = s ? bert_aggregation_parse(s) : -1;
            if (out->aggregation < 0) {
                *err = bert_errorf("option \"aggregation\" must be one of \"none\", \"simple\", \"first\", "
                                   "\"average\", \"max\" (how bert_ner groups word pieces into entities)");
                goto done;
            }
        } else if (strcmp(key, "precision") == 0) {
            const char *s = bert_json_str(doc, c, NULL);
            bert_precision p;
            if (!s || bert_precision_parse(s, &p) != 0) {
                *err = bert_errorf("option \"precision\" must be one of \"float32\", \"bfloat16\", \"int8\" "
                                   "(how the encoder's weights are held; default \"float32\")");
                goto done;
            }
            out->precision = (int)p;
        } else if (strcmp(key, "prompt") == 0) {
            int text_node = n->type == JSON_OBJECT ? bert_json_member(doc, c, "text") : -1;
            const char *s = n->type == JSON_TEXT ? n->text : bert_json_str(doc, text_node, NULL);
            if (!s || (n->type == JSON_OBJECT && bert_json_length(doc, c) != 1) || strlen(s) >= BERT_PROMPT_MAX ||
                (n->type == JSON_TEXT && !*s)) {
                *err = bert_errorf("option \"prompt\" must be the name of one of the model's prompts "
                                   "(config_sentence_transformers.json), such as \"query\", or an object "
                                   "{\"text\": \"query: \"} whose text (under %d bytes) goes before every text",
                                   BERT_PROMPT_MAX);
                goto done;
            }
            out->prompt_kind = n->type == JSON_TEXT ? BERT_PROMPT_NAME : BERT_PROMPT_TEXT;
            snprintf(out->prompt, sizeof out->prompt, "%s", s);
        } else {
            *err = bert_errorf("unknown bert_load option \"%s\": the options are pooling, normalize, "
                               "max_length, truncate, threads, precision, aggregation and prompt", key);
            goto done;
        }
    }
    rc = 0;
done:
    bert_json_free(doc);
    return rc;
}

static int resolve_settings(bert_entry *e, char **err)
{
    const bert_options *o = &e->given;
    e->pooling = o->pooling >= 0 ? (bert_pooling)o->pooling : e->st.pooling;
    e->normalize = o->normalize >= 0 ? o->normalize : e->st.normalize;
    e->truncate = o->truncate;
    e->threads = o->threads;
    e->aggregation = o->aggregation >= 0 ? (bert_aggregation)o->aggregation : BERT_AGG_DEFAULT;
    e->precision = o->precision >= 0 ? (bert_precision)o->precision : BERT_PRECISION_FLOAT32;
    int limit = bert_config_max_tokens(&e->cfg);
    int max_length = limit;
    /* Read at registration, so max_length is known before the tokenizer is loaded. */
    int model_max = bert_tokenizer_model_max_length(e->files);
    if (model_max > 0 && model_max < max_length) max_length = model_max;
    if (e->st.max_seq_length > 0 && e->st.max_seq_length < limit) max_length = e->st.max_seq_length;
    if (o->max_length > 0) {
        if (o->max_length > limit) {
            *err = bert_errorf("max_length %d is more than the %d positions the model takes "
                               "(max_position_embeddings %d, of which RoBERTa and MPNet skip pad_token_id + 1): "
                               "use at most %d", o->max_length, limit, e->cfg.max_position_embeddings, limit);
            return -1;
        }
        max_length = o->max_length;
    }
    e->max_length = max_length;
    if (o->prompt_kind == BERT_PROMPT_TEXT) {
        if (!(e->prompt = bert_strdup(o->prompt))) {
            *err = bert_errorf("out of memory registering %s", e->path);
            return -1;
        }
    } else if (bert_st_prompt(e->files, o->prompt_kind == BERT_PROMPT_NAME ? o->prompt : NULL, &e->prompt, err) != 0) {
        return -1;
    }
    return 0;
}

static void entry_free(bert_entry *e)
{
    if (!e) return;
    bert_head_config_free(&e->announced);
    bert_tokenizer_free(e->tokenizer);
    bert_weight_cache_release(e->model);
    bert_scratch_free(e->scratch);
    bert_ids_free(&e->ids);
    bert_encode_buffers_free(&e->tokenizing);
    free(e->prompt);
    free(e->prompted.s);
    free(e->name);
    free(e->path);
    bert_model_files_free(e->files);
    free(e);
}

static bert_entry *lookup(bert_registry *r, const char *name)
{
    for (bert_entry *e = r->head; e; e = e->next)
        if (strcmp(e->name, name) == 0) return e;
    return NULL;
}

/* The settings an entry computes with, as bert_load's options JSON. */
static char *effective_options(const bert_entry *e)
{
    char threads[32] = "";
    if (e->threads > 0) snprintf(threads, sizeof threads, ", \"threads\": %d", e->threads);
    /* For a message: the prompt as written, not escaped. */
    return bert_errorf("{\"pooling\": \"%s\", \"normalize\": %s, \"max_length\": %d, \"truncate\": %s%s, "
                       "\"precision\": \"%s\", \"aggregation\": \"%s\"%s%s%s}",
                       pooling_name(e->pooling), e->normalize ? "true" : "false", e->max_length,
                       e->truncate ? "true" : "false", threads, bert_precision_name(e->precision),
                       bert_aggregation_name(e->aggregation), e->prompt ? ", \"prompt\": {\"text\": \"" : "",
                       e->prompt ? e->prompt : "", e->prompt ? "\"}" : "");
}

static int same_effect(const bert_entry *a, const bert_entry *b)
{
    return a->dir_dev == b->dir_dev && a->dir_ino == b->dir_ino && a->pooling == b->pooling &&
           a->normalize == b->normalize && a->max_length == b->max_length &&
           a->truncate == b->truncate && a->threads == b->threads && a->aggregation == b->aggregation &&
           a->precision == b->precision &&
           (a->prompt && b->prompt ? strcmp(a->prompt, b->prompt) == 0 : a->prompt == b->prompt);
}

static char *conflict_error(const bert_entry *old, const bert_entry *e)
{
    char *old_opts = effective_options(old), *new_opts = effective_options(e);
    char *msg = bert_errorf("model '%s' is already registered for '%s' with options %s; this call asks "
                            "for '%s' with options %s: choose another name, or SELECT bert_unload('%s') "
                            "first", e->name, old->path, old_opts ? old_opts : "?", e->path,
                            new_opts ? new_opts : "?", e->name);
    free(old_opts);
    free(new_opts);
    return msg;
}

static int add_dir(bert_registry *r, const char *name, const char *path, const bert_options *opts, char **err);

int bert_registry_add(bert_registry *r, const char *name, const char *path,
                 const bert_options *opts, char **err)
{
    *err = NULL;
    if (!*name) {
        *err = bert_errorf("a model name cannot be empty: bert_load('name', '/path/to/model')");
        return -1;
    }
    char *dir = bert_checkpoint_dir(path, err);
    if (!dir) {
        if (!*err) *err = bert_errorf("out of memory registering model '%s'", name);
        return -1;
    }
    int rc = add_dir(r, name, dir, opts, err);
    free(dir);
    return rc;
}

/* bert_registry_add once `path` is the model directory itself. */
static int add_dir(bert_registry *r, const char *name, const char *path, const bert_options *opts, char **err)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        *err = bert_errorf("model directory '%s' not found (%s): give the path of a directory holding "
                           "config.json, vocab.txt and model.safetensors", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        *err = bert_errorf("'%s' is a file, not a directory: give the model's directory, the one "
                           "holding config.json, vocab.txt and model.safetensors", path);
        return -1;
    }
    bert_entry *e = calloc(1, sizeof *e);
    if (!e || !(e->name = bert_strdup(name)) || !(e->path = bert_strdup(path)) ||
        !(e->files = bert_model_files_new(path))) {
        entry_free(e);
        *err = bert_errorf("out of memory registering model '%s'", name);
        return -1;
    }
    e->dir_dev = st.st_dev;
    e->dir_ino = st.st_ino;
    e->given = *opts;
    if (bert_config_load(e->files, &e->cfg, err) != 0 || bert_st_config_load(e->files, &e->st, err) != 0 ||
        resolve_settings(e, err) != 0 || bert_checkpoint_check(e->files, err) != 0) {
        entry_free(e);
        return -1;
    }
    /* What bert_models shows until the weights are loaded.  A config.json
     * whose labels cannot be read fails only a model with a classifier,
     * when its weights load (model.c), so here it shows none. */
    char *head_err = NULL;
    if (bert_head_config_load(e->files, &e->announced, &head_err) != 0) memset(&e->announced, 0, sizeof e->announced);
    free(head_err);
    bert_entry *old = lookup(r, name);
    if (old) {
        int same = same_effect(old, e);
        if (!same) *err = conflict_error(old, e);
        entry_free(e);
        return same ? 0 : -1;
    }
    e->serial = ++r->serial;
    e->next = r->head;
    r->head = e;
    return 0;
}

int bert_registry_remove(bert_registry *r, const char *name, char **err)
{
    *err = NULL;
    for (bert_entry **p = &r->head; *p; p = &(*p)->next) {
        if (strcmp((*p)->name, name) == 0) {
            bert_entry *e = *p;
            *p = e->next;
            entry_free(e);
            return 0;
        }
    }
    *err = bert_errorf("no model named '%s' is registered", name);
    return -1;
}

/* "a, b, c" of the registered names, for error messages. */
static char *list_names(const bert_registry *r)
{
    bert_text s = {0};
    bert_text_add(&s, "", 0);
    for (bert_entry *e = r->head; e; e = e->next) {
        bert_text_add(&s, "'", 1);
        bert_text_add(&s, e->name, strlen(e->name));
        bert_text_add(&s, "', ", e->next ? 3 : 1);
    }
    if (s.failed) free(s.s);
    return s.failed ? NULL : s.s;
}

bert_entry *bert_registry_find(bert_registry *r, const char *name, char **err)
{
    *err = NULL;
    if (name) {
        bert_entry *e = lookup(r, name);
        if (e) return e;
        char *names = list_names(r);
        if (names && *names)
            *err = bert_errorf("unknown model '%s'; registered models: %s. Register it with "
                               "SELECT bert_load('%s', '/path/to/model')", name, names, name);
        else
            *err = bert_errorf("unknown model '%s': no model is registered. Register it with "
                               "SELECT bert_load('%s', '/path/to/model')", name, name);
        free(names);
        return NULL;
    }
    bert_entry *e = lookup(r, "default");
    if (e) return e;
    if (r->head && !r->head->next) return r->head;
    if (r->head) {
        char *names = list_names(r);
        *err = bert_errorf("several models are registered (%s) and none is named 'default': name "
                           "the model as the last argument, or register one as 'default'",
                           names ? names : "?");
        free(names);
        return NULL;
    }
    const char *env = getenv("BERT_MODEL");
    if (env && *env) {
        bert_options defaults;
        if (bert_options_parse(NULL, &defaults, err) != 0) return NULL;
        char *add_err = NULL;
        if (bert_registry_add(r, "default", env, &defaults, &add_err) != 0) {
            *err = bert_errorf("BERT_MODEL: %s", add_err ? add_err : "out of memory");
            free(add_err);
            return NULL;
        }
        return r->head;
    }
    *err = bert_errorf("no model is registered: SELECT bert_load('default', '/path/to/model') "
                       "first, or set the environment variable BERT_MODEL to a model directory");
    return NULL;
}

int bert_entry_need_tokenizer(bert_entry *e, char **err)
{
    *err = NULL;
    if (e->tokenizer) return 0;
    return bert_tokenizer_load(e->files, &e->tokenizer, err);
}

int bert_entry_need_model(bert_entry *e, char **err)
{
    *err = NULL;
    if (bert_entry_need_tokenizer(e, err) != 0) return -1;
    if (!e->scratch && !(e->scratch = bert_scratch_new())) {
        *err = bert_errorf("out of memory allocating buffers for model '%s'", e->name);
        return -1;
    }
    if (e->model) return 0;
    const bert_model *m = bert_weight_cache_acquire(e->files, e->precision, err);
    if (!m) return -1;
    if (m->cfg.vocab_size < (int)bert_tokenizer_vocab_size(e->tokenizer)) {
        *err = bert_errorf("model '%s': %s has %zu entries but the weights only %d: the "
                           "vocabulary and the weights do not belong together", e->name,
                           bert_tokenizer_source(e->tokenizer), bert_tokenizer_vocab_size(e->tokenizer),
                           m->cfg.vocab_size);
        bert_weight_cache_release(m);
        return -1;
    }
    bert_scratch_set_threads(e->scratch, e->threads);
    e->model = m;
    return 0;
}

const float *bert_entry_encode(bert_entry *e, const int32_t *ids, const int32_t *type_ids,
                          const int *lengths, int n_seqs, bert_interrupt_fn interrupted,
                          void *ctx, char **err)
{
    return bert_entry_encode_keys(e, ids, type_ids, lengths, NULL, n_seqs, interrupted, ctx, err);
}

const float *bert_entry_encode_keys(bert_entry *e, const int32_t *ids, const int32_t *type_ids, const int *lengths,
                                    const int *keys, int n_seqs, bert_interrupt_fn interrupted, void *ctx,
                                    char **err)
{
    e->encoder_calls++;
    return bert_encode_keys(e->model, e->scratch, ids, type_ids, lengths, keys, n_seqs, interrupted, ctx, err);
}

const float *bert_entry_encode_observed(bert_entry *e, const int32_t *ids, const int *lengths, int n_seqs,
                                        const bert_observer *observer, bert_interrupt_fn interrupted, void *ctx,
                                        char **err)
{
    e->encoder_calls++;
    return bert_encode_observed(e->model, e->scratch, ids, NULL, lengths, n_seqs, observer, interrupted, ctx, err);
}

void bert_registry_clear(bert_registry *r)
{
    while (r->head) {
        bert_entry *e = r->head;
        r->head = e->next;
        entry_free(e);
    }
}

const bert_entry *bert_registry_next(const bert_registry *r, const bert_entry *at, bert_entry_info *info)
{
    const bert_entry *e = at ? at->next : r->head;
    if (!e) return NULL;
    info->name = e->name;
    info->path = e->path;
    info->family = bert_family_name(e->cfg.family);
    info->hidden_size = e->cfg.hidden_size;
    info->num_layers = e->cfg.num_layers;
    info->num_heads = e->cfg.num_heads;
    info->vocab_size = e->cfg.vocab_size;
    info->max_length = e->max_length;
    info->normalize = e->normalize;
    info->pooling = pooling_name(e->pooling);
    info->precision = bert_precision_name(e->precision);
    info->loaded = e->model != NULL;
    info->encoder_calls = e->encoder_calls;
    const bert_model *m = e->model;
    info->has_mlm = m ? bert_model_has_mlm_head(m) : -1;
    info->has_nsp = m ? bert_model_has_nsp_head(m) : -1;
    info->dtype = m ? m->dtype : NULL;
    info->refs = m ? bert_weight_cache_refs(m) : 0;
    const bert_head_config *labelled = NULL;
    if (m) {
        info->task = bert_model_task(m);
        if (bert_model_has_classifier(m) || bert_model_has_token_head(m)) labelled = &m->head;
    } else {
        info->task = e->announced.architecture_task;
        if (info->task && (strcmp(info->task, "sequence_classification") == 0 ||
                           strcmp(info->task, "token_classification") == 0))
            labelled = &e->announced;
    }
    info->labels = labelled && labelled->num_labels > 0 ? labelled->labels : NULL;
    info->num_labels = info->labels ? labelled->num_labels : 0;
    return e;
}

const char *bert_entry_name(const bert_entry *e) { return e->name; }
int bert_entry_hidden_size(const bert_entry *e) { return e->cfg.hidden_size; }
unsigned long bert_entry_serial(const bert_entry *e) { return e->serial; }
const char *bert_entry_token(const bert_entry *e, int32_t id) { return bert_tokenizer_token(e->tokenizer, id); }
