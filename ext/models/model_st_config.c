/*
 * model_st_config.c - what a sentence-transformers directory asks for:
 * modules.json, the pooling module's config.json and
 * sentence_bert_config.json.
 */
#include "model_dir.h"
#include "../base/error.h"
#include "../base/file.h"
#include "../base/json.h"
#include "../base/buffer.h"

#include <stdlib.h>
#include <string.h>

static int read_pooling(bert_model_files *files, const char *pooling_dir, bert_st_config *st, char **err)
{
    const char *model_dir = bert_model_files_dir(files);
    char *name = bert_path_join(pooling_dir, "config.json");
    if (!name) { *err = bert_errorf("out of memory"); return -1; }
    const json_doc *doc = NULL;
    int found = bert_model_files_json(files, name, 1, &doc, err);
    if (found <= 0) { free(name); return found; }

    static const struct { const char *key; int mode; } modes[] = {
        {"pooling_mode_mean_tokens", BERT_POOL_MEAN},
        {"pooling_mode_cls_token", BERT_POOL_CLS},
        {"pooling_mode_max_tokens", BERT_POOL_MAX},
        {"pooling_mode_mean_sqrt_len_tokens", -1},
        {"pooling_mode_weightedmean_tokens", -1},
        {"pooling_mode_lasttoken", -1},
    };
    int chosen = 0, rc = 0;
    for (size_t i = 0; i < sizeof modes / sizeof *modes && rc == 0; i++) {
        if (bert_json_bool(doc, bert_json_member(doc, 0, modes[i].key), 0) != 1) continue;
        if (modes[i].mode < 0) {
            *err = bert_errorf("%s/%s asks for %s, which is not supported: only mean, cls and "
                               "max pooling are", model_dir, name, modes[i].key);
            rc = -1;
        } else if (chosen++) {
            *err = bert_errorf("%s/%s combines several pooling modes, which is not supported: "
                               "only one of mean, cls or max can be used", model_dir, name);
            rc = -1;
        } else {
            st->pooling = (bert_pooling)modes[i].mode;
        }
    }
    free(name);
    return rc < 0 ? -1 : 1;
}

int bert_st_config_load(bert_model_files *files, bert_st_config *st, char **err)
{
    const char *model_dir = bert_model_files_dir(files);
    *err = NULL;
    memset(st, 0, sizeof *st);
    st->pooling = BERT_POOL_MEAN;

    const json_doc *doc = NULL;
    char *pooling_dir = NULL;
    int found = bert_model_files_json(files, "modules.json", 1, &doc, err), rc = 0;
    if (found < 0) return -1;
    if (found) {
        st->present = 1;
        if (doc->nodes[0].type != JSON_ARRAY) {
            *err = bert_errorf("%s/modules.json is not a JSON array of modules", model_dir);
            return -1;
        }
        const char *previous = "";
        for (int c = doc->nodes[0].first_child; c >= 0 && rc == 0;
             previous = bert_json_str(doc, bert_json_member(doc, c, "type"), ""), c = doc->nodes[c].next_sibling) {
            const char *type = bert_json_str(doc, bert_json_member(doc, c, "type"), "");
            if (bert_ends_with(type, "Pooling")) {
                const char *p = bert_json_str(doc, bert_json_member(doc, c, "path"), "1_Pooling");
                free(pooling_dir);
                pooling_dir = bert_strdup(p);
                if (!pooling_dir) {
                    *err = bert_errorf("out of memory reading %s/modules.json", model_dir);
                    rc = -1;
                }
            } else if (bert_ends_with(type, "Normalize")) {
                st->normalize = 1;
            } else if (bert_ends_with(type, "Dense") && bert_ends_with(previous, "Transformer") && !st->dense) {
                /* PyLate's layout: one Dense on every token's hidden state;
                 * its weights load with the model (model_dense.c). */
                st->dense = 1;
            } else if (!bert_ends_with(type, "Transformer")) {
                /* A projection we cannot run (a Dense after pooling, a
                 * second Dense) would give vectors that silently differ
                 * from the model's. */
                *err = bert_errorf("%s/modules.json has a module of type \"%s\" here, which is not "
                                   "supported (only Transformer, Pooling and Normalize are, or a ColBERT model's "
                                   "one Dense module right after the Transformer, without pooling)", model_dir,
                                   type);
                rc = -1;
            }
        }
        doc = NULL;
        if (rc == 0 && st->dense && pooling_dir) {
            *err = bert_errorf("%s/modules.json has both a Dense module on the tokens and a Pooling module, "
                               "which is not supported: a ColBERT model (PyLate) has no pooling", model_dir);
            rc = -1;
        }
        if (rc != 0) { free(pooling_dir); return -1; }
    }

    int pooled = read_pooling(files, pooling_dir ? pooling_dir : "1_Pooling", st, err);
    free(pooling_dir);
    if (pooled < 0) return -1;
    if (pooled) st->present = 1;

    found = bert_model_files_json(files, "sentence_bert_config.json", 1, &doc, err);
    if (found < 0) return -1;
    if (found) {
        int node = bert_json_member(doc, 0, "max_seq_length");
        long long v = node < 0 ? 0 : bert_json_int(doc, node, -1);
        if (v < 0 || v > BERT_MAX_POSITIONS) {
            *err = bert_errorf("%s/sentence_bert_config.json: max_seq_length must be a positive integer",
                               model_dir);
            return -1;
        }
        st->max_seq_length = (int)v;
    }
    return 0;
}


int bert_st_prompt(bert_model_files *files, const char *name, char **out, char **err)
{
    const char *model_dir = bert_model_files_dir(files);
    *out = NULL;
    *err = NULL;
    const json_doc *doc = NULL;
    int found = bert_model_files_json(files, "config_sentence_transformers.json", 0, &doc, err);
    if (found < 0) return -1;
    int prompts = found ? bert_json_member(doc, 0, "prompts") : -1, rc = -1;
    if (prompts >= 0 && doc->nodes[prompts].type != JSON_OBJECT && doc->nodes[prompts].type != JSON_NULL) {
        *err = bert_errorf("%s/config_sentence_transformers.json: \"prompts\" must be an object of prompt "
                           "names and texts, such as {\"query\": \"query: \"}", model_dir);
        goto done;
    }
    const char *want = name;
    if (!want && found) want = bert_json_str(doc, bert_json_member(doc, 0, "default_prompt_name"), NULL);
    if (!want) { rc = 0; goto done; }
    int node = prompts >= 0 ? bert_json_member(doc, prompts, want) : -1;
    const char *text = bert_json_str(doc, node, NULL);
    if (!text) {
        bert_text names = {0};
        for (int c = prompts >= 0 ? doc->nodes[prompts].first_child : -1; c >= 0; c = doc->nodes[c].next_sibling) {
            if (names.len) bert_text_add(&names, ", ", 2);
            bert_text_add(&names, "\"", 1);
            bert_text_add(&names, doc->nodes[c].key, strlen(doc->nodes[c].key));
            bert_text_add(&names, "\"", 1);
        }
        if (names.failed) *err = bert_errorf("out of memory reading %s/config_sentence_transformers.json", model_dir);
        else if (names.len)
            *err = bert_errorf("model %s has no prompt \"%s\" in config_sentence_transformers.json; its prompts are "
                               "%s, or give the text itself: '{\"prompt\": {\"text\": \"query: \"}}'",
                               model_dir, want, names.s);
        else
            *err = bert_errorf("model %s has no prompts (config_sentence_transformers.json), so no prompt \"%s\"; "
                               "give the text itself: '{\"prompt\": {\"text\": \"query: \"}}'", model_dir, want);
        free(names.s);
        goto done;
    }
    if (*text && !(*out = bert_strdup(text))) {
        *err = bert_errorf("out of memory reading %s/config_sentence_transformers.json", model_dir);
        goto done;
    }
    rc = 0;
done:
    return rc;
}
