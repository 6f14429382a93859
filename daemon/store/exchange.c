/* SPDX-License-Identifier: MIT
 * exchange.c -- the table of exported columns, the checksum, digest sets and
 * the helpers that writing (export.c) and reading (import.c) an export
 * share (exchange.h, which holds the design). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/store/exchange.h"
#include "proto/event.h"
#include "proto/mp.h"

/* ---- the exported columns ---- */

#define INT  SQLITE_INTEGER
#define TEXT SQLITE_TEXT
#define BLOB SQLITE_BLOB

static const tpd_xcol run_cols[] = {
    {"id", INT, TPD_XC_NN | TPD_XC_ID}, {"name", TEXT, 0},
    {"check_kind", TEXT, TPD_XC_NN},    {"params", TEXT, 0},
    {"created_ns", INT, TPD_XC_NN},
};
static const tpd_xcol exec_cols[] = {
    {"id", INT, TPD_XC_NN | TPD_XC_ID},
    {"run_id", INT, TPD_XC_NN | TPD_XC_RUN},
    {"role", TEXT, 0},
    {"argv", TEXT, 0},
    {"created_ns", INT, TPD_XC_NN},
    {"finished_ns", INT, 0},
    {"exit_status", INT, 0},
    {"exit_signal", INT, 0},
    {"key", TEXT, TPD_XC_SECRET},
};
static const tpd_xcol proc_cols[] = {
    {"id", INT, TPD_XC_NN | TPD_XC_ID},
    {"exec_id", INT, TPD_XC_NN | TPD_XC_EXEC},
    {"pid", INT, TPD_XC_NN},
    {"ppid", INT, 0},
    {"rank", INT, 0},
    {"world", INT, 0},
    {"local_rank", INT, 0},
    {"role", TEXT, 0},
    {"agent", TEXT, 0},
    {"python", TEXT, 0},
    {"torch", TEXT, 0},
    {"numpy", TEXT, 0},
    {"argv", TEXT, 0},
    {"cwd", TEXT, 0},
    {"exe", TEXT, 0},
    {"capture", TEXT, 0},
    {"cxx", TEXT, 0},
    {"interrupt_at", INT, 0},
    {"hello_ns", INT, 0},
    {"bye_ns", INT, 0},
    {"bye_reason", TEXT, 0},
    {"bye_code", INT, 0},
    {"bye_exc", TEXT, 0},
    {"spooled", INT, 0},
    {"sent", INT, 0},
    {"dropped", INT, 0},
    {"errors", INT, 0},
    {"nevents", INT, TPD_XC_NN},
    {"max_seq", INT, 0},
};
static const tpd_xcol event_cols[] = {
    {"id", INT, TPD_XC_NN | TPD_XC_ID},
    {"exec_id", INT, TPD_XC_NN | TPD_XC_EXEC},
    {"pid", INT, TPD_XC_NN},
    {"seq", INT, TPD_XC_NN},
    {"time_ns", INT, TPD_XC_NN},
    {"step", INT, TPD_XC_NN},
    {"kind", TEXT, TPD_XC_NN},
    {"body", BLOB, TPD_XC_NN},
};
static const tpd_xcol gap_cols[] = {
    {"exec_id", INT, TPD_XC_NN | TPD_XC_EXEC},
    {"pid", INT, TPD_XC_NN},
    {"first_seq", INT, TPD_XC_NN},
    {"last_seq", INT, TPD_XC_NN},
};
static const tpd_xcol verdict_cols[] = {
    {"id", INT, TPD_XC_NN | TPD_XC_ID},
    {"run_id", INT, TPD_XC_NN | TPD_XC_RUN},
    {"check_kind", TEXT, TPD_XC_NN},
    {"outcome", TEXT, TPD_XC_NN},
    {"step", INT, 0},
    {"path", TEXT, 0},
    {"report", TEXT, TPD_XC_REPORT},
    {"text", TEXT, 0},
    {"created_ns", INT, TPD_XC_NN},
};
static const tpd_xcol blob_cols[] = {
    {"digest", BLOB, TPD_XC_NN},
    {"size", INT, TPD_XC_NN},
    {"dtype", TEXT, 0},
    {"shape", TEXT, 0},
};
static const tpd_xcol bytes_cols[] = {
    {"digest", BLOB, TPD_XC_NN},
    {"bytes", BLOB, TPD_XC_NN},
};

#define IN_RUN "exec_id IN (SELECT id FROM executions WHERE run_id = ?1)"

#define TABLE(n, c, scope, order, import)                                                          \
    {                                                                                              \
        n, c, (int)(sizeof c / sizeof c[0]), scope, order, import                                  \
    }
const tpd_xtable tpd_xtables[TPD_XT_COUNT] = {
    [TPD_XT_RUNS] = TABLE("runs", run_cols, "id = ?1", "id", ""),
    [TPD_XT_EXECS] = TABLE("executions", exec_cols, "run_id = ?1", "id", ""),
    [TPD_XT_PROCS] = TABLE("processes", proc_cols, IN_RUN, "id", ""),
    [TPD_XT_EVENTS] = TABLE("events", event_cols, IN_RUN, "id", ""),
    [TPD_XT_GAPS] = TABLE("gaps", gap_cols, IN_RUN, "rowid", ""),
    [TPD_XT_VERDICTS] = TABLE("verdicts", verdict_cols, "run_id = ?1", "id", ""),
    [TPD_XT_BLOBS] =
        TABLE("blobs", blob_cols, "digest = ?1", "digest", " ON CONFLICT(digest) DO NOTHING"),
    [TPD_XT_BYTES] = TABLE("blob_bytes", bytes_cols, NULL, "digest", NULL),
};

/* ---- small helpers ---- */

tp_err tpd_xsay(char *why, size_t whylen, tp_err e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return e;
}

void tpd_xhex16(char out[33], const uint8_t d[16])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[32] = '\0';
}

static const char *type_name(int t)
{
    switch (t) {
    case SQLITE_INTEGER:
        return "an integer";
    case SQLITE_FLOAT:
        return "a real";
    case SQLITE_TEXT:
        return "text";
    case SQLITE_BLOB:
        return "a blob";
    default:
        return "null";
    }
}

void tpd_xselect_sql(tpd_str *q, const tpd_xtable *t, bool scoped)
{
    tpd_str_reset(q);
    tpd_str_puts(q, "SELECT ");
    for (int i = 0; i < t->ncols; i++)
        tpd_str_printf(q, "%s%s", i ? ", " : "",
                       scoped && (t->cols[i].flags & TPD_XC_SECRET) ? "NULL" : t->cols[i].name);
    tpd_str_printf(q, " FROM %s", t->name);
    if (scoped) tpd_str_printf(q, " WHERE %s", t->scope);
    tpd_str_printf(q, " ORDER BY %s", t->order);
}

void tpd_xinsert_sql(tpd_str *q, const tpd_xtable *t, bool all)
{
    int n = 0;
    tpd_str_reset(q);
    tpd_str_printf(q, "INSERT INTO %s(", t->name);
    for (int i = 0; i < t->ncols; i++)
        if (all || !(t->cols[i].flags & TPD_XC_ID))
            tpd_str_printf(q, "%s%s", n++ ? ", " : "", t->cols[i].name);
    tpd_str_puts(q, ") VALUES(");
    for (int i = 0; i < n; i++) tpd_str_printf(q, "%s?%d", i ? ", " : "", i + 1);
    tpd_str_puts(q, ")");
    if (!all && t->import) tpd_str_puts(q, t->import);
}

/* ---- the checksum ---- */

static void hash_u64(XXH3_state_t *h, char tag, uint64_t v)
{
    uint8_t b[9];
    b[0] = (uint8_t)tag;
    for (int i = 0; i < 8; i++) b[1 + i] = (uint8_t)(v >> (8 * i));
    XXH3_128bits_update(h, b, sizeof b);
}

void tpd_xhash_bytes(XXH3_state_t *h, char tag, const void *p, size_t n)
{
    hash_u64(h, tag, n);
    if (n) XXH3_128bits_update(h, p, n);
}

void tpd_xhash_col(XXH3_state_t *h, sqlite3_stmt *st, int i)
{
    const void *p;
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
        hash_u64(h, 'i', (uint64_t)sqlite3_column_int64(st, i));
        break;
    case SQLITE_TEXT:
        p = sqlite3_column_text(st, i);
        tpd_xhash_bytes(h, 't', p, (size_t)sqlite3_column_bytes(st, i));
        break;
    case SQLITE_BLOB:
        p = sqlite3_column_blob(st, i);
        tpd_xhash_bytes(h, 'b', p, (size_t)sqlite3_column_bytes(st, i));
        break;
    case SQLITE_FLOAT: {
        double d = sqlite3_column_double(st, i);
        uint64_t u;
        memcpy(&u, &d, sizeof u);
        hash_u64(h, 'f', u);
        break;
    }
    default:
        hash_u64(h, 'n', 0);
    }
}

void tpd_xhash_table_begin(XXH3_state_t *h, const tpd_xtable *t)
{
    XXH3_128bits_update(h, t->name, strlen(t->name) + 1);
}

void tpd_xhash_table_end(XXH3_state_t *h, uint64_t rows)
{
    hash_u64(h, 'E', rows);
}

void tpd_xhash_final(XXH3_state_t *h, uint8_t out[16])
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(h));
    memcpy(out, c.digest, 16);
}

tp_err tpd_xcheck_types(const tpd_xtable *t, sqlite3_stmt *st, const char *what, char *why,
                        size_t whylen)
{
    for (int i = 0; i < t->ncols; i++) {
        const tpd_xcol *c = &t->cols[i];
        int ty = sqlite3_column_type(st, i);
        if (ty == SQLITE_NULL) {
            if (c->flags & TPD_XC_NN)
                return tpd_xsay(why, whylen, TP_ECORRUPT, "%s: %s.%s is null", what, t->name,
                                c->name);
            continue;
        }
        if (c->flags & TPD_XC_SECRET)
            return tpd_xsay(why, whylen, TP_ECORRUPT, "%s: %s.%s must be empty (a secret)", what,
                            t->name, c->name);
        if (ty != c->type)
            return tpd_xsay(why, whylen, TP_ECORRUPT, "%s: %s.%s holds %s, not %s", what, t->name,
                            c->name, type_name(ty), type_name(c->type));
    }
    return TP_OK;
}

tp_err tpd_xblob_digest(const uint8_t *p, size_t n, uint8_t d[16])
{
    tp_mpr r;
    uint32_t nk, len;
    bool has_digest = false, has_size = false;
    tp_mpr_init(&r, p, n);
    if (tp_mpr_map(&r, &nk) != TP_OK) return TP_EPROTO;
    for (uint32_t i = 0; i < nk; i++) {
        const char *k;
        const uint8_t *b;
        uint32_t klen, dims;
        uint64_t u;
        int64_t v;
        if (tp_mpr_str(&r, &k, &klen) != TP_OK) return TP_EPROTO;
        if (tp_mp_str_eq(k, klen, "digest") && !has_digest) {
            if (tp_mpr_bin(&r, &b, &len) != TP_OK || len != 16) return TP_EPROTO;
            memcpy(d, b, 16);
            has_digest = true;
        } else if (tp_mp_str_eq(k, klen, "size") && !has_size) {
            if (tp_mpr_uint(&r, &u) != TP_OK) return TP_EPROTO;
            has_size = true;
        } else if (tp_mp_str_eq(k, klen, "dtype")) {
            if (tp_mpr_str(&r, &k, &klen) != TP_OK) return TP_EPROTO;
        } else if (tp_mp_str_eq(k, klen, "shape")) {
            if (tp_mpr_array(&r, &dims) != TP_OK || dims > TP_MAX_DIMS) return TP_EPROTO;
            for (uint32_t j = 0; j < dims; j++)
                if (tp_mpr_int(&r, &v) != TP_OK) return TP_EPROTO;
        } else {
            return TP_EPROTO;
        }
    }
    return has_digest && has_size && tp_mpr_left(&r) == 0 ? TP_OK : TP_EPROTO;
}

/* ---- digest sets ---- */

static int cmp16(const void *a, const void *b)
{
    return memcmp(a, b, 16);
}

tp_err tpd_xdigests_add(tpd_xdigests *s, const uint8_t d[16], int64_t size)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        uint8_t(*nd)[16] = realloc(s->d, cap * sizeof *nd);
        int64_t *ns;
        if (nd == NULL) return TP_ENOMEM;
        s->d = nd;
        if ((ns = realloc(s->size, cap * sizeof *ns)) == NULL) return TP_ENOMEM;
        s->size = ns;
        s->cap = cap;
    }
    memcpy(s->d[s->n], d, 16);
    s->size[s->n++] = size;
    return TP_OK;
}

void tpd_xdigests_sort(tpd_xdigests *s)
{
    size_t w = 0;
    if (s->n == 0) return;
    qsort(s->d, s->n, sizeof s->d[0], cmp16);
    for (size_t i = 1; i < s->n; i++)
        if (memcmp(s->d[i], s->d[w], 16) != 0) memcpy(s->d[++w], s->d[i], 16);
    s->n = w + 1;
}

ptrdiff_t tpd_xdigests_find(const tpd_xdigests *s, const uint8_t d[16])
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = memcmp(s->d[mid], d, 16);
        if (c == 0) return (ptrdiff_t)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

void tpd_xdigests_free(tpd_xdigests *s)
{
    free(s->d);
    free(s->size);
    memset(s, 0, sizeof *s);
}
