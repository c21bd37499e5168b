/*
 * workers.c - helper threads for one connection's matrix products.
 *
 * A job is published by bumping `generation` (release); a worker that sees a
 * new generation (acquire) reads fn/ctx/parts, runs its part and counts down
 * `pending`.  Waiting starts with a short spin, because in a forward pass
 * jobs follow each other every few microseconds and a sleeping thread takes
 * tens of microseconds to wake; only then does it fall back to the mutex and
 * condition variables, which make a sleeping wait free of lost wake-ups.
 */
#include "workers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

/* Threads beyond the caller; more cores than this are left to OpenBLAS. */
#define MAX_WORKERS 63
/* About a millisecond of polling before sleeping. */
#define SPIN_ROUNDS 20000

typedef struct {
    bert_workers *pool;
    int index;         /* 1.., the part it runs */
    unsigned first;    /* the generation before its first job */
} worker_arg;

struct bert_workers {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* a new generation, or stop */
    pthread_cond_t done; /* pending reached 0 */
    pthread_t threads[MAX_WORKERS];
    worker_arg args[MAX_WORKERS];
    int started;
    int failed; /* a thread could not be started: stay single-threaded */

    bert_work_fn fn;
    void *ctx;
    int parts;
    atomic_uint generation;
    atomic_int pending;
    atomic_int stop;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *worker_main(void *p)
{
    worker_arg *arg = p;
    bert_workers *w = arg->pool;
    /* Not the current generation: the first job may be published before
     * this thread gets to run. */
    unsigned seen = arg->first;
    for (;;) {
        unsigned g = seen;
        for (int i = 0; i < SPIN_ROUNDS && g == seen && !atomic_load_explicit(&w->stop, memory_order_relaxed); i++) {
            cpu_relax();
            g = atomic_load_explicit(&w->generation, memory_order_acquire);
        }
        if (g == seen) {
            pthread_mutex_lock(&w->lock);
            while ((g = atomic_load_explicit(&w->generation, memory_order_acquire)) == seen &&
                   !atomic_load(&w->stop))
                pthread_cond_wait(&w->wake, &w->lock);
            pthread_mutex_unlock(&w->lock);
        }
        if (atomic_load(&w->stop)) return NULL;
        seen = g;
        if (arg->index < w->parts) w->fn(w->ctx, arg->index, w->parts);
        if (atomic_fetch_sub_explicit(&w->pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&w->lock);
            pthread_cond_signal(&w->done);
            pthread_mutex_unlock(&w->lock);
        }
    }
}

bert_workers *bert_workers_new(void)
{
    bert_workers *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    if (pthread_mutex_init(&w->lock, NULL) != 0) goto fail_lock;
    if (pthread_cond_init(&w->wake, NULL) != 0) goto fail_wake;
    if (pthread_cond_init(&w->done, NULL) != 0) goto fail_done;
    atomic_init(&w->generation, 0);
    atomic_init(&w->pending, 0);
    atomic_init(&w->stop, 0);
    return w;
fail_done:
    pthread_cond_destroy(&w->wake);
fail_wake:
    pthread_mutex_destroy(&w->lock);
fail_lock:
    free(w);
    return NULL;
}

void bert_workers_free(bert_workers *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->lock);
    atomic_store(&w->stop, 1);
    pthread_cond_broadcast(&w->wake);
    pthread_mutex_unlock(&w->lock);
    for (int i = 0; i < w->started; i++) pthread_join(w->threads[i], NULL);
    pthread_cond_destroy(&w->done);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

/* Makes at least `n` workers run; 0 on success. */
static int start_workers(bert_workers *w, int n)
{
    if (n > MAX_WORKERS) n = MAX_WORKERS;
    while (w->started < n && !w->failed) {
        worker_arg *arg = &w->args[w->started];
        arg->pool = w;
        arg->index = w->started + 1;
        arg->first = atomic_load(&w->generation);
        if (pthread_create(&w->threads[w->started], NULL, worker_main, arg) != 0) {
            w->failed = 1;
            break;
        }
        w->started++;
    }
    return w->started >= n ? 0 : -1;
}

void bert_workers_run(bert_workers *w, int parts, bert_work_fn fn, void *ctx)
{
    if (parts > MAX_WORKERS + 1) parts = MAX_WORKERS + 1;
    if (!w || parts < 2 || start_workers(w, parts - 1) != 0) {
        for (int p = 0; p < parts; p++) fn(ctx, p, parts);
        return;
    }
    w->fn = fn;
    w->ctx = ctx;
    w->parts = parts;
    /* Every started worker answers every generation, even without a part. */
    atomic_store_explicit(&w->pending, w->started, memory_order_relaxed);
    pthread_mutex_lock(&w->lock);
    atomic_fetch_add_explicit(&w->generation, 1, memory_order_release);
    pthread_cond_broadcast(&w->wake);
    pthread_mutex_unlock(&w->lock);

    fn(ctx, 0, parts);

    for (int i = 0; i < SPIN_ROUNDS && atomic_load_explicit(&w->pending, memory_order_acquire) > 0; i++)
        cpu_relax();
    if (atomic_load_explicit(&w->pending, memory_order_acquire) > 0) {
        pthread_mutex_lock(&w->lock);
        while (atomic_load_explicit(&w->pending, memory_order_acquire) > 0)
            pthread_cond_wait(&w->done, &w->lock);
        pthread_mutex_unlock(&w->lock);
    }
}

int bert_workers_started(const bert_workers *w)
{
    return w ? w->started : 0;
}
