/*
 * error.h - error messages for the SQL user, and the convention every
 * function in ext/ follows for errors and invariants.
 *
 * Return codes.  A function that can fail returns an int: 0 on success, -1
 * on failure.  When it has a second outcome that is not a failure (an
 * optional file that is absent, a kernel this CPU lacks), that outcome is a
 * documented value >= 0 (for example 1 found, 0 absent, -1 error) or an
 * out-parameter, never a second negative code.  A function that returns a
 * pointer returns NULL on failure.  Counts and sizes are returned as
 * themselves and cannot fail.
 *
 * Messages.  A function that can fail for reasons a user must hear takes
 * `char **err` as its last parameter.  It sets *err to NULL on entry; on
 * failure it sets *err to a malloc'd message (from bert_errorf) that names
 * the problem and the fix, and the caller owns it: it frees it, or passes
 * it up unchanged, or wraps it in a new one and frees it.  A failure with
 * *err left NULL means memory ran out (bert_errorf itself could not
 * allocate); the glue reports it as SQLITE_NOMEM.  *err is never set on
 * success.  Lower layers with nothing to tell a user (the kernels, buffers)
 * take no err and say in their header what -1 means.
 *
 * Ownership.  What a function allocates for its caller is freed by the
 * caller with the matching _free function (or free() for strings); on
 * failure a function frees what it took and leaves its out-parameters as
 * its header says (usually NULL or unchanged).
 *
 * Invariants.  Conditions that only a bug in ext/ could break (an index in
 * range, spans in order, a non-NULL argument the caller guarantees) are
 * stated with assert(), which release builds compile out with -DNDEBUG;
 * anything a user, a file or SQL can cause is checked always and reported
 * through *err.
 */
#ifndef BERT_ERROR_H
#define BERT_ERROR_H

/* printf into a new malloc'd string; NULL only when memory ran out. */
char *bert_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
