/* SPDX-License-Identifier: MIT
 * table.c -- text tables in aligned columns (table.h).
 *
 * A table is built whole before it is printed: the cells go, cleaned and
 * NUL-terminated, into one buffer and each line records where its first
 * cell starts, so that the widths are known, in characters, when the
 * first row is printed. */
#include <stdlib.h>
#include <string.h>

#include "daemon/store/table.h"

struct tpd_table_line {
    char kind;  /* 'r' a row of ncols cells, 't' a line printed as it is */
    size_t off; /* its first cell in cells */
};

void tpd_table_init(tpd_table *t, int ncols, const int *minw, unsigned right, const char *indent)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
    for (int i = 0; i < ncols; i++) t->width[i] = (size_t)minw[i];
    t->right = right;
    t->indent = indent;
    tpd_str_init(&t->cells);
}

void tpd_table_free(tpd_table *t)
{
    tpd_str_free(&t->cells);
    free(t->lines);
}

/* chars counts the characters of UTF-8 text s (n bytes). */
static size_t chars(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xc0) != 0x80;
    return c;
}

/* cell_put appends s to t's cells as one line of valid UTF-8 (control
 * characters escaped, \n and \t as such) and returns its width. */
static size_t cell_put(tpd_table *t, const char *s)
{
    size_t start = t->cells.len, n = strlen(s), run = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\n' && s[i] != '\t') continue;
        tpd_str_utf8(&t->cells, s + run, i - run);
        tpd_str_puts(&t->cells, s[i] == '\n' ? "\\n" : "\\t");
        run = i + 1;
    }
    tpd_str_utf8(&t->cells, s + run, n - run);
    n = t->cells.len - start;
    tpd_str_append(&t->cells, "", 1);
    return chars(t->cells.s ? t->cells.s + start : "", t->cells.s ? n : 0);
}

/* table_line starts a line of kind at the end of t's cells; false (t->oom
 * set) when there is no memory for it. */
static bool table_line(tpd_table *t, char kind)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        tpd_table_line *l = realloc(t->lines, cap * sizeof *l);
        if (l == NULL) {
            t->oom = true;
            return false;
        }
        t->lines = l;
        t->cap = cap;
    }
    t->lines[t->n].kind = kind;
    t->lines[t->n++].off = t->cells.len;
    return true;
}

void tpd_table_text(tpd_table *t, const char *line)
{
    if (table_line(t, 't')) cell_put(t, line);
}

void tpd_table_row(tpd_table *t, const char *const *cells)
{
    if (!table_line(t, 'r')) return;
    for (int i = 0; i < t->ncols; i++) {
        size_t w = cell_put(t, cells[i]);
        if (w > t->width[i]) t->width[i] = w;
    }
}

/* pad appends n spaces to out. */
static void pad(tpd_str *out, size_t n)
{
    static const char spaces[] = "                                ";
    while (n > 0) {
        size_t k = n < sizeof spaces - 1 ? n : sizeof spaces - 1;
        tpd_str_append(out, spaces, k);
        n -= k;
    }
}

void tpd_table_print(const tpd_table *t, tpd_str *out)
{
    if (t->cells.oom || t->oom) {
        out->oom = 1;
        return;
    }
    for (size_t l = 0; l < t->n; l++) {
        const char *c = t->cells.s + t->lines[l].off;
        if (t->lines[l].kind == 't') {
            tpd_str_printf(out, "%s\n", c);
            continue;
        }
        tpd_str_puts(out, t->indent);
        for (int i = 0; i < t->ncols; i++) {
            size_t n = strlen(c), w = chars(c, n);
            bool last = i == t->ncols - 1;
            if (t->right & (1u << i)) pad(out, t->width[i] - w);
            tpd_str_append(out, c, n);
            if (!(t->right & (1u << i)) && !last) pad(out, t->width[i] - w);
            if (!last) tpd_str_puts(out, " ");
            c += n + 1;
        }
        tpd_str_puts(out, "\n");
    }
}
