/*
 * interrupt.h - the poll that lets a caller abandon a long computation.
 *
 * The SQL glue hands one down (non-zero once sqlite3_interrupt() was
 * called) and the encoder polls it between layers.  It lives in the base
 * layer so that the glue can name it without seeing the encoder.
 */
#ifndef BERT_INTERRUPT_H
#define BERT_INTERRUPT_H

/* Returns non-zero to abandon the computation; ctx is the caller's. */
typedef int (*bert_interrupt_fn)(void *ctx);

#endif
