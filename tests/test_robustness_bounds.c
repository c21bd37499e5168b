/*
 * test_robustness_bounds.c - resource bounds: a 10 MB text costs memory in
 * proportion to the text only (the encoder sees at most max_length tokens),
 * and sqlite3_interrupt() stops a long bert_embed_each.
 */
#include "robustness.h"

#include <pthread.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- resource bounds ------------------------------------------------------------ */


/* Lets VmHWM measure from now on (Linux >= 4.0).  Free heap memory is given
 * back first, so that earlier calls' leftovers cannot hide this one's. */
static int reset_peak(void)
{
#ifdef __GLIBC__
    malloc_trim(0);
#endif
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return 0;
    int ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

/* 10 MB of English with a mask near the start. */
static char *big_text(size_t *len)
{
    static const char head[] = "Paris is the [MASK] of France. ";
    static const char filler[] = "The quick brown fox jumps over the lazy dog, again and again. ";
    const size_t want = 10u << 20;
    char *s = malloc(want + 1);
    if (!s) exit(2);
    size_t n = 0;
    memcpy(s, head, sizeof head - 1);
    n = sizeof head - 1;
    while (n + sizeof filler - 1 <= want) {
        memcpy(s + n, filler, sizeof filler - 1);
        n += sizeof filler - 1;
    }
    s[n] = '\0';
    *len = n;
    return s;
}

void robustness_huge_text(sqlite3 *db)
{
    size_t len;
    char *text = big_text(&len);
    /* `texts`: how many copies of the text the call holds at once. */
    static const struct { const char *sql, *expected; int texts; } calls[] = {
        {"SELECT length(bert_embed(?1, 'good'))", "512", 1},
        {"SELECT json_array_length(bert_tokenize(?1, 'good'))", "512", 1},
        {"SELECT json_array_length(bert_token_ids(?1, 'good'))", "512", 1},
        {"SELECT json_array_length(bert_fill_mask(?1, 3, 'mlm'))", "3", 1},
        {"SELECT typeof(bert_next_sentence(?1, ?1, 'pre'))", "real", 2},
        {"SELECT typeof(bert_similarity(?1, ?1, 'good'))", "real", 1},
        {"SELECT count(*) FROM bert_embed_each(json_array(?1, 'short', ?1), 'good')", "3", 2},
    };
    int can_measure = reset_peak() && rb_status_kib("VmHWM") > 0;
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) {
        char label[200];
        snprintf(label, sizeof label, "a 10 MB text is cut to max_length: %s", calls[i].sql);
        t_case(label);
        can_measure = can_measure && reset_peak();
        long before = rb_status_kib("VmRSS");
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        t_expect(db, calls[i].sql, text, calls[i].expected);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        long peak = rb_status_kib("VmHWM");
        double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        /* SQLite's copies of the text and the token ids of all of it are the
         * transient cost; anything that grew with the text's tokens in the
         * encoder (activations, attention) would be far above this. */
        long allowed_kib = (long)(len >> 10) * calls[i].texts * (SANITIZED ? 96 : 12) + 64 * 1024;
        if (can_measure && before > 0 && peak > 0) {
            printf("  %zu bytes: %.2f s, peak +%ld KiB\n", len, secs, peak - before);
            T_CHECK(peak - before <= allowed_kib, "the call grew the process by %ld KiB for a text of %zu KiB "
                    "(allowed %ld)", peak - before, len >> 10, allowed_kib);
        }
    }
    free(text);

    t_case("a 10 MB word, and 10 MB of combining marks, are linear work");
    t_expect(db, "SELECT bert_tokenize(hex(zeroblob(5242880)), 'good')", NULL, "[\"[CLS]\",\"[UNK]\",\"[SEP]\"]");
    t_expect(db, "SELECT length(bert_embed('a' || replace(hex(zeroblob(2621440)), '00', char(769, 769)), 'good'))",
           NULL, "512");
    rb_expect_alive(db);
}

typedef struct {
    sqlite3 *db;
    long delay_ms;
} interrupter;

static void *interrupt_later(void *p)
{
    const interrupter *it = p;
    struct timespec ts = {it->delay_ms / 1000, (it->delay_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    sqlite3_interrupt(it->db);
    return NULL;
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* How many times the model `good` has run its encoder on this connection. */
static long encoder_calls(sqlite3 *db)
{
    char *got = rb_query(db, "SELECT encoder_calls FROM bert_models WHERE name = 'good'", NULL);
    long calls = got ? atol(got) : -1;
    free(got);
    return calls;
}

/* Steps `sql` (one text parameter) to the end; returns the last result code. */
static int run_to_end(sqlite3 *db, const char *sql, const char *param)
{
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK) return sqlite3_errcode(db);
    sqlite3_bind_text(stmt, 1, param, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {}
    sqlite3_finalize(stmt);
    return rc;
}

void robustness_interrupt(sqlite3 *db)
{
    t_case("sqlite3_interrupt from another thread stops a long bert_embed_each");
    char sql[512];
    /* One chunk of texts (as bert_embed_each embeds them) takes `one` seconds. */
    snprintf(sql, sizeof sql, TEXTS_SQL, 256);
    char *chunk = rb_query(db, sql, NULL);
    struct timespec t0;
    long calls0 = encoder_calls(db);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = run_to_end(db, "SELECT key, embedding FROM bert_embed_each(?1, 'good')", chunk);
    double one = seconds_since(&t0);
    long calls_one = encoder_calls(db) - calls0;
    free(chunk);
    if (!T_CHECK(rc == SQLITE_DONE, "embedding one chunk gave %d", rc)) return;

    /* Forty chunks would take 40 x one; the interrupt comes after about 3. */
    snprintf(sql, sizeof sql, TEXTS_SQL, 40 * 256);
    char *many = rb_query(db, sql, NULL);
    interrupter it = {db, (long)(3000 * one) + 5};
    pthread_t thread;
    if (!T_CHECK(pthread_create(&thread, NULL, interrupt_later, &it) == 0, "cannot start a thread")) {
        free(many);
        return;
    }
    long calls1 = encoder_calls(db);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = run_to_end(db, "SELECT key, embedding FROM bert_embed_each(?1, 'good')", many);
    double took = seconds_since(&t0);
    long calls_many = encoder_calls(db) - calls1;
    pthread_join(thread, NULL);
    free(many);
    printf("  one chunk %.3f s, %ld encoder runs; interrupted after %ld ms: stopped after %.3f s and %ld runs\n", one,
           calls_one, it.delay_ms, took, calls_many);
    T_CHECK(rc == SQLITE_INTERRUPT, "bert_embed_each gave %d (%s), not SQLITE_INTERRUPT", rc, sqlite3_errstr(rc));
    /* The work done, not the time taken, shows that it stopped early: the
     * whole input needs 40 chunks' worth of encoder runs. */
    T_CHECK(calls_one > 0 && calls_many < 40 * calls_one, "it ran the encoder %ld times; the whole input needs %ld",
            calls_many, 40 * calls_one);

    t_case("the connection works after an interrupt");
    rb_expect_alive(db);
    t_expect(db, "SELECT count(*) FROM bert_embed_each('[\"a\", \"b\"]', 'good')", NULL, "2");
}

