/*
 * test_loader.c - the checkpoint loader (ext/models/model.c) on the tiny
 * checkpoint of checkpoint_fixture.h: what it binds, what it refuses and
 * names, what it ignores, and how it widens half-precision weights.
 */
#include "test.h"
#include "checkpoint_fixture.h"
#include "../ext/encoder/encoder.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------------ edits */

static void edit_drop_key_bias(ckpt *c) { ckpt_drop(c, "encoder.layer.1.attention.self.key.bias"); }
static void edit_drop_word(ckpt *c) { ckpt_drop(c, "embeddings.word_embeddings.weight"); }
static void edit_bad_shape(ckpt *c) { ckpt_find(c, "encoder.layer.0.intermediate.dense.weight")->shape[0] = 6; }
static void edit_bad_bias(ckpt *c)
{
    ckpt_find(c, "encoder.layer.1.attention.self.query.bias")->shape[0] = H - 1;
}
static void edit_bias_as_matrix(ckpt *c)
{
    tensor *t = ckpt_find(c, "encoder.layer.1.attention.self.query.bias");
    t->shape[0] = 4;
    t->shape[1] = 2;
    t->ndim = 2;
}
static void edit_transposed(ckpt *c)
{
    tensor *t = ckpt_find(c, "encoder.layer.0.output.dense.weight");
    long long s = t->shape[0];
    t->shape[0] = t->shape[1];
    t->shape[1] = s;
}
static void edit_int_dtype(ckpt *c)
{
    tensor *t = ckpt_find(c, "encoder.layer.1.output.LayerNorm.bias");
    t->dtype = "I32";
}
static const int64_t position_ids[P] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
static void edit_extras(ckpt *c)
{
    tensor *t = ckpt_add(c, "embeddings.position_ids", 1, P, 0);
    t->dtype = "I64";
    t->raw = position_ids;
    t->raw_len = sizeof position_ids;
    ckpt_add(c, "some.unknown.tensor", 3, 0, 0);
}
static void edit_partial_mlm(ckpt *c) { ckpt_drop(c, "cls.predictions.transform.LayerNorm.bias"); }
static void edit_no_pooler(ckpt *c) { ckpt_drop(c, "pooler.dense.bias"); }
static void edit_bad_decoder(ckpt *c) { ckpt_add(c, "cls.predictions.decoder.weight", V, H + 1, 0); }

/* ------------------------------------------------------------------ cases */

static void float32_in_place(void)
{
    bert_model *m = NULL;
    char *err = NULL;

    t_case("loader: a float32 checkpoint is used in place");
    /* Unpacked: where the CPU has panel kernels the projections are packed
     * and the 1-D tensors copied out (test_precision.c checks that). */
    char *saved = t_setenv("SQLITE_BERT_PACK", "0");
    int loaded = ckpt_load_edited("f32", NULL, &m, &err);
    t_restore_env("SQLITE_BERT_PACK", saved);
    if (T_CHECK(loaded == 0, "rejected: %s", err ? err : "?")) {
        struct stat sb;
        T_CHECK(stat(TM_ROOT "/f32/model.safetensors", &sb) == 0 && m->file_size == (size_t)sb.st_size, "file_size %zu",
                m->file_size);
        T_CHECK(m->converted_bytes == 0 && strcmp(m->dtype, "float32") == 0, "converted %zu dtype %s",
                m->converted_bytes, m->dtype);
        T_CHECK(m->pooler_w && m->nsp_w && m->mlm_dense_w && m->mlm_bias, "heads bound");
        T_CHECK(m->mlm_decoder_w == m->word_emb, "the decoder is tied to the word embeddings");
        T_CHECK(m->cfg.hidden_size == H && m->cfg.num_layers == L && m->layers[L - 1].ff_ln_b, "layers bound");
    }
    bert_model_free(m);
    free(err);
}

/* The environment of run `run` of a check of what loading packs: run 1
 * under SQLITE_BERT_ISA=level (which rules the packing out), run 2 under
 * the suite's own SQLITE_BERT_ISA (`saved`, or unset) with
 * SQLITE_BERT_PACK=0; run 0 as it was. */
static void packing_run_env(int run, const char *level, const char *saved)
{
    if (run == 1) setenv("SQLITE_BERT_ISA", level, 1);
    if (run == 2) {
        if (saved) setenv("SQLITE_BERT_ISA", saved, 1);
        else unsetenv("SQLITE_BERT_ISA");
        setenv("SQLITE_BERT_PACK", "0", 1);
    }
}

/* float32 projections are packed once at load for the panel kernels (on
 * a CPU that has them), panel p holding W[16 p + e][c] at [p][c][e], the
 * rows past the last zero; under SQLITE_BERT_ISA=base or SQLITE_BERT_PACK=0
 * nothing is packed. */
static void float32_packed_at_load(void)
{
    t_case("loader: float32 projections are packed at load for the panel kernels");
    const char *saved_env = getenv("SQLITE_BERT_ISA");
    char *saved = saved_env ? strdup(saved_env) : NULL;
    for (int run = 0; run < 3; run++) {
        bert_model *m = NULL;
        char *err = NULL;
        packing_run_env(run, "base", saved);
        int packs = run == 0 && (bert_cpu_isa() == BERT_ISA_AVX2 || bert_cpu_isa() == BERT_ISA_AVX512);
        if (T_CHECK(ckpt_load_edited("f32", NULL, &m, &err) == 0, "rejected: %s", err ? err : "?")) {
            const bert_matrix *w = &m->layers[L - 1].ff_in_w; /* [FF x H] */
            const int rows = m->cfg.intermediate_size, cols = m->cfg.hidden_size;
            if (packs) {
                size_t want = 0;
                for (int l = 0; l < L; l++)
                    want += (4 * bert_f32_packed_floats(cols, cols) + bert_f32_packed_floats(rows, cols) +
                             bert_f32_packed_floats(cols, rows)) * sizeof(float);
                T_CHECK(m->packed_bytes >= want && m->packed_bytes < want + 6 * L * 64, "packed %zu bytes, want %zu",
                        m->packed_bytes, want);
                if (T_CHECK(w->f32_packed != NULL, "ff_in_w not packed")) {
                    int wrong = 0;
                    for (int r = 0; r < (rows + BERT_PANEL - 1) / BERT_PANEL * BERT_PANEL; r++)
                        for (int c = 0; c < cols; c++) {
                            float got = w->f32_packed[((size_t)(r / BERT_PANEL) * cols + c) * BERT_PANEL + r % BERT_PANEL];
                            wrong += got != (r < rows ? w->f32[(size_t)r * cols + c] : 0.0f);
                        }
                    T_CHECK(wrong == 0, "%d packed weights differ from W", wrong);
                }
            } else {
                T_CHECK(m->packed_bytes == 0 && w->f32_packed == NULL, "%zu bytes packed (run %d)",
                        m->packed_bytes, run);
            }
        }
        bert_model_free(m);
        free(err);
        unsetenv("SQLITE_BERT_PACK");
    }
    if (saved) setenv("SQLITE_BERT_ISA", saved, 1);
    else unsetenv("SQLITE_BERT_ISA");
    free(saved);
}

/* At int8 and bfloat16 on a CPU with AMX for it, the projections are also
 * laid out as AMX tiles (linear.h, bert_tiles_pack) at load;
 * SQLITE_BERT_ISA=vnni (AMX ruled out) and SQLITE_BERT_PACK=0 leave them out. */
static void tiles_at_load(void)
{
    t_case("loader: int8 and bfloat16 projections are laid out as AMX tiles at load where the CPU has AMX");
    const char *dir = "build/models/bert-plain-f32";
    if (!t_exists(dir)) {
        t_skip("model missing: run make test");
        return;
    }
    const char *saved_env = getenv("SQLITE_BERT_ISA");
    char *saved = saved_env ? strdup(saved_env) : NULL;
    for (int pi = 0; pi < 2; pi++) {
        const bert_precision p = pi ? BERT_PRECISION_BFLOAT16 : BERT_PRECISION_INT8;
        const unsigned need = pi ? BERT_CPU_AMX_BF16 : BERT_CPU_AMX_INT8;
        int amx = (bert_cpu_extensions() & need) != 0;
        printf("loader: AMX for %s %s\n", bert_precision_name(p), amx ? "present: tiles checked" : "absent: only their absence checked");
        for (int run = 0; run < 3; run++) {
            bert_model *m = NULL;
            char *err = NULL;
            packing_run_env(run, "vnni", saved);
            int tiled = run == 0 && amx;
            if (T_CHECK(bert_model_load_precision(t_dir(dir), p, &m, &err) == 0, "rejected: %s", err ? err : "?")) {
                const int hid = m->cfg.hidden_size, F = m->cfg.intermediate_size, layers = m->cfg.num_layers;
                if (tiled) {
                    size_t want = 0;
                    for (int l = 0; l < layers; l++)
                        want += 4 * bert_tiles_bytes(hid, hid, p) + bert_tiles_bytes(F, hid, p) +
                                bert_tiles_bytes(hid, F, p);
                    T_CHECK(m->packed_bytes >= want && m->packed_bytes < want + 6 * (size_t)layers * 64,
                            "%s: tiles take %zu bytes, want %zu", bert_precision_name(p), m->packed_bytes, want);
                    const bert_matrix *w = &m->layers[layers - 1].ff_out_w; /* [hid x F] */
                    if (T_CHECK(w->tiles != NULL, "%s: ff_out_w has no tiles", bert_precision_name(p))) {
                        const int size = bert_tile_value_bytes(p), per_tile = BERT_TILE_BYTES / size, group = 4 / size;
                        const int blocks = bert_tile_cols(F, p) / per_tile, tile = BERT_PANEL * BERT_TILE_BYTES;
                        const unsigned char *tiles = w->tiles;
                        int wrong = 0;
                        for (int r = 0; r < (hid + BERT_PANEL - 1) / BERT_PANEL * BERT_PANEL; r++)
                            for (int c = 0; c < bert_tile_cols(F, p); c++) {
                                int k = c % per_tile;
                                const unsigned char *at = tiles + ((size_t)(r / BERT_PANEL) * blocks + c / per_tile) * tile +
                                                          (k / group) * BERT_TILE_BYTES + 4 * (r % BERT_PANEL) +
                                                          (k % group) * size;
                                int got = size == 1 ? (int)(int8_t)at[0] : (int)(uint16_t)(at[0] | at[1] << 8);
                                int want_v = r >= hid || c >= F ? 0
                                             : size == 1 ? (int)w->i8[(size_t)r * F + c]
                                                         : (int)w->bf16[(size_t)r * F + c];
                                wrong += got != want_v;
                            }
                        T_CHECK(wrong == 0, "%s: %d tile values differ from W", bert_precision_name(p), wrong);
                    }
                } else {
                    T_CHECK(m->packed_bytes == 0 && m->layers[0].q_w.tiles == NULL, "%s: %zu bytes of tiles (run %d)",
                            bert_precision_name(p), m->packed_bytes, run);
                }
            }
            bert_model_free(m);
            free(err);
            unsetenv("SQLITE_BERT_PACK");
        }
        if (saved) setenv("SQLITE_BERT_ISA", saved, 1);
        else unsetenv("SQLITE_BERT_ISA");
    }
    free(saved);
}

static void refusals_name_the_tensor(void)
{
    bert_model *m = NULL;
    char *err = NULL;

    t_case("loader: a missing tensor is named");
    T_CHECK(ckpt_load_edited("missing", edit_drop_key_bias, &m, &err) == -1 && !m &&
            tm_contains(err, "encoder.layer.1.attention.self.key.bias"), "got: %s", err ? err : "success");
    free(err);
    T_CHECK(ckpt_load_edited("missing", edit_drop_word, &m, &err) == -1 && tm_contains(err, "embeddings.word_embeddings.weight"),
            "got: %s", err ? err : "success");
    free(err);

    t_case("loader: a shape that disagrees with config.json");
    T_CHECK(ckpt_load_edited("shape", edit_bad_shape, &m, &err) == -1 &&
            tm_contains(err, "encoder.layer.0.intermediate.dense.weight") && tm_contains(err, "[6, 8]") &&
            tm_contains(err, "[12, 8]"), "got: %s", err ? err : "success");
    free(err);
    T_CHECK(ckpt_load_edited("shape", edit_transposed, &m, &err) == -1 && tm_contains(err, "encoder.layer.0.output.dense.weight"),
            "got: %s", err ? err : "success");
    free(err);
    T_CHECK(ckpt_load_edited("shape", edit_bad_bias, &m, &err) == -1 &&
            tm_contains(err, "encoder.layer.1.attention.self.query.bias") && tm_contains(err, "[7]"), "got: %s",
            err ? err : "success");
    free(err);
    T_CHECK(ckpt_load_edited("shape", edit_bias_as_matrix, &m, &err) == -1 &&
            tm_contains(err, "encoder.layer.1.attention.self.query.bias") && tm_contains(err, "[4, 2]"), "got: %s",
            err ? err : "success");
    free(err);
    T_CHECK(ckpt_load_edited("shape", edit_bad_decoder, &m, &err) == -1 && tm_contains(err, "cls.predictions.decoder.weight"),
            "got: %s", err ? err : "success");
    free(err);

    t_case("loader: a weight stored as integers");
    T_CHECK(ckpt_load_edited("dtype", edit_int_dtype, &m, &err) == -1 &&
            tm_contains(err, "encoder.layer.1.output.LayerNorm.bias") && tm_contains(err, "I32"), "got: %s",
            err ? err : "success");
    free(err);
}

static void extras_and_incomplete_heads(void)
{
    bert_model *m = NULL;
    char *err = NULL;

    t_case("loader: position_ids and unknown tensors are ignored");
    T_CHECK(ckpt_load_edited("extras", edit_extras, &m, &err) == 0, "rejected: %s", err ? err : "?");
    bert_model_free(m);
    free(err);

    t_case("loader: incomplete heads count as absent");
    if (T_CHECK(ckpt_load_edited("partial", edit_partial_mlm, &m, &err) == 0, "rejected: %s", err ? err : "?")) {
        T_CHECK(!m->mlm_dense_w && !m->mlm_ln_w && !m->mlm_decoder_w && !m->mlm_bias, "MLM head left unbound");
        T_CHECK(m->nsp_w && m->pooler_w, "other heads bound");
        float out[V];
        int row = 0;
        char *e = NULL;
        T_CHECK(bert_mlm_logits(m, NULL, out, &row, 1, out, &e) == -1 && tm_contains(e, "masked-language-model"),
                "got: %s", e ? e : "success");
        free(e);
    }
    bert_model_free(m);
    free(err);
    if (T_CHECK(ckpt_load_edited("partial", edit_no_pooler, &m, &err) == 0, "rejected: %s", err ? err : "?")) {
        float hidden[H] = {0}, out[H];
        double p;
        T_CHECK(!m->pooler_w && !m->pooler_b, "pooler left unbound");
        T_CHECK(bert_pool(m, hidden, 1, BERT_POOL_POOLER, 0, out) == -1, "pooler pooling without a pooler");
        T_CHECK(bert_nsp_probability(m, hidden, &p) == -1, "NSP without a pooler");
    }
    bert_model_free(m);
    free(err);
}

static void missing_weights_file(void)
{
    bert_model *m = NULL;
    char *err = NULL;

    t_case("loader: missing model.safetensors");
    {
        tm_dir dir = tm_case_dir("noweights");
        tm_write_text(dir.path, "config.json", "{\"model_type\": \"bert\"}");
        err = NULL;
        T_CHECK(bert_model_load(t_dir(dir.path), &m, &err) == -1 && tm_contains(err, "model.safetensors"), "got: %s",
                err ? err : "success");
        free(err);
    }
}

static void half_precision_widens_exactly(void)
{
    bert_model *m = NULL;
    char *err = NULL;

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
            tensor *t = ckpt_find(&c, "embeddings.word_embeddings.weight");
            t->raw = raw;
            t->raw_len = sizeof raw;
            tm_dir dir = tm_case_dir("widen");
            ckpt_write(&c, dir.path, which ? "BF16" : "F16", 0);
            ckpt_free(&c);
            err = NULL;
            if (T_CHECK(bert_model_load(t_dir(dir.path), &m, &err) == 0, "rejected: %s", err ? err : "?")) {
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


void suite_loader(void)
{
    float32_in_place();
    float32_packed_at_load();
    tiles_at_load();
    refusals_name_the_tensor();
    extras_and_incomplete_heads();
    missing_weights_file();
    half_precision_widens_exactly();
}
