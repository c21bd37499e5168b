/*
 * trainer.c - fine-tuning (trainer.h): the parameters, their gradients and
 * AdamW's moments in four blocks of one layout (train_net.h), the new
 * head's initialization, Trainer's linear schedule, gradient clipping and
 * torch.optim.AdamW's update, and the blocks seen as bert_models.
 */
#include "trainer.h"
#include "train_net.h"
#include "../base/error.h"
#include "../kernels/cpu.h"

#ifdef BERT_X86_KERNELS
#include <immintrin.h>
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

void bert_train_settings_default(bert_train_settings *s)
{
    memset(s, 0, sizeof *s);
    s->task = BERT_TRAIN_CLASSIFY;
    s->num_labels = 2;
    s->learning_rate = 5e-5f;
    s->weight_decay = 0;
    s->beta1 = 0.9f;
    s->beta2 = 0.999f;
    s->epsilon = 1e-8f;
    s->max_grad_norm = 1.0f;
    s->total_steps = 1;
    s->warmup_steps = 0;
    s->dropout = -1;
    s->freeze_encoder = 0;
    s->seed = 42;
    s->pooling = BERT_POOL_MEAN;
    s->embed_scale = 20;
    s->threads = 0;
}

/* The four blocks: parameters, gradients, first and second moments. */
enum { BLOCK_W, BLOCK_G, BLOCK_M, BLOCK_V, BLOCKS };

struct bert_trainer {
    bert_train_settings s;
    tn_config c;
    tn_tensor *t;
    int tensors;
    size_t floats;
    float *block[BLOCKS];
    bert_model view[BLOCKS];     /* each block as a model; layers owned */
    bert_workers *workers;
    tn_net *net;
    long steps;
    long micro;                  /* accumulate calls since the last step */
};

/* ------------------------------------------------------------ tensors of a model */

/* Where tensor k lies in a model bound as view_bind binds it (NULL: absent). */
static const float *model_tensor(const bert_model *m, const tn_config *c, int k)
{
    switch (k) {
    case TN_WORD: return m->word_emb;
    case TN_POS: return m->pos_emb;
    case TN_TYPE: return m->type_emb;
    case TN_EMB_LN_W: return m->emb_ln_w;
    case TN_EMB_LN_B: return m->emb_ln_b;
    }
    const int hd = TN_HEAD_DENSE_W(c->layers), bert = c->family == BERT_FAMILY_BERT;
    if (k == TN_REL(c->layers)) return m->rel_bias;
    if (k == TN_PROJ_W(c->layers)) return m->emb_proj_w;
    if (k == TN_PROJ_B(c->layers)) return m->emb_proj_b;
    if (k < hd) {
        if (!m->layers) return NULL;
        const bert_layer_weights *w = &m->layers[(k - TN_LAYER0) / TN_PER_LAYER];
        switch ((k - TN_LAYER0) % TN_PER_LAYER) {
        case TN_Q_W: return w->q_w.f32;
        case TN_Q_B: return w->q_b;
        case TN_K_W: return w->k_w.f32;
        case TN_K_B: return w->k_b;
        case TN_V_W: return w->v_w.f32;
        case TN_V_B: return w->v_b;
        case TN_O_W: return w->out_w.f32;
        case TN_O_B: return w->out_b;
        case TN_LN1_W: return w->attn_ln_w;
        case TN_LN1_B: return w->attn_ln_b;
        case TN_F1_W: return w->ff_in_w.f32;
        case TN_F1_B: return w->ff_in_b;
        case TN_F2_W: return w->ff_out_w.f32;
        case TN_F2_B: return w->ff_out_b;
        case TN_LN2_W: return w->ff_ln_w;
        default: return w->ff_ln_b;
        }
    }
    if (k == hd) return bert ? m->pooler_w : m->pre_cls_w;
    if (k == hd + 1) return bert ? m->pooler_b : m->pre_cls_b;
    int out_w = k == hd + 2;
    switch (c->task) {
    case BERT_TRAIN_TOKENS: return out_w ? m->tok_w : m->tok_b;
    case BERT_TRAIN_QA: return out_w ? m->qa_w : m->qa_b;
    case BERT_TRAIN_EMBED: return NULL;
    default: return out_w ? m->cls_w : m->cls_b;
    }
}

static bert_matrix f32_matrix(const float *w)
{
    bert_matrix m;
    memset(&m, 0, sizeof m);
    m.precision = BERT_PRECISION_FLOAT32;
    m.f32 = w;
    return m;
}

/* Binds v's tensors into `block` (laid out by t); v->layers is allocated. */
static void view_bind(bert_model *v, const bert_trainer *tr, const float *block, const bert_config *cfg)
{
    const tn_config *c = &tr->c;
    const tn_tensor *t = tr->t;
#define AT(k) (t[k].rows ? block + t[k].off : NULL)
    v->cfg = *cfg;
    v->word_emb = AT(TN_WORD);
    v->pos_emb = AT(TN_POS);
    v->type_emb = AT(TN_TYPE);
    v->emb_ln_w = AT(TN_EMB_LN_W);
    v->emb_ln_b = AT(TN_EMB_LN_B);
    v->rel_bias = AT(TN_REL(c->layers));
    v->emb_proj_w = AT(TN_PROJ_W(c->layers));
    v->emb_proj_b = AT(TN_PROJ_B(c->layers));
    for (int l = 0; l < c->layers; l++) {
        bert_layer_weights *w = &v->layers[l];
        const int k = TN_LAYER0 + TN_PER_LAYER * l;
        w->q_w = f32_matrix(AT(k + TN_Q_W));
        w->q_b = AT(k + TN_Q_B);
        w->k_w = f32_matrix(AT(k + TN_K_W));
        w->k_b = AT(k + TN_K_B);
        w->v_w = f32_matrix(AT(k + TN_V_W));
        w->v_b = AT(k + TN_V_B);
        w->out_w = f32_matrix(AT(k + TN_O_W));
        w->out_b = AT(k + TN_O_B);
        w->attn_ln_w = AT(k + TN_LN1_W);
        w->attn_ln_b = AT(k + TN_LN1_B);
        w->ff_in_w = f32_matrix(AT(k + TN_F1_W));
        w->ff_in_b = AT(k + TN_F1_B);
        w->ff_out_w = f32_matrix(AT(k + TN_F2_W));
        w->ff_out_b = AT(k + TN_F2_B);
        w->ff_ln_w = AT(k + TN_LN2_W);
        w->ff_ln_b = AT(k + TN_LN2_B);
    }
    const int hd = TN_HEAD_DENSE_W(c->layers);
    if (c->seq_head) {
        if (c->family == BERT_FAMILY_BERT) {
            v->pooler_w = AT(hd);
            v->pooler_b = AT(hd + 1);
        } else {
            v->pre_cls_w = AT(hd);
            v->pre_cls_b = AT(hd + 1);
        }
        v->cls_w = AT(hd + 2);
        v->cls_b = AT(hd + 3);
        v->head.architecture_task = "sequence_classification";
        v->head.problem = c->task == BERT_TRAIN_MULTI_LABEL ? BERT_PROBLEM_MULTI_LABEL
                        : c->task == BERT_TRAIN_REGRESSION ? BERT_PROBLEM_REGRESSION : BERT_PROBLEM_SINGLE_LABEL;
    } else if (c->task == BERT_TRAIN_TOKENS) {
        v->tok_w = AT(hd + 2);
        v->tok_b = AT(hd + 3);
        v->head.architecture_task = "token_classification";
    } else if (c->task == BERT_TRAIN_QA) {
        v->qa_w = AT(hd + 2);
        v->qa_b = AT(hd + 3);
        v->head.architecture_task = "question_answering";
    }
#undef AT
    v->head.num_labels = c->task == BERT_TRAIN_QA || c->task == BERT_TRAIN_EMBED ? 0 : c->outputs;
    v->dtype = "float32";
    v->precision = BERT_PRECISION_FLOAT32;
}

/* ------------------------------------------------------------ a new trainer */

static int settings_error(char **err, const char *what)
{
    *err = bert_errorf("training settings: %s", what);
    return -1;
}

static int check_settings(const bert_train_settings *s, char **err)
{
    if (s->task < BERT_TRAIN_CLASSIFY || s->task > BERT_TRAIN_EMBED) return settings_error(err, "unknown task");
    if ((s->task == BERT_TRAIN_CLASSIFY && (s->num_labels < 2 || s->num_labels > 100000)) ||
        ((s->task == BERT_TRAIN_MULTI_LABEL || s->task == BERT_TRAIN_TOKENS) &&
         (s->num_labels < 1 || s->num_labels > 100000)))
        return settings_error(err, "num_labels must be from 2 (classification) or 1 (multi-label, tokens) to 100000");
    if (!(s->learning_rate >= 0 && s->learning_rate < 1e3f)) return settings_error(err, "learning_rate must be a number >= 0");
    if (!(s->weight_decay >= 0 && s->weight_decay < 1e3f)) return settings_error(err, "weight_decay must be a number >= 0");
    if (!(s->beta1 >= 0 && s->beta1 < 1 && s->beta2 >= 0 && s->beta2 < 1))
        return settings_error(err, "beta1 and beta2 must be from 0 to below 1");
    if (!(s->epsilon > 0 && s->epsilon < 1)) return settings_error(err, "epsilon must be above 0 and below 1");
    if (isnan(s->max_grad_norm)) return settings_error(err, "max_grad_norm must be a number");
    if (s->total_steps < 1 || s->warmup_steps < 0) return settings_error(err, "total_steps must be at least 1 and warmup_steps at least 0");
    if (!(s->dropout < 1)) return settings_error(err, "dropout must be below 1 (negative: config.json's)");
    if (s->task == BERT_TRAIN_EMBED && s->freeze_encoder)
        return settings_error(err, "freeze_encoder leaves nothing to train for embeddings, which have no head");
    if (s->task == BERT_TRAIN_EMBED && s->pooling != BERT_POOL_MEAN && s->pooling != BERT_POOL_CLS &&
        s->pooling != BERT_POOL_MAX)
        return settings_error(err, "embeddings train with mean, cls or max pooling");
    if (s->task == BERT_TRAIN_EMBED && !(s->embed_scale > 0 && isfinite(s->embed_scale)))
        return settings_error(err, "embed_scale must be a positive number");
    if (s->threads < 0 || s->threads > 1024) return settings_error(err, "threads must be from 0 to 1024");
    return 0;
}

static int check_base(const bert_model *m, char **err)
{
    if (!m) { *err = bert_errorf("bert_trainer_new: no model"); return -1; }
    const bert_family f = m->cfg.family;
    /* The network (train_net.c) is BERT's post-LayerNorm encoder with its
     * families' embeddings and heads (ELECTRA's is BERT's, its embeddings
     * projected); the newer encoders differ in their layers themselves. */
    if (f == BERT_FAMILY_MODERNBERT || f == BERT_FAMILY_DEBERTA_V2 || f == BERT_FAMILY_JINA_BERT ||
        bert_family_rotary(f)) {
        *err = bert_errorf("fine-tuning takes BERT, DistilBERT, RoBERTa, XLM-RoBERTa, MPNet and ELECTRA models; this "
                           "one is %s, which bert_train does not train yet: fine-tune it in PyTorch and load the result",
                           f == BERT_FAMILY_MODERNBERT   ? "ModernBERT"
                           : f == BERT_FAMILY_DEBERTA_V2 ? "DeBERTa-v2"
                           : f == BERT_FAMILY_NOMIC_BERT ? "nomic-bert (rotary, SwiGLU)"
                           : f == BERT_FAMILY_GTE_NEW    ? "gte's \"new\" architecture (rotary, gated MLP)"
                                                         : "JinaBERT (ALiBi, gated MLP)");
        return -1;
    }
    if (f == BERT_FAMILY_ELECTRA && m->cfg.fam.embedding_size != m->cfg.hidden_size &&
        (!m->emb_proj_w || !m->emb_proj_b)) {
        *err = bert_errorf("the ELECTRA model has no embeddings_project, which its embedding_size %d (not "
                           "hidden_size %d) needs", m->cfg.fam.embedding_size, m->cfg.hidden_size);
        return -1;
    }
    if (f == BERT_FAMILY_MPNET && (!m->rel_bias || m->cfg.relative_buckets < BERT_MPNET_BUCKETS)) {
        *err = bert_errorf("the MPNet model has no relative position bias (encoder.relative_attention_bias)");
        return -1;
    }
    int f32 = m->precision == BERT_PRECISION_FLOAT32 && m->word_emb && m->pos_emb && m->layers;
    for (int l = 0; f32 && l < m->cfg.num_layers; l++) {
        const bert_layer_weights *w = &m->layers[l];
        f32 = w->q_w.f32 && w->k_w.f32 && w->v_w.f32 && w->out_w.f32 && w->ff_in_w.f32 && w->ff_out_w.f32;
    }
    if (!f32) {
        *err = bert_errorf("fine-tuning needs the model loaded at precision float32 (it is %s)",
                           bert_precision_name(m->precision));
        return -1;
    }
    if (f != BERT_FAMILY_DISTILBERT && f != BERT_FAMILY_MPNET && !m->type_emb) {
        *err = bert_errorf("the model has no token type embeddings, which its family needs");
        return -1;
    }
    return 0;
}

static tn_config net_config(const bert_model *m, const bert_train_settings *s)
{
    const bert_config *mc = &m->cfg;
    tn_config c;
    memset(&c, 0, sizeof c);
    c.family = mc->family == BERT_FAMILY_XLM_ROBERTA ? BERT_FAMILY_ROBERTA : mc->family;
    c.vocab = mc->vocab_size;
    c.H = mc->hidden_size;
    c.E = mc->family == BERT_FAMILY_ELECTRA ? mc->fam.embedding_size : mc->hidden_size;
    c.layers = mc->num_layers;
    c.heads = mc->num_heads;
    c.FF = mc->intermediate_size;
    c.max_pos = mc->max_position_embeddings;
    c.type_vocab = mc->type_vocab_size;
    c.eps = mc->layer_norm_eps;
    c.act = mc->hidden_act;
    c.word_pad = mc->pad_token_id;
    c.pos_pad = mc->pad_id;
    c.rel_buckets = mc->family == BERT_FAMILY_MPNET ? mc->relative_buckets : 0;
    c.task = s->task;
    c.outputs = s->task == BERT_TRAIN_REGRESSION ? 1 : s->task == BERT_TRAIN_QA ? 2
              : s->task == BERT_TRAIN_EMBED ? 0 : s->num_labels;
    c.seq_head = s->task == BERT_TRAIN_CLASSIFY || s->task == BERT_TRAIN_MULTI_LABEL || s->task == BERT_TRAIN_REGRESSION;
    /* RobertaClassificationHead, MPNetClassificationHead and
     * ElectraClassificationHead drop their input too. */
    c.dense_in_dropout = c.seq_head && (c.family == BERT_FAMILY_ROBERTA || c.family == BERT_FAMILY_MPNET ||
                                        c.family == BERT_FAMILY_ELECTRA);
    const int over = s->dropout >= 0;
    c.p_hidden = over ? s->dropout : mc->hidden_dropout;
    c.p_attention = over ? s->dropout : mc->attention_dropout;
    /* Of the QA heads only DistilBERT's drops its input (qa_dropout);
     * the others have no dropout there for the option to set. */
    const int qa_without_dropout = s->task == BERT_TRAIN_QA && mc->family != BERT_FAMILY_DISTILBERT;
    c.p_head = qa_without_dropout ? 0
             : over ? s->dropout
             : c.seq_head ? mc->classifier_dropout
             : s->task == BERT_TRAIN_TOKENS ? mc->token_dropout
             : s->task == BERT_TRAIN_QA ? mc->qa_dropout : 0;
    c.pooling = s->pooling;
    c.scale = s->embed_scale;
    c.freeze_encoder = s->freeze_encoder;
    /* create_sinusoidal_embeddings sets requires_grad False: the Trainer's
     * optimizer never sees them, nor does its gradient clipping. */
    c.fixed_positions = mc->family == BERT_FAMILY_DISTILBERT && mc->sinusoidal_positions;
    return c;
}

/* The head's rows the base holds for this task, or 0. */
static int base_head_rows(const bert_model *m, const tn_config *c)
{
    if (c->seq_head) return bert_model_has_classifier(m) ? m->head.num_labels : 0;
    if (c->task == BERT_TRAIN_TOKENS) return bert_model_has_token_head(m) ? m->head.num_labels : 0;
    if (c->task == BERT_TRAIN_QA) return bert_model_has_qa_head(m) ? 2 : 0;
    return 0;
}

/* Copies the base's weights; a head it lacks (or has with other rows) is
 * drawn as transformers' _init_weights draws nn.Linear: normal(0,
 * initializer_range) weights, zero biases. */
static void fill_parameters(bert_trainer *tr, const bert_model *m)
{
    const tn_config *c = &tr->c;
    float *w = tr->block[BLOCK_W];
    const int hd = TN_HEAD_DENSE_W(c->layers);
    const int keep_head = base_head_rows(m, c) == c->outputs && c->outputs > 0;
    tn_rng rng;
    tn_rng_seed(&rng, tr->s.seed);
    double range = m->cfg.initializer_range > 0 ? m->cfg.initializer_range : 0.02;
    for (int k = 0; k < tr->tensors; k++) {
        const tn_tensor *t = &tr->t[k];
        size_t count = (size_t)t->rows * (size_t)(t->cols > 0 ? t->cols : 1);
        if (!count) continue;
        const float *src = model_tensor(m, c, k);
        /* The dense layer before the output is kept even under a new output
         * layer (BERT's pooler, the others' dense layer), as from_pretrained
         * keeps every tensor whose shape fits. */
        int fresh = k >= hd + 2 && k < hd + 4 ? !keep_head : k >= hd && k < hd + 2 ? !src : 0;
        if (!fresh && src) {
            memcpy(w + t->off, src, count * sizeof *w);
            continue;
        }
        for (size_t e = 0; e < count; e++)
            w[t->off + e] = t->cols > 0 ? (float)(tn_rng_normal(&rng) * range) : 0.0f;
    }
}

bert_trainer *bert_trainer_new(const bert_model *base, const bert_train_settings *s, char **err)
{
    *err = NULL;
    if (!s) { *err = bert_errorf("bert_trainer_new: no settings"); return NULL; }
    if (check_settings(s, err) || check_base(base, err)) return NULL;
    bert_trainer *tr = calloc(1, sizeof *tr);
    if (!tr) goto oom;
    tr->s = *s;
    tr->c = net_config(base, s);
    tr->tensors = TN_TENSORS(tr->c.layers);
    tr->t = calloc((size_t)tr->tensors, sizeof *tr->t);
    if (!tr->t) goto oom;
    tr->floats = tn_layout(&tr->c, tr->t);
    for (int b = 0; b < BLOCKS; b++) {
        tr->block[b] = calloc(tr->floats, sizeof(float));
        tr->view[b].layers = calloc((size_t)tr->c.layers, sizeof *tr->view[b].layers);
        if (!tr->block[b] || !tr->view[b].layers) goto oom;
        view_bind(&tr->view[b], tr, tr->block[b], &base->cfg);
    }
    fill_parameters(tr, base);
    /* Called in any case: it also holds OpenBLAS to one thread, since the
     * products are shared out over the trainer's own threads. */
    int fallback = bert_threads_default();
    int threads = s->threads > 0 ? s->threads : fallback;
    if (threads > 1) tr->workers = bert_workers_new();   /* NULL: the calling thread alone */
    /* Reseeded by every accumulate (dropout_seed); this seed is never drawn from. */
    tr->net = tn_net_new(&tr->c, tr->t, tr->block[BLOCK_W], tr->block[BLOCK_G], tr->workers, threads,
                         s->seed ^ 0x5DEECE66DULL);
    if (!tr->net) goto oom;
    return tr;
oom:;
    size_t mb = tr ? BLOCKS * tr->floats * sizeof(float) >> 20 : 0;
    bert_trainer_free(tr);
    *err = bert_errorf("out of memory: a trainer for this model needs more than %zu MB", mb);
    return NULL;
}

void bert_trainer_free(bert_trainer *t)
{
    if (!t) return;
    tn_net_free(t->net);
    bert_workers_free(t->workers);
    for (int b = 0; b < BLOCKS; b++) {
        free(t->block[b]);
        free(t->view[b].layers);
    }
    free(t->t);
    free(t);
}

/* ------------------------------------------------------------ training */

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* The dropout stream of one micro-batch: a function of the seed, the
 * optimizer step and the micro-batch's place in the accumulation alone, so
 * that a run restored at a step (bert_trainer_set_state) draws the masks the
 * run never stopped would have drawn, without a generator's state to save.
 * Within the batch every site (the embeddings, each layer's attention and
 * sublayers, the head) takes its draws in the fixed order of the forward
 * pass.  Apart from the head's initialization, which draws from s->seed. */
static uint64_t dropout_seed(const bert_trainer *t)
{
    uint64_t z = mix64(t->s.seed ^ 0x5DEECE66DULL);
    z = mix64(z + 0x9E3779B97F4A7C15ULL * (uint64_t)(t->steps + 1));
    return mix64(z + 0xD1B54A32D192ED03ULL * (uint64_t)(t->micro + 1));
}

int bert_trainer_accumulate(bert_trainer *t, const bert_train_batch *b, float scale, double *loss,
                            bert_interrupt_fn interrupted, void *ctx, char **err)
{
    *err = NULL;
    if (!t) { *err = bert_errorf("bert_trainer_accumulate: no trainer"); return -1; }
    if (!(scale > 0 && isfinite(scale))) {
        *err = bert_errorf("bert_trainer_accumulate: the scale must be a positive number");
        return -1;
    }
    tn_net_reseed(t->net, dropout_seed(t));
    t->micro++;
    return tn_net_accumulate(t->net, b, scale, loss, interrupted, ctx, err);
}

static int trains(const bert_trainer *t, int k)
{
    return t->t[k].rows > 0 && !t->t[k].frozen && (t->t[k].head || !t->c.freeze_encoder);
}

static size_t count_of(const tn_tensor *t)
{
    return (size_t)t->rows * (size_t)(t->cols > 0 ? t->cols : 1);
}

/* get_linear_schedule_with_warmup's lr_lambda at `step`. */
static double schedule(const bert_train_settings *s, long step)
{
    if (step < s->warmup_steps) return (double)step / (double)(s->warmup_steps > 1 ? s->warmup_steps : 1);
    double left = (double)(s->total_steps - step) / (double)(s->total_steps - s->warmup_steps > 1
                                                               ? s->total_steps - s->warmup_steps : 1);
    return left > 0 ? left : 0;
}

/* ---- the optimizer step, shared out over the threads by ranges of the blocks */

typedef struct {
    bert_trainer *t;
    int pass;                 /* 0: sums of squares; 1: AdamW; 2: the gradients zeroed */
    double *sums;             /* pass 0: one a chunk */
    float clip, step_size, bc2_sqrt, eps, b1, b2, one_b1, one_b2, decay;
    bert_isa isa;
} step_job;

/* torch.optim.AdamW's update of n floats, in float32 in torch's order
 * (_single_tensor_adamw): every operation rounds as there, so the vector
 * loops give the scalar loop's bits. */
static void adamw_scalar(float *w, float *m, float *v, const float *g, size_t n, const step_job *j, float decay)
{
    for (size_t e = 0; e < n; e++) {
        float grad = g[e] * j->clip;
        w[e] *= decay;
        m[e] = m[e] * j->b1 + grad * j->one_b1;
        v[e] = v[e] * j->b2 + j->one_b2 * grad * grad;
        float denom = sqrtf(v[e]) / j->bc2_sqrt + j->eps;
        w[e] += -j->step_size * (m[e] / denom);
    }
}

#ifdef BERT_X86_KERNELS
/* The same operations sixteen (eight) lanes at a time; no fused
 * multiply-adds, as the scalar loop has none.  sqrtf's errno check keeps
 * the compiler from vectorizing the scalar loop itself. */
BERT_TARGET_AVX512 static size_t adamw_avx512(float *w, float *m, float *v, const float *g, size_t n,
                                              const step_job *j, float decay)
{
    const __m512 clip = _mm512_set1_ps(j->clip), b1 = _mm512_set1_ps(j->b1), b2 = _mm512_set1_ps(j->b2),
                 ob1 = _mm512_set1_ps(j->one_b1), ob2 = _mm512_set1_ps(j->one_b2),
                 bc2 = _mm512_set1_ps(j->bc2_sqrt), eps = _mm512_set1_ps(j->eps),
                 step = _mm512_set1_ps(-j->step_size), dec = _mm512_set1_ps(decay);
    size_t e = 0;
    for (; e + 16 <= n; e += 16) {
        __m512 grad = _mm512_mul_ps(_mm512_loadu_ps(g + e), clip);
        __m512 we = _mm512_mul_ps(_mm512_loadu_ps(w + e), dec);
        __m512 me = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(m + e), b1), _mm512_mul_ps(grad, ob1));
        __m512 ve = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(v + e), b2), _mm512_mul_ps(_mm512_mul_ps(ob2, grad), grad));
        __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(ve), bc2), eps);
        we = _mm512_add_ps(we, _mm512_mul_ps(step, _mm512_div_ps(me, denom)));
        _mm512_storeu_ps(m + e, me);
        _mm512_storeu_ps(v + e, ve);
        _mm512_storeu_ps(w + e, we);
    }
    return e;
}

BERT_TARGET_AVX2 static size_t adamw_avx2(float *w, float *m, float *v, const float *g, size_t n, const step_job *j,
                                          float decay)
{
    const __m256 clip = _mm256_set1_ps(j->clip), b1 = _mm256_set1_ps(j->b1), b2 = _mm256_set1_ps(j->b2),
                 ob1 = _mm256_set1_ps(j->one_b1), ob2 = _mm256_set1_ps(j->one_b2),
                 bc2 = _mm256_set1_ps(j->bc2_sqrt), eps = _mm256_set1_ps(j->eps),
                 step = _mm256_set1_ps(-j->step_size), dec = _mm256_set1_ps(decay);
    size_t e = 0;
    for (; e + 8 <= n; e += 8) {
        __m256 grad = _mm256_mul_ps(_mm256_loadu_ps(g + e), clip);
        __m256 we = _mm256_mul_ps(_mm256_loadu_ps(w + e), dec);
        __m256 me = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(m + e), b1), _mm256_mul_ps(grad, ob1));
        __m256 ve = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(v + e), b2), _mm256_mul_ps(_mm256_mul_ps(ob2, grad), grad));
        __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(ve), bc2), eps);
        we = _mm256_add_ps(we, _mm256_mul_ps(step, _mm256_div_ps(me, denom)));
        _mm256_storeu_ps(m + e, me);
        _mm256_storeu_ps(v + e, ve);
        _mm256_storeu_ps(w + e, we);
    }
    return e;
}
#endif

static void adamw_span(float *w, float *m, float *v, const float *g, size_t n, const step_job *j, float decay)
{
    size_t done = 0;
#ifdef BERT_X86_KERNELS
    if (j->isa == BERT_ISA_AVX512) done = adamw_avx512(w, m, v, g, n, j, decay);
    else if (j->isa == BERT_ISA_AVX2) done = adamw_avx2(w, m, v, g, n, j, decay);
#endif
    adamw_scalar(w + done, m + done, v + done, g + done, n - done, j, decay);
}

static void step_chunk(void *p, int chunk, int chunks)
{
    step_job *j = p;
    bert_trainer *t = j->t;
    const size_t c0 = t->floats * (size_t)chunk / (size_t)chunks, c1 = t->floats * (size_t)(chunk + 1) / (size_t)chunks;
    float *w = t->block[BLOCK_W], *g = t->block[BLOCK_G], *m = t->block[BLOCK_M], *v = t->block[BLOCK_V];
    if (j->pass == 2) {
        memset(g + c0, 0, (c1 - c0) * sizeof *g);
        return;
    }
    double sum = 0;
    for (int k = 0; k < t->tensors; k++) {
        if (!trains(t, k)) continue;
        size_t e0 = t->t[k].off, e1 = e0 + count_of(&t->t[k]);
        e0 = e0 > c0 ? e0 : c0;
        e1 = e1 < c1 ? e1 : c1;
        if (e0 >= e1) continue;
        if (j->pass == 0) {
            for (size_t e = e0; e < e1; e++) sum += (double)g[e] * g[e];
        } else {
            const float decay = t->t[k].decay ? j->decay : 1.0f;
            adamw_span(w + e0, m + e0, v + e0, g + e0, e1 - e0, j, decay);
        }
    }
    if (j->pass == 0) j->sums[chunk] = sum;
}

/* Chunks of the blocks: four a thread, so that a busy core's share goes to the others. */
enum { STEP_CHUNKS_MAX = 64 };

static void step_run(bert_trainer *t, step_job *j, int chunks)
{
    int threads = t->s.threads > 0 ? t->s.threads : bert_threads_default();
    if (!t->workers || threads < 2 || chunks < 2) {
        for (int c = 0; c < chunks; c++) step_chunk(j, c, chunks);
        return;
    }
    bert_workers_run(t->workers, threads, chunks, step_chunk, j);
}

int bert_trainer_step(bert_trainer *t, double *rate, double *grad_norm, char **err)
{
    *err = NULL;
    if (!t) { *err = bert_errorf("bert_trainer_step: no trainer"); return -1; }
    const bert_train_settings *s = &t->s;
    int threads = s->threads > 0 ? s->threads : bert_threads_default();
    int chunks = t->workers && threads > 1 ? 4 * threads : 1;
    if (chunks > STEP_CHUNKS_MAX) chunks = STEP_CHUNKS_MAX;
    if ((size_t)chunks > t->floats / 4096 + 1) chunks = (int)(t->floats / 4096 + 1);
    double sums[STEP_CHUNKS_MAX];
    step_job j = {t, 0, sums, 0, 0, 0, 0, 0, 0, 0, 0, 0, bert_cpu_isa()};
    /* clip_grad_norm_: the norm of every trained gradient together. */
    step_run(t, &j, chunks);
    double sum = 0;
    for (int c = 0; c < chunks; c++) sum += sums[c];
    double norm = sqrt(sum);
    if (grad_norm) *grad_norm = norm;
    if (!isfinite(norm)) {
        j.pass = 2;
        step_run(t, &j, chunks);
        t->micro = 0;
        *err = bert_errorf("the gradients are not finite (their norm is %g): the step was not taken", norm);
        return -1;
    }
    float clip = 1;
    if (s->max_grad_norm > 0) {
        float coef = (float)(s->max_grad_norm / (norm + 1e-6));
        if (coef < 1) clip = coef;
    }
    const double lr = s->learning_rate * schedule(s, t->steps);
    if (rate) *rate = lr;
    /* torch.optim.AdamW (decoupled decay), in float32 as torch computes it,
     * with the bias corrections and step size in double as Python does. */
    const long step = t->steps + 1;
    const double bc1 = 1 - pow((double)s->beta1, (double)step), bc2 = 1 - pow((double)s->beta2, (double)step);
    j.pass = 1;
    j.clip = clip;
    j.step_size = (float)(lr / bc1);
    j.bc2_sqrt = (float)sqrt(bc2);
    j.eps = s->epsilon;
    j.b1 = s->beta1;
    j.b2 = s->beta2;
    j.one_b1 = (float)(1 - (double)s->beta1);
    j.one_b2 = (float)(1 - (double)s->beta2);
    j.decay = (float)(1 - lr * s->weight_decay);
    step_run(t, &j, chunks);
    j.pass = 2;
    step_run(t, &j, chunks);
    t->steps = step;
    t->micro = 0;
    return 0;
}

long bert_trainer_steps(const bert_trainer *t)
{
    return t ? t->steps : 0;
}

const bert_model *bert_trainer_model(const bert_trainer *t)
{
    return t ? &t->view[BLOCK_W] : NULL;
}

const bert_model *bert_trainer_moments(const bert_trainer *t, int which)
{
    return t && (which == 0 || which == 1) ? &t->view[which ? BLOCK_V : BLOCK_M] : NULL;
}

const bert_model *bert_trainer_gradients(const bert_trainer *t)
{
    return t ? &t->view[BLOCK_G] : NULL;
}

/* ------------------------------------------------------------ a run restored */

static int same_shape(const bert_trainer *t, const bert_model *m, const char *what, char **err)
{
    const bert_config *a = &t->view[BLOCK_W].cfg, *b = &m->cfg;
    if (a->vocab_size != b->vocab_size || a->hidden_size != b->hidden_size || a->num_layers != b->num_layers ||
        a->intermediate_size != b->intermediate_size || a->max_position_embeddings != b->max_position_embeddings ||
        a->num_heads != b->num_heads || (t->t[TN_TYPE].rows && a->type_vocab_size != b->type_vocab_size) ||
        (t->c.family == BERT_FAMILY_ELECTRA && a->fam.embedding_size != b->fam.embedding_size) ||
        (t->c.rel_buckets && a->relative_buckets != b->relative_buckets)) {
        *err = bert_errorf("the saved %s do not have the model's shape (sizes in config.json differ)", what);
        return -1;
    }
    if (t->c.outputs && t->c.task != BERT_TRAIN_QA && m->head.num_labels != t->c.outputs) {
        *err = bert_errorf("the saved %s have a head of %d labels where the run has %d", what, m->head.num_labels,
                           t->c.outputs);
        return -1;
    }
    for (int k = 0; k < t->tensors; k++)
        if (t->t[k].rows && !model_tensor(m, &t->c, k)) {
            *err = bert_errorf("the saved %s lack a tensor the run trains (number %d of %d)", what, k, t->tensors);
            return -1;
        }
    return 0;
}

int bert_trainer_set_state(bert_trainer *t, const bert_model *weights, const bert_model *first,
                           const bert_model *second, long steps, char **err)
{
    *err = NULL;
    if (!t || !weights || !first || !second || steps < 0) {
        *err = bert_errorf("bert_trainer_set_state: the weights, both moments and steps >= 0 are needed");
        return -1;
    }
    const bert_model *from[3] = {weights, first, second};
    static const char *const names[3] = {"weights", "first moments", "second moments"};
    const int to[3] = {BLOCK_W, BLOCK_M, BLOCK_V};
    for (int i = 0; i < 3; i++)
        if (same_shape(t, from[i], names[i], err)) return -1;
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < t->tensors; k++)
            if (t->t[k].rows)
                memcpy(t->block[to[i]] + t->t[k].off, model_tensor(from[i], &t->c, k), count_of(&t->t[k]) * sizeof(float));
    memset(t->block[BLOCK_G], 0, t->floats * sizeof(float));
    t->steps = steps;
    t->micro = 0;
    return 0;
}
