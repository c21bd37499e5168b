/*
 * test_checkpoint_fixture.c - writes the tiny checkpoint of
 * checkpoint_fixture.h.  No suite of its own: it is here (and named
 * test_*.c) because the runner is built from tests/test_*.c.
 */
#include "checkpoint_fixture.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void *tm_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(2); }
    return p;
}

void tm_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len) { fprintf(stderr, "cannot write %s\n", path); exit(2); }
    fclose(f);
}

void tm_write_text(const char *dir, const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    tm_write_file(path, text, strlen(text));
}

/* A fresh directory TM_ROOT/name, emptied of the files an earlier run left. */
tm_dir tm_case_dir(const char *name)
{
    tm_dir d;
    char *path = d.path;
    mkdir("build", 0755);
    mkdir(TM_ROOT, 0755);
    snprintf(path, sizeof d.path, TM_ROOT "/%s", name);
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

int tm_contains(const char *err, const char *needle)
{
    return err && strstr(err, needle) != NULL;
}

/* ------------------------------------------------------------------ writing safetensors */

/* Writes the 8-byte length (`claimed`, or the header's real length when 0),
 * the header and the data. */
void tm_write_st_raw(const char *path, const char *header, uint64_t claimed,
                         const void *data, size_t data_len)
{
    size_t hl = strlen(header);
    uint64_t n = claimed ? claimed : hl;
    unsigned char *buf = tm_xmalloc(8 + hl + data_len);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(n >> (8 * i));
    memcpy(buf + 8, header, hl);
    if (data_len) memcpy(buf + 8 + hl, data, data_len);
    tm_write_file(path, buf, 8 + hl + data_len);
    free(buf);
}

/* ------------------------------------------------------------------ the tiny checkpoint */

static float next_value(ckpt *c, float base)
{
    c->seed = c->seed * 1103515245u + 12345u;
    return base + (float)((int)((c->seed >> 16) % 129) - 64) / 64.0f;
}

tensor *ckpt_add(ckpt *c, const char *name, int d0, int d1, float base)
{
    tensor *t = &c->t[c->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = d1 ? 2 : 1;
    t->shape[0] = d0;
    t->shape[1] = d1;
    size_t n = (size_t)d0 * (d1 ? d1 : 1);
    t->values = tm_xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) t->values[i] = next_value(c, base);
    return t;
}

static void add_linear(ckpt *c, const char *name, int out, int in)
{
    char n[128];
    snprintf(n, sizeof n, "%s.weight", name);
    ckpt_add(c, n, out, in, 0);
    snprintf(n, sizeof n, "%s.bias", name);
    ckpt_add(c, n, out, 0, 0);
}

static void add_norm(ckpt *c, const char *name)
{
    char n[128];
    snprintf(n, sizeof n, "%s.weight", name);
    ckpt_add(c, n, H, 0, 1.0f);
    snprintf(n, sizeof n, "%s.bias", name);
    ckpt_add(c, n, H, 0, 0);
}

/* BertForPreTraining's tensors, named as in BertModel (no prefix). */
void ckpt_build(ckpt *c)
{
    memset(c, 0, sizeof *c);
    c->seed = 7;
    ckpt_add(c, "embeddings.word_embeddings.weight", V, H, 0);
    ckpt_add(c, "embeddings.position_embeddings.weight", P, H, 0);
    ckpt_add(c, "embeddings.token_type_embeddings.weight", TV, H, 0);
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
    ckpt_add(c, "cls.predictions.bias", V, 0, 0);
    add_linear(c, "cls.seq_relationship", 2, H);
}

void ckpt_free(ckpt *c)
{
    for (int i = 0; i < c->n; i++) free(c->t[i].values);
    c->n = 0;
}

tensor *ckpt_find(ckpt *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->t[i].name, name) == 0) return &c->t[i];
    return NULL;
}

void ckpt_drop(ckpt *c, const char *name)
{
    tensor *t = ckpt_find(c, name);
    if (!t) { fprintf(stderr, "no tensor %s to drop\n", name); exit(2); }
    free(t->values);
    *t = c->t[--c->n];
}

/* Puts every BertModel tensor under "bert." and/or renames LayerNorm
 * weight/bias to gamma/beta. */
void ckpt_rename_all(ckpt *c, int prefix, int gamma)
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
void ckpt_write(const ckpt *c, const char *dir, const char *dtype, int misalign)
{
    char cfg[512];
    snprintf(cfg, sizeof cfg,
             "{\"model_type\": \"bert\", \"vocab_size\": %d, \"hidden_size\": %d, "
             "\"num_hidden_layers\": %d, \"num_attention_heads\": %d, \"intermediate_size\": %d, "
             "\"max_position_embeddings\": %d, \"type_vocab_size\": %d, \"hidden_act\": \"gelu\"}",
             V, H, L, NH, FF, P, TV);
    tm_write_text(dir, "config.json", cfg);

    size_t hcap = 256 + (size_t)c->n * 200, hl = 0, off = 0;
    char *hdr = tm_xmalloc(hcap);
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

    unsigned char *data = tm_xmalloc(off);
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
    tm_write_st_raw(path, hdr, 0, data, off);
    free(data);
    free(hdr);
}

/* Loads a fresh copy of the standard checkpoint after `edit` changed it. */
int ckpt_load_edited(const char *name, void (*edit)(ckpt *), bert_model **m, char **err)
{
    ckpt c;
    ckpt_build(&c);
    if (edit) edit(&c);
    tm_dir dir = tm_case_dir(name);
    ckpt_write(&c, dir.path, "F32", 0);
    ckpt_free(&c);
    *m = NULL;
    *err = NULL;
    return bert_model_load(t_dir(dir.path), m, err);
}
