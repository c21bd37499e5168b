/*
 * workers.h - a connection's helper threads, to split one product of a
 * short sentence across cores.
 *
 * OpenBLAS threads the large products itself, but the few-rows kernel
 * (linear.c) is ours, so a sentence embedded row by row would use one core
 * however many the model was given.  A bert_workers is owned by one
 * connection's scratch and used by one thread at a time; its threads start on
 * first need and end with bert_workers_free.  Between jobs they spin a little
 * (the next product of the same sentence follows within microseconds), then
 * sleep.
 */
#ifndef BERT_WORKERS_H
#define BERT_WORKERS_H

typedef struct bert_workers bert_workers;

/* One part of a job: part is 0..parts-1. */
typedef void (*bert_work_fn)(void *ctx, int part, int parts);

/* NULL when out of memory (callers then run single-threaded). */
bert_workers *bert_workers_new(void);
void bert_workers_free(bert_workers *w);

/* Runs fn(ctx, p, parts) for every p in 0..parts-1 at once, part 0 on the
 * calling thread, and returns when all are done.  When threads cannot be
 * started (or w is NULL) the parts run one after another on the caller. */
void bert_workers_run(bert_workers *w, int parts, bert_work_fn fn, void *ctx);

/* Threads started so far, beyond the callers'. */
int bert_workers_started(const bert_workers *w);

#endif
