/*
 * signatures.h - every SQL function and table function of the extension:
 * its arguments, what it returns and what it is for.
 *
 * One table feeds the registration's argument counts, the errors about
 * arguments (a wrong count gives the signature) and the bert_functions
 * table, so that what users read and what SQLite enforces cannot drift.
 */
#ifndef BERT_SIGNATURES_H
#define BERT_SIGNATURES_H

#include <stddef.h>

typedef struct {
    const char *name;
    const char *arguments;   /* as users write them: "text [, model]" */
    const char *returns;
    const char *summary;     /* one line */
    int min_args, max_args;
    int table;               /* 1 for a table-valued function or table */
} bert_signature;

/* The signatures, in the order bert_functions lists them. */
extern const bert_signature bert_signatures[];
extern const size_t bert_signature_count;

/* The signature of `name`, or NULL. */
const bert_signature *bert_signature_find(const char *name);

/* The name of argument `i` (0-based) as the signature writes it ("text",
 * "model"), copied into buf (of `size` bytes); "?" past the last one. */
void bert_signature_argument(const bert_signature *s, int i, char *buf, size_t size);

/* The error for a call of `s` with `given` arguments: the counts it takes
 * and its signature.  Malloc'd, NULL when memory ran out. */
char *bert_signature_count_error(const bert_signature *s, int given);

/* What every error about arguments ends with: where to look them up. */
#define BERT_SEE_FUNCTIONS "SELECT * FROM bert_functions lists every function's arguments"

#endif
