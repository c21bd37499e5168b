/*
 * test_robustness_weights.c - damaged model.safetensors files and headers
 * (edited with SQLite's own JSON functions): clear errors, nothing half-loaded
 * kept.
 */
#include "robustness.h"

#include <pthread.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- damaged weights ---------------------------------------------------------- */

/* The JSON path of a tensor entry, without its closing quote. */
#define T(name) "'$.\"" name "\""

/* Files missing, of the wrong kind, cut short, or with a header length
 * that does not fit. */
static void damaged_weights_files(sqlite3 *db, const st_image *im, const char *header)
{
    const unsigned char *data = im->bytes + 8 + im->header_len;
    const size_t data_len = im->len - 8 - im->header_len;
    char dir[256];

    t_case("model.safetensors missing");
    rb_model_dir(dir, sizeof dir, "st-missing");
    remove(ROOT "/st-missing/model.safetensors");
    rb_expect_weights_error(db, "stmissing", dir, "model.safetensors", "huggingface-cli download");

    t_case("model.safetensors is a directory");
    rb_model_dir(dir, sizeof dir, "st-dir");
    remove(ROOT "/st-dir/model.safetensors");
    mkdir(ROOT "/st-dir/model.safetensors", 0755);
    rb_expect_weights_error(db, "stdir", dir, "model.safetensors", "not a regular file");
    rmdir(ROOT "/st-dir/model.safetensors");

    t_case("model.safetensors empty or shorter than its length field");
    rb_model_dir(dir, sizeof dir, "st-empty");
    rb_write_st(dir, im->header_len, header, im->header_len, data, data_len, 0);
    rb_expect_weights_error(db, "stempty", dir, "0 bytes", "too short");
    rb_write_st(dir, im->header_len, header, im->header_len, data, data_len, 5);
    rb_expect_weights_error(db, "stempty", dir, "5 bytes", "too short");

    t_case("model.safetensors cut short: inside the header, inside the data");
    rb_model_dir(dir, sizeof dir, "st-cut");
    rb_write_st(dir, im->header_len, header, im->header_len, data, data_len, 8 + im->header_len / 2);
    rb_expect_weights_error(db, "stcut", dir, "header claims", "truncated");
    rb_write_st(dir, im->header_len, header, im->header_len, data, data_len, 8 + im->header_len + data_len / 2);
    rb_expect_weights_error(db, "stcut", dir, "truncated", "ends at byte");
    rb_write_st(dir, im->header_len, header, im->header_len, data, data_len, im->len - 1);
    rb_expect_weights_error(db, "stcut", dir, "truncated", "ends at byte");

    t_case("model.safetensors header length past the end, zero or absurd");
    rb_model_dir(dir, sizeof dir, "st-length");
    rb_write_st(dir, (uint64_t)im->len, header, im->header_len, data, data_len, SIZE_MAX);
    rb_expect_weights_error(db, "stlength", dir, "header claims", "truncated");
    rb_write_st(dir, UINT64_MAX, header, im->header_len, data, data_len, SIZE_MAX);
    rb_expect_weights_error(db, "stlength", dir, "header claims", "18446744073709551615");
    rb_write_st(dir, (uint64_t)1 << 62, header, im->header_len, data, data_len, SIZE_MAX);
    rb_expect_weights_error(db, "stlength", dir, "header claims", NULL);
    rb_write_st(dir, 0, header, im->header_len, data, data_len, SIZE_MAX);
    rb_expect_weights_error(db, "stlength", dir, "not a JSON object", NULL);
    rb_write_st(dir, im->header_len - 1, header, im->header_len, data, data_len, SIZE_MAX);
    rb_expect_weights_error(db, "stlength", dir, "not valid JSON", NULL);
}

/* 1 for the header edits that only loading the tensors finds (their names,
 * dtypes and shapes against config.json), not bert_load's header check. */
static int found_at_use(const char *edit)
{
    static const char *const at_use[] = {"a wrong dtype of the same size", "a tensor of the wrong shape, same size",
                                         "a tensor of the wrong rank", "a missing tensor"};
    for (size_t i = 0; i < sizeof at_use / sizeof *at_use; i++)
        if (strcmp(edit, at_use[i]) == 0) return 1;
    return 0;
}

/* Headers edited with SQLite's JSON functions: each fault named. */
static void damaged_weights_headers(sqlite3 *db, const st_image *im)
{
    char dir[256];

    /* Header edits: the SQL expression, then two fragments of the error. */
    static const struct { const char *name, *expr, *f1, *f2; } edits[] = {
        {"offsets out of range",
         "json_set(?1, " T("embeddings.LayerNorm.bias") ".data_offsets', json('[17600000, 17600512]'))",
         "embeddings.LayerNorm.bias", "ends at byte 17600512"},
        {"offsets past the data by one byte",
         "json_set(?1, " T("encoder.layer.1.output.dense.bias") ".data_offsets[1]', "
         "(?1 -> " T("encoder.layer.1.output.dense.bias") ".data_offsets[1]') + 1)",
         "encoder.layer.1.output.dense.bias", "data_offsets"},
        {"offsets reversed",
         "json_set(?1, " T("embeddings.LayerNorm.weight") ".data_offsets', json('[1024, 512]'))",
         "embeddings.LayerNorm.weight", "not a range"},
        {"negative offsets",
         "json_set(?1, " T("embeddings.LayerNorm.weight") ".data_offsets', json('[-512, 0]'))",
         "embeddings.LayerNorm.weight", "not a range"},
        {"offsets that are not integers",
         "json_set(?1, " T("embeddings.LayerNorm.weight") ".data_offsets', json('[\"512\", 1024]'))",
         "embeddings.LayerNorm.weight", "two integers"},
        {"three offsets",
         "json_set(?1, " T("embeddings.LayerNorm.weight") ".data_offsets', json('[512, 1024, 2048]'))",
         "embeddings.LayerNorm.weight", "two integers"},
        {"overlapping tensors",
         "json_set(?1, " T("embeddings.LayerNorm.weight") ".data_offsets', json('[256, 768]'))",
         "share bytes", "embeddings.LayerNorm.weight"},
        {"two tensors on the same bytes",
         "json_set(?1, " T("encoder.layer.0.attention.self.key.weight") ".data_offsets', "
         "?1 -> " T("encoder.layer.0.attention.self.query.weight") ".data_offsets')",
         "share bytes", "encoder.layer.0.attention.self"},
        {"a byte range that does not match the shape",
         "json_set(?1, " T("embeddings.LayerNorm.weight") ".shape', json('[129]'))",
         "embeddings.LayerNorm.weight", "spanning"},
        {"an unknown dtype",
         "json_set(?1, " T("encoder.layer.0.output.dense.bias") ".dtype', 'Q4_K')",
         "encoder.layer.0.output.dense.bias", "Q4_K"},
        {"a dtype that is not a string",
         "json_set(?1, " T("encoder.layer.0.output.dense.bias") ".dtype', 4)",
         "encoder.layer.0.output.dense.bias", "dtype"},
        {"a wrong dtype of the same size",
         "json_set(?1, " T("encoder.layer.0.output.dense.bias") ".dtype', 'I32')",
         "encoder.layer.0.output.dense.bias", "I32"},
        {"a wrong dtype of another size",
         "json_set(?1, " T("encoder.layer.0.output.dense.bias") ".dtype', 'F16')",
         "encoder.layer.0.output.dense.bias", "spanning"},
        {"a tensor of the wrong shape, same size",
         "json_set(?1, " T("embeddings.word_embeddings.weight") ".shape', json('[128, 30522]'))",
         "embeddings.word_embeddings.weight", "[128, 30522]"},
        {"a tensor of the wrong rank",
         "json_set(?1, " T("embeddings.LayerNorm.weight") ".shape', json('[1, 128]'))",
         "embeddings.LayerNorm.weight", "[1, 128]"},
        {"a negative dimension",
         "json_set(?1, " T("embeddings.LayerNorm.weight") ".shape', json('[-128]'))",
         "embeddings.LayerNorm.weight", "non-negative"},
        {"a shape whose size overflows",
         "json_set(?1, " T("embeddings.LayerNorm.weight") ".shape', json('[4611686018427387904, 4611686018427387904]'))",
         "embeddings.LayerNorm.weight", "too large"},
        {"too many dimensions",
         "json_set(?1, " T("embeddings.LayerNorm.weight") ".shape', json('[1,1,1,1,1,1,1,1,128]'))",
         "embeddings.LayerNorm.weight", "dimensions"},
        {"a missing tensor",
         "json_remove(?1, " T("encoder.layer.1.output.dense.bias") "')",
         "has no tensor", "encoder.layer.1.output.dense.bias"},
        {"a missing tensor entry field",
         "json_remove(?1, " T("encoder.layer.1.output.dense.bias") ".shape')",
         "encoder.layer.1.output.dense.bias", "shape"},
        {"an entry that is not an object",
         "json_set(?1, " T("encoder.layer.1.output.dense.bias") "', 7)",
         "encoder.layer.1.output.dense.bias", "not an object"},
        {"a tensor named twice",
         "replace(?1, '\"embeddings.LayerNorm.weight\"', '\"embeddings.LayerNorm.bias\"')",
         "embeddings.LayerNorm.bias", "twice"},
        {"a header that is an array", "'[1, 2]'", "not a JSON object", NULL},
        {"a header that is not JSON", "substr(?1, 1, 200)", "not valid JSON", NULL},
    };
    rb_model_dir(dir, sizeof dir, "st-header");
    for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
        char label[160];
        snprintf(label, sizeof label, "model.safetensors header: %s", edits[i].name);
        t_case(label);
        if (rb_write_edited_st(db, dir, im, edits[i].expr))
            (found_at_use(edits[i].name) ? rb_expect_load_time_error : rb_expect_weights_error)(db, "stheader", dir,
                                                                                          edits[i].f1, edits[i].f2);
    }
}

/* Valid files laid out differently are read from their own offsets. */
static void weights_read_where_the_header_says(sqlite3 *db, const st_image *im)
{
    char dir[256];

    t_case("tensors stored out of order are valid and read from their own offsets");
    rb_model_dir(dir, sizeof dir, "st-order");
    if (rb_write_edited_st(db, dir, im,
                        "json_set(?1, " T("encoder.layer.0.attention.self.query.weight") ".data_offsets', "
                        "?1 -> " T("encoder.layer.0.attention.self.key.weight") ".data_offsets', "
                        T("encoder.layer.0.attention.self.key.weight") ".data_offsets', "
                        "?1 -> " T("encoder.layer.0.attention.self.query.weight") ".data_offsets')") &&
        rb_load_ok(db, "storder", dir)) {
        /* Query and key trade places: the model is another one, not the same. */
        t_expect(db, "SELECT length(bert_embed('a cat', 'storder')) || ' ' || "
                   "(bert_embed('a cat', 'storder') = bert_embed('a cat', 'good'))", NULL, "512 0");
        t_expect(db, "SELECT bert_unload('storder')", NULL, "1");
    }

    t_case("an intact copy of the weights gives the same vector as the original");
    rb_model_dir(dir, sizeof dir, "st-copy");
    if (rb_write_edited_st(db, dir, im, "json(?1)") && rb_load_ok(db, "stcopy", dir)) {
        t_expect(db, "SELECT bert_embed('a cat', 'stcopy') = bert_embed('a cat', 'good')", NULL, "1");
        t_expect(db, "SELECT bert_unload('stcopy')", NULL, "1");
    }
}

void robustness_weights(sqlite3 *db)
{
    st_image im;
    t_case("damaged model.safetensors: the good file can be read");
    if (!T_CHECK(rb_read_image(&im), "cannot read " GOOD "/model.safetensors")) {
        free(im.bytes);
        return;
    }
    char *header = malloc(im.header_len + 1);
    if (!header) exit(2);
    memcpy(header, im.bytes + 8, im.header_len);
    header[im.header_len] = '\0';
    damaged_weights_files(db, &im, header);
    damaged_weights_headers(db, &im);
    weights_read_where_the_header_says(db, &im);
    rb_expect_alive(db);
    free(header);
    free(im.bytes);
}


/* The copies of the weights are 17 MB each: gone once the suite is done. */
void robustness_drop_weight_copies(void)
{
    static const char *const dirs[] = {"other-config", "big-vocab", "st-cut", "st-length", "st-header",
                                       "st-order", "st-copy"};
    char path[512];
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        snprintf(path, sizeof path, ROOT "/%s/model.safetensors", dirs[i]);
        remove(path);
    }
}

