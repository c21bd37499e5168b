/*
 * test_robustness_kit.c - see robustness.h: the queries and model files the
 * robustness checks share.
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

/* ---- queries ------------------------------------------------------------- */

int rb_starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Runs `sql` with one optional text parameter (NULL: none). */
char *rb_query(sqlite3 *db, const char *sql, const char *param)
{
    return t_query(db, sql, param, (const char *)NULL);
}

/* Resident and peak resident memory, address space: /proc/self/status
 * fields in KiB (Linux), -1 when unknown. */
long rb_status_kib(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long v = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0 && line[n] == ':') { v = atol(line + n + 1); break; }
    fclose(f);
    return v;
}

/* Runs `sql` in a child process that SIGALRM stops after `seconds`, so that
 * a call that hangs, or grows until the machine runs out of memory, fails
 * its case instead of the whole suite.  With grow_mib > 0 the child's
 * address space may grow by that much only (not under sanitizers, whose
 * shadow memory needs more).  The first column of the first row goes to
 * out, as rb_query() gives it; -1 when the child did not finish. */
int rb_query_in_child(sqlite3 *db, const char *sql, const char *param, unsigned seconds,
                          long grow_mib, char *out, size_t cap)
{
    int fds[2];
    out[0] = '\0';
    if (pipe(fds) != 0) return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        alarm(seconds);
        long vm = rb_status_kib("VmSize");
        if (grow_mib > 0 && !SANITIZED && vm > 0) {
            struct rlimit rl = {(rlim_t)(vm + grow_mib * 1024) * 1024, (rlim_t)(vm + grow_mib * 1024) * 1024};
            setrlimit(RLIMIT_AS, &rl);
        }
        char *r = rb_query(db, sql, param);
        size_t n = strlen(r);
        int ok = write(fds[1], r, n) == (ssize_t)n;
        _exit(ok ? 0 : 1);   /* no exit handlers: they belong to the parent */
    }
    close(fds[1]);
    size_t n = 0;
    char sink[4096];
    for (ssize_t got; (got = read(fds[0], n + 1 < cap ? out + n : sink,
                                  n + 1 < cap ? cap - 1 - n : sizeof sink)) > 0;)
        if (n + 1 < cap) n += (size_t)got;
    out[n] = '\0';
    close(fds[0]);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return -1;
    if (WIFSIGNALED(status)) {
        snprintf(out, cap, "killed by signal %d%s", WTERMSIG(status),
                 WTERMSIG(status) == SIGALRM ? " (it did not finish in time)" : "");
        return -1;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* The connection still computes after whatever happened on it. */
void rb_expect_alive(sqlite3 *db)
{
    t_expect(db, "SELECT length(bert_embed('still working', 'good')) || ' ' || "
               "json_array_length(bert_tokenize('still working', 'good'))", NULL, "512 4");
}

/* ---- files --------------------------------------------------------------- */

void rb_write_file(const char *path, const void *data, size_t len)
{
    remove(path);   /* a link to the good model's weights is replaced, not written through */
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
}

void rb_write_text(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    rb_write_file(path, text, strlen(text));
}

void rb_copy_file(const char *from, const char *to)
{
    size_t len;
    char *data = t_read_file(from, &len);
    if (!data) { fprintf(stderr, "cannot read %s\n", from); exit(2); }
    rb_write_file(to, data, len);
    free(data);
}

/* ROOT/name holding config.json, vocab.txt and tokenizer_config.json of the
 * good model, and a link to its weights (bert_load checks that they are
 * there), and nothing else: what an earlier run left is removed.  A case
 * about the weights writes its own (write_file replaces the link). */
void rb_model_dir(char *dir, size_t cap, const char *name)
{
    mkdir("build", 0755);
    mkdir(ROOT, 0755);
    snprintf(dir, cap, ROOT "/%s", name);
    mkdir(dir, 0755);
    static const char *const stale[] = {"model.safetensors", "tokenizer.json", "modules.json",
                                        "sentence_bert_config.json", "1_Pooling/config.json",
                                        "1_Pooling", "vocab.txt", "config.json", "tokenizer_config.json"};
    char path[512];
    for (size_t i = 0; i < sizeof stale / sizeof *stale; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, stale[i]);
        remove(path);   /* files and empty directories alike */
    }
    static const char *const files[] = {"config.json", "vocab.txt", "tokenizer_config.json"};
    char from[512];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(from, sizeof from, GOOD "/%s", files[i]);
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        rb_copy_file(from, path);
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (symlink("../../models/bert-plain-f32/model.safetensors", path) != 0) {
        fprintf(stderr, "cannot link %s\n", path);
        exit(2);
    }
}

/* The good model's weights, read once. */

int rb_read_image(st_image *im)
{
    im->bytes = (unsigned char *)t_read_file(GOOD "/model.safetensors", &im->len);
    if (!im->bytes || im->len < 8) return 0;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | im->bytes[i];
    im->header_len = (size_t)n;
    return n < im->len - 8;
}

/* Writes dir/model.safetensors: the length field `claimed`, `header`, and
 * the data; the file is cut after `keep` bytes when keep is not SIZE_MAX. */
void rb_write_st(const char *dir, uint64_t claimed, const char *header, size_t header_len,
                     const unsigned char *data, size_t data_len, size_t keep)
{
    size_t total = 8 + header_len + data_len;
    unsigned char *buf = malloc(total);
    if (!buf) { fprintf(stderr, "out of memory\n"); exit(2); }
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(claimed >> (8 * i));
    memcpy(buf + 8, header, header_len);
    memcpy(buf + 8 + header_len, data, data_len);
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    rb_write_file(path, buf, keep < total ? keep : total);
    free(buf);
}

/* Writes the good weights with the header replaced by the value of the SQL
 * expression `expr`, in which ?1 is the original header.  The new header is
 * padded with spaces to the old length (or to a multiple of 8), so the data
 * keeps its alignment. */
int rb_write_edited_st(sqlite3 *db, const char *dir, const st_image *im, const char *expr)
{
    char *old = malloc(im->header_len + 1);
    if (!old) exit(2);
    memcpy(old, im->bytes + 8, im->header_len);
    old[im->header_len] = '\0';
    char sql[2048];
    snprintf(sql, sizeof sql, "SELECT %s", expr);
    char *header = rb_query(db, sql, old);
    free(old);
    if (!T_CHECK(!rb_starts_with(header, "ERROR") && strcmp(header, "NULL") != 0,
                 "editing the header with %s: %s", expr, header)) {
        free(header);
        return 0;
    }
    size_t n = strlen(header);
    size_t padded = n <= im->header_len ? im->header_len : (n + 7) / 8 * 8;
    char *text = malloc(padded);
    if (!text) exit(2);
    memcpy(text, header, n);
    memset(text + n, ' ', padded - n);
    const unsigned char *data = im->bytes + 8 + im->header_len;
    rb_write_st(dir, padded, text, padded, data, im->len - 8 - im->header_len, SIZE_MAX);
    free(text);
    free(header);
    return 1;
}


/* Registers `dir` as `name` on db, expecting bert_load to succeed. */
int rb_load_ok(sqlite3 *db, const char *name, const char *dir)
{
    char sql[640];
    snprintf(sql, sizeof sql, "SELECT bert_load('%s', '%s')", name, dir);
    char *got = rb_query(db, sql, NULL);
    int ok = T_CHECK(strcmp(got, name) == 0, "%s gave %s", sql, got);
    free(got);
    return ok;
}

/* A fault of the weights' files: bert_load refuses the directory with the
 * fragments (it reads every safetensors header) and registers nothing. */
void rb_expect_weights_error(sqlite3 *db, const char *name, const char *dir, const char *f1, const char *f2)
{
    char sql[640];
    snprintf(sql, sizeof sql, "SELECT bert_load('%s', '%s')", name, dir);
    t_expect_error(db, sql, NULL, f1, f2, (const char *)NULL);
    t_expect(db, "SELECT count(*) FROM bert_models WHERE name = ?1", name, "0");
    rb_expect_alive(db);
}

/* What only loading the weights finds (their shapes against config.json):
 * the first call that needs the weights fails with the fragments, and so
 * does the next one (nothing half-loaded is kept); the registration goes. */
void rb_expect_load_time_error(sqlite3 *db, const char *name, const char *dir, const char *f1, const char *f2)
{
    if (!rb_load_ok(db, name, dir)) return;
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT bert_embed('hello world', '%s')", name);
    t_expect_error(db, sql, NULL, f1, f2, (const char *)NULL);
    t_expect_error(db, sql, NULL, f1, f2, (const char *)NULL);
    snprintf(sql, sizeof sql, "SELECT bert_unload('%s')", name);
    t_expect(db, sql, NULL, "1");
    rb_expect_alive(db);
}
