/*
 * model_save.c - see model_save.h.  The tensor names come from the binder's
 * tables (model_bind.h), so what is written is what the loader binds; the
 * JSON files are built by SQLite's JSON functions (base/json.h).
 */
#define _GNU_SOURCE   /* mkdtemp, nftw */
#include "model_save.h"

#include "model_bind.h"
#include "../base/buffer.h"
#include "../base/error.h"
#include "../base/file.h"
#include "../base/json.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the tensors of an architecture ---------------------------------------- */

typedef struct {
    char name[224];
    const float *data;
    int d0, d1;            /* d1 0: a vector */
} save_tensor;

typedef struct {
    save_tensor *at;
    size_t len, cap;
    int failed;            /* memory ran out, or a tensor is missing (missing names it) */
    const char *missing;
} tensor_list;

static void add(tensor_list *l, const char *prefix, const char *name, const float *data, int d0, int d1)
{
    if (l->failed) return;
    if (!data) {
        l->failed = 1;
        l->missing = name;
        return;
    }
    save_tensor *grown = bert_grow(l->at, &l->cap, l->len + 1, sizeof *l->at);
    if (!grown) {
        l->failed = 1;
        return;
    }
    l->at = grown;
    save_tensor *t = &l->at[l->len++];
    snprintf(t->name, sizeof t->name, "%s%s", prefix, name);
    t->data = data;
    t->d0 = d0;
    t->d1 = d1;
}

static const char *family_prefix(bert_family f)
{
    switch (f) {
    case BERT_FAMILY_DISTILBERT: return "distilbert.";
    case BERT_FAMILY_ROBERTA:
    case BERT_FAMILY_XLM_ROBERTA: return "roberta.";
    case BERT_FAMILY_MPNET: return "mpnet.";
    case BERT_FAMILY_ELECTRA: return "electra.";
    default: return "bert.";
    }
}

const char *bert_save_arch_name(bert_family family, bert_save_arch arch)
{
    static const char *const names[6][4] = {
        {"BertModel", "BertForSequenceClassification", "BertForTokenClassification", "BertForQuestionAnswering"},
        {"DistilBertModel", "DistilBertForSequenceClassification", "DistilBertForTokenClassification",
         "DistilBertForQuestionAnswering"},
        {"RobertaModel", "RobertaForSequenceClassification", "RobertaForTokenClassification",
         "RobertaForQuestionAnswering"},
        {"XLMRobertaModel", "XLMRobertaForSequenceClassification", "XLMRobertaForTokenClassification",
         "XLMRobertaForQuestionAnswering"},
        {"MPNetModel", "MPNetForSequenceClassification", "MPNetForTokenClassification", "MPNetForQuestionAnswering"},
        {"ElectraModel", "ElectraForSequenceClassification", "ElectraForTokenClassification",
         "ElectraForQuestionAnswering"},
    };
    int f = family == BERT_FAMILY_DISTILBERT ? 1 : family == BERT_FAMILY_ROBERTA ? 2
          : family == BERT_FAMILY_XLM_ROBERTA ? 3 : family == BERT_FAMILY_MPNET ? 4
          : family == BERT_FAMILY_ELECTRA ? 5 : 0;
    return names[f][arch];
}

/* A projection's float32 weights; NULL when it is held at another precision. */
static const float *f32_of(const bert_matrix *w)
{
    return w->precision == BERT_PRECISION_FLOAT32 ? w->f32 : NULL;
}

/* Every tensor of m as transformers' `arch` class of its family names it,
 * in the order save_pretrained's state dict has them. */
static void list_tensors(const bert_model *m, bert_save_arch arch, tensor_list *l)
{
    const bert_config *c = &m->cfg;
    const int H = c->hidden_size, I = c->intermediate_size;
    const bert_family f = c->family;
    const int distil = f == BERT_FAMILY_DISTILBERT, mpnet = f == BERT_FAMILY_MPNET;
    const int bert = f == BERT_FAMILY_BERT, electra = f == BERT_FAMILY_ELECTRA;
    const char *p = arch == BERT_SAVE_BARE ? "" : family_prefix(f);
    const int L = m->head.num_labels;
    /* ElectraEmbeddings are embedding_size wide, projected to hidden_size
     * by embeddings_project when the two differ. */
    const int E = electra ? c->fam.embedding_size : H;

    add(l, p, "embeddings.word_embeddings.weight", m->word_emb, c->vocab_size, E);
    add(l, p, "embeddings.position_embeddings.weight", m->pos_emb, c->max_position_embeddings, E);
    if (!distil && !mpnet) add(l, p, "embeddings.token_type_embeddings.weight", m->type_emb, c->type_vocab_size, E);
    add(l, p, "embeddings.LayerNorm.weight", m->emb_ln_w, E, 0);
    add(l, p, "embeddings.LayerNorm.bias", m->emb_ln_b, E, 0);
    if (E != H) {
        add(l, p, "embeddings_project.weight", m->emb_proj_w, H, E);
        add(l, p, "embeddings_project.bias", m->emb_proj_b, H, 0);
    }
    if (mpnet)
        add(l, p, "encoder.relative_attention_bias.weight", m->rel_bias, c->relative_buckets, c->num_heads);
    const char *const *names = distil ? bert_distil_layer_names : mpnet ? bert_mpnet_layer_names : bert_layer_names;
    for (int i = 0; i < c->num_layers; i++) {
        const bert_layer_weights *w = &m->layers[i];
        /* bert_bind_layer's order: weight then bias of each part. */
        const struct { const float *data; int d0, d1; } t[16] = {
            {f32_of(&w->q_w), H, H}, {w->q_b, H, 0}, {f32_of(&w->k_w), H, H}, {w->k_b, H, 0},
            {f32_of(&w->v_w), H, H}, {w->v_b, H, 0}, {f32_of(&w->out_w), H, H}, {w->out_b, H, 0},
            {w->attn_ln_w, H, 0}, {w->attn_ln_b, H, 0}, {f32_of(&w->ff_in_w), I, H}, {w->ff_in_b, I, 0},
            {f32_of(&w->ff_out_w), H, I}, {w->ff_out_b, H, 0}, {w->ff_ln_w, H, 0}, {w->ff_ln_b, H, 0},
        };
        char name[128];
        for (int k = 0; k < 16; k++) {
            snprintf(name, sizeof name, "%s%d.%s", distil ? "transformer.layer." : "encoder.layer.", i, names[k]);
            add(l, p, name, t[k].data, t[k].d0, t[k].d1);
        }
    }
    /* The base classes keep their pooler; of the task classes only BERT's
     * sequence classifier has one (the others are built with
     * add_pooling_layer=False). */
    int pooler = !distil && (arch == BERT_SAVE_BARE ? m->pooler_w != NULL : bert && arch == BERT_SAVE_SEQUENCE);
    if (pooler) {
        add(l, p, "pooler.dense.weight", m->pooler_w, H, H);
        add(l, p, "pooler.dense.bias", m->pooler_b, H, 0);
    }
    switch (arch) {
    case BERT_SAVE_SEQUENCE:
        if (distil) {
            add(l, "", "pre_classifier.weight", m->pre_cls_w, H, H);
            add(l, "", "pre_classifier.bias", m->pre_cls_b, H, 0);
        }
        if (bert || distil) {
            add(l, "", "classifier.weight", m->cls_w, L, H);
            add(l, "", "classifier.bias", m->cls_b, L, 0);
        } else {
            add(l, "", "classifier.dense.weight", m->pre_cls_w, H, H);
            add(l, "", "classifier.dense.bias", m->pre_cls_b, H, 0);
            add(l, "", "classifier.out_proj.weight", m->cls_w, L, H);
            add(l, "", "classifier.out_proj.bias", m->cls_b, L, 0);
        }
        break;
    case BERT_SAVE_TOKENS:
        add(l, "", "classifier.weight", m->tok_w, L, H);
        add(l, "", "classifier.bias", m->tok_b, L, 0);
        break;
    case BERT_SAVE_QA:
        add(l, "", "qa_outputs.weight", m->qa_w, 2, H);
        add(l, "", "qa_outputs.bias", m->qa_b, 2, 0);
        break;
    case BERT_SAVE_BARE:
        break;
    }
}

/* ---- model.safetensors ---------------------------------------------------- */

/* The header: {"name": {"dtype": "F32", "shape": [...], "data_offsets": [b, e]}, ...,
 * "__metadata__": {"format": "pt"}}, built one tensor at a time by json_patch. */
static char *safetensors_header(bert_json_sql *js, const tensor_list *l, char **err)
{
    char *header = NULL;
    if (bert_json_sql_eval(js, "SELECT json_object('__metadata__', json_object('format', 'pt'))", NULL, 0, &header,
                           err) != 0)
        return NULL;
    uint64_t offset = 0;
    for (size_t i = 0; i < l->len; i++) {
        const save_tensor *t = &l->at[i];
        uint64_t bytes = (uint64_t)t->d0 * (uint64_t)(t->d1 ? t->d1 : 1) * sizeof(float);
        char shape[64], begin[32], end[32];
        if (t->d1) snprintf(shape, sizeof shape, "[%d,%d]", t->d0, t->d1);
        else snprintf(shape, sizeof shape, "[%d]", t->d0);
        snprintf(begin, sizeof begin, "%llu", (unsigned long long)offset);
        snprintf(end, sizeof end, "%llu", (unsigned long long)(offset + bytes));
        const char *p[5] = {header, t->name, shape, begin, end};
        char *longer = NULL;
        int rc = bert_json_sql_eval(js,
                                    "SELECT json_patch(?1, json_object(?2, json_object('dtype', 'F32', 'shape', "
                                    "json(?3), 'data_offsets', json_array(CAST(?4 AS INTEGER), CAST(?5 AS INTEGER)))))",
                                    p, 5, &longer, err);
        free(header);
        if (rc != 0) return NULL;
        header = longer;
        offset += bytes;
    }
    return header;
}

static int write_all(FILE *f, const void *data, size_t n)
{
    return fwrite(data, 1, n, f) == n ? 0 : -1;
}

int bert_save_safetensors(const bert_model *m, bert_save_arch arch, const char *path, char **err)
{
    *err = NULL;
    tensor_list l = {0};
    list_tensors(m, arch, &l);
    if (l.failed) {
        *err = l.missing ? bert_errorf("cannot save %s as %s: the model has no float32 tensor %s (save a model "
                                       "loaded at precision float32, with that head)", path,
                                       bert_save_arch_name(m->cfg.family, arch), l.missing)
                         : bert_errorf("out of memory saving %s", path);
        free(l.at);
        return -1;
    }
    bert_json_sql *js = bert_json_sql_open(err);
    char *header = js ? safetensors_header(js, &l, err) : NULL;
    bert_json_sql_close(js);
    if (!header) {
        if (!*err) *err = bert_errorf("out of memory saving %s", path);
        free(l.at);
        return -1;
    }
    /* The data starts 8-byte aligned: the header is padded with spaces, as
     * the safetensors library pads it. */
    size_t hlen = strlen(header), padded = (hlen + 7) / 8 * 8;
    int rc = -1;
    FILE *f = fopen(path, "wb");
    if (!f) {
        *err = bert_errorf("cannot create %s: %s", path, strerror(errno));
        goto done;
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    int bad = write_all(f, len8, 8) || write_all(f, header, hlen);
    for (size_t i = hlen; !bad && i < padded; i++) bad = fputc(' ', f) == EOF;
    /* Little-endian float32, as the loader reads them (the host's order on
     * every platform the extension builds for). */
    for (size_t i = 0; !bad && i < l.len; i++)
        bad = write_all(f, l.at[i].data, (size_t)l.at[i].d0 * (size_t)(l.at[i].d1 ? l.at[i].d1 : 1) * sizeof(float));
    if (fclose(f) != 0) bad = 1;
    if (bad) {
        *err = bert_errorf("cannot write %s: %s (is the disk full?)", path, strerror(errno));
        goto done;
    }
    rc = 0;
done:
    free(header);
    free(l.at);
    return rc;
}

/* ---- files ---------------------------------------------------------------- */

static int write_text(const char *dir, const char *name, const char *text, char **err)
{
    char *path = bert_path_join(dir, name);
    if (!path) {
        *err = bert_errorf("out of memory saving %s", dir);
        return -1;
    }
    FILE *f = fopen(path, "wb");
    int bad = !f || write_all(f, text, strlen(text)) != 0 || write_all(f, "\n", 1) != 0;
    if (f && fclose(f) != 0) bad = 1;
    if (bad) *err = bert_errorf("cannot write %s: %s", path, strerror(errno));
    free(path);
    return bad ? -1 : 0;
}

/* Copies dir_from/name to dir_to/name when it exists: 0 (copied or absent), or -1 with *err. */
static int copy_if_present(const char *dir_from, const char *dir_to, const char *name, char **err)
{
    char *from = bert_path_join(dir_from, name), *to = bert_path_join(dir_to, name);
    int rc = -1;
    FILE *in = NULL, *out = NULL;
    if (!from || !to) {
        *err = bert_errorf("out of memory saving %s", dir_to);
        goto done;
    }
    struct stat st;
    if (stat(from, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = 0;
        goto done;
    }
    in = fopen(from, "rb");
    out = fopen(to, "wb");
    if (!in || !out) {
        *err = bert_errorf("cannot copy %s to %s: %s", from, to, strerror(errno));
        goto done;
    }
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (write_all(out, buf, n) != 0) break;
    int bad = ferror(in) || ferror(out);
    if (fclose(out) != 0) bad = 1;
    out = NULL;
    if (bad) {
        *err = bert_errorf("cannot copy %s to %s: %s", from, to, strerror(errno));
        goto done;
    }
    rc = 0;
done:
    if (in) fclose(in);
    if (out) fclose(out);
    free(from);
    free(to);
    return rc;
}

/* The tokenizer's files, as the tokenizer loader looks for them
 * (tokenizer/tok_json.c, the vocabularies, the settings). */
static const char *const tokenizer_files[] = {
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
    "vocab.txt", "vocab.json", "merges.txt", "sentencepiece.bpe.model", "spiece.model", NULL};

/* config.json: the base's, with what the saved class needs set. */
static char *config_json(bert_json_sql *js, const bert_model *m, const bert_save_spec *spec, char **err)
{
    char *path = bert_path_join(spec->base_dir, "config.json");
    if (!path) return NULL;
    size_t len;
    char *base = bert_file_read(path, (size_t)1 << 24, &len, NULL, err);
    free(path);
    if (!base) return NULL;
    const char *arch = bert_save_arch_name(m->cfg.family, spec->arch);
    char *out = NULL;
    int labelled = spec->arch == BERT_SAVE_SEQUENCE || spec->arch == BERT_SAVE_TOKENS;
    if (labelled) {
        char *labels = bert_json_sql_string_array(js, spec->labels, spec->num_labels, err);
        if (!labels) {
            free(base);
            return NULL;
        }
        const char *p[4] = {base, arch, labels, spec->problem_type};
        /* id2label's keys are the ids as text, label2id's values the ids as
         * numbers: what PretrainedConfig.to_dict writes. */
        int rc = bert_json_sql_eval(
            js,
            "SELECT CASE WHEN ?4 IS NULL THEN json_remove(j, '$.problem_type') "
            "ELSE json_set(j, '$.problem_type', ?4) END FROM (SELECT json_set(?1, "
            "'$.architectures', json_array(?2), "
            "'$.id2label', json((SELECT json_group_object(CAST(key AS TEXT), value) FROM json_each(?3))), "
            "'$.label2id', json((SELECT json_group_object(value, key) FROM json_each(?3))), "
            "'$.num_labels', json_array_length(?3), '$.torch_dtype', 'float32') AS j)",
            p, 4, &out, err);
        free(labels);
        if (rc != 0) out = NULL;
    } else {
        const char *p[2] = {base, arch};
        if (bert_json_sql_eval(js,
                               "SELECT json_set(json_remove(?1, '$.id2label', '$.label2id', '$.num_labels', "
                               "'$.problem_type'), '$.architectures', json_array(?2), '$.torch_dtype', 'float32')",
                               p, 2, &out, err) != 0)
            out = NULL;
    }
    free(base);
    return out;
}

/* modules.json, 1_Pooling/config.json and sentence_bert_config.json, as
 * sentence-transformers saves a Transformer + Pooling (+ Normalize) model. */
static int write_sentence_transformers(bert_json_sql *js, const bert_model *m, const bert_save_spec *spec,
                                       const char *dir, char **err)
{
    char *modules = NULL, *pooling = NULL, *sbert = NULL, *pool_dir = NULL, *norm_dir = NULL;
    int rc = -1;
    char hidden[32], max_len[32];
    snprintf(hidden, sizeof hidden, "%d", m->cfg.hidden_size);
    snprintf(max_len, sizeof max_len, "%d", spec->max_seq_length);
    const char *mode[3] = {spec->pooling == BERT_POOL_CLS ? "1" : "0", spec->pooling == BERT_POOL_MEAN ? "1" : "0",
                           spec->pooling == BERT_POOL_MAX ? "1" : "0"};
    const char *pp[4] = {hidden, mode[0], mode[1], mode[2]};
    const char *np[1] = {spec->normalize ? "1" : NULL};
    const char *sp[1] = {max_len};
    if (bert_json_sql_eval(js,
                           "SELECT json_array(json_object('idx', 0, 'name', '0', 'path', '', 'type', "
                           "'sentence_transformers.models.Transformer'), json_object('idx', 1, 'name', '1', 'path', "
                           "'1_Pooling', 'type', 'sentence_transformers.models.Pooling')) WHERE ?1 IS NULL "
                           "UNION ALL SELECT json_array(json_object('idx', 0, 'name', '0', 'path', '', 'type', "
                           "'sentence_transformers.models.Transformer'), json_object('idx', 1, 'name', '1', 'path', "
                           "'1_Pooling', 'type', 'sentence_transformers.models.Pooling'), json_object('idx', 2, "
                           "'name', '2', 'path', '2_Normalize', 'type', 'sentence_transformers.models.Normalize')) "
                           "WHERE ?1 IS NOT NULL",
                           np, 1, &modules, err) != 0 ||
        bert_json_sql_eval(js,
                           "SELECT json_object('word_embedding_dimension', CAST(?1 AS INTEGER), "
                           "'pooling_mode_cls_token', json(CASE ?2 WHEN '1' THEN 'true' ELSE 'false' END), "
                           "'pooling_mode_mean_tokens', json(CASE ?3 WHEN '1' THEN 'true' ELSE 'false' END), "
                           "'pooling_mode_max_tokens', json(CASE ?4 WHEN '1' THEN 'true' ELSE 'false' END), "
                           "'pooling_mode_mean_sqrt_len_tokens', json('false'), "
                           "'pooling_mode_weightedmean_tokens', json('false'), 'pooling_mode_lasttoken', json('false'), "
                           "'include_prompt', json('true'))",
                           pp, 4, &pooling, err) != 0 ||
        bert_json_sql_eval(js, "SELECT json_object('max_seq_length', CAST(?1 AS INTEGER), 'do_lower_case', "
                               "json('false'))", sp, 1, &sbert, err) != 0)
        goto done;
    pool_dir = bert_path_join(dir, "1_Pooling");
    norm_dir = bert_path_join(dir, "2_Normalize");
    if (!pool_dir || !norm_dir) goto done;
    if (mkdir(pool_dir, 0755) != 0 || (spec->normalize && mkdir(norm_dir, 0755) != 0)) {
        *err = bert_errorf("cannot create %s: %s", pool_dir, strerror(errno));
        goto done;
    }
    if (write_text(dir, "modules.json", modules, err) != 0 || write_text(pool_dir, "config.json", pooling, err) != 0 ||
        write_text(dir, "sentence_bert_config.json", sbert, err) != 0 ||
        copy_if_present(spec->base_dir, dir, "config_sentence_transformers.json", err) != 0)
        goto done;
    rc = 0;
done:
    free(modules);
    free(pooling);
    free(sbert);
    free(pool_dir);
    free(norm_dir);
    return rc;
}

/* Everything of the model directory, written into `dir` (which exists). */
static int write_dir(const bert_model *m, const bert_save_spec *spec, const char *dir, char **err)
{
    bert_json_sql *js = bert_json_sql_open(err);
    char *path = bert_path_join(dir, "model.safetensors"), *config = NULL;
    int rc = -1;
    if (!js || !path) goto done;
    if (bert_save_safetensors(m, spec->arch, path, err) != 0) goto done;
    if (!(config = config_json(js, m, spec, err)) || write_text(dir, "config.json", config, err) != 0) goto done;
    for (int i = 0; tokenizer_files[i]; i++)
        if (copy_if_present(spec->base_dir, dir, tokenizer_files[i], err) != 0) goto done;
    if (spec->sentence_transformers && write_sentence_transformers(js, m, spec, dir, err) != 0) goto done;
    for (int i = 0; i < spec->n_files; i++)
        if (write_text(dir, spec->files[i].name, spec->files[i].text, err) != 0) goto done;
    for (int i = 0; i < spec->n_extra; i++) {
        /* The moments are shaped as the model: the same class and config.json,
         * so the loader reads them back as a model of their own. */
        char *sub = bert_path_join(dir, spec->extra[i].name);
        if (!sub) goto done;
        char *inner_path = NULL;
        int bad = mkdir(sub, 0755) != 0;
        if (bad) *err = bert_errorf("cannot create %s: %s", sub, strerror(errno));
        if (!bad) bad = !(inner_path = bert_path_join(sub, "model.safetensors"));
        if (!bad) bad = bert_save_safetensors(spec->extra[i].weights, spec->arch, inner_path, err) != 0 ||
                        write_text(sub, "config.json", config, err) != 0;
        free(inner_path);
        free(sub);
        if (bad) goto done;
    }
    rc = 0;
done:
    if (rc != 0 && !*err) *err = bert_errorf("out of memory saving %s", dir);
    free(path);
    free(config);
    bert_json_sql_close(js);
    return rc;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    return remove(path) != 0 ? -1 : 0;
}

int bert_save_remove_tree(const char *dir)
{
    return nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

/* "<out_dir><suffix>XXXXXX", for mkdtemp. */
static char *sibling_template(const char *out_dir, const char *suffix)
{
    size_t n = strlen(out_dir);
    while (n > 1 && out_dir[n - 1] == '/') n--;
    char *t = malloc(n + strlen(suffix) + 7);
    if (!t) return NULL;
    memcpy(t, out_dir, n);
    strcpy(t + n, suffix);
    strcat(t, "XXXXXX");
    return t;
}

/* Moves the entries of `from` named prefix... into `to`. */
static int carry_over(const char *from, const char *to, const char *prefix, char **err)
{
    DIR *d = opendir(from);
    if (!d) return 0;
    struct dirent *ent;
    int rc = 0;
    while (rc == 0 && (ent = readdir(d))) {
        if (strncmp(ent->d_name, prefix, strlen(prefix)) != 0) continue;
        char *a = bert_path_join(from, ent->d_name), *b = bert_path_join(to, ent->d_name);
        if (!a || !b || rename(a, b) != 0) {
            *err = bert_errorf("cannot move %s into the new model directory: %s", a ? a : ent->d_name,
                               a && b ? strerror(errno) : "out of memory");
            rc = -1;
        }
        free(a);
        free(b);
    }
    closedir(d);
    return rc;
}

int bert_save_model_dir(const bert_model *m, const bert_save_spec *spec, const char *out_dir, int overwrite,
                        char **err)
{
    *err = NULL;
    struct stat st;
    int exists = stat(out_dir, &st) == 0;
    if (exists && !overwrite) {
        *err = bert_errorf("%s already exists: give another output directory, or \"overwrite\": true to "
                           "replace it", out_dir);
        return -1;
    }
    if (exists && !S_ISDIR(st.st_mode)) {
        *err = bert_errorf("%s is a file, not a directory: give a directory path for the model", out_dir);
        return -1;
    }
    /* Beside the target, so that the final rename stays on one file system. */
    char *tmp = sibling_template(out_dir, ".saving-"), *old = NULL;
    if (!tmp) {
        *err = bert_errorf("out of memory saving %s", out_dir);
        return -1;
    }
    if (!mkdtemp(tmp)) {
        *err = bert_errorf("cannot create a folder beside %s to save into (%s): check that its parent folder "
                           "exists and is writable", out_dir, strerror(errno));
        free(tmp);
        return -1;
    }
    int rc = -1;
    if (write_dir(m, spec, tmp, err) != 0) goto done;
    if (exists && spec->carry_prefix && carry_over(out_dir, tmp, spec->carry_prefix, err) != 0) goto done;
    if (exists) {
        /* The old model is moved aside, the new one into place, and only
         * then is the old one removed: a reader finds one or the other whole. */
        if (!(old = sibling_template(out_dir, ".replaced-"))) {
            *err = bert_errorf("out of memory saving %s", out_dir);
            goto done;
        }
        if (!mkdtemp(old) || rmdir(old) != 0 || rename(out_dir, old) != 0) {
            *err = bert_errorf("cannot replace %s: %s", out_dir, strerror(errno));
            goto done;
        }
    }
    if (rename(tmp, out_dir) != 0) {
        *err = bert_errorf("cannot move the saved model into %s: %s", out_dir, strerror(errno));
        if (old && rename(old, out_dir) != 0) { /* the old one stays at its temporary name */ }
        goto done;
    }
    if (old) bert_save_remove_tree(old);
    rc = 0;
done:
    if (rc != 0) bert_save_remove_tree(tmp);
    free(tmp);
    free(old);
    return rc;
}
