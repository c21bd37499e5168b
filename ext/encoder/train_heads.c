/*
 * train_heads.c - the task heads on the last hidden state and their
 * losses, forward and backward, as transformers' *For* classes and
 * sentence-transformers' MultipleNegativesRankingLoss compute them.
 * Compiled twice (train_net.h).
 */
#include "train_net.h"
#include "../base/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

size_t TN(tn_head_floats)(const tn_config *c, int n, int L)
{
    const size_t H = (size_t)c->H, T = (size_t)n * L, O = (size_t)(c->outputs > 2 ? c->outputs : 2);
    size_t seq = 8 * (size_t)n * H + 2 * (size_t)n * O;
    size_t tok = T * H + 2 * T * O;
    size_t embed = 4 * (size_t)n * H + 2 * (size_t)n * n + (size_t)n;
    return max_sz(seq, max_sz(tok, embed));
}

size_t TN(tn_head_keep)(const tn_config *c, int n, int L)
{
    return max_sz(2 * (size_t)n * c->H, (size_t)n * L * c->H);
}

/* Cross-entropy of one row of logits against class y: the loss, and
 * d = scale x (softmax - one-hot) when d is not NULL. */
static double cross_entropy(const treal *z, int classes, int y, double scale, treal *d)
{
    double max = z[0], sum = 0;
    for (int c = 1; c < classes; c++) max = z[c] > max ? z[c] : max;
    for (int c = 0; c < classes; c++) sum += exp((double)z[c] - max);
    double lse = max + log(sum), loss = lse - z[y];
    /* d may be z itself (the ranking loss's scores). */
    if (d)
        for (int c = 0; c < classes; c++) d[c] = (treal)(scale * (exp((double)z[c] - lse) - (c == y)));
    return loss;
}

/* A loss that is not finite stops the step before any gradient is added. */
static int finite_loss(double loss, char **err)
{
    if (isfinite(loss)) return 0;
    *err = bert_errorf("the loss is not finite (%g): the weights or the learning rate have diverged, or the "
                       "targets are not finite", loss);
    return -1;
}

/* A head that runs on the first token of every sequence: dense ->
 * activation (tanh; DistilBERT's ReLU; ELECTRA's gelu) -> dropout ->
 * output, RoBERTa's, MPNet's and ELECTRA's with a dropout before the dense
 * layer too. */
static int sequence_head(const tn_config *c, const tn_tensor *t, const treal *w, treal *g, const tn_threads *th,
                         tn_rng *rng, const bert_train_batch *b, const treal *hidden, treal *dhidden, treal *work,
                         uint8_t *keep, double scale, int train, double *loss, treal *out, char **err)
{
    const int n = b->n, L = b->max_len, H = c->H, O = c->outputs, dw = TN_HEAD_DENSE_W(c->layers);
    const size_t nH = (size_t)n * H;
    const int relu = c->family == BERT_FAMILY_DISTILBERT;
    /* ElectraClassificationHead calls get_activation("gelu"), the erf form,
     * whatever hidden_act says. */
    const int gelu = c->family == BERT_FAMILY_ELECTRA;
    treal *in = work, *z = in + nH, *act = z + nH, *drop = act + nH, *logits = drop + nH, *dlog = logits + (size_t)n * O;
    treal *dact = dlog + (size_t)n * O, *din = dact + nH;
    const float p = train ? c->p_head : 0;
    for (int i = 0; i < n; i++) memcpy(in + (size_t)i * H, hidden + (size_t)i * L * H, (size_t)H * sizeof *in);
    if (c->dense_in_dropout && p > 0) TN(tn_dropout)(rng, in, keep + nH, nH, p);
    TN(tn_linear)(th, z, in, w + t[dw].off, w + t[dw + 1].off, n, H, H);
    if (gelu) TN(tn_activate)(th, act, z, nH, BERT_ACT_GELU);
    else
        for (size_t e = 0; e < nH; e++) act[e] = relu ? (z[e] > 0 ? z[e] : 0) : tanh(z[e]);
    memcpy(drop, act, nH * sizeof *drop);
    if (p > 0) TN(tn_dropout)(rng, drop, keep, nH, p);
    TN(tn_linear)(th, logits, drop, w + t[dw + 2].off, w + t[dw + 3].off, n, O, H);
    if (!train) {
        if (out) memcpy(out, logits, (size_t)n * O * sizeof *out);
        return 0;
    }

    /* The loss, as the For*Classification classes pick it. */
    double total = 0;
    if (c->task == BERT_TRAIN_CLASSIFY) {
        int counted = 0;
        for (int i = 0; i < n; i++) counted += b->labels[i] != BERT_TRAIN_IGNORE;
        if (!counted) {
            *err = bert_errorf("no sequence of the batch has a label (every label is %d)", BERT_TRAIN_IGNORE);
            return -1;
        }
        for (int i = 0; i < n; i++) {
            treal *d = dlog + (size_t)i * O;
            if (b->labels[i] == BERT_TRAIN_IGNORE) {
                memset(d, 0, (size_t)O * sizeof *d);
                continue;
            }
            total += cross_entropy(logits + (size_t)i * O, O, b->labels[i], scale / counted, d);
        }
        total /= counted;
    } else if (c->task == BERT_TRAIN_MULTI_LABEL) {
        /* BCEWithLogitsLoss: mean over every (sequence, label). */
        const double count = (double)n * O;
        for (size_t e = 0; e < (size_t)n * O; e++) {
            double x = logits[e], y = b->targets[e];
            total += (x > 0 ? x : 0) - x * y + log1p(exp(-fabs(x)));
            dlog[e] = (treal)(scale * (1.0 / (1.0 + exp(-x)) - y) / count);
        }
        total /= count;
    } else {
        /* MSELoss on the one output. */
        for (int i = 0; i < n; i++) {
            double diff = (double)logits[i] - b->targets[i];
            total += diff * diff;
            dlog[i] = (treal)(scale * 2 * diff / n);
        }
        total /= n;
    }
    if (finite_loss(total, err)) return -1;
    *loss = total;

    TN(tn_linear_back)(th, dlog, drop, w + t[dw + 2].off, g + t[dw + 2].off, g + t[dw + 3].off, dact, 0, n, O, H);
    if (p > 0) TN(tn_dropout_back)(dact, keep, nH, p);
    if (gelu) TN(tn_activate_back)(th, dact, dact, z, nH, BERT_ACT_GELU);
    else
        for (size_t e = 0; e < nH; e++) dact[e] *= relu ? (z[e] > 0 ? 1 : 0) : 1 - act[e] * act[e];
    TN(tn_linear_back)(th, dact, in, w + t[dw].off, g + t[dw].off, g + t[dw + 1].off, din, 0, n, H, H);
    if (c->dense_in_dropout && p > 0) TN(tn_dropout_back)(din, keep + nH, nH, p);
    memset(dhidden, 0, (size_t)n * L * H * sizeof *dhidden);
    for (int i = 0; i < n; i++) memcpy(dhidden + (size_t)i * L * H, din + (size_t)i * H, (size_t)H * sizeof *din);
    return 0;
}

/* Token classification (dropout -> classifier on every position) and
 * question answering (qa_outputs on every position, DistilBERT's after a
 * dropout; ELECTRA's as BERT's): start and end logits over all max_len
 * positions. */
static int token_head(const tn_config *c, const tn_tensor *t, const treal *w, treal *g, const tn_threads *th,
                      tn_rng *rng, const bert_train_batch *b, const treal *hidden, treal *dhidden, treal *work,
                      uint8_t *keep, double scale, int train, double *loss, treal *out, char **err)
{
    const int n = b->n, L = b->max_len, H = c->H, O = c->outputs, ow = TN_HEAD_DENSE_W(c->layers) + 2;
    const size_t T = (size_t)n * L, TH = T * H;
    treal *x = work, *logits = x + TH, *dlog = logits + T * O;
    const float p = train ? c->p_head : 0;
    memcpy(x, hidden, TH * sizeof *x);
    if (p > 0) TN(tn_dropout)(rng, x, keep, TH, p);
    TN(tn_linear)(th, logits, x, w + t[ow].off, w + t[ow + 1].off, (int)T, O, H);
    if (!train) {
        if (out) memcpy(out, logits, T * O * sizeof *out);
        return 0;
    }
    memset(dlog, 0, T * O * sizeof *dlog);
    double total = 0;
    if (c->task == BERT_TRAIN_TOKENS) {
        long counted = 0;
        for (size_t e = 0; e < T; e++) counted += b->labels[e] != BERT_TRAIN_IGNORE;
        if (!counted) {
            *err = bert_errorf("no token of the batch has a label (every label is %d)", BERT_TRAIN_IGNORE);
            return -1;
        }
        for (size_t e = 0; e < T; e++)
            if (b->labels[e] != BERT_TRAIN_IGNORE)
                total += cross_entropy(logits + e * O, O, b->labels[e], scale / counted, dlog + e * O);
        total /= counted;
        if (finite_loss(total, err)) return -1;
    } else {
        /* BertForQuestionAnswering: positions clamped to max_len, which is
         * CrossEntropyLoss's ignore_index; (start loss + end loss) / 2. */
        treal *row = x, *drow = x + L;   /* x is free again: the logits are made */
        double part[2] = {0, 0};
        for (int side = 0; side < 2; side++) {
            int counted = 0;
            for (int i = 0; i < n; i++) counted += b->labels[2 * i + side] < L;
            if (!counted) {
                *err = bert_errorf("no %s position of the batch is within its %d positions", side ? "end" : "start", L);
                return -1;
            }
            for (int i = 0; i < n; i++) {
                int y = b->labels[2 * i + side];
                if (y >= L) continue;
                for (int q = 0; q < L; q++) row[q] = logits[((size_t)i * L + q) * 2 + side];
                part[side] += cross_entropy(row, L, y, scale / (2.0 * counted), drow);
                for (int q = 0; q < L; q++) dlog[((size_t)i * L + q) * 2 + side] = drow[q];
            }
            part[side] /= counted;
        }
        total = (part[0] + part[1]) / 2;
        if (finite_loss(total, err)) return -1;
        /* x again as the classifier's input for the weight gradient. */
        memcpy(x, hidden, TH * sizeof *x);
        if (p > 0)
            for (size_t e = 0; e < TH; e++) x[e] = keep[e] ? x[e] * (treal)(1.0 / (1.0 - (double)p)) : 0;
    }
    *loss = total;
    /* The QA bias adds one constant to every position's start (or end)
     * logit, which the softmax over positions cancels: its gradient is
     * exactly 0, and summing dlog would only give rounding noise, which
     * AdamW's division by sqrt(v) turns into steps of a good part of the rate. */
    treal *db = c->task == BERT_TRAIN_QA ? NULL : g + t[ow + 1].off;
    TN(tn_linear_back)(th, dlog, x, w + t[ow].off, g + t[ow].off, db, dhidden, 0, (int)T, O, H);
    if (p > 0) TN(tn_dropout_back)(dhidden, keep, TH, p);
    return 0;
}

/* sentence-transformers: Pooling (mean or max over the attention mask, or
 * the first token), then MultipleNegativesRankingLoss: cos_sim(anchors,
 * every positive and negative) x scale, cross-entropy with anchor i's own
 * positive as the target. */
static int embed_head(const tn_config *c, const bert_train_batch *b, const treal *hidden, treal *dhidden, treal *work,
                      const tn_threads *th, double scale, int train, double *loss, treal *out, char **err)
{
    const int n = b->n, L = b->max_len, H = c->H;
    const size_t nH = (size_t)n * H;
    treal *pooled = work, *normed = pooled + nH, *dn = normed + nH, *norms = dn + nH, *scores = norms + n;
    for (int i = 0; i < n; i++) {
        const treal *h = hidden + (size_t)i * L * H;
        treal *p = pooled + (size_t)i * H;
        const int len = b->lengths[i];
        for (int j = 0; j < H; j++) {
            if (c->pooling == BERT_POOL_CLS) { p[j] = h[j]; continue; }
            treal acc = h[j];
            for (int q = 1; q < len; q++) {
                treal v = h[(size_t)q * H + j];
                acc = c->pooling == BERT_POOL_MAX ? (v > acc ? v : acc) : acc + v;
            }
            p[j] = c->pooling == BERT_POOL_MAX ? acc : acc / (treal)len;
        }
        double ss = 0;
        for (int j = 0; j < H; j++) ss += (double)p[j] * p[j];
        /* torch.nn.functional.normalize: x / max(||x||, 1e-12). */
        double norm = sqrt(ss) > 1e-12 ? sqrt(ss) : 1e-12;
        norms[i] = (treal)norm;
        for (int j = 0; j < H; j++) normed[(size_t)i * H + j] = (treal)(p[j] / norm);
    }
    if (!train) {
        if (out) memcpy(out, pooled, nH * sizeof *out);
        return 0;
    }
    const int B = n / b->columns, C = n - B;
    const treal *anchors = normed, *cands = normed + (size_t)B * H;
    TN(tn_gemm)(th, 0, 1, B, C, H, (treal)c->scale, anchors, H, cands, H, 0, scores, C);
    double total = 0;
    for (int i = 0; i < B; i++)
        total += cross_entropy(scores + (size_t)i * C, C, i, scale / B, scores + (size_t)i * C);
    if (finite_loss(total / B, err)) return -1;
    *loss = total / B;
    /* scores now hold d loss / d score. */
    TN(tn_gemm)(th, 0, 0, B, H, C, (treal)c->scale, scores, C, cands, H, 0, dn, H);
    TN(tn_gemm)(th, 1, 0, C, H, B, (treal)c->scale, scores, C, anchors, H, 0, dn + (size_t)B * H, H);
    memset(dhidden, 0, (size_t)n * L * H * sizeof *dhidden);
    for (int i = 0; i < n; i++) {
        treal *d = dn + (size_t)i * H;
        const treal *u = normed + (size_t)i * H, *p = pooled + (size_t)i * H, *h = hidden + (size_t)i * L * H;
        double dot = 0;
        for (int j = 0; j < H; j++) dot += (double)u[j] * d[j];
        /* Back through x / max(||x||, eps): the clamp passes d / eps. */
        int clamped = norms[i] <= (treal)1e-12;
        for (int j = 0; j < H; j++) d[j] = (treal)((d[j] - (clamped ? 0 : u[j] * dot)) / norms[i]);
        treal *dh = dhidden + (size_t)i * L * H;
        const int len = b->lengths[i];
        for (int j = 0; j < H; j++) {
            if (c->pooling == BERT_POOL_CLS) dh[j] = d[j];
            else if (c->pooling == BERT_POOL_MEAN)
                for (int q = 0; q < len; q++) dh[(size_t)q * H + j] = d[j] / (treal)len;
            else
                for (int q = 0; q < len; q++)
                    if (h[(size_t)q * H + j] == p[j]) { dh[(size_t)q * H + j] = d[j]; break; }
        }
    }
    return 0;
}

int TN(tn_head)(const tn_config *c, const tn_tensor *t, const treal *w, treal *g, const tn_threads *th, tn_rng *rng,
                const bert_train_batch *b, const treal *hidden, treal *dhidden, treal *work, uint8_t *keep,
                double scale, int train, double *loss, treal *out, char **err)
{
    if (c->seq_head)
        return sequence_head(c, t, w, g, th, rng, b, hidden, dhidden, work, keep, scale, train, loss, out, err);
    if (c->task == BERT_TRAIN_EMBED) return embed_head(c, b, hidden, dhidden, work, th, scale, train, loss, out, err);
    return token_head(c, t, w, g, th, rng, b, hidden, dhidden, work, keep, scale, train, loss, out, err);
}
