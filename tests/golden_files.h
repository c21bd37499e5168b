/*
 * golden_files.h - reading the golden data files (JSON Lines) that the
 * tokenizer and offsets suites compare against (tests/test_golden_files.c).
 */
#ifndef BERT_TEST_GOLDEN_FILES_H
#define BERT_TEST_GOLDEN_FILES_H

#include "../ext/json.h"

/* A JSONL file read as one JSON array, blank lines skipped; NULL (with a
 * line on stdout saying why, when it does not parse) when it cannot. */
json_doc *t_read_jsonl(const char *path);

/* The i-th child of an array or object node (0-based), or -1. */
int t_json_child(const json_doc *d, int node, int i);

#endif
