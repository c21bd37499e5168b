/*
 * test_robustness.c - hostile input through the SQL surface.
 *
 * Every bad argument and every damaged model file must give an SQL error
 * that names the problem (or NULL where the contract says so), and the
 * connection must keep working afterwards.  The damaged models are copies of
 * a generated test model, broken by this file under build/robustness/; the
 * headers of model.safetensors are edited with SQLite's own JSON functions.
 *
 * Also the resource bounds: a 10 MB text costs memory in proportion to the
 * text only (the encoder sees at most max_length tokens), and
 * sqlite3_interrupt() stops a long bert_embed_each.
 */
#include "test.h"

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

#define GOOD "build/models/bert-plain-f32"
#define MLM "build/models/mlm-tied-f32"
#define PRETRAIN "build/models/pretrain-untied-bf16"
#define ROOT "build/robustness"

/* Sanitizers' allocators keep freed memory and add their own: the memory
 * bounds below are wider under them (SANITIZED, test.h). */
/* A JSON array of %d texts of about 25 tokens each. */
#define TEXTS_SQL "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d) " \
                  "SELECT json_group_array('sentence ' || i || ' of many, about a quick brown fox that " \
                  "jumps over the lazy dog and runs far away into the woods') FROM n"

/* ---- queries ------------------------------------------------------------- */

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Runs `sql` with one optional text parameter (NULL: none). */
static char *query(sqlite3 *db, const char *sql, const char *param)
{
    return t_query(db, sql, param, (const char *)NULL);
}

/* Resident and peak resident memory, address space: /proc/self/status
 * fields in KiB (Linux), -1 when unknown. */
static long status_kib(const char *field)
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
 * out, as query() gives it; -1 when the child did not finish. */
static int query_in_child(sqlite3 *db, const char *sql, const char *param, unsigned seconds,
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
        long vm = status_kib("VmSize");
        if (grow_mib > 0 && !SANITIZED && vm > 0) {
            struct rlimit rl = {(rlim_t)(vm + grow_mib * 1024) * 1024, (rlim_t)(vm + grow_mib * 1024) * 1024};
            setrlimit(RLIMIT_AS, &rl);
        }
        char *r = query(db, sql, param);
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
static void expect_alive(sqlite3 *db)
{
    t_expect(db, "SELECT length(bert_embed('still working', 'good')) || ' ' || "
               "json_array_length(bert_tokenize('still working', 'good'))", NULL, "512 4");
}

/* ---- files --------------------------------------------------------------- */

static void write_file(const char *path, const void *data, size_t len)
{
    remove(path);   /* a link to the good model's weights is replaced, not written through */
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    write_file(path, text, strlen(text));
}

static void copy_file(const char *from, const char *to)
{
    size_t len;
    char *data = t_read_file(from, &len);
    if (!data) { fprintf(stderr, "cannot read %s\n", from); exit(2); }
    write_file(to, data, len);
    free(data);
}

/* ROOT/name holding config.json, vocab.txt and tokenizer_config.json of the
 * good model, and a link to its weights (bert_load checks that they are
 * there), and nothing else: what an earlier run left is removed.  A case
 * about the weights writes its own (write_file replaces the link). */
static void model_dir(char *dir, size_t cap, const char *name)
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
        copy_file(from, path);
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (symlink("../../models/bert-plain-f32/model.safetensors", path) != 0) {
        fprintf(stderr, "cannot link %s\n", path);
        exit(2);
    }
}

/* The good model's weights, read once. */
typedef struct {
    unsigned char *bytes;
    size_t len;
    size_t header_len;
} st_image;

static int read_image(st_image *im)
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
static void write_st(const char *dir, uint64_t claimed, const char *header, size_t header_len,
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
    write_file(path, buf, keep < total ? keep : total);
    free(buf);
}

/* Writes the good weights with the header replaced by the value of the SQL
 * expression `expr`, in which ?1 is the original header.  The new header is
 * padded with spaces to the old length (or to a multiple of 8), so the data
 * keeps its alignment. */
static int write_edited_st(sqlite3 *db, const char *dir, const st_image *im, const char *expr)
{
    char *old = malloc(im->header_len + 1);
    if (!old) exit(2);
    memcpy(old, im->bytes + 8, im->header_len);
    old[im->header_len] = '\0';
    char sql[2048];
    snprintf(sql, sizeof sql, "SELECT %s", expr);
    char *header = query(db, sql, old);
    free(old);
    if (!T_CHECK(!starts_with(header, "ERROR") && strcmp(header, "NULL") != 0,
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
    write_st(dir, padded, text, padded, data, im->len - 8 - im->header_len, SIZE_MAX);
    free(text);
    free(header);
    return 1;
}

/* ---- bad arguments --------------------------------------------------------- */

static void null_and_types(sqlite3 *db)
{
    t_case("NULL in any text argument gives NULL");
    t_expect(db, "SELECT quote(bert_embed(NULL, 'good')) || quote(bert_tokenize(NULL, 'good')) || "
               "quote(bert_token_ids(NULL)) || quote(bert_similarity(NULL, 'x', 'good')) || "
               "quote(bert_similarity('x', NULL, 'good')) || quote(bert_fill_mask(NULL, 5, 'mlm')) || "
               "quote(bert_next_sentence(NULL, 'b', 'pre')) || quote(bert_next_sentence('a', NULL, 'pre')) || "
               "quote(bert_vector_to_json(NULL))", NULL, "NULLNULLNULLNULLNULLNULLNULLNULLNULL");
    t_expect(db, "SELECT count(*) FROM bert_fill_mask_each(NULL, 5, 'mlm')", NULL, "0");
    t_expect(db, "SELECT count(*) FROM bert_embed_each(NULL, 'good')", NULL, "0");
    t_expect(db, "SELECT count(*) FROM bert_embed_each('[null, null]', 'good')", NULL, "0");

    t_case("a NULL model name means the default model");
    sqlite3 *one = t_open();
    t_expect(one, "SELECT bert_load('only', '" GOOD "')", NULL, "only");
    t_expect(one, "SELECT bert_embed('x', NULL) = bert_embed('x', 'only')", NULL, "1");
    sqlite3_close(one);

    t_case("BLOB text arguments are errors that name the argument");
    t_expect_error(db, "SELECT bert_embed(x'00ff', 'good')", NULL, "bert_embed", "argument 1", "BLOB", NULL);
    t_expect_error(db, "SELECT bert_tokenize(zeroblob(10), 'good')", NULL, "bert_tokenize", "argument 1", NULL);
    t_expect_error(db, "SELECT bert_token_ids(x'', 'good')", NULL, "bert_token_ids", "argument 1", NULL);
    t_expect_error(db, "SELECT bert_fill_mask(x'41', 5, 'mlm')", NULL, "bert_fill_mask", "argument 1", NULL);
    t_expect_error(db, "SELECT bert_next_sentence('a', x'41', 'pre')", NULL, "bert_next_sentence", "argument 2", NULL);
    t_expect_error(db, "SELECT * FROM bert_fill_mask_each(x'41', 5, 'mlm')", NULL, "TEXT", NULL);
    expect_alive(db);

    t_case("numbers as text arguments are errors that name the argument and point to bert_functions");
    t_expect_error(db, "SELECT bert_tokenize(42, 'good')", NULL, "bert_tokenize", "argument 1 (text)",
                   "not an INTEGER", "bert_functions", NULL);
    t_expect_error(db, "SELECT bert_embed(1.5, 'good')", NULL, "argument 1 (text)", "not a REAL", NULL);
    t_expect_error(db, "SELECT bert_similarity(1, 2, 'good')", NULL, "argument 1 (a)", "float32 BLOB", NULL);
    t_expect(db, "SELECT bert_tokenize(CAST(42 AS TEXT), 'good') = bert_tokenize('42', 'good')", NULL, "1");

    t_case("a model name that is not TEXT is an error");
    t_expect_error(db, "SELECT bert_embed('x', 42)", NULL, "model name", "TEXT", NULL);
    t_expect_error(db, "SELECT bert_embed('x', x'676f6f64')", NULL, "model name", "TEXT", NULL);
    t_expect_error(db, "SELECT bert_tokenize('x', 1.5)", NULL, "model name", NULL);
    t_expect_error(db, "SELECT * FROM bert_embed_each('[\"x\"]', 7)", NULL, "model name", NULL);

    t_case("bert_load and bert_unload refuse what is not TEXT");
    t_expect_error(db, "SELECT bert_load(NULL, '" GOOD "')", NULL, "argument 1", "TEXT", NULL);
    t_expect_error(db, "SELECT bert_load('x', NULL)", NULL, "argument 2", "TEXT", NULL);
    t_expect_error(db, "SELECT bert_load('x', x'00')", NULL, "argument 2", NULL);
    t_expect_error(db, "SELECT bert_load('x', '" GOOD "', 42)", NULL, "argument 3", NULL);
    t_expect_error(db, "SELECT bert_unload(NULL)", NULL, "TEXT", NULL);
    t_expect_error(db, "SELECT bert_load('', '" GOOD "')", NULL, "empty", NULL);
    expect_alive(db);
}

static void unknown_models(sqlite3 *db)
{
    t_case("unknown model names are named in the error, with the registered ones");
    t_expect_error(db, "SELECT bert_embed('x', 'nope')", NULL, "unknown model 'nope'", "'good'", "bert_load", NULL);
    t_expect_error(db, "SELECT bert_fill_mask('[MASK]', 5, 'nope')", NULL, "unknown model 'nope'", NULL);
    t_expect_error(db, "SELECT * FROM bert_fill_mask_each('[MASK]', 5, 'nope')", NULL, "unknown model 'nope'", NULL);
    t_expect_error(db, "SELECT * FROM bert_embed_each('[\"a\"]', 'nope')", NULL, "unknown model 'nope'", NULL);
    /* Quotes and printf directives in a name are shown, not interpreted. */
    t_expect_error(db, "SELECT bert_embed('x', ?1)", "%s%n%x'\"", "unknown model '%s%n%x'\"'", NULL);
    t_expect_error(db, "SELECT bert_embed('x', '')", NULL, "unknown model ''", NULL);
    t_expect(db, "SELECT bert_unload('nope')", NULL, "0");

    t_case("no model at all: the error says how to register one");
    unsetenv("BERT_MODEL");
    sqlite3 *empty = t_open();
    t_expect_error(empty, "SELECT bert_embed('x')", NULL, "no model is registered", "bert_load", NULL);
    t_expect_error(empty, "SELECT bert_tokenize('x')", NULL, "no model is registered", NULL);
    sqlite3_close(empty);
    expect_alive(db);
}

static void odd_text(sqlite3 *db)
{
    t_case("invalid UTF-8 reads as U+FFFD, which the normalizer drops");
    static const char bad[] = "caf\xc3 \xff\xfe abc\x80\xbf def \xed\xa0\x80 \xf4\x90\x80\x80 end";
    static const char replaced[] = "caf\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd abc\xef\xbf\xbd\xef\xbf\xbd def "
                                   "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                                   "\xef\xbf\xbd end";
    char *a = query(db, "SELECT bert_tokenize(?1, 'good')", bad);
    char *b = query(db, "SELECT bert_tokenize(?1, 'good')", replaced);
    T_CHECK(!starts_with(a, "ERROR") && strcmp(a, b) == 0, "invalid bytes give %s\n    U+FFFD gives %s", a, b);
    free(a);
    free(b);
    t_expect(db, "SELECT json_valid(bert_tokenize(?1, 'good')) AND length(bert_embed(?1, 'good')) = 512 "
               "AND json_valid(bert_fill_mask(?1 || ' [MASK]', 3, 'mlm'))", bad, "1");
    t_expect(db, "SELECT json_valid(bert_tokenize(CAST(x'c0afe080bfedbfbff8888080808080' AS TEXT), 'good'))", NULL, "1");

    t_case("a NUL inside the text is dropped like other control characters");
    t_expect(db, "SELECT bert_tokenize(CAST(x'68656c6c6f00776f726c64' AS TEXT), 'good') = "
               "bert_tokenize(CAST(x'68656c6c6fefbfbd776f726c64' AS TEXT), 'good')", NULL, "1");

    t_case("empty text: [CLS] [SEP] only");
    t_expect(db, "SELECT bert_tokenize('', 'good')", NULL, "[\"[CLS]\",\"[SEP]\"]");
    t_expect(db, "SELECT length(bert_embed('', 'good'))", NULL, "512");
    t_expect(db, "SELECT typeof(bert_similarity('', '', 'good'))", NULL, "real");
    t_expect(db, "SELECT typeof(bert_next_sentence('', '', 'pre'))", NULL, "real");
    t_expect_error(db, "SELECT bert_fill_mask('', 5, 'mlm')", NULL, "no [MASK]", NULL);
    t_expect(db, "SELECT count(*) FROM bert_embed_each('[\"\", \"\"]', 'good')", NULL, "2");

    t_case("text of nothing but special tokens");
    static const char specials[] = "[CLS][SEP][PAD][UNK][MASK] [SEP] [CLS]";
    t_expect(db, "SELECT bert_tokenize(?1, 'good')", specials,
           "[\"[CLS]\",\"[CLS]\",\"[SEP]\",\"[PAD]\",\"[UNK]\",\"[MASK]\",\"[SEP]\",\"[CLS]\",\"[SEP]\"]");
    t_expect(db, "SELECT length(bert_embed(?1, 'good'))", specials, "512");
    t_expect(db, "SELECT json_array_length(bert_fill_mask(?1, 2, 'mlm'))", specials, "2");
    t_expect(db, "SELECT typeof(bert_next_sentence(?1, ?1, 'pre'))", specials, "real");
    /* Every token a mask, far past max_length: one list per kept mask. */
    t_expect(db, "SELECT json_array_length(bert_fill_mask(replace(hex(zeroblob(400)), '00', '[MASK]'), 1, 'mlm'))",
           NULL, "254");
    t_expect(db, "SELECT count(*) FROM bert_fill_mask_each(replace(hex(zeroblob(300)), '00', '[MASK]'), 2, 'mlm')",
           NULL, "508");
    expect_alive(db);
}

/* Truncation must keep exactly the first max_length - 2 tokens of the whole
 * text, whatever word the cut falls into (the tokenizer stops early, so a
 * word it abandons half-way must still count as the [UNK] it is). */
static void truncation(sqlite3 *db)
{
    t_case("max_length keeps the first tokens of the untruncated tokenization");
    static const char *const texts[] = {
        "unaffable\xe2\x98\x83 dogs and unaffable\xe2\x98\x83 cats",
        "un\xe2\x98\x83 unaffable snowman\xe2\x98\x83 [MASK] x",
        "averyveryverylongwordwithoutanymeaning\xe2\x98\x83 ok",
    };
    char sql[512];
    for (int len = 3; len <= 9; len++) {
        snprintf(sql, sizeof sql, "SELECT bert_load('len%d', '" GOOD "', '{\"max_length\": %d}')", len, len);
        char *r = query(db, sql, NULL);
        free(r);
    }
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        for (int len = 3; len <= 9; len++) {
            snprintf(sql, sizeof sql,
                     "SELECT bert_tokenize(?1, 'len%d') = (SELECT json_group_array(value) FROM "
                     "(SELECT key, value FROM json_each(bert_tokenize(?1, 'good')) "
                     "WHERE key < min(%d, json_array_length(bert_tokenize(?1, 'good')) - 1) "
                     "UNION ALL SELECT 1e9, '[SEP]' ORDER BY key))", len, len - 1);
            char *got = query(db, sql, texts[i]);
            if (!T_CHECK(strcmp(got, "1") == 0, "max_length %d of '%s': %s", len, texts[i], got)) {
                free(got);
                snprintf(sql, sizeof sql, "SELECT bert_tokenize(?1, 'len%d') || ' vs ' || bert_tokenize(?1, 'good')", len);
                got = query(db, sql, texts[i]);
                printf("    %s\n", got);
            }
            free(got);
        }
    }
    for (int len = 3; len <= 9; len++) {
        snprintf(sql, sizeof sql, "SELECT bert_unload('len%d')", len);
        free(query(db, sql, NULL));
    }
}

static void top_k(sqlite3 *db)
{
    t_case("top_k of 0, negative, huge or not an integer is an error");
    static const char *const bad[] = {"0", "-1", "-9223372036854775808", "9223372036854775807",
                                      "1000001", "4294967301", "1.5", "'5'", "x'05'", "1e300"};
    char sql[256];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(sql, sizeof sql, "SELECT bert_fill_mask('a [MASK] b', %s, 'mlm')", bad[i]);
        t_expect_error(db, sql, NULL, "top_k", NULL);
        snprintf(sql, sizeof sql, "SELECT count(*) FROM bert_fill_mask_each('a [MASK] b', %s, 'mlm')", bad[i]);
        t_expect_error(db, sql, NULL, "top_k", NULL);
    }

    t_case("fill-mask output is bounded: many masks with a huge top_k are refused at once");
    static const char *const greedy[] = {
        "SELECT length(bert_fill_mask(replace(hex(zeroblob(400)), '00', '[MASK]'), 30522, 'mlm'))",
        "SELECT count(*) FROM bert_fill_mask_each(replace(hex(zeroblob(400)), '00', '[MASK] '), 100000, 'mlm')",
    };
    for (size_t i = 0; i < sizeof greedy / sizeof *greedy; i++) {
        char out[1024];
        int rc = query_in_child(db, greedy[i], NULL, 20, 0, out, sizeof out);
        T_CHECK(rc == 0 && starts_with(out, "ERROR") && strstr(out, "top_k"), "%s\n    gave %s", greedy[i], out);
    }

    t_case("top_k NULL is the default; more than the vocabulary gives the whole vocabulary");
    t_expect(db, "SELECT json_array_length(bert_fill_mask('a [MASK] b', NULL, 'mlm'))", NULL, "5");
    t_expect(db, "SELECT json_array_length(bert_fill_mask('a [MASK] b', 1000000, 'mlm'))", NULL, "30522");
    expect_alive(db);
}

static void blobs(sqlite3 *db)
{
    t_case("vectors of the wrong length are errors");
    t_expect_error(db, "SELECT bert_similarity(x'000000', bert_embed('a', 'good'))", NULL, "3 bytes", "float32", NULL);
    t_expect_error(db, "SELECT bert_similarity(bert_embed('a', 'good'), x'0000803f00')", NULL, "argument 2", NULL);
    t_expect_error(db, "SELECT bert_similarity(x'', 'a', 'good')", NULL, "0 bytes", NULL);
    t_expect_error(db, "SELECT bert_similarity(zeroblob(1024), bert_embed('a', 'good'))", NULL, "dimensions", NULL);
    t_expect_error(db, "SELECT bert_similarity('a', x'0000803f', 'good')", NULL, "dimensions", NULL);
    t_expect_error(db, "SELECT bert_vector_to_json(x'0000803f00')", NULL, "float32 BLOB", NULL);
    t_expect_error(db, "SELECT bert_vector_to_json(7)", NULL, "float32 BLOB", NULL);
    t_expect(db, "SELECT bert_vector_to_json(x'')", NULL, "[]");

    t_case("zero, NaN and infinite vectors give NULL, not a crash");
    t_expect(db, "SELECT quote(bert_similarity(zeroblob(512), bert_embed('a', 'good')))", NULL, "NULL");
    t_expect(db, "SELECT quote(bert_similarity(x'0000c07f0000803f', x'0000803f0000803f'))", NULL, "NULL");
    t_expect(db, "SELECT quote(bert_similarity(x'0000807f0000803f', x'0000803f0000803f'))", NULL, "NULL");
    t_expect(db, "SELECT bert_vector_to_json(x'0000c07f0000807f000080ff')", NULL, "[null,null,null]");

    t_case("bert_embed_each refuses what is not a JSON array or object of texts");
    t_expect_error(db, "SELECT * FROM bert_embed_each('nope', 'good')", NULL, "JSON array", NULL);
    t_expect_error(db, "SELECT * FROM bert_embed_each('\"a text\"', 'good')", NULL, "JSON array", NULL);
    t_expect_error(db, "SELECT * FROM bert_embed_each('[\"a\", [\"b\"]]', 'good')", NULL, "item 2", "not a text", NULL);
    t_expect_error(db, "SELECT * FROM bert_embed_each('{\"k\": 1}', 'good')", NULL, "not a text", NULL);
    t_expect_error(db, "SELECT * FROM bert_embed_each(replace(hex(zeroblob(3000)), '00', '[') , 'good')", NULL,
                 "JSON array", NULL);
    expect_alive(db);
}

/* ---- registrations changing under a running query ------------------------------ */

static void unload_while_reading(void)
{
    t_case("bert_unload over bert_models unloads every model");
    sqlite3 *db = t_open();
    t_expect(db, "SELECT bert_load('a', '" GOOD "') || bert_load('b', '" MLM "') || bert_load('c', '" GOOD "')",
           NULL, "abc");
    t_expect(db, "SELECT length(bert_embed('x', 'a')) + length(bert_embed('x', 'c'))", NULL, "1024");
    t_expect(db, "SELECT sum(u) FROM (SELECT bert_unload(name) AS u FROM bert_models)", NULL, "3");
    t_expect(db, "SELECT count(*) FROM bert_models", NULL, "0");

    t_case("bert_unload of the model a bert_embed_each is reading");
    t_expect(db, "SELECT bert_load('a', '" GOOD "')", NULL, "a");
    char sql[512];
    snprintf(sql, sizeof sql, TEXTS_SQL, 600);
    char *texts = query(db, sql, NULL);
    /* Either every row or a clear error: never a read of what was freed. */
    char *got = query(db, "SELECT count(*) || ' ' || sum(length(embedding)) || ' ' || sum(u) FROM "
                          "(SELECT embedding, bert_unload('a') AS u FROM bert_embed_each(?1, 'a'))", texts);
    T_CHECK(strcmp(got, "600 307200 1") == 0 || (starts_with(got, "ERROR") && strstr(got, "'a'")), "gave %s", got);
    free(got);
    free(texts);

    t_case("bert_unload of the model a bert_fill_mask_each is reading");
    t_expect(db, "SELECT bert_load('m', '" MLM "')", NULL, "m");
    t_expect(db, "SELECT count(*) || ' ' || sum(length(token_str) > 0) || ' ' || sum(u) FROM (SELECT token_str, "
               "bert_unload('m') AS u FROM bert_fill_mask_each('a [MASK] b', 3, 'm'))", NULL, "3 3 1");
    sqlite3_close(db);
}

/* ---- bad options and model directories ---------------------------------------- */

static void options(sqlite3 *db)
{
    t_case("bad bert_load options are refused by name");
    static const struct { const char *json, *fragment; } cases[] = {
        {"{\"max_length\": 2}", "max_length"},
        {"{\"max_length\": -5}", "max_length"},
        {"{\"max_length\": 1e300}", "max_length"},
        {"{\"max_length\": \"64\"}", "max_length"},
        {"{\"max_length\": 513}", "max_position_embeddings"},
        {"{\"threads\": 0}", "threads"},
        {"{\"threads\": 100000}", "threads"},
        {"{\"pooling\": 1}", "pooling"},
        {"{\"normalize\": \"yes\"}", "normalize"},
        {"{\"truncate\": null}", "truncate"},
        {"{\"\": 1}", "unknown bert_load option"},
        {"null", "object"},
        {"[]", "object"},
        {"{", "JSON"},
        {"{\"pooling\": \"mean\"", "JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        t_expect_error(db, "SELECT bert_load('opt', '" GOOD "', ?1)", cases[i].json, cases[i].fragment, NULL);
    t_expect(db, "SELECT count(*) FROM bert_models WHERE name = 'opt'", NULL, "0");

    t_case("pooler pooling on a model without a pooler says what to use instead");
    t_expect(db, "SELECT bert_load('nopooler', '" MLM "', '{\"pooling\": \"pooler\"}')", NULL, "nopooler");
    t_expect_error(db, "SELECT bert_embed('x', 'nopooler')", NULL, "pooler", "cls", NULL);
    t_expect(db, "SELECT bert_unload('nopooler')", NULL, "1");

    t_case("a tiny max_length still gives [CLS] ... [SEP]");
    t_expect(db, "SELECT bert_load('three', '" PRETRAIN "', '{\"max_length\": 3}')", NULL, "three");
    t_expect(db, "SELECT bert_tokenize('many words here', 'three')", NULL, "[\"[CLS]\",\"many\",\"[SEP]\"]");
    t_expect(db, "SELECT length(bert_embed('many words here', 'three'))", NULL, "512");
    t_expect(db, "SELECT typeof(bert_next_sentence('one two', 'three four', 'three'))", NULL, "real");
    t_expect(db, "SELECT bert_unload('three')", NULL, "1");
    expect_alive(db);
}

/* Registers `dir` as `name` on db, expecting bert_load to succeed. */
static int load_ok(sqlite3 *db, const char *name, const char *dir)
{
    char sql[640];
    snprintf(sql, sizeof sql, "SELECT bert_load('%s', '%s')", name, dir);
    char *got = query(db, sql, NULL);
    int ok = T_CHECK(strcmp(got, name) == 0, "%s gave %s", sql, got);
    free(got);
    return ok;
}

/* A fault of the weights' files: bert_load refuses the directory with the
 * fragments (it reads every safetensors header) and registers nothing. */
static void expect_weights_error(sqlite3 *db, const char *name, const char *dir, const char *f1, const char *f2)
{
    char sql[640];
    snprintf(sql, sizeof sql, "SELECT bert_load('%s', '%s')", name, dir);
    t_expect_error(db, sql, NULL, f1, f2, (const char *)NULL);
    t_expect(db, "SELECT count(*) FROM bert_models WHERE name = ?1", name, "0");
    expect_alive(db);
}

/* What only loading the weights finds (their shapes against config.json):
 * the first call that needs the weights fails with the fragments, and so
 * does the next one (nothing half-loaded is kept); the registration goes. */
static void expect_load_time_error(sqlite3 *db, const char *name, const char *dir, const char *f1, const char *f2)
{
    if (!load_ok(db, name, dir)) return;
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT bert_embed('hello world', '%s')", name);
    t_expect_error(db, sql, NULL, f1, f2, (const char *)NULL);
    t_expect_error(db, sql, NULL, f1, f2, (const char *)NULL);
    snprintf(sql, sizeof sql, "SELECT bert_unload('%s')", name);
    t_expect(db, sql, NULL, "1");
    expect_alive(db);
}

static void configs(sqlite3 *db)
{
    char dir[256];

    t_case("a missing directory");
    t_expect_error(db, "SELECT bert_load('x', '" ROOT "/no-such-model')", NULL, "no-such-model", "not found", NULL);
    t_expect_error(db, "SELECT bert_load('x', '" GOOD "/config.json')", NULL, "is a file, not a directory", NULL);
    t_expect_error(db, "SELECT bert_load('x', '')", NULL, "not found", NULL);
    t_expect_error(db, "SELECT bert_load('x', replace(hex(zeroblob(3000)), '00', 'a/'))", NULL, "not found", NULL);

    t_case("a missing config.json");
    model_dir(dir, sizeof dir, "no-config");
    remove(ROOT "/no-config/config.json");
    t_expect_error(db, "SELECT bert_load('x', '" ROOT "/no-config')", NULL, "config.json", "does not exist", NULL);

    t_case("a config.json that is a directory");
    model_dir(dir, sizeof dir, "config-dir");
    remove(ROOT "/config-dir/config.json");
    mkdir(ROOT "/config-dir/config.json", 0755);
    t_expect_error(db, "SELECT bert_load('x', '" ROOT "/config-dir')", NULL, "config.json", NULL);
    rmdir(ROOT "/config-dir/config.json");

    t_case("malformed config.json values are named");
    static const struct { const char *json, *f1, *f2; } cases[] = {
        {"", "config.json", "JSON"},
        {"{\"model_type\": \"bert\", \"hidden_size\": 128", "config.json", "JSON"},
        {"\xff\xfe{}", "config.json", "JSON"},
        {"[1, 2, 3]", "config.json", "not a JSON object"},
        {"{}", "config.json", "model_type"},
        {"{\"model_type\": \"gpt2\"}", "model_type", "gpt2"},
        {"{\"model_type\": 7}", "model_type", "bert"},
        {"{\"model_type\": \"bert\", \"hidden_size\": \"128\"}", "hidden_size", "integer"},
        {"{\"model_type\": \"bert\", \"hidden_size\": -128}", "hidden_size", "integer"},
        {"{\"model_type\": \"bert\", \"hidden_size\": 1e30}", "hidden_size", "integer"},
        {"{\"model_type\": \"bert\", \"hidden_size\": 12.5}", "hidden_size", "integer"},
        {"{\"model_type\": \"bert\", \"vocab_size\": 99999999999999999999}", "vocab_size", "integer"},
        {"{\"model_type\": \"bert\", \"num_hidden_layers\": 0}", "num_hidden_layers", "integer"},
        {"{\"model_type\": \"bert\", \"max_position_embeddings\": 1000000}", "max_position_embeddings", "integer"},
        {"{\"model_type\": \"bert\", \"hidden_size\": 128, \"num_attention_heads\": 3}", "num_attention_heads", "multiple"},
        {"{\"model_type\": \"bert\", \"layer_norm_eps\": \"small\"}", "layer_norm_eps", "number"},
        {"{\"model_type\": \"bert\", \"layer_norm_eps\": 0}", "layer_norm_eps", "number"},
        {"{\"model_type\": \"bert\", \"hidden_act\": \"swish\"}", "hidden_act", "swish"},
        {"{\"model_type\": \"bert\", \"hidden_act\": null}", "hidden_act", "gelu"},
    };
    model_dir(dir, sizeof dir, "bad-config");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        write_text(dir, "config.json", cases[i].json);
        t_expect_error(db, "SELECT bert_load('x', '" ROOT "/bad-config')", NULL, cases[i].f1, cases[i].f2, NULL);
    }
    t_expect(db, "SELECT count(*) FROM bert_models WHERE name = 'x'", NULL, "0");

    t_case("a config.json of another model: the weights' shapes disagree");
    model_dir(dir, sizeof dir, "other-config");
    write_text(dir, "config.json", "{\"model_type\": \"bert\", \"vocab_size\": 30522, \"hidden_size\": 64, "
                                   "\"num_hidden_layers\": 2, \"num_attention_heads\": 2, "
                                   "\"intermediate_size\": 256, \"max_position_embeddings\": 512}");
    expect_load_time_error(db, "other", dir, "embeddings.word_embeddings.weight", "[30522, 64]");

    t_case("sentence-transformers files that cannot be honoured");
    model_dir(dir, sizeof dir, "bad-st");
    write_text(dir, "modules.json", "[{\"type\": \"sentence_transformers.models.Dense\", \"path\": \"2_Dense\"}]");
    t_expect_error(db, "SELECT bert_load('x', '" ROOT "/bad-st')", NULL, "modules.json", "Dense", NULL);
    write_text(dir, "modules.json", "{\"not\": \"a list\"}");
    t_expect_error(db, "SELECT bert_load('x', '" ROOT "/bad-st')", NULL, "modules.json", "array", NULL);
    write_text(dir, "modules.json", "[{\"type\": ");
    t_expect_error(db, "SELECT bert_load('x', '" ROOT "/bad-st')", NULL, "modules.json", NULL);
    remove(ROOT "/bad-st/modules.json");
    mkdir(ROOT "/bad-st/1_Pooling", 0755);
    write_text(dir, "1_Pooling/config.json", "{\"pooling_mode_lasttoken\": true}");
    t_expect_error(db, "SELECT bert_load('x', '" ROOT "/bad-st')", NULL, "pooling_mode_lasttoken", NULL);
    remove(ROOT "/bad-st/1_Pooling/config.json");
    write_text(dir, "sentence_bert_config.json", "{\"max_seq_length\": -5}");
    t_expect_error(db, "SELECT bert_load('x', '" ROOT "/bad-st')", NULL, "max_seq_length", NULL);
    expect_alive(db);
}

/* ---- vocabularies and tokenizer files ----------------------------------------- */

/* Writes dir/tokenizer.json with `count` special added tokens tok0, tok1 ...
 * past the end of bert-base's vocabulary. */
static void write_added_tokens(const char *dir, int count)
{
    char *json = malloc((size_t)count * 96 + 64);
    if (!json) exit(2);
    size_t n = (size_t)sprintf(json, "{\"added_tokens\": [");
    for (int i = 0; i < count; i++)
        n += (size_t)sprintf(json + n, "%s{\"id\": %d, \"content\": \"tok%d\", \"special\": true, "
                                       "\"normalized\": false}", i ? ", " : "", 30522 + i, i);
    n += (size_t)sprintf(json + n, "]}");
    char path[512];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    write_file(path, json, n);
    free(json);
}

typedef struct {
    sqlite3 *db;
    const char *sql;
    char *result;
    long allocations;
    long long instructions;    /* -1: not counted */
    int ok;
} tokenizer_cost;

static void run_counted(void *arg)
{
    tokenizer_cost *c = arg;
    long before = t_allocations();
    c->result = query(c->db, c->sql, NULL);
    c->allocations = t_allocations() - before;
}

/* The first bert_tokenize of a freshly registered model (it reads the
 * tokenizer files) with `count` added tokens, checked and counted. */
static tokenizer_cost first_tokenize_cost(sqlite3 *db, const char *model, int count)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT bert_tokenize('hello tok5 world tok%d', '%s')", count - 1, model);
    tokenizer_cost c = {.db = db, .sql = sql};
    c.instructions = t_instructions(run_counted, &c);
    char want[128];
    snprintf(want, sizeof want, "[\"[CLS]\",\"hello\",\"tok5\",\"world\",\"tok%d\",\"[SEP]\"]", count - 1);
    c.ok = T_CHECK(strcmp(c.result, want) == 0, "%d added tokens: %s", count, c.result);
    free(c.result);
    c.result = NULL;
    c.sql = NULL;
    return c;
}

/* vocab.txt missing, empty, a directory, without its specials, of junk, too long. */
static void vocab_txt_files(sqlite3 *db)
{
    char dir[256];

    t_case("vocab.txt missing: bert_load says which tokenizer files it needs");
    model_dir(dir, sizeof dir, "no-vocab");
    remove(ROOT "/no-vocab/vocab.txt");
    t_expect_error(db, "SELECT bert_load('novocab', '" ROOT "/no-vocab')", NULL, "no tokenizer", "vocab.txt",
                   "tokenizer.json", NULL);
    t_expect(db, "SELECT count(*) FROM bert_models WHERE name = 'novocab'", NULL, "0");

    t_case("vocab.txt empty");
    model_dir(dir, sizeof dir, "empty-vocab");
    write_text(dir, "vocab.txt", "");
    if (load_ok(db, "emptyvocab", dir)) {
        t_expect_error(db, "SELECT bert_tokenize('x', 'emptyvocab')", NULL, "vocab.txt", "empty", NULL);
        t_expect_error(db, "SELECT bert_tokenize('x', 'emptyvocab')", NULL, "vocab.txt", "empty", NULL);
        t_expect(db, "SELECT bert_unload('emptyvocab')", NULL, "1");
    }

    t_case("vocab.txt that is a directory");
    model_dir(dir, sizeof dir, "vocab-dir");
    remove(ROOT "/vocab-dir/vocab.txt");
    mkdir(ROOT "/vocab-dir/vocab.txt", 0755);
    if (load_ok(db, "vocabdir", dir)) {
        t_expect_error(db, "SELECT bert_tokenize('x', 'vocabdir')", NULL, "vocab.txt", NULL);
        t_expect(db, "SELECT bert_unload('vocabdir')", NULL, "1");
    }
    rmdir(ROOT "/vocab-dir/vocab.txt");

    t_case("vocab.txt without [UNK] or [CLS]");
    model_dir(dir, sizeof dir, "no-unk");
    write_text(dir, "vocab.txt", "hello\nworld\n");
    if (load_ok(db, "nounk", dir)) {
        t_expect_error(db, "SELECT bert_tokenize('hello', 'nounk')", NULL, "[UNK]", "vocab.txt", NULL);
        t_expect(db, "SELECT bert_unload('nounk')", NULL, "1");
    }
    model_dir(dir, sizeof dir, "no-cls");
    write_text(dir, "vocab.txt", "[UNK]\nhello\n");
    if (load_ok(db, "nocls", dir)) {
        t_expect_error(db, "SELECT bert_tokenize('hello', 'nocls')", NULL, "[CLS]", NULL);
        t_expect_error(db, "SELECT bert_next_sentence('a', 'b', 'nocls')", NULL, NULL);
        t_expect(db, "SELECT bert_unload('nocls')", NULL, "1");
    }

    t_case("vocab.txt of bytes that are not text still tokenizes");
    model_dir(dir, sizeof dir, "junk-vocab");
    {
        unsigned char junk[4096];
        uint32_t x = 12345;
        for (size_t i = 0; i < sizeof junk; i++) {
            x = x * 1103515245u + 12345u;
            junk[i] = (unsigned char)(x >> 16);
        }
        static const char head[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n\n\r\n\n##\n";
        memcpy(junk, head, sizeof head - 1);
        write_file(ROOT "/junk-vocab/vocab.txt", junk, sizeof junk);
    }
    if (load_ok(db, "junk", dir)) {
        t_expect(db, "SELECT json_valid(bert_token_ids(?1, 'junk'))", "some text \xc3\xa9 ## [MASK]", "1");
        t_expect(db, "SELECT typeof(bert_tokenize(?1, 'junk'))", "some text \xc3\xa9 ## [MASK]", "text");
        t_expect(db, "SELECT bert_unload('junk')", NULL, "1");
    }

    t_case("vocab.txt larger than the weights' vocabulary");
    model_dir(dir, sizeof dir, "big-vocab");
    {
        size_t len;
        char *v = t_read_file(GOOD "/vocab.txt", &len);
        if (!v) exit(2);
        char *more = malloc(len + 64);
        if (!more) exit(2);
        memcpy(more, v, len);
        memcpy(more + len, "extra1\nextra2\n", 14);
        write_file(ROOT "/big-vocab/vocab.txt", more, len + 14);
        free(v);
        free(more);
    }
    if (load_ok(db, "bigvocab", dir)) {
        t_expect(db, "SELECT json_array_length(bert_token_ids('extra1', 'bigvocab'))", NULL, "3");
        t_expect_error(db, "SELECT bert_embed('extra1', 'bigvocab')", NULL, "vocab.txt", "do not belong together", NULL);
        t_expect(db, "SELECT bert_unload('bigvocab')", NULL, "1");
    }
}

static void malformed_tokenizer_files(sqlite3 *db)
{
    char dir[256];

    t_case("malformed tokenizer files are named");
    static const struct { const char *file, *json, *f1, *f2; } cases[] = {
        {"tokenizer.json", "{\"model\": ", "tokenizer.json", NULL},
        {"tokenizer.json", "[]", "tokenizer.json", "not a JSON object"},
        {"tokenizer.json", "{\"model\": {\"type\": \"BPE\"}}", "tokenizer.json", "BPE"},
        {"tokenizer.json", "{\"normalizer\": {\"type\": \"NFC\"}}", "tokenizer.json", "NFC"},
        {"tokenizer.json", "{\"pre_tokenizer\": {\"type\": \"Whitespace\"}}", "tokenizer.json", "Whitespace"},
        {"tokenizer.json", "{\"decoder\": {\"type\": \"ByteLevel\"}}", "tokenizer.json", "ByteLevel"},
        {"tokenizer.json", "{\"added_tokens\": [{\"id\": 99999999, \"content\": \"[NEW]\"}]}", "tokenizer.json", "[NEW]"},
        {"tokenizer.json", "{\"added_tokens\": [{\"id\": -1, \"content\": \"[NEW]\"}]}", "tokenizer.json", "added_tokens"},
        {"tokenizer.json", "{\"added_tokens\": [{\"id\": 5}]}", "tokenizer.json", "added_tokens"},
        {"tokenizer.json", "{\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[NOPE]\"}}", "[NOPE]", NULL},
        {"tokenizer_config.json", "{\"do_lower_case\": ", "tokenizer_config.json", NULL},
        {"tokenizer_config.json", "\"text\"", "tokenizer_config.json", "not a JSON object"},
        {"tokenizer_config.json", "{\"unk_token\": \"[NOPE]\"}", "[NOPE]", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        model_dir(dir, sizeof dir, "bad-tokenizer");
        write_text(dir, cases[i].file, cases[i].json);
        if (!load_ok(db, "badtok", dir)) continue;
        t_expect_error(db, "SELECT bert_tokenize('hello', 'badtok')", NULL, cases[i].f1, cases[i].f2, NULL);
        t_expect(db, "SELECT bert_unload('badtok')", NULL, "1");
    }
}

static void fifos_and_devices(sqlite3 *db)
{
    char dir[256];

    t_case("model files that are FIFOs or devices are refused, not waited on or read without end");
    static const struct { const char *file, *target; int call; } specials[] = {
        {"config.json", NULL, 0},               /* a FIFO: bert_load */
        {"vocab.txt", NULL, 1},                 /* a FIFO: the first tokenization */
        {"tokenizer.json", NULL, 1},
        {"model.safetensors", NULL, 2},         /* a FIFO: the first embedding */
        {"vocab.txt", "/dev/null", 1},
        {"vocab.txt", "/dev/zero", 1},          /* endless */
        {"tokenizer_config.json", "/dev/zero", 1},
        {"model.safetensors", "/dev/zero", 2},
    };
    static const char *const calls[] = {
        "SELECT bert_load('special', '" ROOT "/special')",
        "SELECT bert_load('special', '" ROOT "/special') || bert_tokenize('hello', 'special')",
        "SELECT bert_load('special', '" ROOT "/special') || bert_embed('hello', 'special')",
    };
    for (size_t i = 0; i < sizeof specials / sizeof *specials; i++) {
        /* An endless device under a sanitizer would take all the memory it
         * can get before failing: the address space limit needs a plain build. */
        if (SANITIZED && specials[i].target && strcmp(specials[i].target, "/dev/zero") == 0) continue;
        model_dir(dir, sizeof dir, "special");
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, specials[i].file);
        remove(path);
        int made = specials[i].target ? symlink(specials[i].target, path) : mkfifo(path, 0644);
        if (!T_CHECK(made == 0, "cannot make %s", path)) continue;
        char out[1024];
        int rc = query_in_child(db, calls[specials[i].call], NULL, 10, 1024, out, sizeof out);
        T_CHECK(rc == 0 && starts_with(out, "ERROR") && strstr(out, specials[i].file) && !strstr(out, "out of memory"),
                "%s as %s: %s", specials[i].file, specials[i].target ? specials[i].target : "a FIFO", out);
        remove(path);
    }
}

static void added_tokens_in_linear_time(sqlite3 *db)
{
    char dir[256];

    t_case("a tokenizer.json with 40000 added tokens loads in linear time");
    /* Linear: twice the added tokens beyond the first 400 cost twice the
     * work (a quadratic load once took 17 s for 40000).  Work is counted,
     * not timed: allocations everywhere (a copy per token shows there), and
     * instructions where the CPU's counter is available (a scan per token
     * shows only there; virtual machines often have no counter). */
    static const int counts[3] = {400, 20000, 40000};
    tokenizer_cost cost[3];
    int measured = 0;
    for (int k = 0; k < 3; k++, measured++) {
        char name[64];
        snprintf(name, sizeof name, "added-%d", counts[k]);
        model_dir(dir, sizeof dir, name);
        write_added_tokens(dir, counts[k]);
        if (!load_ok(db, "many", dir)) break;
        cost[k] = first_tokenize_cost(db, "many", counts[k]);
        t_expect(db, "SELECT bert_unload('many')", NULL, "1");
        if (!cost[k].ok) break;
    }
    if (measured == 3) {
        printf("  tokenizer with 400 / 20000 / 40000 added tokens: %ld / %ld / %ld allocations", cost[0].allocations,
               cost[1].allocations, cost[2].allocations);
        if (cost[0].instructions >= 0)
            printf(", %lld / %lld / %lld instructions", cost[0].instructions, cost[1].instructions,
                   cost[2].instructions);
        printf("\n");
        double by_allocations = (double)(cost[2].allocations - cost[0].allocations) /
                                (double)(cost[1].allocations - cost[0].allocations);
        T_CHECK(by_allocations >= 1.5 && by_allocations <= 2.5,
                "allocations beyond 400 added tokens grew %.2f times from 20000 to 40000, not about 2", by_allocations);
        if (cost[0].instructions >= 0) {
            double by_instructions = (double)(cost[2].instructions - cost[0].instructions) /
                                     (double)(cost[1].instructions - cost[0].instructions);
            T_CHECK(by_instructions >= 1.5 && by_instructions <= 2.5,
                    "instructions beyond 400 added tokens grew %.2f times from 20000 to 40000, not about 2",
                    by_instructions);
        } else {
            printf("  (no instruction counter on this machine: allocations compared only)\n");
        }
    }
}

static void tokenizer_settings_out_of_range(sqlite3 *db)
{
    char dir[256];

    t_case("tokenizer.json settings out of range do no harm");
    model_dir(dir, sizeof dir, "odd-tokenizer");
    write_text(dir, "tokenizer.json",
               "{\"model\": {\"type\": \"WordPiece\", \"max_input_chars_per_word\": -7, "
               "\"continuing_subword_prefix\": \"\"}, \"decoder\": {\"type\": \"WordPiece\", \"prefix\": \"\"}, "
               "\"added_tokens\": [{\"id\": 30522, \"content\": \"\", \"special\": true}]}");
    if (load_ok(db, "oddtok", dir)) {
        t_expect(db, "SELECT json_valid(t) AND t ->> '$[0]' = '[CLS]' AND t ->> '$[#-1]' = '[SEP]' "
                   "FROM (SELECT bert_tokenize('hello world', 'oddtok') AS t)", NULL, "1");
        t_expect(db, "SELECT bert_unload('oddtok')", NULL, "1");
    }
}

static void vocabularies(sqlite3 *db)
{
    vocab_txt_files(db);
    malformed_tokenizer_files(db);
    fifos_and_devices(db);
    added_tokens_in_linear_time(db);
    tokenizer_settings_out_of_range(db);
    expect_alive(db);
}

/* ---- damaged weights ---------------------------------------------------------- */

/* The JSON path of a tensor entry, without its closing quote. */
#define T(name) "'$.\"" name "\""

/* Files missing, of the wrong kind, cut short, or with a header length
 * that does not fit. */
static void damaged_weights_files(sqlite3 *db, const st_image *im, const char *header)
{
    const unsigned char *data = im->bytes + 8 + im->header_len;
    const size_t data_len = im->len - 8 - im->header_len;
    char dir[256];

    t_case("model.safetensors missing");
    model_dir(dir, sizeof dir, "st-missing");
    remove(ROOT "/st-missing/model.safetensors");
    expect_weights_error(db, "stmissing", dir, "model.safetensors", "huggingface-cli download");

    t_case("model.safetensors is a directory");
    model_dir(dir, sizeof dir, "st-dir");
    remove(ROOT "/st-dir/model.safetensors");
    mkdir(ROOT "/st-dir/model.safetensors", 0755);
    expect_weights_error(db, "stdir", dir, "model.safetensors", "not a regular file");
    rmdir(ROOT "/st-dir/model.safetensors");

    t_case("model.safetensors empty or shorter than its length field");
    model_dir(dir, sizeof dir, "st-empty");
    write_st(dir, im->header_len, header, im->header_len, data, data_len, 0);
    expect_weights_error(db, "stempty", dir, "0 bytes", "too short");
    write_st(dir, im->header_len, header, im->header_len, data, data_len, 5);
    expect_weights_error(db, "stempty", dir, "5 bytes", "too short");

    t_case("model.safetensors cut short: inside the header, inside the data");
    model_dir(dir, sizeof dir, "st-cut");
    write_st(dir, im->header_len, header, im->header_len, data, data_len, 8 + im->header_len / 2);
    expect_weights_error(db, "stcut", dir, "header claims", "truncated");
    write_st(dir, im->header_len, header, im->header_len, data, data_len, 8 + im->header_len + data_len / 2);
    expect_weights_error(db, "stcut", dir, "truncated", "ends at byte");
    write_st(dir, im->header_len, header, im->header_len, data, data_len, im->len - 1);
    expect_weights_error(db, "stcut", dir, "truncated", "ends at byte");

    t_case("model.safetensors header length past the end, zero or absurd");
    model_dir(dir, sizeof dir, "st-length");
    write_st(dir, (uint64_t)im->len, header, im->header_len, data, data_len, SIZE_MAX);
    expect_weights_error(db, "stlength", dir, "header claims", "truncated");
    write_st(dir, UINT64_MAX, header, im->header_len, data, data_len, SIZE_MAX);
    expect_weights_error(db, "stlength", dir, "header claims", "18446744073709551615");
    write_st(dir, (uint64_t)1 << 62, header, im->header_len, data, data_len, SIZE_MAX);
    expect_weights_error(db, "stlength", dir, "header claims", NULL);
    write_st(dir, 0, header, im->header_len, data, data_len, SIZE_MAX);
    expect_weights_error(db, "stlength", dir, "not a JSON object", NULL);
    write_st(dir, im->header_len - 1, header, im->header_len, data, data_len, SIZE_MAX);
    expect_weights_error(db, "stlength", dir, "not valid JSON", NULL);
}

/* 1 for the header edits that only loading the tensors finds (their names,
 * dtypes and shapes against config.json), not bert_load's header check. */
static int found_at_use(const char *edit)
{
    static const char *const at_use[] = {"a wrong dtype of the same size", "a tensor of the wrong shape, same size",
                                         "a tensor of the wrong rank", "a missing tensor"};
    for (size_t i = 0; i < sizeof at_use / sizeof *at_use; i++)
        if (strcmp(edit, at_use[i]) == 0) return 1;
    return 0;
}

/* Headers edited with SQLite's JSON functions: each fault named. */
static void damaged_weights_headers(sqlite3 *db, const st_image *im)
{
    char dir[256];

    /* Header edits: the SQL expression, then two fragments of the error. */
    static const struct { const char *name, *expr, *f1, *f2; } edits[] = {
        {"offsets out of range",
         "json_set(?1, " T("embeddings.LayerNorm.bias") ".data_offsets', json('[17600000, 17600512]'))",
         "embeddings.LayerNorm.bias", "ends at byte 17600512"},
        {"offsets past the data by one byte",
         "json_set(?1, " T("encoder.layer.1.output.dense.bias") ".data_offsets[1]', "
         "(?1 -> " T("encoder.layer.1.output.dense.bias") ".data_offsets[1]') + 1)",
         "encoder.layer.1.output.dense.bias", "data_offsets"},
        {"offsets reversed",
         "json_set(?1, " T("embeddings.LayerNorm.weight") ".data_offsets', json('[1024, 512]'))",
         "embeddings.LayerNorm.weight", "not a range"},
        {"negative offsets",
         "json_set(?1, " T("embeddings.LayerNorm.weight") ".data_offsets', json('[-512, 0]'))",
         "embeddings.LayerNorm.weight", "not a range"},
        {"offsets that are not integers",
         "json_set(?1, " T("embeddings.LayerNorm.weight") ".data_offsets', json('[\"512\", 1024]'))",
         "embeddings.LayerNorm.weight", "two integers"},
        {"three offsets",
         "json_set(?1, " T("embeddings.LayerNorm.weight") ".data_offsets', json('[512, 1024, 2048]'))",
         "embeddings.LayerNorm.weight", "two integers"},
        {"overlapping tensors",
         "json_set(?1, " T("embeddings.LayerNorm.weight") ".data_offsets', json('[256, 768]'))",
         "share bytes", "embeddings.LayerNorm.weight"},
        {"two tensors on the same bytes",
         "json_set(?1, " T("encoder.layer.0.attention.self.key.weight") ".data_offsets', "
         "?1 -> " T("encoder.layer.0.attention.self.query.weight") ".data_offsets')",
         "share bytes", "encoder.layer.0.attention.self"},
        {"a byte range that does not match the shape",
         "json_set(?1, " T("embeddings.LayerNorm.weight") ".shape', json('[129]'))",
         "embeddings.LayerNorm.weight", "spanning"},
        {"an unknown dtype",
         "json_set(?1, " T("encoder.layer.0.output.dense.bias") ".dtype', 'Q4_K')",
         "encoder.layer.0.output.dense.bias", "Q4_K"},
        {"a dtype that is not a string",
         "json_set(?1, " T("encoder.layer.0.output.dense.bias") ".dtype', 4)",
         "encoder.layer.0.output.dense.bias", "dtype"},
        {"a wrong dtype of the same size",
         "json_set(?1, " T("encoder.layer.0.output.dense.bias") ".dtype', 'I32')",
         "encoder.layer.0.output.dense.bias", "I32"},
        {"a wrong dtype of another size",
         "json_set(?1, " T("encoder.layer.0.output.dense.bias") ".dtype', 'F16')",
         "encoder.layer.0.output.dense.bias", "spanning"},
        {"a tensor of the wrong shape, same size",
         "json_set(?1, " T("embeddings.word_embeddings.weight") ".shape', json('[128, 30522]'))",
         "embeddings.word_embeddings.weight", "[128, 30522]"},
        {"a tensor of the wrong rank",
         "json_set(?1, " T("embeddings.LayerNorm.weight") ".shape', json('[1, 128]'))",
         "embeddings.LayerNorm.weight", "[1, 128]"},
        {"a negative dimension",
         "json_set(?1, " T("embeddings.LayerNorm.weight") ".shape', json('[-128]'))",
         "embeddings.LayerNorm.weight", "non-negative"},
        {"a shape whose size overflows",
         "json_set(?1, " T("embeddings.LayerNorm.weight") ".shape', json('[4611686018427387904, 4611686018427387904]'))",
         "embeddings.LayerNorm.weight", "too large"},
        {"too many dimensions",
         "json_set(?1, " T("embeddings.LayerNorm.weight") ".shape', json('[1,1,1,1,1,1,1,1,128]'))",
         "embeddings.LayerNorm.weight", "dimensions"},
        {"a missing tensor",
         "json_remove(?1, " T("encoder.layer.1.output.dense.bias") "')",
         "has no tensor", "encoder.layer.1.output.dense.bias"},
        {"a missing tensor entry field",
         "json_remove(?1, " T("encoder.layer.1.output.dense.bias") ".shape')",
         "encoder.layer.1.output.dense.bias", "shape"},
        {"an entry that is not an object",
         "json_set(?1, " T("encoder.layer.1.output.dense.bias") "', 7)",
         "encoder.layer.1.output.dense.bias", "not an object"},
        {"a tensor named twice",
         "replace(?1, '\"embeddings.LayerNorm.weight\"', '\"embeddings.LayerNorm.bias\"')",
         "embeddings.LayerNorm.bias", "twice"},
        {"a header that is an array", "'[1, 2]'", "not a JSON object", NULL},
        {"a header that is not JSON", "substr(?1, 1, 200)", "not valid JSON", NULL},
    };
    model_dir(dir, sizeof dir, "st-header");
    for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
        char label[160];
        snprintf(label, sizeof label, "model.safetensors header: %s", edits[i].name);
        t_case(label);
        if (write_edited_st(db, dir, im, edits[i].expr))
            (found_at_use(edits[i].name) ? expect_load_time_error : expect_weights_error)(db, "stheader", dir,
                                                                                          edits[i].f1, edits[i].f2);
    }
}

/* Valid files laid out differently are read from their own offsets. */
static void weights_read_where_the_header_says(sqlite3 *db, const st_image *im)
{
    char dir[256];

    t_case("tensors stored out of order are valid and read from their own offsets");
    model_dir(dir, sizeof dir, "st-order");
    if (write_edited_st(db, dir, im,
                        "json_set(?1, " T("encoder.layer.0.attention.self.query.weight") ".data_offsets', "
                        "?1 -> " T("encoder.layer.0.attention.self.key.weight") ".data_offsets', "
                        T("encoder.layer.0.attention.self.key.weight") ".data_offsets', "
                        "?1 -> " T("encoder.layer.0.attention.self.query.weight") ".data_offsets')") &&
        load_ok(db, "storder", dir)) {
        /* Query and key trade places: the model is another one, not the same. */
        t_expect(db, "SELECT length(bert_embed('a cat', 'storder')) || ' ' || "
                   "(bert_embed('a cat', 'storder') = bert_embed('a cat', 'good'))", NULL, "512 0");
        t_expect(db, "SELECT bert_unload('storder')", NULL, "1");
    }

    t_case("an intact copy of the weights gives the same vector as the original");
    model_dir(dir, sizeof dir, "st-copy");
    if (write_edited_st(db, dir, im, "json(?1)") && load_ok(db, "stcopy", dir)) {
        t_expect(db, "SELECT bert_embed('a cat', 'stcopy') = bert_embed('a cat', 'good')", NULL, "1");
        t_expect(db, "SELECT bert_unload('stcopy')", NULL, "1");
    }
}

static void weights(sqlite3 *db)
{
    st_image im;
    t_case("damaged model.safetensors: the good file can be read");
    if (!T_CHECK(read_image(&im), "cannot read " GOOD "/model.safetensors")) {
        free(im.bytes);
        return;
    }
    char *header = malloc(im.header_len + 1);
    if (!header) exit(2);
    memcpy(header, im.bytes + 8, im.header_len);
    header[im.header_len] = '\0';
    damaged_weights_files(db, &im, header);
    damaged_weights_headers(db, &im);
    weights_read_where_the_header_says(db, &im);
    expect_alive(db);
    free(header);
    free(im.bytes);
}

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

static void huge_text(sqlite3 *db)
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
    int can_measure = reset_peak() && status_kib("VmHWM") > 0;
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) {
        char label[200];
        snprintf(label, sizeof label, "a 10 MB text is cut to max_length: %s", calls[i].sql);
        t_case(label);
        can_measure = can_measure && reset_peak();
        long before = status_kib("VmRSS");
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        t_expect(db, calls[i].sql, text, calls[i].expected);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        long peak = status_kib("VmHWM");
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
    expect_alive(db);
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
    char *got = query(db, "SELECT encoder_calls FROM bert_models WHERE name = 'good'", NULL);
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

static void interrupt(sqlite3 *db)
{
    t_case("sqlite3_interrupt from another thread stops a long bert_embed_each");
    char sql[512];
    /* One chunk of texts (as bert_embed_each embeds them) takes `one` seconds. */
    snprintf(sql, sizeof sql, TEXTS_SQL, 256);
    char *chunk = query(db, sql, NULL);
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
    char *many = query(db, sql, NULL);
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
    expect_alive(db);
    t_expect(db, "SELECT count(*) FROM bert_embed_each('[\"a\", \"b\"]', 'good')", NULL, "2");
}

/* The copies of the weights are 17 MB each: gone once the suite is done. */
static void drop_weight_copies(void)
{
    static const char *const dirs[] = {"other-config", "big-vocab", "st-cut", "st-length", "st-header",
                                       "st-order", "st-copy"};
    char path[512];
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        snprintf(path, sizeof path, ROOT "/%s/model.safetensors", dirs[i]);
        remove(path);
    }
}

void suite_robustness(void)
{
    if (!t_exists(GOOD "/model.safetensors") || !t_exists(MLM "/model.safetensors") ||
        !t_exists(PRETRAIN "/model.safetensors")) {
        t_case("robustness");
        t_skip("the test models are missing: run make test");
        return;
    }
    sqlite3 *db = t_open();
    t_case("robustness: the test models register as good, mlm and pre");
    t_expect(db, "SELECT bert_load('good', '" GOOD "') || bert_load('mlm', '" MLM "') || "
               "bert_load('pre', '" PRETRAIN "')", NULL, "goodmlmpre");
    unload_while_reading();
    null_and_types(db);
    unknown_models(db);
    odd_text(db);
    truncation(db);
    top_k(db);
    blobs(db);
    options(db);
    configs(db);
    vocabularies(db);
    weights(db);
    huge_text(db);
    interrupt(db);
    sqlite3_close(db);
    drop_weight_copies();
}
