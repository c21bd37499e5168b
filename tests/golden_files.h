/*
 * golden_files.h - reading the golden data files (JSON Lines) that the
 * suites compare against, and the scaffolding the golden suites share:
 * their manifests of generated models, a line at a time, failures counted
 * per model, a head that disagrees with its config.json
 * (tests/test_golden_files.c).
 */
#ifndef BERT_TEST_GOLDEN_FILES_H
#define BERT_TEST_GOLDEN_FILES_H

#include "../ext/base/json.h"
#include "test.h"

#include <stddef.h>

/* Where the golden files are, and the generated models they were made from. */
#define GOLDEN_DIR "tests/golden/"
#define MODELS_DIR "build/models/"
/* How far a score or vector element may be from the golden one. */
#define GOLDEN_TOL 1e-4

/* A JSONL file read as one JSON array, blank lines skipped; NULL (with a
 * line on stdout saying why, when it does not parse) when it cannot. */
json_doc *t_read_jsonl(const char *path);

/* The i-th child of an array or object node (0-based), or -1. */
int t_json_child(const json_doc *d, int node, int i);

/* The text member `key` of object `node`, or "". */
const char *t_member_str(const json_doc *d, int node, const char *key);

/* Calls fn(ctx, line, db) on every line of the JSON Lines file `path`,
 * parsed (a line that does not parse fails the case).  Returns the lines,
 * or -1 when the file cannot be read (the case fails). */
int t_each_golden_line(const char *path, void (*fn)(void *ctx, const json_doc *line, sqlite3 *db), void *ctx,
                       sqlite3 *db);

/* Runs golden line `line` of d in the form of families.jsonl: "sql" with
 * the texts of "args" bound, the line's "model" bound last; 1 when its one
 * result is the "expected" JSON (numbers within GOLDEN_TOL, the rest
 * identical) or, for a line with "error", an error holding each of its
 * phrases.  *worst takes the largest numeric difference; *why says where
 * they part (tests/test_families.c). */
int t_golden_sql_line(sqlite3 *db, const json_doc *d, int line, double *worst, char *why, size_t why_size);

/* A golden line {"encode": ids, "mean": [...]} on model MODELS_DIR dir: the
 * encoder on the raw token ids, the mean of its last hidden state's rows
 * within GOLDEN_TOL of "mean" (1), else 0 with *why.  *worst takes the
 * largest difference (tests/test_families.c, tests/test_encoders.c). */
int t_golden_encode_line(const json_doc *d, int line, const char *dir, double *worst, char *why, size_t why_size);

/* A golden manifest (an object of generated models, by name), parsed; NULL
 * when it cannot be (the case fails, naming the file). */
json_doc *t_golden_manifest(const char *path);

/* Manifest entry `node` describes the generated model of its name as it is
 * now (t_golden_model_file on its recorded size and checksum). */
int t_golden_model_matches(const json_doc *manifest, int node);

/* What every golden suite knows of a generated model: the first member of
 * its own model struct. */
typedef struct {
    char name[64];
    int usable;     /* it matches the goldens and registered */
    int failures;
} golden_model;

/* The model named `name` among n models, each the first member of a struct
 * of `size` bytes, from `first` on, or NULL. */
golden_model *t_golden_find(golden_model *first, int n, size_t size, const char *name);

/* t_each_golden_line for lines that name a model ("model"): fn gets the
 * model, one of n (each the first member of a struct of `size` bytes, from
 * `first` on); lines of models that are not usable are skipped. */
int t_each_model_line(const char *path, golden_model *first, int n, size_t size,
                      void (*fn)(void *ctx, golden_model *m, const json_doc *line, sqlite3 *db), void *ctx,
                      sqlite3 *db);

/* t_each_model_line over a suite's models: `h` points to a struct with an
 * array `models` of structs whose first member is a golden_model, and `n`. */
#define each_model_line(path, fn, h, db) \
    t_each_model_line(path, &(h)->models[0].g, (h)->n, sizeof *(h)->models, fn, h, db)

/* Reads the manifest `path` and, for each of its models (at most max),
 * zeroes the next slot (the first member of a struct of `size` bytes, from
 * `first` on), names it after the entry and calls setup(ctx, manifest,
 * node, m, db), which registers the model when it matches the goldens
 * (t_golden_model_matches) and sets m->usable.  Returns the slots filled
 * (0 when the manifest cannot be read: the case fails). */
int t_golden_models(const char *path, golden_model *first, int max, size_t size,
                    void (*setup)(void *ctx, const json_doc *manifest, int node, golden_model *m, sqlite3 *db),
                    void *ctx, sqlite3 *db);

/* A t_golden_models setup that registers each model that matches the
 * goldens under its own name (build/models/NAME); ctx is unused. */
void t_golden_register(void *ctx, const json_doc *manifest, int node, golden_model *m, sqlite3 *db);

/* Counts a check of one model's goldens: a failure adds to m->failures and
 * only the first few are reported.  Returns ok. */
int t_golden_check(golden_model *m, int ok, const char *what, const char *text);

/* A head whose config.json lists one label fewer than its weights hold
 * (build/models/MODEL with the id2label entry `label` removed, the last)
 * must not load: `sql`, with %s for the model's directory, must fail with
 * each of the NULL-ended fragments after it. */
void t_head_shape_mismatch(sqlite3 *db, const char *model, const char *label, const char *sql, ...);

#endif
