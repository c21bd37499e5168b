/*
 * file.h - the files of a model directory: their names, and reading the
 * small ones whole.
 */
#ifndef BERT_FILE_H
#define BERT_FILE_H

#include <stddef.h>

/* "dir/name" in a new malloc'd string (trailing slashes of dir folded), or
 * NULL when memory ran out. */
char *bert_path_join(const char *dir, const char *name);

/* Reads the regular file `path` into a new buffer, NUL-terminated after its
 * *len bytes.  A FIFO, device or directory is refused without blocking on
 * it, and so is a file longer than max_bytes, so that a model directory
 * cannot make the caller wait forever or read without end.  Returns NULL
 * with *err (malloc'd; NULL only when memory ran out) on failure; when the
 * file does not exist and `missing` is not NULL, also sets *missing to 1,
 * so that a caller can tell an absent file from a bad one. */
char *bert_file_read(const char *path, size_t max_bytes, size_t *len, int *missing, char **err);

/* 1 when the first `len` bytes of a file are a Git LFS pointer (a small text
 * file that a clone without Git LFS leaves in place of the real content). */
int bert_file_is_lfs_pointer(const void *data, size_t len);

/* The error for a Git LFS pointer found at `path`: what it is and the
 * commands that fetch the real file. Malloc'd, NULL when memory ran out. */
char *bert_file_lfs_error(const char *path, size_t len);

#endif
