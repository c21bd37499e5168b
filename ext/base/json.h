/*
 * json.h - a read-only JSON document tree.
 *
 * The parsing itself is SQLite's (its json_tree() table-valued function, see
 * sqlite_json.c): the extension carries no JSON parser of its own.  A parsed
 * document is a flat array of nodes in document order; node 0 is the root.
 * Every node knows its parent, its member name (objects) or index (arrays).
 *
 *   json_doc *doc;
 *   char *err;
 *   if (bert_json_parse(text, len, &doc, &err) != 0) { ... free(err); }
 *   int n = bert_json_member(doc, 0, "hidden_size");
 *   long long hidden = n >= 0 ? bert_json_int(doc, n, 768) : 768;
 *   bert_json_free(doc);
 */
#ifndef BERT_JSON_H
#define BERT_JSON_H

#include <stddef.h>

typedef enum {
    JSON_NULL,
    JSON_TRUE,
    JSON_FALSE,
    JSON_INTEGER,
    JSON_REAL,
    JSON_TEXT,
    JSON_ARRAY,
    JSON_OBJECT
} json_type;

typedef struct {
    json_type type;
    int parent;        /* index of the parent node, -1 for the root */
    const char *key;   /* member name when the parent is an object, else NULL */
    long long index;   /* position when the parent is an array, else -1 */
    const char *text;  /* JSON_TEXT: the unescaped string; numbers: their text */
    double number;     /* JSON_INTEGER and JSON_REAL */
    long long integer; /* JSON_INTEGER (and JSON_REAL truncated) */
    int first_child;   /* first child node, -1 when none */
    int next_sibling;  /* next node with the same parent, -1 when none */
} json_node;

typedef struct json_doc {
    json_node *nodes;
    int count;
    char *strings;     /* one arena holding every key and text */
} json_doc;

/* Parses `len` bytes of JSON.  Returns 0 and sets *out, or returns -1 and sets
 * *err to a malloc'd message (which may be NULL when memory ran out). */
int bert_json_parse(const char *text, size_t len, json_doc **out, char **err);

/* Reads a whole file and parses it: 1 with *out set; 0 when the file does
 * not exist (*out NULL), so optional files are easy; -1 with *err (naming
 * the file; NULL when memory ran out) when it cannot be read or parsed. */
int bert_json_parse_file(const char *path, json_doc **out, char **err);

void bert_json_free(json_doc *doc);

/* The child of object node `obj` named `key`, or -1. */
int bert_json_member(const json_doc *doc, int obj, const char *key);

/* Follows a dotted path of member names from `node` ("pooling.mode"); -1
 * when absent.  config.json's sentence_transformers.activation_fn needs it. */
int bert_json_path(const json_doc *doc, int node, const char *dotted);


/* Typed reads with a fallback for absent (-1) or mistyped nodes. */
long long bert_json_int(const json_doc *doc, int node, long long fallback);
double bert_json_real(const json_doc *doc, int node, double fallback);
const char *bert_json_str(const json_doc *doc, int node, const char *fallback);
/* 1 for true, 0 for false, fallback for anything else (including null). */
int bert_json_bool(const json_doc *doc, int node, int fallback);
/* Number of children of an array or object node (0 for scalars). */
int bert_json_length(const json_doc *doc, int node);

/*
 * Writing JSON: SQLite's JSON functions (json_object, json_set, json_patch,
 * json_group_object ...) on the same kind of private in-memory database, so
 * that no file escapes strings by hand.  One session runs many statements:
 *
 *   bert_json_sql *js = bert_json_sql_open(&err);
 *   const char *p[] = {config_text, "BertForSequenceClassification"};
 *   bert_json_sql_eval(js, "SELECT json_set(?1, '$.architectures', json_array(?2))", p, 2, &out, &err);
 *   bert_json_sql_close(js);
 */
typedef struct bert_json_sql bert_json_sql;

/* A session, or NULL with *err (NULL when memory ran out). */
bert_json_sql *bert_json_sql_open(char **err);
void bert_json_sql_close(bert_json_sql *s);

/* Runs `sql`, a statement of one result row, with params[i] bound as text to
 * ?(i+1) (a NULL param binds SQL NULL; write CAST(?2 AS INTEGER) for a
 * number).  *out: the first column of the row as a malloc'd text (NULL when
 * SQL NULL).  0, or -1 with *err (SQLite's message; NULL when memory ran out). */
int bert_json_sql_eval(bert_json_sql *s, const char *sql, const char *const *params, int n, char **out, char **err);

/* A JSON array of the n strings, as json_array() writes it: malloc'd, or
 * NULL with *err. */
char *bert_json_sql_string_array(bert_json_sql *s, const char *const *items, int n, char **err);

#endif
