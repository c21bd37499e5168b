/*
 * checkpoint_fixture.h - the tiny BERT checkpoint that the safetensors,
 * config, loader and encoder suites write and read (tests/test_checkpoint_fixture.c).
 *
 * Every file these suites use is written by the tests themselves under
 * build/test_model: a tiny BERT whose weights are multiples of 1/64, exactly
 * representable in float32, float16 and bfloat16, so the same model stored
 * three ways (and under every tensor naming the loader accepts) must give
 * the same numbers.  Numerical agreement with PyTorch is the golden suite's
 * business; these check that malformed input fails cleanly and that
 * equivalent input gives equivalent output.
 */
#ifndef BERT_TEST_CHECKPOINT_FIXTURE_H
#define BERT_TEST_CHECKPOINT_FIXTURE_H

#include "../ext/models/model_dir.h"

#include <stddef.h>
#include <stdint.h>

#define TM_ROOT "build/test_model"

/* The tiny model's sizes. */
enum { V = 13, H = 8, L = 2, NH = 2, FF = 12, P = 16, TV = 2 };

/* ---- files ---------------------------------------------------------------- */

/* malloc that exits the runner when memory runs out. */
void *tm_xmalloc(size_t n);
void tm_write_file(const char *path, const void *data, size_t len);
void tm_write_text(const char *dir, const char *name, const char *text);

typedef struct { char path[256]; } tm_dir;

/* A fresh directory TM_ROOT/name, emptied of the files an earlier run left. */
tm_dir tm_case_dir(const char *name);

/* 1 when err is a message holding needle. */
int tm_contains(const char *err, const char *needle);

/* Writes a safetensors file: the 8-byte length (`claimed`, or the header's
 * real length when 0), the header and the data. */
void tm_write_st_raw(const char *path, const char *header, uint64_t claimed, const void *data, size_t data_len);

/* ---- the tiny checkpoint ---------------------------------------------------- */

typedef struct {
    char name[96];
    int ndim;
    long long shape[2];
    float *values;
    const char *dtype;        /* NULL: the checkpoint's dtype */
    const void *raw;          /* bytes written as they are, for odd dtypes */
    size_t raw_len;
} tensor;

typedef struct {
    tensor t[64];
    int n;
    unsigned seed;
} ckpt;

/* Adds a tensor of d0 (x d1) pseudo-random multiples of 1/64 around base. */
tensor *ckpt_add(ckpt *c, const char *name, int d0, int d1, float base);

/* BertForPreTraining's tensors, named as in BertModel (no prefix). */
void ckpt_build(ckpt *c);
void ckpt_free(ckpt *c);
tensor *ckpt_find(ckpt *c, const char *name);
/* Removes a tensor; exits the runner when there is none of that name. */
void ckpt_drop(ckpt *c, const char *name);

/* Puts every BertModel tensor under "bert." and/or renames LayerNorm
 * weight/bias to gamma/beta. */
void ckpt_rename_all(ckpt *c, int prefix, int gamma);

/* Writes config.json and model.safetensors into dir, the data 8-byte aligned
 * as Hugging Face's writer does, or, with `misalign`, at 2 mod 4. */
void ckpt_write(const ckpt *c, const char *dir, const char *dtype, int misalign);

/* Loads a fresh float32 copy of the standard checkpoint, written to
 * TM_ROOT/name after `edit` (or NULL) changed it. */
int ckpt_load_edited(const char *name, void (*edit)(ckpt *), bert_model **m, char **err);

#endif
