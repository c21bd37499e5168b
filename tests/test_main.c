/*
 * test_main.c - runs every suite and prints "N passed, N failed, N skipped".
 */
#include "test.h"
#include "../ext/base/model_files.h"

#include <linux/perf_event.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int sqlite3_bert_init(sqlite3 *db, char **err, const sqlite3_api_routines *api);

/* The linker sends the runner's allocation calls here (-Wl,--wrap in the
 * Makefile): counted, then passed on. */
static atomic_long allocations;
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
/* The number of the allocation that is to fail, or -1 (t_fail_allocation). */
static atomic_long failing = -1;

/* Counts an allocation; 1 when this one is to fail. */
static int allocation_fails(void)
{
    return atomic_fetch_add(&allocations, 1) == atomic_load(&failing);
}

void *__wrap_malloc(size_t n) { return allocation_fails() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size) { return allocation_fails() ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t n) { return allocation_fails() ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { return allocation_fails() ? NULL : __real_strdup(s); }
char *__wrap_strndup(const char *s, size_t n) { return allocation_fails() ? NULL : __real_strndup(s, n); }

long t_allocations(void)
{
    return atomic_load(&allocations);
}

void t_fail_allocation(long number)
{
    atomic_store(&failing, number);
}

#define SUITES(X) \
    X(harness) \
    X(json) \
    X(tokenizer) \
    X(tok_families) \
    X(offsets) \
    X(chunks) \
    X(golden) \
    X(safetensors) \
    X(config) \
    X(loader) \
    X(precision) \
    X(encoder) \
    X(heads) \
    X(ner_qa) \
    X(families) \
    X(encoders) \
    X(zero_shot) \
    X(model_view) \
    X(sparse) \
    X(colbert) \
    X(kernels) \
    X(steps) \
    X(kernel_choice) \
    X(lowp) \
    X(sql) \
    X(threads) \
    X(robustness) \
    X(oom) \
    X(usability) \
    X(surface) \
    X(examples) \
    X(docs) \
    X(vec) \
    X(hybrid) \
    X(vectors) \
    X(trainer) \
    X(train_sql)

#define DECLARE(name) void suite_##name(void);
SUITES(DECLARE)

static struct case_state {
    const char *suite;
    char name[256];
    int checks;
    int failed_checks;
    int skipped;
    int open;
} current;
static int passed, failed, skipped;

/* What was skipped and why, for the summary at the end (the first few). */
#define MAX_SKIP_NOTES 32
static char skip_notes[MAX_SKIP_NOTES][400];

static int quiet;    /* while the harness tests itself */

/* The readings of model directories t_dir made for the current case. */
#define MAX_CASE_DIRS 4096
static bert_model_files *case_dirs[MAX_CASE_DIRS];
static int n_case_dirs;

/* Seconds on `clock`. */
static double seconds_of(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* When BERT_TEST_TIMES is set, each case's wall-clock and CPU time (all
 * threads) is printed as it ends: to find what makes a slow run (emulation,
 * sanitizers) slow.  Printed only, never checked. */
static double case_started, case_cpu_started;

static void tally(void)
{
    while (n_case_dirs > 0) bert_model_files_free(case_dirs[--n_case_dirs]);
    if (!current.open) return;
    current.open = 0;
    if (!quiet && getenv("BERT_TEST_TIMES"))
        printf("TIME %7.2f s wall %7.2f s cpu %s: %s\n", seconds_of(CLOCK_MONOTONIC) - case_started,
               seconds_of(CLOCK_PROCESS_CPUTIME_ID) - case_cpu_started, current.suite, current.name);
    if (current.failed_checks) {
        failed++;
        if (!quiet) printf("FAIL %s: %s\n", current.suite, current.name);
    } else if (current.skipped) {
        skipped++;
    } else if (current.checks == 0) {
        /* A case that checks nothing cannot fail, so its passing proves nothing. */
        failed++;
        if (!quiet) printf("FAIL %s: %s (the case made no check)\n", current.suite, current.name);
    } else {
        passed++;
    }
}

void t_case(const char *name)
{
    tally();
    snprintf(current.name, sizeof current.name, "%s", name);
    current.checks = 0;
    current.failed_checks = 0;
    current.skipped = 0;
    current.open = 1;
    case_started = seconds_of(CLOCK_MONOTONIC);
    case_cpu_started = seconds_of(CLOCK_PROCESS_CPUTIME_ID);
}

int t_check(int ok, const char *file, int line, const char *fmt, ...)
{
    /* A check before a suite's first case is still tallied, not lost. */
    if (!current.open) t_case("(a check outside any case)");
    current.checks++;
    if (ok) return 1;
    current.failed_checks++;
    if (quiet) return 0;
    printf("  %s:%d [%s] ", file, line, current.name);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    return 0;
}

void t_skip(const char *reason)
{
    current.skipped = 1;
    if (quiet) return;
    printf("SKIP %s: %s (%s)\n", current.suite, current.name, reason);
    if (skipped < MAX_SKIP_NOTES)
        snprintf(skip_notes[skipped], sizeof skip_notes[skipped], "%s: %s (%s)", current.suite, current.name, reason);
}

char *t_setenv(const char *name, const char *value)
{
    const char *was = getenv(name);
    char *saved = was ? strdup(was) : NULL;
    if (was && !saved) {
        fprintf(stderr, "t_setenv: out of memory\n");
        exit(2);
    }
    if (value) setenv(name, value, 1);
    else unsetenv(name);
    return saved;
}

void t_restore_env(const char *name, char *saved)
{
    if (saved) setenv(name, saved, 1);
    else unsetenv(name);
    free(saved);
}

bert_model_files *t_dir(const char *dir)
{
    bert_model_files *f = n_case_dirs < MAX_CASE_DIRS ? bert_model_files_new(dir) : NULL;
    if (!f) {
        fprintf(stderr, "t_dir: out of memory, or more than %d directories in one case\n", MAX_CASE_DIRS);
        exit(2);
    }
    return case_dirs[n_case_dirs++] = f;
}

sqlite3 *t_open(void)
{
    sqlite3 *db = NULL;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) {
        fprintf(stderr, "cannot open an in-memory database\n");
        exit(2);
    }
    char *err = NULL;
    if (sqlite3_bert_init(db, &err, NULL) != SQLITE_OK) {
        fprintf(stderr, "cannot register the extension: %s\n", err ? err : "?");
        exit(2);
    }
    return db;
}

static sqlite3_stmt *prepare_with_args(sqlite3 *db, const char *sql, va_list ap, char **error)
{
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK) {
        *error = sqlite3_mprintf("ERROR: %s", sqlite3_errmsg(db));
        return NULL;
    }
    const char *arg;
    for (int i = 1; (arg = va_arg(ap, const char *)) != NULL; i++)
        sqlite3_bind_text(stmt, i, arg, -1, SQLITE_TRANSIENT);
    return stmt;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (!d) { fprintf(stderr, "out of memory\n"); exit(2); }
    return memcpy(d, s, n);
}

char *t_query(sqlite3 *db, const char *sql, ...)
{
    va_list ap;
    va_start(ap, sql);
    char *error = NULL;
    sqlite3_stmt *stmt = prepare_with_args(db, sql, ap, &error);
    va_end(ap);
    if (!stmt) {
        char *r = dup_str(error);
        sqlite3_free(error);
        return r;
    }
    char *result;
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(stmt, 0);
        result = dup_str(t ? t : "NULL");
    } else if (rc == SQLITE_DONE) {
        result = dup_str("NO ROW");
    } else {
        char *m = sqlite3_mprintf("ERROR: %s", sqlite3_errmsg(db));
        result = dup_str(m);
        sqlite3_free(m);
    }
    sqlite3_finalize(stmt);
    return result;
}

double t_query_double(sqlite3 *db, const char *sql, ...)
{
    va_list ap;
    va_start(ap, sql);
    char *error = NULL;
    sqlite3_stmt *stmt = prepare_with_args(db, sql, ap, &error);
    va_end(ap);
    if (!stmt) { sqlite3_free(error); return NAN; }
    double v = NAN;
    if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_type(stmt, 0) != SQLITE_NULL)
        v = sqlite3_column_double(stmt, 0);
    sqlite3_finalize(stmt);
    return v;
}

void t_expect(sqlite3 *db, const char *sql, const char *param, const char *expected)
{
    char *got = t_query(db, sql, param, (const char *)NULL);
    T_CHECK(strcmp(got, expected) == 0, "%s\n    gave     %.300s\n    expected %s", sql, got, expected);
    free(got);
}

void t_expect_errorv(sqlite3 *db, const char *sql, const char *param, va_list fragments)
{
    char *got = t_query(db, sql, param, (const char *)NULL);
    int ok = strncmp(got, "ERROR: ", 7) == 0;
    const char *fragment;
    while ((fragment = va_arg(fragments, const char *)) != NULL)
        if (!strstr(got, fragment)) ok = 0;
    T_CHECK(ok, "%s\n    gave %.600s", sql, got);
    free(got);
}

void t_expect_error(sqlite3 *db, const char *sql, const char *param, ...)
{
    va_list ap;
    va_start(ap, param);
    t_expect_errorv(db, sql, param, ap);
    va_end(ap);
}

char *t_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        char *p = realloc(buf, cap * 2 + 1);
        if (!p) { free(buf); buf = NULL; break; }
        buf = p;
        cap *= 2;
    }
    fclose(f);
    if (!buf) return NULL;
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

long long t_instructions(void (*fn)(void *), void *arg)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.type = PERF_TYPE_HARDWARE;
    attr.size = sizeof attr;
    attr.config = PERF_COUNT_HW_INSTRUCTIONS;
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    /* this thread, any CPU */
    int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
    if (fd < 0) {
        fn(arg);
        return -1;
    }
    ioctl(fd, PERF_EVENT_IOC_RESET, 0);
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    fn(arg);
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    long long count = -1;
    if (read(fd, &count, sizeof count) != (ssize_t)sizeof count) count = -1;
    close(fd);
    return count;
}

int t_light(void)
{
    const char *v = getenv("BERT_TEST_LIGHT");
    return v && *v;
}

int t_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int file_checksum(const char *path, uint64_t *sum, long long *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    unsigned char chunk[1 << 16];
    uint64_t s = 0, i = 0;
    long long total = 0;
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        total += (long long)n;
        if (n % 8) memset(chunk + n, 0, 8 - n % 8);   /* only the file's last read is short */
        for (size_t k = 0; k < n; k += 8, i++) {
            uint64_t w = 0;
            for (int b = 7; b >= 0; b--) w = (w << 8) | chunk[k + (size_t)b];
            s += w * (2 * i + 1);
        }
    }
    int bad = ferror(f);
    fclose(f);
    *sum = s;
    *size = total;
    return bad ? -1 : 0;
}

int t_golden_model_file(const char *name, long long want_bytes, const char *want_checksum)
{
    char path[512];
    snprintf(path, sizeof path, "build/models/%s/model.safetensors", name);
    uint64_t sum = 0;
    long long size = 0;
    if (!T_CHECK(file_checksum(path, &sum, &size) == 0,
                 "cannot read %s: run tests/tools/make_test_models.sh build/models", path))
        return 0;
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)sum);
    return T_CHECK(size == want_bytes && strcmp(hex, want_checksum ? want_checksum : "") == 0,
                   "%s is not the model the goldens were made from: rerun tests/tools/make_test_models.sh "
                   "build/models, or tests/golden/make_goldens.sh when the generator changed", path);
}

/* ---- the harness tests itself ----------------------------------------------- */

/* Runs `body` as a case of its own, silently, and returns how the harness
 * tallied it: 'p'assed, 'f'ailed or 's'kipped.  The case around the call and
 * the totals are left as they were. */
static char verdict_of(void (*body)(void))
{
    struct case_state outer = current;
    double outer_started = case_started, outer_cpu_started = case_cpu_started;
    int p = passed, f = failed, s = skipped;
    quiet = 1;
    current.open = 0;
    t_case("(a case run by the harness's self-test)");
    body();
    tally();
    char verdict = failed > f ? 'f' : skipped > s ? 's' : passed > p ? 'p' : '?';
    passed = p;
    failed = f;
    skipped = s;
    current = outer;
    case_started = outer_started;
    case_cpu_started = outer_cpu_started;
    quiet = 0;
    return verdict;
}

static void no_check(void) {}
static void one_passing_check(void) { T_CHECK(strlen("abc") == 3, "strlen"); }
static void one_failing_check(void) { T_CHECK(strlen("abc") == 4, "strlen"); }
static void passing_then_failing(void) { one_passing_check(); one_failing_check(); }
static void skip_only(void) { t_skip("nothing to run"); }
static void failing_then_skip(void) { one_failing_check(); skip_only(); }

void suite_harness(void)
{
    t_case("harness: a case that makes no check fails");
    T_CHECK(verdict_of(no_check) == 'f', "an empty case was tallied '%c'", verdict_of(no_check));
    t_case("harness: a case passes with a passing check and fails with a failing one");
    T_CHECK(verdict_of(one_passing_check) == 'p', "a passing check gave '%c'", verdict_of(one_passing_check));
    T_CHECK(verdict_of(one_failing_check) == 'f', "a failing check gave '%c'", verdict_of(one_failing_check));
    T_CHECK(verdict_of(passing_then_failing) == 'f', "a passing then a failing check gave '%c'",
            verdict_of(passing_then_failing));
    t_case("harness: a skipped case is a skip, unless a check failed first");
    T_CHECK(verdict_of(skip_only) == 's', "a skipped case gave '%c'", verdict_of(skip_only));
    T_CHECK(verdict_of(failing_then_skip) == 'f', "a failed check then a skip gave '%c'", verdict_of(failing_then_skip));
}

/* 1 when `name` is one of the suites. */
static int is_suite(const char *name)
{
#define NAMED(suite) if (strcmp(name, #suite) == 0) return 1;
    SUITES(NAMED)
    return 0;
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    /* A line at a time, also into a file: a run stopped by `timeout` still
     * shows the cases it got through. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (only && strcmp(only, "--list") == 0) {
        /* One suite a line, for running them in parallel (.ci/run). */
#define PRINT(suite) printf("%s\n", #suite);
        SUITES(PRINT)
        return 0;
    }
    if (only && !is_suite(only)) {
        /* A misspelt suite must not pass as "0 passed, 0 failed". */
        fprintf(stderr, "run_tests: no suite named '%s'; the suites are:", only);
#define LIST(suite) fprintf(stderr, " " #suite);
        SUITES(LIST)
        fprintf(stderr, "\nrun one with build/run_tests SUITE, or make test SUITE=SUITE (--list: one a line)\n");
        return 2;
    }
    /* A line a suite as it ends, with its counts and time, so that a long
     * run shows where it is. */
#define RUN(name) \
    if (!only || strcmp(only, #name) == 0) { \
        int p0 = passed, f0 = failed, s0 = skipped; \
        double t0 = seconds_of(CLOCK_MONOTONIC); \
        current.suite = #name; \
        suite_##name(); \
        tally(); \
        printf("suite %-13s %3d passed, %d failed, %d skipped  %6.1f s\n", #name, passed - p0, failed - f0, \
               skipped - s0, seconds_of(CLOCK_MONOTONIC) - t0); \
    }
    SUITES(RUN)
    if (skipped) {
        /* A skip is a case that could not run here: say which and why, so
         * that whoever reads the last lines knows what was not checked. */
        printf("skipped, and why (a CPU without the instructions cannot run their kernels; "
               "the other reasons say what to install or set):\n");
        for (int i = 0; i < skipped && i < MAX_SKIP_NOTES; i++) printf("  %s\n", skip_notes[i]);
        if (skipped > MAX_SKIP_NOTES) printf("  and %d more (the SKIP lines above)\n", skipped - MAX_SKIP_NOTES);
    }
    /* The skips always shown, 0 too: the documents promise this line's shape. */
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    sqlite3_shutdown();
    return failed ? 1 : 0;
}
