/*
 * tables.c - the table-valued parts of the SQL surface:
 *
 *   SELECT * FROM bert_models;                          -- this connection's models
 *   SELECT * FROM bert_functions;                       -- every function's signature
 *   SELECT * FROM bert_fill_mask_each(text [, top_k [, model]]);
 *   SELECT * FROM bert_embed_each(json [, model]);      -- batched embedding
 *   SELECT * FROM bert_rerank_each(query, json [, model]); -- batched cross-encoder
 *   SELECT * FROM bert_ner_each(text [, model]);        -- named entities
 *   SELECT * FROM bert_answer_each(question, context [, top_k [, model]]);
 *   SELECT * FROM bert_tokenize_offsets(text [, model]); -- pieces with character offsets
 *   SELECT * FROM bert_chunks(text [, max_tokens [, overlap [, model]]]);
 *   SELECT * FROM bert_attention(text [, options_json]);     -- the model's own view:
 *   SELECT * FROM bert_hidden_states(text [, options_json]); -- its attention and layers
 *   SELECT * FROM bert_sparse_terms(text [, options_json]); -- learned sparse vector
 *   SELECT * FROM bert_zero_shot_each(text, labels_json [, options_json]); -- zero-shot labels
 *
 * All of them are eponymous virtual tables in the style of SQLite's
 * ext/misc/series.c: hidden columns carry the arguments.  Their counts come
 * from signatures.c, as the scalar functions' do.
 */
#include "connection.h"
#include "register.h"

#include "../base/buffer.h"
#include "../tasks/chunks.h"
#include "../base/error.h"
#include "../base/json.h"
#include "../tasks/pipeline.h"
#include "../tasks/model_view.h"
#include "../tasks/vectors.h"
#include "call_options.h"
#include "signatures.h"
#include "sparse_glue.h"
#include "zero_shot_glue.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* Texts embedded per step of a bert_embed_each cursor: the granularity at
 * which sqlite3_interrupt() stops a long batch. */
#define EMBED_CHUNK 256

/* Hidden columns declared past a table's last argument: an argument given
 * there is one too many, and the error can say so with the signature
 * (SQLite's own "too many arguments" names no argument). */
#define SPARE_ARGS 4

/* What the table functions' boilerplate differs in: their columns, where
 * their argument columns start, the size of their cursors and, for the
 * batched ones, what a batch computes.  One table at the end of the file
 * lists them all; their argument counts are their signatures'. */
/* The first member of every cursor: the row it is on and, where the rows
 * are known when the scan starts, how many there are. */
typedef struct {
    sqlite3_vtab_cursor sqlite;
    sqlite3_int64 row, count;
} table_cursor;

typedef struct glue_vtab glue_vtab;

typedef struct {
    const char *name;
    const char *columns;     /* the declared columns, arguments (HIDDEN) last */
    int first_arg;
    size_t cursor_size;
    /* Frees what a scan holds; the cursor past its table_cursor is then
     * zeroed.  NULL when a scan holds nothing. */
    void (*clear)(table_cursor *c);
    /* Starts a scan: args[i] is argument i, NULL when not given. */
    int (*filter)(glue_vtab *v, table_cursor *c, sqlite3_value **args);
    int (*column)(table_cursor *c, sqlite3_context *ctx, int col);
    /* NULL for a table whose rows are counted when the scan starts. */
    int (*next)(table_cursor *c);
    int (*eof)(const table_cursor *c);
    const void *batch;       /* the batch_kind of a batched table, else NULL */
} table_spec;

struct glue_vtab {
    sqlite3_vtab base;
    bert_connection *conn;
    sqlite3 *db;            /* what the interrupt poll asks */
    const table_spec *spec;
    const bert_signature *sig;
};

static const table_spec *table_spec_named(const char *module_name);

/* argv[0] of xConnect is the module's name: it finds the table's spec. */
static int table_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                         char **err)
{
    (void)err;
    const table_spec *spec = argc > 0 ? table_spec_named(argv[0]) : NULL;
    const bert_signature *sig = spec ? bert_signature_find(spec->name) : NULL;
    if (!sig) return SQLITE_ERROR;
    char *schema = sqlite3_mprintf("CREATE TABLE x(%s%s)", spec->columns,
                                   sig->max_args ? ", spare1 HIDDEN, spare2 HIDDEN, spare3 HIDDEN, spare4 HIDDEN" : "");
    if (!schema) return SQLITE_NOMEM;
    int rc = sqlite3_declare_vtab(db, schema);
    sqlite3_free(schema);
    if (rc != SQLITE_OK) return rc;
    glue_vtab *v = sqlite3_malloc(sizeof *v);
    if (!v) return SQLITE_NOMEM;
    memset(v, 0, sizeof *v);
    v->conn = aux;
    v->db = db;
    v->spec = spec;
    v->sig = sig;
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

/* Plans a call of the table `v`: each usable equality constraint on an
 * argument column becomes argv[i] of xFilter, in column order.  A call
 * with too few or too many arguments is an error that gives the signature;
 * an argument that is not usable yet (it comes from another table of a
 * join) makes this plan impossible, and SQLite tries another. */
static int plan_arguments(glue_vtab *v, sqlite3_index_info *info)
{
    const int first_arg = v->spec->first_arg, n_args = v->sig->max_args;
    info->estimatedCost = 100;
    if (n_args == 0) return SQLITE_OK;   /* a plain table: its columns are no arguments */
    int where[8 + SPARE_ARGS];
    /* Every signature has at most 8 arguments (signatures.c), and the
     * argument mask below needs a bit for each. */
    assert(n_args + SPARE_ARGS <= (int)(sizeof where / sizeof *where));
    int given = 0, on_columns = 0;
    for (int i = 0; i < n_args + SPARE_ARGS; i++) where[i] = -1;
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        int col = c->iColumn - first_arg;
        if (col < 0) on_columns = 1;
        if (col < 0 || col >= n_args + SPARE_ARGS || c->op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
        if (col + 1 > given) given = col + 1;
        if (c->usable) where[col] = i;
    }
    /* SQLite plans each term of an OR on the result's columns on its own,
     * with that term's constraints only: such a plan lacks the arguments
     * without the call lacking them, so it is merely unusable. */
    if (given == 0 && on_columns && v->sig->min_args > 0) {
        info->estimatedCost = 1e30;
        return SQLITE_CONSTRAINT;
    }
    if (given > n_args || given < v->sig->min_args) {
        sqlite3_free(v->base.zErrMsg);
        char *msg = bert_signature_count_error(v->sig, given);
        v->base.zErrMsg = sqlite3_mprintf("%s", msg ? msg : "out of memory");
        free(msg);
        return SQLITE_ERROR;
    }
    int mask = 0, argc = 0;
    for (int i = 0; i < n_args; i++) {
        if (where[i] < 0) continue;
        info->aConstraintUsage[where[i]].argvIndex = ++argc;
        info->aConstraintUsage[where[i]].omit = 1;
        mask |= 1 << i;
    }
    for (int i = 0; i < v->sig->min_args; i++) {
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
    return plan_arguments((glue_vtab *)v, info);
}

/* Text argument i of the table's call: 0 with the text, 1 for NULL (no
 * rows), -1 after setting the error (bert_glue_text's rule). */
static int table_text(glue_vtab *v, sqlite3_value *arg, int i, const char **text, size_t *len)
{
    char *err = NULL;
    int got = bert_glue_text(arg, v->spec->name, i, text, len, &err);
    if (got < 0) vtab_error(&v->base, err);
    return got;
}

/* The model that argument i names (absent or NULL: the default), or NULL
 * after setting the error. */
static bert_entry *table_model(glue_vtab *v, sqlite3_value *arg, int i)
{
    char *err = NULL;
    bert_entry *e = bert_glue_find_model(v->conn, arg, v->spec->name, i, &err);
    if (!e) vtab_error(&v->base, err);
    return e;
}

/* What a table(text [, model]) computes from its text and model: its rows,
 * into the cursor.  0, or -1 with *err (NULL: out of memory). */
typedef int (*text_rows_fn)(table_cursor *c, bert_entry *e, const char *text, size_t len, sqlite3 *db, char **err);

/* xFilter of a table(text [, model]): a NULL text gives no rows. */
static int text_filter(glue_vtab *v, table_cursor *c, sqlite3_value **args, text_rows_fn rows)
{
    const char *text;
    size_t len;
    int got = table_text(v, args[0], 0, &text, &len);
    if (got != 0) return got > 0 ? SQLITE_OK : SQLITE_ERROR;
    bert_entry *e = table_model(v, args[1], 1);
    if (!e) return SQLITE_ERROR;
    char *err = NULL;
    if (rows(c, e, text, len, v->db, &err) != 0) {
        vtab_error(&v->base, err);
        return SQLITE_ERROR;
    }
    return SQLITE_OK;
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

/* Frees what the cursor's scan holds and leaves it as table_open made it. */
static void table_clear(sqlite3_vtab_cursor *cur)
{
    const table_spec *spec = ((glue_vtab *)cur->pVtab)->spec;
    table_cursor *c = (table_cursor *)cur;
    if (spec->clear) spec->clear(c);
    memset((char *)c + sizeof *c, 0, spec->cursor_size - sizeof *c);
    c->row = c->count = 0;
}

static int table_close(sqlite3_vtab_cursor *cur)
{
    table_clear(cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

static int table_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc, sqlite3_value **argv)
{
    (void)idx_str; (void)argc;
    glue_vtab *v = (glue_vtab *)cur->pVtab;
    table_clear(cur);
    sqlite3_value *args[8];
    unpack_arguments(idx, v->sig->max_args, argv, args);
    return v->spec->filter(v, (table_cursor *)cur, args);
}

static int table_next(sqlite3_vtab_cursor *cur)
{
    const table_spec *spec = ((glue_vtab *)cur->pVtab)->spec;
    table_cursor *c = (table_cursor *)cur;
    if (spec->next) return spec->next(c);
    c->row++;
    return SQLITE_OK;
}

static int table_eof(sqlite3_vtab_cursor *cur)
{
    const table_spec *spec = ((glue_vtab *)cur->pVtab)->spec;
    const table_cursor *c = (const table_cursor *)cur;
    return spec->eof ? spec->eof(c) : c->row >= c->count;
}

static int table_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    return ((glue_vtab *)cur->pVtab)->spec->column((table_cursor *)cur, ctx, col);
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
    bert_entry_info info;        /* name, path and labels: the copies below */
    char *name, *path;
    char *labels;                /* JSON array, or NULL */
} model_row;

typedef struct {
    table_cursor base;
    model_row *rows;
    size_t cap;
} models_cursor;

static void models_clear(table_cursor *cur)
{
    models_cursor *c = (models_cursor *)cur;
    for (sqlite3_int64 i = 0; i < c->base.count; i++) {
        free(c->rows[i].name);
        free(c->rows[i].path);
        sqlite3_free(c->rows[i].labels);
    }
    free(c->rows);
}

/* The labels as a JSON array, or NULL when there are none. */
static int labels_json(const bert_entry_info *info, char **out)
{
    *out = NULL;
    if (!info->labels) return SQLITE_OK;
    sqlite3_str *s = sqlite3_str_new(NULL);
    sqlite3_str_appendchar(s, 1, '[');
    for (int i = 0; i < info->num_labels; i++) {
        if (i) sqlite3_str_appendchar(s, 1, ',');
        bert_glue_json_string(s, info->labels[i]);
    }
    sqlite3_str_appendchar(s, 1, ']');
    int rc = sqlite3_str_errcode(s) == SQLITE_OK ? SQLITE_OK : SQLITE_NOMEM;
    *out = sqlite3_str_finish(s);
    if (rc != SQLITE_OK) { sqlite3_free(*out); *out = NULL; }
    return rc;
}

static int models_filter(glue_vtab *v, table_cursor *cur, sqlite3_value **args)
{
    (void)args;
    models_cursor *c = (models_cursor *)cur;
    const bert_registry *reg = &v->conn->registry;
    bert_entry_info info;
    for (const bert_entry *e = bert_registry_next(reg, NULL, &info); e; e = bert_registry_next(reg, e, &info)) {
        model_row *rows = bert_grow(c->rows, &c->cap, (size_t)c->base.count + 1, sizeof *rows);
        if (!rows) return SQLITE_NOMEM;
        c->rows = rows;
        model_row *r = &c->rows[c->base.count++];
        memset(r, 0, sizeof *r);
        r->info = info;
        r->name = bert_strdup(info.name);
        r->path = bert_strdup(info.path);
        /* models_clear frees what was copied */
        if (!r->name || !r->path || labels_json(&info, &r->labels) != SQLITE_OK) return SQLITE_NOMEM;
    }
    return SQLITE_OK;
}

static int models_column(table_cursor *cur, sqlite3_context *ctx, int col)
{
    const models_cursor *c = (const models_cursor *)cur;
    const model_row *r = &c->rows[cur->row];
    switch (col) {
    case M_NAME: sqlite3_result_text(ctx, r->name, -1, SQLITE_TRANSIENT); break;
    case M_PATH: sqlite3_result_text(ctx, r->path, -1, SQLITE_TRANSIENT); break;
    case M_LOADED: sqlite3_result_int(ctx, r->info.loaded); break;
    case M_HIDDEN: sqlite3_result_int(ctx, r->info.hidden_size); break;
    case M_LAYERS: sqlite3_result_int(ctx, r->info.num_layers); break;
    case M_HEADS: sqlite3_result_int(ctx, r->info.num_heads); break;
    case M_VOCAB: sqlite3_result_int(ctx, r->info.vocab_size); break;
    case M_MAX_LENGTH: sqlite3_result_int(ctx, r->info.max_length); break;
    case M_POOLING: sqlite3_result_text(ctx, r->info.pooling, -1, SQLITE_STATIC); break;
    case M_NORMALIZE: sqlite3_result_int(ctx, r->info.normalize); break;
    /* What the weights hold is known once they are loaded; NULL before. */
    case M_HAS_MLM: if (r->info.has_mlm >= 0) sqlite3_result_int(ctx, r->info.has_mlm); break;
    case M_HAS_NSP: if (r->info.has_nsp >= 0) sqlite3_result_int(ctx, r->info.has_nsp); break;
    case M_DTYPE: if (r->info.dtype) sqlite3_result_text(ctx, r->info.dtype, -1, SQLITE_STATIC); break;
    case M_REFS: sqlite3_result_int(ctx, r->info.refs); break;
    case M_ENCODER_CALLS: sqlite3_result_int64(ctx, r->info.encoder_calls); break;
    case M_TASK: if (r->info.task) sqlite3_result_text(ctx, r->info.task, -1, SQLITE_STATIC); break;
    case M_LABELS:
        if (r->labels) {
            sqlite3_result_text(ctx, r->labels, -1, SQLITE_TRANSIENT);
            sqlite3_result_subtype(ctx, BERT_SUBTYPE_JSON);
        }
        break;
    case M_PRECISION: sqlite3_result_text(ctx, r->info.precision, -1, SQLITE_STATIC); break;
    case M_FAMILY: sqlite3_result_text(ctx, r->info.family, -1, SQLITE_STATIC); break;
    default: break;
    }
    return SQLITE_OK;
}


/* ---- bert_functions --------------------------------------------------------- */

enum { FN_NAME, FN_ARGUMENTS, FN_RETURNS, FN_SUMMARY };

static int functions_filter(glue_vtab *v, table_cursor *c, sqlite3_value **args)
{
    (void)v; (void)args;
    c->count = (sqlite3_int64)bert_signature_count;
    return SQLITE_OK;
}

static int functions_column(table_cursor *c, sqlite3_context *ctx, int col)
{
    const bert_signature *f = &bert_signatures[c->row];
    const char *text = col == FN_NAME ? f->name : col == FN_ARGUMENTS ? f->arguments
                     : col == FN_RETURNS ? f->returns : col == FN_SUMMARY ? f->summary : NULL;
    if (text) sqlite3_result_text(ctx, text, -1, SQLITE_STATIC);
    return SQLITE_OK;
}


/* ---- bert_fill_mask_each ------------------------------------------------------- */

enum { F_MASK_INDEX, F_RANK, F_TOKEN, F_TOKEN_STR, F_SCORE, F_SEQUENCE, F_TEXT, F_TOP_K, F_MODEL };

/* The cursor of bert_fill_mask_each, bert_ner_each and bert_answer_each:
 * a pipeline's whole result, computed when the scan starts; its items are
 * the rows.  Each table uses its own member. */
typedef struct {
    table_cursor base;
    fill_mask_result fill;
    ner_entities entities;
    qa_answers answers;
    char *context;       /* a copy: the answers are its substrings */
} result_cursor;

static void result_clear(table_cursor *cur)
{
    result_cursor *c = (result_cursor *)cur;
    bert_fill_mask_result_free(&c->fill);
    bert_ner_entities_free(&c->entities);
    bert_qa_answers_free(&c->answers);
    free(c->context);
}

static int fill_filter(glue_vtab *v, table_cursor *cur, sqlite3_value **args)
{
    result_cursor *c = (result_cursor *)cur;
    const char *text;
    size_t len;
    int got = table_text(v, args[0], 0, &text, &len);
    if (got != 0) return got > 0 ? SQLITE_OK : SQLITE_ERROR;   /* NULL text: no rows */
    int top_k;
    char *err = NULL;
    if (bert_glue_top_k(args[1], 0, "bert_fill_mask_each", "text", &top_k, &err) != 0) {
        vtab_error(&v->base, err);
        return SQLITE_ERROR;
    }
    bert_entry *e = table_model(v, args[2], 2);
    if (!e) return SQLITE_ERROR;
    if (bert_pipeline_fill_mask(e, text, len, top_k, &c->fill, bert_glue_interrupt_fn(), v->db, &err) != 0) {
        vtab_error(&v->base, err);
        return SQLITE_ERROR;
    }
    c->base.count = (sqlite3_int64)c->fill.n_masks * c->fill.top_k;
    return SQLITE_OK;
}

static int fill_column(table_cursor *cur, sqlite3_context *ctx, int col)
{
    const fill_mask_candidate *k = &((result_cursor *)cur)->fill.items[cur->row];
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


/* ---- bert_embed_each and bert_rerank_each ------------------------------------ */

/* Both read a JSON array or object of texts and compute their rows in
 * chunks of EMBED_CHUNK texts, one packed batch each, so that a long input
 * stops between chunks when the statement is interrupted.  They differ in
 * what a chunk computes and what the third column shows: a batch_kind. */
enum { B_KEY, B_VALUE, B_RESULT };

typedef struct batch_cursor batch_cursor;

typedef struct {
    int has_query;           /* a query argument comes before the texts */
    /* Bytes of one row's result on model e. */
    size_t (*row_bytes)(const bert_entry *e);
    /* Computes n rows of results into out. 0, or -1 with *err. */
    int (*run)(const batch_cursor *c, bert_entry *e, const char *const *texts, const size_t *lens, int n,
               void *out, char **err);
    void (*result)(sqlite3_context *ctx, const void *row, size_t bytes);
    int dimensions;          /* takes an options object with "dimensions" as its last argument */
} batch_kind;

struct batch_cursor {
    table_cursor base;
    json_doc *doc;
    int *items;              /* node index of each text, in input order */
    /* The model is looked up by name for every chunk: a function in the same
     * query may unload it (or register another under its name) between two. */
    char *model;
    unsigned long serial;    /* the registration the scan started with */
    char *query;             /* a copy: the argument's text may not outlive xFilter */
    size_t query_len;
    size_t row_bytes;        /* of one row as run computes it */
    int dimensions;          /* the "dimensions" option; 0 when not given */
    size_t out_bytes;        /* of one row as the column shows it: row_bytes, or shortened */
    unsigned char *results;  /* EMBED_CHUNK rows, of rows chunk_start.. */
    sqlite3_int64 chunk_start;
    int chunk_len;
};

static void batch_clear(table_cursor *cur)
{
    batch_cursor *c = (batch_cursor *)cur;
    bert_json_free(c->doc);
    free(c->items);
    free(c->results);
    free(c->model);
    free(c->query);
}

/* Computes the chunk of rows that starts at the cursor's row. */
static int batch_chunk(batch_cursor *c)
{
    glue_vtab *v = (glue_vtab *)c->base.sqlite.pVtab;
    const batch_kind *kind = v->spec->batch;
    int n = c->base.count - c->base.row < EMBED_CHUNK ? (int)(c->base.count - c->base.row) : EMBED_CHUNK;
    const char *texts[EMBED_CHUNK];
    size_t lens[EMBED_CHUNK];
    for (int i = 0; i < n; i++) {
        texts[i] = c->doc->nodes[c->items[c->base.row + i]].text;
        lens[i] = strlen(texts[i]);
    }
    char *err = NULL;
    bert_entry *e = bert_registry_find(&v->conn->registry, c->model, &err);
    if (!e || bert_entry_serial(e) != c->serial) {
        free(err);
        vtab_error(&v->base, bert_errorf("%s: model '%s' was unloaded or replaced while the query was "
                                         "reading it", v->spec->name, c->model));
        return SQLITE_ERROR;
    }
    if (kind->run(c, e, texts, lens, n, c->results, &err) != 0) {
        vtab_error(&v->base, err);
        return SQLITE_ERROR;
    }
    for (int i = 0; c->dimensions && i < n; i++) {
        /* Shortened rows packed in place, front to back: row i never
         * overwrites a row after it. */
        float *row = (float *)(void *)(c->results + (size_t)i * c->row_bytes);
        bert_embedding_shorten(e, row, c->dimensions);
        memmove(c->results + (size_t)i * c->out_bytes, row, c->out_bytes);
    }
    c->chunk_start = c->base.row;
    c->chunk_len = n;
    return SQLITE_OK;
}

/* Reads the JSON array (key = index) or object (key = its key) of texts a
 * batched table function takes as argument `arg` (TEXT: bert_glue_text);
 * JSON nulls give no row.  *items lists the text nodes in input order. */
static int read_items(glue_vtab *v, const char *fn, int arg, sqlite3_value *input, json_doc **doc, int **items,
                      sqlite3_int64 *count)
{
    const char *json;
    size_t len;
    char *err = NULL;
    int got = bert_glue_text(input, fn, arg, &json, &len, &err);
    if (got != 0) {
        vtab_error(&v->base, err);
        return SQLITE_ERROR;
    }
    if (bert_json_parse(json, len, doc, &err) != 0 ||
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

static int batch_filter(glue_vtab *v, table_cursor *cur, sqlite3_value **args)
{
    batch_cursor *c = (batch_cursor *)cur;
    const batch_kind *kind = v->spec->batch;
    const int input = kind->has_query;   /* the argument with the texts; the model follows */
    if (kind->has_query) {
        const char *query;
        int got = table_text(v, args[0], 0, &query, &c->query_len);
        if (got != 0) return got > 0 ? SQLITE_OK : SQLITE_ERROR;   /* NULL in gives nothing out */
        if (!(c->query = bert_strndup(query, c->query_len))) return SQLITE_NOMEM;
    }
    if (sqlite3_value_type(args[input]) == SQLITE_NULL) return SQLITE_OK;
    int rc = read_items(v, v->spec->name, input, args[input], &c->doc, &c->items, &c->base.count);
    if (rc != SQLITE_OK) return rc;
    bert_call_options opts = {0};
    char *err = NULL;
    if (kind->dimensions) {
        if (bert_glue_call_options(v->conn, args[input + 1], v->spec->name, input + 1, BERT_OPTION_DIMENSIONS,
                                   &opts, &err) != 0) {
            vtab_error(&v->base, err);
            return SQLITE_ERROR;
        }
    } else if (!(opts.model = table_model(v, args[input + 1], input + 1))) {
        return SQLITE_ERROR;
    }
    bert_entry *e = opts.model;
    c->serial = bert_entry_serial(e);
    c->row_bytes = kind->row_bytes(e);
    c->dimensions = opts.dimensions;
    c->out_bytes = c->dimensions ? (size_t)c->dimensions * sizeof(float) : c->row_bytes;
    c->model = bert_strdup(bert_entry_name(e));
    c->results = malloc((size_t)EMBED_CHUNK * c->row_bytes);
    if (!c->model || !c->results) return SQLITE_NOMEM;
    return c->base.count > 0 ? batch_chunk(c) : SQLITE_OK;
}

static int batch_next(table_cursor *cur)
{
    batch_cursor *c = (batch_cursor *)cur;
    c->base.row++;
    if (c->base.row < c->base.count && c->base.row >= c->chunk_start + c->chunk_len) return batch_chunk(c);
    return SQLITE_OK;
}

static int batch_column(table_cursor *cur, sqlite3_context *ctx, int col)
{
    batch_cursor *c = (batch_cursor *)cur;
    const json_node *node = &c->doc->nodes[c->items[c->base.row]];
    switch (col) {
    case B_KEY: item_column(node, ctx, 1); break;
    case B_VALUE: item_column(node, ctx, 0); break;
    case B_RESULT: {
        const batch_kind *kind = ((glue_vtab *)cur->sqlite.pVtab)->spec->batch;
        kind->result(ctx, c->results + (size_t)(c->base.row - c->chunk_start) * c->out_bytes, c->out_bytes);
        break;
    }
    default: break;
    }
    return SQLITE_OK;
}


/* bert_embed_each(json [, model]): key, value, embedding. */
static size_t embedding_bytes(const bert_entry *e)
{
    return (size_t)bert_entry_hidden_size(e) * sizeof(float);
}

static int embed_run(const batch_cursor *c, bert_entry *e, const char *const *texts, const size_t *lens, int n,
                     void *out, char **err)
{
    return bert_pipeline_embed_batch(e, texts, lens, n, out, bert_glue_interrupt_fn(),
                                     ((glue_vtab *)c->base.sqlite.pVtab)->db, err);
}

static void embedding_result(sqlite3_context *ctx, const void *row, size_t bytes)
{
    sqlite3_result_blob(ctx, row, (int)bytes, SQLITE_TRANSIENT);
    sqlite3_result_subtype(ctx, BERT_SUBTYPE_FLOAT32);
}

static const batch_kind embed_batch = {0, embedding_bytes, embed_run, embedding_result, 1};

/* bert_rerank_each(query, json [, model]): key, value, score. */
static size_t score_bytes(const bert_entry *e)
{
    (void)e;
    return sizeof(double);
}

static int rerank_run(const batch_cursor *c, bert_entry *e, const char *const *texts, const size_t *lens, int n,
                      void *out, char **err)
{
    return bert_pipeline_rerank_batch(e, c->query, c->query_len, texts, lens, n, out, bert_glue_interrupt_fn(),
                                      ((glue_vtab *)c->base.sqlite.pVtab)->db, err);
}

static void score_result(sqlite3_context *ctx, const void *row, size_t bytes)
{
    double score;
    memcpy(&score, row, bytes);
    sqlite3_result_double(ctx, score);
}

static const batch_kind rerank_batch = {1, score_bytes, rerank_run, score_result, 0};

/* ---- bert_ner_each -------------------------------------------------------------- */

enum { N_ENTITY, N_SCORE, N_WORD, N_START, N_END, N_INDEX, N_TEXT, N_MODEL };

static int ner_rows(table_cursor *cur, bert_entry *e, const char *text, size_t len, sqlite3 *db, char **err)
{
    result_cursor *c = (result_cursor *)cur;
    if (bert_pipeline_ner(e, text, len, &c->entities, bert_glue_interrupt_fn(), db, err) != 0) return -1;
    cur->count = (sqlite3_int64)c->entities.n;
    return 0;
}

static int ner_filter(glue_vtab *v, table_cursor *c, sqlite3_value **args)
{
    return text_filter(v, c, args, ner_rows);
}

static int ner_column(table_cursor *cur, sqlite3_context *ctx, int col)
{
    const ner_entity *x = &((const result_cursor *)cur)->entities.items[cur->row];
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


/* ---- bert_answer_each ---------------------------------------------------------- */

enum { A_RANK, A_ANSWER, A_SCORE, A_START, A_END, A_QUESTION, A_CONTEXT, A_TOP_K, A_MODEL };

static int answer_filter(glue_vtab *v, table_cursor *cur, sqlite3_value **args)
{
    result_cursor *c = (result_cursor *)cur;
    const char *question, *context;
    size_t qlen, clen;
    int got = table_text(v, args[0], 0, &question, &qlen);
    if (got == 0) got = table_text(v, args[1], 1, &context, &clen);
    if (got != 0) return got > 0 ? SQLITE_OK : SQLITE_ERROR;   /* NULL: no rows */
    int top_k;
    char *err = NULL;
    if (bert_glue_top_k(args[2], args[3] == NULL, "bert_answer_each", "question, context", &top_k, &err) != 0) {
        vtab_error(&v->base, err);
        return SQLITE_ERROR;
    }
    bert_entry *e = table_model(v, args[3], 3);
    if (!e) return SQLITE_ERROR;
    c->context = bert_strndup(context, clen);
    if (!c->context) return SQLITE_NOMEM;
    if (bert_pipeline_answer(e, question, qlen, c->context, clen, top_k, &c->answers, bert_glue_interrupt_fn(), v->db,
                        &err) != 0) {
        vtab_error(&v->base, err);
        return SQLITE_ERROR;
    }
    c->base.count = (sqlite3_int64)c->answers.n;
    return SQLITE_OK;
}

static int answer_column(table_cursor *cur, sqlite3_context *ctx, int col)
{
    const result_cursor *c = (const result_cursor *)cur;
    const qa_answer *a = &c->answers.items[cur->row];
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

static void offsets_clear(table_cursor *cur)
{
    offsets_cursor *c = (offsets_cursor *)cur;
    bert_ids_free(&c->ids);
    bert_spans_free(&c->spans);
    free(c->names);
    free(c->name_at);
}

static int offsets_rows(table_cursor *cur, bert_entry *e, const char *text, size_t len, sqlite3 *db, char **err)
{
    (void)db;
    offsets_cursor *c = (offsets_cursor *)cur;
    if (bert_tokenize_offsets(e, text, len, &c->ids, &c->spans, err) != 0) return -1;
    /* out of memory: *err stays NULL */
    if (bert_token_texts(e, c->ids.ids, c->ids.len, &c->names, &c->name_at) != 0) return -1;
    c->base.count = (sqlite3_int64)c->ids.len;
    return 0;
}

static int offsets_filter(glue_vtab *v, table_cursor *c, sqlite3_value **args)
{
    return text_filter(v, c, args, offsets_rows);
}

static int offsets_column(table_cursor *cur, sqlite3_context *ctx, int col)
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


/* ---- bert_chunks ---------------------------------------------------------------- */

enum { C_CHUNK_INDEX, C_TEXT, C_START, C_END, C_TOKENS, C_INPUT, C_MAX_TOKENS, C_OVERLAP, C_MODEL };

typedef struct {
    table_cursor base;
    char *text;              /* a copy: the argument's value does not outlive xFilter */
    size_t len;
    bert_spans spans;        /* every piece of the text */
    bert_chunker chunker;
    size_t first, end;       /* the current chunk's pieces */
    int on_chunk;            /* 0 past the last chunk (and before a scan) */
} chunks_cursor;

static void chunks_clear(table_cursor *cur)
{
    chunks_cursor *c = (chunks_cursor *)cur;
    free(c->text);
    bert_spans_free(&c->spans);
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

/* bert_chunks' INTEGER argument args[i] (NULL or absent: fallback) into
 * *out: 0, or -1 after the error.  A TEXT one with no argument after it was
 * most likely meant as the model, which goes last: the error shows the call
 * so, with `leading` the arguments before the model. */
static int chunks_integer(glue_vtab *v, sqlite3_value **args, int i, const char *name, sqlite3_int64 fallback,
                          const char *leading, const char *expected, sqlite3_int64 *out)
{
    if (integer_argument(args[i], fallback, out) == 0) return 0;
    int more = 0;
    for (int k = i + 1; k <= 3; k++) more |= args[k] != NULL;   /* up to args[3], the model */
    if (sqlite3_value_type(args[i]) == SQLITE_TEXT && !more)
        vtab_error(&v->base, bert_errorf("bert_chunks: %s must be an INTEGER, not TEXT; the model name goes last: "
                                         "bert_chunks(%s, '%s'); " BERT_SEE_FUNCTIONS, name, leading,
                                         sqlite3_value_text(args[i])));
    else
        vtab_error(&v->base, bert_errorf("bert_chunks: %s must be %s; " BERT_SEE_FUNCTIONS, name, expected));
    return -1;
}

static int chunks_filter(glue_vtab *v, table_cursor *cur, sqlite3_value **args)
{
    chunks_cursor *c = (chunks_cursor *)cur;
    const char *text;
    size_t len;
    int got = table_text(v, args[0], 0, &text, &len);
    if (got < 0) return SQLITE_ERROR;
    sqlite3_int64 max_tokens, overlap;
    if (chunks_integer(v, args, 1, "max_tokens", -1, "text, NULL, 0",
                       "a positive INTEGER such as 256, or NULL for the model's max_length - 2", &max_tokens) != 0)
        return SQLITE_ERROR;
    if (args[1] && sqlite3_value_type(args[1]) != SQLITE_NULL && max_tokens < 1) {
        vtab_error(&v->base, bert_errorf("bert_chunks: max_tokens is %lld; give a positive INTEGER such as 256, "
                                         "or NULL for the model's max_length - 2", (long long)max_tokens));
        return SQLITE_ERROR;
    }
    if (chunks_integer(v, args, 2, "overlap", 0, "text, max_tokens, 0",
                       "an INTEGER from 0 to max_tokens - 1, such as 32", &overlap) != 0)
        return SQLITE_ERROR;
    bert_entry *e = table_model(v, args[3], 3);
    if (!e) return SQLITE_ERROR;
    char *err = NULL;
    if (bert_entry_need_tokenizer(e, &err) != 0) {
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
    c->on_chunk = bert_chunker_next(&c->chunker, &c->first, &c->end);
    return SQLITE_OK;
}

static int chunks_next(table_cursor *cur)
{
    chunks_cursor *c = (chunks_cursor *)cur;
    c->base.row++;
    c->on_chunk = bert_chunker_next(&c->chunker, &c->first, &c->end);
    return SQLITE_OK;
}

static int chunks_eof(const table_cursor *cur)
{
    return !((const chunks_cursor *)cur)->on_chunk;
}

static int chunks_column(table_cursor *cur, sqlite3_context *ctx, int col)
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


/* ---- bert_attention and bert_hidden_states ------------------------------------ */

enum { AT_LAYER, AT_HEAD, AT_FROM, AT_TO, AT_FROM_TOKEN, AT_TO_TOKEN, AT_WEIGHT, AT_TEXT };
enum { HS_LAYER, HS_POSITION, HS_TOKEN, HS_START, HS_END, HS_VECTOR, HS_TEXT };

typedef struct {
    table_cursor base;
    bert_model_view view;
} view_cursor;

static void view_clear(table_cursor *cur)
{
    bert_model_view_free(&((view_cursor *)cur)->view);
}

/* (text [, options_json]): the options are checked even for a NULL text,
 * which gives no rows. */
static int view_filter(glue_vtab *v, table_cursor *cur, sqlite3_value **args, bert_view_kind kind)
{
    view_cursor *c = (view_cursor *)cur;
    const char *text, *json = NULL;
    size_t len, json_len = 0;
    int got = table_text(v, args[0], 0, &text, &len);
    if (got < 0 || (args[1] && table_text(v, args[1], 1, &json, &json_len) < 0)) return SQLITE_ERROR;
    bert_view_options options;
    char *err = NULL;
    if (bert_view_options_parse(kind, json, json_len, &options, &err) != 0) {
        vtab_error(&v->base, err);
        return SQLITE_ERROR;
    }
    int rc = SQLITE_OK;
    bert_entry *e = got == 0 ? bert_registry_find(&v->conn->registry, options.model, &err) : NULL;
    if (got == 0 && (!e || bert_model_view_compute(e, text, len, &options, &c->view, bert_glue_interrupt_fn(), v->db,
                                                   &err) != 0)) {
        vtab_error(&v->base, err);
        rc = SQLITE_ERROR;
    }
    bert_view_options_free(&options);
    const size_t tokens = c->view.ids.len;
    c->base.count = (sqlite3_int64)c->view.n_layers * (sqlite3_int64)tokens *
                    (kind == BERT_VIEW_ATTENTION ? (sqlite3_int64)c->view.n_heads * (sqlite3_int64)tokens : 1);
    return rc;
}

static int attention_filter(glue_vtab *v, table_cursor *c, sqlite3_value **args)
{
    return view_filter(v, c, args, BERT_VIEW_ATTENTION);
}

static int hidden_states_filter(glue_vtab *v, table_cursor *c, sqlite3_value **args)
{
    return view_filter(v, c, args, BERT_VIEW_HIDDEN_STATES);
}

static void view_token(const bert_model_view *view, sqlite3_context *ctx, sqlite3_int64 position)
{
    sqlite3_result_text(ctx, view->names + view->name_at[position], -1, SQLITE_TRANSIENT);
}

/* Rows layer by layer, head by head, from position by from position, then
 * to position: the row number is the index of its weight in the values. */
static int attention_column(table_cursor *cur, sqlite3_context *ctx, int col)
{
    const bert_model_view *view = &((const view_cursor *)cur)->view;
    const sqlite3_int64 n = (sqlite3_int64)view->ids.len, row = cur->row;
    const sqlite3_int64 square = row / (n * n), head = square % view->n_heads;
    switch (col) {
    case AT_LAYER: sqlite3_result_int(ctx, view->layers[square / view->n_heads]); break;
    case AT_HEAD: sqlite3_result_int(ctx, view->heads[head]); break;
    case AT_FROM: sqlite3_result_int64(ctx, row / n % n); break;
    case AT_TO: sqlite3_result_int64(ctx, row % n); break;
    case AT_FROM_TOKEN: view_token(view, ctx, row / n % n); break;
    case AT_TO_TOKEN: view_token(view, ctx, row % n); break;
    case AT_WEIGHT: sqlite3_result_double(ctx, view->values[row]); break;
    default: break;
    }
    return SQLITE_OK;
}

static int hidden_states_column(table_cursor *cur, sqlite3_context *ctx, int col)
{
    const bert_model_view *view = &((const view_cursor *)cur)->view;
    const sqlite3_int64 n = (sqlite3_int64)view->ids.len, row = cur->row, position = row % n;
    const bert_token_span *span = &view->spans.at[position];
    switch (col) {
    case HS_LAYER: sqlite3_result_int(ctx, view->layers[row / n]); break;
    case HS_POSITION: sqlite3_result_int64(ctx, position); break;
    case HS_TOKEN: view_token(view, ctx, position); break;
    /* NULL for [CLS] and [SEP] (<s>, </s>), which no characters gave. */
    case HS_START: if (span->word >= 0) sqlite3_result_int64(ctx, span->start); break;
    case HS_END: if (span->word >= 0) sqlite3_result_int64(ctx, span->end); break;
    case HS_VECTOR:
        sqlite3_result_blob(ctx, view->values + (size_t)row * (size_t)view->hidden,
                            (int)((size_t)view->hidden * sizeof(float)), SQLITE_TRANSIENT);
        sqlite3_result_subtype(ctx, BERT_SUBTYPE_FLOAT32);
        break;
    default: break;
    }
    return SQLITE_OK;
}

/* ---- bert_sparse_terms ------------------------------------------------------ */

enum { S_TOKEN_ID, S_TOKEN, S_WEIGHT, S_TEXT, S_OPTIONS };

typedef struct {
    table_cursor base;
    bert_sparse_terms terms;
} sparse_cursor;

static void sparse_clear(table_cursor *cur)
{
    bert_sparse_terms_free(&((sparse_cursor *)cur)->terms);
}

static int sparse_filter(glue_vtab *v, table_cursor *cur, sqlite3_value **args)
{
    sparse_cursor *c = (sparse_cursor *)cur;
    const char *text = NULL;
    size_t len = 0;
    int got = table_text(v, args[0], 0, &text, &len);
    if (got < 0) return SQLITE_ERROR;
    char *err = NULL;
    got = bert_glue_sparse(v->conn, v->spec->name, got ? NULL : text, len, args[1], v->db, &c->terms, &err);
    if (got < 0) {
        vtab_error(&v->base, err);
        return SQLITE_ERROR;
    }
    c->base.count = c->terms.n;   /* a NULL text: no rows */
    return SQLITE_OK;
}

static int sparse_column(table_cursor *cur, sqlite3_context *ctx, int col)
{
    const bert_sparse_term *t = &((sparse_cursor *)cur)->terms.terms[cur->row];
    switch (col) {
    case S_TOKEN_ID: sqlite3_result_int(ctx, t->id); break;
    case S_TOKEN: sqlite3_result_text(ctx, t->token, -1, SQLITE_TRANSIENT); break;
    case S_WEIGHT: sqlite3_result_double(ctx, t->weight); break;
    default: break;
    }
    return SQLITE_OK;
}


/* ---- bert_zero_shot_each ------------------------------------------------------- */

/* bert_zero_shot_each(text, labels_json [, options_json]): rank, label,
 * score; every label's pair in one packed batch. */
enum { Z_RANK, Z_LABEL, Z_SCORE, Z_TEXT, Z_LABELS, Z_OPTIONS };

typedef struct {
    table_cursor base;
    bert_zero_shot_request req;
    bert_zero_shot_result result;
} zero_shot_cursor;

static void zero_shot_clear(table_cursor *cur)
{
    zero_shot_cursor *c = (zero_shot_cursor *)cur;
    bert_zero_shot_result_free(&c->result);
    bert_zero_shot_request_free(&c->req);
}

static int zero_shot_filter(glue_vtab *v, table_cursor *cur, sqlite3_value **args)
{
    zero_shot_cursor *c = (zero_shot_cursor *)cur;
    const char *text;
    size_t len;
    int got = table_text(v, args[0], 0, &text, &len);
    if (got < 0) return SQLITE_ERROR;
    char *err = NULL;
    got = bert_glue_zero_shot(v->conn, v->spec->name, got ? NULL : text, len, args[1], args[2], v->db, &c->req,
                              &c->result, &err);
    if (got < 0) {
        vtab_error(&v->base, err);
        return SQLITE_ERROR;
    }
    c->base.count = got ? 0 : c->result.n;
    return SQLITE_OK;
}

static int zero_shot_column(table_cursor *cur, sqlite3_context *ctx, int col)
{
    const zero_shot_cursor *c = (const zero_shot_cursor *)cur;
    const int label = c->result.order[cur->row];
    switch (col) {
    case Z_RANK: sqlite3_result_int64(ctx, cur->row + 1); break;
    case Z_LABEL: sqlite3_result_text(ctx, c->req.labels[label], -1, SQLITE_TRANSIENT); break;
    case Z_SCORE: sqlite3_result_double(ctx, c->result.scores[label]); break;
    default: break;
    }
    return SQLITE_OK;
}

/* ---- the tables ------------------------------------------------------------ */

static const table_spec tables[] = {
    {"bert_models",
     "name TEXT, path TEXT, loaded INTEGER, hidden_size INTEGER, num_layers INTEGER, num_heads INTEGER, "
     "vocab_size INTEGER, max_length INTEGER, pooling TEXT, normalize INTEGER, has_mlm_head INTEGER, "
     "has_nsp_head INTEGER, dtype TEXT, refs INTEGER, encoder_calls INTEGER, task TEXT, labels TEXT, precision TEXT, family TEXT",
     0, sizeof(models_cursor), models_clear, models_filter, models_column, NULL, NULL, NULL},
    {"bert_functions", "name TEXT, arguments TEXT, returns TEXT, summary TEXT",
     0, sizeof(table_cursor), NULL, functions_filter, functions_column, NULL, NULL, NULL},
    {"bert_fill_mask_each",
     "mask_index INTEGER, rank INTEGER, token INTEGER, token_str TEXT, score REAL, sequence TEXT, "
     "text HIDDEN, top_k HIDDEN, model HIDDEN",
     F_TEXT, sizeof(result_cursor), result_clear, fill_filter, fill_column, NULL, NULL, NULL},
    {"bert_embed_each", "key, value TEXT, embedding BLOB, input HIDDEN, model HIDDEN",
     3, sizeof(batch_cursor), batch_clear, batch_filter, batch_column, batch_next, NULL, &embed_batch},
    {"bert_rerank_each", "key, value TEXT, score REAL, query HIDDEN, input HIDDEN, model HIDDEN",
     3, sizeof(batch_cursor), batch_clear, batch_filter, batch_column, batch_next, NULL, &rerank_batch},
    {"bert_ner_each",
     "entity TEXT, score REAL, word TEXT, start INTEGER, \"end\" INTEGER, \"index\" INTEGER, "
     "text HIDDEN, model HIDDEN",
     N_TEXT, sizeof(result_cursor), result_clear, ner_filter, ner_column, NULL, NULL, NULL},
    {"bert_answer_each",
     "rank INTEGER, answer TEXT, score REAL, start INTEGER, \"end\" INTEGER, "
     "question HIDDEN, context HIDDEN, top_k HIDDEN, model HIDDEN",
     A_QUESTION, sizeof(result_cursor), result_clear, answer_filter, answer_column, NULL, NULL, NULL},
    {"bert_tokenize_offsets",
     "\"index\" INTEGER, token TEXT, id INTEGER, start INTEGER, \"end\" INTEGER, word INTEGER, "
     "input HIDDEN, model HIDDEN",
     O_INPUT, sizeof(offsets_cursor), offsets_clear, offsets_filter, offsets_column, NULL, NULL, NULL},
    {"bert_chunks",
     "chunk_index INTEGER, text TEXT, start INTEGER, \"end\" INTEGER, tokens INTEGER, "
     "input HIDDEN, max_tokens HIDDEN, overlap HIDDEN, model HIDDEN",
     C_INPUT, sizeof(chunks_cursor), chunks_clear, chunks_filter, chunks_column, chunks_next, chunks_eof, NULL},
    {"bert_attention",
     "layer INTEGER, head INTEGER, from_position INTEGER, to_position INTEGER, from_token TEXT, to_token TEXT, "
     "weight REAL, text HIDDEN, options_json HIDDEN",
     AT_TEXT, sizeof(view_cursor), view_clear, attention_filter, attention_column, NULL, NULL, NULL},
    {"bert_hidden_states",
     "layer INTEGER, position INTEGER, token TEXT, start INTEGER, \"end\" INTEGER, vector BLOB, "
     "text HIDDEN, options_json HIDDEN",
     HS_TEXT, sizeof(view_cursor), view_clear, hidden_states_filter, hidden_states_column, NULL, NULL, NULL},
    {"bert_sparse_terms", "token_id INTEGER, token TEXT, weight REAL, text HIDDEN, options HIDDEN",
     S_TEXT, sizeof(sparse_cursor), sparse_clear, sparse_filter, sparse_column, NULL, NULL, NULL},
    {"bert_zero_shot_each", "rank INTEGER, label TEXT, score REAL, text HIDDEN, labels_json HIDDEN, options_json HIDDEN",
     Z_TEXT, sizeof(zero_shot_cursor), zero_shot_clear, zero_shot_filter, zero_shot_column, NULL, NULL, NULL},
};

/* Every table is an eponymous virtual table of this one module; its spec
 * (found by the module's name when SQLite connects it) says the rest. */
static sqlite3_module table_module = {
    .xConnect = table_connect, .xBestIndex = table_best_index, .xDisconnect = table_disconnect,
    .xOpen = table_open, .xClose = table_close, .xFilter = table_filter, .xNext = table_next,
    .xEof = table_eof, .xColumn = table_column, .xRowid = table_rowid,
};

static const table_spec *table_spec_named(const char *module_name)
{
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        if (strcmp(tables[i].name, module_name) == 0) return &tables[i];
    return NULL;
}

int bert_register_tables(sqlite3 *db, bert_connection *c)
{
    int rc = SQLITE_OK;
    for (size_t i = 0; rc == SQLITE_OK && i < sizeof tables / sizeof tables[0]; i++)
        rc = sqlite3_create_module_v2(db, tables[i].name, &table_module, bert_connection_retain(c),
                                      bert_connection_release);
    return rc;
}
