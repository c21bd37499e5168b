/*
 * register.h - what extension.c registers on a connection.  Each returns an
 * SQLite result code; every function and table holds a reference to `c`.
 */
#ifndef BERT_REGISTER_H
#define BERT_REGISTER_H

#include "connection.h"

/* The scalar functions (functions.c). */
int bert_register_functions(sqlite3 *db, bert_connection *c);

/* The table-valued functions and the bert_models table (tables.c). */
int bert_register_tables(sqlite3 *db, bert_connection *c);

/* bert_train (train_table.c). */
int bert_register_train(sqlite3 *db, bert_connection *c);

#endif
