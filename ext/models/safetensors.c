/*
 * safetensors.c - maps a .safetensors file and validates its header.
 *
 * Nothing in the header is trusted: the data section may be a few bytes or
 * many gigabytes, so every size is checked for overflow before it is used and
 * every byte range against the mapping, which lets the model code read tensor
 * data without checks of its own.  Tensors may come in any order and with
 * gaps between them (the reference writer packs them, but nothing depends on
 * it); two ranges sharing a byte would mean a corrupt file and are refused.
 */
#include "safetensors.h"

#include "../base/file.h"
#include "../base/error.h"
#include "../base/json.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The reference implementation refuses larger headers; so do we, so that a
 * hostile length cannot make us parse gigabytes of JSON. */
#define ST_MAX_HEADER ((uint64_t)100000000)

/* One file of the checkpoint: a sharded one has several. */
typedef struct {
    void *map;              /* NULL when the image belongs to the caller */
    size_t map_size;
    json_doc *header;       /* owns the names and dtype strings of its tensors */
} st_part;

struct st_file {
    st_part *parts;
    int n_parts;
    size_t size;            /* bytes of every part together */
    st_tensor *tensors;     /* sorted by name, from every part */
    int count;
};

static const struct {
    const char *name;
    st_dtype dtype;
    size_t size;
} dtypes[] = {
    {"F32", ST_F32, 4},  {"F16", ST_F16, 2},   {"BF16", ST_BF16, 2}, {"F64", ST_F64, 8},
    {"I64", ST_I64, 8},  {"I32", ST_I32, 4},   {"I16", ST_I16, 2},   {"I8", ST_I8, 1},
    {"U64", ST_U64, 8},  {"U32", ST_U32, 4},   {"U16", ST_U16, 2},   {"U8", ST_U8, 1},
    {"BOOL", ST_BOOL, 1}, {"F8_E4M3", ST_F8_E4M3, 1}, {"F8_E5M2", ST_F8_E5M2, 1},
};

size_t bert_safetensors_dtype_size(st_dtype t)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
        if (dtypes[i].dtype == t) return dtypes[i].size;
    return 0;
}

static int set_error(char **err, char *msg)
{
    *err = msg;
    return -1;
}
#define fail(err, ...) set_error(err, bert_errorf(__VA_ARGS__))

#define CORRUPT "; the file is damaged or not a safetensors file: download or export it again"

static int by_name(const void *a, const void *b)
{
    return strcmp(((const st_tensor *)a)->name, ((const st_tensor *)b)->name);
}

static int by_offset(const void *a, const void *b)
{
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    return x->data < y->data ? -1 : x->data > y->data;
}

/* Reads one header entry into *t.  `data`/`data_size` is the data section. */
static int parse_entry(const json_doc *doc, int node, const unsigned char *data, size_t data_size,
                       const char *label, st_tensor *t, char **err)
{
    const char *name = doc->nodes[node].key;
    memset(t, 0, sizeof *t);
    t->name = name;
    if (doc->nodes[node].type != JSON_OBJECT)
        return fail(err, "%s: header entry '%s' is not an object" CORRUPT, label, name);

    const char *dt = bert_json_str(doc, bert_json_member(doc, node, "dtype"), NULL);
    if (!dt) return fail(err, "%s: tensor '%s' has no dtype" CORRUPT, label, name);
    size_t esize = 0;
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
        if (strcmp(dtypes[i].name, dt) == 0) { t->dtype = dtypes[i].dtype; esize = dtypes[i].size; }
    if (!esize)
        return fail(err, "%s: tensor '%s' has dtype \"%s\", which this reader does not know; "
                         "save the model as float32, float16 or bfloat16", label, name, dt);
    t->dtype_name = dt;

    int shape = bert_json_member(doc, node, "shape");
    if (shape < 0 || doc->nodes[shape].type != JSON_ARRAY)
        return fail(err, "%s: tensor '%s' has no shape array" CORRUPT, label, name);
    if (bert_json_length(doc, shape) > ST_MAX_DIMS)
        return fail(err, "%s: tensor '%s' has %d dimensions, more than the %d supported" CORRUPT,
                         label, name, bert_json_length(doc, shape), ST_MAX_DIMS);
    size_t count = 1;
    for (int c = doc->nodes[shape].first_child; c >= 0; c = doc->nodes[c].next_sibling) {
        long long d = doc->nodes[c].type == JSON_INTEGER ? doc->nodes[c].integer : -1;
        if (d < 0)
            return fail(err, "%s: tensor '%s' has a shape entry that is not a non-negative integer" CORRUPT,
                             label, name);
        if (d > 0 && count > SIZE_MAX / esize / (uint64_t)d)
            return fail(err, "%s: tensor '%s' has a shape too large to address" CORRUPT, label, name);
        count *= (size_t)d;
        t->shape[t->ndim++] = d;
    }
    t->count = count;
    t->nbytes = count * esize;

    int offs = bert_json_member(doc, node, "data_offsets");
    int b = offs >= 0 ? doc->nodes[offs].first_child : -1;
    int e = b >= 0 ? doc->nodes[b].next_sibling : -1;
    if (offs < 0 || doc->nodes[offs].type != JSON_ARRAY || bert_json_length(doc, offs) != 2 ||
        doc->nodes[b].type != JSON_INTEGER || doc->nodes[e].type != JSON_INTEGER)
        return fail(err, "%s: tensor '%s' needs data_offsets [begin, end] as two integers" CORRUPT,
                         label, name);
    long long begin = doc->nodes[b].integer, end = doc->nodes[e].integer;
    if (begin < 0 || end < begin)
        return fail(err, "%s: tensor '%s' has data_offsets [%lld, %lld], which is not a range" CORRUPT,
                         label, name, begin, end);
    if ((unsigned long long)end > data_size)
        return fail(err, "%s: tensor '%s' ends at byte %lld of the data but the file holds only %zu "
                         "data bytes; the file is truncated: download or export it again",
                         label, name, end, data_size);
    if ((unsigned long long)(end - begin) != t->nbytes)
        return fail(err, "%s: tensor '%s' (%s, %zu elements = %zu bytes) has data_offsets "
                         "spanning %lld bytes" CORRUPT,
                         label, name, dt, count, t->nbytes, end - begin);
    t->data = data + begin;
    return 0;
}

static int check_overlaps(st_file *f, const unsigned char *data, const char *label, char **err)
{
    if (f->count < 2) return 0;
    const st_tensor **order = malloc((size_t)f->count * sizeof *order);
    if (!order) return fail(err, "%s: out of memory checking the header", label);
    for (int i = 0; i < f->count; i++) order[i] = &f->tensors[i];
    qsort(order, (size_t)f->count, sizeof *order, by_offset);
    const st_tensor *last = NULL;
    int rc = 0;
    for (int i = 0; i < f->count && rc == 0; i++) {
        const st_tensor *t = order[i];
        if (t->nbytes == 0) continue;
        if (last && t->data < last->data + last->nbytes)
            rc = fail(err, "%s: tensors '%s' and '%s' share bytes %zu..%zu of the data" CORRUPT, label,
                           last->name, t->name, (size_t)(t->data - data),
                           (size_t)(last->data + last->nbytes - data) - 1);
        if (!last || t->data + t->nbytes > last->data + last->nbytes) last = t;
    }
    free(order);
    return rc;
}

/* Sorts the tensors by name; two of one name are refused. */
static int sort_unique(st_file *f, const char *label, char **err)
{
    qsort(f->tensors, (size_t)f->count, sizeof *f->tensors, by_name);
    for (int i = 1; i < f->count; i++)
        if (strcmp(f->tensors[i - 1].name, f->tensors[i].name) == 0)
            return fail(err, "%s: tensor '%s' appears twice" CORRUPT, label, f->tensors[i].name);
    return 0;
}

int bert_safetensors_parse(const unsigned char *buf, size_t size, const char *label, st_file **out, char **err)
{
    *out = NULL;
    *err = NULL;
    if (size < 8)
        return fail(err, "%s is %zu bytes long, too short for a safetensors header" CORRUPT, label, size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | buf[i];
    if (n > size - 8)
        return fail(err, "%s: the header claims %llu bytes but the file has only %zu after the "
                         "length; the file is truncated: download or export it again",
                         label, (unsigned long long)n, size - 8);
    if (n > ST_MAX_HEADER)
        return fail(err, "%s: the header claims %llu bytes, more than the %llu a safetensors header "
                         "may have" CORRUPT, label, (unsigned long long)n, (unsigned long long)ST_MAX_HEADER);
    if (n < 2 || buf[8] != '{')
        return fail(err, "%s: the header is not a JSON object" CORRUPT, label);

    st_file *f = calloc(1, sizeof *f);
    if (f) f->parts = calloc(1, sizeof *f->parts);
    if (!f || !f->parts) {
        free(f);
        return fail(err, "%s: out of memory reading the header", label);
    }
    f->n_parts = 1;
    char *jerr = NULL;
    if (bert_json_parse((const char *)buf + 8, (size_t)n, &f->parts[0].header, &jerr) != 0) {
        fail(err, "%s: the header is not valid JSON (%s)" CORRUPT, label, jerr ? jerr : "out of memory");
        free(jerr);
        bert_safetensors_close(f);
        return -1;
    }
    const json_doc *doc = f->parts[0].header;
    if (doc->nodes[0].type != JSON_OBJECT) {
        bert_safetensors_close(f);
        return fail(err, "%s: the header is not a JSON object" CORRUPT, label);
    }
    int entries = bert_json_length(doc, 0);
    f->tensors = calloc(entries ? (size_t)entries : 1, sizeof *f->tensors);
    if (!f->tensors) {
        bert_safetensors_close(f);
        return fail(err, "%s: out of memory reading the header", label);
    }
    const unsigned char *data = buf + 8 + n;
    size_t data_size = size - 8 - (size_t)n;
    for (int c = doc->nodes[0].first_child; c >= 0; c = doc->nodes[c].next_sibling) {
        if (strcmp(doc->nodes[c].key, "__metadata__") == 0) continue;
        if (parse_entry(doc, c, data, data_size, label, &f->tensors[f->count], err) != 0) {
            bert_safetensors_close(f);
            return -1;
        }
        f->count++;
    }
    if (sort_unique(f, label, err) != 0 || check_overlaps(f, data, label, err) != 0) {
        bert_safetensors_close(f);
        return -1;
    }
    f->size = size;
    *out = f;
    return 0;
}

int bert_safetensors_open(const char *path, st_file **out, char **err)
{
    *out = NULL;
    *err = NULL;
    /* O_NONBLOCK: a FIFO is refused below instead of waited on. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return fail(err, "%s does not exist; the model directory needs its weights as "
                             "model.safetensors (convert pytorch_model.bin with save_pretrained(..., "
                             "safe_serialization=True))", path);
        return fail(err, "cannot open %s: %s", path, strerror(errno));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return fail(err, "cannot stat %s: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return fail(err, "%s is not a regular file", path);
    }
    if ((uint64_t)sb.st_size > SIZE_MAX) {
        close(fd);
        return fail(err, "%s is too large to map on this system", path);
    }
    size_t size = (size_t)sb.st_size;
    if (size < 8) {
        close(fd);
        return fail(err, "%s is %zu bytes long, too short for a safetensors header" CORRUPT, path, size);
    }
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd);      /* the mapping keeps the file alive */
    if (map == MAP_FAILED)
        return fail(err, "cannot map %s (%zu bytes): %s", path, size, strerror(map_errno));
    if (bert_file_is_lfs_pointer(map, size)) {
        munmap(map, size);
        *err = bert_file_lfs_error(path, size);
        return -1;
    }
    st_file *f = NULL;
    if (bert_safetensors_parse(map, size, path, &f, err) != 0) {
        munmap(map, size);
        return -1;
    }
    f->parts[0].map = map;
    f->parts[0].map_size = size;
    *out = f;
    return 0;
}

int bert_safetensors_merge(st_file **files, int n, const char *label, st_file **out, char **err)
{
    *out = NULL;
    *err = NULL;
    st_file *f = calloc(1, sizeof *f);
    size_t tensors = 0;
    for (int i = 0; i < n; i++) tensors += (size_t)files[i]->count;
    if (f) {
        f->parts = calloc(n > 0 ? (size_t)n : 1, sizeof *f->parts);
        f->tensors = calloc(tensors ? tensors : 1, sizeof *f->tensors);
    }
    if (!f || !f->parts || !f->tensors) {
        bert_safetensors_close(f);
        for (int i = 0; i < n; i++) {
            bert_safetensors_close(files[i]);
            files[i] = NULL;
        }
        return fail(err, "%s: out of memory reading the shards' headers", label);
    }
    /* The parts move into f; the emptied files are freed. */
    for (int i = 0; i < n; i++) {
        st_file *one = files[i];
        memcpy(f->tensors + f->count, one->tensors, (size_t)one->count * sizeof *one->tensors);
        f->count += one->count;
        f->size += one->size;
        f->parts[f->n_parts++] = one->parts[0];
        one->n_parts = 0;
        bert_safetensors_close(one);
        files[i] = NULL;
    }
    if (sort_unique(f, label, err) != 0) {
        bert_safetensors_close(f);
        return -1;
    }
    *out = f;
    return 0;
}

const st_tensor *bert_safetensors_find(const st_file *f, const char *name)
{
    if (!f || f->count == 0) return NULL;
    st_tensor key = {.name = name};
    return bsearch(&key, f->tensors, (size_t)f->count, sizeof key, by_name);
}

size_t bert_safetensors_size(const st_file *f)
{
    return f ? f->size : 0;
}

int bert_safetensors_count(const st_file *f)
{
    return f ? f->count : 0;
}

const st_tensor *bert_safetensors_tensor_at(const st_file *f, int i)
{
    return f && i >= 0 && i < f->count ? &f->tensors[i] : NULL;
}

void bert_safetensors_release(const st_file *f, const st_tensor *t)
{
    if (!f || !f->n_parts || !f->parts[0].map || !t) return;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return;
    uintptr_t mask = (uintptr_t)page - 1;
    uintptr_t begin = ((uintptr_t)t->data + mask) & ~mask, end = ((uintptr_t)t->data + t->nbytes) & ~mask;
    /* Only advice: a failure leaves the pages resident, nothing worse. */
    if (end > begin) (void)madvise((void *)begin, end - begin, MADV_DONTNEED);
}

void bert_safetensors_close(st_file *f)
{
    if (!f) return;
    for (int i = 0; i < f->n_parts; i++) {
        if (f->parts[i].map) munmap(f->parts[i].map, f->parts[i].map_size);
        bert_json_free(f->parts[i].header);
    }
    free(f->parts);
    free(f->tensors);
    free(f);
}
