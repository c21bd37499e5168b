/*
 * fuzz_util.h - what the fuzz targets share: a scratch directory of their
 * own under build/fuzz/scratch/ (one per process, so that parallel jobs do
 * not step on each other's files), and a loud stop when an invariant breaks.
 *
 * The targets are started from the project root (tests/fuzz/run.sh does so);
 * paths are relative to it.
 */
#ifndef BERT_FUZZ_UTIL_H
#define BERT_FUZZ_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FUZZ_TINY_MODEL "tests/fuzz/tiny_model"
#define FUZZ_VOCAB "tests/fixtures/bert-base-uncased/vocab.txt"

/* An invariant does not hold: report it and let libFuzzer save the input. */
static inline void fuzz_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static inline void fuzz_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}

/* Setup failures are not findings: stop with a message instead of a crash. */
static inline void fuzz_setup_failed(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz setup: %s%s%s (run from the project root after make test)\n", what,
            detail ? ": " : "", detail ? detail : "");
    exit(2);
}

static inline void fuzz_write(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0)
        fuzz_setup_failed("cannot write", path);
}

static inline void fuzz_write_text(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    fuzz_write(path, text, strlen(text));
}

static inline void fuzz_copy(const char *from, const char *dir, const char *name)
{
    FILE *f = fopen(from, "rb");
    if (!f) fuzz_setup_failed("cannot read", from);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += got;
        if (len == cap) {
            char *p = realloc(buf, cap * 2);
            if (!p) { free(buf); buf = NULL; break; }
            buf = p;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) fuzz_setup_failed("out of memory reading", from);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    fuzz_write(path, buf, len);
    free(buf);
}

/* build/fuzz/scratch/NAME.PID/sub, created; written into `dir`. */
static inline void fuzz_scratch(char *dir, size_t cap, const char *name, const char *sub)
{
    mkdir("build", 0755);
    mkdir("build/fuzz", 0755);
    mkdir("build/fuzz/scratch", 0755);
    snprintf(dir, cap, "build/fuzz/scratch/%s.%ld", name, (long)getpid());
    mkdir(dir, 0755);
    if (sub) {
        size_t n = strlen(dir);
        snprintf(dir + n, cap - n, "/%s", sub);
        mkdir(dir, 0755);
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) fuzz_setup_failed("cannot create", dir);
}

/* Reads input bytes front to back; past the end everything reads as zero. */
typedef struct {
    const uint8_t *p;
    size_t left;
} fuzz_reader;

static inline uint8_t fuzz_byte(fuzz_reader *r)
{
    if (!r->left) return 0;
    r->left--;
    return *r->p++;
}

static inline const uint8_t *fuzz_bytes(fuzz_reader *r, size_t *n)
{
    if (*n > r->left) *n = r->left;
    const uint8_t *p = r->p;
    r->p += *n;
    r->left -= *n;
    return p;
}

#endif
