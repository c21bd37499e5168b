/*
 * test_encoder.c - the encoder (ext/encoder/encoder.c) on the tiny checkpoint of
 * checkpoint_fixture.h: the same weights in every accepted encoding and
 * naming give the same outputs, packed sequences stay apart, bad input is
 * refused, interrupts are polled, and pooling does what it says.
 */
#include "test.h"
#include "checkpoint_fixture.h"
#include "../ext/encoder/encoder.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void edit_untied(ckpt *c)
{
    tensor *t = ckpt_add(c, "cls.predictions.decoder.weight", V, H, 0);
    memcpy(t->values, ckpt_find(c, "embeddings.word_embeddings.weight")->values, sizeof(float) * V * H);
}
static void edit_decoder_bias(ckpt *c)
{
    snprintf(ckpt_find(c, "cls.predictions.bias")->name, 96, "cls.predictions.decoder.bias");
}

/* ------------------------------------------------------------------ cases */

/* The same weights under every accepted encoding and naming give the same outputs. */
static void same_weights_same_outputs(void)
{
    outputs ref, got;
    bert_model *m = NULL;
    char *err = NULL;

    t_case("encoder: runs on the float32 checkpoint");
    int have_ref = ckpt_load_edited("f32", NULL, &m, &err) == 0 && run_model(m, &ref, &err) == 0;
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
        ckpt_rename_all(&c, variants[i].prefix, variants[i].gamma);
        tm_dir dir = tm_case_dir(variants[i].name);
        ckpt_write(&c, dir.path, variants[i].dtype, variants[i].misalign);
        ckpt_free(&c);
        err = NULL;
        m = NULL;
        if (T_CHECK(bert_model_load(t_dir(dir.path), &m, &err) == 0, "rejected: %s", err ? err : "?")) {
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
    if (T_CHECK(ckpt_load_edited("decoder_bias", edit_decoder_bias, &m, &err) == 0, "rejected: %s", err ? err : "?") &&
        T_CHECK(run_model(m, &got, &err) == 0, "failed: %s", err ? err : "?"))
        T_CHECK(outputs_diff(&ref, &got) < 1e-6, "max difference %g", outputs_diff(&ref, &got));
    bert_model_free(m);
    free(err);
}

/* Packing, segment ids and the scratch memory. */
static void packing_and_scratch(const bert_model *m, bert_scratch *s)
{
    char *err = NULL;

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

    free(err);
}

static void bad_input(const bert_model *m, bert_scratch *s)
{
    char *err = NULL;

    t_case("encoder: bad input is refused with a reason");
    {
        int32_t bad_ids[13], bad_types[13];
        memcpy(bad_ids, ids, sizeof bad_ids);
        memcpy(bad_types, types, sizeof bad_types);
        bad_ids[8] = V;
        err = NULL;
        T_CHECK(!bert_encode(m, s, bad_ids, types, lengths, 3, NULL, NULL, &err) && tm_contains(err, "vocabulary") &&
                tm_contains(err, "position 8"), "id = vocab_size: %s", err ? err : "accepted");
        free(err);
        bad_ids[8] = -1;
        err = NULL;
        T_CHECK(!bert_encode(m, s, bad_ids, types, lengths, 3, NULL, NULL, &err) && tm_contains(err, "vocabulary"),
                "negative id: %s", err ? err : "accepted");
        free(err);
        bad_types[4] = TV;
        err = NULL;
        T_CHECK(!bert_encode(m, s, ids, bad_types, lengths, 3, NULL, NULL, &err) && tm_contains(err, "type_vocab_size"),
                "segment id: %s", err ? err : "accepted");
        free(err);
        int32_t long_ids[P + 1] = {0};
        int too_long = P + 1, empty[2] = {3, 0};
        err = NULL;
        T_CHECK(!bert_encode(m, s, long_ids, NULL, &too_long, 1, NULL, NULL, &err) &&
                tm_contains(err, "max_position_embeddings"), "too long: %s", err ? err : "accepted");
        free(err);
        err = NULL;
        T_CHECK(!bert_encode(m, s, ids, NULL, empty, 2, NULL, NULL, &err) && tm_contains(err, "sequence 1"),
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

}

static void interrupt_polling(const bert_model *m, bert_scratch *s)
{
    char *err = NULL;

    t_case("encoder: the interrupt callback is polled between layers");
    {
        int calls = 0;
        T_CHECK(bert_encode(m, s, ids, types, lengths, 3, count_calls, &calls, &err) != NULL && calls == L,
                "%d polls for %d layers", calls, L);
        calls = 0;
        err = NULL;
        T_CHECK(!bert_encode(m, s, ids, types, lengths, 3, stop_at_second, &calls, &err) && tm_contains(err, "interrupted"),
                "got: %s", err ? err : "not interrupted");
        free(err);
        err = NULL;
    }

}

/* A sequence attending to its first k positions only: those k rows are
 * the outputs of the sequence cut to k tokens (positions count the same,
 * and no row sees the later tokens), the later rows are computed all the
 * same, and keys == lengths is bert_encode itself. */
static void key_mask(const bert_model *m, bert_scratch *s)
{
    t_case("encoder: a sequence attends only to its first keys positions, the rest are still computed");
    char *err = NULL;
    float whole[13 * H], masked[13 * H];
    const float *h = bert_encode(m, s, ids, types, lengths, 3, NULL, NULL, &err);
    if (!T_CHECK(h != NULL, "failed: %s", err ? err : "?")) { free(err); return; }
    memcpy(whole, h, sizeof whole);
    h = bert_encode_keys(m, s, ids, types, lengths, lengths, 3, NULL, NULL, &err);
    T_CHECK(h && max_diff(h, whole, 13 * H) == 0, "keys == lengths differs from bert_encode");
    static const int keys[] = {4, 1, 2};
    h = bert_encode_keys(m, s, ids, types, lengths, keys, 3, NULL, NULL, &err);
    if (!T_CHECK(h != NULL, "failed: %s", err ? err : "?")) { free(err); return; }
    memcpy(masked, h, sizeof masked);
    T_CHECK(max_diff(masked + 6 * H, whole + 6 * H, H) == 0, "a sequence without masked keys changed");
    for (int i = 0, t0 = 0; i < 3; t0 += lengths[i], i++) {
        h = bert_encode(m, s, ids + t0, types + t0, &keys[i], 1, NULL, NULL, &err);
        if (!T_CHECK(h != NULL, "failed: %s", err ? err : "?")) break;
        double d = max_diff(h, masked + (size_t)t0 * H, (size_t)keys[i] * H);
        T_CHECK(d < 1e-5, "sequence %d's first %d rows differ from the cut sequence by %g", i, keys[i], d);
        int finite = 1;
        for (size_t j = (size_t)(t0 + keys[i]) * H; j < (size_t)(t0 + lengths[i]) * H; j++)
            finite &= isfinite(masked[j]) != 0;
        T_CHECK(finite, "sequence %d's masked rows are not computed", i);
    }
    T_CHECK(max_diff(masked + 4 * H, whole + 4 * H, 2 * H) > 1e-3, "masking keys changed nothing");
    static const int zero[] = {6, 0, 6}, over[] = {6, 2, 6};
    T_CHECK(!bert_encode_keys(m, s, ids, types, lengths, zero, 3, NULL, NULL, &err) && tm_contains(err, "sequence 1"),
            "0 keys accepted");
    free(err);
    err = NULL;
    T_CHECK(!bert_encode_keys(m, s, ids, types, lengths, over, 3, NULL, NULL, &err) && tm_contains(err, "1 to 1"),
            "more keys than tokens accepted: %s", err ? err : "?");
    free(err);
}

static void pooling(const bert_model *m)
{
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

}

void suite_encoder(void)
{
    same_weights_same_outputs();

    t_case("encoder: the float32 checkpoint loads for the invariants that follow");
    bert_model *m = NULL;
    char *err = NULL;
    if (!T_CHECK(ckpt_load_edited("f32", NULL, &m, &err) == 0, "rejected: %s", err ? err : "?")) {
        free(err);
        return;
    }
    bert_scratch *s = bert_scratch_new();
    if (!s) exit(2);
    packing_and_scratch(m, s);
    bad_input(m, s);
    interrupt_polling(m, s);
    key_mask(m, s);
    pooling(m);
    bert_scratch_free(s);
    bert_model_free(m);
}
