/*
 * test.h - the test harness shared by tests/test_*.c.
 *
 * Each suite file defines `void suite_NAME(void)` and lists it in
 * test_main.c.  A suite opens cases with t_case() and checks with T_CHECK();
 * a case passes when it made at least one check and none failed: a case that
 * makes no check fails, since it could never have failed otherwise (the
 * `harness` suite shows it).  The runner ends with the line
 * "N passed, N failed, N skipped".  Paths are relative to the project root, where
 * the runner is started.
 */
#ifndef BERT_TEST_H
#define BERT_TEST_H

#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>

/* 1 in a build under AddressSanitizer or ThreadSanitizer (gcc or clang),
 * where suites run fewer or lighter cases and allow their allocators' slack. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* 1 when the environment variable BERT_TEST_LIGHT is set and not empty:
 * for runs under emulation (qemu, 30 to 120 times slower), where the
 * suites that take minutes check fewer texts, lines and shapes. */
int t_light(void);

/* Fewer cases: under the sanitizers or BERT_TEST_LIGHT. */
#define T_LIGHT (SANITIZED || t_light())

/* Starts a named case; the previous case of the suite is tallied. */
void t_case(const char *name);

/* Records a failed check with a printf-style message when `ok` is 0.
 * Returns ok, so tests can write `if (!T_CHECK(...)) return;`. */
int t_check(int ok, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define T_CHECK(cond, ...) t_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

/* Marks the current case as skipped (a needed file is absent), with a reason;
 * a check that failed before still fails the case. */
void t_skip(const char *reason);

/* A fresh in-memory connection with the extension registered. */
sqlite3 *t_open(void);

/* Sets (value NULL: unsets) the environment variable `name` and returns
 * its previous value (malloc'd, NULL when unset), which t_restore_env puts
 * back: for the variables the extension reads when a model loads. */
char *t_setenv(const char *name, const char *value);
void t_restore_env(const char *name, char *saved);

/* A fresh reading of the model directory `dir` (ext/base/model_files.h),
 * for the loaders the tests call directly; freed when the case ends. */
struct bert_model_files *t_dir(const char *dir);

/* Runs `sql` (with optional text parameters ?1, ?2 ... from the NULL-ended
 * list) and returns the first column of the first row as a malloc'd string:
 * the value as text, "NULL" for NULL, or "ERROR: <message>" on error. */
char *t_query(sqlite3 *db, const char *sql, ...);

/* Runs `sql`, returns the first column of the first row as a double (NAN on
 * error or no row). */
double t_query_double(sqlite3 *db, const char *sql, ...);

/* Checks that `sql` (with one optional text parameter, NULL for none) gives
 * exactly `expected`. */
void t_expect(sqlite3 *db, const char *sql, const char *param, const char *expected);

/* Checks that `sql` fails with a message holding each of the NULL-ended
 * fragments that follow. */
void t_expect_error(sqlite3 *db, const char *sql, const char *param, ...);
void t_expect_errorv(sqlite3 *db, const char *sql, const char *param, va_list fragments);

/* Reads a whole file; NULL when it cannot. *len may be NULL. */
char *t_read_file(const char *path, size_t *len);

/* How many times the code linked into the runner (the extension's sources,
 * not SQLite or libc themselves) has called malloc, calloc, realloc, strdup
 * or strndup so far. */
long t_allocations(void);

/* Makes allocation number `number` (as t_allocations counts them) return
 * NULL, once; -1 stops it.  The runner's own allocations count too, so arm
 * it only around calls into SQLite and the extension. */
void t_fail_allocation(long number);

/* Runs fn(arg) and returns how many user-space instructions the calling
 * thread retired meanwhile: a count of work that, unlike time, does not
 * depend on the machine's load.  -1 when the kernel does not count them for
 * us (perf_event_paranoid above 2, some containers, valgrind). */
long long t_instructions(void (*fn)(void *), void *arg);

/* Checks that build/models/NAME/model.safetensors is the file a golden
 * manifest was made from: its size and the checksum the golden scripts
 * record (make_goldens.py's checksum(): the little-endian 64-bit words, the
 * last padded with zeros, times 2i+1, summed mod 2^64, as 16 hex digits).
 * Returns 1 when it is; else the case fails with what to rerun. */
int t_golden_model_file(const char *name, long long want_bytes, const char *want_checksum);

/* A fresh connection with the extension and sqlite-vec's ./vec0.so loaded,
 * or NULL (and the case skipped) when ./vec0.so is absent (test_vec.c). */
sqlite3 *t_open_with_vec(void);

/* 1 when the path exists. */
int t_exists(const char *path);

#endif
