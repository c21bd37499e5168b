/*
 * gen_model.c - writes a BERT model directory in the exact Hugging Face
 * layout, with deterministic pseudo-random weights, for tests.
 *
 *   cc -std=c11 -O2 -ffp-contract=off -o gen_model gen_model.c
 *   ./gen_model OUTDIR --vocab vocab.txt [options]     (--help lists them)
 *
 * The bytes written depend only on the options and the vocabulary file, on
 * every machine: the generator is splitmix64, and normal-looking values come
 * from the Irwin-Hall sum of four 32-bit uniforms, which needs integer
 * arithmetic and one exactly specified multiplication instead of libm's
 * log() and cos() (Box-Muller), whose last bit differs between C libraries.
 * Every tensor draws from its own stream, seeded from the seed and the
 * tensor's name, so adding a tensor (an untied decoder, a pooler) leaves the
 * others unchanged.
 *
 * --model-type roberta, xlm-roberta and mpnet write those families' tensor
 * names and config keys, and a vocabulary laid out as all-mpnet-base-v2's
 * vocab.txt: <s>, <pad>, </s>, <unk>, then the given (bert-base-uncased)
 * vocabulary, then <mask>, so that its tokenizer.json gives the same ids.
 *
 * Scales are chosen so the models are well conditioned and make tests
 * sensitive: linear layers keep unit variance (std 1/sqrt(fan_in)) so the
 * attention is neither uniform nor one-hot; every bias is non-zero and every
 * LayerNorm weight is 1 + noise, so a dropped bias or a forgotten LayerNorm
 * weight shows; position and segment embeddings carry a quarter and a tenth
 * of the embedding variance, so wrong position or type ids show; embeddings
 * are as small as in trained checkpoints (std 0.05), so the embedding
 * LayerNorm's epsilon matters and a wrong one shows; the MLM
 * logits have a spread of about 3 plus a decoder bias of std 1, so the top-k
 * candidates have probabilities of a few percent and clear gaps.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "gen_model needs IEEE double arithmetic without excess precision (FLT_EVAL_METHOD 0) to be reproducible"
#endif

typedef enum { DT_F32, DT_F16, DT_BF16 } dtype;
typedef enum { ARCH_MODEL, ARCH_MLM, ARCH_PRETRAINING, ARCH_CLASSIFY, ARCH_TOKEN, ARCH_QA } arch;

typedef struct {
    const char *outdir, *vocab_path;
    int layers, hidden, heads, intermediate, max_positions, model_max_length;
    dtype dt;
    arch ar;
    int prefix, pooler, untied, old_layernorm, position_ids;
    const char *act;
    const char *st_pooling;     /* NULL: not a sentence-transformers model */
    int normalize, max_seq_length;
    double embedding_std;       /* word embeddings; positions 0.6x, segments 0.4x */
    int distilbert;             /* model_type "distilbert": its tensor names and config keys */
    const char *family;         /* "roberta", "xlm-roberta" or "mpnet"; NULL for BERT and DistilBERT */
    const char *prompts;        /* config_sentence_transformers.json "prompts" object text, or NULL */
    const char *default_prompt; /* its default_prompt_name, or NULL */
    int num_labels;             /* sequence-classification head (--arch classify) */
    const char *labels;         /* comma-separated id2label, "default" for LABEL_<i>, NULL: none written */
    const char *problem_type;   /* NULL: not written */
    const char *st_activation;  /* config.json sentence_transformers.activation_fn; NULL: absent */
    double classifier_std;      /* classifier weights' std, times 1/sqrt(hidden) */
    double first_label_bias;    /* added to the bias of label 0 (token classification's "O") */
    uint64_t seed;
    int vocab_size;             /* lines of the vocabulary file */
    int shards;                 /* > 1: a sharded checkpoint (model.safetensors.index.json) */
    int colbert;                /* a ColBERT model as PyLate saves it (--colbert DIM) */
    int colbert_dim;            /* its Dense module's out_features; 0: no Dense module */
} options;

/* ---- random numbers ---------------------------------------------------- */

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t fnv1a64(const char *s)
{
    uint64_t h = 0xCBF29CE484222325ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001B3ULL;
    return h;
}

/* Mean 0, variance 1, bounded by +-2*sqrt(3). */
static double std_normalish(uint64_t *state)
{
    uint64_t a = splitmix64(state), b = splitmix64(state);
    int64_t sum = (int64_t)((a >> 32) + (a & 0xFFFFFFFFu) + (b >> 32) + (b & 0xFFFFFFFFu));
    double centred = (double)(sum - ((int64_t)1 << 33));   /* exact: below 2^35 */
    double unit = centred * (1.0 / 4294967296.0);          /* exact: a power of two */
    return unit * 1.7320508075688772;                      /* sqrt(12 / 4) */
}

/* ---- float conversions, round to nearest even ---------------------------- */

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static uint16_t to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    u += 0x7FFFu + ((u >> 16) & 1u);   /* weights are finite: no NaN case */
    return (uint16_t)(u >> 16);
}

static uint16_t to_f16(float f)
{
    uint32_t u = f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    int exp = (int)((u >> 23) & 0xFF) - 127 + 15;
    uint32_t man = u & 0x7FFFFFu;
    if (exp >= 31) return (uint16_t)(sign | 0x7C00u);          /* overflow: inf */
    if (exp <= 0) {                                            /* subnormal or zero */
        if (exp < -10) return (uint16_t)sign;
        man |= 0x800000u;
        int shift = 14 - exp;
        uint32_t half = 1u << (shift - 1);
        uint32_t rest = man & ((1u << shift) - 1);
        uint32_t h = man >> shift;
        if (rest > half || (rest == half && (h & 1u))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)exp << 10) | (man >> 13);
    uint32_t rest = man & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;  /* may carry into inf: fine */
    return (uint16_t)(sign | h);
}

/* ---- tensors ------------------------------------------------------------- */

typedef enum { FILL_NORMAL, FILL_ONE_PLUS, FILL_POSITIONS } fill_kind;

typedef struct {
    char name[128];
    int is_i64;          /* embeddings.position_ids, as older checkpoints carry it */
    int rank;
    long long shape[2];
    fill_kind fill;
    double std;
    double first_plus;   /* added to element 0: a head that favours its first label */
    size_t offset, nbytes;
} tensor;

typedef struct {
    tensor *t;
    int n, cap;
} tensor_list;

static size_t dtype_size(dtype d) { return d == DT_F32 ? 4 : 2; }
static const char *dtype_name(dtype d) { return d == DT_F32 ? "F32" : d == DT_F16 ? "F16" : "BF16"; }

static int add(tensor_list *l, const char *prefix, const char *name, long long rows, long long cols,
               fill_kind fill, double std)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        tensor *t = realloc(l->t, (size_t)cap * sizeof *t);
        if (!t) return -1;
        l->t = t;
        l->cap = cap;
    }
    tensor *t = &l->t[l->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s%s", prefix, name);
    t->rank = cols ? 2 : 1;
    t->shape[0] = rows;
    t->shape[1] = cols;
    t->fill = fill;
    t->std = std;
    return 0;
}

static const char *ln_w(const options *o) { return o->old_layernorm ? "gamma" : "weight"; }
static const char *ln_b(const options *o) { return o->old_layernorm ? "beta" : "bias"; }

/* A module's weight (rows x cols; cols 0 for a vector) and its bias (rows,
 * std 0.1), the module's name formatted as printf does. */
static int add_pair(tensor_list *l, const char *prefix, const char *weight, const char *bias, long long rows,
                    long long cols, fill_kind fill, double std, const char *fmt, va_list ap)
{
    char module[128], name[160];
    vsnprintf(module, sizeof module, fmt, ap);
    snprintf(name, sizeof name, "%s.%s", module, weight);
    int rc = add(l, prefix, name, rows, cols, fill, std);
    snprintf(name, sizeof name, "%s.%s", module, bias);
    return rc | add(l, prefix, name, rows, 0, FILL_NORMAL, 0.1);
}

/* nn.Linear: weight [rows x cols] of the given std, bias [rows]. */
static int add_linear(tensor_list *l, const char *prefix, long long rows, long long cols, double std,
                      const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static int add_linear(tensor_list *l, const char *prefix, long long rows, long long cols, double std,
                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = add_pair(l, prefix, "weight", "bias", rows, cols, FILL_NORMAL, std, fmt, ap);
    va_end(ap);
    return rc;
}

/* nn.LayerNorm: weight near 1 and bias, or gamma and beta (--old-layernorm). */
static int add_layer_norm(tensor_list *l, const char *prefix, const options *o, long long dim, const char *fmt,
                          ...) __attribute__((format(printf, 5, 6)));
static int add_layer_norm(tensor_list *l, const char *prefix, const options *o, long long dim, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = add_pair(l, prefix, ln_w(o), ln_b(o), dim, 0, FILL_ONE_PLUS, 0.1, fmt, ap);
    va_end(ap);
    return rc;
}

/* sqrt is correctly rounded by IEEE 754, unlike log and cos: same bits everywhere. */
static double inv_sqrt(int n) { return 1.0 / sqrt((double)n); }

/* BertForTokenClassification / DistilBertForTokenClassification: classifier
 * on every token's hidden state; BertForQuestionAnswering /
 * DistilBertForQuestionAnswering: qa_outputs, start and end logits per token.
 * Neither has a pooler.  The hidden states are LayerNorm'd (unit scale), so a
 * std of classifier_std / sqrt(hidden) gives logits of std about
 * classifier_std: the winning label or span is decided by clear gaps. */
static int add_token_qa_heads(const options *o, tensor_list *l)
{
    int rc = 0;
    double sh = inv_sqrt(o->hidden);
    if (o->ar == ARCH_TOKEN) {
        rc |= add_linear(l, "", o->num_labels, o->hidden, o->classifier_std * sh, "classifier");
        if (!rc) l->t[l->n - 1].first_plus = o->first_label_bias;   /* the bias */
    }
    if (o->ar == ARCH_QA) {
        rc |= add_linear(l, "", 2, o->hidden, o->classifier_std * sh, "qa_outputs");
    }
    return rc;
}

/* BERT's feed-forward block of layer i (RoBERTa's and MPNet's too):
 * intermediate.dense, output.dense, output.LayerNorm. */
static int add_ffn(tensor_list *l, const char *prefix, const options *o, int i)
{
    long long H = o->hidden, I = o->intermediate;
    int rc = add_linear(l, prefix, I, H, inv_sqrt(o->hidden), "encoder.layer.%d.intermediate.dense", i);
    rc |= add_linear(l, prefix, H, I, inv_sqrt(o->intermediate), "encoder.layer.%d.output.dense", i);
    return rc | add_layer_norm(l, prefix, o, H, "encoder.layer.%d.output.LayerNorm", i);
}

/* DistilBertModel / DistilBertForSequenceClassification: the same post-LayerNorm
 * block as BERT under other names, no segment embeddings, no pooler; the
 * classifier is pre_classifier -> ReLU -> classifier on the first token.
 * DistilBertForMaskedLM's head: vocab_transform -> activation ->
 * vocab_layer_norm -> vocab_projector (tied to the word embeddings). */
static int build_distilbert_tensors(const options *o, tensor_list *l)
{
    const char *p = o->ar != ARCH_MODEL ? "distilbert." : "";
    long long V = o->vocab_size, H = o->hidden, I = o->intermediate, P = o->max_positions;
    int rc = 0;
    double sh = inv_sqrt(o->hidden), si = inv_sqrt(o->intermediate), se = o->embedding_std;
    rc |= add(l, p, "embeddings.word_embeddings.weight", V, H, FILL_NORMAL, se);
    rc |= add(l, p, "embeddings.position_embeddings.weight", P, H, FILL_NORMAL, 0.6 * se);
    rc |= add_layer_norm(l, p, o, H, "embeddings.LayerNorm");
    for (int i = 0; i < o->layers; i++) {
        static const char *lin[] = {"attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin"};
        for (int k = 0; k < 4; k++) rc |= add_linear(l, p, H, H, sh, "transformer.layer.%d.%s", i, lin[k]);
        rc |= add_layer_norm(l, p, o, H, "transformer.layer.%d.sa_layer_norm", i);
        rc |= add_linear(l, p, I, H, sh, "transformer.layer.%d.ffn.lin1", i);
        rc |= add_linear(l, p, H, I, si, "transformer.layer.%d.ffn.lin2", i);
        rc |= add_layer_norm(l, p, o, H, "transformer.layer.%d.output_layer_norm", i);
    }
    if (o->ar == ARCH_CLASSIFY) {
        /* pre_classifier's output goes through ReLU: a positive bias keeps
         * about two thirds of the units alive, so the classifier sees a
         * signal that depends on the text. */
        rc |= add(l, "", "pre_classifier.weight", H, H, FILL_NORMAL, sh);
        rc |= add(l, "", "pre_classifier.bias", H, 0, FILL_NORMAL, 0.5);
        rc |= add_linear(l, "", o->num_labels, H, o->classifier_std * sh, "classifier");
    }
    if (o->ar == ARCH_MLM) {
        rc |= add_linear(l, "", H, H, sh, "vocab_transform");
        rc |= add_layer_norm(l, "", o, H, "vocab_layer_norm");
        rc |= add(l, "", "vocab_projector.bias", V, 0, FILL_NORMAL, 1.0);
    }
    rc |= add_token_qa_heads(o, l);
    return rc ? -1 : 0;
}

static int is_mpnet(const options *o) { return o->family && strcmp(o->family, "mpnet") == 0; }

/* RobertaModel / XLMRobertaModel (BERT's encoder, names and all, with one
 * token type) or MPNetModel (q, k, v, o; no segments; the relative position
 * bias), under "roberta." or "mpnet." in the *For* classes; their heads:
 * lm_head (RobertaLMHead, MPNetLMHead), classifier.dense + classifier.out_proj
 * (RobertaClassificationHead), classifier (token), qa_outputs. */
static int build_roberta_tensors(const options *o, tensor_list *l)
{
    const char *p = !o->prefix ? "" : is_mpnet(o) ? "mpnet." : "roberta.";
    long long V = o->vocab_size, H = o->hidden, P = o->max_positions;
    int rc = 0;
    double sh = inv_sqrt(o->hidden), se = o->embedding_std;
    rc |= add(l, p, "embeddings.word_embeddings.weight", V, H, FILL_NORMAL, se);
    rc |= add(l, p, "embeddings.position_embeddings.weight", P, H, FILL_NORMAL, 0.6 * se);
    if (!is_mpnet(o)) rc |= add(l, p, "embeddings.token_type_embeddings.weight", 1, H, FILL_NORMAL, 0.4 * se);
    rc |= add_layer_norm(l, p, o, H, "embeddings.LayerNorm");
    if (o->position_ids) {
        rc |= add(l, p, "embeddings.position_ids", 1, P, FILL_POSITIONS, 0);
        if (!rc) l->t[l->n - 1].is_i64 = 1;
    }
    /* About the spread of the attention scores, so that the buckets matter. */
    if (is_mpnet(o)) rc |= add(l, p, "encoder.relative_attention_bias.weight", 32, o->heads, FILL_NORMAL, 1.0);
    static const char *bert_lin[] = {"attention.self.query", "attention.self.key", "attention.self.value",
                                     "attention.output.dense"};
    static const char *mpnet_lin[] = {"attention.attn.q", "attention.attn.k", "attention.attn.v", "attention.attn.o"};
    const char *attn_ln = is_mpnet(o) ? "attention.LayerNorm" : "attention.output.LayerNorm";
    for (int i = 0; i < o->layers; i++) {
        for (int k = 0; k < 4; k++)
            rc |= add_linear(l, p, H, H, sh, "encoder.layer.%d.%s", i, is_mpnet(o) ? mpnet_lin[k] : bert_lin[k]);
        rc |= add_layer_norm(l, p, o, H, "encoder.layer.%d.%s", i, attn_ln);
        rc |= add_ffn(l, p, o, i);
    }
    if (o->pooler) rc |= add_linear(l, p, H, H, sh, "pooler.dense");
    if (o->ar == ARCH_MLM) {
        rc |= add(l, "", "lm_head.bias", V, 0, FILL_NORMAL, 1.0);
        rc |= add_linear(l, "", H, H, sh, "lm_head.dense");
        rc |= add_layer_norm(l, "", o, H, "lm_head.layer_norm");
        if (o->untied) rc |= add(l, "", "lm_head.decoder.weight", V, H, FILL_NORMAL, 0.25);
    }
    if (o->ar == ARCH_CLASSIFY) {
        rc |= add_linear(l, "", H, H, sh, "classifier.dense");
        rc |= add_linear(l, "", o->num_labels, H, o->classifier_std * sh, "classifier.out_proj");
    }
    rc |= add_token_qa_heads(o, l);
    return rc ? -1 : 0;
}

static int build_tensors(const options *o, tensor_list *l)
{
    if (o->distilbert) return build_distilbert_tensors(o, l);
    if (o->family) return build_roberta_tensors(o, l);
    const char *p = o->prefix ? "bert." : "";
    long long V = o->vocab_size, H = o->hidden, P = o->max_positions;
    int rc = 0;
    double sh = inv_sqrt(o->hidden);

    double se = o->embedding_std;
    rc |= add(l, p, "embeddings.word_embeddings.weight", V, H, FILL_NORMAL, se);
    rc |= add(l, p, "embeddings.position_embeddings.weight", P, H, FILL_NORMAL, 0.6 * se);
    rc |= add(l, p, "embeddings.token_type_embeddings.weight", 2, H, FILL_NORMAL, 0.4 * se);
    rc |= add_layer_norm(l, p, o, H, "embeddings.LayerNorm");
    if (o->position_ids) {
        rc |= add(l, p, "embeddings.position_ids", 1, P, FILL_POSITIONS, 0);
        if (!rc) l->t[l->n - 1].is_i64 = 1;
    }
    for (int i = 0; i < o->layers; i++) {
        static const char *qkv[] = {"attention.self.query", "attention.self.key", "attention.self.value",
                                    "attention.output.dense"};
        for (int k = 0; k < 4; k++) rc |= add_linear(l, p, H, H, sh, "encoder.layer.%d.%s", i, qkv[k]);
        rc |= add_layer_norm(l, p, o, H, "encoder.layer.%d.attention.output.LayerNorm", i);
        rc |= add_ffn(l, p, o, i);
    }
    if (o->pooler) rc |= add_linear(l, p, H, H, sh, "pooler.dense");
    if (o->ar == ARCH_MLM || o->ar == ARCH_PRETRAINING) {
        rc |= add(l, "", "cls.predictions.bias", V, 0, FILL_NORMAL, 1.0);
        rc |= add_linear(l, "", H, H, sh, "cls.predictions.transform.dense");
        rc |= add_layer_norm(l, "", o, H, "cls.predictions.transform.LayerNorm");
        if (o->untied) rc |= add(l, "", "cls.predictions.decoder.weight", V, H, FILL_NORMAL, 0.25);
    }
    if (o->ar == ARCH_PRETRAINING) {
        rc |= add_linear(l, "", 2, H, 2.0 * sh, "cls.seq_relationship");
    }
    if (o->ar == ARCH_CLASSIFY) {
        /* On the pooler's tanh output; the larger std spreads the logits so
         * that the order of the labels is decided by clear gaps. */
        rc |= add_linear(l, "", o->num_labels, H, o->classifier_std * sh, "classifier");
    }
    rc |= add_token_qa_heads(o, l);
    return rc ? -1 : 0;
}

/* The safetensors writer's order: wider dtypes first, then by name. */
static int tensor_order(const void *a, const void *b)
{
    const tensor *x = a, *y = b;
    if (x->is_i64 != y->is_i64) return y->is_i64 - x->is_i64;
    return strcmp(x->name, y->name);
}

/* ---- output helpers ------------------------------------------------------ */

typedef struct {
    char *s;
    size_t len, cap;
    int oom;
} buf;

static void buf_add(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void buf_add(buf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) { b->oom = 1; return; }
        if (b->s && b->len + (size_t)n < b->cap) { b->len += (size_t)n; return; }
        size_t cap = (b->cap ? 2 * b->cap : 4096) + (size_t)n;
        char *s = realloc(b->s, cap);
        if (!s) { b->oom = 1; return; }
        b->s = s;
        b->cap = cap;
    }
}

static int write_file(const char *dir, const char *name, const void *data, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) { fprintf(stderr, "gen_model: cannot create %s: %s\n", path, strerror(errno)); return -1; }
    int ok = fwrite(data, 1, len, f) == len;
    ok &= fclose(f) == 0;
    if (!ok) fprintf(stderr, "gen_model: cannot write %s: %s\n", path, strerror(errno));
    return ok ? 0 : -1;
}

static int write_buf(const char *dir, const char *name, buf *b)
{
    if (b->oom) { fprintf(stderr, "gen_model: out of memory writing %s\n", name); return -1; }
    return write_file(dir, name, b->s, b->len);
}

static int make_dir(const char *path)
{
    if (mkdir(path, 0755) == 0 || errno == EEXIST) return 0;
    fprintf(stderr, "gen_model: cannot create directory %s: %s\n", path, strerror(errno));
    return -1;
}

/* ---- the files ------------------------------------------------------------ */

/* Writes tensors [from, to) of l, in order, as the safetensors file `name`. */
static int write_tensors(const options *o, tensor_list *l, int from, int to, const char *name)
{
    size_t offset = 0;
    for (int i = from; i < to; i++) {
        tensor *t = &l->t[i];
        size_t count = (size_t)t->shape[0] * (size_t)(t->rank == 2 ? t->shape[1] : 1);
        t->offset = offset;
        t->nbytes = count * (t->is_i64 ? 8 : dtype_size(o->dt));
        offset += t->nbytes;
    }

    buf h = {0};
    buf_add(&h, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = from; i < to; i++) {
        const tensor *t = &l->t[i];
        buf_add(&h, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%lld", t->name,
                t->is_i64 ? "I64" : dtype_name(o->dt), t->shape[0]);
        if (t->rank == 2) buf_add(&h, ",%lld", t->shape[1]);
        buf_add(&h, "],\"data_offsets\":[%zu,%zu]}", t->offset, t->offset + t->nbytes);
    }
    buf_add(&h, "}");
    while (!h.oom && h.len % 8) buf_add(&h, " ");
    if (h.oom) { fprintf(stderr, "gen_model: out of memory\n"); free(h.s); return -1; }

    char path[4096];
    snprintf(path, sizeof path, "%s/%s", o->outdir, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "gen_model: cannot create %s: %s\n", path, strerror(errno));
        free(h.s);
        return -1;
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)h.len >> (8 * i));
    int ok = fwrite(len8, 1, 8, f) == 8 && fwrite(h.s, 1, h.len, f) == h.len;
    free(h.s);

    unsigned char chunk[1 << 16];
    for (int i = from; ok && i < to; i++) {
        const tensor *t = &l->t[i];
        uint64_t state = splitmix64(&(uint64_t){o->seed}) ^ fnv1a64(t->name);
        size_t count = t->nbytes / (t->is_i64 ? 8 : dtype_size(o->dt)), fill = 0;
        for (size_t k = 0; ok && k < count; k++) {
            if (t->is_i64) {
                uint64_t v = (uint64_t)k;
                for (int b = 0; b < 8; b++) chunk[fill++] = (unsigned char)(v >> (8 * b));
            } else {
                double z = std_normalish(&state) * t->std;
                if (t->fill == FILL_ONE_PLUS) z += 1.0;
                if (k == 0) z += t->first_plus;
                float x = (float)z;
                uint32_t bits = o->dt == DT_F32 ? f32_bits(x) : o->dt == DT_F16 ? to_f16(x) : to_bf16(x);
                for (size_t b = 0; b < dtype_size(o->dt); b++) chunk[fill++] = (unsigned char)(bits >> (8 * b));
            }
            if (fill + 8 > sizeof chunk || k + 1 == count) {
                ok = fwrite(chunk, 1, fill, f) == fill;
                fill = 0;
            }
        }
    }
    ok &= fclose(f) == 0;
    if (!ok) fprintf(stderr, "gen_model: cannot write %s: %s\n", path, strerror(errno));
    return ok ? 0 : -1;
}

/* model.safetensors, or with --shards N the tensors cut into N files of
 * consecutive tensors and the index that maps each tensor to its file, as
 * save_pretrained writes a large model.  The values are the same either way:
 * each tensor's come from the seed and its name. */
static int write_safetensors(const options *o, tensor_list *l)
{
    qsort(l->t, (size_t)l->n, sizeof *l->t, tensor_order);
    if (o->shards <= 1) return write_tensors(o, l, 0, l->n, "model.safetensors");
    buf index = {0};
    size_t total = 0;
    for (int i = 0; i < l->n; i++)
        total += (size_t)l->t[i].shape[0] * (size_t)(l->t[i].rank == 2 ? l->t[i].shape[1] : 1) *
                 (l->t[i].is_i64 ? 8 : dtype_size(o->dt));
    buf_add(&index, "{\n  \"metadata\": {\n    \"total_size\": %zu\n  },\n  \"weight_map\": {", total);
    for (int k = 0; k < o->shards; k++) {
        int from = (int)((long long)l->n * k / o->shards), to = (int)((long long)l->n * (k + 1) / o->shards);
        char name[64];
        snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", k + 1, o->shards);
        if (write_tensors(o, l, from, to, name) != 0) { free(index.s); return -1; }
        for (int i = from; i < to; i++)
            buf_add(&index, "%s\n    \"%s\": \"%s\"", i ? "," : "", l->t[i].name, name);
    }
    buf_add(&index, "\n  }\n}\n");
    int rc = write_buf(o->outdir, "model.safetensors.index.json", &index);
    free(index.s);
    return rc;
}

/* config.json entries, written sorted by key with two-space indent: the way
 * transformers writes config.json. */
typedef struct {
    char key[64];
    char *value;         /* JSON text, possibly several lines, owned */
} config_entry;

typedef struct {
    config_entry e[64];
    int n, oom;
} config_list;

static void put(config_list *c, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void put(config_list *c, const char *key, const char *fmt, ...)
{
    if (c->oom || c->n == (int)(sizeof c->e / sizeof c->e[0])) { c->oom = 1; return; }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *v = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!v) { c->oom = 1; return; }
    va_start(ap, fmt);
    vsnprintf(v, (size_t)n + 1, fmt, ap);
    va_end(ap);
    snprintf(c->e[c->n].key, sizeof c->e[c->n].key, "%s", key);
    c->e[c->n++].value = v;
}

/* The encoder's keys of BertConfig, which RobertaConfig, XLMRobertaConfig
 * and MPNetConfig keep (config.json is written sorted by key). */
static void put_bert_encoder(config_list *c, const options *o, const char *layer_norm_eps)
{
    put(c, "attention_probs_dropout_prob", "0.1");
    put(c, "hidden_act", "\"%s\"", o->act);
    put(c, "hidden_dropout_prob", "0.1");
    put(c, "hidden_size", "%d", o->hidden);
    put(c, "initializer_range", "0.02");
    put(c, "intermediate_size", "%d", o->intermediate);
    put(c, "layer_norm_eps", "%s", layer_norm_eps);
    put(c, "max_position_embeddings", "%d", o->max_positions);
    put(c, "num_attention_heads", "%d", o->heads);
    put(c, "num_hidden_layers", "%d", o->layers);
}

static int entry_order(const void *a, const void *b)
{
    return strcmp(((const config_entry *)a)->key, ((const config_entry *)b)->key);
}

/* The i-th label: from the comma-separated --labels list, else LABEL_<i>. */
static void label_name(const options *o, int i, char *out, size_t size)
{
    snprintf(out, size, "LABEL_%d", i);
    if (!o->labels || strcmp(o->labels, "default") == 0) return;
    const char *s = o->labels;
    for (int k = 0; k < i && s; k++) {
        s = strchr(s, ',');
        if (s) s++;
    }
    if (!s) return;
    size_t len = strcspn(s, ",");
    snprintf(out, size, "%.*s", (int)len, s);
}

static void put_head(const options *o, config_list *c)
{
    if (o->labels) {
        buf id2 = {0}, l2 = {0};
        buf_add(&id2, "{");
        buf_add(&l2, "{");
        for (int i = 0; i < o->num_labels; i++) {
            char name[64];
            label_name(o, i, name, sizeof name);
            buf_add(&id2, "%s\n    \"%d\": \"%s\"", i ? "," : "", i, name);
            buf_add(&l2, "%s\n    \"%s\": %d", i ? "," : "", name, i);
        }
        buf_add(&id2, "\n  }");
        buf_add(&l2, "\n  }");
        if (id2.oom || l2.oom) c->oom = 1;
        else {
            put(c, "id2label", "%s", id2.s);
            put(c, "label2id", "%s", l2.s);
        }
        free(id2.s);
        free(l2.s);
    } else {
        /* Without id2label, transformers takes the count from num_labels. */
        put(c, "num_labels", "%d", o->num_labels);
    }
    if (o->problem_type) put(c, "problem_type", "\"%s\"", o->problem_type);
    if (o->st_activation)
        put(c, "sentence_transformers", "{\n    \"activation_fn\": \"%s\",\n    \"version\": \"4.1.0\"\n  }",
            o->st_activation);
}

static int write_config(const options *o)
{
    static const char *arch_names[] = {"BertModel", "BertForMaskedLM", "BertForPreTraining",
                                       "BertForSequenceClassification", "BertForTokenClassification",
                                       "BertForQuestionAnswering"};
    static const char *distil_arch_names[] = {"DistilBertModel", "DistilBertForMaskedLM", NULL,
                                              "DistilBertForSequenceClassification",
                                              "DistilBertForTokenClassification",
                                              "DistilBertForQuestionAnswering"};
    static const char *torch_dtypes[] = {"float32", "float16", "bfloat16"};
    static const char *roberta_arch[] = {"RobertaModel", "RobertaForMaskedLM", NULL, "RobertaForSequenceClassification",
                                         "RobertaForTokenClassification", "RobertaForQuestionAnswering"};
    static const char *xlmr_arch[] = {"XLMRobertaModel", "XLMRobertaForMaskedLM", NULL,
                                      "XLMRobertaForSequenceClassification", "XLMRobertaForTokenClassification",
                                      "XLMRobertaForQuestionAnswering"};
    static const char *mpnet_arch[] = {"MPNetModel", "MPNetForMaskedLM", NULL, "MPNetForSequenceClassification",
                                       "MPNetForTokenClassification", "MPNetForQuestionAnswering"};
    config_list c = {0};
    if (o->family) {
        /* The keys of roberta-base's, xlm-roberta-base's and mpnet-base's config.json. */
        const char **archs = is_mpnet(o) ? mpnet_arch : strcmp(o->family, "roberta") == 0 ? roberta_arch : xlmr_arch;
        put(&c, "architectures", "[\n    \"%s\"\n  ]", archs[o->ar]);
        put_bert_encoder(&c, o, "1e-05");
        put(&c, "bos_token_id", "0");
        put(&c, "eos_token_id", "2");
        put(&c, "model_type", "\"%s\"", o->family);
        put(&c, "pad_token_id", "1");
        if (is_mpnet(o)) {
            put(&c, "relative_attention_num_buckets", "32");
        } else {
            put(&c, "position_embedding_type", "\"absolute\"");
            put(&c, "type_vocab_size", "1");
        }
        if (o->untied) put(&c, "tie_word_embeddings", "false");
    } else if (o->distilbert) {
        /* The keys of distilbert-base-uncased's config.json. */
        put(&c, "activation", "\"%s\"", o->act);
        put(&c, "architectures", "[\n    \"%s\"\n  ]", distil_arch_names[o->ar]);
        put(&c, "attention_dropout", "0.1");
        put(&c, "dim", "%d", o->hidden);
        put(&c, "dropout", "0.1");
        put(&c, "hidden_dim", "%d", o->intermediate);
        put(&c, "initializer_range", "0.02");
        put(&c, "max_position_embeddings", "%d", o->max_positions);
        put(&c, "model_type", "\"distilbert\"");
        put(&c, "n_heads", "%d", o->heads);
        put(&c, "n_layers", "%d", o->layers);
        put(&c, "pad_token_id", "0");
        put(&c, "qa_dropout", "0.1");
        put(&c, "seq_classif_dropout", "0.2");
        put(&c, "sinusoidal_pos_embds", "false");
        put(&c, "tie_weights_", "true");
    } else {
        put(&c, "architectures", "[\n    \"%s\"\n  ]", arch_names[o->ar]);
        put_bert_encoder(&c, o, "1e-12");
        put(&c, "classifier_dropout", "null");
        put(&c, "model_type", "\"bert\"");
        put(&c, "pad_token_id", "0");
        put(&c, "position_embedding_type", "\"absolute\"");
        if (o->untied) put(&c, "tie_word_embeddings", "false");
        put(&c, "type_vocab_size", "2");
        put(&c, "use_cache", "true");
    }
    put(&c, "torch_dtype", "\"%s\"", torch_dtypes[o->dt]);
    put(&c, "transformers_version", "\"4.44.2\"");
    put(&c, "vocab_size", "%d", o->vocab_size);
    if (o->ar == ARCH_CLASSIFY || o->ar == ARCH_TOKEN) put_head(o, &c);

    int rc = -1;
    if (c.oom) fprintf(stderr, "gen_model: out of memory writing config.json\n");
    else {
        qsort(c.e, (size_t)c.n, sizeof c.e[0], entry_order);
        buf b = {0};
        buf_add(&b, "{\n");
        for (int i = 0; i < c.n; i++)
            buf_add(&b, "  \"%s\": %s%s\n", c.e[i].key, c.e[i].value, i + 1 < c.n ? "," : "");
        buf_add(&b, "}\n");
        rc = write_buf(o->outdir, "config.json", &b);
        free(b.s);
    }
    for (int i = 0; i < c.n; i++) free(c.e[i].value);
    return rc;
}

/* all-mpnet-base-v2's tokenizer_config.json and special_tokens_map.json. */
static int write_family_tokenizer_config(const options *o)
{
    buf b = {0}, m = {0};
    buf_add(&b, "{\n  \"bos_token\": \"<s>\",\n  \"cls_token\": \"<s>\",\n  \"do_lower_case\": true,\n");
    buf_add(&b, "  \"eos_token\": \"</s>\",\n  \"mask_token\": \"<mask>\",\n");
    if (o->model_max_length > 0) buf_add(&b, "  \"model_max_length\": %d,\n", o->model_max_length);
    buf_add(&b, "  \"pad_token\": \"<pad>\",\n  \"sep_token\": \"</s>\",\n  \"strip_accents\": null,\n");
    buf_add(&b, "  \"tokenize_chinese_chars\": true,\n  \"tokenizer_class\": \"MPNetTokenizer\",\n");
    buf_add(&b, "  \"unk_token\": \"[UNK]\"\n}\n");
    buf_add(&m, "{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"unk_token\": \"[UNK]\", \"sep_token\": \"</s>\", "
                "\"pad_token\": \"<pad>\", \"cls_token\": \"<s>\", \"mask_token\": {\"content\": \"<mask>\", "
                "\"single_word\": false, \"lstrip\": true, \"rstrip\": false, \"normalized\": false}}\n");
    int rc = write_buf(o->outdir, "tokenizer_config.json", &b);
    if (!rc) rc = write_buf(o->outdir, "special_tokens_map.json", &m);
    free(b.s);
    free(m.s);
    return rc;
}

static int write_tokenizer_config(const options *o)
{
    if (o->family) return write_family_tokenizer_config(o);
    buf b = {0};
    buf_add(&b, "{\n  \"clean_up_tokenization_spaces\": true,\n  \"cls_token\": \"[CLS]\",\n");
    buf_add(&b, "  \"do_basic_tokenize\": true,\n  \"do_lower_case\": true,\n  \"mask_token\": \"[MASK]\",\n");
    if (o->model_max_length > 0) buf_add(&b, "  \"model_max_length\": %d,\n", o->model_max_length);
    buf_add(&b, "  \"never_split\": null,\n  \"pad_token\": \"[PAD]\",\n  \"sep_token\": \"[SEP]\",\n");
    buf_add(&b, "  \"strip_accents\": null,\n  \"tokenize_chinese_chars\": true,\n");
    buf_add(&b, "  \"tokenizer_class\": \"BertTokenizer\",\n  \"unk_token\": \"[UNK]\"\n}\n");
    int rc = write_buf(o->outdir, "tokenizer_config.json", &b);
    free(b.s);
    return rc;
}

static int write_sentence_transformers(const options *o)
{
    buf m = {0}, p = {0}, s = {0};
    buf_add(&m, "[\n  {\n    \"idx\": 0,\n    \"name\": \"0\",\n    \"path\": \"\",\n"
                "    \"type\": \"sentence_transformers.models.Transformer\"\n  },\n"
                "  {\n    \"idx\": 1,\n    \"name\": \"1\",\n    \"path\": \"1_Pooling\",\n"
                "    \"type\": \"sentence_transformers.models.Pooling\"\n  }");
    if (o->normalize)
        buf_add(&m, ",\n  {\n    \"idx\": 2,\n    \"name\": \"2\",\n    \"path\": \"2_Normalize\",\n"
                    "    \"type\": \"sentence_transformers.models.Normalize\"\n  }");
    buf_add(&m, "\n]\n");

    const char *mode = o->st_pooling;
    buf_add(&p, "{\n  \"word_embedding_dimension\": %d,\n", o->hidden);
    buf_add(&p, "  \"pooling_mode_cls_token\": %s,\n", strcmp(mode, "cls") == 0 ? "true" : "false");
    buf_add(&p, "  \"pooling_mode_mean_tokens\": %s,\n", strcmp(mode, "mean") == 0 ? "true" : "false");
    buf_add(&p, "  \"pooling_mode_max_tokens\": %s,\n", strcmp(mode, "max") == 0 ? "true" : "false");
    buf_add(&p, "  \"pooling_mode_mean_sqrt_len_tokens\": false,\n");
    buf_add(&p, "  \"pooling_mode_weightedmean_tokens\": false,\n");
    buf_add(&p, "  \"pooling_mode_lasttoken\": false,\n  \"include_prompt\": true\n}\n");

    buf_add(&s, "{\n  \"max_seq_length\": %d,\n  \"do_lower_case\": false\n}\n", o->max_seq_length);

    char dir[4096];
    snprintf(dir, sizeof dir, "%s/1_Pooling", o->outdir);
    int rc = write_buf(o->outdir, "modules.json", &m);
    if (!rc) rc = make_dir(dir);
    if (!rc) rc = write_buf(dir, "config.json", &p);
    if (!rc) rc = write_buf(o->outdir, "sentence_bert_config.json", &s);
    if (!rc && o->prompts) {
        buf c = {0};
        buf_add(&c, "{\n  \"prompts\": %s,\n  \"default_prompt_name\": ", o->prompts);
        if (o->default_prompt) buf_add(&c, "\"%s\"\n}\n", o->default_prompt);
        else buf_add(&c, "null\n}\n");
        rc = write_buf(o->outdir, "config_sentence_transformers.json", &c);
        free(c.s);
    }
    free(m.s);
    free(p.s);
    free(s.s);
    return rc;
}

/* ---- a ColBERT model as PyLate saves it ------------------------------------ */

/* PyLate's prefixes, added to the tokenizer after the vocabulary. */
static const char *const COLBERT_PREFIXES[2] = {"[Q] ", "[D] "};
#define COLBERT_QUERY_LENGTH 16
#define COLBERT_DOCUMENT_LENGTH 40

static void json_string(buf *b, const char *s, size_t n)
{
    buf_add(b, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') buf_add(b, "\\%c", c);
        else if (c < 0x20) buf_add(b, "\\u%04x", c);
        else buf_add(b, "%c", c);
    }
    buf_add(b, "\"");
}

/* tokenizer.json as BertTokenizerFast saves bert-base-uncased's after
 * PyLate's add_tokens: the copied vocab.txt as the WordPiece vocabulary,
 * the specials and the two prefixes (not special) as added tokens. */
static int write_colbert_tokenizer(const options *o)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/vocab.txt", o->outdir);
    FILE *in = fopen(path, "rb");
    if (!in) { fprintf(stderr, "gen_model: cannot read %s\n", path); return -1; }
    static const struct { const char *token; int id; } specials[] = {
        {"[PAD]", 0}, {"[UNK]", 100}, {"[CLS]", 101}, {"[SEP]", 102}, {"[MASK]", 103}};
    const int base = o->vocab_size - 2;
    buf b = {0};
    buf_add(&b, "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":[");
    for (int i = 0; i < 7; i++) {
        const char *token = i < 5 ? specials[i].token : COLBERT_PREFIXES[i - 5];
        buf_add(&b, "%s{\"id\":%d,\"content\":", i ? "," : "", i < 5 ? specials[i].id : base + i - 5);
        json_string(&b, token, strlen(token));
        buf_add(&b, ",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":%s,\"special\":%s}",
                i < 5 ? "false" : "true", i < 5 ? "true" : "false");
    }
    buf_add(&b, "],\"normalizer\":{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,"
                "\"strip_accents\":null,\"lowercase\":true},\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},"
                "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"[CLS]\","
                "\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":{\"id\":\"[SEP]\","
                "\"type_id\":0}}],\"pair\":[{\"SpecialToken\":{\"id\":\"[CLS]\",\"type_id\":0}},{\"Sequence\":{\"id\":"
                "\"A\",\"type_id\":0}},{\"SpecialToken\":{\"id\":\"[SEP]\",\"type_id\":0}},{\"Sequence\":{\"id\":\"B\","
                "\"type_id\":1}},{\"SpecialToken\":{\"id\":\"[SEP]\",\"type_id\":1}}],\"special_tokens\":{\"[CLS]\":"
                "{\"id\":\"[CLS]\",\"ids\":[101],\"tokens\":[\"[CLS]\"]},\"[SEP]\":{\"id\":\"[SEP]\",\"ids\":[102],"
                "\"tokens\":[\"[SEP]\"]}}},\"decoder\":{\"type\":\"WordPiece\",\"prefix\":\"##\",\"cleanup\":true},"
                "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"continuing_subword_prefix\":\"##\","
                "\"max_input_chars_per_word\":100,\"vocab\":{");
    char line[1024];
    for (int id = 0; id < base && fgets(line, sizeof line, in); id++) {
        size_t n = strcspn(line, "\r\n");
        buf_add(&b, "%s", id ? "," : "");
        json_string(&b, line, n);
        buf_add(&b, ":%d", id);
    }
    fclose(in);
    buf_add(&b, "}}}\n");
    int rc = write_buf(o->outdir, "tokenizer.json", &b);
    free(b.s);
    return rc;
}

/* modules.json (Transformer, then Dense unless --colbert 0), the Dense
 * module, and PyLate's config_sentence_transformers.json. */
static int write_colbert(const options *o)
{
    buf m = {0}, d = {0}, c = {0}, s = {0};
    buf_add(&m, "[\n  {\n    \"idx\": 0,\n    \"name\": \"0\",\n    \"path\": \"\",\n"
                "    \"type\": \"sentence_transformers.models.Transformer\"\n  }");
    if (o->colbert_dim)
        buf_add(&m, ",\n  {\n    \"idx\": 1,\n    \"name\": \"1\",\n    \"path\": \"1_Dense\",\n"
                    "    \"type\": \"pylate.models.Dense.Dense\"\n  }");
    buf_add(&m, "\n]\n");
    buf_add(&d, "{\n    \"in_features\": %d,\n    \"out_features\": %d,\n    \"bias\": false,\n"
                "    \"activation_function\": \"torch.nn.modules.linear.Identity\",\n    \"use_residual\": false\n}",
            o->hidden, o->colbert_dim);
    buf_add(&c, "{\n  \"prompts\": {},\n  \"default_prompt_name\": null,\n  \"similarity_fn_name\": \"MaxSim\",\n"
                "  \"query_prefix\": \"[Q] \",\n  \"document_prefix\": \"[D] \",\n  \"query_length\": %d,\n"
                "  \"document_length\": %d,\n  \"attend_to_expansion_tokens\": false,\n  \"skiplist_words\": [",
            COLBERT_QUERY_LENGTH, COLBERT_DOCUMENT_LENGTH);
    static const char punctuation[] = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
    for (size_t i = 0; punctuation[i]; i++) {
        buf_add(&c, "%s\n    ", i ? "," : "");
        json_string(&c, punctuation + i, 1);
    }
    buf_add(&c, "\n  ]\n}\n");
    buf_add(&s, "{\n  \"max_seq_length\": %d,\n  \"do_lower_case\": false\n}\n", COLBERT_DOCUMENT_LENGTH - 1);
    int rc = write_buf(o->outdir, "modules.json", &m);
    if (!rc) rc = write_buf(o->outdir, "config_sentence_transformers.json", &c);
    if (!rc) rc = write_buf(o->outdir, "sentence_bert_config.json", &s);
    if (!rc) rc = write_colbert_tokenizer(o);
    if (!rc && o->colbert_dim) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/1_Dense", o->outdir);
        tensor_list l = {0};
        rc = make_dir(dir) || write_buf(dir, "config.json", &d) ||
             add(&l, "", "linear.weight", o->colbert_dim, o->hidden, FILL_NORMAL, inv_sqrt(o->hidden)) ||
             write_tensors(o, &l, 0, l.n, "1_Dense/model.safetensors");
        free(l.t);
    }
    free(m.s);
    free(d.s);
    free(c.s);
    free(s.s);
    return rc ? -1 : 0;
}

/* Copies the vocabulary and counts its lines (a last line without a newline counts). */
static int copy_vocab(options *o)
{
    FILE *in = fopen(o->vocab_path, "rb");
    if (!in) {
        fprintf(stderr, "gen_model: cannot open the vocabulary %s: %s\n", o->vocab_path, strerror(errno));
        return -1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/vocab.txt", o->outdir);
    FILE *out = fopen(path, "wb");
    if (!out) {
        fprintf(stderr, "gen_model: cannot create %s: %s\n", path, strerror(errno));
        fclose(in);
        return -1;
    }
    char chunk[1 << 16];
    size_t n;
    int lines = 0, ok = 1, last = '\n';
    static const char family_head[] = "<s>\n<pad>\n</s>\n<unk>\n";
    if (o->family) {
        ok = fputs(family_head, out) >= 0;
        lines += 4;
    }
    while (ok && (n = fread(chunk, 1, sizeof chunk, in)) > 0) {
        for (size_t i = 0; i < n; i++) lines += chunk[i] == '\n';
        last = chunk[n - 1];
        ok = fwrite(chunk, 1, n, out) == n;
    }
    if (ok && o->family) {
        ok = fputs(last == '\n' ? "<mask>\n" : "\n<mask>\n", out) >= 0;
        lines += 1 + (last != '\n');
        last = '\n';
    }
    ok &= !ferror(in);
    ok &= fclose(out) == 0;
    fclose(in);
    if (!ok) { fprintf(stderr, "gen_model: cannot copy %s to %s\n", o->vocab_path, path); return -1; }
    o->vocab_size = lines + (last != '\n');
    if (o->vocab_size < 110) {
        fprintf(stderr, "gen_model: %s has %d lines; a BERT vocabulary needs at least the special tokens\n",
                o->vocab_path, o->vocab_size);
        return -1;
    }
    return 0;
}

/* ---- command line --------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: gen_model OUTDIR --vocab FILE [options]\n"
        "  --layers N            encoder layers (2)\n"
        "  --hidden N            hidden size (128)\n"
        "  --heads N             attention heads, must divide hidden (2)\n"
        "  --intermediate N      feed-forward size (4 x hidden)\n"
        "  --max-positions N     max_position_embeddings (512)\n"
        "  --model-max-length N  tokenizer_config.json model_max_length (max positions; 0 omits it)\n"
        "  --dtype f32|f16|bf16  weight type (f32)\n"
        "  --arch model|mlm|pretraining|classify|token|qa\n"
        "                        BertModel, BertForMaskedLM, BertForPreTraining,\n"
        "                        BertForSequenceClassification, BertForTokenClassification or\n"
        "                        BertForQuestionAnswering tensor names (model)\n"
        "  --model-type bert|distilbert|roberta|xlm-roberta|mpnet  the family's tensor names and\n"
        "                        config keys (bert); the last three also its specials in the vocabulary\n"
        "  --prompts JSON        config_sentence_transformers.json prompts, e.g. {\"query\": \"query: \"}\n"
        "  --default-prompt NAME its default_prompt_name (null)\n"
        "  --prefix              put BertModel tensors under \"bert.\" (implied by mlm, pretraining, classify)\n"
        "  --no-prefix           BertModel tensors without \"bert.\" even with --arch classify\n"
        "  --num-labels N        classifier rows (2)\n"
        "  --labels L0,L1,..|default  write id2label (default: LABEL_<i>); without it, num_labels\n"
        "  --problem-type T      config.json problem_type (not written)\n"
        "  --st-activation F     config.json sentence_transformers.activation_fn (absent)\n"
        "  --classifier-std X    classifier (or qa_outputs) weights' std in units of 1/sqrt(hidden) (4)\n"
        "  --first-label-bias X  added to classifier.bias[0] of --arch token (0), e.g. to make \"O\" common\n"
        "  --pooler / --no-pooler  pooler.dense.* (default: with model and pretraining, without mlm)\n"
        "  --untied              store cls.predictions.decoder.weight (tie_word_embeddings false)\n"
        "  --old-layernorm       LayerNorm.gamma / LayerNorm.beta instead of weight / bias\n"
        "  --position-ids        also store the int64 embeddings.position_ids buffer\n"
        "  --act gelu|gelu_new|relu  hidden_act (gelu)\n"
        "  --st-pooling mean|cls|max  write the sentence-transformers files with this pooling\n"
        "  --normalize           add a Normalize module to modules.json\n"
        "  --max-seq-length N    sentence_bert_config.json max_seq_length (model max length)\n"
        "  --embedding-std X     std of the word embeddings (0.05, as in trained BERTs);\n"
        "                        position and segment embeddings get 0.6 and 0.4 times it\n"
        "  --seed N              random seed (1)\n"
        "  --shards N            write N files and model.safetensors.index.json (1: model.safetensors)\n"
        "  --colbert DIM         a ColBERT model as PyLate saves it: [Q] and [D] added tokens (tokenizer.json),\n"
        "                        a Dense module to DIM (0: none), config_sentence_transformers.json\n");
}

static int parse_int(const char *s, const char *opt, int min, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > 1000000) {
        fprintf(stderr, "gen_model: %s needs an integer >= %d, not '%s'\n", opt, min, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->layers = 2;
    o->hidden = 128;
    o->heads = 2;
    o->max_positions = 512;
    o->model_max_length = -1;
    o->act = "gelu";
    o->pooler = -1;
    o->seed = 1;
    o->embedding_std = 0.05;
    o->num_labels = 2;
    o->classifier_std = 4.0;
    int max_seq = -1, no_prefix = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1, rc = 0;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) { usage(stdout); exit(0); }
        else if (a[0] != '-') { if (o->outdir) goto bad; o->outdir = a; takes = 0; }
        else if (strcmp(a, "--prefix") == 0) { o->prefix = 1; takes = 0; }
        else if (strcmp(a, "--no-prefix") == 0) { no_prefix = 1; takes = 0; }
        else if (strcmp(a, "--pooler") == 0) { o->pooler = 1; takes = 0; }
        else if (strcmp(a, "--no-pooler") == 0) { o->pooler = 0; takes = 0; }
        else if (strcmp(a, "--untied") == 0) { o->untied = 1; takes = 0; }
        else if (strcmp(a, "--old-layernorm") == 0) { o->old_layernorm = 1; takes = 0; }
        else if (strcmp(a, "--position-ids") == 0) { o->position_ids = 1; takes = 0; }
        else if (strcmp(a, "--normalize") == 0) { o->normalize = 1; takes = 0; }
        else if (!v) { fprintf(stderr, "gen_model: %s needs a value\n", a); return -1; }
        else if (strcmp(a, "--vocab") == 0) o->vocab_path = v;
        else if (strcmp(a, "--layers") == 0) rc = parse_int(v, a, 1, &o->layers);
        else if (strcmp(a, "--hidden") == 0) rc = parse_int(v, a, 1, &o->hidden);
        else if (strcmp(a, "--heads") == 0) rc = parse_int(v, a, 1, &o->heads);
        else if (strcmp(a, "--intermediate") == 0) rc = parse_int(v, a, 1, &o->intermediate);
        else if (strcmp(a, "--max-positions") == 0) rc = parse_int(v, a, 2, &o->max_positions);
        else if (strcmp(a, "--model-max-length") == 0) rc = parse_int(v, a, 0, &o->model_max_length);
        else if (strcmp(a, "--max-seq-length") == 0) rc = parse_int(v, a, 2, &max_seq);
        else if (strcmp(a, "--num-labels") == 0) rc = parse_int(v, a, 1, &o->num_labels);
        else if (strcmp(a, "--shards") == 0) rc = parse_int(v, a, 1, &o->shards);
        else if (strcmp(a, "--colbert") == 0) { rc = parse_int(v, a, 0, &o->colbert_dim); o->colbert = 1; }
        else if (strcmp(a, "--labels") == 0) o->labels = v;
        else if (strcmp(a, "--problem-type") == 0) o->problem_type = v;
        else if (strcmp(a, "--st-activation") == 0) o->st_activation = v;
        else if (strcmp(a, "--prompts") == 0) o->prompts = v;
        else if (strcmp(a, "--default-prompt") == 0) o->default_prompt = v;
        else if (strcmp(a, "--first-label-bias") == 0) {
            char *end;
            errno = 0;
            o->first_label_bias = strtod(v, &end);
            if (errno || *end || !(o->first_label_bias > -100 && o->first_label_bias < 100)) {
                fprintf(stderr, "gen_model: --first-label-bias needs a number, not '%s'\n", v);
                return -1;
            }
        } else if (strcmp(a, "--classifier-std") == 0) {
            char *end;
            errno = 0;
            o->classifier_std = strtod(v, &end);
            if (errno || *end || !(o->classifier_std > 0 && o->classifier_std < 100)) {
                fprintf(stderr, "gen_model: --classifier-std needs a positive number, not '%s'\n", v);
                return -1;
            }
        } else if (strcmp(a, "--model-type") == 0) {
            if (strcmp(v, "bert") == 0) o->distilbert = 0;
            else if (strcmp(v, "distilbert") == 0) o->distilbert = 1;
            else if (strcmp(v, "roberta") == 0 || strcmp(v, "xlm-roberta") == 0 || strcmp(v, "mpnet") == 0) o->family = v;
            else {
                fprintf(stderr, "gen_model: --model-type is bert, distilbert, roberta, xlm-roberta or mpnet, not '%s'\n", v);
                return -1;
            }
        }
        else if (strcmp(a, "--embedding-std") == 0) {
            char *end;
            errno = 0;
            o->embedding_std = strtod(v, &end);
            if (errno || *end || !(o->embedding_std > 0 && o->embedding_std < 100)) {
                fprintf(stderr, "gen_model: --embedding-std needs a positive number, not '%s'\n", v);
                return -1;
            }
        } else if (strcmp(a, "--seed") == 0) {
            char *end;
            errno = 0;
            o->seed = strtoull(v, &end, 10);
            if (errno || *end || !*v) { fprintf(stderr, "gen_model: --seed needs an integer\n"); return -1; }
        } else if (strcmp(a, "--dtype") == 0) {
            if (strcmp(v, "f32") == 0) o->dt = DT_F32;
            else if (strcmp(v, "f16") == 0) o->dt = DT_F16;
            else if (strcmp(v, "bf16") == 0) o->dt = DT_BF16;
            else { fprintf(stderr, "gen_model: --dtype is f32, f16 or bf16, not '%s'\n", v); return -1; }
        } else if (strcmp(a, "--arch") == 0) {
            if (strcmp(v, "model") == 0) o->ar = ARCH_MODEL;
            else if (strcmp(v, "mlm") == 0) o->ar = ARCH_MLM;
            else if (strcmp(v, "pretraining") == 0) o->ar = ARCH_PRETRAINING;
            else if (strcmp(v, "classify") == 0) o->ar = ARCH_CLASSIFY;
            else if (strcmp(v, "token") == 0) o->ar = ARCH_TOKEN;
            else if (strcmp(v, "qa") == 0) o->ar = ARCH_QA;
            else {
                fprintf(stderr, "gen_model: --arch is model, mlm, pretraining, classify, token or qa, not '%s'\n", v);
                return -1;
            }
        } else if (strcmp(a, "--act") == 0) {
            if (strcmp(v, "gelu") && strcmp(v, "gelu_new") && strcmp(v, "relu")) {
                fprintf(stderr, "gen_model: --act is gelu, gelu_new or relu, not '%s'\n", v);
                return -1;
            }
            o->act = v;
        } else if (strcmp(a, "--st-pooling") == 0) {
            if (strcmp(v, "mean") && strcmp(v, "cls") && strcmp(v, "max")) {
                fprintf(stderr, "gen_model: --st-pooling is mean, cls or max, not '%s'\n", v);
                return -1;
            }
            o->st_pooling = v;
        } else goto bad;
        if (rc) return -1;
        i += takes;
    }
    if (!o->outdir || !o->vocab_path) goto bad;
    if (o->hidden % o->heads) {
        fprintf(stderr, "gen_model: --heads %d does not divide --hidden %d\n", o->heads, o->hidden);
        return -1;
    }
    if (!o->intermediate) o->intermediate = 4 * o->hidden;
    if (o->model_max_length < 0) o->model_max_length = o->max_positions;
    if (o->ar != ARCH_MODEL) o->prefix = 1;
    if (no_prefix) o->prefix = 0;
    /* BertForTokenClassification and BertForQuestionAnswering are built
     * with add_pooling_layer=False: their checkpoints carry no pooler. */
    /* RobertaFor* and MPNetFor* are all built with add_pooling_layer=False. */
    if (o->pooler < 0)
        o->pooler = !o->distilbert && (o->family ? o->ar == ARCH_MODEL
                                                 : o->ar != ARCH_MLM && o->ar != ARCH_TOKEN && o->ar != ARCH_QA);
    if (o->family && (o->ar == ARCH_PRETRAINING || o->old_layernorm)) {
        fprintf(stderr, "gen_model: --model-type %s has no --arch pretraining or --old-layernorm\n", o->family);
        return -1;
    }
    if (o->colbert && (o->st_pooling || o->family || o->distilbert)) {
        fprintf(stderr, "gen_model: --colbert writes its own modules.json, for a BERT model without --st-pooling\n");
        return -1;
    }
    if (o->prompts && !o->st_pooling) {
        fprintf(stderr, "gen_model: --prompts needs --st-pooling\n");
        return -1;
    }
    if (o->ar == ARCH_CLASSIFY && !o->distilbert && !o->family && !o->pooler) {
        fprintf(stderr, "gen_model: BertForSequenceClassification's classifier needs the pooler\n");
        return -1;
    }
    if (o->distilbert && (o->ar == ARCH_PRETRAINING || o->untied || o->old_layernorm ||
                          o->position_ids || o->prefix != (o->ar != ARCH_MODEL) || o->pooler == 1)) {
        fprintf(stderr, "gen_model: --model-type distilbert supports --arch model, mlm, classify, token or qa only\n");
        return -1;
    }
    if (o->distilbert) o->pooler = 0;
    if ((o->problem_type || o->st_activation) && o->ar != ARCH_CLASSIFY) {
        fprintf(stderr, "gen_model: --problem-type and --st-activation need --arch classify\n");
        return -1;
    }
    if (o->labels && o->ar != ARCH_CLASSIFY && o->ar != ARCH_TOKEN) {
        fprintf(stderr, "gen_model: --labels needs --arch classify or token\n");
        return -1;
    }
    if (o->first_label_bias != 0 && o->ar != ARCH_TOKEN) {
        fprintf(stderr, "gen_model: --first-label-bias needs --arch token\n");
        return -1;
    }
    if (o->ar == ARCH_PRETRAINING && !o->pooler) {
        fprintf(stderr, "gen_model: the next-sentence head of --arch pretraining needs the pooler\n");
        return -1;
    }
    if (o->untied && o->ar == ARCH_MODEL) {
        fprintf(stderr, "gen_model: --untied needs --arch mlm or pretraining\n");
        return -1;
    }
    if ((o->normalize || max_seq > 0) && !o->st_pooling) {
        fprintf(stderr, "gen_model: --normalize and --max-seq-length need --st-pooling\n");
        return -1;
    }
    o->max_seq_length = max_seq > 0 ? max_seq : (o->model_max_length ? o->model_max_length : o->max_positions);
    return 0;
bad:
    usage(stderr);
    return -1;
}

int main(int argc, char **argv)
{
    options o;
    if (parse_args(argc, argv, &o)) return 2;
    if (make_dir(o.outdir) || copy_vocab(&o)) return 1;
    if (o.colbert) o.vocab_size += 2;   /* PyLate's prefixes, added tokens with embeddings of their own */
    tensor_list l = {0};
    int rc = build_tensors(&o, &l);
    if (rc) fprintf(stderr, "gen_model: out of memory\n");
    if (!rc) rc = write_safetensors(&o, &l);
    if (!rc) rc = write_config(&o);
    if (!rc) rc = write_tokenizer_config(&o);
    if (!rc && o.st_pooling) rc = write_sentence_transformers(&o);
    if (!rc && o.colbert) rc = write_colbert(&o);
    free(l.t);
    return rc ? 1 : 0;
}
