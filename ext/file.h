/*
 * file.h - reading the small files of a model directory whole.
 */
#ifndef BERT_FILE_H
#define BERT_FILE_H

#include <stddef.h>

/* Reads the regular file `path` into a new buffer, NUL-terminated after its
 * *len bytes.  A FIFO, device or directory is refused without blocking on
 * it, and so is a file longer than max_bytes, so that a model directory
 * cannot make the caller wait forever or read without end.  Returns NULL
 * with *err (malloc'd) on failure; when the file does not exist and
 * `missing` is not NULL, sets *missing to 1 and leaves *err NULL. */
char *file_read(const char *path, size_t max_bytes, size_t *len, int *missing, char **err);

#endif
