/*
 * robustness.h - what the robustness suite's files share (the suite:
 * test_robustness.c; bad model directories and tokenizer files:
 * test_robustness_files.c; damaged weights: test_robustness_weights.c;
 * resource bounds: test_robustness_bounds.c; the helpers below:
 * test_robustness_kit.c).
 */
#ifndef BERT_TEST_ROBUSTNESS_H
#define BERT_TEST_ROBUSTNESS_H

#include "test.h"

#include <stddef.h>
#include <stdint.h>

#define GOOD "build/models/bert-plain-f32"
#define MLM "build/models/mlm-tied-f32"
#define PRETRAIN "build/models/pretrain-untied-bf16"
#define ROOT "build/robustness"

/* Sanitizers' allocators keep freed memory and add their own: the memory
 * bounds below are wider under them (SANITIZED, test.h). */
/* A JSON array of %d texts of about 25 tokens each. */
#define TEXTS_SQL "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d) " \
                  "SELECT json_group_array('sentence ' || i || ' of many, about a quick brown fox that " \
                  "jumps over the lazy dog and runs far away into the woods') FROM n"

/* ---- queries ---- */

int rb_starts_with(const char *s, const char *prefix);
/* Runs `sql` with one optional text parameter (NULL: none). */
char *rb_query(sqlite3 *db, const char *sql, const char *param);
/* A field of /proc/self/status in KiB (Linux), -1 when unknown. */
long rb_status_kib(const char *field);
/* `sql` in a child process stopped after `seconds`, its address space
 * grown by at most grow_mib (test_robustness_kit.c says more); the first
 * column to out; -1 when the child did not finish. */
int rb_query_in_child(sqlite3 *db, const char *sql, const char *param, unsigned seconds, long grow_mib, char *out,
                      size_t cap);
/* The connection (with the model 'good') still computes. */
void rb_expect_alive(sqlite3 *db);

/* ---- files ---- */

void rb_write_file(const char *path, const void *data, size_t len);
void rb_write_text(const char *dir, const char *name, const char *text);
void rb_copy_file(const char *from, const char *to);
/* ROOT/name holding the good model's config.json, vocab.txt and
 * tokenizer_config.json and nothing else. */
void rb_model_dir(char *dir, size_t cap, const char *name);

/* The good model's weights, read once. */
typedef struct {
    unsigned char *bytes;
    size_t len;
    size_t header_len;
} st_image;

int rb_read_image(st_image *im);
/* dir/model.safetensors from a length field, a header and the data, cut
 * after `keep` bytes unless SIZE_MAX. */
void rb_write_st(const char *dir, uint64_t claimed, const char *header, size_t header_len, const unsigned char *data,
                 size_t data_len, size_t keep);
/* The good weights with the header replaced by SQL expression `expr` of ?1. */
int rb_write_edited_st(sqlite3 *db, const char *dir, const st_image *im, const char *expr);
/* bert_load(name, dir) succeeds. */
int rb_load_ok(sqlite3 *db, const char *name, const char *dir);
/* bert_load(name, dir) fails with f1 and f2 and registers nothing. */
void rb_expect_weights_error(sqlite3 *db, const char *name, const char *dir, const char *f1, const char *f2);
/* What only loading the weights finds (their shapes against config.json):
 * bert_load succeeds, the first call that needs the weights fails with the
 * fragments, and so does the next; the registration goes. */
void rb_expect_load_time_error(sqlite3 *db, const char *name, const char *dir, const char *f1, const char *f2);

/* ---- the concerns, run by suite_robustness in this order ---- */

void robustness_options(sqlite3 *db);
void robustness_configs(sqlite3 *db);
void robustness_vocabularies(sqlite3 *db);
void robustness_weights(sqlite3 *db);
void robustness_huge_text(sqlite3 *db);
void robustness_interrupt(sqlite3 *db);
/* The 17 MB copies of the weights the checks wrote. */
void robustness_drop_weight_copies(void);

#endif
