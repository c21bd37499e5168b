/*
 * test_main.c - runs every suite and prints "N passed, N failed".
 */
#include "test.h"

#include <math.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
void *__wrap_malloc(size_t n) { atomic_fetch_add(&allocations, 1); return __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size) { atomic_fetch_add(&allocations, 1); return __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t n) { atomic_fetch_add(&allocations, 1); return __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { atomic_fetch_add(&allocations, 1); return __real_strdup(s); }
char *__wrap_strndup(const char *s, size_t n) { atomic_fetch_add(&allocations, 1); return __real_strndup(s, n); }

long t_allocations(void)
{
    return atomic_load(&allocations);
}

#define SUITES(X) \
    X(json) \
    X(tokenizer) \
    X(golden) \
    X(model) \
    X(kernels) \
    X(sql) \
    X(threads) \
    X(robustness) \
    X(usability) \
    X(examples) \
    X(vec)

#define DECLARE(name) void suite_##name(void);
SUITES(DECLARE)

static struct {
    const char *suite;
    char name[256];
    int failed_checks;
    int skipped;
    int open;
} current;
static int passed, failed, skipped;

static void tally(void)
{
    if (!current.open) return;
    if (current.skipped) skipped++;
    else if (current.failed_checks) { failed++; printf("FAIL %s: %s\n", current.suite, current.name); }
    else passed++;
    current.open = 0;
}

void t_case(const char *name)
{
    tally();
    snprintf(current.name, sizeof current.name, "%s", name);
    current.failed_checks = 0;
    current.skipped = 0;
    current.open = 1;
}

int t_check(int ok, const char *file, int line, const char *fmt, ...)
{
    if (ok) return 1;
    current.failed_checks++;
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
    printf("SKIP %s: %s (%s)\n", current.suite, current.name, reason);
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

int t_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
#define RUN(name) \
    if (!only || strcmp(only, #name) == 0) { \
        current.suite = #name; \
        suite_##name(); \
        tally(); \
    }
    SUITES(RUN)
    printf("%d passed, %d failed", passed, failed);
    if (skipped) printf(", %d skipped", skipped);
    printf("\n");
    sqlite3_shutdown();
    return failed ? 1 : 0;
}
