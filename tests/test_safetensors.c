/*
 * test_safetensors.c - the safetensors reader (ext/models/safetensors.c) on files
 * written by the test: every malformation named, every valid layout read.
 */
#include "test.h"
#include "checkpoint_fixture.h"
#include "../ext/models/safetensors.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Opens a file whose header is `header` over `data_len` zero bytes. */
static int st_try(const char *header, uint64_t claimed, size_t data_len, st_file **f, char **err)
{
    tm_dir dir = tm_case_dir("st");
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", dir.path);
    void *data = calloc(data_len ? data_len : 1, 1);
    if (!data) exit(2);
    tm_write_st_raw(path, header, claimed, data, data_len);
    free(data);
    return bert_safetensors_open(path, f, err);
}

/* The length field and the header around the tensors. */
static void bad_lengths_and_headers(void)
{
    st_file *f = NULL;
    char *err = NULL;

    t_case("safetensors: a file shorter than the length field");
    {
        tm_dir dir = tm_case_dir("st");
        char path[600];
        snprintf(path, sizeof path, "%s/model.safetensors", dir.path);
        tm_write_file(path, "\x05\0\0", 3);
        T_CHECK(bert_safetensors_open(path, &f, &err) == -1 && !f && tm_contains(err, "too short"), "got: %s", err ? err : "success");
        free(err);
        err = NULL;
    }

    t_case("safetensors: header length past the end of the file");
    T_CHECK(st_try("{}", 1000, 0, &f, &err) == -1 && tm_contains(err, "truncated"), "got: %s", err ? err : "success");
    free(err);
    err = NULL;
    T_CHECK(st_try("{}", UINT64_MAX, 0, &f, &err) == -1 && tm_contains(err, "header claims"), "got: %s", err ? err : "success");
    free(err);
    err = NULL;

    t_case("safetensors: a header that is not a JSON object");
    static const char *const bad_headers[] = {"[1, 2]", "{\"a\": ", "nonsense", "\"x\""};
    for (size_t i = 0; i < sizeof bad_headers / sizeof *bad_headers; i++) {
        T_CHECK(st_try(bad_headers[i], 0, 0, &f, &err) == -1 && tm_contains(err, "JSON"), "header %zu: %s", i,
                err ? err : "success");
        free(err);
        err = NULL;
    }
}

/* Byte ranges that do not fit the data, the shapes or each other. */
static void bad_byte_ranges(void)
{
    st_file *f = NULL;
    char *err = NULL;

    t_case("safetensors: data offsets past the end of the data");
    T_CHECK(st_try("{\"w\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}", 0, 12, &f, &err) == -1 &&
            tm_contains(err, "'w'") && tm_contains(err, "truncated"), "got: %s", err ? err : "success");
    free(err);
    err = NULL;

    t_case("safetensors: offsets that are not a range");
    T_CHECK(st_try("{\"w\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [8, 4]}}", 0, 16, &f, &err) == -1 &&
            tm_contains(err, "'w'") && tm_contains(err, "not a range"), "got: %s", err ? err : "success");
    free(err);
    err = NULL;
    T_CHECK(st_try("{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [-4, 0]}}", 0, 16, &f, &err) == -1 &&
            tm_contains(err, "'w'"), "got: %s", err ? err : "success");
    free(err);
    err = NULL;

    t_case("safetensors: a byte range that does not match shape and dtype");
    T_CHECK(st_try("{\"w\": {\"dtype\": \"F16\", \"shape\": [2, 3], \"data_offsets\": [0, 24]}}", 0, 24, &f, &err) == -1 &&
            tm_contains(err, "'w'") && tm_contains(err, "12 bytes"), "got: %s", err ? err : "success");
    free(err);
    err = NULL;

    t_case("safetensors: overlapping tensors");
    T_CHECK(st_try("{\"a\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]},"
                   " \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [12, 20]}}", 0, 20, &f, &err) == -1 &&
            tm_contains(err, "'a'") && tm_contains(err, "'b'") && tm_contains(err, "share"), "got: %s", err ? err : "success");
    free(err);
    err = NULL;
    T_CHECK(st_try("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]},"
                   " \"b\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}", 0, 16, &f, &err) == -1 &&
            tm_contains(err, "share"), "a range inside another: %s", err ? err : "success");
    free(err);
    err = NULL;
}

static void a_valid_listing(void)
{
    st_file *f = NULL;
    char *err = NULL;
    const char *listing = "{\"__metadata__\": {\"format\": \"pt\"},"
                          " \"late\": {\"dtype\": \"BF16\", \"shape\": [2, 2], \"data_offsets\": [12, 20]},"
                          " \"early\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
                          " \"empty\": {\"dtype\": \"F32\", \"shape\": [0, 5], \"data_offsets\": [8, 8]}}";

    t_case("safetensors: tensors out of order, with a gap, zero-sized, and metadata");
    if (T_CHECK(st_try(listing, 0, 20, &f, &err) == 0, "rejected: %s", err ? err : "?")) {
        const st_tensor *late = bert_safetensors_find(f, "late"), *early = bert_safetensors_find(f, "early");
        T_CHECK(bert_safetensors_count(f) == 3 && !bert_safetensors_find(f, "__metadata__"), "count %d", bert_safetensors_count(f));
        T_CHECK(late && early && late->data - early->data == 12, "offsets");
        T_CHECK(late && late->dtype == ST_BF16 && late->ndim == 2 && late->count == 4 && late->nbytes == 8, "late's entry");
        T_CHECK(bert_safetensors_find(f, "empty") && bert_safetensors_find(f, "empty")->count == 0, "zero-sized tensor");
        T_CHECK(bert_safetensors_size(f) == 8 + strlen(listing) + 20, "size %zu", bert_safetensors_size(f));
    }
    bert_safetensors_close(f);
    f = NULL;
    free(err);
    err = NULL;
}

/* Entries that cannot describe a tensor. */
static void bad_entries(void)
{
    st_file *f = NULL;
    char *err = NULL;
    char hdr[512];

    t_case("safetensors: unknown dtype names the tensor");
    T_CHECK(st_try("{\"w\": {\"dtype\": \"Q4_K\", \"shape\": [4], \"data_offsets\": [0, 4]}}", 0, 4, &f, &err) == -1 &&
            tm_contains(err, "'w'") && tm_contains(err, "Q4_K"), "got: %s", err ? err : "success");
    free(err);
    err = NULL;

    t_case("safetensors: malformed entries");
    static const char *const entries[] = {
        "{\"w\": 5}",
        "{\"w\": {\"shape\": [1], \"data_offsets\": [0, 4]}}",
        "{\"w\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}}",
        "{\"w\": {\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 4]}}",
        "{\"w\": {\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 4]}}",
        "{\"w\": {\"dtype\": \"F32\", \"shape\": [1]}}",
        "{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0]}}",
        "{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [\"0\", \"4\"]}}",
        "{\"w\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], \"data_offsets\": [0, 4]}}",
    };
    for (size_t i = 0; i < sizeof entries / sizeof *entries; i++) {
        T_CHECK(st_try(entries[i], 0, 8, &f, &err) == -1 && tm_contains(err, "'w'"), "entry %zu: %s", i,
                err ? err : "success");
        free(err);
        err = NULL;
    }

    t_case("safetensors: a shape whose size overflows");
    /* 2^62 * 4 * 4 bytes wraps to 0, which the empty range would match */
    T_CHECK(st_try("{\"w\": {\"dtype\": \"F32\", \"shape\": [4611686018427387904, 4], \"data_offsets\": [0, 0]}}",
                   0, 8, &f, &err) == -1 && tm_contains(err, "'w'") && tm_contains(err, "too large"), "got: %s",
            err ? err : "success");
    free(err);
    err = NULL;

    t_case("safetensors: a tensor named twice");
    snprintf(hdr, sizeof hdr, "{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
                              " \"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}");
    T_CHECK(st_try(hdr, 0, 8, &f, &err) == -1 && tm_contains(err, "twice"), "got: %s", err ? err : "success");
    free(err);
    err = NULL;
}

void suite_safetensors(void)
{
    bad_lengths_and_headers();
    bad_byte_ranges();
    a_valid_listing();
    bad_entries();
}
