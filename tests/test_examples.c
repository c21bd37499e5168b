/*
 * test_examples.c - every file in sql/ and every ```sql snippet of README.md
 * and of sql/README.md (the SQL reference) runs in the sqlite3 shell, as
 * users run them, without an error, so that the examples never rot.
 * Whatever uses sqlite-vec (`.load ./vec0`, a `vec0` table) is skipped when
 * ./vec0.so is absent (`make sqlite-vec` fetches it); everything else
 * always runs.
 *
 * A snippet runs in build/readme/, a folder where the checkpoints
 * the documents name (all-MiniLM-L6-v2, bert-base-NER ...) are the generated
 * test models of the same kind (make test builds them in build/models/),
 * after a prelude that does what the documents' text says came before: the
 * extension loaded, the models it registered earlier ('minilm', 'reranker',
 * 'default'), :query bound, and the tables it talks about (notes, docs,
 * documents, passages, contracts, chunks, vectors) holding a few rows,
 * unless the snippet creates them itself.
 */
#include "test.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 1 when the example loads sqlite-vec's extension. */
static int needs_vec0(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "sql/%s", name);
    char *text = t_read_file(path, NULL);
    int needs = text && strstr(text, "\n.load ./vec0") != NULL;
    free(text);
    return needs;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void snippet_folder(void);
static void document_snippets(const char *path, int at_least);

void suite_examples(void)
{
    snippet_folder();
    /* The reference holds most snippets: they moved there from README.md,
     * and each must still run as it did there. */
    document_snippets("README.md", 2);
    document_snippets("sql/README.md", 15);
    DIR *dir = opendir("sql");
    t_case("sql/ holds examples");
    if (!T_CHECK(dir != NULL, "cannot open sql/")) return;
    char *names[256];
    int n = 0;
    struct dirent *d;
    while ((d = readdir(dir)) != NULL && n < 256) {
        size_t len = strlen(d->d_name);
        if (len > 4 && strcmp(d->d_name + len - 4, ".sql") == 0) names[n++] = strdup(d->d_name);
    }
    closedir(dir);
    T_CHECK(n > 0, "no .sql files in sql/");
    qsort(names, (size_t)n, sizeof *names, by_name);

    for (int i = 0; i < n; i++) {
        char title[512];
        snprintf(title, sizeof title, "sql/%s runs in the sqlite3 shell", names[i]);
        t_case(title);
        if (needs_vec0(names[i])) {
            /* Where ./vec0.so is missing it stops at once, naming the command that fetches it. */
            char missing[768];
            snprintf(missing, sizeof missing, "mkdir -p build/no-vec0 && cd build/no-vec0 && "
                     "ln -sfn ../../sql sql && sqlite3 -bail :memory: < 'sql/%s' > ../no-vec0.out 2>&1", names[i]);
            int rc = system(missing);
            char *said = t_read_file("build/no-vec0.out", NULL);
            T_CHECK(rc != 0 && said && strstr(said, "make sqlite-vec"),
                    "without ./vec0.so: exit status %d, and the error does not name make sqlite-vec:\n%s", rc,
                    said ? said : "(none)");
            free(said);
        }
        if (needs_vec0(names[i]) && !t_exists("vec0.so")) {
            t_skip("needs ./vec0.so: make sqlite-vec");
            free(names[i]);
            continue;
        }
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "sql/%s", names[i]);
        char *text = t_read_file(cmd, NULL);
        if (text && (strstr(text, "build/models/") || strstr(text, ".load ./vec0"))) {
            /* What it needs beyond `make` is said where users start reading. */
            const char *needs = strstr(text, "-- Needs ");
            int line = 1;
            for (const char *p = text; needs && p < needs; p++) line += *p == '\n';
            T_CHECK(needs && line <= 5 && strstr(needs, "make examples"),
                    "sql/%s needs generated models or sqlite-vec: its first lines must say so "
                    "(\"-- Needs ... make examples\")", names[i]);
        }
        free(text);
        snprintf(cmd, sizeof cmd, "sqlite3 -bail :memory: < 'sql/%s' > build/example.out 2>&1", names[i]);
        int status = system(cmd);
        char *out = t_read_file("build/example.out", NULL);
        T_CHECK(status == 0 && out && !strstr(out, "Error") && !strstr(out, "error"),
                "exit status %d, output:\n%s", status, out ? out : "(none)");
        free(out);
        free(names[i]);
    }
}

/* ---- the documents' SQL snippets -------------------------------------------- */

#define README_DIR "build/readme"

/* The checkpoints the documents name, and the generated models that stand
 * for them: the same architecture, head and pooling. */
static const char *const stand_ins[][2] = {
    {"all-MiniLM-L6-v2", "../models/minilm-f16"},
    {"bert-base-uncased", "../models/mlm-tied-f32"},
    {"bge-small-en-v1.5", "../models/st-cls-relu"},
    {"distilbert-base-uncased-finetuned-sst-2-english", "../models/distil-cls"},
    {"ms-marco-MiniLM-L-6-v2", "../models/ce-sigmoid"},
    {"bert-base-NER", "../models/ner-conll-f32"},
    {"bert-base-cased-squad2", "../models/qa-f32"},
    {"all-mpnet-base-v2", "../models/mpnet-st"},
    {"colbertv2.0", "../models/colbert-dense"},
    {"roberta-base", "../models/roberta-mlm"},
    {"multilingual-e5-small", "../models/xlmr-e5"},
    {"nli-distilroberta-base", "../models/nli-roberta"},
    {"bert.so", "../../bert.so"},
    {"vec0.so", "../../vec0.so"},
    {"model", "../../model"},
};

/* The tables the documents' text talks about, as a snippet finds them: each
 * made unless the snippet itself holds one of its skip_if texts (it creates
 * the table, or adds the column). */
static const struct { const char *skip_if[2], *sql; } fixtures[] = {
    {{"CREATE TABLE documents(", NULL},
     "CREATE TABLE documents(id INTEGER PRIMARY KEY, title TEXT, body TEXT);\n"
     "INSERT INTO documents(title, body) VALUES\n"
     "  ('Rome', 'The Roman empire rose and fell over many centuries. Its legions marched far.'),\n"
     "  ('Dogs', 'A puppy needs patience, training and walks. Dogs bark at night.'),\n"
     "  ('Bread', 'Sourdough bread needs a starter, flour, water and time.');\n"},
    {{"CREATE TABLE chunks(", NULL},
     "CREATE TABLE chunks(id INTEGER PRIMARY KEY, doc_id INTEGER NOT NULL,\n"
     "  chunk_index INTEGER, start INTEGER, \"end\" INTEGER, text TEXT);\n"
     "INSERT INTO chunks(doc_id, chunk_index, start, \"end\", text)\n"
     "SELECT d.id, c.chunk_index, c.start, c.\"end\", c.text\n"
     "FROM documents AS d, bert_chunks(d.body, 8, 2, 'minilm') AS c;\n"},
    /* "Without an index": the passages' vectors in a column of chunks. */
    {{"CREATE TABLE chunks(", "ADD COLUMN embedding"},
     "ALTER TABLE chunks ADD COLUMN embedding BLOB;\n"
     "UPDATE chunks SET embedding = bert_embed(text, 'minilm');\n"},
    {{"CREATE TABLE notes(", NULL},
     "CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT NOT NULL, embedding BLOB);\n"
     "INSERT INTO notes(body) VALUES ('Walk the new puppy'), ('Buy bread'), ('Read about Rome');\n"
     "UPDATE notes SET embedding = bert_embed(body);\n"},
    {{"CREATE TABLE passages(", NULL},
     "CREATE TABLE passages(id INTEGER PRIMARY KEY, body TEXT NOT NULL, embedding BLOB);\n"
     "INSERT INTO passages(body) VALUES ('The whale sounded.'), ('Congress passed the bill.');\n"
     "UPDATE passages SET embedding = bert_embed(body);\n"},
    {{"CREATE TABLE docs(", NULL},
     "CREATE TABLE docs(id INTEGER PRIMARY KEY, body TEXT NOT NULL);\n"
     "INSERT INTO docs(body) VALUES ('Angela Merkel met Emmanuel Macron in Paris.'), ('Ancient Rome.');\n"},
    {{"CREATE TABLE contracts(", NULL},
     "CREATE TABLE contracts(id INTEGER PRIMARY KEY, body TEXT);\n"
     "INSERT INTO contracts(body) VALUES ('Acme Corporation signed the contract in Geneva.');\n"},
    {{"CREATE TABLE vectors(", NULL}, "CREATE TABLE vectors(text TEXT, embedding BLOB);\n"},
};

/* 1 when the snippet makes fixture i itself. */
static int makes_itself(const char *sql, size_t i)
{
    for (int k = 0; k < 2; k++)
        if (fixtures[i].skip_if[k] && strstr(sql, fixtures[i].skip_if[k])) return 1;
    return 0;
}

/* Writes the prelude and the snippet to README_DIR/snippet.sql. */
static int write_snippet(const char *sql, size_t len, int with_vec)
{
    FILE *f = fopen(README_DIR "/snippet.sql", "wb");
    if (!f) return -1;
    fprintf(f, ".bail on\n%s.load ./bert\n.parameter set :query 'ancient Rome'\n", with_vec ? ".load ./vec0\n" : "");
    fprintf(f, "SELECT bert_load('default', 'model/demo'), bert_load('minilm', 'all-MiniLM-L6-v2'),\n"
               "       bert_load('reranker', 'model/demo-reranker');\n");
    for (size_t i = 0; i < sizeof fixtures / sizeof *fixtures; i++)
        if (!makes_itself(sql, i)) fputs(fixtures[i].sql, f);
    fprintf(f, ".print ---- the snippet\n");
    fwrite(sql, 1, len, f);
    return fclose(f);
}

/* Makes build/readme/, where every snippet runs: the stand-ins linked in. */
static void snippet_folder(void)
{
    t_case("the folder the snippets run in is made");
    mkdir(README_DIR, 0755);
    for (size_t i = 0; i < sizeof stand_ins / sizeof *stand_ins; i++) {
        char path[256];
        snprintf(path, sizeof path, README_DIR "/%s", stand_ins[i][0]);
        remove(path);
        T_CHECK(symlink(stand_ins[i][1], path) == 0, "cannot link %s", path);
    }
}

/* Runs every ```sql snippet of the markdown file `path`; fails when it has
 * fewer than `at_least`, so that snippets cannot vanish unnoticed (a fence
 * mistyped, a section cut). */
static void document_snippets(const char *path, int at_least)
{
    char title[160];
    snprintf(title, sizeof title, "%s's SQL snippets are found", path);
    t_case(title);
    char *doc = t_read_file(path, NULL);
    if (!T_CHECK(doc, "cannot read %s", path)) return;
    int n = 0, line = 0;
    /* Line by line: a snippet may be indented (in a list item), its closing
     * fence as much. */
    for (const char *p = doc; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
        line++;
        const char *fence = p + strspn(p, " ");
        if (strncmp(fence, "```sql\n", 7) != 0) continue;
        const char *start = fence + 7, *end = start;
        while (*end && strncmp(end + strspn(end, " "), "```", 3) != 0) end = strchr(end, '\n') ? strchr(end, '\n') + 1 : end + strlen(end);
        if (!T_CHECK(*end, "%s line %d: an SQL snippet without its closing ```", path, line)) break;
        end--;   /* the snippet's last newline */
        n++;
        snprintf(title, sizeof title, "%s's SQL snippet at line %d runs", path, line);
        t_case(title);
        char *sql = strndup(start, (size_t)(end - start) + 1);
        if (!T_CHECK(sql, "out of memory")) break;
        int with_vec = strstr(sql, "vec0") != NULL;
        if (with_vec && !t_exists("vec0.so")) {
            t_skip("uses sqlite-vec: make sqlite-vec");
        } else if (T_CHECK(write_snippet(sql, strlen(sql), with_vec) == 0, "cannot write the snippet")) {
            int status = system("cd " README_DIR " && sqlite3 -bail :memory: < snippet.sql > snippet.out 2>&1");
            char *out = t_read_file(README_DIR "/snippet.out", NULL);
            T_CHECK(status == 0 && out && !strstr(out, "Error") && !strstr(out, "error"),
                    "exit status %d; the snippet:\n%s\noutput:\n%s", status, sql, out ? out : "(none)");
            free(out);
        }
        free(sql);
    }
    free(doc);
    snprintf(title, sizeof title, "%s has SQL snippets", path);
    t_case(title);
    T_CHECK(n >= at_least, "only %d ```sql snippets found in %s, expected at least %d", n, path, at_least);
}
