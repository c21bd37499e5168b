/*
 * test_docs.c - the documents hold together: every relative link of every
 * markdown file of the project (README.md, sql/README.md, tests/README.md,
 * tests/bench/README.md, ext/README.md and its folders', model/README.md ...)
 * reaches an existing file, and the heading its #anchor names; and README.md's
 * table of functions, like the SQL reference's, has one line for every
 * function the extension registers.  The documents were split into linked
 * files, and a renamed heading or a moved file must fail here, not in a
 * reader's browser.
 */
#include "test.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- reading markdown -------------------------------------------------------- */

/* The lines of a markdown file that are text, not code: fenced blocks (a
 * line whose first non-blank characters are ``` or ~~~ opens or closes one,
 * indented in list items too) are blanked, and so are inline code spans,
 * which may run over a line end but not over a blank line.  What is left is
 * where headings and links are; a "# comment" in a shell block or a
 * `[x](y)` in code is neither. */
static char *markdown_text(const char *path)
{
    char *text = t_read_file(path, NULL);
    if (!text) return NULL;
    int in_fence = 0, in_code = 0;
    for (char *line = text; *line;) {
        char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        const char *first = line + strspn(line, " ");
        if (strncmp(first, "```", 3) == 0 || strncmp(first, "~~~", 3) == 0) {
            in_fence = !in_fence;
            memset(line, ' ', len);
        } else if (in_fence) {
            memset(line, ' ', len);
        } else {
            if ((size_t)(first - line) == len) in_code = 0;   /* a blank line ends a paragraph */
            for (size_t i = 0; i < len; i++) {
                if (line[i] == '`') {
                    in_code = !in_code;
                    line[i] = ' ';
                } else if (in_code) {
                    line[i] = ' ';
                }
            }
        }
        line = eol ? eol + 1 : line + len;
    }
    return text;
}

/* The anchor GitHub gives a heading's text: lowercased; every character that
 * is not a letter, digit, space, hyphen or underscore removed (bytes of
 * non-ASCII characters are kept, as GitHub keeps non-ASCII letters; no
 * heading here has non-ASCII punctuation); each space a hyphen. */
static void anchor_of(const char *heading, size_t len, char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n + 1 < cap; i++) {
        unsigned char c = (unsigned char)heading[i];
        if (c == ' ') out[n++] = '-';
        else if (isalnum(c) || c == '-' || c == '_' || c >= 0x80) out[n++] = (char)tolower(c);
    }
    out[n] = '\0';
}

/* 1 when the markdown file at `path` has a heading whose anchor is
 * `anchor`; a repeated heading's anchors are NAME, NAME-1, NAME-2 ... */
static int has_anchor(const char *path, const char *anchor)
{
    char *text = markdown_text(path);
    if (!text) return 0;
    char seen[256][160];
    int counts[256], n_seen = 0, found = 0;
    for (char *line = text; *line && !found;) {
        char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        size_t hashes = strspn(line, "#");
        if (hashes >= 1 && hashes <= 6 && hashes < len && line[hashes] == ' ') {
            const char *h = line + hashes + 1;
            size_t hlen = len - hashes - 1;
            while (hlen > 0 && (h[hlen - 1] == ' ' || h[hlen - 1] == '#')) hlen--;   /* closing #s */
            char name[160];
            anchor_of(h, hlen, name, sizeof name);
            int k = 0;
            while (k < n_seen && strcmp(seen[k], name) != 0) k++;
            char full[176];
            if (k < n_seen) {
                snprintf(full, sizeof full, "%s-%d", name, counts[k]++);
            } else {
                snprintf(full, sizeof full, "%s", name);
                if (n_seen < 256) {
                    snprintf(seen[n_seen], sizeof seen[n_seen], "%s", name);
                    counts[n_seen++] = 1;
                }
            }
            found = strcmp(full, anchor) == 0;
        }
        line = eol ? eol + 1 : line + len;
    }
    free(text);
    return found;
}

/* ---- the links --------------------------------------------------------------- */

/* Checks every relative link `[text](target)` of the markdown file `path`:
 * the target (relative to the file's folder) exists, and when it names an
 * #anchor of a markdown file, that file has the heading.  Web addresses are
 * not fetched.  Adds the links checked to *links. */
static void check_links(const char *path, int *links)
{
    char *text = markdown_text(path);
    if (!T_CHECK(text, "cannot read %s", path)) return;
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) slash[1] = '\0';
    else dir[0] = '\0';
    int line = 1;
    for (const char *p = text; *p; p++) {
        if (*p == '\n') line++;
        if (p[0] != ']' || p[1] != '(') continue;
        const char *start = p + 2, *end = strchr(start, ')');
        const char *nl = strchr(start, '\n');
        if (!end || (nl && nl < end)) continue;   /* not a link: "](" inside prose */
        char target[512];
        snprintf(target, sizeof target, "%.*s", (int)(end - start), start);
        if (strstr(target, "://") || strncmp(target, "mailto:", 7) == 0) continue;
        (*links)++;
        char *hash = strchr(target, '#');
        if (hash) *hash++ = '\0';
        char file[1024];
        if (target[0]) snprintf(file, sizeof file, "%s%s", dir, target);
        else snprintf(file, sizeof file, "%s", path);   /* #anchor: this file */
        if (!T_CHECK(t_exists(file), "%s line %d: the link to %s names no file (%s)", path, line, target, file))
            continue;
        size_t flen = strlen(file);
        if (hash && *hash && flen > 3 && strcmp(file + flen - 3, ".md") == 0)
            T_CHECK(has_anchor(file, hash), "%s line %d: %s has no heading whose anchor is #%s", path, line,
                    file, hash);
    }
    free(text);
}

/* Every *.md file under `dir`, but in hidden folders and in what builds and
 * package installs write (build/, node_modules/), into names[]. */
static void find_markdown(const char *dir, char **names, int *n, int cap)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "build") == 0 || strcmp(e->d_name, "node_modules") == 0)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s%s%s", strcmp(dir, ".") == 0 ? "" : dir, strcmp(dir, ".") == 0 ? "" : "/",
                 e->d_name);
        struct stat st;
        if (stat(path, &st) != 0) continue;
        size_t len = strlen(path);
        if (S_ISDIR(st.st_mode)) find_markdown(path, names, n, cap);
        else if (len > 3 && strcmp(path + len - 3, ".md") == 0 && *n < cap) names[(*n)++] = strdup(path);
    }
    closedir(d);
}

static void links_resolve(void)
{
    t_case("every relative link of the project's markdown files resolves");
    char *names[128];
    int n = 0, links = 0, has_readme = 0;
    find_markdown(".", names, &n, 128);
    for (int i = 0; i < n; i++) {
        check_links(names[i], &links);
        has_readme |= strcmp(names[i], "README.md") == 0;
        free(names[i]);
    }
    /* A walk that found nothing would pass every check it did not make. */
    T_CHECK(has_readme && links >= 50, "found %d markdown files (README.md %s) and %d relative links", n,
            has_readme ? "among them" : "missing", links);
}

/* ---- the tables of functions --------------------------------------------------- */

/* How many lines of `doc` are a table row for `name`: "| `name(" or "| `name`". */
static int rows_for(const char *doc, const char *name)
{
    char call[96], table[96];
    snprintf(call, sizeof call, "| `%s(", name);
    snprintf(table, sizeof table, "| `%s`", name);
    int rows = 0;
    for (const char *p = doc; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        rows += strncmp(p, call, strlen(call)) == 0 || strncmp(p, table, strlen(table)) == 0;
    return rows;
}

/* Checks that `path` has exactly one table row for every function and table
 * function that bert_functions lists, and rows for nothing else. */
static void function_table(sqlite3 *db, const char *path)
{
    char title[160];
    snprintf(title, sizeof title, "%s lists every SQL function once", path);
    t_case(title);
    char *doc = t_read_file(path, NULL);
    sqlite3_stmt *stmt = NULL;
    if (!T_CHECK(doc, "cannot read %s", path) ||
        !T_CHECK(sqlite3_prepare_v2(db, "SELECT name FROM bert_functions", -1, &stmt, NULL) == SQLITE_OK,
                 "bert_functions: %s", sqlite3_errmsg(db))) {
        free(doc);
        return;
    }
    int functions = 0, rows = 0;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(stmt, 0);
        int r = rows_for(doc, name);
        T_CHECK(r == 1, "%s: %d table rows for %s, not one", path, r, name);
        functions++;
        rows += r;
    }
    sqlite3_finalize(stmt);
    /* A row for a function the extension does not register (renamed, dropped). */
    int all_rows = 0;
    for (const char *p = doc; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        all_rows += strncmp(p, "| `bert_", 8) == 0;
    T_CHECK(functions > 20 && all_rows == rows, "%s: %d functions registered, %d rows name them, %d rows name a bert_ "
            "function", path, functions, rows, all_rows);
    free(doc);
}

void suite_docs(void)
{
    links_resolve();
    sqlite3 *db = t_open();
    function_table(db, "README.md");
    function_table(db, "sql/README.md");
    sqlite3_close(db);
}
