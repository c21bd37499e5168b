/*
 * bench_train.c - fine-tuning speed and memory of the trainer, called
 * directly (trainer.h), for `make bench-train` (tests/bench/train_bench.sh).
 *
 *   bench_train MODEL_DIR LABEL BATCH LENGTH THREADS STEPS
 *
 * Trains a sequence classifier (2 labels, BERT's pooler and classifier,
 * dropout as config.json says) on MODEL_DIR's float32 weights: one warm-up
 * step, then STEPS optimizer steps of one batch each (AdamW, clipping at
 * 1.0, a linear schedule), every batch BATCH sequences of LENGTH random
 * token ids (every sequence full length, labels alternating), the batches
 * drawn from a fixed seed so that torch_train_bench.py trains on the very
 * same ids.  Prints one line:
 *
 *   RESULT engine=ours label=LABEL batch=B length=L threads=T steps=S
 *          examples_per_s=X step_s=Y maxrss_mb=Z
 *
 * maxrss_mb is the process's peak resident set (getrusage ru_maxrss): the
 * model as loaded, the trainer's weights, gradients and moments, and the
 * largest batch's activations.
 */
#include "../../ext/base/model_files.h"
#include "../../ext/encoder/trainer.h"
#include "../../ext/models/model_dir.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench_clock.h"

/* The batches' ids: the same generator as torch_train_bench.py's. */
static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

static void make_batch(int step, int n, int L, int vocab, int32_t *ids, int *lengths, int *labels)
{
    uint64_t s = 1000003ULL * (uint64_t)(step + 1);
    for (int i = 0; i < n; i++) {
        lengths[i] = L;
        labels[i] = (step + i) % 2;
        for (int q = 0; q < L; q++) {
            /* 101 [CLS] first, 102 [SEP] last, ids from 1000 up between. */
            int32_t id = q == 0 ? 101 : q == L - 1 ? 102 : (int32_t)(1000 + lcg(&s) % (uint64_t)(vocab - 1000));
            ids[(size_t)i * L + q] = id;
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: bench_train MODEL_DIR LABEL BATCH LENGTH THREADS STEPS\n");
        return 2;
    }
    const char *dir = argv[1], *label = argv[2];
    int n = atoi(argv[3]), L = atoi(argv[4]), threads = atoi(argv[5]), steps = atoi(argv[6]);
    if (n < 1 || L < 2 || threads < 1 || steps < 1) {
        fprintf(stderr, "bench_train: BATCH >= 1, LENGTH >= 2, THREADS >= 1, STEPS >= 1\n");
        return 2;
    }
    char *err = NULL;
    bert_model *m = NULL;
    bert_model_files *files = bert_model_files_new(dir);
    if (!files || bert_model_load_precision(files, BERT_PRECISION_FLOAT32, &m, &err) != 0) {
        fprintf(stderr, "bench_train: loading %s: %s\n", dir, err ? err : "out of memory");
        return 1;
    }
    bert_train_settings s;
    bert_train_settings_default(&s);
    s.task = BERT_TRAIN_CLASSIFY;
    s.num_labels = 2;
    s.learning_rate = 5e-5f;
    s.weight_decay = 0.01f;
    s.total_steps = steps + 1;
    s.warmup_steps = 1;
    s.threads = threads;
    bert_trainer *t = bert_trainer_new(m, &s, &err);
    if (!t) {
        fprintf(stderr, "bench_train: %s\n", err ? err : "?");
        return 1;
    }
    const int vocab = m->cfg.vocab_size;
    bert_model_free(m);   /* the trainer holds its own copy, as bert_train's caller may do */
    bert_model_files_free(files);

    int32_t *ids = malloc((size_t)n * L * sizeof *ids);
    int *lengths = malloc((size_t)n * sizeof *lengths), *labels = malloc((size_t)n * sizeof *labels);
    if (!ids || !lengths || !labels) return 1;
    double t0 = 0;
    for (int step = 0; step <= steps; step++) {
        if (step == 1) t0 = now();
        make_batch(step, n, L, vocab, ids, lengths, labels);
        bert_train_batch b = {n, L, ids, NULL, lengths, labels, NULL, 0};
        double loss = 0;
        if (bert_trainer_accumulate(t, &b, 1.0f, &loss, NULL, NULL, &err) != 0 ||
            bert_trainer_step(t, NULL, NULL, &err) != 0) {
            fprintf(stderr, "bench_train: step %d: %s\n", step, err ? err : "?");
            return 1;
        }
        fprintf(stderr, "step %d loss %.5f\n", step, loss);
    }
    double elapsed = now() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("RESULT engine=ours label=%s batch=%d length=%d threads=%d steps=%d examples_per_s=%.3f step_s=%.3f "
           "maxrss_mb=%.0f\n",
           label, n, L, threads, steps, (double)n * steps / elapsed, elapsed / steps, ru.ru_maxrss / 1024.0);
    bert_trainer_free(t);
    free(ids);
    free(lengths);
    free(labels);
    return 0;
}
