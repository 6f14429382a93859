/* SPDX-License-Identifier: MIT
 * table.h -- a text table in aligned columns, built whole before it is
 * printed, for the views of query.h (internal to daemon/store/).
 *
 * Each column is as wide as its widest cell (and at least its minimum
 * width), counted in characters, and a cell's control characters are
 * escaped, so that every row's columns start at the same offsets whatever
 * the values. */
#ifndef TP_DAEMON_STORE_TABLE_H
#define TP_DAEMON_STORE_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/base/text.h"

#define TPD_TABLE_MAX_COLS 12

typedef struct tpd_table_line tpd_table_line; /* private to table.c */

/* A table: rows of ncols cells, and lines printed as they are between them.
 * Embedded by its caller; tpd_table_init before use, tpd_table_free after. */
typedef struct tpd_table {
    int ncols;
    size_t width[TPD_TABLE_MAX_COLS];
    unsigned right; /* bit i: column i is aligned right */
    const char *indent;
    tpd_str cells; /* every cell, cleaned, each NUL-terminated */
    tpd_table_line *lines;
    size_t n, cap; /* n: the rows and lines added */
    bool oom;
} tpd_table;

/* tpd_table_init makes t an empty table of ncols (at most
 * TPD_TABLE_MAX_COLS) columns, column i at least minw[i] characters wide
 * and aligned right when bit i of right is set, each row printed after
 * indent (static; not copied). */
void tpd_table_init(tpd_table *t, int ncols, const int *minw, unsigned right, const char *indent);

/* tpd_table_free releases what t holds. */
void tpd_table_free(tpd_table *t);

/* tpd_table_text adds a line printed as it is (cleaned) between rows. */
void tpd_table_text(tpd_table *t, const char *line);

/* tpd_table_row adds a row of t->ncols cells (copied, cleaned). */
void tpd_table_row(tpd_table *t, const char *const *cells);

/* tpd_table_print appends t to out: one space between columns, the last
 * one not padded on the right.  When building t ran out of memory it sets
 * out->oom instead. */
void tpd_table_print(const tpd_table *t, tpd_str *out);

#endif
