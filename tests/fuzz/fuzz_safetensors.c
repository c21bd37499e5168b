/*
 * fuzz_safetensors.c - a model.safetensors of arbitrary bytes.
 *
 * The input is parsed in memory by bert_safetensors_parse(); whatever it accepts must
 * describe byte ranges inside the input (every byte is read, so the
 * sanitizer sees any range that is not).  An accepted file is then written
 * next to the tiny model's config.json and loaded as a checkpoint, and a
 * checkpoint that loads is run: the encoder on two packed sequences, every
 * pooling, and the heads it has.  The seeds are the tiny model in each dtype
 * and tensor naming the loader knows (tests/fuzz/make_corpus.sh).
 */
#include "../../ext/encoder/encoder.h"
#include "../../ext/models/model_dir.h"
#include "../../ext/models/safetensors.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The model directory every input is written into, made once. */
static char model_dir[256];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_scratch(model_dir, sizeof model_dir, "safetensors", "model");
    fuzz_copy(FUZZ_TINY_MODEL "/config.json", model_dir, "config.json");
    return 0;
}

static void check_parsed(const st_file *f, const uint8_t *data, size_t size)
{
    volatile unsigned sum = 0;
    for (int i = 0; i < bert_safetensors_count(f); i++) {
        const st_tensor *t = bert_safetensors_tensor_at(f, i);
        if (!t || !t->name) fuzz_die("tensor %d is missing", i);
        if (t->nbytes != t->count * bert_safetensors_dtype_size(t->dtype))
            fuzz_die("tensor %s: %zu bytes for %zu elements", t->name, t->nbytes, t->count);
        if (t->nbytes && (t->data < data || t->data > data + size || t->nbytes > (size_t)(data + size - t->data)))
            fuzz_die("tensor %s lies outside the input", t->name);
        for (size_t b = 0; b < t->nbytes; b++) sum += t->data[b];
        if (bert_safetensors_find(f, t->name) != t) fuzz_die("bert_safetensors_find(%s) does not find it", t->name);
    }
    (void)sum;
}

static void run_model(const bert_model *m)
{
    bert_scratch *s = bert_scratch_new();
    if (!s) fuzz_die("out of memory");
    /* [CLS] the cat [SEP] and [CLS] [SEP] of the tiny vocabulary, segments 0 and 1. */
    const int32_t ids[] = {101, 104, 106, 102, 101, 102};
    const int32_t types[] = {0, 0, 0, 1, 0, 1};
    const int lengths[] = {4, 2};
    char *err = NULL;
    const float *h = bert_encode(m, s, ids, types, lengths, 2, NULL, NULL, &err);
    if (!h) {
        /* Only a model smaller than the input may refuse it, with a reason. */
        if (!err) fuzz_die("bert_encode failed without a message");
        free(err);
        bert_scratch_free(s);
        return;
    }
    float *out = malloc((size_t)m->cfg.hidden_size * sizeof *out);
    if (!out) fuzz_die("out of memory");
    for (int p = BERT_POOL_MEAN; p <= BERT_POOL_POOLER; p++)
        for (int norm = 0; norm < 2; norm++) bert_pool(m, h, 4, (bert_pooling)p, norm, out);
    if (m->nsp_w) {
        double prob;
        bert_nsp_probability(m, h, &prob);
    }
    if (m->mlm_bias) {
        float *logits = malloc((size_t)2 * (size_t)m->cfg.vocab_size * sizeof *logits);
        const int rows[] = {1, 3};
        if (!logits) fuzz_die("out of memory");
        if (bert_mlm_logits(m, s, h, rows, 2, logits, &err) != 0) free(err);
        free(logits);
    }
    free(out);
    bert_scratch_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    st_file *f = NULL;
    char *err = NULL;
    if (bert_safetensors_parse(data, size, "model.safetensors", &f, &err) != 0) {
        if (!err) fuzz_die("bert_safetensors_parse failed without a message");
        free(err);
        return 0;
    }
    check_parsed(f, data, size);
    bert_safetensors_close(f);

    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", model_dir);
    fuzz_write(path, data, size);
    bert_model *m = NULL;
    bert_model_files *files = bert_model_files_new(model_dir);
    if (!files) fuzz_die("out of memory");
    int loaded = bert_model_load(files, &m, &err);
    bert_model_files_free(files);
    if (loaded != 0) {
        if (!err) fuzz_die("bert_model_load failed without a message");
        free(err);
        return 0;
    }
    run_model(m);
    bert_model_free(m);
    return 0;
}
