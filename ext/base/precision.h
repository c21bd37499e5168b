/*
 * precision.h - how a model's projection weights are held: the value of
 * bert_load's "precision" option, which the weight cache and the model
 * loader act on and the kernels compute in.  In the base layer because all
 * three layers name it.
 */
#ifndef BERT_PRECISION_H
#define BERT_PRECISION_H

#include <stddef.h>
#include <string.h>

typedef enum {
    BERT_PRECISION_FLOAT32 = 0,
    BERT_PRECISION_BFLOAT16,
    BERT_PRECISION_INT8
} bert_precision;

/* "float32", "bfloat16", "int8". */
static inline const char *bert_precision_name(bert_precision p)
{
    switch (p) {
    case BERT_PRECISION_BFLOAT16: return "bfloat16";
    case BERT_PRECISION_INT8: return "int8";
    default: return "float32";
    }
}

/* The precision called `name` into *out: 0, or -1 (out unchanged) for
 * anything else, NULL included. */
static inline int bert_precision_parse(const char *name, bert_precision *out)
{
    static const bert_precision all[] = {BERT_PRECISION_FLOAT32, BERT_PRECISION_BFLOAT16, BERT_PRECISION_INT8};
    for (size_t i = 0; name && i < sizeof all / sizeof *all; i++)
        if (strcmp(name, bert_precision_name(all[i])) == 0) {
            *out = all[i];
            return 0;
        }
    return -1;
}

#endif
