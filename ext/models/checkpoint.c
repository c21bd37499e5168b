/*
 * checkpoint.c - see checkpoint.h.
 */
#include "checkpoint.h"

#include "../base/buffer.h"
#include "../base/error.h"
#include "../base/file.h"
#include "../base/json.h"
#include "../base/model_files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A published checkpoint has a few dozen shards at most. */
#define MAX_SHARDS 4096

#define CONVERT_BIN "python -c \"from transformers import AutoModel; " \
    "AutoModel.from_pretrained('DIR').save_pretrained('DIR', safe_serialization=True)\" " \
    "(with the model's own class, such as BertForMaskedLM, to keep its heads)"

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* 1 when dir/name exists, 0 when not, -1 when memory ran out. */
static int has_file(const char *dir, const char *name)
{
    char *path = bert_path_join(dir, name);
    if (!path) return -1;
    struct stat st;
    int found = stat(path, &st) == 0;
    free(path);
    return found;
}

/* ---- Hugging Face cache folders ----------------------------------------- */

/* The snapshot that cache/refs/main names, as a new path; NULL with *err. */
static char *snapshot_of(const char *cache, char **err)
{
    char *ref_path = bert_path_join(cache, "refs/main");
    if (!ref_path) { *err = NULL; return NULL; }
    size_t len = 0;
    char *commit = bert_file_read(ref_path, 256, &len, NULL, err);
    free(ref_path);
    if (!commit) return NULL;
    while (len > 0 && (commit[len - 1] == '\n' || commit[len - 1] == '\r' || commit[len - 1] == ' ')) len--;
    commit[len] = '\0';
    char *snapshot = NULL;
    if (len == 0 || strchr(commit, '/') || commit[0] == '.') {
        *err = bert_errorf("%s/refs/main does not name a snapshot: point at one of the directories in "
                           "%s/snapshots/ instead", cache, cache);
    } else {
        char rel[300];
        snprintf(rel, sizeof rel, "snapshots/%s", commit);
        snapshot = bert_path_join(cache, rel);
        if (!snapshot) *err = NULL;
        else if (!is_dir(snapshot)) {
            *err = bert_errorf("%s/refs/main names snapshot %s, but %s is not there: download the model "
                               "again, or point at one of the directories in %s/snapshots/", cache, commit,
                               snapshot, cache);
            free(snapshot);
            snapshot = NULL;
        }
    }
    free(commit);
    return snapshot;
}

/* 1 when dir holds both refs/main and snapshots, 0 when not, -1 out of memory. */
static int is_cache_folder(const char *dir)
{
    int refs = has_file(dir, "refs/main"), snapshots = has_file(dir, "snapshots");
    return refs < 0 || snapshots < 0 ? -1 : refs && snapshots;
}

char *bert_checkpoint_dir(const char *path, char **err)
{
    *err = NULL;
    int config = is_dir(path) ? has_file(path, "config.json") : 1;
    if (config != 0) return config > 0 ? bert_strdup(path) : NULL;
    int cache = is_cache_folder(path);
    if (cache != 0) return cache > 0 ? snapshot_of(path, err) : NULL;
    /* Pointed at cache/snapshots: its parent is the cache folder. */
    char *parent = bert_path_join(path, "..");
    if (!parent) return NULL;
    char *resolved = NULL;
    int snapshots = has_file(path, "snapshots");
    cache = is_cache_folder(parent);
    if (cache < 0 || snapshots < 0) {
        resolved = NULL;
    } else if (cache) {
        resolved = snapshot_of(parent, err);
    } else if (snapshots) {
        *err = bert_errorf("%s looks like a Hugging Face cache folder but has no refs/main: point at one "
                           "of its snapshots, %s/snapshots/<commit>", path, path);
    } else {
        resolved = bert_strdup(path);
    }
    free(parent);
    return resolved;
}

/* ---- the weights ---------------------------------------------------------- */

char *bert_checkpoint_weights_file(bert_model_files *files, char **err)
{
    *err = NULL;
    const char *dir = bert_model_files_dir(files);
    static const char *const names[] = {"model.safetensors", "model.safetensors.index.json"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        int found = bert_model_files_has(files, names[i]);
        if (found) return found > 0 ? bert_model_files_path(files, names[i]) : NULL;
    }
    int bin = bert_model_files_has(files, "pytorch_model.bin");
    int sharded_bin = bert_model_files_has(files, "pytorch_model.bin.index.json");
    if (bin < 0 || sharded_bin < 0) return NULL;
    if (bin || sharded_bin)
        *err = bert_errorf("%s has its weights only as pytorch_model.bin, which is not read: convert them "
                           "to model.safetensors once with " CONVERT_BIN ", or download model.safetensors "
                           "if the repository has it", dir);
    else
        *err = bert_errorf("%s has no model.safetensors (nor model.safetensors.index.json and its shards): "
                           "download the weights with `huggingface-cli download <repo> --local-dir %s "
                           "--include \"*.json\" \"*.txt\" \"*.safetensors\"`", dir, dir);
    return NULL;
}

/* The file names a shard index maps tensors to, each once, into *names
 * (pointers into doc); -1 with *err. */
static int shard_names(const json_doc *doc, int map, const char *label, const char ***names, int *n, char **err)
{
    *names = NULL;
    *n = 0;
    if (map < 0 || doc->nodes[map].type != JSON_OBJECT || bert_json_length(doc, map) < 1) {
        *err = bert_errorf("%s has no \"weight_map\" object of tensor -> file: download it again", label);
        return -1;
    }
    const char **list = malloc((size_t)bert_json_length(doc, map) * sizeof *list);
    if (!list) { *err = bert_errorf("out of memory reading %s", label); return -1; }
    for (int c = doc->nodes[map].first_child; c >= 0; c = doc->nodes[c].next_sibling) {
        const char *file = bert_json_str(doc, c, NULL);
        if (!file || !*file || strchr(file, '/') || file[0] == '.') {
            *err = bert_errorf("%s maps tensor '%s' to %s, which is not a file name in the model directory",
                               label, doc->nodes[c].key, file ? file : "a non-string");
            free(list);
            return -1;
        }
        int seen = 0;
        for (int i = 0; i < *n && !seen; i++) seen = strcmp(list[i], file) == 0;
        if (!seen && *n == MAX_SHARDS) {
            *err = bert_errorf("%s names more than %d shards", label, MAX_SHARDS);
            free(list);
            return -1;
        }
        if (!seen) list[(*n)++] = file;
    }
    *names = list;
    return 0;
}

/* Every tensor the index maps to a shard must be in that shard. */
static int check_map(const json_doc *doc, int map, const char *label, const char *const *names, st_file *const *files,
                     int n, char **err)
{
    for (int c = doc->nodes[map].first_child; c >= 0; c = doc->nodes[c].next_sibling) {
        const char *file = bert_json_str(doc, c, "");
        for (int i = 0; i < n; i++) {
            if (strcmp(names[i], file) != 0) continue;
            if (!bert_safetensors_find(files[i], doc->nodes[c].key)) {
                *err = bert_errorf("%s maps tensor '%s' to %s, which does not hold it: the shards and the "
                                   "index belong to different downloads; download them again",
                                   label, doc->nodes[c].key, file);
                return -1;
            }
        }
    }
    return 0;
}

static int open_shards(bert_model_files *dir, const char *label, st_file **out, char **err)
{
    const json_doc *doc = NULL;
    int found = bert_model_files_json(dir, "model.safetensors.index.json", 0, &doc, err);
    if (found <= 0) {
        if (found == 0) *err = bert_errorf("%s disappeared while it was being read", label);
        return -1;
    }
    int map = bert_json_member(doc, 0, "weight_map");
    const char **names = NULL;
    int n = 0, rc = -1;
    st_file **files = NULL;
    if (shard_names(doc, map, label, &names, &n, err) != 0) goto done;
    files = calloc((size_t)n, sizeof *files);
    if (!files) { *err = bert_errorf("out of memory reading %s", label); goto done; }
    for (int i = 0; i < n; i++) {
        char *path = bert_model_files_path(dir, names[i]);
        if (!path) { *err = bert_errorf("out of memory reading %s", label); goto done; }
        int opened = bert_safetensors_open(path, &files[i], err);
        free(path);
        if (opened != 0) goto done;
    }
    if (check_map(doc, map, label, names, files, n, err) != 0) goto done;
    rc = bert_safetensors_merge(files, n, label, out, err);
done:
    for (int i = 0; files && i < n; i++) bert_safetensors_close(files[i]);
    free(files);
    free(names);
    return rc;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

int bert_checkpoint_open(bert_model_files *files, st_file **out, char **label, char **err)
{
    *out = NULL;
    *label = bert_checkpoint_weights_file(files, err);
    if (!*label) return -1;
    int rc = ends_with(*label, ".index.json") ? open_shards(files, *label, out, err)
                                               : bert_safetensors_open(*label, out, err);
    if (rc != 0) {
        free(*label);
        *label = NULL;
    }
    return rc;
}

/* ---- what bert_load checks -------------------------------------------------- */

/* 0 unless dir/name is a Git LFS pointer (or unreadable): -1 with *err. */
static int not_a_pointer(bert_model_files *files, const char *name, char **err)
{
    char *path = bert_model_files_path(files, name);
    if (!path) { *err = NULL; return -1; }
    struct stat st;
    int rc = 0;
    /* Pointers are small: a larger file is never read here. */
    if (stat(path, &st) == 0 && st.st_size <= 1024) {
        size_t len;
        char *text = bert_file_read(path, 1024, &len, NULL, err);
        if (!text) rc = -1;
        free(text);
    }
    free(path);
    return rc;
}

static int check_tokenizer(bert_model_files *files, char **err)
{
    static const char *const names[] = {"tokenizer.json", "vocab.txt", "vocab.json", "merges.txt"};
    int present[4];
    for (int i = 0; i < 4; i++)
        if ((present[i] = bert_model_files_has(files, names[i])) < 0) return -1;   /* out of memory: *err stays NULL */
    if (!present[0] && !present[1] && !(present[2] && present[3])) {
        const char *dir = bert_model_files_dir(files);
        *err = bert_errorf("%s has no tokenizer: it needs tokenizer.json, vocab.txt, or vocab.json with "
                           "merges.txt; download them with the model (`huggingface-cli download <repo> "
                           "--local-dir %s --include \"*.json\" \"*.txt\" \"*.safetensors\"`)", dir, dir);
        return -1;
    }
    for (int i = 0; i < 4; i++)
        if (present[i] && not_a_pointer(files, names[i], err) != 0) return -1;
    return 0;
}

int bert_checkpoint_check(bert_model_files *files, char **err)
{
    *err = NULL;
    if (check_tokenizer(files, err) != 0) return -1;
    st_file *weights = NULL;
    char *label = NULL;
    if (bert_checkpoint_open(files, &weights, &label, err) != 0) return -1;
    bert_safetensors_close(weights);
    free(label);
    return 0;
}
