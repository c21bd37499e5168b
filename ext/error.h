/*
 * error.h - error messages for the SQL user.
 *
 * Every failure in ext/ is reported as a malloc'd message that names the
 * problem and the fix; the glue turns it into the SQL error.
 */
#ifndef BERT_ERROR_H
#define BERT_ERROR_H

/* printf into a new malloc'd string; NULL only when memory ran out. */
char *bert_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
