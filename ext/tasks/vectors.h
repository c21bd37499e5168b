/*
 * vectors.h - what the vector functions compute on float32 vectors that are
 * already made: shorter (Matryoshka) vectors, sqlite-vec's quantized
 * formats, and late interaction's token-vector BLOBs and MaxSim.  Knows
 * nothing of SQLite and, but for bert_embedding_shorten, of models.
 */
#ifndef BERT_VECTORS_H
#define BERT_VECTORS_H

#include "../models/registry.h"

#include <stddef.h>
#include <stdint.h>

/* Keeps the first `dims` values of v; with `normalize`, divides them by
 * max(||v[:dims]||, 1e-12), as torch.nn.functional.normalize does. */
void bert_vector_shorten(float *v, int dims, int normalize);

/* bert_vector_shorten renormalising exactly when the model `e` normalises
 * its embeddings (its Normalize module or the `normalize` option). */
void bert_embedding_shorten(const bert_entry *e, float *v, int dims);

/* 1 when ||v|| is within BERT_UNIT_TOLERANCE of 1: a vector of a model that
 * normalises, which bert_truncate renormalises unless told otherwise. */
#define BERT_UNIT_TOLERANCE 1e-4
int bert_vector_is_unit(const float *v, int n);

/* sqlite-vec's bit[n] (n a multiple of 8): bit i, least significant first
 * in byte i / 8, set when v[i] > 0, as vec_quantize_binary. */
void bert_quantize_binary(const float *v, int n, uint8_t *out);

/* sqlite-vec's int8[n] as vec_quantize_int8(v, 'unit') computes it: the
 * range [-1, 1] in 255 steps of float32 2/255, truncated toward zero;
 * values outside [-1, 1] are clamped to [-128, 127] (where sqlite-vec's
 * conversion is undefined).  v must hold no NaN. */
void bert_quantize_int8(const float *v, int n, int8_t *out);

/* sqlite-vec's subtypes of its bit and int8 vector BLOBs (float32 is 223). */
#define BERT_SUBTYPE_BIT 224
#define BERT_SUBTYPE_INT8 225

/* ---- token vectors: n x d float32 behind a 16-byte header ---------------- */

/* The header: the magic "BTV1", then n and d as little-endian uint32, then
 * 4 zero bytes; the n x d float32 values follow, little-endian, row by row. */
#define BERT_TOKEN_VECTORS_MAGIC "BTV1"
#define BERT_TOKEN_VECTORS_HEADER 16

/* Bytes of the BLOB of n vectors of d values (SIZE_MAX when it would not fit
 * in an SQLite BLOB). */
size_t bert_token_vectors_bytes(int n, int d);

/* Writes the header of n x d into blob[0..15]. */
void bert_token_vectors_header(unsigned char *blob, int n, int d);

/* Reads a token-vectors BLOB: 0 with *n, *d and *values (the first value's
 * bytes, possibly unaligned), or -1 with *err naming what is wrong; `what`
 * names the argument in the message. */
int bert_token_vectors_parse(const void *blob, size_t bytes, const char *what, int *n, int *d,
                             const unsigned char **values, char **err);

/* MaxSim: the sum over the nq query vectors of the largest dot product
 * with any of the nd document vectors, all of dim values (aligned). */
double bert_maxsim(const float *q, int nq, const float *doc, int nd, int dim);

#endif
