/*
 * test_model.c - the safetensors reader, the checkpoint loader and the
 * encoder's invariants.
 *
 * Every file used here is written by the test itself under build/test_model:
 * a tiny BERT whose weights are multiples of 1/64, exactly representable in
 * float32, float16 and bfloat16, so the same model stored three ways (and
 * under every tensor naming the loader accepts) must give the same numbers.
 * Numerical agreement with PyTorch is the golden suite's business; this one
 * checks that malformed input fails cleanly and that equivalent input gives
 * equivalent output.
 */
#include "test.h"
#include "../ext/encoder.h"
#include "../ext/internal.h"
#include "../ext/model.h"
#include "../ext/safetensors.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define ROOT "build/test_model"

/* The tiny model's sizes. */
enum { V = 13, H = 8, L = 2, NH = 2, FF = 12, P = 16, TV = 2 };

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(2); }
    return p;
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len) { fprintf(stderr, "cannot write %s\n", path); exit(2); }
    fclose(f);
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    write_file(path, text, strlen(text));
}

typedef struct { char path[256]; } dirname_t;

/* A fresh directory ROOT/name, emptied of the files an earlier run left. */
static dirname_t case_dir(const char *name)
{
    dirname_t d;
    char *path = d.path;
    mkdir("build", 0755);
    mkdir(ROOT, 0755);
    snprintf(path, sizeof d.path, ROOT "/%s", name);
    mkdir(path, 0755);
    static const char *const files[] = {"config.json", "model.safetensors", "modules.json",
                                        "sentence_bert_config.json", "1_Pooling/config.json",
                                        "2_Pool/config.json"};
    char f[600];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(f, sizeof f, "%s/%s", path, files[i]);
        remove(f);
    }
    return d;
}

static int contains(const char *err, const char *needle)
{
    return err && strstr(err, needle) != NULL;
}

/* ------------------------------------------------------------------ writing safetensors */

/* Writes the 8-byte length (`claimed`, or the header's real length when 0),
 * the header and the data. */
static void write_st_raw(const char *path, const char *header, uint64_t claimed,
                         const void *data, size_t data_len)
{
    size_t hl = strlen(header);
    uint64_t n = claimed ? claimed : hl;
    unsigned char *buf = xmalloc(8 + hl + data_len);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(n >> (8 * i));
    memcpy(buf + 8, header, hl);
    if (data_len) memcpy(buf + 8 + hl, data, data_len);
    write_file(path, buf, 8 + hl + data_len);
    free(buf);
}

/* Opens a file whose header is `header` over `data_len` zero bytes. */
static int st_try(const char *header, uint64_t claimed, size_t data_len, st_file **f, char **err)
{
    dirname_t dir = case_dir("st");
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", dir.path);
    void *data = calloc(data_len ? data_len : 1, 1);
    if (!data) exit(2);
    write_st_raw(path, header, claimed, data, data_len);
    free(data);
    return bert_safetensors_open(path, f, err);
}

/* ------------------------------------------------------------------ the tiny checkpoint */

typedef struct {
    char name[96];
    int ndim;
    long long shape[2];
    float *values;
    const char *dtype;        /* NULL: the checkpoint's dtype */
    const void *raw;          /* bytes written as they are, for odd dtypes */
    size_t raw_len;
} tensor;

typedef struct {
    tensor t[64];
    int n;
    unsigned seed;
} ckpt;

static float next_value(ckpt *c, float base)
{
    c->seed = c->seed * 1103515245u + 12345u;
    return base + (float)((int)((c->seed >> 16) % 129) - 64) / 64.0f;
}

static tensor *add(ckpt *c, const char *name, int d0, int d1, float base)
{
    tensor *t = &c->t[c->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = d1 ? 2 : 1;
    t->shape[0] = d0;
    t->shape[1] = d1;
    size_t n = (size_t)d0 * (d1 ? d1 : 1);
    t->values = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) t->values[i] = next_value(c, base);
    return t;
}

static void add_linear(ckpt *c, const char *name, int out, int in)
{
    char n[128];
    snprintf(n, sizeof n, "%s.weight", name);
    add(c, n, out, in, 0);
    snprintf(n, sizeof n, "%s.bias", name);
    add(c, n, out, 0, 0);
}

static void add_norm(ckpt *c, const char *name)
{
    char n[128];
    snprintf(n, sizeof n, "%s.weight", name);
    add(c, n, H, 0, 1.0f);
    snprintf(n, sizeof n, "%s.bias", name);
    add(c, n, H, 0, 0);
}

/* BertForPreTraining's tensors, named as in BertModel (no prefix). */
static void ckpt_build(ckpt *c)
{
    memset(c, 0, sizeof *c);
    c->seed = 7;
    add(c, "embeddings.word_embeddings.weight", V, H, 0);
    add(c, "embeddings.position_embeddings.weight", P, H, 0);
    add(c, "embeddings.token_type_embeddings.weight", TV, H, 0);
    add_norm(c, "embeddings.LayerNorm");
    char p[96];
    for (int l = 0; l < L; l++) {
#define LAYER(s) (snprintf(p, sizeof p, "encoder.layer.%d." s, l), p)
        add_linear(c, LAYER("attention.self.query"), H, H);
        add_linear(c, LAYER("attention.self.key"), H, H);
        add_linear(c, LAYER("attention.self.value"), H, H);
        add_linear(c, LAYER("attention.output.dense"), H, H);
        add_norm(c, LAYER("attention.output.LayerNorm"));
        add_linear(c, LAYER("intermediate.dense"), FF, H);
        add_linear(c, LAYER("output.dense"), H, FF);
        add_norm(c, LAYER("output.LayerNorm"));
#undef LAYER
    }
    add_linear(c, "pooler.dense", H, H);
    add_linear(c, "cls.predictions.transform.dense", H, H);
    add_norm(c, "cls.predictions.transform.LayerNorm");
    add(c, "cls.predictions.bias", V, 0, 0);
    add_linear(c, "cls.seq_relationship", 2, H);
}

static void ckpt_free(ckpt *c)
{
    for (int i = 0; i < c->n; i++) free(c->t[i].values);
    c->n = 0;
}

static tensor *find(ckpt *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->t[i].name, name) == 0) return &c->t[i];
    return NULL;
}

static void drop(ckpt *c, const char *name)
{
    tensor *t = find(c, name);
    if (!t) { fprintf(stderr, "no tensor %s to drop\n", name); exit(2); }
    free(t->values);
    *t = c->t[--c->n];
}

/* Puts every BertModel tensor under "bert." and/or renames LayerNorm
 * weight/bias to gamma/beta. */
static void rename_all(ckpt *c, int prefix, int gamma)
{
    for (int i = 0; i < c->n; i++) {
        char *n = c->t[i].name, tmp[96];
        if (prefix && strncmp(n, "cls.", 4) != 0) {
            snprintf(tmp, sizeof tmp, "bert.%s", n);
            strcpy(n, tmp);
        }
        size_t len = strlen(n);
        if (gamma && len > 16 && strcmp(n + len - 16, "LayerNorm.weight") == 0) strcpy(n + len - 6, "gamma");
        if (gamma && len > 14 && strcmp(n + len - 14, "LayerNorm.bias") == 0) strcpy(n + len - 4, "beta");
    }
}

/* float32 -> float16 for values that float16 holds exactly (normal or zero). */
static uint16_t exact_f16(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    uint16_t sign = (uint16_t)(b >> 16 & 0x8000);
    if ((b & 0x7fffffff) == 0) return sign;
    int e = (int)(b >> 23 & 0xff) - 127 + 15;
    return (uint16_t)(sign | e << 10 | (b >> 13 & 0x3ff));
}

static size_t dtype_size(const char *d)
{
    return strcmp(d, "F32") == 0 ? 4 : strcmp(d, "I64") == 0 ? 8 : 2;
}

/* Writes config.json and model.safetensors into dir.  The header is padded
 * with spaces so that the data starts 8-byte aligned, as Hugging Face's
 * writer does, or, with `misalign`, at 2 mod 4. */
static void ckpt_write(const ckpt *c, const char *dir, const char *dtype, int misalign)
{
    char cfg[512];
    snprintf(cfg, sizeof cfg,
             "{\"model_type\": \"bert\", \"vocab_size\": %d, \"hidden_size\": %d, "
             "\"num_hidden_layers\": %d, \"num_attention_heads\": %d, \"intermediate_size\": %d, "
             "\"max_position_embeddings\": %d, \"type_vocab_size\": %d, \"hidden_act\": \"gelu\"}",
             V, H, L, NH, FF, P, TV);
    write_text(dir, "config.json", cfg);

    size_t hcap = 256 + (size_t)c->n * 200, hl = 0, off = 0;
    char *hdr = xmalloc(hcap);
    hl += (size_t)snprintf(hdr + hl, hcap - hl, "{\"__metadata__\": {\"format\": \"pt\"}");
    for (int i = 0; i < c->n; i++) {
        const tensor *t = &c->t[i];
        const char *d = t->dtype ? t->dtype : dtype;
        size_t bytes = t->raw ? t->raw_len
                              : (size_t)t->shape[0] * (size_t)(t->ndim == 2 ? t->shape[1] : 1) * dtype_size(d);
        hl += (size_t)snprintf(hdr + hl, hcap - hl, ", \"%s\": {\"dtype\": \"%s\", \"shape\": [%lld",
                               t->name, d, t->shape[0]);
        if (t->ndim == 2) hl += (size_t)snprintf(hdr + hl, hcap - hl, ", %lld", t->shape[1]);
        hl += (size_t)snprintf(hdr + hl, hcap - hl, "], \"data_offsets\": [%zu, %zu]}", off, off + bytes);
        off += bytes;
    }
    hl += (size_t)snprintf(hdr + hl, hcap - hl, "}");
    int pad = (int)((misalign ? 10 - (8 + hl) % 4 : 8 - (8 + hl) % 8) % (misalign ? 4 : 8));
    hl += (size_t)snprintf(hdr + hl, hcap - hl, "%*s", pad, "");

    unsigned char *data = xmalloc(off);
    unsigned char *w = data;
    for (int i = 0; i < c->n; i++) {
        const tensor *t = &c->t[i];
        const char *d = t->dtype ? t->dtype : dtype;
        if (t->raw) {
            memcpy(w, t->raw, t->raw_len);
            w += t->raw_len;
            continue;
        }
        size_t n = (size_t)t->shape[0] * (size_t)(t->ndim == 2 ? t->shape[1] : 1);
        for (size_t j = 0; j < n; j++) {
            uint32_t b;
            memcpy(&b, &t->values[j], 4);
            if (strcmp(d, "F32") == 0) {
                for (int k = 0; k < 4; k++) *w++ = (unsigned char)(b >> (8 * k));
            } else {
                uint16_t h = strcmp(d, "F16") == 0 ? exact_f16(t->values[j]) : (uint16_t)(b >> 16);
                *w++ = (unsigned char)h;
                *w++ = (unsigned char)(h >> 8);
            }
        }
    }
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    write_st_raw(path, hdr, 0, data, off);
    free(data);
    free(hdr);
}

/* Loads a fresh copy of the standard checkpoint after `edit` changed it. */
static int load_edited(const char *name, void (*edit)(ckpt *), bert_model **m, char **err)
{
    ckpt c;
    ckpt_build(&c);
    if (edit) edit(&c);
    dirname_t dir = case_dir(name);
    ckpt_write(&c, dir.path, "F32", 0);
    ckpt_free(&c);
    *m = NULL;
    *err = NULL;
    return bert_model_load(dir.path, m, err);
}

/* ------------------------------------------------------------------ encoding helpers */

static const int32_t ids[] = {1, 5, 12, 0, 7, 2, 1, 9, 3, 11, 4, 2, 6};
static const int32_t types[] = {0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1};
static const int lengths[] = {6, 1, 6};

typedef struct {
    float hidden[13 * H];
    float pooled[3][4][H];     /* mean, cls, max, pooler */
    float logits[2 * V];
    double nsp;
} outputs;

static int run_model(const bert_model *m, outputs *o, char **err)
{
    bert_scratch *s = bert_scratch_new();
    if (!s) exit(2);
    const float *h = bert_encode(m, s, ids, types, lengths, 3, NULL, NULL, err);
    int rc = -1;
    if (h) {
        memcpy(o->hidden, h, sizeof o->hidden);
        static const bert_pooling modes[4] = {BERT_POOL_MEAN, BERT_POOL_CLS, BERT_POOL_MAX, BERT_POOL_POOLER};
        rc = 0;
        for (int i = 0, t0 = 0; i < 3; t0 += lengths[i], i++)
            for (int k = 0; k < 4; k++)
                rc |= bert_pool(m, h + t0 * H, lengths[i], modes[k], 0, o->pooled[i][k]);
        static const int rows[2] = {2, 10};
        rc |= bert_mlm_logits(m, s, h, rows, 2, o->logits, err);
        rc |= bert_nsp_probability(m, h, &o->nsp);
    }
    bert_scratch_free(s);
    return rc;
}

static double max_diff(const float *a, const float *b, size_t n)
{
    double d = 0;
    for (size_t i = 0; i < n; i++) {
        double x = fabs((double)a[i] - b[i]);
        if (!(x <= d)) d = x;
    }
    return d;
}

static double outputs_diff(const outputs *a, const outputs *b)
{
    double d = max_diff(a->hidden, b->hidden, sizeof a->hidden / sizeof(float));
    double p = max_diff(&a->pooled[0][0][0], &b->pooled[0][0][0], sizeof a->pooled / sizeof(float));
    double l = max_diff(a->logits, b->logits, sizeof a->logits / sizeof(float));
    double n = fabs(a->nsp - b->nsp);
    if (p > d) d = p;
    if (l > d) d = l;
    if (!(n <= d)) d = n;
    return d;
}

static int count_calls(void *ctx)
{
    (*(int *)ctx)++;
    return 0;
}

static int stop_at_second(void *ctx)
{
    return ++*(int *)ctx >= 2;
}

/* ------------------------------------------------------------------ edits */

static void edit_drop_key_bias(ckpt *c) { drop(c, "encoder.layer.1.attention.self.key.bias"); }
static void edit_drop_word(ckpt *c) { drop(c, "embeddings.word_embeddings.weight"); }
static void edit_bad_shape(ckpt *c) { find(c, "encoder.layer.0.intermediate.dense.weight")->shape[0] = 6; }
static void edit_bad_bias(ckpt *c)
{
    find(c, "encoder.layer.1.attention.self.query.bias")->shape[0] = H - 1;
}
static void edit_bias_as_matrix(ckpt *c)
{
    tensor *t = find(c, "encoder.layer.1.attention.self.query.bias");
    t->shape[0] = 4;
    t->shape[1] = 2;
    t->ndim = 2;
}
static void edit_transposed(ckpt *c)
{
    tensor *t = find(c, "encoder.layer.0.output.dense.weight");
    long long s = t->shape[0];
    t->shape[0] = t->shape[1];
    t->shape[1] = s;
}
static void edit_int_dtype(ckpt *c)
{
    tensor *t = find(c, "encoder.layer.1.output.LayerNorm.bias");
    t->dtype = "I32";
}
static const int64_t position_ids[P] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
static void edit_extras(ckpt *c)
{
    tensor *t = add(c, "embeddings.position_ids", 1, P, 0);
    t->dtype = "I64";
    t->raw = position_ids;
    t->raw_len = sizeof position_ids;
    add(c, "some.unknown.tensor", 3, 0, 0);
}
static void edit_partial_mlm(ckpt *c) { drop(c, "cls.predictions.transform.LayerNorm.bias"); }
static void edit_no_pooler(ckpt *c) { drop(c, "pooler.dense.bias"); }
static void edit_untied(ckpt *c)
{
    tensor *t = add(c, "cls.predictions.decoder.weight", V, H, 0);
    memcpy(t->values, find(c, "embeddings.word_embeddings.weight")->values, sizeof(float) * V * H);
}
static void edit_decoder_bias(ckpt *c)
{
    snprintf(find(c, "cls.predictions.bias")->name, 96, "cls.predictions.decoder.bias");
}
static void edit_bad_decoder(ckpt *c) { add(c, "cls.predictions.decoder.weight", V, H + 1, 0); }

/* ------------------------------------------------------------------ suites of cases */

static void safetensors_cases(void)
{
    st_file *f = NULL;
    char *err = NULL;
    char hdr[512];
    const char *listing = "{\"__metadata__\": {\"format\": \"pt\"},"
                          " \"late\": {\"dtype\": \"BF16\", \"shape\": [2, 2], \"data_offsets\": [12, 20]},"
                          " \"early\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
                          " \"empty\": {\"dtype\": \"F32\", \"shape\": [0, 5], \"data_offsets\": [8, 8]}}";

    t_case("safetensors: a file shorter than the length field");
    {
        dirname_t dir = case_dir("st");
        char path[600];
        snprintf(path, sizeof path, "%s/model.safetensors", dir.path);
        write_file(path, "\x05\0\0", 3);
        T_CHECK(bert_safetensors_open(path, &f, &err) == -1 && !f && contains(err, "too short"), "got: %s", err ? err : "success");
        free(err);
        err = NULL;
    }

    t_case("safetensors: header length past the end of the file");
    T_CHECK(st_try("{}", 1000, 0, &f, &err) == -1 && contains(err, "truncated"), "got: %s", err ? err : "success");
    free(err);
    err = NULL;
    T_CHECK(st_try("{}", UINT64_MAX, 0, &f, &err) == -1 && contains(err, "header claims"), "got: %s", err ? err : "success");
    free(err);
    err = NULL;

    t_case("safetensors: a header that is not a JSON object");
    static const char *const bad_headers[] = {"[1, 2]", "{\"a\": ", "nonsense", "\"x\""};
    for (size_t i = 0; i < sizeof bad_headers / sizeof *bad_headers; i++) {
        T_CHECK(st_try(bad_headers[i], 0, 0, &f, &err) == -1 && contains(err, "JSON"), "header %zu: %s", i,
                err ? err : "success");
        free(err);
        err = NULL;
    }

    t_case("safetensors: data offsets past the end of the data");
    T_CHECK(st_try("{\"w\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}", 0, 12, &f, &err) == -1 &&
            contains(err, "'w'") && contains(err, "truncated"), "got: %s", err ? err : "success");
    free(err);
    err = NULL;

    t_case("safetensors: offsets that are not a range");
    T_CHECK(st_try("{\"w\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [8, 4]}}", 0, 16, &f, &err) == -1 &&
            contains(err, "'w'") && contains(err, "not a range"), "got: %s", err ? err : "success");
    free(err);
    err = NULL;
    T_CHECK(st_try("{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [-4, 0]}}", 0, 16, &f, &err) == -1 &&
            contains(err, "'w'"), "got: %s", err ? err : "success");
    free(err);
    err = NULL;

    t_case("safetensors: a byte range that does not match shape and dtype");
    T_CHECK(st_try("{\"w\": {\"dtype\": \"F16\", \"shape\": [2, 3], \"data_offsets\": [0, 24]}}", 0, 24, &f, &err) == -1 &&
            contains(err, "'w'") && contains(err, "12 bytes"), "got: %s", err ? err : "success");
    free(err);
    err = NULL;

    t_case("safetensors: overlapping tensors");
    T_CHECK(st_try("{\"a\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]},"
                   " \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [12, 20]}}", 0, 20, &f, &err) == -1 &&
            contains(err, "'a'") && contains(err, "'b'") && contains(err, "share"), "got: %s", err ? err : "success");
    free(err);
    err = NULL;
    T_CHECK(st_try("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]},"
                   " \"b\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}", 0, 16, &f, &err) == -1 &&
            contains(err, "share"), "a range inside another: %s", err ? err : "success");
    free(err);
    err = NULL;

    t_case("safetensors: tensors out of order, with a gap, zero-sized, and metadata");
    if (T_CHECK(st_try(listing, 0, 20, &f, &err) == 0, "rejected: %s", err ? err : "?")) {
        const st_tensor *late = bert_safetensors_find(f, "late"), *early = bert_safetensors_find(f, "early");
        T_CHECK(bert_safetensors_count(f) == 3 && !bert_safetensors_find(f, "__metadata__"), "count %d", bert_safetensors_count(f));
        T_CHECK(late && early && late->data - early->data == 12, "offsets");
        T_CHECK(late && late->dtype == ST_BF16 && late->ndim == 2 && late->count == 4 && late->nbytes == 8, "late's entry");
        T_CHECK(bert_safetensors_find(f, "empty") && bert_safetensors_find(f, "empty")->count == 0, "zero-sized tensor");
        T_CHECK(bert_safetensors_size(f) == 8 + strlen(listing) + 20, "size %zu", bert_safetensors_size(f));
    }
    bert_safetensors_close(f);
    f = NULL;
    free(err);
    err = NULL;

    t_case("safetensors: unknown dtype names the tensor");
    T_CHECK(st_try("{\"w\": {\"dtype\": \"Q4_K\", \"shape\": [4], \"data_offsets\": [0, 4]}}", 0, 4, &f, &err) == -1 &&
            contains(err, "'w'") && contains(err, "Q4_K"), "got: %s", err ? err : "success");
    free(err);
    err = NULL;

    t_case("safetensors: malformed entries");
    static const char *const entries[] = {
        "{\"w\": 5}",
        "{\"w\": {\"shape\": [1], \"data_offsets\": [0, 4]}}",
        "{\"w\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}}",
        "{\"w\": {\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 4]}}",
        "{\"w\": {\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 4]}}",
        "{\"w\": {\"dtype\": \"F32\", \"shape\": [1]}}",
        "{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0]}}",
        "{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [\"0\", \"4\"]}}",
        "{\"w\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], \"data_offsets\": [0, 4]}}",
    };
    for (size_t i = 0; i < sizeof entries / sizeof *entries; i++) {
        T_CHECK(st_try(entries[i], 0, 8, &f, &err) == -1 && contains(err, "'w'"), "entry %zu: %s", i,
                err ? err : "success");
        free(err);
        err = NULL;
    }

    t_case("safetensors: a shape whose size overflows");
    /* 2^62 * 4 * 4 bytes wraps to 0, which the empty range would match */
    T_CHECK(st_try("{\"w\": {\"dtype\": \"F32\", \"shape\": [4611686018427387904, 4], \"data_offsets\": [0, 0]}}",
                   0, 8, &f, &err) == -1 && contains(err, "'w'") && contains(err, "too large"), "got: %s",
            err ? err : "success");
    free(err);
    err = NULL;

    t_case("safetensors: a tensor named twice");
    snprintf(hdr, sizeof hdr, "{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
                              " \"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}");
    T_CHECK(st_try(hdr, 0, 8, &f, &err) == -1 && contains(err, "twice"), "got: %s", err ? err : "success");
    free(err);
    err = NULL;
}

static void config_cases(void)
{
    bert_config cfg;
    char *err = NULL;
    dirname_t d = case_dir("config");
    const char *dir = d.path;

    t_case("config: a missing config.json");
    T_CHECK(bert_config_load(dir, &cfg, &err) == -1 && contains(err, "config.json"), "got: %s", err ? err : "success");
    free(err);

    t_case("config: model_type bert alone takes BertConfig's defaults");
    write_text(dir, "config.json", "{\"model_type\": \"bert\"}");
    if (T_CHECK(bert_config_load(dir, &cfg, &err) == 0, "rejected: %s", err ? err : "?"))
        T_CHECK(cfg.vocab_size == 30522 && cfg.hidden_size == 768 && cfg.num_layers == 12 && cfg.num_heads == 12 &&
                cfg.intermediate_size == 3072 && cfg.max_position_embeddings == 512 && cfg.type_vocab_size == 2 &&
                cfg.layer_norm_eps == 1e-12f && cfg.hidden_act == BERT_ACT_GELU, "defaults");

    t_case("config: no model_type, but all the sizes");
    write_text(dir, "config.json",
               "{\"vocab_size\": 100, \"hidden_size\": 64, \"num_hidden_layers\": 3, \"num_attention_heads\": 4,"
               " \"intermediate_size\": 128, \"max_position_embeddings\": 32, \"layer_norm_eps\": 1e-5,"
               " \"hidden_act\": \"gelu_new\"}");
    if (T_CHECK(bert_config_load(dir, &cfg, &err) == 0, "rejected: %s", err ? err : "?"))
        T_CHECK(cfg.vocab_size == 100 && cfg.hidden_size == 64 && cfg.num_layers == 3 && cfg.type_vocab_size == 2 &&
                cfg.layer_norm_eps == 1e-5f && cfg.hidden_act == BERT_ACT_GELU_TANH, "values");

    static const struct { const char *json, *needle; } bad[] = {
        {"{\"model_type\": \"roberta\"}", "roberta"},
        {"{\"model_type\": 3}", "model_type"},
        {"{\"hidden_size\": 64}", "vocab_size"},
        {"{\"model_type\": \"bert\", \"hidden_size\": 100, \"num_attention_heads\": 12}", "multiple"},
        {"{\"model_type\": \"bert\", \"num_hidden_layers\": 0}", "num_hidden_layers"},
        {"{\"model_type\": \"bert\", \"vocab_size\": -5}", "vocab_size"},
        {"{\"model_type\": \"bert\", \"vocab_size\": 1e15}", "vocab_size"},
        {"{\"model_type\": \"bert\", \"hidden_size\": 1048576, \"num_attention_heads\": 1}", "hidden_size"},
        {"{\"model_type\": \"bert\", \"max_position_embeddings\": 100000000}", "max_position_embeddings"},
        {"{\"model_type\": \"bert\", \"intermediate_size\": \"big\"}", "intermediate_size"},
        {"{\"model_type\": \"bert\", \"type_vocab_size\": 0}", "type_vocab_size"},
        {"{\"model_type\": \"bert\", \"hidden_act\": \"swish\"}", "swish"},
        {"{\"model_type\": \"bert\", \"layer_norm_eps\": -1}", "layer_norm_eps"},
        {"{\"model_type\": \"bert\", \"layer_norm_eps\": \"tiny\"}", "layer_norm_eps"},
        {"[1, 2]", "object"},
        {"{\"model_type\": \"bert\",", "config.json"},
    };
    t_case("config: bad values are refused with the key named");
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_text(dir, "config.json", bad[i].json);
        err = NULL;
        T_CHECK(bert_config_load(dir, &cfg, &err) == -1 && contains(err, bad[i].needle), "%s: %s", bad[i].json,
                err ? err : "accepted");
        free(err);
    }
}

static void st_config_cases(void)
{
    bert_st_config st;
    char *err = NULL;
    dirname_t d = case_dir("stconfig");
    const char *dir = d.path;
    char sub[600];

    t_case("sentence-transformers: a plain checkpoint");
    T_CHECK(bert_st_config_load(dir, &st, &err) == 0 && !st.present && st.pooling == BERT_POOL_MEAN &&
            !st.normalize && st.max_seq_length == 0, "got present=%d pooling=%d: %s", st.present, st.pooling,
            err ? err : "");
    free(err);

    t_case("sentence-transformers: the Pooling path, Normalize and max_seq_length");
    snprintf(sub, sizeof sub, "%s/2_Pool", dir);
    mkdir(sub, 0755);
    write_text(dir, "modules.json",
               "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},"
               " {\"idx\": 1, \"name\": \"1\", \"path\": \"2_Pool\", \"type\": \"sentence_transformers.models.Pooling\"},"
               " {\"idx\": 2, \"name\": \"2\", \"path\": \"3_Normalize\", \"type\": \"sentence_transformers.models.Normalize\"}]");
    write_text(sub, "config.json",
               "{\"word_embedding_dimension\": 8, \"pooling_mode_cls_token\": true,"
               " \"pooling_mode_mean_tokens\": false, \"pooling_mode_max_tokens\": false}");
    write_text(dir, "sentence_bert_config.json", "{\"max_seq_length\": 256, \"do_lower_case\": false}");
    err = NULL;
    T_CHECK(bert_st_config_load(dir, &st, &err) == 0 && st.present && st.pooling == BERT_POOL_CLS && st.normalize &&
            st.max_seq_length == 256, "got present=%d pooling=%d normalize=%d max=%d: %s", st.present, st.pooling,
            st.normalize, st.max_seq_length, err ? err : "");
    free(err);

    t_case("sentence-transformers: 1_Pooling without modules.json");
    d = case_dir("stconfig2");
    snprintf(sub, sizeof sub, "%s/1_Pooling", dir);
    mkdir(sub, 0755);
    write_text(sub, "config.json", "{\"pooling_mode_max_tokens\": true, \"pooling_mode_mean_tokens\": false}");
    err = NULL;
    T_CHECK(bert_st_config_load(dir, &st, &err) == 0 && st.present && st.pooling == BERT_POOL_MAX && !st.normalize,
            "got present=%d pooling=%d: %s", st.present, st.pooling, err ? err : "");
    free(err);

    static const struct { const char *pooling, *needle; } bad[] = {
        {"{\"pooling_mode_cls_token\": true, \"pooling_mode_mean_tokens\": true}", "several"},
        {"{\"pooling_mode_lasttoken\": true}", "pooling_mode_lasttoken"},
        {"{\"pooling_mode_weightedmean_tokens\": true}", "weightedmean"},
        {"{\"pooling_mode_cls_token\": ", "config.json"},
    };
    t_case("sentence-transformers: pooling modes that cannot be honoured");
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_text(sub, "config.json", bad[i].pooling);
        err = NULL;
        T_CHECK(bert_st_config_load(dir, &st, &err) == -1 && contains(err, bad[i].needle), "%s: %s", bad[i].pooling,
                err ? err : "accepted");
        free(err);
    }

    t_case("sentence-transformers: modules that would change the vectors");
    write_text(sub, "config.json", "{\"pooling_mode_mean_tokens\": true}");
    write_text(dir, "modules.json",
               "[{\"idx\": 0, \"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},"
               " {\"idx\": 1, \"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"},"
               " {\"idx\": 2, \"path\": \"2_Dense\", \"type\": \"sentence_transformers.models.Dense\"}]");
    err = NULL;
    T_CHECK(bert_st_config_load(dir, &st, &err) == -1 && contains(err, "Dense"), "got: %s", err ? err : "accepted");
    free(err);
    write_text(dir, "modules.json", "{\"not\": \"an array\"}");
    err = NULL;
    T_CHECK(bert_st_config_load(dir, &st, &err) == -1 && contains(err, "modules.json"), "got: %s", err ? err : "accepted");
    free(err);
    remove(ROOT "/stconfig2/modules.json");
    write_text(dir, "sentence_bert_config.json", "{\"max_seq_length\": -3}");
    err = NULL;
    T_CHECK(bert_st_config_load(dir, &st, &err) == -1 && contains(err, "max_seq_length"), "got: %s", err ? err : "accepted");
    free(err);
}

static void loader_cases(void)
{
    bert_model *m = NULL;
    char *err = NULL;

    t_case("loader: a float32 checkpoint is used in place");
    if (T_CHECK(load_edited("f32", NULL, &m, &err) == 0, "rejected: %s", err ? err : "?")) {
        struct stat sb;
        T_CHECK(stat(ROOT "/f32/model.safetensors", &sb) == 0 && m->file_size == (size_t)sb.st_size, "file_size %zu",
                m->file_size);
        T_CHECK(m->converted_bytes == 0 && strcmp(m->dtype, "float32") == 0, "converted %zu dtype %s",
                m->converted_bytes, m->dtype);
        T_CHECK(m->pooler_w && m->nsp_w && m->mlm_dense_w && m->mlm_bias, "heads bound");
        T_CHECK(m->mlm_decoder_w == m->word_emb, "the decoder is tied to the word embeddings");
        T_CHECK(m->cfg.hidden_size == H && m->cfg.num_layers == L && m->layers[L - 1].ff_ln_b, "layers bound");
    }
    bert_model_free(m);
    free(err);

    t_case("loader: a missing tensor is named");
    T_CHECK(load_edited("missing", edit_drop_key_bias, &m, &err) == -1 && !m &&
            contains(err, "encoder.layer.1.attention.self.key.bias"), "got: %s", err ? err : "success");
    free(err);
    T_CHECK(load_edited("missing", edit_drop_word, &m, &err) == -1 && contains(err, "embeddings.word_embeddings.weight"),
            "got: %s", err ? err : "success");
    free(err);

    t_case("loader: a shape that disagrees with config.json");
    T_CHECK(load_edited("shape", edit_bad_shape, &m, &err) == -1 &&
            contains(err, "encoder.layer.0.intermediate.dense.weight") && contains(err, "[6, 8]") &&
            contains(err, "[12, 8]"), "got: %s", err ? err : "success");
    free(err);
    T_CHECK(load_edited("shape", edit_transposed, &m, &err) == -1 && contains(err, "encoder.layer.0.output.dense.weight"),
            "got: %s", err ? err : "success");
    free(err);
    T_CHECK(load_edited("shape", edit_bad_bias, &m, &err) == -1 &&
            contains(err, "encoder.layer.1.attention.self.query.bias") && contains(err, "[7]"), "got: %s",
            err ? err : "success");
    free(err);
    T_CHECK(load_edited("shape", edit_bias_as_matrix, &m, &err) == -1 &&
            contains(err, "encoder.layer.1.attention.self.query.bias") && contains(err, "[4, 2]"), "got: %s",
            err ? err : "success");
    free(err);
    T_CHECK(load_edited("shape", edit_bad_decoder, &m, &err) == -1 && contains(err, "cls.predictions.decoder.weight"),
            "got: %s", err ? err : "success");
    free(err);

    t_case("loader: a weight stored as integers");
    T_CHECK(load_edited("dtype", edit_int_dtype, &m, &err) == -1 &&
            contains(err, "encoder.layer.1.output.LayerNorm.bias") && contains(err, "I32"), "got: %s",
            err ? err : "success");
    free(err);

    t_case("loader: position_ids and unknown tensors are ignored");
    T_CHECK(load_edited("extras", edit_extras, &m, &err) == 0, "rejected: %s", err ? err : "?");
    bert_model_free(m);
    free(err);

    t_case("loader: incomplete heads count as absent");
    if (T_CHECK(load_edited("partial", edit_partial_mlm, &m, &err) == 0, "rejected: %s", err ? err : "?")) {
        T_CHECK(!m->mlm_dense_w && !m->mlm_ln_w && !m->mlm_decoder_w && !m->mlm_bias, "MLM head left unbound");
        T_CHECK(m->nsp_w && m->pooler_w, "other heads bound");
        float out[V];
        int row = 0;
        char *e = NULL;
        T_CHECK(bert_mlm_logits(m, NULL, out, &row, 1, out, &e) == -1 && contains(e, "masked-language-model"),
                "got: %s", e ? e : "success");
        free(e);
    }
    bert_model_free(m);
    free(err);
    if (T_CHECK(load_edited("partial", edit_no_pooler, &m, &err) == 0, "rejected: %s", err ? err : "?")) {
        float hidden[H] = {0}, out[H];
        double p;
        T_CHECK(!m->pooler_w && !m->pooler_b, "pooler left unbound");
        T_CHECK(bert_pool(m, hidden, 1, BERT_POOL_POOLER, 0, out) == -1, "pooler pooling without a pooler");
        T_CHECK(bert_nsp_probability(m, hidden, &p) == -1, "NSP without a pooler");
    }
    bert_model_free(m);
    free(err);

    t_case("loader: missing model.safetensors");
    {
        dirname_t dir = case_dir("noweights");
        write_text(dir.path, "config.json", "{\"model_type\": \"bert\"}");
        err = NULL;
        T_CHECK(bert_model_load(dir.path, &m, &err) == -1 && contains(err, "model.safetensors"), "got: %s",
                err ? err : "success");
        free(err);
    }

    t_case("loader: float16 and bfloat16 widen exactly");
    {
        /* bit pattern -> value, the values written out independently of the loader */
        static const struct { uint16_t f16, bf16; } bits[] = {
            {0x3c00, 0x3f80}, {0xc000, 0xc000}, {0x0001, 0x0001}, {0x03ff, 0x007f}, {0x0400, 0x0080},
            {0x7bff, 0x7f7f}, {0x8000, 0x8000}, {0x7c00, 0x7f80}, {0xfc00, 0xff80}, {0x7e00, 0x7fc0},
            {0x3555, 0x3eab},
        };
        const double f16_expect[] = {1.0, -2.0, ldexp(1, -24), ldexp(1023, -24), ldexp(1, -14), 65504.0, -0.0,
                                     INFINITY, -INFINITY, NAN, 1365.0 / 4096.0};
        const double bf16_expect[] = {1.0, -2.0, ldexp(1, -133), ldexp(127, -133), ldexp(1, -126),
                                      ldexp(255, 120), -0.0, INFINITY, -INFINITY, NAN, 171.0 / 512.0};
        const size_t n = sizeof bits / sizeof *bits;
        for (int which = 0; which < 2; which++) {
            ckpt c;
            ckpt_build(&c);
            uint16_t raw[V * H] = {0};
            for (size_t i = 0; i < n; i++) raw[i] = which ? bits[i].bf16 : bits[i].f16;
            tensor *t = find(&c, "embeddings.word_embeddings.weight");
            t->raw = raw;
            t->raw_len = sizeof raw;
            dirname_t dir = case_dir("widen");
            ckpt_write(&c, dir.path, which ? "BF16" : "F16", 0);
            ckpt_free(&c);
            err = NULL;
            if (T_CHECK(bert_model_load(dir.path, &m, &err) == 0, "rejected: %s", err ? err : "?")) {
                const double *expect = which ? bf16_expect : f16_expect;
                T_CHECK(strcmp(m->dtype, which ? "bfloat16" : "float16") == 0, "dtype %s", m->dtype);
                T_CHECK(m->converted_bytes > 0, "nothing converted");
                for (size_t i = 0; i < n; i++) {
                    float got = m->word_emb[i];
                    int same = isnan(expect[i]) ? isnan(got)
                                                : got == (float)expect[i] && !signbit(got) == !signbit(expect[i]);
                    T_CHECK(same, "%s pattern 0x%04x: got %.9g, want %.9g", which ? "bf16" : "f16",
                            which ? bits[i].bf16 : bits[i].f16, got, expect[i]);
                }
            }
            bert_model_free(m);
            m = NULL;
            free(err);
        }
    }
}

/* The same weights under every accepted encoding and naming give the same outputs. */
static void equivalence_cases(void)
{
    outputs ref, got;
    bert_model *m = NULL;
    char *err = NULL;

    t_case("encoder: runs on the float32 checkpoint");
    int have_ref = load_edited("f32", NULL, &m, &err) == 0 && run_model(m, &ref, &err) == 0;
    T_CHECK(have_ref, "failed: %s", err ? err : "?");
    T_CHECK(have_ref && ref.nsp > 0 && ref.nsp < 1, "NSP probability %g", ref.nsp);
    bert_model_free(m);
    free(err);
    if (!have_ref) return;

    static const struct { const char *name, *dtype; int prefix, gamma, untied, misalign; } variants[] = {
        {"f16", "F16", 0, 0, 0, 0},
        {"bf16", "BF16", 0, 0, 0, 0},
        {"prefix", "F32", 1, 0, 0, 0},
        {"gamma", "F16", 1, 1, 0, 0},
        {"untied", "BF16", 0, 1, 1, 0},
        {"misaligned", "F32", 1, 1, 1, 1},
    };
    for (size_t i = 0; i < sizeof variants / sizeof *variants; i++) {
        char name[64];
        snprintf(name, sizeof name, "encoder: the same weights, %s", variants[i].name);
        t_case(name);
        ckpt c;
        ckpt_build(&c);
        if (variants[i].untied) edit_untied(&c);
        rename_all(&c, variants[i].prefix, variants[i].gamma);
        dirname_t dir = case_dir(variants[i].name);
        ckpt_write(&c, dir.path, variants[i].dtype, variants[i].misalign);
        ckpt_free(&c);
        err = NULL;
        m = NULL;
        if (T_CHECK(bert_model_load(dir.path, &m, &err) == 0, "rejected: %s", err ? err : "?")) {
            T_CHECK(variants[i].untied ? m->mlm_decoder_w != m->word_emb : m->mlm_decoder_w == m->word_emb,
                    "decoder tied=%d", m->mlm_decoder_w == m->word_emb);
            if (variants[i].misalign) T_CHECK(m->converted_bytes > 0, "misaligned float32 was used in place");
            if (T_CHECK(run_model(m, &got, &err) == 0, "failed: %s", err ? err : "?"))
                T_CHECK(outputs_diff(&ref, &got) < 1e-6, "max difference %g", outputs_diff(&ref, &got));
        }
        bert_model_free(m);
        free(err);
    }

    t_case("encoder: the MLM bias may be called cls.predictions.decoder.bias");
    if (T_CHECK(load_edited("decoder_bias", edit_decoder_bias, &m, &err) == 0, "rejected: %s", err ? err : "?") &&
        T_CHECK(run_model(m, &got, &err) == 0, "failed: %s", err ? err : "?"))
        T_CHECK(outputs_diff(&ref, &got) < 1e-6, "max difference %g", outputs_diff(&ref, &got));
    bert_model_free(m);
    free(err);
}

static void encoder_cases(void)
{
    bert_model *m = NULL;
    char *err = NULL;
    if (!T_CHECK(load_edited("f32", NULL, &m, &err) == 0, "rejected: %s", err ? err : "?")) {
        free(err);
        return;
    }
    bert_scratch *s = bert_scratch_new();
    if (!s) exit(2);

    t_case("encoder: packed sequences do not see each other");
    {
        const float *h = bert_encode(m, s, ids, types, lengths, 3, NULL, NULL, &err);
        float packed[13 * H];
        if (T_CHECK(h != NULL, "failed: %s", err ? err : "?")) {
            memcpy(packed, h, sizeof packed);
            for (int i = 0, t0 = 0; i < 3; t0 += lengths[i], i++) {
                h = bert_encode(m, s, ids + t0, types + t0, &lengths[i], 1, NULL, NULL, &err);
                if (!T_CHECK(h != NULL, "failed: %s", err ? err : "?")) break;
                double d = max_diff(h, packed + t0 * H, (size_t)lengths[i] * H);
                T_CHECK(d < 1e-5, "sequence %d alone differs by %g", i, d);
            }
        }
    }

    t_case("encoder: segment ids NULL means segment 0");
    {
        static const int32_t zeros[13] = {0};
        float a[13 * H];
        const float *h = bert_encode(m, s, ids, zeros, lengths, 3, NULL, NULL, &err);
        if (T_CHECK(h != NULL, "failed: %s", err ? err : "?")) {
            memcpy(a, h, sizeof a);
            h = bert_encode(m, s, ids, NULL, lengths, 3, NULL, NULL, &err);
            T_CHECK(h && max_diff(a, h, 13 * H) == 0, "differs");
        }
    }

    t_case("encoder: scratch memory is reused");
    {
        size_t before = bert_scratch_bytes(s);
        T_CHECK(before > 0, "no scratch recorded");
        const float *h = bert_encode(m, s, ids, types, lengths, 3, NULL, NULL, &err);
        T_CHECK(h && bert_scratch_bytes(s) == before, "grew from %zu to %zu", before, bert_scratch_bytes(s));
        h = bert_encode(m, s, ids, types, lengths, 1, NULL, NULL, &err);
        T_CHECK(h && bert_scratch_bytes(s) == before, "a smaller call changed the scratch");
    }

    t_case("encoder: bad input is refused with a reason");
    {
        int32_t bad_ids[13], bad_types[13];
        memcpy(bad_ids, ids, sizeof bad_ids);
        memcpy(bad_types, types, sizeof bad_types);
        bad_ids[8] = V;
        err = NULL;
        T_CHECK(!bert_encode(m, s, bad_ids, types, lengths, 3, NULL, NULL, &err) && contains(err, "vocabulary") &&
                contains(err, "position 8"), "id = vocab_size: %s", err ? err : "accepted");
        free(err);
        bad_ids[8] = -1;
        err = NULL;
        T_CHECK(!bert_encode(m, s, bad_ids, types, lengths, 3, NULL, NULL, &err) && contains(err, "vocabulary"),
                "negative id: %s", err ? err : "accepted");
        free(err);
        bad_types[4] = TV;
        err = NULL;
        T_CHECK(!bert_encode(m, s, ids, bad_types, lengths, 3, NULL, NULL, &err) && contains(err, "type_vocab_size"),
                "segment id: %s", err ? err : "accepted");
        free(err);
        int32_t long_ids[P + 1] = {0};
        int too_long = P + 1, empty[2] = {3, 0};
        err = NULL;
        T_CHECK(!bert_encode(m, s, long_ids, NULL, &too_long, 1, NULL, NULL, &err) &&
                contains(err, "max_position_embeddings"), "too long: %s", err ? err : "accepted");
        free(err);
        err = NULL;
        T_CHECK(!bert_encode(m, s, ids, NULL, empty, 2, NULL, NULL, &err) && contains(err, "sequence 1"),
                "empty sequence: %s", err ? err : "accepted");
        free(err);
        err = NULL;
        T_CHECK(!bert_encode(m, s, ids, NULL, lengths, 0, NULL, NULL, &err) && err, "no sequences accepted");
        free(err);
        int longest = P;
        err = NULL;
        T_CHECK(bert_encode(m, s, long_ids, NULL, &longest, 1, NULL, NULL, &err) != NULL,
                "max_position_embeddings tokens refused: %s", err ? err : "?");
        free(err);
        err = NULL;
    }

    t_case("encoder: the interrupt callback is polled between layers");
    {
        int calls = 0;
        T_CHECK(bert_encode(m, s, ids, types, lengths, 3, count_calls, &calls, &err) != NULL && calls == L,
                "%d polls for %d layers", calls, L);
        calls = 0;
        err = NULL;
        T_CHECK(!bert_encode(m, s, ids, types, lengths, 3, stop_at_second, &calls, &err) && contains(err, "interrupted"),
                "got: %s", err ? err : "not interrupted");
        free(err);
        err = NULL;
    }

    t_case("pooling: mean, cls and max over a sequence, and L2 normalisation");
    {
        float hidden[3 * H], out[H];
        for (int i = 0; i < 3 * H; i++) hidden[i] = (float)((i * 7) % 11) - 5.0f;
        int ok = 1;
        T_CHECK(bert_pool(m, hidden, 3, BERT_POOL_MEAN, 0, out) == 0, "mean failed");
        for (int j = 0; j < H; j++)
            ok &= fabs(out[j] - (hidden[j] + hidden[H + j] + hidden[2 * H + j]) / 3.0) < 1e-6;
        T_CHECK(ok, "mean");
        T_CHECK(bert_pool(m, hidden, 3, BERT_POOL_CLS, 0, out) == 0 && memcmp(out, hidden, sizeof out) == 0, "cls");
        T_CHECK(bert_pool(m, hidden, 3, BERT_POOL_MAX, 0, out) == 0, "max failed");
        for (int j = 0; j < H; j++)
            ok &= out[j] == fmaxf(hidden[j], fmaxf(hidden[H + j], hidden[2 * H + j]));
        T_CHECK(ok, "max");
        T_CHECK(bert_pool(m, hidden, 3, BERT_POOL_MEAN, 1, out) == 0, "normalised mean failed");
        double ss = 0;
        for (int j = 0; j < H; j++) ss += (double)out[j] * out[j];
        T_CHECK(fabs(ss - 1) < 1e-6, "squared norm %g", ss);
        float zeros[H] = {0};
        T_CHECK(bert_pool(m, zeros, 1, BERT_POOL_CLS, 1, out) == 0 && out[0] == 0 && !isnan(out[H - 1]),
                "a zero vector normalises to zero");
        T_CHECK(bert_pool(m, hidden, 0, BERT_POOL_MEAN, 0, out) == -1, "an empty sequence pooled");
    }

    bert_scratch_free(s);
    bert_model_free(m);
}

void suite_model(void)
{
    safetensors_cases();
    config_cases();
    st_config_cases();
    loader_cases();
    equivalence_cases();
    encoder_cases();
}
