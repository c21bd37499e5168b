/*
 * path.h - file names inside a model directory.
 */
#ifndef BERT_PATH_H
#define BERT_PATH_H

/* "dir/name" in a new malloc'd string (trailing slashes of dir folded), or
 * NULL when memory ran out. */
char *bert_path_join(const char *dir, const char *name);

#endif
