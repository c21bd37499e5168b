/*
 * node.c - one dqlite node (libdqlite, Debian's libdqlite-dev) for
 * tests/dqlite/run.sh.
 *
 *   node ID ADDRESS DATA_DIR [--with-bert]
 *
 * With --with-bert, every SQLite connection the node opens gets the
 * extension's functions (sqlite3_auto_extension with the statically linked
 * libsqlite_bert.a): dqlite has no way to load an extension at run time, so
 * a node that should run bert_embed must be a program that registers it.
 * The default model is the directory in BERT_MODEL.  The node runs until
 * SIGTERM or SIGINT.
 */
#include <dqlite.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sqlite_bert.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: node ID ADDRESS DATA_DIR [--with-bert]\n");
        return 2;
    }
    if (argc > 4 && strcmp(argv[4], "--with-bert") == 0 &&
        sqlite3_auto_extension((void (*)(void))sqlite3_bert_init) != SQLITE_OK) {
        fprintf(stderr, "node: cannot register the extension\n");
        return 1;
    }
    dqlite_node *node = NULL;
    int rc = dqlite_node_create(strtoull(argv[1], NULL, 10), argv[2], argv[3], &node);
    if (rc == 0) rc = dqlite_node_set_bind_address(node, argv[2]);
    if (rc == 0) rc = dqlite_node_start(node);
    if (rc != 0) {
        fprintf(stderr, "node %s: %s\n", argv[1], node ? dqlite_node_errmsg(node) : "cannot create");
        dqlite_node_destroy(node);
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    while (!stop) pause();
    dqlite_node_stop(node);
    dqlite_node_destroy(node);
    return 0;
}
