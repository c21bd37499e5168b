/*
 * test_examples.c - every file in sql/ runs in the sqlite3 shell, as users
 * run it, without an error, so that the examples never rot.  An example that
 * loads sqlite-vec (`.load ./vec0`) is skipped when ./vec0.so is absent
 * (`make sqlite-vec` fetches it); every other example always runs.
 */
#include "test.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void suite_examples(void)
{
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
        if (needs_vec0(names[i]) && !t_exists("vec0.so")) {
            t_skip("needs ./vec0.so: make sqlite-vec");
            free(names[i]);
            continue;
        }
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "sqlite3 -bail :memory: < 'sql/%s' > build/example.out 2>&1", names[i]);
        int status = system(cmd);
        char *out = t_read_file("build/example.out", NULL);
        T_CHECK(status == 0 && out && !strstr(out, "Error") && !strstr(out, "error"),
                "exit status %d, output:\n%s", status, out ? out : "(none)");
        free(out);
        free(names[i]);
    }
}
