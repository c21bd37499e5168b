/*
 * vector_functions.h - the scalar functions on vectors (vector_functions.c):
 * shorter vectors, sqlite-vec's quantized formats, late interaction's MaxSim.
 * functions.c registers them with the others.
 */
#ifndef BERT_VECTOR_FUNCTIONS_H
#define BERT_VECTOR_FUNCTIONS_H

#include "../base/sqlite_api.h"

void bert_fn_truncate(sqlite3_context *ctx, int argc, sqlite3_value **argv);
void bert_fn_quantize(sqlite3_context *ctx, int argc, sqlite3_value **argv);
void bert_fn_maxsim(sqlite3_context *ctx, int argc, sqlite3_value **argv);

#endif
