/*
 * train_table.c - bert_train, an eponymous virtual table that fine-tunes a
 * model and reports as it goes:
 *
 *   SELECT * FROM bert_train(output_dir, base, query [, options_json]);
 *
 * xFilter runs `query` (and the options' eval_query) on the same
 * connection, hands the rows down as plain C values and prepares the run
 * (tasks/fine_tune.h), which checks everything before anything is written;
 * each xNext trains up to the next report row, so the sqlite3 shell prints
 * the progress row by row.  An interrupt stops the run between rows (and,
 * where SQLite can tell, within a step).
 */
#include "connection.h"
#include "register.h"

#include "../base/error.h"
#include "../tasks/fine_tune.h"
#include "signatures.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { T_STEP, T_EPOCH, T_LOSS, T_RATE, T_SPEED, T_EVAL, T_SAVED, T_OUTPUT, T_BASE, T_QUERY, T_OPTIONS };
#define T_ARGS 4

typedef struct {
    sqlite3_vtab base;
    bert_connection *conn;
    sqlite3 *db;
} train_vtab;

typedef struct {
    sqlite3_vtab_cursor base;
    ft_run *run;
    ft_report row;
    int eof;
    sqlite3_int64 rowid;
} train_cursor;

static void set_error(sqlite3_vtab *v, char *msg)
{
    sqlite3_free(v->zErrMsg);
    v->zErrMsg = sqlite3_mprintf("%s", msg ? msg : "out of memory");
    free(msg);
}

static int train_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out, char **err)
{
    (void)argc; (void)argv; (void)err;
    int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(step INTEGER, epoch REAL, loss REAL, learning_rate REAL, "
                                      "examples_per_s REAL, eval TEXT, saved TEXT, output_dir HIDDEN, base HIDDEN, "
                                      "query HIDDEN, options_json HIDDEN)");
    if (rc != SQLITE_OK) return rc;
    train_vtab *v = sqlite3_malloc(sizeof *v);
    if (!v) return SQLITE_NOMEM;
    memset(v, 0, sizeof *v);
    v->conn = aux;
    v->db = db;
    *out = &v->base;
    return SQLITE_OK;
}

static int train_disconnect(sqlite3_vtab *v)
{
    sqlite3_free(v);
    return SQLITE_OK;
}

/* The arguments are equality constraints on the hidden columns, in order. */
static int train_best_index(sqlite3_vtab *vt, sqlite3_index_info *info)
{
    int where[T_ARGS] = {-1, -1, -1, -1}, given = 0;
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        int a = c->iColumn - T_OUTPUT;
        if (a < 0 || a >= T_ARGS || c->op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
        if (a + 1 > given) given = a + 1;
        if (c->usable) where[a] = i;
    }
    const bert_signature *sig = bert_signature_find("bert_train");
    if (given < sig->min_args) {
        set_error(vt, bert_signature_count_error(sig, given));
        return SQLITE_ERROR;
    }
    int argc = 0, mask = 0;
    for (int a = 0; a < T_ARGS; a++) {
        if (where[a] < 0) continue;
        info->aConstraintUsage[where[a]].argvIndex = ++argc;
        info->aConstraintUsage[where[a]].omit = 1;
        mask |= 1 << a;
    }
    if ((mask & 7) != 7) {
        info->estimatedCost = 1e30;
        return SQLITE_CONSTRAINT;
    }
    info->idxNum = mask;
    info->estimatedCost = 1e6;
    return SQLITE_OK;
}

static int train_open(sqlite3_vtab *v, sqlite3_vtab_cursor **out)
{
    (void)v;
    train_cursor *c = sqlite3_malloc(sizeof *c);
    if (!c) return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    *out = &c->base;
    return SQLITE_OK;
}

static int train_close(sqlite3_vtab_cursor *cur)
{
    train_cursor *c = (train_cursor *)cur;
    ft_run_free(c->run);
    sqlite3_free(c);
    return SQLITE_OK;
}

/* Runs `sql` on the connection and copies its rows.  0, or -1 with *err. */
static int read_rows(sqlite3 *db, const char *sql, const char *what, ft_rows *rows, char **err)
{
    sqlite3_stmt *stmt = NULL;
    const char *tail = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, &tail) != SQLITE_OK) {
        *err = bert_errorf("bert_train: the %s does not run: %s", what, sqlite3_errmsg(db));
        return -1;
    }
    if (!stmt) {
        *err = bert_errorf("bert_train: the %s is empty: give a SELECT of the training examples, such as "
                           "'SELECT text, label FROM reviews'", what);
        return -1;
    }
    if (!sqlite3_stmt_readonly(stmt)) {
        sqlite3_finalize(stmt);
        *err = bert_errorf("bert_train: the %s must be a SELECT that only reads (it would change the database)",
                           what);
        return -1;
    }
    rows->n_cols = sqlite3_column_count(stmt);
    ft_value vals[16];
    int rc = 0, step;
    if (rows->n_cols < 1 || rows->n_cols > 16) {
        *err = bert_errorf("bert_train: the %s returns %d columns; a task takes 2 to 4", what, rows->n_cols);
        rc = -1;
    }
    while (rc == 0 && (step = sqlite3_step(stmt)) == SQLITE_ROW) {
        for (int k = 0; k < rows->n_cols; k++) {
            ft_value *v = &vals[k];
            memset(v, 0, sizeof *v);
            switch (sqlite3_column_type(stmt, k)) {
            case SQLITE_INTEGER: v->type = FT_INTEGER; v->integer = sqlite3_column_int64(stmt, k); break;
            case SQLITE_FLOAT: v->type = FT_REAL; v->real = sqlite3_column_double(stmt, k); break;
            case SQLITE_NULL: v->type = FT_NULL; break;
            default:
                /* TEXT, and a BLOB read as the UTF-8 it holds. */
                v->type = FT_TEXT;
                v->text = (const char *)sqlite3_column_text(stmt, k);
                v->len = (size_t)sqlite3_column_bytes(stmt, k);
                if (!v->text) v->text = "";
            }
        }
        if (ft_rows_add(rows, vals) != 0) {
            *err = bert_errorf("out of memory reading the %s", what);
            rc = -1;
        }
    }
    if (rc == 0 && step != SQLITE_DONE) {
        *err = bert_errorf("bert_train: the %s failed: %s", what, sqlite3_errmsg(db));
        rc = -1;
    }
    sqlite3_finalize(stmt);
    return rc;
}

static int text_arg(sqlite3_vtab *v, sqlite3_value *arg, int i, const char **out)
{
    size_t len;
    char *err = NULL;
    int got = bert_glue_text(arg, "bert_train", i, out, &len, &err);
    if (got == 0) return 0;
    set_error(v, got > 0 ? bert_glue_argument_error("bert_train", i, "is NULL: give a text") : err);
    return -1;
}

static int advance(train_cursor *c)
{
    train_vtab *v = (train_vtab *)c->base.pVtab;
    char *err = NULL;
    int got = ft_run_next(c->run, &c->row, bert_glue_interrupt_fn(), v->db, &err);
    if (got < 0) {
        set_error(&v->base, err);
        return SQLITE_ERROR;
    }
    c->eof = got == 0;
    c->rowid++;
    return SQLITE_OK;
}

static int train_filter(sqlite3_vtab_cursor *cur, int mask, const char *idx_str, int argc, sqlite3_value **argv)
{
    (void)idx_str; (void)argc;
    train_cursor *c = (train_cursor *)cur;
    train_vtab *v = (train_vtab *)cur->pVtab;
    ft_run_free(c->run);
    c->run = NULL;
    c->eof = 1;
    sqlite3_value *args[T_ARGS];
    for (int a = 0, j = 0; a < T_ARGS; a++) args[a] = mask & (1 << a) ? argv[j++] : NULL;
    const char *out_dir, *base, *query, *json = NULL;
    if (text_arg(&v->base, args[0], 0, &out_dir) || text_arg(&v->base, args[1], 1, &base) ||
        text_arg(&v->base, args[2], 2, &query))
        return SQLITE_ERROR;
    if (args[3] && sqlite3_value_type(args[3]) != SQLITE_NULL && text_arg(&v->base, args[3], 3, &json))
        return SQLITE_ERROR;
    ft_options o;
    ft_rows train = {0}, eval = {0};
    char *err = NULL;
    const int rc = SQLITE_ERROR;
    if (ft_options_parse(json, json ? strlen(json) : 0, &o, &err) != 0) {
        ft_options_free(&o);
        set_error(&v->base, err);
        return SQLITE_ERROR;
    }
    if (read_rows(v->db, query, "query", &train, &err) != 0 ||
        (o.eval_query && read_rows(v->db, o.eval_query, "eval_query", &eval, &err) != 0)) {
        ft_options_free(&o);
        goto done;
    }
    int has_eval = o.eval_query != NULL;
    if (!(c->run = ft_run_new(&v->conn->registry, out_dir, base, &o, &train, has_eval ? &eval : NULL, &err))) goto done;
    ft_rows_free(&train);
    ft_rows_free(&eval);
    c->rowid = 0;
    return advance(c);   /* which reports its own errors */
done:
    /* err NULL: memory ran out (error.h's convention). */
    set_error(&v->base, err);
    ft_rows_free(&train);
    ft_rows_free(&eval);
    return rc;
}

static int train_next(sqlite3_vtab_cursor *cur)
{
    return advance((train_cursor *)cur);
}

static int train_eof(sqlite3_vtab_cursor *cur)
{
    return ((train_cursor *)cur)->eof;
}

static int train_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    const ft_report *r = &((train_cursor *)cur)->row;
    switch (col) {
    case T_STEP: sqlite3_result_int64(ctx, r->step); break;
    case T_EPOCH: sqlite3_result_double(ctx, r->epoch); break;
    case T_LOSS: if (!isnan(r->loss)) sqlite3_result_double(ctx, r->loss); break;
    case T_RATE: sqlite3_result_double(ctx, r->learning_rate); break;
    case T_SPEED: sqlite3_result_double(ctx, r->examples_per_s); break;
    case T_EVAL:
        if (r->eval) {
            sqlite3_result_text(ctx, r->eval, -1, SQLITE_TRANSIENT);
            sqlite3_result_subtype(ctx, BERT_SUBTYPE_JSON);
        }
        break;
    case T_SAVED: if (r->saved) sqlite3_result_text(ctx, r->saved, -1, SQLITE_TRANSIENT); break;
    default: break;
    }
    return SQLITE_OK;
}

static int train_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
    *rowid = ((train_cursor *)cur)->rowid;
    return SQLITE_OK;
}

static sqlite3_module train_module = {
    .xConnect = train_connect, .xBestIndex = train_best_index, .xDisconnect = train_disconnect,
    .xOpen = train_open, .xClose = train_close, .xFilter = train_filter, .xNext = train_next,
    .xEof = train_eof, .xColumn = train_column, .xRowid = train_rowid,
};

int bert_register_train(sqlite3 *db, bert_connection *c)
{
    return sqlite3_create_module_v2(db, "bert_train", &train_module, bert_connection_retain(c), bert_connection_release);
}
