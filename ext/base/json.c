/*
 * sqlite_json.c - json.h implemented with SQLite's own JSON parser.
 *
 * A private in-memory database runs `json_tree(?)` over the text and the rows
 * are copied into a flat node array.  This keeps the extension free of a
 * hand-written JSON parser while the rest of ext/ stays ignorant of SQLite.
 */
#include "sqlite_api.h"
#include "buffer.h"
#include "file.h"
#include "json.h"
#include "error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static json_type type_from_name(const char *t)
{
    switch (t ? t[0] : 'n') {
    case 't': return t[1] == 'r' ? JSON_TRUE : JSON_TEXT;
    case 'f': return JSON_FALSE;
    case 'i': return JSON_INTEGER;
    case 'r': return JSON_REAL;
    case 'a': return JSON_ARRAY;
    case 'o': return JSON_OBJECT;
    default: return JSON_NULL;
    }
}

#define NO_STRING ((size_t)-1)

/* Appends a NUL-terminated copy to the arena; returns its offset or NO_STRING. */
static size_t arena_add(bert_text *arena, const char *s, size_t n)
{
    size_t off = arena->len;
    if (bert_text_add(arena, s, n) != 0) return NO_STRING;
    arena->len++;   /* past the NUL bert_text keeps after the text: it ends this string */
    return off;
}

typedef struct {
    json_node node;
    long long id, parent_id;
    size_t key_off, text_off;
} raw_node;

static int find_by_id(const raw_node *raw, int count, long long id)
{
    int lo = 0, hi = count - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (raw[mid].id == id) return mid;
        if (raw[mid].id < id) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
}

static int fail(char **err, const char *msg, const char *detail)
{
    if (err) *err = bert_errorf("%s%s", msg, detail ? detail : "");
    return -1;
}

int bert_json_parse(const char *text, size_t len, json_doc **out, char **err)
{
    *out = NULL;
    if (err) *err = NULL;
    if (len > 0x7fffffff) return fail(err, "JSON text too large", NULL);

    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    raw_node *raw = NULL;
    int count = 0, rc = -1;
    size_t cap = 0;
    bert_text strings = {0};
    json_doc *doc = NULL;

    int opened = sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY, NULL);
    if (opened == SQLITE_NOMEM) goto oom;
    if (opened != SQLITE_OK) {
        fail(err, "cannot open an in-memory database to parse JSON", NULL);
        goto done;
    }
    if (sqlite3_prepare_v2(db,
            "SELECT id, parent, type, key, atom FROM json_tree(?1) ORDER BY id",
            -1, &stmt, NULL) != SQLITE_OK) {
        fail(err, "cannot prepare the JSON parser: ", sqlite3_errmsg(db));
        goto done;
    }
    sqlite3_bind_text(stmt, 1, text, (int)len, SQLITE_STATIC);
    int step;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        raw_node *grown = bert_grow(raw, &cap, (size_t)count + 1, sizeof *raw);
        if (!grown) goto oom;
        raw = grown;
        raw_node *r = &raw[count];
        memset(r, 0, sizeof *r);
        r->id = sqlite3_column_int64(stmt, 0);
        r->parent_id = sqlite3_column_type(stmt, 1) == SQLITE_NULL ? -1 : sqlite3_column_int64(stmt, 1);
        r->node.type = type_from_name((const char *)sqlite3_column_text(stmt, 2));
        r->node.index = -1;
        r->key_off = r->text_off = NO_STRING;
        if (sqlite3_column_type(stmt, 3) == SQLITE_INTEGER) {
            r->node.index = sqlite3_column_int64(stmt, 3);
        } else if (sqlite3_column_type(stmt, 3) == SQLITE_TEXT) {
            const char *k = (const char *)sqlite3_column_text(stmt, 3);
            r->key_off = arena_add(&strings, k, (size_t)sqlite3_column_bytes(stmt, 3));
            if (r->key_off == NO_STRING) goto oom;
        }
        if (r->node.type == JSON_TEXT || r->node.type == JSON_INTEGER || r->node.type == JSON_REAL) {
            const char *a = (const char *)sqlite3_column_text(stmt, 4);
            if (a) {
                r->text_off = arena_add(&strings, a, (size_t)sqlite3_column_bytes(stmt, 4));
                if (r->text_off == NO_STRING) goto oom;
            }
            r->node.number = sqlite3_column_double(stmt, 4);
            r->node.integer = sqlite3_column_int64(stmt, 4);
        }
        count++;
    }
    if (step != SQLITE_DONE) {
        fail(err, sqlite3_errmsg(db), NULL);
        goto done;
    }
    if (count == 0) { fail(err, "malformed JSON: empty document", NULL); goto done; }

    doc = calloc(1, sizeof *doc);
    if (!doc || !(doc->nodes = malloc((size_t)count * sizeof *doc->nodes))) goto oom;
    doc->count = count;
    doc->strings = strings.s;
    strings.s = NULL;
    int *last_child = malloc((size_t)count * sizeof *last_child);
    if (!last_child) goto oom;
    for (int i = 0; i < count; i++) {
        json_node *n = &doc->nodes[i];
        *n = raw[i].node;
        n->key = raw[i].key_off == NO_STRING ? NULL : doc->strings + raw[i].key_off;
        n->text = raw[i].text_off == NO_STRING ? NULL : doc->strings + raw[i].text_off;
        n->parent = raw[i].parent_id < 0 ? -1 : find_by_id(raw, count, raw[i].parent_id);
        n->first_child = n->next_sibling = -1;
        last_child[i] = -1;
        if (n->parent >= 0) {
            int p = n->parent;
            if (last_child[p] < 0) doc->nodes[p].first_child = i;
            else doc->nodes[last_child[p]].next_sibling = i;
            last_child[p] = i;
        }
    }
    free(last_child);
    *out = doc;
    doc = NULL;
    rc = 0;
    goto done;
oom:
    fail(err, "out of memory parsing JSON", NULL);
done:
    bert_json_free(doc);
    free(strings.s);
    free(raw);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return rc;
}

int bert_json_parse_file(const char *path, json_doc **out, char **err)
{
    *out = NULL;
    *err = NULL;
    size_t len;
    int missing = 0;
    char *buf = bert_file_read(path, (size_t)1 << 30, &len, &missing, err);
    if (!buf) {
        if (!missing) return -1;
        free(*err);
        *err = NULL;
        return 0;
    }
    char *perr = NULL;
    int rc = bert_json_parse(buf, len, out, &perr);
    free(buf);
    if (rc != 0) *err = bert_errorf("%s: %s", path, perr ? perr : "out of memory");
    free(perr);
    return rc == 0 ? 1 : -1;
}

void bert_json_free(json_doc *doc)
{
    if (!doc) return;
    free(doc->nodes);
    free(doc->strings);
    free(doc);
}

int bert_json_member(const json_doc *doc, int obj, const char *key)
{
    if (!doc || obj < 0 || obj >= doc->count || doc->nodes[obj].type != JSON_OBJECT) return -1;
    for (int c = doc->nodes[obj].first_child; c >= 0; c = doc->nodes[c].next_sibling)
        if (doc->nodes[c].key && strcmp(doc->nodes[c].key, key) == 0) return c;
    return -1;
}

int bert_json_path(const json_doc *doc, int node, const char *dotted)
{
    char part[256];
    while (node >= 0 && *dotted) {
        const char *dot = strchr(dotted, '.');
        size_t n = dot ? (size_t)(dot - dotted) : strlen(dotted);
        if (n >= sizeof part) return -1;
        memcpy(part, dotted, n);
        part[n] = '\0';
        node = bert_json_member(doc, node, part);
        dotted += n + (dot ? 1 : 0);
    }
    return node;
}

long long bert_json_int(const json_doc *doc, int node, long long fallback)
{
    if (!doc || node < 0 || node >= doc->count) return fallback;
    const json_node *n = &doc->nodes[node];
    if (n->type == JSON_INTEGER) return n->integer;
    /* The range test comes first: converting 1e300 (or inf) to long long is
     * undefined behaviour. */
    if (n->type == JSON_REAL && n->number >= -9223372036854775808.0 && n->number < 9223372036854775808.0 &&
        n->number == (double)(long long)n->number)
        return (long long)n->number;
    return fallback;
}

double bert_json_real(const json_doc *doc, int node, double fallback)
{
    if (!doc || node < 0 || node >= doc->count) return fallback;
    const json_node *n = &doc->nodes[node];
    return (n->type == JSON_INTEGER || n->type == JSON_REAL) ? n->number : fallback;
}

const char *bert_json_str(const json_doc *doc, int node, const char *fallback)
{
    if (!doc || node < 0 || node >= doc->count) return fallback;
    const json_node *n = &doc->nodes[node];
    return n->type == JSON_TEXT && n->text ? n->text : fallback;
}

int bert_json_bool(const json_doc *doc, int node, int fallback)
{
    if (!doc || node < 0 || node >= doc->count) return fallback;
    if (doc->nodes[node].type == JSON_TRUE) return 1;
    if (doc->nodes[node].type == JSON_FALSE) return 0;
    return fallback;
}

int bert_json_length(const json_doc *doc, int node)
{
    if (!doc || node < 0 || node >= doc->count) return 0;
    int n = 0;
    for (int c = doc->nodes[node].first_child; c >= 0; c = doc->nodes[c].next_sibling) n++;
    return n;
}

/* ---- writing JSON with SQLite's JSON functions ---------------------------- */

struct bert_json_sql {
    sqlite3 *db;
};

bert_json_sql *bert_json_sql_open(char **err)
{
    *err = NULL;
    bert_json_sql *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    int rc = sqlite3_open_v2(":memory:", &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY, NULL);
    if (rc != SQLITE_OK) {
        if (rc != SQLITE_NOMEM) *err = bert_errorf("cannot open an in-memory database to write JSON");
        sqlite3_close(s->db);
        free(s);
        return NULL;
    }
    return s;
}

void bert_json_sql_close(bert_json_sql *s)
{
    if (!s) return;
    sqlite3_close(s->db);
    free(s);
}

int bert_json_sql_eval(bert_json_sql *s, const char *sql, const char *const *params, int n, char **out, char **err)
{
    *out = NULL;
    *err = NULL;
    sqlite3_stmt *stmt = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(s->db, sql, -1, &stmt, NULL) != SQLITE_OK) {
        *err = bert_errorf("cannot write JSON: %s", sqlite3_errmsg(s->db));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        int b = params[i] ? sqlite3_bind_text(stmt, i + 1, params[i], -1, SQLITE_STATIC) : sqlite3_bind_null(stmt, i + 1);
        if (b != SQLITE_OK) {
            if (b != SQLITE_NOMEM) *err = bert_errorf("cannot write JSON: %s", sqlite3_errmsg(s->db));
            goto done;
        }
    }
    int step = sqlite3_step(stmt);
    if (step != SQLITE_ROW) {
        if (step != SQLITE_NOMEM)
            *err = bert_errorf("cannot write JSON: %s", step == SQLITE_DONE ? "no row" : sqlite3_errmsg(s->db));
        goto done;
    }
    const char *text = (const char *)sqlite3_column_text(stmt, 0);
    if (text) {
        if (!(*out = bert_strndup(text, (size_t)sqlite3_column_bytes(stmt, 0)))) goto done;
    } else if (sqlite3_column_type(stmt, 0) != SQLITE_NULL) {
        goto done;   /* out of memory converting the value */
    }
    rc = 0;
done:
    sqlite3_finalize(stmt);
    return rc;
}

char *bert_json_sql_string_array(bert_json_sql *s, const char *const *items, int n, char **err)
{
    char *array = bert_strdup("[]");
    if (!array) {
        *err = NULL;
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        /* '$[#]' appends: one statement per item keeps the binding simple. */
        const char *p[2] = {array, items[i]};
        char *longer = NULL;
        int rc = bert_json_sql_eval(s, "SELECT json_insert(?1, '$[#]', ?2)", p, 2, &longer, err);
        free(array);
        if (rc != 0) return NULL;
        array = longer;
    }
    *err = NULL;
    return array;
}
