/*
 * train_net.c - the trainer's network: where each parameter lies, the
 * batch checked, the encoder forward with what the backward needs kept,
 * then the head and the backward pass.  Compiled twice (train_net.h).
 *
 * Batches are padded: n sequences of L positions, T = n L rows.  Every
 * position is computed as a query, as in PyTorch; only keys are masked.
 */
#include "train_net.h"
#include "../base/error.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ layout */

static size_t put(tn_tensor *t, size_t off, int rows, int cols, int decay, int head, int pad_row)
{
    t->off = off;
    t->rows = rows;
    t->cols = cols;
    t->decay = decay;
    t->head = head;
    t->pad_row = pad_row;
    t->frozen = 0;
    return off + (size_t)rows * (size_t)(cols > 0 ? cols : 1);
}

static int emb_width(const tn_config *c) { return c->E > 0 ? c->E : c->H; }

/* BERT and ELECTRA add the segment embeddings of the batch's type_ids;
 * RoBERTa's single row is added to every token. */
static int reads_segments(const tn_config *c)
{
    return c->family == BERT_FAMILY_BERT || c->family == BERT_FAMILY_ELECTRA;
}

size_t TN(tn_layout)(const tn_config *c, tn_tensor *t)
{
    const int H = c->H, FF = c->FF, E = emb_width(c);
    size_t off = 0;
    /* transformers' Trainer decays every weight but biases and LayerNorm
     * weights (get_decay_parameter_names); embeddings are weights. */
    off = put(&t[TN_WORD], off, c->vocab, E, 1, 0, c->word_pad);
    off = put(&t[TN_POS], off, c->max_pos, E, 1, 0, c->pos_pad);
    t[TN_POS].frozen = c->fixed_positions;
    const int no_types = c->family == BERT_FAMILY_DISTILBERT || c->family == BERT_FAMILY_MPNET;
    off = put(&t[TN_TYPE], off, no_types ? 0 : c->type_vocab, E, 1, 0, -1);
    off = put(&t[TN_EMB_LN_W], off, E, 0, 0, 0, -1);
    off = put(&t[TN_EMB_LN_B], off, E, 0, 0, 0, -1);
    static const struct { int out_ff, in_ff, is_matrix, is_norm; } shape[TN_PER_LAYER] = {
        {0, 0, 1, 0}, {0, 0, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 0}, {0, 0, 1, 0},
        {0, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 0, 1}, {1, 0, 1, 0}, {1, 0, 0, 0}, {0, 1, 1, 0}, {0, 0, 0, 0},
        {0, 0, 0, 1}, {0, 0, 0, 1},
    };
    for (int l = 0; l < c->layers; l++)
        for (int k = 0; k < TN_PER_LAYER; k++) {
            int rows = shape[k].out_ff ? FF : H;
            int cols = shape[k].is_matrix ? (shape[k].in_ff ? FF : H) : 0;
            off = put(&t[TN_LAYER0 + TN_PER_LAYER * l + k], off, rows, cols, shape[k].is_matrix, 0, -1);
        }
    const int hd = TN_HEAD_DENSE_W(c->layers), dense = c->seq_head ? H : 0;
    off = put(&t[hd], off, dense, H, 1, 1, -1);
    off = put(&t[hd + 1], off, dense, 0, 0, 1, -1);
    off = put(&t[hd + 2], off, c->outputs, H, 1, 1, -1);
    off = put(&t[hd + 3], off, c->outputs, 0, 0, 1, -1);
    /* An nn.Embedding, but named relative_attention_bias: Trainer's "bias"
     * rule keeps it from weight decay. */
    off = put(&t[TN_REL(c->layers)], off, c->rel_buckets, c->heads, 0, 0, -1);
    const int project = E != H;
    off = put(&t[TN_PROJ_W(c->layers)], off, project ? H : 0, E, 1, 0, -1);
    off = put(&t[TN_PROJ_B(c->layers)], off, project ? H : 0, 0, 0, 0, -1);
    return off;
}

/* ------------------------------------------------------------ the network */

struct tn_net {
    tn_config c;
    const tn_tensor *t;
    treal *w, *g;
    tn_threads th;
    tn_rng rng;
    treal *work;          /* the batch's activations and gradients, grown to the largest */
    size_t work_floats;
    uint8_t *keep;        /* the batch's dropout draws */
    uint64_t *att_seed;   /* each layer's attention dropout stream of the batch */
    size_t keep_bytes;
};

tn_net *TN(tn_net_new)(const tn_config *cfg, const tn_tensor *t, treal *w, treal *g, bert_workers *workers,
                       int threads, uint64_t seed)
{
    tn_net *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->c = *cfg;
    n->t = t;
    n->w = w;
    n->g = g;
    n->th.workers = workers;
    n->th.threads = workers && threads > 1 ? threads : 1;
    TN(tn_rng_seed)(&n->rng, seed);
    n->att_seed = calloc((size_t)(cfg->layers > 0 ? cfg->layers : 1), sizeof *n->att_seed);
    if (!n->att_seed) {
        free(n);
        return NULL;
    }
    return n;
}

void TN(tn_net_free)(tn_net *n)
{
    if (!n) return;
    free(n->work);
    free(n->keep);
    free(n->att_seed);
    free(n);
}

void TN(tn_net_reseed)(tn_net *n, uint64_t seed)
{
    TN(tn_rng_seed)(&n->rng, seed);
}

static int check_batch(const tn_config *c, const bert_train_batch *b, int targets, char **err)
{
    const int max_tokens = c->pos_pad >= 0 ? c->max_pos - c->pos_pad - 1 : c->max_pos;
    if (!b || !b->ids || !b->lengths || b->n < 1 || b->max_len < 1) {
        *err = bert_errorf("a training batch needs at least one sequence of at least one token, with its ids and lengths");
        return -1;
    }
    if (b->max_len > max_tokens) {
        *err = bert_errorf("the batch is padded to %d positions but the model takes at most %d "
                           "(max_position_embeddings); lower max_length", b->max_len, max_tokens);
        return -1;
    }
    if (b->n > (1 << 20) || (size_t)b->n * (size_t)b->max_len > (1u << 24)) {
        *err = bert_errorf("a batch of %d sequences of %d positions is too large; use smaller batches", b->n, b->max_len);
        return -1;
    }
    for (int i = 0; i < b->n; i++)
        if (b->lengths[i] < 1 || b->lengths[i] > b->max_len) {
            *err = bert_errorf("sequence %d of the batch has length %d; lengths must be from 1 to the padded "
                               "length %d", i, b->lengths[i], b->max_len);
            return -1;
        }
    const size_t T = (size_t)b->n * b->max_len;
    for (size_t e = 0; e < T; e++) {
        if (b->ids[e] < 0 || b->ids[e] >= c->vocab) {
            *err = bert_errorf("token id %d (sequence %zu, position %zu) is outside the model's vocabulary (0 to %d)",
                               (int)b->ids[e], e / b->max_len, e % b->max_len, c->vocab - 1);
            return -1;
        }
        if (b->type_ids && reads_segments(c) && (b->type_ids[e] < 0 || b->type_ids[e] >= c->type_vocab)) {
            *err = bert_errorf("segment id %d (sequence %zu) is not below the model's type_vocab_size %d",
                               (int)b->type_ids[e], e / b->max_len, c->type_vocab);
            return -1;
        }
    }
    if (!targets && c->task != BERT_TRAIN_EMBED) return 0;
    switch (c->task) {
    case BERT_TRAIN_CLASSIFY:
    case BERT_TRAIN_TOKENS: {
        const size_t count = c->task == BERT_TRAIN_TOKENS ? T : (size_t)b->n;
        if (!b->labels) { *err = bert_errorf("the batch has no labels"); return -1; }
        for (size_t e = 0; e < count; e++)
            if (b->labels[e] != BERT_TRAIN_IGNORE && (b->labels[e] < 0 || b->labels[e] >= c->outputs)) {
                *err = bert_errorf("label %d is out of range: the head has %d labels (0 to %d, or %d to ignore)",
                                   b->labels[e], c->outputs, c->outputs - 1, BERT_TRAIN_IGNORE);
                return -1;
            }
        break;
    }
    case BERT_TRAIN_QA:
        if (!b->labels) { *err = bert_errorf("the batch has no answer positions"); return -1; }
        for (int e = 0; e < 2 * b->n; e++)
            if (b->labels[e] < 0) {
                *err = bert_errorf("answer %s position %d (sequence %d) is negative", e % 2 ? "end" : "start",
                                   b->labels[e], e / 2);
                return -1;
            }
        break;
    case BERT_TRAIN_MULTI_LABEL:
    case BERT_TRAIN_REGRESSION: {
        const size_t count = (size_t)b->n * (c->task == BERT_TRAIN_MULTI_LABEL ? c->outputs : 1);
        if (!b->targets) { *err = bert_errorf("the batch has no targets"); return -1; }
        for (size_t e = 0; e < count; e++) {
            float y = b->targets[e];
            int bad = c->task == BERT_TRAIN_MULTI_LABEL ? !(y >= 0 && y <= 1) : !(y - y == 0);
            if (bad) {
                *err = bert_errorf("target %g (sequence %zu) is not %s", y, e / (count / b->n),
                                   c->task == BERT_TRAIN_MULTI_LABEL ? "from 0 to 1" : "a finite number");
                return -1;
            }
        }
        break;
    }
    case BERT_TRAIN_EMBED:
        if ((b->columns != 2 && b->columns != 3) || b->n % b->columns != 0) {
            *err = bert_errorf("a ranking batch has 2 or 3 columns (anchor, positive, negative) of equal rows; "
                               "got %d sequences in %d columns", b->n, b->columns);
            return -1;
        }
        break;
    }
    return 0;
}

/* Where one batch's activations lie in the work block. */
typedef struct {
    int n, L, T;
    size_t TH, TF, TE;
    treal *emb_xhat, *emb_rstd;
    treal *emb_sum, *emb_out;  /* ELECTRA's projection: the embeddings' sum, and the projection's input [T x E] */
    treal *X;               /* layers + 1 hidden states [T x H] */
    treal *layer;           /* per layer: layer_floats */
    size_t layer_floats;
    treal *dx, *dh, *tmp, *da, *dctx, *dq, *dk, *dv, *df, *attn, *head;
    uint8_t *emb_keep, *layer_keep;
    size_t layer_bytes;
    uint8_t *head_keep;
} plan;

/* One layer's activations within plan.layer. */
typedef struct {
    treal *q, *k, *v, *ctx, *xhat1, *rstd1, *h1, *f1, *act, *xhat2, *rstd2;
    uint8_t *keep1, *keep2;
} layer_acts;

static layer_acts layer_at(const plan *p, int l)
{
    layer_acts a;
    treal *at = p->layer + (size_t)l * p->layer_floats;
    a.q = at; a.k = a.q + p->TH; a.v = a.k + p->TH; a.ctx = a.v + p->TH;
    a.xhat1 = a.ctx + p->TH; a.h1 = a.xhat1 + p->TH; a.xhat2 = a.h1 + p->TH;
    a.f1 = a.xhat2 + p->TH; a.act = a.f1 + p->TF;
    a.rstd1 = a.act + p->TF; a.rstd2 = a.rstd1 + p->T;
    uint8_t *k = p->layer_keep + (size_t)l * p->layer_bytes;
    a.keep1 = k; a.keep2 = k + p->TH;
    return a;
}

/* Lays out (and grows) the work block for a batch of n x L. */
static int plan_batch(tn_net *net, int n, int L, plan *p, char **err)
{
    const tn_config *c = &net->c;
    memset(p, 0, sizeof *p);
    /* A rough count in double first, so that no size below wraps around. */
    double rough = ((double)n * c->heads * L * L + 12.0 * n * L * (c->H + c->FF)) * (c->layers + 2);
    if (rough > (double)((size_t)1 << 46) / sizeof(treal)) {
        *err = bert_errorf("out of memory: training on %d sequences of %d positions needs about %.0f GB; use smaller "
                           "batches or shorter sequences", n, L, rough * sizeof(treal) / 1e9);
        return -1;
    }
    p->n = n; p->L = L; p->T = n * L;
    p->TH = (size_t)p->T * c->H;
    p->TF = (size_t)p->T * c->FF;
    p->TE = (size_t)p->T * emb_width(c);
    const size_t proj = emb_width(c) != c->H ? 2 * p->TE : 0;
    p->layer_floats = 7 * p->TH + 2 * p->TF + 2 * (size_t)p->T;
    p->layer_bytes = 2 * p->TH;
    tn_attention a = {&net->th, n, L, c->H, c->heads, NULL, 0, 0, c->rel_buckets ? net->w : NULL, NULL};
    size_t attn = TN(tn_attention_scratch)(&a), head = TN(tn_head_floats)(c, n, L);
    size_t floats = p->TE + p->T + proj + (size_t)(c->layers + 1) * p->TH + (size_t)c->layers * p->layer_floats +
                    8 * p->TH + p->TF + attn + head;
    size_t bytes = p->TE + (size_t)c->layers * p->layer_bytes + TN(tn_head_keep)(c, n, L);
    if (floats > net->work_floats) {
        free(net->work);
        net->work = malloc(floats * sizeof(treal));
        net->work_floats = net->work ? floats : 0;
    }
    if (bytes > net->keep_bytes) {
        free(net->keep);
        net->keep = malloc(bytes);
        net->keep_bytes = net->keep ? bytes : 0;
    }
    if (!net->work || !net->keep) {
        *err = bert_errorf("out of memory: training on %d sequences of %d positions needs %zu MB", n, L,
                           (floats * sizeof(treal) + bytes) >> 20);
        return -1;
    }
    treal *at = net->work;
    p->emb_xhat = at; at += p->TE;
    p->emb_rstd = at; at += p->T;
    if (proj) {
        p->emb_sum = at; at += p->TE;
        p->emb_out = at; at += p->TE;
    }
    p->X = at; at += (size_t)(c->layers + 1) * p->TH;
    p->layer = at; at += (size_t)c->layers * p->layer_floats;
    p->dx = at; p->dh = at + p->TH; p->tmp = at + 2 * p->TH; p->da = at + 3 * p->TH; p->dctx = at + 4 * p->TH;
    p->dq = at + 5 * p->TH; p->dk = at + 6 * p->TH; p->dv = at + 7 * p->TH; at += 8 * p->TH;
    p->df = at; at += p->TF;
    p->attn = at; at += attn;
    p->head = at;
    p->emb_keep = net->keep;
    p->layer_keep = net->keep + p->TE;
    p->head_keep = p->layer_keep + (size_t)c->layers * p->layer_bytes;
    return 0;
}

static const treal *W(const tn_net *net, int k) { return net->w + net->t[k].off; }
static treal *G(const tn_net *net, int k) { return net->g + net->t[k].off; }
static int LW(int l, int k) { return TN_LAYER0 + TN_PER_LAYER * l + k; }

static int embedding_position(const tn_config *c, const int32_t *ids, int q, int *counted)
{
    /* RoBERTa's create_position_ids_from_input_ids: pad tokens keep
     * padding_idx, the others count from padding_idx + 1. */
    if (c->pos_pad < 0) return q;
    return ids[q] == c->word_pad ? c->pos_pad : c->pos_pad + ++*counted;
}

/* The encoder forward: p->X[layers] is the last hidden state.  0, or 1 interrupted. */
static int forward(tn_net *net, const bert_train_batch *b, const plan *p, int train, bert_interrupt_fn interrupted,
                   void *ctx)
{
    const tn_config *c = &net->c;
    const int H = c->H, T = p->T, L = p->L, distil = c->family == BERT_FAMILY_DISTILBERT;
    const float ph = train ? c->p_hidden : 0, pa = train ? c->p_attention : 0;
    const int types = net->t[TN_TYPE].rows > 0, E = emb_width(c);
    /* ElectraModel: the embeddings (E wide) with their LayerNorm and
     * dropout, then embeddings_project to H. */
    treal *e = p->emb_sum ? p->emb_sum : p->tmp, *emb = p->emb_out ? p->emb_out : p->X;
    for (int s = 0; s < p->n; s++) {
        int counted = 0;
        const int32_t *ids = b->ids + (size_t)s * L;
        for (int q = 0; q < L; q++) {
            const treal *we = W(net, TN_WORD) + (size_t)ids[q] * E;
            const treal *pe = W(net, TN_POS) + (size_t)embedding_position(c, ids, q, &counted) * E;
            int type = b->type_ids && reads_segments(c) ? b->type_ids[(size_t)s * L + q] : 0;
            const treal *te = types ? W(net, TN_TYPE) + (size_t)type * E : NULL;
            treal *row = e + ((size_t)s * L + q) * E;
            for (int j = 0; j < E; j++) row[j] = we[j] + pe[j] + (te ? te[j] : 0);
        }
    }
    TN(tn_layer_norm)(emb, p->emb_xhat, p->emb_rstd, e, W(net, TN_EMB_LN_W), W(net, TN_EMB_LN_B), T, E, c->eps);
    if (ph > 0) TN(tn_dropout)(&net->rng, emb, p->emb_keep, p->TE, ph);
    if (p->emb_out)
        TN(tn_linear)(&net->th, p->X, p->emb_out, W(net, TN_PROJ_W(c->layers)), W(net, TN_PROJ_B(c->layers)), T, H,
                      E);

    const int rel = TN_REL(c->layers);
    tn_attention att = {&net->th, p->n, L, H, c->heads, b->lengths, pa, 0, c->rel_buckets ? W(net, rel) : NULL, NULL};
    for (int l = 0; l < c->layers; l++) {
        if (interrupted && interrupted(ctx)) return 1;
        layer_acts a = layer_at(p, l);
        const treal *x = p->X + (size_t)l * p->TH;
        treal *out = p->X + (size_t)(l + 1) * p->TH;
        TN(tn_linear)(&net->th, a.q, x, W(net, LW(l, TN_Q_W)), W(net, LW(l, TN_Q_B)), T, H, H);
        TN(tn_linear)(&net->th, a.k, x, W(net, LW(l, TN_K_W)), W(net, LW(l, TN_K_B)), T, H, H);
        TN(tn_linear)(&net->th, a.v, x, W(net, LW(l, TN_V_W)), W(net, LW(l, TN_V_B)), T, H, H);
        if (pa > 0) att.seed = net->att_seed[l] = TN(tn_rng_next)(&net->rng);
        TN(tn_attention_forward)(&att, a.ctx, a.q, a.k, a.v, p->attn);
        TN(tn_linear)(&net->th, p->tmp, a.ctx, W(net, LW(l, TN_O_W)), W(net, LW(l, TN_O_B)), T, H, H);
        /* BERT drops the attention output before its residual; DistilBERT does not. */
        if (ph > 0 && !distil) TN(tn_dropout)(&net->rng, p->tmp, a.keep1, p->TH, ph);
        for (size_t i = 0; i < p->TH; i++) p->tmp[i] += x[i];
        TN(tn_layer_norm)(a.h1, a.xhat1, a.rstd1, p->tmp, W(net, LW(l, TN_LN1_W)), W(net, LW(l, TN_LN1_B)), T, H,
                          c->eps);
        TN(tn_linear)(&net->th, a.f1, a.h1, W(net, LW(l, TN_F1_W)), W(net, LW(l, TN_F1_B)), T, c->FF, H);
        TN(tn_activate)(&net->th, a.act, a.f1, p->TF, c->act);
        TN(tn_linear)(&net->th, p->tmp, a.act, W(net, LW(l, TN_F2_W)), W(net, LW(l, TN_F2_B)), T, H, c->FF);
        if (ph > 0) TN(tn_dropout)(&net->rng, p->tmp, a.keep2, p->TH, ph);
        for (size_t i = 0; i < p->TH; i++) p->tmp[i] += a.h1[i];
        TN(tn_layer_norm)(out, a.xhat2, a.rstd2, p->tmp, W(net, LW(l, TN_LN2_W)), W(net, LW(l, TN_LN2_B)), T, H,
                          c->eps);
    }
    return 0;
}

/* The encoder backward from p->dx, d loss / d last hidden state. */
static int backward(tn_net *net, const bert_train_batch *b, const plan *p, bert_interrupt_fn interrupted, void *ctx)
{
    const tn_config *c = &net->c;
    const int H = c->H, T = p->T, L = p->L, FF = c->FF, distil = c->family == BERT_FAMILY_DISTILBERT;
    const float ph = c->p_hidden, pa = c->p_attention;
    const tn_threads *th = &net->th;
    const int rel = TN_REL(c->layers);
    tn_attention att = {&net->th, p->n, L, H, c->heads, b->lengths, pa, 0, c->rel_buckets ? W(net, rel) : NULL,
                        c->rel_buckets ? G(net, rel) : NULL};
    /* Under question answering without dropout before qa_outputs, the last
     * LayerNorm's bias shifts every position's start and end logits alike,
     * which the softmax over positions cancels: its gradient is exactly 0
     * (see the QA bias in train_heads.c). */
    const int last_bias_cancels = c->task == BERT_TRAIN_QA && c->p_head == 0;
    for (int l = c->layers - 1; l >= 0; l--) {
        if (interrupted && interrupted(ctx)) return 1;
        layer_acts a = layer_at(p, l);
        const treal *x = p->X + (size_t)l * p->TH;
        /* out = LN2(dropout(f2) + h1) */
        treal *ln2_b = l == c->layers - 1 && last_bias_cancels ? NULL : G(net, LW(l, TN_LN2_B));
        TN(tn_layer_norm_back)(p->tmp, p->dx, a.xhat2, a.rstd2, W(net, LW(l, TN_LN2_W)), G(net, LW(l, TN_LN2_W)),
                               ln2_b, T, H);
        memcpy(p->dh, p->tmp, p->TH * sizeof(treal));
        if (ph > 0) TN(tn_dropout_back)(p->tmp, a.keep2, p->TH, ph);
        TN(tn_linear_back)(th, p->tmp, a.act, W(net, LW(l, TN_F2_W)), G(net, LW(l, TN_F2_W)), G(net, LW(l, TN_F2_B)),
                           p->df, 0, T, H, FF);
        TN(tn_activate_back)(&net->th, p->df, p->df, a.f1, p->TF, c->act);
        TN(tn_linear_back)(th, p->df, a.h1, W(net, LW(l, TN_F1_W)), G(net, LW(l, TN_F1_W)), G(net, LW(l, TN_F1_B)),
                           p->dh, 1, T, FF, H);
        /* h1 = LN1(dropout(attention output) + x) */
        TN(tn_layer_norm_back)(p->dx, p->dh, a.xhat1, a.rstd1, W(net, LW(l, TN_LN1_W)), G(net, LW(l, TN_LN1_W)),
                               G(net, LW(l, TN_LN1_B)), T, H);
        memcpy(p->da, p->dx, p->TH * sizeof(treal));
        if (ph > 0 && !distil) TN(tn_dropout_back)(p->da, a.keep1, p->TH, ph);
        TN(tn_linear_back)(th, p->da, a.ctx, W(net, LW(l, TN_O_W)), G(net, LW(l, TN_O_W)), G(net, LW(l, TN_O_B)),
                           p->dctx, 0, T, H, H);
        att.seed = net->att_seed[l];
        TN(tn_attention_back)(&att, p->dq, p->dk, p->dv, p->dctx, a.q, a.k, a.v, p->attn);
        TN(tn_linear_back)(th, p->dq, x, W(net, LW(l, TN_Q_W)), G(net, LW(l, TN_Q_W)), G(net, LW(l, TN_Q_B)), p->dx, 1,
                           T, H, H);
        /* The key bias gets no gradient: it adds q . b_k to every score of a
         * query's row, which the softmax cancels exactly.  Summing dk would
         * give rounding noise, which AdamW's division by sqrt(v) would turn
         * into steps of a tenth of the learning rate. */
        TN(tn_linear_back)(th, p->dk, x, W(net, LW(l, TN_K_W)), G(net, LW(l, TN_K_W)), NULL, p->dx, 1, T, H, H);
        TN(tn_linear_back)(th, p->dv, x, W(net, LW(l, TN_V_W)), G(net, LW(l, TN_V_W)), G(net, LW(l, TN_V_B)), p->dx, 1,
                           T, H, H);
    }
    /* The embeddings: the projection, dropout, LayerNorm, then each row's sum. */
    const int E = emb_width(c);
    treal *demb = p->dx, *dsum = p->tmp;
    if (p->emb_out) {
        demb = p->emb_sum;   /* the sum is not needed again: LayerNorm kept xhat */
        dsum = p->emb_sum;
        TN(tn_linear_back)(th, p->dx, p->emb_out, W(net, TN_PROJ_W(c->layers)), G(net, TN_PROJ_W(c->layers)),
                           G(net, TN_PROJ_B(c->layers)), demb, 0, T, H, E);
    }
    if (ph > 0) TN(tn_dropout_back)(demb, p->emb_keep, p->TE, ph);
    TN(tn_layer_norm_back)(dsum, demb, p->emb_xhat, p->emb_rstd, W(net, TN_EMB_LN_W), G(net, TN_EMB_LN_W),
                           G(net, TN_EMB_LN_B), T, E);
    const int types = net->t[TN_TYPE].rows > 0;
    for (int s = 0; s < p->n; s++) {
        int counted = 0;
        const int32_t *ids = b->ids + (size_t)s * L;
        for (int q = 0; q < L; q++) {
            const treal *d = dsum + ((size_t)s * L + q) * E;
            int pos = embedding_position(c, ids, q, &counted);
            int type = b->type_ids && reads_segments(c) ? b->type_ids[(size_t)s * L + q] : 0;
            /* nn.Embedding(padding_idx=...): that row never gets a gradient. */
            treal *gw = ids[q] == net->t[TN_WORD].pad_row ? NULL : G(net, TN_WORD) + (size_t)ids[q] * E;
            treal *gp = pos == net->t[TN_POS].pad_row || net->t[TN_POS].frozen ? NULL : G(net, TN_POS) + (size_t)pos * E;
            treal *gt = types ? G(net, TN_TYPE) + (size_t)type * E : NULL;
            for (int j = 0; j < E; j++) {
                if (gw) gw[j] += d[j];
                if (gp) gp[j] += d[j];
                if (gt) gt[j] += d[j];
            }
        }
    }
    return 0;
}

int TN(tn_net_accumulate)(tn_net *net, const bert_train_batch *b, double scale, double *loss,
                          bert_interrupt_fn interrupted, void *ctx, char **err)
{
    *err = NULL;
    plan p;
    if (check_batch(&net->c, b, 1, err) || plan_batch(net, b->n, b->max_len, &p, err)) return -1;
    int rc = forward(net, b, &p, 1, interrupted, ctx);
    if (rc) return rc;
    double value = 0;
    if (TN(tn_head)(&net->c, net->t, net->w, net->g, &net->th, &net->rng, b, p.X + (size_t)net->c.layers * p.TH, p.dx,
                    p.head, p.head_keep, scale, 1, &value, NULL, err))
        return -1;
    if (loss) *loss = value;
    if (net->c.freeze_encoder) return 0;
    return backward(net, b, &p, interrupted, ctx);
}

int TN(tn_net_outputs)(tn_net *net, const bert_train_batch *b, treal *out, char **err)
{
    *err = NULL;
    plan p;
    if (check_batch(&net->c, b, 0, err) || plan_batch(net, b->n, b->max_len, &p, err)) return -1;
    forward(net, b, &p, 0, NULL, NULL);
    double unused = 0;
    return TN(tn_head)(&net->c, net->t, net->w, net->g, &net->th, &net->rng, b, p.X + (size_t)net->c.layers * p.TH,
                       p.dx, p.head, p.head_keep, 0, 0, &unused, out, err);
}
