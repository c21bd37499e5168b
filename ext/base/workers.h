/*
 * workers.h - a connection's helper threads, to split one product across
 * cores.
 *
 * The extension threads every projection itself, the few-rows kernel's
 * (linear.c) and OpenBLAS's large products alike: OpenBLAS splits a product
 * into fixed shares, and a share given to a core that another process holds
 * stalls the whole call.  A bert_workers is owned by one
 * connection's scratch and used by one thread at a time; its threads start on
 * first need and end with bert_workers_free.  Between jobs they spin a little
 * (the next product of the same sentence follows within microseconds), then
 * sleep.
 */
#ifndef BERT_WORKERS_H
#define BERT_WORKERS_H

typedef struct bert_workers bert_workers;

/* One chunk of a job: chunk is 0..chunks-1. */
typedef void (*bert_work_fn)(void *ctx, int chunk, int chunks);

/* NULL when out of memory (callers then run single-threaded). */
bert_workers *bert_workers_new(void);
void bert_workers_free(bert_workers *w);

/* Runs fn(ctx, c, chunks) for every c in 0..chunks-1 on up to `threads`
 * threads, the caller's included, and returns when all are done.  Chunks are
 * taken one at a time by whichever thread is free, so a helper held back by
 * a busy core leaves its share to the others.  When threads cannot be
 * started (or w is NULL) the chunks run one after another on the caller. */
void bert_workers_run(bert_workers *w, int threads, int chunks, bert_work_fn fn, void *ctx);

/* A part of a product out = in W^T: input rows i0..i1 against weight rows
 * r0..r1. */
typedef void (*bert_span_fn)(void *ctx, int i0, int i1, int r0, int r1);

/* How to share out the product of n input rows by `rows` weight rows of
 * `cols` columns. */
typedef enum {
    BERT_SPAN_WEIGHT_ROWS, /* spans of weight rows, every input row in each */
    BERT_SPAN_INPUT_ROWS   /* spans of input rows, every weight row in each */
} bert_span_by;

typedef struct {
    int n, rows, cols;
    bert_span_by by;
    int least;      /* no span shorter than this many rows */
    int multiple;   /* 1: spans a multiple of `least` (a kernel's slabs or blocks) */
} bert_split;

/* Runs the product as spans on up to `threads` threads: spans of equal
 * length, one to four a thread (more when the work allows, so that a
 * thread slowed by a busy core takes fewer); no more threads than the work
 * pays for.  Too small to split, it is one span on
 * the caller: fn(ctx, 0, n, 0, rows). */
void bert_workers_split(bert_workers *w, int threads, const bert_split *split, bert_span_fn fn, void *ctx);

/* Threads started so far, beyond the callers'. */
int bert_workers_started(const bert_workers *w);

/* The thread count of a model loaded without the "threads" option:
 * OpenBLAS's (OPENBLAS_NUM_THREADS, else every core), read once.  The first
 * call also sets OpenBLAS itself to one thread: the extension threads its
 * products itself, in chunks that busy cores cannot hold up. */
int bert_threads_default(void);

#endif
