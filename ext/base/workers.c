/*
 * workers.c - helper threads for one connection's matrix products.
 *
 * A job is cut into more chunks than there are threads, and every thread,
 * the caller included, takes the next chunk as soon as it is free.  On an
 * idle machine that splits the work evenly; on a busy one a helper that the
 * scheduler holds back simply takes fewer chunks (or none) and the caller
 * does the rest, instead of waiting for a fixed share that cannot start.
 * The caller only ever waits for chunks that a running helper has begun.
 *
 * All of a job's state that a helper may read is one 64-bit word, `claim`:
 * the job's number, its chunk count and the next chunk.  A helper takes a
 * chunk by a compare-and-swap on that word, which fails if the job has
 * changed, so a helper that wakes late can never run a chunk of a job that
 * is over; only after a successful claim does it read fn and ctx, which
 * the caller wrote before publishing the job and cannot change before the
 * chunk is counted done.
 *
 * Waiting spins for a bounded time (jobs of one forward pass follow each
 * other every few microseconds, and a sleeping thread takes tens of them
 * to wake), then sleeps on a condition variable.  The spin is short on
 * purpose: a helper that spins on a core another process wants uses up its
 * share of that core and is then descheduled just when work arrives, while
 * a helper that sleeps is woken promptly.
 */
#include "workers.h"

#include <cblas.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* Threads beyond the caller. */
#define MAX_WORKERS 63
/* How long a helper polls for the next job before it sleeps, and how long
 * the caller polls for chunks that helpers have begun. */
#define HELPER_SPIN_NS 100000
#define CALLER_SPIN_NS 200000
/* Measured progress: a job whose caller, done with its own chunks, waited
 * longer than STALL_NS plus two of its own chunks' time for a helper's
 * (which a helper that its core's scheduler preempted keeps unfinished),
 * or ABSENT_JOBS jobs in a row that no
 * helper took part in, say that the helpers' cores are taken.  The caller
 * then runs alone for MIN_SOLO_NS, twice as long after every further sign
 * up to MAX_SOLO_NS, and tries its helpers again; a job they share well
 * resets the stretch. */
#define STALL_NS 50000
#define ABSENT_JOBS 4
#define MIN_SOLO_NS 1000000LL
#define MAX_SOLO_NS 256000000LL

typedef struct {
    bert_workers *pool;
    uint32_t first; /* the job number before its first job */
} worker_arg;

struct bert_workers {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* a new job, or stop */
    pthread_cond_t done; /* every chunk of the job is done */
    pthread_t threads[MAX_WORKERS];
    worker_arg args[MAX_WORKERS];
    int started;
    int failed; /* a thread could not be started: run on the caller only */

    bert_work_fn fn;
    void *ctx;
    uint32_t job;          /* the caller's count of jobs (caller only) */
    long long solo_until;  /* runs jobs on the caller alone until then (caller only) */
    long long backoff;     /* the next such stretch, ns (caller only) */
    int absent;            /* jobs in a row that no helper took part in (caller only) */
    atomic_uint published; /* the latest job's number: what helpers wait on */
    _Atomic uint64_t claim; /* job << 32 | chunks << 16 | next chunk */
    atomic_int finished;   /* chunks of the current job done */
    atomic_int sleepers;   /* helpers in pthread_cond_wait(wake) */
    atomic_int caller_sleeps;
    atomic_int stop;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static uint64_t claim_word(uint32_t job, int chunks, int next)
{
    return (uint64_t)job << 32 | (uint64_t)(chunks & 0xffff) << 16 | (uint64_t)(next & 0xffff);
}

/* Runs chunks of job `job` until none is left; returns how many it ran. */
static int take_chunks(bert_workers *w, uint32_t job)
{
    int ran = 0;
    uint64_t v = atomic_load_explicit(&w->claim, memory_order_acquire);
    for (;;) {
        int chunks = (int)(v >> 16 & 0xffff), next = (int)(v & 0xffff);
        if ((uint32_t)(v >> 32) != job || next >= chunks) return ran;
        if (!atomic_compare_exchange_weak_explicit(&w->claim, &v, v + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue; /* v now holds the current word */
        w->fn(w->ctx, next, chunks);
        ran++;
        if (atomic_fetch_add(&w->finished, 1) + 1 == chunks && atomic_load(&w->caller_sleeps)) {
            pthread_mutex_lock(&w->lock);
            pthread_cond_signal(&w->done);
            pthread_mutex_unlock(&w->lock);
        }
        v = atomic_load_explicit(&w->claim, memory_order_acquire);
    }
}

/* Waits for a job after `seen`; returns its number (or `seen` on stop). */
static uint32_t next_job(bert_workers *w, uint32_t seen)
{
    long long until = 0;
    for (int i = 0;; i++) {
        uint32_t g = atomic_load_explicit(&w->published, memory_order_acquire);
        if (g != seen || atomic_load_explicit(&w->stop, memory_order_relaxed)) return g;
        cpu_relax();
        if (i % 64 != 63) continue;
        /* A thread waiting to run on this core (the caller itself, on a
         * crowded machine) goes first. */
        sched_yield();
        long long t = now_ns();
        if (!until) until = t + HELPER_SPIN_NS;
        else if (t > until) break;
    }
    pthread_mutex_lock(&w->lock);
    atomic_fetch_add(&w->sleepers, 1);
    uint32_t g;
    while ((g = atomic_load(&w->published)) == seen && !atomic_load(&w->stop))
        pthread_cond_wait(&w->wake, &w->lock);
    atomic_fetch_sub(&w->sleepers, 1);
    pthread_mutex_unlock(&w->lock);
    return g;
}

static void *worker_main(void *p)
{
    worker_arg *arg = p;
    bert_workers *w = arg->pool;
    /* Not the current job: the first job may be published before this
     * thread gets to run. */
    uint32_t seen = arg->first;
    for (;;) {
        seen = next_job(w, seen);
        if (atomic_load(&w->stop)) return NULL;
        take_chunks(w, seen);
    }
}

bert_workers *bert_workers_new(void)
{
    bert_workers *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    if (pthread_mutex_init(&w->lock, NULL) != 0) goto fail_lock;
    if (pthread_cond_init(&w->wake, NULL) != 0) goto fail_wake;
    if (pthread_cond_init(&w->done, NULL) != 0) goto fail_done;
    w->backoff = MIN_SOLO_NS;
    atomic_init(&w->published, 0);
    atomic_init(&w->claim, 0);
    atomic_init(&w->finished, 0);
    atomic_init(&w->sleepers, 0);
    atomic_init(&w->caller_sleeps, 0);
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

/* Makes at least `n` helpers run; 0 on success. */
static int start_workers(bert_workers *w, int n)
{
    if (n > MAX_WORKERS) n = MAX_WORKERS;
    while (w->started < n && !w->failed) {
        worker_arg *arg = &w->args[w->started];
        arg->pool = w;
        arg->first = atomic_load(&w->published);
        if (pthread_create(&w->threads[w->started], NULL, worker_main, arg) != 0) {
            w->failed = 1;
            break;
        }
        w->started++;
    }
    return w->started >= n ? 0 : -1;
}

static void run_shared(bert_workers *w, int chunks, bert_work_fn fn, void *ctx);

void bert_workers_run(bert_workers *w, int threads, int chunks, bert_work_fn fn, void *ctx)
{
    if (chunks > 0xffff) chunks = 0xffff;
    if (threads > chunks) threads = chunks;
    if (w && threads >= 2 && (!w->solo_until || now_ns() > w->solo_until) &&
        start_workers(w, threads - 1) == 0) {
        run_shared(w, chunks, fn, ctx);
        return;
    }
    for (int c = 0; c < chunks; c++) fn(ctx, c, chunks);
}

/* One job shared with the helpers, and what it says about their cores. */
static void run_shared(bert_workers *w, int chunks, bert_work_fn fn, void *ctx)
{
    /* Every chunk of the previous job is done, so no helper reads fn or ctx. */
    w->fn = fn;
    w->ctx = ctx;
    uint32_t job = ++w->job;
    atomic_store_explicit(&w->finished, 0, memory_order_relaxed);
    atomic_store_explicit(&w->claim, claim_word(job, chunks, 0), memory_order_release);
    /* Sequentially consistent: either a helper going to sleep sees the new
     * job, or this sees it asleep and wakes it. */
    atomic_store(&w->published, job);
    if (atomic_load(&w->sleepers) > 0) {
        pthread_mutex_lock(&w->lock);
        pthread_cond_broadcast(&w->wake);
        pthread_mutex_unlock(&w->lock);
    }

    long long started = now_ns();
    int own = take_chunks(w, job);
    long long own_end = now_ns();

    /* What is left are chunks that helpers are running. */
    long long until = 0, waited_from = 0;
    for (int i = 0; atomic_load_explicit(&w->finished, memory_order_acquire) < chunks; i++) {
        cpu_relax();
        if (i % 64 != 63) continue;
        long long t = now_ns();
        if (!until) until = (waited_from = t) + CALLER_SPIN_NS;
        else if (t > until) break;
    }
    if (atomic_load_explicit(&w->finished, memory_order_acquire) < chunks) {
        pthread_mutex_lock(&w->lock);
        atomic_store(&w->caller_sleeps, 1);
        while (atomic_load(&w->finished) < chunks) pthread_cond_wait(&w->done, &w->lock);
        atomic_store(&w->caller_sleeps, 0);
        pthread_mutex_unlock(&w->lock);
    }
    /* A helper's last chunk may have begun just before the caller ran out:
     * waiting about one chunk's time is normal, more is a stall. */
    long long end = waited_from ? now_ns() : 0;
    long long chunk_ns = own > 0 ? (own_end - started) / own : 0;
    int stalled = own > 0 && waited_from && end - own_end > STALL_NS + 2 * chunk_ns;
    w->absent = own == chunks ? w->absent + 1 : 0;
    w->solo_until = 0;
    if (stalled || w->absent >= ABSENT_JOBS) {
        w->solo_until = (end ? end : now_ns()) + w->backoff;
        w->backoff = w->backoff * 2 < MAX_SOLO_NS ? w->backoff * 2 : MAX_SOLO_NS;
        w->absent = 0;
    } else if (own < chunks) {
        w->backoff = MIN_SOLO_NS;
    }
}

/* Multiply-adds a thread must have for a product to be split: about 2 us
 * of work, which pays for waking a helper and moving the output between
 * caches.  One 13-token sentence splits every projection of MiniLM (384
 * wide) and of the demo model (256 wide) over two threads. */
#define MIN_WORK (384 * 1024)

typedef struct {
    bert_span_fn fn;
    void *ctx;
    int n, rows;
    int by_input; /* spans of input rows (else of weight rows) */
    int step;     /* rows a span */
} split_job;

static void split_chunk(void *ctx, int chunk, int chunks)
{
    (void)chunks;
    const split_job *s = ctx;
    int length = s->by_input ? s->n : s->rows;
    int c0 = chunk * s->step, c1 = c0 + s->step < length ? c0 + s->step : length;
    if (c1 <= c0) return;
    if (s->by_input) s->fn(s->ctx, c0, c1, 0, s->rows);
    else s->fn(s->ctx, 0, s->n, c0, c1);
}

void bert_workers_split(bert_workers *w, int threads, const bert_split *split, bert_span_fn fn, void *ctx)
{
    int by_input = split->by == BERT_SPAN_INPUT_ROWS, least = split->least;
    int length = by_input ? split->n : split->rows;
    long long work = (long long)split->n * split->rows * split->cols;
    if (threads > work / MIN_WORK) threads = (int)(work / MIN_WORK);
    if (!w || threads < 2 || length < 2 * least) {
        fn(ctx, 0, split->n, 0, split->rows);
        return;
    }
    /* Spans of equal length, the same number for every thread (up to
     * four each): 450 rows on two threads are two spans of 225, not three
     * of 128 and one of 66, which would leave one thread a third idle. */
    int per_thread = length / (threads * least);
    per_thread = per_thread < 1 ? 1 : per_thread > 4 ? 4 : per_thread;
    int step = (length + threads * per_thread - 1) / (threads * per_thread);
    if (step < least) step = least;
    if (split->multiple) step = (step + least - 1) / least * least;
    split_job s = {fn, ctx, split->n, split->rows, by_input, step};
    bert_workers_run(w, threads, (length + step - 1) / step, split_chunk, &s);
}

int bert_workers_started(const bert_workers *w)
{
    return w ? w->started : 0;
}

/* OpenBLAS's own count (OPENBLAS_NUM_THREADS, else every core), read
 * before OpenBLAS is set to one thread: the extension threads its products
 * itself from then on, through the chunks above. */
static int default_threads = 1;
static pthread_once_t threads_once = PTHREAD_ONCE_INIT;

static void take_over_threads(void)
{
    default_threads = openblas_get_num_threads();
    if (default_threads < 1) default_threads = 1;
    if (default_threads > MAX_WORKERS + 1) default_threads = MAX_WORKERS + 1;
    openblas_set_num_threads(1);
}

int bert_threads_default(void)
{
    pthread_once(&threads_once, take_over_threads);
    return default_threads;
}
