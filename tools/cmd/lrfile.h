/* SPDX-License-Identifier: MIT
 * lrfile.h -- the --lr-expect file of trainparity-run health: one line per
 * optimizer step, `STEP LR [LR...]` (one learning rate per param group),
 * `#` comments and blank lines ignored. */
#ifndef TP_TOOLS_CMD_LRFILE_H
#define TP_TOOLS_CMD_LRFILE_H

#include <jansson.h>
#include <stddef.h>

/* One line of the --lr-expect file: a step and its learning rates. */
typedef struct tpt_lr_line {
    long long step;
    size_t nlrs;
    double *lrs; /* malloc'ed */
    long line;   /* where it is in the file */
} tpt_lr_line;

typedef struct tpt_lr_table {
    tpt_lr_line *v;
    size_t n, cap;
} tpt_lr_table;

/* tpt_lr_read reads the file at path into *t (zeroed), sorted by step: 0,
 * or -1 after saying why, path:line (a file that cannot be read, a
 * malformed line, a step twice, no step at all). */
int tpt_lr_read(const char *path, tpt_lr_table *t);
/* tpt_lr_json is the table as [[step, [lr, ...]], ...], or NULL when out of
 * memory. */
json_t *tpt_lr_json(const tpt_lr_table *t);
/* tpt_lr_free releases t's lines and clears it. */
void tpt_lr_free(tpt_lr_table *t);

#endif
