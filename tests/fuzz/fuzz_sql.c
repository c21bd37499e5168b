/*
 * fuzz_sql.c - the SQL functions' argument handling.
 *
 * One connection, with the test models registered, lives for the whole run.
 * Each input picks a statement and the values bound to its parameters:
 *
 *   byte 0      statement: 'a' + n, see `statements` below
 *   then, per parameter, a tag and its bytes:
 *     'i' 8 bytes   INTEGER (little-endian)     'k' 1 byte   small INTEGER (signed)
 *     'r' 8 bytes   REAL                        'm' 1 byte   a registered model's name
 *     't' 1 byte n, n bytes   TEXT              'T' 2 bytes n, n bytes   TEXT
 *     'b' 1 byte n, n bytes   BLOB              'B' 2 bytes n, n bytes   BLOB
 *     'p' 1 byte    a model directory path      anything else           NULL
 *
 * Every statement runs to its end and every column is read.  SQL errors are
 * expected; a crash, a leak, a hang or sanitizer report is a finding.  A
 * model registered by an input is dropped again, so inputs do not depend on
 * each other.
 */
#include "../../ext/base/sqlite_api.h"
#include "fuzz_util.h"

#include <cblas.h>

int sqlite3_bert_init(sqlite3 *db, char **err, const sqlite3_api_routines *api);
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const statements[] = {
    "SELECT bert_tokenize(?1, ?2)",
    "SELECT bert_token_ids(?1, ?2)",
    "SELECT bert_embed(?1, ?2)",
    "SELECT bert_similarity(?1, ?2, ?3)",
    "SELECT bert_fill_mask(?1, ?2, ?3)",
    "SELECT bert_next_sentence(?1, ?2, ?3)",
    "SELECT bert_vector_to_json(?1)",
    "SELECT mask_index, rank, token, token_str, score, sequence FROM bert_fill_mask_each(?1, ?2, ?3)",
    "SELECT key, value, embedding FROM bert_embed_each(?1, ?2)",
    "SELECT key, value, embedding FROM bert_embed_each(json_array(?1, ?2, ?3), ?4)",
    "SELECT bert_load(?1, ?2, ?3)",
    "SELECT bert_load('fuzz', ?1, ?2), bert_embed(?3, 'fuzz'), bert_tokenize(?3, 'fuzz')",
    "SELECT bert_tokenize(?1), bert_embed(?1)",
    "SELECT bert_similarity(bert_embed(?1, ?3), bert_embed(?2, ?3)), bert_similarity(?1, bert_embed(?2, ?3), ?3)",
    "SELECT bert_token_ids(?1, ?3), bert_fill_mask(?1 || ?2, 2, 'mlm')",
    "SELECT * FROM bert_models",
    "SELECT bert_classify(?1, ?2), bert_label(?1, ?2), bert_classify_pair(?1, ?2, ?3)",
    "SELECT bert_rerank(?1, ?2, ?3)",
    "SELECT key, value, score FROM bert_rerank_each(?1, ?2, ?3)",
    "SELECT key, value, score FROM bert_rerank_each(?1, json_array(?2, ?3), ?4)",
    "SELECT \"index\", token, id, start, \"end\", word FROM bert_tokenize_offsets(?1, ?2)",
    "SELECT chunk_index, text, start, \"end\", tokens FROM bert_chunks(?1, ?2, ?3, ?4)",
    "SELECT count(*), sum(tokens) FROM bert_chunks(?1 || ?2 || ?1, 3, 1)",
    "SELECT bert_ner(?1, 'ner'), bert_answer(?1, ?2, 'qa'), bert_ner(?2, ?3)",
    "SELECT entity, score, word, start, \"end\", \"index\" FROM bert_ner_each(?1 || ?2, 'ner')",
    "SELECT rank, answer, score, start, \"end\" FROM bert_answer_each(?1, ?2, ?3, 'qa')",
    /* Unloading a startup model would change what later inputs see. */
    "SELECT bert_unload(?1) WHERE ?1 IS NULL OR ?1 NOT IN ('default', 'mlm', 'pre', 'st', 'strict', 'three', 'ner', 'qa')",
};
#define N_STATEMENTS (sizeof statements / sizeof *statements)

/* Registered at startup and never dropped by an input. */
static const char *const models[][3] = {
    {"default", "build/models/bert-plain-f32", NULL},
    {"mlm", "build/models/mlm-tied-f32", NULL},
    {"pre", "build/models/pretrain-untied-bf16", NULL},
    {"st", "build/models/st-cls-relu", NULL},
    {"strict", "build/models/st-mean-f16", "{\"truncate\": false, \"max_length\": 16}"},
    {"three", "build/models/bert-plain-f32", "{\"max_length\": 3, \"pooling\": \"max\"}"},
    /* Short windows, so that short inputs already run several. */
    {"ner", "build/models/ner-short-f16", "{\"max_length\": 8, \"aggregation\": \"first\"}"},
    {"qa", "build/models/qa-short-bf16", "{\"max_length\": 24}"},
};
#define N_MODELS (sizeof models / sizeof *models)

static const char *const paths[] = {
    "build/models/bert-plain-f32", "build/models/mlm-tied-f32", "build/models/pretrain-untied-bf16",
    "build/models/st-mean-f16", "build/models/st-cls-relu", "tests", "build/models/none", "",
};
#define N_PATHS (sizeof paths / sizeof *paths)

typedef struct {
    sqlite3 *db;
    sqlite3_stmt *stmt[N_STATEMENTS];
    sqlite3_stmt *cleanup;
} state;

static state *st;

static void exec_or_die(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) fuzz_setup_failed(sql, err);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    st = calloc(1, sizeof *st);
    char *err = NULL;
    if (!st || sqlite3_open(":memory:", &st->db) != SQLITE_OK ||
        sqlite3_bert_init(st->db, &err, NULL) != SQLITE_OK)
        fuzz_setup_failed("cannot open a connection with the extension", err);
    char sql[512];
    for (size_t i = 0; i < N_MODELS; i++) {
        snprintf(sql, sizeof sql, "SELECT bert_load('%s', '%s', %s%s%s)", models[i][0], models[i][1],
                 models[i][2] ? "'" : "", models[i][2] ? models[i][2] : "NULL", models[i][2] ? "'" : "");
        exec_or_die(st->db, sql);
        /* Load the weights now, not inside the first input. */
        snprintf(sql, sizeof sql, "SELECT bert_embed('warm up', '%s')", models[i][0]);
        exec_or_die(st->db, sql);
    }
    for (size_t i = 0; i < N_STATEMENTS; i++)
        if (sqlite3_prepare_v2(st->db, statements[i], -1, &st->stmt[i], NULL) != SQLITE_OK)
            fuzz_setup_failed(statements[i], sqlite3_errmsg(st->db));
    if (sqlite3_prepare_v2(st->db, "SELECT bert_unload(name) FROM bert_models WHERE name NOT IN "
                                   "('default', 'mlm', 'pre', 'st', 'strict', 'three')",
                           -1, &st->cleanup, NULL) != SQLITE_OK)
        fuzz_setup_failed("cleanup", sqlite3_errmsg(st->db));
    return 0;
}

static uint64_t read_le(fuzz_reader *r, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)fuzz_byte(r) << (8 * i);
    return v;
}

static void bind_one(sqlite3_stmt *stmt, int i, fuzz_reader *r)
{
    uint8_t tag = fuzz_byte(r);
    size_t n;
    const uint8_t *p;
    switch (tag) {
    case 'i': sqlite3_bind_int64(stmt, i, (sqlite3_int64)read_le(r, 8)); break;
    case 'k': sqlite3_bind_int(stmt, i, (int8_t)fuzz_byte(r)); break;
    case 'r': {
        uint64_t bits = read_le(r, 8);
        double d;
        memcpy(&d, &bits, sizeof d);
        sqlite3_bind_double(stmt, i, d);
        break;
    }
    case 'm': sqlite3_bind_text(stmt, i, models[fuzz_byte(r) % N_MODELS][0], -1, SQLITE_STATIC); break;
    case 'p': sqlite3_bind_text(stmt, i, paths[fuzz_byte(r) % N_PATHS], -1, SQLITE_STATIC); break;
    case 't':
    case 'b':
    case 'T':
    case 'B':
        n = (tag == 't' || tag == 'b') ? fuzz_byte(r) : (size_t)read_le(r, 2);
        p = fuzz_bytes(r, &n);
        if (tag == 't' || tag == 'T') sqlite3_bind_text(stmt, i, (const char *)p, (int)n, SQLITE_TRANSIENT);
        else sqlite3_bind_blob(stmt, i, p, (int)n, SQLITE_TRANSIENT);
        break;
    default: sqlite3_bind_null(stmt, i); break;
    }
}

static void run(sqlite3_stmt *stmt)
{
    volatile size_t seen = 0;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        for (int c = 0; c < sqlite3_column_count(stmt); c++) {
            const unsigned char *v = sqlite3_column_text(stmt, c);
            int n = sqlite3_column_bytes(stmt, c);
            if (v && n > 0) seen += v[0] + v[n - 1];
        }
    }
    (void)seen;
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_reader r = {data, size};
    sqlite3_stmt *stmt = st->stmt[(uint8_t)(fuzz_byte(&r) - 'a') % N_STATEMENTS];
    int params = sqlite3_bind_parameter_count(stmt);
    for (int i = 1; i <= params; i++) bind_one(stmt, i, &r);
    run(stmt);
    run(st->cleanup);
    /* A "threads" option sets OpenBLAS's process-wide count; the fuzzer
     * keeps to one core. */
    openblas_set_num_threads(1);
    return 0;
}
