/*
 * safetensors.h - a read-only view of a .safetensors file.
 *
 * The format: an 8-byte little-endian length N, N bytes of JSON mapping each
 * tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets
 * relative to the end of the header), then the raw little-endian data.
 *
 * bert_safetensors_open() maps the file read-only and checks everything a hostile file
 * could lie about before anyone touches the data: the header length, each
 * entry's dtype, shape and byte range, and that no two ranges overlap.  After
 * that, a tensor's bytes can be read without further checks.
 */
#ifndef BERT_SAFETENSORS_H
#define BERT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    ST_F32, ST_F16, ST_BF16, ST_F64,
    ST_I64, ST_I32, ST_I16, ST_I8,
    ST_U64, ST_U32, ST_U16, ST_U8,
    ST_BOOL, ST_F8_E4M3, ST_F8_E5M2
} st_dtype;

#define ST_MAX_DIMS 8

typedef struct {
    const char *name;
    const char *dtype_name;         /* as written in the header, "F32" ... */
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    size_t count;                   /* number of elements */
    size_t nbytes;
    const unsigned char *data;      /* inside the mapping, nbytes long */
} st_tensor;

typedef struct st_file st_file;

/* Maps and validates `path`.  0, or -1 with *err (malloc'd) naming the file
 * and the problem; err must not be NULL. */
int bert_safetensors_open(const char *path, st_file **out, char **err);

/* The shards of one checkpoint, each opened by bert_safetensors_open, as one
 * file: every tensor of every shard, a name in two shards refused (`label`
 * names the checkpoint in the error).  Takes the files (and sets their
 * pointers to NULL) whether it succeeds or not.  0, or -1 with *err. */
int bert_safetensors_merge(st_file **files, int n, const char *label, st_file **out, char **err);

/* The tensor called `name`, or NULL. */
const st_tensor *bert_safetensors_find(const st_file *f, const char *name);

/* Size of the whole file (or in-memory image, or every shard) in bytes. */
size_t bert_safetensors_size(const st_file *f);

/* Tells the kernel that the pages lying wholly inside tensor t's bytes
 * will not be read again: a weight converted at load (bfloat16, int8) then
 * stops counting in the resident set twice.  A later read would page them
 * back in from the file.  Does nothing for an in-memory image. */
void bert_safetensors_release(const st_file *f, const st_tensor *t);

/* Unmaps the file (when bert_safetensors_open mapped it) and frees everything. */
void bert_safetensors_close(st_file *f);

/* For the tests and fuzzers, which look inside the reader. */
/* Validates an in-memory image of a file, which must outlive the result.
 * `label` names it in error messages. */
int bert_safetensors_parse(const unsigned char *buf, size_t size, const char *label, st_file **out, char **err);
int bert_safetensors_count(const st_file *f);
const st_tensor *bert_safetensors_tensor_at(const st_file *f, int i);   /* sorted by name */
/* Bytes per element of a dtype. */
size_t bert_safetensors_dtype_size(st_dtype t);

#endif
