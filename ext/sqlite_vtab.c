/*
 * sqlite_vtab.c - the table-valued parts of the SQL surface:
 *
 *   SELECT * FROM bert_models;                          -- this connection's models
 *   SELECT * FROM bert_fill_mask_each(text [, top_k [, model]]);
 *   SELECT * FROM bert_embed_each(json [, model]);      -- batched embedding
 *   SELECT * FROM bert_rerank_each(query, json [, model]); -- batched cross-encoder
 *   SELECT * FROM bert_ner_each(text [, model]);        -- named entities
 *   SELECT * FROM bert_answer_each(question, context [, top_k [, model]]);
 *   SELECT * FROM bert_tokenize_offsets(text [, model]); -- pieces with character offsets
 *   SELECT * FROM bert_chunks(text [, max_tokens [, overlap [, model]]]);
 *
 * All of them are eponymous virtual tables in the style of SQLite's
 * ext/misc/series.c: hidden columns carry the arguments.
 */
#include "sqlite_glue.h"

#include "buffer.h"
#include "chunks.h"
#include "error.h"
#include "json.h"
#include "pipeline.h"
#include "weight_cache.h"

#include <stdlib.h>
#include <string.h>

/* Texts embedded per step of a bert_embed_each cursor: the granularity at
 * which sqlite3_interrupt() stops a long batch. */
#define EMBED_CHUNK 256

/* What the table functions' boilerplate differs in: their columns, where
 * their argument columns start, how many of those there are and must be
 * given, and the size of their cursors.  One table at the end of the file
 * lists them all. */
typedef struct {
    const char *name;
    const char *schema;
    int first_arg, n_args, required;
    size_t cursor_size;
    const sqlite3_module *module;
} table_spec;

typedef struct {
    sqlite3_vtab base;
    bert_connection *conn;
    sqlite3 *db;            /* what the interrupt poll asks */
    const table_spec *spec;
} glue_vtab;

/* The first member of every cursor: the row it is on and, where the rows
 * are known when the scan starts, how many there are. */
typedef struct {
    sqlite3_vtab_cursor sqlite;
    sqlite3_int64 row, count;
} table_cursor;

static const table_spec *table_spec_named(const char *module_name);

/* argv[0] of xConnect is the module's name: it finds the table's spec. */
static int table_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                         char **err)
{
    (void)err;
    const table_spec *spec = argc > 0 ? table_spec_named(argv[0]) : NULL;
    if (!spec) return SQLITE_ERROR;
    int rc = sqlite3_declare_vtab(db, spec->schema);
    if (rc != SQLITE_OK) return rc;
    glue_vtab *v = sqlite3_malloc(sizeof *v);
    if (!v) return SQLITE_NOMEM;
    memset(v, 0, sizeof *v);
    v->conn = aux;
    v->db = db;
    v->spec = spec;
    *out = &v->base;
    return SQLITE_OK;
}

static int table_disconnect(sqlite3_vtab *v)
{
    sqlite3_free(v);
    return SQLITE_OK;
}

static void vtab_error(sqlite3_vtab *v, char *msg)
{
    sqlite3_free(v->zErrMsg);
    v->zErrMsg = sqlite3_mprintf("%s", msg ? msg : "out of memory");
    free(msg);
}

/* Plans a table whose hidden argument columns start at `first_arg` and of
 * which the first `required` must be given: each usable equality constraint
 * on an argument column becomes argv[i] of xFilter, in column order. */
static int plan_arguments(sqlite3_index_info *info, int first_arg, int n_args, int required)
{
    int where[8];
    for (int i = 0; i < n_args; i++) where[i] = -1;
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        int col = c->iColumn - first_arg;
        if (col < 0 || col >= n_args || c->op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
        if (!c->usable) return SQLITE_CONSTRAINT;
        where[col] = i;
    }
    int mask = 0, argc = 0;
    for (int i = 0; i < n_args; i++) {
        if (where[i] < 0) continue;
        info->aConstraintUsage[where[i]].argvIndex = ++argc;
        info->aConstraintUsage[where[i]].omit = 1;
        mask |= 1 << i;
    }
    for (int i = 0; i < required; i++) {
        if (!(mask & (1 << i))) {
            info->estimatedCost = 1e30;
            return SQLITE_CONSTRAINT;
        }
    }
    info->idxNum = mask;
    info->estimatedCost = 100;
    return SQLITE_OK;
}

/* Maps xFilter's argv back to argument columns: args[i] is NULL when absent. */
static void unpack_arguments(int mask, int n_args, sqlite3_value **argv, sqlite3_value **args)
{
    for (int i = 0, j = 0; i < n_args; i++) args[i] = (mask & (1 << i)) ? argv[j++] : NULL;
}

static int table_best_index(sqlite3_vtab *v, sqlite3_index_info *info)
{
    const table_spec *spec = ((glue_vtab *)v)->spec;
    return plan_arguments(info, spec->first_arg, spec->n_args, spec->required);
}

/* A zeroed cursor of the table's own size, its first member a table_cursor. */
static int table_open(sqlite3_vtab *v, sqlite3_vtab_cursor **out)
{
    size_t size = ((glue_vtab *)v)->spec->cursor_size;
    sqlite3_vtab_cursor *c = sqlite3_malloc64(size);
    if (!c) return SQLITE_NOMEM;
    memset(c, 0, size);
    *out = c;
    return SQLITE_OK;
}

static int cursor_close(sqlite3_vtab_cursor *c)
{
    sqlite3_free(c);
    return SQLITE_OK;
}

/* xNext, xEof and xRowid of a table whose rows are counted up front. */
static int table_next(sqlite3_vtab_cursor *cur)
{
    ((table_cursor *)cur)->row++;
    return SQLITE_OK;
}

static int table_eof(sqlite3_vtab_cursor *cur)
{
    const table_cursor *c = (const table_cursor *)cur;
    return c->row >= c->count;
}

static int table_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
    *rowid = ((table_cursor *)cur)->row + 1;
    return SQLITE_OK;
}

/* ---- bert_models ---------------------------------------------------------- */

enum { M_NAME, M_PATH, M_LOADED, M_HIDDEN, M_LAYERS, M_HEADS, M_VOCAB, M_MAX_LENGTH,
       M_POOLING, M_NORMALIZE, M_HAS_MLM, M_HAS_NSP, M_DTYPE, M_REFS, M_ENCODER_CALLS, M_TASK, M_LABELS,
       M_PRECISION, M_FAMILY };

/* One row, copied when the scan starts: a function in the same query
 * (SELECT bert_unload(name) FROM bert_models) may free the entry it shows. */
typedef struct {
    bert_entry_info info;        /* name and path: the copies below; model: only whether loaded */
    char *name, *path;
    int has_mlm, has_nsp;        /* -1 while the weights are not loaded */
    const char *dtype;           /* a static string; NULL when not loaded */
    int refs;
    const char *task;            /* static; NULL for a bare encoder */
    char *labels;                /* JSON array, or NULL */
} model_row;

typedef struct {
    table_cursor base;
    model_row *rows;
    size_t cap;
} models_cursor;

static void models_clear(models_cursor *c)
{
    for (sqlite3_int64 i = 0; i < c->base.count; i++) {
        free(c->rows[i].name);
        free(c->rows[i].path);
        sqlite3_free(c->rows[i].labels);
    }
    free(c->rows);
    c->rows = NULL;
    c->cap = 0;
    c->base.count = c->base.row = 0;
}

static int models_close(sqlite3_vtab_cursor *cur)
{
    models_clear((models_cursor *)cur);
    return cursor_close(cur);
}

/* task and labels: from the heads of loaded weights, else from what
 * config.json's architectures and id2label announce (an unreadable
 * config.json leaves them NULL: bert_load already read it once). */
static int model_task(const bert_entry_info *e, model_row *r)
{
    r->task = NULL;
    r->labels = NULL;
    bert_head_config own;
    const bert_head_config *hc = NULL;
    char *err = NULL;
    int loaded_config = 0;
    if (e->model) {
        r->task = bert_model_task(e->model);
        if (bert_model_has_classifier(e->model) || bert_model_has_token_head(e->model)) hc = &e->model->head;
    } else if (bert_head_config_load(e->path, &own, &err) == 0) {
        loaded_config = 1;
        r->task = own.architecture_task;
        if (own.architecture_task && own.num_labels > 0 &&
            (strcmp(own.architecture_task, "sequence_classification") == 0 ||
             strcmp(own.architecture_task, "token_classification") == 0))
            hc = &own;
    }
    free(err);
    int rc = SQLITE_OK;
    if (hc) {
        sqlite3_str *s = sqlite3_str_new(NULL);
        sqlite3_str_appendchar(s, 1, '[');
        for (int i = 0; i < hc->num_labels; i++) {
            if (i) sqlite3_str_appendchar(s, 1, ',');
            bert_glue_json_string(s, hc->labels[i]);
        }
        sqlite3_str_appendchar(s, 1, ']');
        if (sqlite3_str_errcode(s) != SQLITE_OK) rc = SQLITE_NOMEM;
        r->labels = sqlite3_str_finish(s);
        if (rc != SQLITE_OK) { sqlite3_free(r->labels); r->labels = NULL; }
    }
    if (loaded_config) bert_head_config_free(&own);
    return rc;
}

static int models_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc, sqlite3_value **argv)
{
    (void)idx; (void)idx_str; (void)argc; (void)argv;
    models_cursor *c = (models_cursor *)cur;
    models_clear(c);
    const bert_registry *reg = &((glue_vtab *)cur->pVtab)->conn->registry;
    bert_entry_info info;
    for (const bert_entry *e = bert_registry_next(reg, NULL, &info); e; e = bert_registry_next(reg, e, &info)) {
        model_row *rows = bert_grow(c->rows, &c->cap, (size_t)c->base.count + 1, sizeof *rows);
        if (!rows) return SQLITE_NOMEM;
        c->rows = rows;
        const bert_model *m = info.model;
        model_row *r = &c->rows[c->base.count++];
        r->info = info;
        r->name = bert_strdup(info.name);
        r->path = bert_strdup(info.path);
        if (!r->name || !r->path) return SQLITE_NOMEM;   /* models_clear frees the rest */
        r->has_mlm = m ? bert_model_has_mlm_head(m) : -1;
        r->has_nsp = m ? bert_model_has_nsp_head(m) : -1;
        r->dtype = m ? m->dtype : NULL;
        r->refs = m ? bert_weight_cache_refs(m) : 0;
        if (model_task(&info, r) != SQLITE_OK) return SQLITE_NOMEM;
    }
    return SQLITE_OK;
}

static int models_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    const models_cursor *c = (const models_cursor *)cur;
    const model_row *r = &c->rows[c->base.row];
    switch (col) {
    case M_NAME: sqlite3_result_text(ctx, r->name, -1, SQLITE_TRANSIENT); break;
    case M_PATH: sqlite3_result_text(ctx, r->path, -1, SQLITE_TRANSIENT); break;
    case M_LOADED: sqlite3_result_int(ctx, r->info.model != NULL); break;
    case M_HIDDEN: sqlite3_result_int(ctx, r->info.cfg.hidden_size); break;
    case M_LAYERS: sqlite3_result_int(ctx, r->info.cfg.num_layers); break;
    case M_HEADS: sqlite3_result_int(ctx, r->info.cfg.num_heads); break;
    case M_VOCAB: sqlite3_result_int(ctx, r->info.cfg.vocab_size); break;
    case M_MAX_LENGTH: sqlite3_result_int(ctx, r->info.max_length); break;
    case M_POOLING: sqlite3_result_text(ctx, bert_pooling_name(r->info.pooling), -1, SQLITE_STATIC); break;
    case M_NORMALIZE: sqlite3_result_int(ctx, r->info.normalize); break;
    /* What the weights hold is known once they are loaded; NULL before. */
    case M_HAS_MLM: if (r->has_mlm >= 0) sqlite3_result_int(ctx, r->has_mlm); break;
    case M_HAS_NSP: if (r->has_nsp >= 0) sqlite3_result_int(ctx, r->has_nsp); break;
    case M_DTYPE: if (r->dtype) sqlite3_result_text(ctx, r->dtype, -1, SQLITE_STATIC); break;
    case M_REFS: sqlite3_result_int(ctx, r->refs); break;
    case M_ENCODER_CALLS: sqlite3_result_int64(ctx, r->info.encoder_calls); break;
    case M_TASK: if (r->task) sqlite3_result_text(ctx, r->task, -1, SQLITE_STATIC); break;
    case M_LABELS:
        if (r->labels) {
            sqlite3_result_text(ctx, r->labels, -1, SQLITE_TRANSIENT);
            sqlite3_result_subtype(ctx, 74);   /* JSON */
        }
        break;
    case M_PRECISION: sqlite3_result_text(ctx, bert_precision_name(r->info.precision), -1, SQLITE_STATIC); break;
    case M_FAMILY: sqlite3_result_text(ctx, bert_family_name(r->info.cfg.family), -1, SQLITE_STATIC); break;
    default: break;
    }
    return SQLITE_OK;
}

static sqlite3_module models_module = {
    .xConnect = table_connect, .xBestIndex = table_best_index, .xDisconnect = table_disconnect,
    .xOpen = table_open, .xClose = models_close, .xFilter = models_filter, .xNext = table_next,
    .xEof = table_eof, .xColumn = models_column, .xRowid = table_rowid,
};

/* ---- bert_fill_mask_each ------------------------------------------------------- */

enum { F_MASK_INDEX, F_RANK, F_TOKEN, F_TOKEN_STR, F_SCORE, F_SEQUENCE, F_TEXT, F_TOP_K, F_MODEL };

typedef struct {
    table_cursor base;
    fill_mask_result result;
} fill_cursor;

static int fill_close(sqlite3_vtab_cursor *cur)
{
    bert_fill_mask_result_free(&((fill_cursor *)cur)->result);
    return cursor_close(cur);
}

static int fill_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc, sqlite3_value **argv)
{
    (void)idx_str; (void)argc;
    fill_cursor *c = (fill_cursor *)cur;
    glue_vtab *v = (glue_vtab *)cur->pVtab;
    bert_fill_mask_result_free(&c->result);
    memset(&c->result, 0, sizeof c->result);
    c->base.row = c->base.count = 0;
    sqlite3_value *args[3];
    unpack_arguments(idx, 3, argv, args);
    if (sqlite3_value_type(args[0]) == SQLITE_NULL) return SQLITE_OK;   /* NULL text: no rows */
    if (sqlite3_value_type(args[0]) != SQLITE_TEXT) {
        vtab_error(&v->base, bert_errorf("bert_fill_mask_each: the text must be TEXT"));
        return SQLITE_ERROR;
    }
    int top_k;
    char *err = NULL;
    if (bert_glue_top_k(args[1], 0, "bert_fill_mask_each", "text", &top_k, &err) != 0) {
        vtab_error(&v->base, err);
        return SQLITE_ERROR;
    }
    bert_entry *e = bert_glue_find_model(v->conn, args[2], &err);
    if (!e) { vtab_error(&v->base, err); return SQLITE_ERROR; }
    const char *text = (const char *)sqlite3_value_text(args[0]);
    size_t len = (size_t)sqlite3_value_bytes(args[0]);
    if (!text) return SQLITE_NOMEM;
    if (bert_pipeline_fill_mask(e, text, len, top_k, &c->result, bert_glue_interrupt_fn(), v->db, &err) != 0) {
        vtab_error(&v->base, err);
        return SQLITE_ERROR;
    }
    c->base.count = (sqlite3_int64)c->result.n_masks * c->result.top_k;
    return SQLITE_OK;
}

static int fill_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    fill_cursor *c = (fill_cursor *)cur;
    const fill_mask_candidate *k = &c->result.items[c->base.row];
    switch (col) {
    case F_MASK_INDEX: sqlite3_result_int(ctx, k->mask_index); break;
    case F_RANK: sqlite3_result_int(ctx, k->rank); break;
    case F_TOKEN: sqlite3_result_int(ctx, k->token); break;
    case F_TOKEN_STR: sqlite3_result_text(ctx, k->token_str, -1, SQLITE_TRANSIENT); break;
    case F_SCORE: sqlite3_result_double(ctx, k->score); break;
    case F_SEQUENCE: sqlite3_result_text(ctx, k->sequence, -1, SQLITE_TRANSIENT); break;
    default: break;
    }
    return SQLITE_OK;
}

static sqlite3_module fill_module = {
    .xConnect = table_connect, .xBestIndex = table_best_index, .xDisconnect = table_disconnect,
    .xOpen = table_open, .xClose = fill_close, .xFilter = fill_filter, .xNext = table_next,
    .xEof = table_eof, .xColumn = fill_column, .xRowid = table_rowid,
};

/* ---- bert_embed_each ---------------------------------------------------------- */

enum { E_KEY, E_VALUE, E_EMBEDDING, E_INPUT, E_MODEL };

typedef struct {
    table_cursor base;
    json_doc *doc;
    int *items;          /* node index of each text, in input order */
    /* The model is looked up by name for every chunk: a function in the same
     * query may unload it between two chunks. */
    char *model;
    int dim;
    float *vectors;      /* EMBED_CHUNK embeddings, of rows chunk_start.. */
    sqlite3_int64 chunk_start;
    int chunk_len;
} embed_cursor;

static void embed_reset(embed_cursor *c)
{
    bert_json_free(c->doc);
    free(c->items);
    free(c->vectors);
    free(c->model);
    c->doc = NULL;
    c->items = NULL;
    c->vectors = NULL;
    c->model = NULL;
    c->base.count = c->base.row = c->chunk_start = c->chunk_len = c->dim = 0;
}

static int embed_close(sqlite3_vtab_cursor *cur)
{
    embed_reset((embed_cursor *)cur);
    return cursor_close(cur);
}

/* Embeds the chunk of texts that starts at the cursor's row. */
static int embed_chunk(embed_cursor *c)
{
    glue_vtab *v = (glue_vtab *)c->base.sqlite.pVtab;
    int n = c->base.count - c->base.row < EMBED_CHUNK ? (int)(c->base.count - c->base.row) : EMBED_CHUNK;
    const char *texts[EMBED_CHUNK];
    size_t lens[EMBED_CHUNK];
    for (int i = 0; i < n; i++) {
        texts[i] = c->doc->nodes[c->items[c->base.row + i]].text;
        lens[i] = strlen(texts[i]);
    }
    char *err = NULL;
    bert_entry *e = bert_registry_find(&v->conn->registry, c->model, &err);
    if (!e || bert_entry_hidden_size(e) != c->dim) {
        free(err);
        vtab_error(&v->base, bert_errorf("bert_embed_each: model '%s' was unloaded or replaced while the "
                                         "query was reading it", c->model));
        return SQLITE_ERROR;
    }
    if (bert_pipeline_embed_batch(e, texts, lens, n, c->vectors, bert_glue_interrupt_fn(), v->db, &err) != 0) {
        vtab_error(&v->base, err);
        return SQLITE_ERROR;
    }
    c->chunk_start = c->base.row;
    c->chunk_len = n;
    return SQLITE_OK;
}

/* Reads the JSON array (key = index) or object (key = its key) of texts a
 * batched table function takes; JSON nulls give no row.  *items lists the
 * text nodes in input order. */
static int read_items(glue_vtab *v, const char *fn, sqlite3_value *input, json_doc **doc, int **items,
                      sqlite3_int64 *count)
{
    const char *json = (const char *)sqlite3_value_text(input);
    if (!json) return SQLITE_NOMEM;
    char *err = NULL;
    if (bert_json_parse(json, (size_t)sqlite3_value_bytes(input), doc, &err) != 0 ||
        ((*doc)->nodes[0].type != JSON_ARRAY && (*doc)->nodes[0].type != JSON_OBJECT)) {
        /* The parser's reason first: malformed JSON, or out of memory. */
        vtab_error(&v->base, bert_errorf("%s: %s%sthe input must be a JSON array of texts "
                                         "(json_group_array(body)) or an object of key -> text "
                                         "(json_group_object(id, body))", fn, err ? err : "", err ? "; " : ""));
        free(err);
        return SQLITE_ERROR;
    }
    int n = bert_json_length(*doc, 0);
    *items = malloc(((size_t)n + 1) * sizeof **items);
    if (!*items) return SQLITE_NOMEM;
    for (int node = (*doc)->nodes[0].first_child; node >= 0; node = (*doc)->nodes[node].next_sibling) {
        if ((*doc)->nodes[node].type == JSON_NULL) continue;   /* NULL texts give no row */
        if ((*doc)->nodes[node].type != JSON_TEXT) {
            const json_node *bad = &(*doc)->nodes[node];
            if (bad->key)
                vtab_error(&v->base, bert_errorf("%s: the value of key \"%s\" is not a text: "
                                                 "give an object of key -> text", fn, bad->key));
            else
                vtab_error(&v->base, bert_errorf("%s: item %d of the input array (index %d) "
                                                 "is not a text: give an array of texts",
                                                 fn, (int)bad->index + 1, (int)bad->index));
            return SQLITE_ERROR;
        }
        (*items)[(*count)++] = node;
    }
    return SQLITE_OK;
}

/* key and value of an item row: the array index or object key, and the text. */
static void item_column(const json_node *node, sqlite3_context *ctx, int want_key)
{
    if (!want_key) sqlite3_result_text(ctx, node->text, -1, SQLITE_TRANSIENT);
    else if (node->key) sqlite3_result_text(ctx, node->key, -1, SQLITE_TRANSIENT);
    else sqlite3_result_int64(ctx, node->index);
}

static int embed_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc, sqlite3_value **argv)
{
    (void)idx_str; (void)argc;
    embed_cursor *c = (embed_cursor *)cur;
    glue_vtab *v = (glue_vtab *)cur->pVtab;
    embed_reset(c);
    sqlite3_value *args[2];
    unpack_arguments(idx, 2, argv, args);
    if (sqlite3_value_type(args[0]) == SQLITE_NULL) return SQLITE_OK;
    int rc = read_items(v, "bert_embed_each", args[0], &c->doc, &c->items, &c->base.count);
    if (rc != SQLITE_OK) return rc;
    char *err = NULL;
    bert_entry *e = bert_glue_find_model(v->conn, args[1], &err);
    if (!e) { vtab_error(&v->base, err); return SQLITE_ERROR; }
    c->dim = bert_entry_hidden_size(e);
    c->model = bert_strdup(bert_entry_name(e));
    c->vectors = malloc((size_t)EMBED_CHUNK * (size_t)c->dim * sizeof(float));
    if (!c->model || !c->vectors) return SQLITE_NOMEM;
    return c->base.count > 0 ? embed_chunk(c) : SQLITE_OK;
}

static int embed_next(sqlite3_vtab_cursor *cur)
{
    embed_cursor *c = (embed_cursor *)cur;
    c->base.row++;
    if (c->base.row < c->base.count && c->base.row >= c->chunk_start + c->chunk_len) return embed_chunk(c);
    return SQLITE_OK;
}

static int embed_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    embed_cursor *c = (embed_cursor *)cur;
    const json_node *node = &c->doc->nodes[c->items[c->base.row]];
    int dim = c->dim;
    switch (col) {
    case E_KEY: item_column(node, ctx, 1); break;
    case E_VALUE: item_column(node, ctx, 0); break;
    case E_EMBEDDING:
        sqlite3_result_blob(ctx, c->vectors + (size_t)(c->base.row - c->chunk_start) * (size_t)dim,
                            dim * (int)sizeof(float), SQLITE_TRANSIENT);
        sqlite3_result_subtype(ctx, BERT_SUBTYPE_FLOAT32);
        break;
    default: break;
    }
    return SQLITE_OK;
}

static sqlite3_module embed_module = {
    .xConnect = table_connect, .xBestIndex = table_best_index, .xDisconnect = table_disconnect,
    .xOpen = table_open, .xClose = embed_close, .xFilter = embed_filter, .xNext = embed_next,
    .xEof = table_eof, .xColumn = embed_column, .xRowid = table_rowid,
};

/* ---- bert_rerank_each ------------------------------------------------------------ */

enum { R_KEY, R_VALUE, R_SCORE, R_QUERY, R_INPUT, R_MODEL };

typedef struct {
    table_cursor base;
    json_doc *doc;
    int *items;          /* node index of each document, in input order */
    char *model;         /* looked up again for every chunk, as in bert_embed_each */
    char *query;         /* a copy: the argument's text may not outlive xFilter */
    size_t query_len;
    double *scores;      /* EMBED_CHUNK scores, of rows chunk_start.. */
    sqlite3_int64 chunk_start;
    int chunk_len;
} rerank_cursor;

static void rerank_reset(rerank_cursor *c)
{
    bert_json_free(c->doc);
    free(c->items);
    free(c->scores);
    free(c->model);
    free(c->query);
    c->doc = NULL;
    c->items = NULL;
    c->scores = NULL;
    c->model = c->query = NULL;
    c->base.count = c->base.row = c->chunk_start = c->chunk_len = 0;
    c->query_len = 0;
}

static int rerank_close(sqlite3_vtab_cursor *cur)
{
    rerank_reset((rerank_cursor *)cur);
    return cursor_close(cur);
}

/* Scores the chunk of documents that starts at the cursor's row, in packed batches. */
static int rerank_chunk(rerank_cursor *c)
{
    glue_vtab *v = (glue_vtab *)c->base.sqlite.pVtab;
    int n = c->base.count - c->base.row < EMBED_CHUNK ? (int)(c->base.count - c->base.row) : EMBED_CHUNK;
    const char *docs[EMBED_CHUNK];
    size_t lens[EMBED_CHUNK];
    for (int i = 0; i < n; i++) {
        docs[i] = c->doc->nodes[c->items[c->base.row + i]].text;
        lens[i] = strlen(docs[i]);
    }
    char *err = NULL;
    bert_entry *e = bert_registry_find(&v->conn->registry, c->model, &err);
    if (!e) {
        free(err);
        vtab_error(&v->base, bert_errorf("bert_rerank_each: model '%s' was unloaded while the query was "
                                         "reading it", c->model));
        return SQLITE_ERROR;
    }
    if (bert_pipeline_rerank_batch(e, c->query, c->query_len, docs, lens, n, c->scores, bert_glue_interrupt_fn(), v->db,
                              &err) != 0) {
        vtab_error(&v->base, err);
        return SQLITE_ERROR;
    }
    c->chunk_start = c->base.row;
    c->chunk_len = n;
    return SQLITE_OK;
}

static int rerank_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc, sqlite3_value **argv)
{
    (void)idx_str; (void)argc;
    rerank_cursor *c = (rerank_cursor *)cur;
    glue_vtab *v = (glue_vtab *)cur->pVtab;
    rerank_reset(c);
    sqlite3_value *args[3];
    unpack_arguments(idx, 3, argv, args);
    /* NULL in gives nothing out, as NULL does for the scalar functions. */
    if (sqlite3_value_type(args[0]) == SQLITE_NULL || sqlite3_value_type(args[1]) == SQLITE_NULL) return SQLITE_OK;
    if (sqlite3_value_type(args[0]) == SQLITE_BLOB) {
        vtab_error(&v->base, bert_errorf("bert_rerank_each(query, json [, model]): the query must be TEXT, "
                                         "not a BLOB"));
        return SQLITE_ERROR;
    }
    const char *query = (const char *)sqlite3_value_text(args[0]);
    if (!query) return SQLITE_NOMEM;
    c->query = bert_strdup(query);
    if (!c->query) return SQLITE_NOMEM;
    c->query_len = strlen(c->query);
    int rc = read_items(v, "bert_rerank_each", args[1], &c->doc, &c->items, &c->base.count);
    if (rc != SQLITE_OK) return rc;
    char *err = NULL;
    bert_entry *e = bert_glue_find_model(v->conn, args[2], &err);
    if (!e) { vtab_error(&v->base, err); return SQLITE_ERROR; }
    c->model = bert_strdup(bert_entry_name(e));
    c->scores = malloc((size_t)EMBED_CHUNK * sizeof *c->scores);
    if (!c->model || !c->scores) return SQLITE_NOMEM;
    return c->base.count > 0 ? rerank_chunk(c) : SQLITE_OK;
}

static int rerank_next(sqlite3_vtab_cursor *cur)
{
    rerank_cursor *c = (rerank_cursor *)cur;
    c->base.row++;
    if (c->base.row < c->base.count && c->base.row >= c->chunk_start + c->chunk_len) return rerank_chunk(c);
    return SQLITE_OK;
}

static int rerank_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    rerank_cursor *c = (rerank_cursor *)cur;
    const json_node *node = &c->doc->nodes[c->items[c->base.row]];
    switch (col) {
    case R_KEY: item_column(node, ctx, 1); break;
    case R_VALUE: item_column(node, ctx, 0); break;
    case R_SCORE: sqlite3_result_double(ctx, c->scores[c->base.row - c->chunk_start]); break;
    default: break;
    }
    return SQLITE_OK;
}

static sqlite3_module rerank_module = {
    .xConnect = table_connect, .xBestIndex = table_best_index, .xDisconnect = table_disconnect,
    .xOpen = table_open, .xClose = rerank_close, .xFilter = rerank_filter, .xNext = rerank_next,
    .xEof = table_eof, .xColumn = rerank_column, .xRowid = table_rowid,
};

/* ---- bert_ner_each -------------------------------------------------------------- */

enum { N_ENTITY, N_SCORE, N_WORD, N_START, N_END, N_INDEX, N_TEXT, N_MODEL };

typedef struct {
    table_cursor base;
    ner_entities result;
} ner_cursor;

static int ner_close(sqlite3_vtab_cursor *cur)
{
    bert_ner_entities_free(&((ner_cursor *)cur)->result);
    return cursor_close(cur);
}

static int ner_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc, sqlite3_value **argv)
{
    (void)idx_str; (void)argc;
    ner_cursor *c = (ner_cursor *)cur;
    glue_vtab *v = (glue_vtab *)cur->pVtab;
    bert_ner_entities_free(&c->result);
    c->base.row = c->base.count = 0;
    sqlite3_value *args[2];
    unpack_arguments(idx, 2, argv, args);
    if (sqlite3_value_type(args[0]) == SQLITE_NULL) return SQLITE_OK;   /* NULL text: no rows */
    if (sqlite3_value_type(args[0]) != SQLITE_TEXT) {
        vtab_error(&v->base, bert_errorf("bert_ner_each: the text must be TEXT"));
        return SQLITE_ERROR;
    }
    char *err = NULL;
    bert_entry *e = bert_glue_find_model(v->conn, args[1], &err);
    if (!e) { vtab_error(&v->base, err); return SQLITE_ERROR; }
    const char *text = (const char *)sqlite3_value_text(args[0]);
    size_t len = (size_t)sqlite3_value_bytes(args[0]);
    if (!text) return SQLITE_NOMEM;
    if (bert_pipeline_ner(e, text, len, &c->result, bert_glue_interrupt_fn(), v->db, &err) != 0) {
        vtab_error(&v->base, err);
        return SQLITE_ERROR;
    }
    c->base.count = (sqlite3_int64)c->result.n;
    return SQLITE_OK;
}

static int ner_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    ner_cursor *c = (ner_cursor *)cur;
    const ner_entity *x = &c->result.items[c->base.row];
    switch (col) {
    case N_ENTITY: sqlite3_result_text(ctx, x->entity, -1, SQLITE_TRANSIENT); break;
    case N_SCORE: sqlite3_result_double(ctx, x->score); break;
    case N_WORD: sqlite3_result_text(ctx, x->word, -1, SQLITE_TRANSIENT); break;
    case N_START: sqlite3_result_int64(ctx, x->start); break;
    case N_END: sqlite3_result_int64(ctx, x->end); break;
    case N_INDEX:
        if (x->index >= 0) sqlite3_result_int(ctx, x->index);
        else sqlite3_result_null(ctx);   /* an aggregated entity has no single index */
        break;
    default: break;
    }
    return SQLITE_OK;
}

static sqlite3_module ner_module = {
    .xConnect = table_connect, .xBestIndex = table_best_index, .xDisconnect = table_disconnect,
    .xOpen = table_open, .xClose = ner_close, .xFilter = ner_filter, .xNext = table_next,
    .xEof = table_eof, .xColumn = ner_column, .xRowid = table_rowid,
};

/* ---- bert_answer_each ---------------------------------------------------------- */

enum { A_RANK, A_ANSWER, A_SCORE, A_START, A_END, A_QUESTION, A_CONTEXT, A_TOP_K, A_MODEL };

typedef struct {
    table_cursor base;
    qa_answers result;
    char *context;       /* a copy: the answers are its substrings */
} answer_cursor;

static void answer_clear(answer_cursor *c)
{
    bert_qa_answers_free(&c->result);
    free(c->context);
    c->context = NULL;
    c->base.row = c->base.count = 0;
}

static int answer_close(sqlite3_vtab_cursor *cur)
{
    answer_clear((answer_cursor *)cur);
    return cursor_close(cur);
}

static int answer_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc, sqlite3_value **argv)
{
    (void)idx_str; (void)argc;
    answer_cursor *c = (answer_cursor *)cur;
    glue_vtab *v = (glue_vtab *)cur->pVtab;
    answer_clear(c);
    sqlite3_value *args[4];
    unpack_arguments(idx, 4, argv, args);
    for (int i = 0; i < 2; i++) {
        if (sqlite3_value_type(args[i]) == SQLITE_NULL) return SQLITE_OK;   /* NULL: no rows */
        if (sqlite3_value_type(args[i]) != SQLITE_TEXT) {
            vtab_error(&v->base, bert_errorf("bert_answer_each: the %s must be TEXT", i ? "context" : "question"));
            return SQLITE_ERROR;
        }
    }
    int top_k;
    char *err = NULL;
    if (bert_glue_top_k(args[2], args[3] == NULL, "bert_answer_each", "question, context", &top_k, &err) != 0) {
        vtab_error(&v->base, err);
        return SQLITE_ERROR;
    }
    bert_entry *e = bert_glue_find_model(v->conn, args[3], &err);
    if (!e) { vtab_error(&v->base, err); return SQLITE_ERROR; }
    const char *question = (const char *)sqlite3_value_text(args[0]);
    size_t qlen = (size_t)sqlite3_value_bytes(args[0]);
    const char *context = (const char *)sqlite3_value_text(args[1]);
    size_t clen = (size_t)sqlite3_value_bytes(args[1]);
    if (!question || !context) return SQLITE_NOMEM;
    c->context = bert_strndup(context, clen);
    if (!c->context) return SQLITE_NOMEM;
    if (bert_pipeline_answer(e, question, qlen, c->context, clen, top_k, &c->result, bert_glue_interrupt_fn(), v->db,
                        &err) != 0) {
        vtab_error(&v->base, err);
        return SQLITE_ERROR;
    }
    c->base.count = (sqlite3_int64)c->result.n;
    return SQLITE_OK;
}

static int answer_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    answer_cursor *c = (answer_cursor *)cur;
    const qa_answer *a = &c->result.items[c->base.row];
    switch (col) {
    case A_RANK: sqlite3_result_int64(ctx, c->base.row + 1); break;
    case A_ANSWER:
        sqlite3_result_text(ctx, c->context + a->byte_start, (int)(a->byte_end - a->byte_start), SQLITE_TRANSIENT);
        break;
    case A_SCORE: sqlite3_result_double(ctx, a->score); break;
    case A_START: sqlite3_result_int64(ctx, a->start); break;
    case A_END: sqlite3_result_int64(ctx, a->end); break;
    default: break;
    }
    return SQLITE_OK;
}

static sqlite3_module answer_module = {
    .xConnect = table_connect, .xBestIndex = table_best_index, .xDisconnect = table_disconnect,
    .xOpen = table_open, .xClose = answer_close, .xFilter = answer_filter, .xNext = table_next,
    .xEof = table_eof, .xColumn = answer_column, .xRowid = table_rowid,
};


/* ---- bert_tokenize_offsets ------------------------------------------------------ */

enum { O_INDEX, O_TOKEN, O_ID, O_START, O_END, O_WORD, O_INPUT, O_MODEL };

typedef struct {
    table_cursor base;
    bert_ids ids;
    bert_spans spans;
    /* Token texts copied when the scan starts: a function in the same query
     * may unload the model (and its vocabulary) before a row is read. */
    char *names;
    size_t *name_at;
} offsets_cursor;

static void offsets_reset(offsets_cursor *c)
{
    bert_ids_free(&c->ids);
    bert_spans_free(&c->spans);
    free(c->names);
    free(c->name_at);
    c->names = NULL;
    c->name_at = NULL;
    c->base.row = c->base.count = 0;
}

static int offsets_close(sqlite3_vtab_cursor *cur)
{
    offsets_reset((offsets_cursor *)cur);
    return cursor_close(cur);
}

/* The TEXT argument of a table function; 1 with *text NULL for NULL (no
 * rows), 0 with the text, -1 after setting the error. */
static int text_argument(glue_vtab *v, sqlite3_value *arg, const char *fn, const char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    int t = sqlite3_value_type(arg);
    if (t == SQLITE_NULL) return 1;
    if (t != SQLITE_TEXT) {
        vtab_error(&v->base, bert_errorf("%s: the text must be TEXT; cast it with CAST(x AS TEXT)", fn));
        return -1;
    }
    *text = (const char *)sqlite3_value_text(arg);
    *len = (size_t)sqlite3_value_bytes(arg);
    if (!*text) { vtab_error(&v->base, NULL); return -1; }
    return 0;
}

static int offsets_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc, sqlite3_value **argv)
{
    (void)idx_str; (void)argc;
    offsets_cursor *c = (offsets_cursor *)cur;
    glue_vtab *v = (glue_vtab *)cur->pVtab;
    offsets_reset(c);
    sqlite3_value *args[2];
    unpack_arguments(idx, 2, argv, args);
    const char *text;
    size_t len;
    int got = text_argument(v, args[0], "bert_tokenize_offsets", &text, &len);
    if (got != 0) return got > 0 ? SQLITE_OK : SQLITE_ERROR;
    char *err = NULL;
    bert_entry *e = bert_glue_find_model(v->conn, args[1], &err);
    if (!e || bert_tokenize_offsets(e, text, len, &c->ids, &c->spans, &err) != 0) {
        vtab_error(&v->base, err);
        return SQLITE_ERROR;
    }
    const bert_tokenizer *tok = bert_entry_tokenizer(e);
    size_t bytes = 0;
    for (size_t i = 0; i < c->ids.len; i++) bytes += strlen(bert_tokenizer_token(tok, c->ids.ids[i])) + 1;
    c->names = malloc(bytes ? bytes : 1);
    c->name_at = malloc((c->ids.len + 1) * sizeof *c->name_at);
    if (!c->names || !c->name_at) { vtab_error(&v->base, NULL); return SQLITE_NOMEM; }
    for (size_t i = 0, at = 0; i < c->ids.len; i++) {
        const char *name = bert_tokenizer_token(tok, c->ids.ids[i]);
        size_t n = strlen(name) + 1;
        memcpy(c->names + at, name, n);
        c->name_at[i] = at;
        at += n;
    }
    c->base.count = (sqlite3_int64)c->ids.len;
    return SQLITE_OK;
}

static int offsets_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    const offsets_cursor *c = (const offsets_cursor *)cur;
    const bert_token_span *s = &c->spans.at[c->base.row];
    switch (col) {
    case O_INDEX: sqlite3_result_int64(ctx, c->base.row); break;
    case O_TOKEN: sqlite3_result_text(ctx, c->names + c->name_at[c->base.row], -1, SQLITE_TRANSIENT); break;
    case O_ID: sqlite3_result_int(ctx, c->ids.ids[c->base.row]); break;
    case O_START: sqlite3_result_int64(ctx, s->start); break;
    case O_END: sqlite3_result_int64(ctx, s->end); break;
    case O_WORD: if (s->word >= 0) sqlite3_result_int64(ctx, s->word); break;   /* NULL for [CLS]/[SEP] */
    default: break;
    }
    return SQLITE_OK;
}

static sqlite3_module offsets_module = {
    .xConnect = table_connect, .xBestIndex = table_best_index, .xDisconnect = table_disconnect,
    .xOpen = table_open, .xClose = offsets_close, .xFilter = offsets_filter, .xNext = table_next,
    .xEof = table_eof, .xColumn = offsets_column, .xRowid = table_rowid,
};

/* ---- bert_chunks ---------------------------------------------------------------- */

enum { C_CHUNK_INDEX, C_TEXT, C_START, C_END, C_TOKENS, C_INPUT, C_MAX_TOKENS, C_OVERLAP, C_MODEL };

typedef struct {
    table_cursor base;
    char *text;              /* a copy: the argument's value does not outlive xFilter */
    size_t len;
    bert_spans spans;        /* every piece of the text */
    bert_chunker chunker;
    size_t first, end;       /* the current chunk's pieces */
    int eof;
} chunks_cursor;

static void chunks_reset(chunks_cursor *c)
{
    free(c->text);
    c->text = NULL;
    c->len = 0;
    bert_spans_free(&c->spans);
    memset(&c->chunker, 0, sizeof c->chunker);
    c->base.row = c->base.count = 0;
    c->eof = 1;
}

static int chunks_close(sqlite3_vtab_cursor *cur)
{
    chunks_reset((chunks_cursor *)cur);
    return cursor_close(cur);
}

/* An INTEGER argument, or `fallback` when absent or NULL.  0, or -1 when it
 * has another type. */
static int integer_argument(sqlite3_value *arg, sqlite3_int64 fallback, sqlite3_int64 *out)
{
    *out = fallback;
    if (!arg || sqlite3_value_type(arg) == SQLITE_NULL) return 0;
    if (sqlite3_value_type(arg) != SQLITE_INTEGER) return -1;
    *out = sqlite3_value_int64(arg);
    return 0;
}

static int chunks_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc, sqlite3_value **argv)
{
    (void)idx_str; (void)argc;
    chunks_cursor *c = (chunks_cursor *)cur;
    glue_vtab *v = (glue_vtab *)cur->pVtab;
    chunks_reset(c);
    sqlite3_value *args[4];
    unpack_arguments(idx, 4, argv, args);
    const char *text;
    size_t len;
    int got = text_argument(v, args[0], "bert_chunks", &text, &len);
    if (got < 0) return SQLITE_ERROR;
    sqlite3_int64 max_tokens, overlap;
    if (integer_argument(args[1], -1, &max_tokens) != 0) {
        /* bert_chunks(text, 'name') puts the model where max_tokens goes. */
        if (sqlite3_value_type(args[1]) == SQLITE_TEXT && !args[2] && !args[3])
            vtab_error(&v->base, bert_errorf("bert_chunks: max_tokens must be an INTEGER, not TEXT; the model "
                                             "name goes last: bert_chunks(text, NULL, 0, '%s')",
                                             sqlite3_value_text(args[1])));
        else
            vtab_error(&v->base, bert_errorf("bert_chunks: max_tokens must be a positive INTEGER such as 256, "
                                             "or NULL for the model's max_length - 2"));
        return SQLITE_ERROR;
    }
    if (args[1] && sqlite3_value_type(args[1]) != SQLITE_NULL && max_tokens < 1) {
        vtab_error(&v->base, bert_errorf("bert_chunks: max_tokens is %lld; give a positive INTEGER such as 256, "
                                         "or NULL for the model's max_length - 2", (long long)max_tokens));
        return SQLITE_ERROR;
    }
    if (integer_argument(args[2], 0, &overlap) != 0) {
        if (sqlite3_value_type(args[2]) == SQLITE_TEXT && !args[3])
            vtab_error(&v->base, bert_errorf("bert_chunks: overlap must be an INTEGER, not TEXT; the model "
                                             "name goes last: bert_chunks(text, max_tokens, 0, '%s')",
                                             sqlite3_value_text(args[2])));
        else
            vtab_error(&v->base, bert_errorf("bert_chunks: overlap must be an INTEGER from 0 to max_tokens - 1, "
                                             "such as 32"));
        return SQLITE_ERROR;
    }
    char *err = NULL;
    bert_entry *e = bert_glue_find_model(v->conn, args[3], &err);
    if (!e || bert_entry_need_tokenizer(e, &err) != 0) {
        vtab_error(&v->base, err);
        return SQLITE_ERROR;
    }
    sqlite3_int64 most = bert_chunks_max_tokens(e);
    if (most < 1) {
        vtab_error(&v->base, bert_errorf("bert_chunks: model '%s' has max_length %lld, too short for a chunk; "
                                         "register it with a larger max_length", bert_entry_name(e), most + 2));
        return SQLITE_ERROR;
    }
    if (max_tokens < 0) max_tokens = most;
    if (max_tokens > most) {
        vtab_error(&v->base, bert_errorf("bert_chunks: max_tokens %lld is more than model '%s' reads at once "
                                         "(max_length %lld - 2 for [CLS] and [SEP] = %lld); give at most %lld",
                                         (long long)max_tokens, bert_entry_name(e), most + 2, most, most));
        return SQLITE_ERROR;
    }
    if (overlap < 0 || overlap >= max_tokens) {
        vtab_error(&v->base, bert_errorf("bert_chunks: overlap %lld must be from 0 to max_tokens - 1 (%lld); "
                                         "give a smaller overlap or a larger max_tokens",
                                         (long long)overlap, (long long)max_tokens - 1));
        return SQLITE_ERROR;
    }
    if (got > 0) return SQLITE_OK;   /* NULL text: no rows */
    c->text = malloc(len ? len : 1);
    if (!c->text) { vtab_error(&v->base, NULL); return SQLITE_NOMEM; }
    memcpy(c->text, text, len);
    c->len = len;
    if (bert_chunks_tokenize(e, c->text, c->len, &c->spans, &err) != 0) {
        vtab_error(&v->base, err);
        return SQLITE_ERROR;
    }
    bert_chunker_init(&c->chunker, c->spans.at, c->spans.len, (size_t)max_tokens, (size_t)overlap);
    c->eof = !bert_chunker_next(&c->chunker, &c->first, &c->end);
    return SQLITE_OK;
}

static int chunks_next(sqlite3_vtab_cursor *cur)
{
    chunks_cursor *c = (chunks_cursor *)cur;
    c->base.row++;
    c->eof = !bert_chunker_next(&c->chunker, &c->first, &c->end);
    return SQLITE_OK;
}

static int chunks_eof(sqlite3_vtab_cursor *cur)
{
    return ((chunks_cursor *)cur)->eof;
}

static int chunks_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    const chunks_cursor *c = (const chunks_cursor *)cur;
    const bert_token_span *first = &c->spans.at[c->first], *last = &c->spans.at[c->end - 1];
    switch (col) {
    case C_CHUNK_INDEX: sqlite3_result_int64(ctx, c->base.row); break;
    case C_TEXT: {
        int64_t from = first->byte_start, to = last->byte_end;
        bert_text_char_bytes(c->text, c->len, &from, &to);
        sqlite3_result_text64(ctx, c->text + from, (sqlite3_uint64)(to - from), SQLITE_TRANSIENT, SQLITE_UTF8);
        break;
    }
    case C_START: sqlite3_result_int64(ctx, first->start); break;
    case C_END: sqlite3_result_int64(ctx, last->end); break;
    case C_TOKENS: sqlite3_result_int64(ctx, (sqlite3_int64)(c->end - c->first)); break;
    default: break;
    }
    return SQLITE_OK;
}

static sqlite3_module chunks_module = {
    .xConnect = table_connect, .xBestIndex = table_best_index, .xDisconnect = table_disconnect,
    .xOpen = table_open, .xClose = chunks_close, .xFilter = chunks_filter, .xNext = chunks_next,
    .xEof = chunks_eof, .xColumn = chunks_column, .xRowid = table_rowid,
};

/* ---- the tables ------------------------------------------------------------ */

static const table_spec tables[] = {
    {"bert_models",
     "CREATE TABLE x(name TEXT, path TEXT, loaded INTEGER, hidden_size INTEGER, num_layers INTEGER, "
      "num_heads INTEGER, vocab_size INTEGER, max_length INTEGER, pooling TEXT, normalize INTEGER, "
      "has_mlm_head INTEGER, has_nsp_head INTEGER, dtype TEXT, refs INTEGER, encoder_calls INTEGER, "
      "task TEXT, labels TEXT, precision TEXT, family TEXT)",
     0, 0, 0, sizeof(models_cursor), &models_module},
    {"bert_fill_mask_each",
     "CREATE TABLE x(mask_index INTEGER, rank INTEGER, token INTEGER, token_str TEXT, score REAL, "
      "sequence TEXT, text HIDDEN, top_k HIDDEN, model HIDDEN)",
     F_TEXT, 3, 1, sizeof(fill_cursor), &fill_module},
    {"bert_embed_each",
     "CREATE TABLE x(key, value TEXT, embedding BLOB, input HIDDEN, model HIDDEN)",
     E_INPUT, 2, 1, sizeof(embed_cursor), &embed_module},
    {"bert_rerank_each",
     "CREATE TABLE x(key, value TEXT, score REAL, query HIDDEN, input HIDDEN, model HIDDEN)",
     R_QUERY, 3, 2, sizeof(rerank_cursor), &rerank_module},
    {"bert_ner_each",
     "CREATE TABLE x(entity TEXT, score REAL, word TEXT, start INTEGER, \"end\" INTEGER, \"index\" INTEGER, "
      "text HIDDEN, model HIDDEN)",
     N_TEXT, 2, 1, sizeof(ner_cursor), &ner_module},
    {"bert_answer_each",
     "CREATE TABLE x(rank INTEGER, answer TEXT, score REAL, start INTEGER, \"end\" INTEGER, "
      "question HIDDEN, context HIDDEN, top_k HIDDEN, model HIDDEN)",
     A_QUESTION, 4, 2, sizeof(answer_cursor), &answer_module},
    {"bert_tokenize_offsets",
     "CREATE TABLE x(\"index\" INTEGER, token TEXT, id INTEGER, start INTEGER, \"end\" INTEGER, word INTEGER, "
      "input HIDDEN, model HIDDEN)",
     O_INPUT, 2, 1, sizeof(offsets_cursor), &offsets_module},
    {"bert_chunks",
     "CREATE TABLE x(chunk_index INTEGER, text TEXT, start INTEGER, \"end\" INTEGER, tokens INTEGER, "
      "input HIDDEN, max_tokens HIDDEN, overlap HIDDEN, model HIDDEN)",
     C_INPUT, 4, 1, sizeof(chunks_cursor), &chunks_module},
};

static const table_spec *table_spec_named(const char *module_name)
{
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        if (strcmp(tables[i].name, module_name) == 0) return &tables[i];
    return NULL;
}

int bert_glue_register_vtabs(sqlite3 *db, bert_connection *c)
{
    int rc = SQLITE_OK;
    for (size_t i = 0; rc == SQLITE_OK && i < sizeof tables / sizeof tables[0]; i++)
        rc = sqlite3_create_module_v2(db, tables[i].name, tables[i].module, bert_connection_retain(c),
                                      bert_connection_release);
    return rc;
}
