/* SPDX-License-Identifier: MIT
 * export.c -- a run as a self-contained file, and back (export.h).
 *
 * One table (tables[] below) names every exported column with its type and
 * role.  It drives the export's SELECTs and INSERTs, the checks on reading
 * an export, the checksum on both sides, and the import's id remapping, so
 * none of them can disagree about a column.  Reading an export is one
 * function, scan(), run twice: once by tpd_export_open to check all of it
 * before the target database is even opened, once by tpd_export_import to
 * copy the rows inside the target's transaction, checking and hashing again
 * so that a file changed in between is caught and rolled back.
 *
 * An export is untrusted input.  It is opened read-only and immutable
 * (SQLite writes nothing beside it), defensive, without trusted schema and
 * without views, read by rowid or key order only (a damaged index cannot
 * hide rows), and every value is checked for its type before it is used.
 * Its rows are checked against the run they claim: one run, executions of
 * that run, processes, events and gaps of those executions, event bodies
 * that the event schema accepts, and the bytes of every blob an event names.
 *
 * The checksum (XXH3-128) covers each table in order: its name, then per row
 * each value as a type tag and its bytes (integers as 8 little-endian bytes,
 * text and blobs with an 8-byte length), then the number of rows.  It is
 * computed from the values as the export writes them and as the reader reads
 * them, so it is independent of SQLite's page layout. */
#define _XOPEN_SOURCE 700 /* P_tmpdir */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <jansson.h>

#include "daemon/base/text.h"
#include "daemon/store/blob.h"
#include "daemon/store/export.h"
#include "proto/event.h"
#include "proto/mp.h"

#ifndef TPD_VERSION
#define TPD_VERSION "0.1.0"
#endif

/* daemon/store/schema.sql, embedded (daemon/CMakeLists.txt) */
extern const char tpd_schema[];

/* What an export adds to the schema.  checksum: see the file comment. */
static const char export_ddl[] =
    "CREATE TABLE blob_bytes (digest BLOB PRIMARY KEY, bytes BLOB NOT NULL);"
    "CREATE TABLE export_info (format INTEGER NOT NULL, schema INTEGER NOT NULL,"
    " run_id INTEGER NOT NULL, exported_ns INTEGER NOT NULL, producer TEXT NOT NULL,"
    " checksum BLOB NOT NULL);";

/* ---- the exported columns ---- */

enum col_flags {
    C_NN = 1 << 0,     /* NOT NULL */
    C_ID = 1 << 1,     /* the row's own id: the import makes a new one */
    C_RUN = 1 << 2,    /* a run id */
    C_EXEC = 1 << 3,   /* an execution id */
    C_SECRET = 1 << 4, /* never exported: NULL in every export */
    C_REPORT = 1 << 5, /* a verdict's JSON report: ids inside are remapped */
};

typedef struct xcol {
    const char *name;
    int type; /* SQLITE_INTEGER, SQLITE_TEXT or SQLITE_BLOB */
    unsigned flags;
} xcol;

#define INT  SQLITE_INTEGER
#define TEXT SQLITE_TEXT
#define BLOB SQLITE_BLOB

static const xcol run_cols[] = {
    {"id", INT, C_NN | C_ID}, {"name", TEXT, 0},         {"check_kind", TEXT, C_NN},
    {"params", TEXT, 0},      {"created_ns", INT, C_NN},
};
static const xcol exec_cols[] = {
    {"id", INT, C_NN | C_ID}, {"run_id", INT, C_NN | C_RUN}, {"role", TEXT, 0},
    {"argv", TEXT, 0},        {"created_ns", INT, C_NN},     {"finished_ns", INT, 0},
    {"exit_status", INT, 0},  {"exit_signal", INT, 0},       {"key", TEXT, C_SECRET},
};
static const xcol proc_cols[] = {
    {"id", INT, C_NN | C_ID}, {"exec_id", INT, C_NN | C_EXEC},
    {"pid", INT, C_NN},       {"ppid", INT, 0},
    {"rank", INT, 0},         {"world", INT, 0},
    {"local_rank", INT, 0},   {"role", TEXT, 0},
    {"agent", TEXT, 0},       {"python", TEXT, 0},
    {"torch", TEXT, 0},       {"numpy", TEXT, 0},
    {"argv", TEXT, 0},        {"cwd", TEXT, 0},
    {"exe", TEXT, 0},         {"capture", TEXT, 0},
    {"cxx", TEXT, 0},         {"interrupt_at", INT, 0},
    {"hello_ns", INT, 0},     {"bye_ns", INT, 0},
    {"bye_reason", TEXT, 0},  {"bye_code", INT, 0},
    {"bye_exc", TEXT, 0},     {"spooled", INT, 0},
    {"sent", INT, 0},         {"dropped", INT, 0},
    {"errors", INT, 0},       {"nevents", INT, C_NN},
    {"max_seq", INT, 0},
};
static const xcol event_cols[] = {
    {"id", INT, C_NN | C_ID}, {"exec_id", INT, C_NN | C_EXEC},
    {"pid", INT, C_NN},       {"seq", INT, C_NN},
    {"time_ns", INT, C_NN},   {"step", INT, C_NN},
    {"kind", TEXT, C_NN},     {"body", BLOB, C_NN},
};
static const xcol gap_cols[] = {
    {"exec_id", INT, C_NN | C_EXEC},
    {"pid", INT, C_NN},
    {"first_seq", INT, C_NN},
    {"last_seq", INT, C_NN},
};
static const xcol verdict_cols[] = {
    {"id", INT, C_NN | C_ID},   {"run_id", INT, C_NN | C_RUN},
    {"check_kind", TEXT, C_NN}, {"outcome", TEXT, C_NN},
    {"step", INT, 0},           {"path", TEXT, 0},
    {"report", TEXT, C_REPORT}, {"text", TEXT, 0},
    {"created_ns", INT, C_NN},
};
static const xcol blob_cols[] = {
    {"digest", BLOB, C_NN},
    {"size", INT, C_NN},
    {"dtype", TEXT, 0},
    {"shape", TEXT, 0},
};
static const xcol bytes_cols[] = {
    {"digest", BLOB, C_NN},
    {"bytes", BLOB, C_NN},
};

typedef enum xtab { T_RUNS, T_EXECS, T_PROCS, T_EVENTS, T_GAPS, T_VERDICTS, T_BLOBS, T_BYTES } xtab;
#define NTABLES 8

#define IN_RUN "exec_id IN (SELECT id FROM executions WHERE run_id = ?1)"

typedef struct xtable {
    const char *name;
    const xcol *cols;
    int ncols;
    const char *scope;  /* export: which source rows (run ?1); NULL: made here */
    const char *order;  /* the row order, on both sides */
    const char *import; /* what ends the import's INSERT; NULL: not inserted */
} xtable;

#define TABLE(n, c, scope, order, import)                                                          \
    {                                                                                              \
        n, c, (int)(sizeof c / sizeof c[0]), scope, order, import                                  \
    }
static const xtable tables[NTABLES] = {
    [T_RUNS] = TABLE("runs", run_cols, "id = ?1", "id", ""),
    [T_EXECS] = TABLE("executions", exec_cols, "run_id = ?1", "id", ""),
    [T_PROCS] = TABLE("processes", proc_cols, IN_RUN, "id", ""),
    [T_EVENTS] = TABLE("events", event_cols, IN_RUN, "id", ""),
    [T_GAPS] = TABLE("gaps", gap_cols, IN_RUN, "rowid", ""),
    [T_VERDICTS] = TABLE("verdicts", verdict_cols, "run_id = ?1", "id", ""),
    [T_BLOBS] =
        TABLE("blobs", blob_cols, "digest = ?1", "digest", " ON CONFLICT(digest) DO NOTHING"),
    [T_BYTES] = TABLE("blob_bytes", bytes_cols, NULL, "digest", NULL),
};

/* ---- small helpers ---- */

static tp_err say(char *why, size_t whylen, tp_err e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static tp_err say(char *why, size_t whylen, tp_err e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return e;
}

static void hex16(char out[33], const uint8_t d[16])
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

/* select_sql writes the SELECT of t's columns: from an export (scoped
 * false: every row) or from a store (the rows of run ?1, secrets as NULL). */
static void select_sql(tpd_str *q, const xtable *t, bool scoped)
{
    tpd_str_reset(q);
    tpd_str_puts(q, "SELECT ");
    for (int i = 0; i < t->ncols; i++)
        tpd_str_printf(q, "%s%s", i ? ", " : "",
                       scoped && (t->cols[i].flags & C_SECRET) ? "NULL" : t->cols[i].name);
    tpd_str_printf(q, " FROM %s", t->name);
    if (scoped) tpd_str_printf(q, " WHERE %s", t->scope);
    tpd_str_printf(q, " ORDER BY %s", t->order);
}

/* insert_sql writes the INSERT of t's columns: every one (into an export)
 * or all but the row's own id (into a store, which makes a new one). */
static void insert_sql(tpd_str *q, const xtable *t, bool all)
{
    int n = 0;
    tpd_str_reset(q);
    tpd_str_printf(q, "INSERT INTO %s(", t->name);
    for (int i = 0; i < t->ncols; i++)
        if (all || !(t->cols[i].flags & C_ID))
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

static void hash_bytes(XXH3_state_t *h, char tag, const void *p, size_t n)
{
    hash_u64(h, tag, n);
    if (n) XXH3_128bits_update(h, p, n);
}

/* hash_col hashes column i of st's current row. */
static void hash_col(XXH3_state_t *h, sqlite3_stmt *st, int i)
{
    const void *p;
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
        hash_u64(h, 'i', (uint64_t)sqlite3_column_int64(st, i));
        break;
    case SQLITE_TEXT:
        p = sqlite3_column_text(st, i);
        hash_bytes(h, 't', p, (size_t)sqlite3_column_bytes(st, i));
        break;
    case SQLITE_BLOB:
        p = sqlite3_column_blob(st, i);
        hash_bytes(h, 'b', p, (size_t)sqlite3_column_bytes(st, i));
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

static void hash_table_begin(XXH3_state_t *h, const xtable *t)
{
    XXH3_128bits_update(h, t->name, strlen(t->name) + 1);
}

static void hash_table_end(XXH3_state_t *h, uint64_t rows)
{
    hash_u64(h, 'E', rows);
}

static void hash_final(XXH3_state_t *h, uint8_t out[16])
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(h));
    memcpy(out, c.digest, 16);
}

/* check_types checks the types of st's current row against t's columns;
 * what names the row's origin in the message ("export", "database"). */
static tp_err check_types(const xtable *t, sqlite3_stmt *st, const char *what, char *why,
                          size_t whylen)
{
    for (int i = 0; i < t->ncols; i++) {
        const xcol *c = &t->cols[i];
        int ty = sqlite3_column_type(st, i);
        if (ty == SQLITE_NULL) {
            if (c->flags & C_NN)
                return say(why, whylen, TP_ECORRUPT, "%s: %s.%s is null", what, t->name, c->name);
            continue;
        }
        if (c->flags & C_SECRET)
            return say(why, whylen, TP_ECORRUPT, "%s: %s.%s must be empty (a secret)", what,
                       t->name, c->name);
        if (ty != c->type)
            return say(why, whylen, TP_ECORRUPT, "%s: %s.%s holds %s, not %s", what, t->name,
                       c->name, type_name(ty), type_name(c->type));
    }
    return TP_OK;
}

/* blob_digest reads the digest of a stored blob event body: the map
 * {"digest": bin 16, "size": uint, ["dtype": str], ["shape": [int...]]}
 * ingest rewrites it to.  Anything else is TP_EPROTO. */
static tp_err blob_digest(const uint8_t *p, size_t n, uint8_t d[16])
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

typedef struct digests {
    uint8_t (*d)[16];
    int64_t *size; /* per digest, where known */
    size_t n, cap;
} digests;

static int cmp16(const void *a, const void *b)
{
    return memcmp(a, b, 16);
}

static tp_err digests_add(digests *s, const uint8_t d[16], int64_t size)
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

/* digests_sort sorts s and drops repeats (sizes are not kept). */
static void digests_sort(digests *s)
{
    size_t w = 0;
    if (s->n == 0) return;
    qsort(s->d, s->n, sizeof s->d[0], cmp16);
    for (size_t i = 1; i < s->n; i++)
        if (memcmp(s->d[i], s->d[w], 16) != 0) memcpy(s->d[++w], s->d[i], 16);
    s->n = w + 1;
}

/* digests_find is the index of d in sorted s, or -1. */
static ptrdiff_t digests_find(const digests *s, const uint8_t d[16])
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

static void digests_free(digests *s)
{
    free(s->d);
    free(s->size);
    memset(s, 0, sizeof *s);
}

/* ---- writing an export ---- */

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* read_file reads the whole regular file path into *out (malloc'd). */
static tp_err read_file(const char *path, uint8_t **out, size_t *n)
{
    struct stat sb;
    uint8_t *buf;
    size_t got = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return errno == ENOENT ? TP_ENOENT : TP_EIO;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return TP_EIO;
    }
    if ((buf = malloc(sb.st_size ? (size_t)sb.st_size : 1)) == NULL) {
        close(fd);
        return TP_ENOMEM;
    }
    while (got < (size_t)sb.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)sb.st_size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (got != (size_t)sb.st_size) {
        free(buf);
        return TP_EIO;
    }
    *out = buf;
    *n = got;
    return TP_OK;
}

typedef struct writer {
    sqlite3 *src, *dst;
    int64_t run;
    XXH3_state_t *h;
    digests refs; /* the digests the run's blob events name */
    tpd_str sql;
    char *why;
    size_t whylen;
} writer;

static tp_err src_fail(writer *w, int rc)
{
    tp_err e = tpd_sqlite_err(rc);
    say(w->why, w->whylen, TP_EDB, "database: %s", sqlite3_errmsg(w->src));
    return e == TP_OK ? TP_EDB : e;
}

static tp_err dst_fail(writer *w, int rc)
{
    tp_err e = tpd_sqlite_err(rc);
    say(w->why, w->whylen, TP_EIO, "cannot write the export: %s", sqlite3_errmsg(w->dst));
    return e == TP_OK || e == TP_ECORRUPT ? TP_EIO : e;
}

/* copy_table copies the rows of run w->run (bound as ?1 to src's query, or
 * the blob digest for T_BLOBS: one call per digest) into the export. */
static tp_err copy_rows(writer *w, const xtable *t, sqlite3_stmt *sel, sqlite3_stmt *ins,
                        uint64_t *rows)
{
    tp_err err;
    int rc;
    while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
        if ((err = check_types(t, sel, "database", w->why, w->whylen)) != TP_OK) return err;
        if (t == &tables[T_EVENTS] &&
            strcmp((const char *)sqlite3_column_text(sel, 6), "blob") == 0) {
            uint8_t d[16];
            if (blob_digest(sqlite3_column_blob(sel, 7), (size_t)sqlite3_column_bytes(sel, 7), d) !=
                TP_OK)
                return say(w->why, w->whylen, TP_ECORRUPT,
                           "database: event %lld is a blob event without a digest",
                           (long long)sqlite3_column_int64(sel, 0));
            if ((err = digests_add(&w->refs, d, -1)) != TP_OK) {
                say(w->why, w->whylen, err, "out of memory");
                return err;
            }
        }
        sqlite3_reset(ins);
        for (int i = 0; i < t->ncols; i++) {
            hash_col(w->h, sel, i);
            sqlite3_bind_value(ins, i + 1, sqlite3_column_value(sel, i));
        }
        if ((rc = sqlite3_step(ins)) != SQLITE_DONE) return dst_fail(w, rc);
        (*rows)++;
    }
    return rc == SQLITE_DONE ? TP_OK : src_fail(w, rc);
}

/* export_blobs writes the blobs rows and the bytes of w->refs. */
static tp_err export_blobs(writer *w, const char *db_path)
{
    char dir[4096], file[4200], hex[33];
    sqlite3_stmt *sel = NULL, *ins = NULL;
    tpd_blobs *b = NULL;
    uint64_t rows = 0;
    tp_err err;
    int rc;
    digests_sort(&w->refs);
    /* the blobs rows, in digest order */
    select_sql(&w->sql, &tables[T_BLOBS], true);
    if ((rc = sqlite3_prepare_v2(w->src, tpd_str_cstr(&w->sql), -1, &sel, NULL)) != SQLITE_OK) {
        err = src_fail(w, rc);
        goto out;
    }
    insert_sql(&w->sql, &tables[T_BLOBS], true);
    if ((rc = sqlite3_prepare_v2(w->dst, tpd_str_cstr(&w->sql), -1, &ins, NULL)) != SQLITE_OK) {
        err = dst_fail(w, rc);
        goto out;
    }
    hash_table_begin(w->h, &tables[T_BLOBS]);
    for (size_t i = 0; i < w->refs.n; i++) {
        uint64_t before = rows;
        sqlite3_reset(sel);
        sqlite3_bind_blob(sel, 1, w->refs.d[i], 16, SQLITE_STATIC);
        if ((err = copy_rows(w, &tables[T_BLOBS], sel, ins, &rows)) != TP_OK) goto out;
        if (rows == before) {
            hex16(hex, w->refs.d[i]);
            err = say(w->why, w->whylen, TP_ECORRUPT,
                      "blob %s of run %lld has no row in the blobs table", hex, (long long)w->run);
            goto out;
        }
    }
    hash_table_end(w->h, rows);
    sqlite3_finalize(sel);
    sqlite3_finalize(ins);
    sel = ins = NULL;

    /* their bytes, from the blob store beside the database */
    if ((err = tpd_blobs_dir_for(db_path, dir, sizeof dir)) != TP_OK ||
        (err = tpd_blobs_open(&b, dir)) != TP_OK) {
        say(w->why, w->whylen, err, "cannot locate the blob store");
        goto out;
    }
    if ((rc = sqlite3_prepare_v2(w->src, "SELECT size FROM blobs WHERE digest = ?1", -1, &sel,
                                 NULL)) != SQLITE_OK) {
        err = src_fail(w, rc);
        goto out;
    }
    insert_sql(&w->sql, &tables[T_BYTES], true);
    if ((rc = sqlite3_prepare_v2(w->dst, tpd_str_cstr(&w->sql), -1, &ins, NULL)) != SQLITE_OK) {
        err = dst_fail(w, rc);
        goto out;
    }
    hash_table_begin(w->h, &tables[T_BYTES]);
    for (size_t i = 0; i < w->refs.n; i++) {
        uint8_t *bytes = NULL;
        size_t n = 0;
        int64_t size = -1;
        hex16(hex, w->refs.d[i]);
        sqlite3_reset(sel);
        sqlite3_bind_blob(sel, 1, w->refs.d[i], 16, SQLITE_STATIC);
        if ((rc = sqlite3_step(sel)) == SQLITE_ROW) size = sqlite3_column_int64(sel, 0);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
            err = src_fail(w, rc);
            goto out;
        }
        if ((err = tpd_blob_path(b, w->refs.d[i], file, sizeof file)) != TP_OK) {
            say(w->why, w->whylen, err, "blob %s: path too long", hex);
            goto out;
        }
        if ((err = read_file(file, &bytes, &n)) != TP_OK) {
            if (err == TP_ENOENT) err = TP_ECORRUPT;
            say(w->why, w->whylen, err,
                "blob %s of run %lld is %s in the blob store beside the database", hex,
                (long long)w->run,
                err == TP_ENOMEM ? "too large to read" : "missing or unreadable");
            goto out;
        }
        if ((int64_t)n != size) {
            free(bytes);
            err = say(w->why, w->whylen, TP_ECORRUPT,
                      "blob %s of run %lld holds %zu bytes, its row says %lld", hex,
                      (long long)w->run, n, (long long)size);
            goto out;
        }
        hash_bytes(w->h, 'b', w->refs.d[i], 16);
        hash_bytes(w->h, 'b', bytes, n);
        sqlite3_reset(ins);
        sqlite3_bind_blob(ins, 1, w->refs.d[i], 16, SQLITE_STATIC);
        rc = sqlite3_bind_blob64(ins, 2, n ? (const void *)bytes : (const void *)"", n,
                                 SQLITE_STATIC);
        if (rc == SQLITE_OK) rc = sqlite3_step(ins);
        free(bytes);
        if (rc != SQLITE_DONE) {
            err = rc == SQLITE_TOOBIG
                      ? say(w->why, w->whylen, TP_EIO, "blob %s is too large for an export", hex)
                      : dst_fail(w, rc);
            goto out;
        }
    }
    hash_table_end(w->h, w->refs.n);
    err = TP_OK;
out:
    sqlite3_finalize(sel);
    sqlite3_finalize(ins);
    tpd_blobs_close(b);
    return err;
}

/* build fills the open, empty export dst with run w->run of src. */
static tp_err build(writer *w, const char *db_path)
{
    sqlite3_stmt *sel = NULL, *ins = NULL;
    uint8_t sum[16];
    tp_err err = TP_OK;
    int rc;
    char sql[160];
    snprintf(sql, sizeof sql, "PRAGMA application_id = %d; PRAGMA user_version = %d",
             TPD_EXPORT_APP_ID, TPD_EXPORT_FORMAT);
    if ((rc = sqlite3_exec(w->dst, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF", NULL,
                           NULL, NULL)) != SQLITE_OK ||
        (rc = sqlite3_exec(w->dst, "BEGIN", NULL, NULL, NULL)) != SQLITE_OK ||
        (rc = sqlite3_exec(w->dst, tpd_schema, NULL, NULL, NULL)) != SQLITE_OK ||
        (rc = sqlite3_exec(w->dst, export_ddl, NULL, NULL, NULL)) != SQLITE_OK ||
        (rc = sqlite3_exec(w->dst, sql, NULL, NULL, NULL)) != SQLITE_OK)
        return dst_fail(w, rc);
    for (int t = T_RUNS; t <= T_VERDICTS; t++) {
        uint64_t rows = 0;
        select_sql(&w->sql, &tables[t], true);
        if ((rc = sqlite3_prepare_v2(w->src, tpd_str_cstr(&w->sql), -1, &sel, NULL)) != SQLITE_OK)
            return src_fail(w, rc);
        insert_sql(&w->sql, &tables[t], true);
        if ((rc = sqlite3_prepare_v2(w->dst, tpd_str_cstr(&w->sql), -1, &ins, NULL)) != SQLITE_OK) {
            sqlite3_finalize(sel);
            return dst_fail(w, rc);
        }
        sqlite3_bind_int64(sel, 1, w->run);
        hash_table_begin(w->h, &tables[t]);
        err = copy_rows(w, &tables[t], sel, ins, &rows);
        hash_table_end(w->h, rows);
        sqlite3_finalize(sel);
        sqlite3_finalize(ins);
        if (err != TP_OK) return err;
        if (t == T_RUNS && rows == 0)
            return say(w->why, w->whylen, TP_ENOENT, "no run %lld", (long long)w->run);
    }
    if ((err = export_blobs(w, db_path)) != TP_OK) return err;
    hash_final(w->h, sum);
    rc = sqlite3_prepare_v2(w->dst,
                            "INSERT INTO export_info(format, schema, run_id, exported_ns,"
                            " producer, checksum) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
                            -1, &ins, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int(ins, 1, TPD_EXPORT_FORMAT);
        sqlite3_bind_int(ins, 2, TPD_STORE_VERSION);
        sqlite3_bind_int64(ins, 3, w->run);
        sqlite3_bind_int64(ins, 4, tpd_now_ns());
        sqlite3_bind_text(ins, 5, "trainparity-daemon " TPD_VERSION, -1, SQLITE_STATIC);
        sqlite3_bind_blob(ins, 6, sum, sizeof sum, SQLITE_STATIC);
        rc = sqlite3_step(ins);
        if (rc == SQLITE_DONE) rc = SQLITE_OK;
    }
    sqlite3_finalize(ins);
    if (rc == SQLITE_OK) rc = sqlite3_exec(w->dst, "COMMIT", NULL, NULL, NULL);
    return rc == SQLITE_OK ? TP_OK : dst_fail(w, rc);
}

/* copy_out writes the file at path to fd. */
static tp_err copy_out(const char *path, int fd, char *why, size_t whylen)
{
    uint8_t buf[1 << 16];
    int in = open(path, O_RDONLY | O_CLOEXEC);
    tp_err err = TP_OK;
    if (in < 0) return say(why, whylen, TP_EIO, "cannot reopen the export: %s", strerror(errno));
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            err = say(why, whylen, TP_EIO, "cannot read the export back: %s", strerror(errno));
            break;
        }
        if (r == 0) break;
        if (write_all(fd, buf, (size_t)r) != 0) {
            err = say(why, whylen, TP_EIO, "cannot write the export: %s", strerror(errno));
            break;
        }
    }
    close(in);
    return err;
}

tp_err tpd_export_write(tpd_store *s, int64_t run, int fd, char *why, size_t whylen)
{
    const char *tmpdir = getenv("TMPDIR");
    char tmp[4096], dummy[8];
    bool own_txn = false;
    writer w;
    tp_err err;
    int tfd, rc;
    if (why == NULL || whylen == 0) why = dummy, whylen = sizeof dummy;
    why[0] = '\0';
    memset(&w, 0, sizeof w);
    w.src = tpd_store_db(s);
    w.run = run;
    w.why = why;
    w.whylen = whylen;
    tpd_str_init(&w.sql);
    if (tmpdir == NULL || tmpdir[0] == '\0') tmpdir = P_tmpdir;
    if ((size_t)snprintf(tmp, sizeof tmp, "%s/trainparity-export-XXXXXX", tmpdir) >= sizeof tmp)
        return say(why, whylen, TP_EINVAL, "$TMPDIR is too long");
    if ((tfd = mkstemp(tmp)) < 0)
        return say(why, whylen, TP_EIO, "cannot create a temporary file in %s: %s", tmpdir,
                   strerror(errno));
    close(tfd);
    if ((w.h = XXH3_createState()) == NULL || XXH3_128bits_reset(w.h) != XXH_OK) {
        err = say(why, whylen, TP_ENOMEM, "out of memory");
        goto out;
    }
    rc = sqlite3_open_v2(tmp, &w.dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        err = dst_fail(&w, rc);
        goto out;
    }
    /* one snapshot of the run, even while a daemon writes to it */
    if (sqlite3_get_autocommit(w.src)) {
        if ((rc = sqlite3_exec(w.src, "BEGIN", NULL, NULL, NULL)) != SQLITE_OK) {
            err = src_fail(&w, rc);
            goto out;
        }
        own_txn = true;
    }
    err = build(&w, tpd_store_path(s));
    if (own_txn) sqlite3_exec(w.src, "ROLLBACK", NULL, NULL, NULL);
    if (err != TP_OK) goto out;
    if ((rc = sqlite3_close(w.dst)) != SQLITE_OK) {
        err = dst_fail(&w, rc);
        goto out;
    }
    w.dst = NULL;
    err = copy_out(tmp, fd, why, whylen);
out:
    if (w.dst) sqlite3_close_v2(w.dst);
    unlink(tmp);
    if (w.h) XXH3_freeState(w.h);
    digests_free(&w.refs);
    tpd_str_free(&w.sql);
    return err;
}

/* ---- reading an export ---- */

struct tpd_export {
    sqlite3 *db;
    int64_t run; /* the run's id in the export */
    uint8_t checksum[16];
    /* rebuilt by every scan */
    int64_t *exec_old, *exec_new; /* the executions, in id order */
    size_t nexec, capexec;
    digests blobs; /* the blobs rows (digest, size), in digest order */
    digests refs;  /* the digests the blob events name */
};

int64_t tpd_export_source_run(const tpd_export *x)
{
    return x->run;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* check_header reads the SQLite header at path: a TrainParity export of a
 * format this build reads, as long as its header says. */
static tp_err check_header(const char *path, char *why, size_t whylen)
{
    static const char magic[] = "SQLite format 3";
    uint8_t h[100];
    struct stat sb;
    size_t got = 0;
    uint32_t app, format, page, pages;
    uint64_t want;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return say(why, whylen, errno == ENOENT ? TP_ENOENT : TP_EIO, "cannot open %s: %s", path,
                   strerror(errno));
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return say(why, whylen, TP_EIO, "%s is not a regular file", path);
    }
    while (got < sizeof h) {
        ssize_t r = read(fd, h + got, sizeof h - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (got < sizeof h || memcmp(h, magic, sizeof magic) != 0)
        return say(why, whylen, TP_ECORRUPT, "%s is not a TrainParity export (%s)", path,
                   sb.st_size == 0 ? "empty file" : "not an SQLite file");
    app = be32(h + 68);
    format = be32(h + 60);
    if (app == TPD_STORE_APP_ID)
        return say(why, whylen, TP_ECORRUPT,
                   "%s is a TrainParity database, not an export of one run "
                   "(make one with: trainparity-daemon export RUN_ID)",
                   path);
    if (app != TPD_EXPORT_APP_ID)
        return say(why, whylen, TP_ECORRUPT,
                   "%s is not a TrainParity export (SQLite application id %#x)", path, app);
    if (format > TPD_EXPORT_FORMAT)
        return say(why, whylen, TP_EVERSION,
                   "%s is an export of format %u, newer than this trainparity-daemon reads "
                   "(%d); use a newer build",
                   path, format, TPD_EXPORT_FORMAT);
    if (format == 0)
        return say(why, whylen, TP_ECORRUPT, "%s is not a TrainParity export (no format)", path);
    page = (uint32_t)h[16] << 8 | h[17];
    if (page == 1) page = 65536;
    pages = be32(h + 28);
    if (page < 512 || (page & (page - 1)) != 0 || h[18] != 1 || h[19] != 1 || pages == 0 ||
        be32(h + 24) != be32(h + 92))
        return say(why, whylen, TP_ECORRUPT, "%s is a damaged TrainParity export (its header)",
                   path);
    want = (uint64_t)page * pages;
    if ((uint64_t)sb.st_size < want)
        return say(why, whylen, TP_ECORRUPT,
                   "%s is a truncated TrainParity export (%lld bytes of %llu)", path,
                   (long long)sb.st_size, (unsigned long long)want);
    if ((uint64_t)sb.st_size > want)
        return say(why, whylen, TP_ECORRUPT,
                   "%s is a damaged TrainParity export (%lld bytes, its header says %llu)", path,
                   (long long)sb.st_size, (unsigned long long)want);
    return TP_OK;
}

/* file_uri writes the URI that opens path read-only and immutable. */
static void file_uri(tpd_str *u, const char *path)
{
    static const char hex[] = "0123456789ABCDEF";
    tpd_str_puts(u, path[0] == '/' ? "file://" : "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("/-._~", *p) != NULL) {
            char c = (char)*p;
            tpd_str_append(u, &c, 1);
        } else {
            char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            tpd_str_append(u, e, 3);
        }
    }
    tpd_str_puts(u, "?mode=ro&immutable=1");
}

/* The target of an import: where scan() copies the rows. */
typedef struct sink {
    tpd_store *s;
    sqlite3 *db;
    tpd_blobs *blobs;
    int64_t run; /* the new run's id */
    tpd_str report;
} sink;

static tp_err xfail(tpd_export *x, int rc, char *why, size_t whylen)
{
    tp_err e = tpd_sqlite_err(rc);
    say(why, whylen, TP_ECORRUPT, "damaged TrainParity export: %s", sqlite3_errmsg(x->db));
    return e == TP_ENOMEM || e == TP_EIO ? e : TP_ECORRUPT;
}

static ptrdiff_t exec_index(const tpd_export *x, int64_t id)
{
    size_t lo = 0, hi = x->nexec;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->exec_old[mid] == id) return (ptrdiff_t)mid;
        if (x->exec_old[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static tp_err exec_add(tpd_export *x, int64_t id)
{
    if (x->nexec == x->capexec) {
        size_t cap = x->capexec ? 2 * x->capexec : 16;
        int64_t *o = realloc(x->exec_old, cap * sizeof *o), *n;
        if (o == NULL) return TP_ENOMEM;
        x->exec_old = o;
        if ((n = realloc(x->exec_new, cap * sizeof *n)) == NULL) return TP_ENOMEM;
        x->exec_new = n;
        x->capexec = cap;
    }
    x->exec_old[x->nexec] = id;
    x->exec_new[x->nexec++] = 0;
    return TP_OK;
}

/* rewrite_ids appends report (valid JSON, n bytes) to out with the integer
 * values of every "run" and "execution" member that name one of x's ids
 * replaced by the new ids; everything else stays byte for byte. */
static void rewrite_ids(const tpd_export *x, const sink *k, const char *s, size_t n, tpd_str *out)
{
    size_t i = 0, last = 0;
    while (i < n) {
        size_t j, key, keylen, v, e;
        if (s[i] != '"') {
            i++;
            continue;
        }
        key = i + 1;
        for (j = key; j < n && s[j] != '"'; j++)
            if (s[j] == '\\') j++;
        keylen = j - key;
        i = j + 1; /* past the closing quote */
        for (v = i; v < n && strchr(" \t\r\n", s[v]); v++) continue;
        if (v >= n || s[v] != ':') continue; /* a string value, not a key */
        for (v++; v < n && strchr(" \t\r\n", s[v]); v++) continue;
        e = v;
        if (e < n && s[e] == '-') e++;
        while (e < n && s[e] >= '0' && s[e] <= '9') e++;
        if (e == v || (e < n && strchr(".eE", s[e])) || e - v > 20) continue;
        {
            char num[24];
            long long id;
            ptrdiff_t ix;
            bool is_run = keylen == 3 && memcmp(s + key, "run", 3) == 0;
            bool is_exec = keylen == 9 && memcmp(s + key, "execution", 9) == 0;
            memcpy(num, s + v, e - v);
            num[e - v] = '\0';
            id = strtoll(num, NULL, 10);
            if (is_run && id == x->run) {
                tpd_str_append(out, s + last, v - last);
                tpd_str_printf(out, "%lld", (long long)k->run);
                last = e;
            } else if (is_exec && (ix = exec_index(x, id)) >= 0) {
                tpd_str_append(out, s + last, v - last);
                tpd_str_printf(out, "%lld", (long long)x->exec_new[ix]);
                last = e;
            }
        }
        i = e;
    }
    tpd_str_append(out, s + last, n - last);
}

/* bind_report binds a verdict's report for the target: its ids remapped
 * when it is JSON, else as it is. */
static void bind_report(tpd_export *x, sink *k, sqlite3_stmt *ins, int p, sqlite3_stmt *sel, int i)
{
    const char *s = (const char *)sqlite3_column_text(sel, i);
    size_t n = (size_t)sqlite3_column_bytes(sel, i);
    json_t *j;
    if (s == NULL) {
        sqlite3_bind_null(ins, p);
        return;
    }
    j = json_loadb(s, n, JSON_DECODE_ANY, NULL);
    if (j == NULL) {
        sqlite3_bind_value(ins, p, sqlite3_column_value(sel, i));
        return;
    }
    json_decref(j);
    tpd_str_reset(&k->report);
    rewrite_ids(x, k, s, n, &k->report);
    sqlite3_bind_text(ins, p, tpd_str_cstr(&k->report), (int)k->report.len, SQLITE_STATIC);
}

/* check_row checks what one row says, beyond its types, and notes what
 * later tables are checked against (executions, blobs, blob references). */
static tp_err check_row(tpd_export *x, xtab t, sqlite3_stmt *st, uint64_t row, char *why,
                        size_t whylen)
{
    static const char *const outcomes[] = {"PASS", "FAIL", "ABSTAIN", "ERROR"};
    const uint8_t *d;
    ptrdiff_t ix;
    tp_err err;
    switch (t) {
    case T_RUNS:
        if (row > 0 || sqlite3_column_int64(st, 0) != x->run)
            return say(why, whylen, TP_ECORRUPT,
                       "inconsistent TrainParity export: it must hold run %lld alone",
                       (long long)x->run);
        return TP_OK;
    case T_EXECS:
        if (sqlite3_column_int64(st, 1) != x->run)
            return say(why, whylen, TP_ECORRUPT,
                       "inconsistent TrainParity export: execution %lld is not of run %lld",
                       (long long)sqlite3_column_int64(st, 0), (long long)x->run);
        if (x->nexec > 0 && sqlite3_column_int64(st, 0) <= x->exec_old[x->nexec - 1])
            return say(why, whylen, TP_ECORRUPT,
                       "inconsistent TrainParity export: execution ids out of order");
        if ((err = exec_add(x, sqlite3_column_int64(st, 0))) != TP_OK)
            return say(why, whylen, err, "out of memory");
        return TP_OK;
    case T_PROCS:
    case T_EVENTS:
    case T_GAPS:
        ix = exec_index(x, sqlite3_column_int64(st, t == T_GAPS ? 0 : 1));
        if (ix < 0)
            return say(why, whylen, TP_ECORRUPT,
                       "inconsistent TrainParity export: a row of %s names execution %lld, "
                       "which is not in it",
                       tables[t].name, (long long)sqlite3_column_int64(st, t == T_GAPS ? 0 : 1));
        if (t == T_EVENTS) {
            const char *kind = (const char *)sqlite3_column_text(st, 6);
            const uint8_t *body = sqlite3_column_blob(st, 7);
            size_t n = (size_t)sqlite3_column_bytes(st, 7);
            tp_kind k = tp_kind_parse(kind, strlen(kind));
            char bad[256] = "";
            uint8_t dg[16];
            if (k == TP_K_NONE)
                return say(why, whylen, TP_ECORRUPT,
                           "inconsistent TrainParity export: event %lld has the unknown kind "
                           "'%.32s'",
                           (long long)sqlite3_column_int64(st, 0), kind);
            if (k == TP_K_BLOB) {
                if (blob_digest(body, n, dg) != TP_OK)
                    return say(why, whylen, TP_ECORRUPT,
                               "inconsistent TrainParity export: blob event %lld is malformed",
                               (long long)sqlite3_column_int64(st, 0));
                if ((err = digests_add(&x->refs, dg, -1)) != TP_OK)
                    return say(why, whylen, err, "out of memory");
            } else if (tp_body_validate(k, body, n, bad, sizeof bad) != TP_OK) {
                return say(why, whylen, TP_ECORRUPT,
                           "inconsistent TrainParity export: event %lld: %s",
                           (long long)sqlite3_column_int64(st, 0), bad);
            }
        }
        return TP_OK;
    case T_VERDICTS: {
        const char *o = (const char *)sqlite3_column_text(st, 3);
        bool known = false;
        if (sqlite3_column_int64(st, 1) != x->run)
            return say(why, whylen, TP_ECORRUPT,
                       "inconsistent TrainParity export: verdict %lld is not of run %lld",
                       (long long)sqlite3_column_int64(st, 0), (long long)x->run);
        for (size_t i = 0; i < sizeof outcomes / sizeof outcomes[0]; i++)
            known |= strcmp(o, outcomes[i]) == 0;
        if (!known)
            return say(why, whylen, TP_ECORRUPT,
                       "inconsistent TrainParity export: verdict %lld has the outcome '%.16s'",
                       (long long)sqlite3_column_int64(st, 0), o);
        return TP_OK;
    }
    case T_BLOBS:
        d = sqlite3_column_blob(st, 0);
        if (sqlite3_column_bytes(st, 0) != 16 || sqlite3_column_int64(st, 1) < 0 ||
            (x->blobs.n > 0 && memcmp(d, x->blobs.d[x->blobs.n - 1], 16) <= 0))
            return say(why, whylen, TP_ECORRUPT,
                       "inconsistent TrainParity export: a malformed blobs row");
        if ((err = digests_add(&x->blobs, d, sqlite3_column_int64(st, 1))) != TP_OK)
            return say(why, whylen, err, "out of memory");
        return TP_OK;
    case T_BYTES: {
        char hex[33];
        d = sqlite3_column_blob(st, 0);
        if (sqlite3_column_bytes(st, 0) != 16 || row >= x->blobs.n ||
            memcmp(d, x->blobs.d[row], 16) != 0)
            return say(why, whylen, TP_ECORRUPT,
                       "inconsistent TrainParity export: blob bytes without a blobs row");
        if (sqlite3_column_bytes(st, 1) != x->blobs.size[row]) {
            hex16(hex, d);
            return say(why, whylen, TP_ECORRUPT,
                       "inconsistent TrainParity export: blob %s holds %d bytes, its row says "
                       "%lld",
                       hex, sqlite3_column_bytes(st, 1), (long long)x->blobs.size[row]);
        }
        return TP_OK;
    }
    }
    return TP_OK;
}

/* sink_row inserts the current row of table t (read by sel) into the
 * target, or for blob bytes, writes the blob file. */
static tp_err sink_row(tpd_export *x, sink *k, xtab t, sqlite3_stmt *sel, sqlite3_stmt *ins,
                       uint64_t row, char *why, size_t whylen)
{
    const xtable *tb = &tables[t];
    int p = 1, rc;
    tp_err err;
    if (t == T_BYTES) {
        const void *bytes = sqlite3_column_blob(sel, 1);
        err = tpd_blob_put(k->blobs, sqlite3_column_blob(sel, 0), bytes ? bytes : "",
                           (size_t)sqlite3_column_bytes(sel, 1), NULL);
        return err == TP_OK
                   ? TP_OK
                   : say(why, whylen, err, "cannot write a blob file: %s", tp_strerror(err));
    }
    sqlite3_reset(ins);
    sqlite3_clear_bindings(ins);
    for (int i = 0; i < tb->ncols; i++) {
        unsigned f = tb->cols[i].flags;
        if (f & C_ID) continue;
        if (f & C_RUN)
            sqlite3_bind_int64(ins, p, k->run);
        else if (f & C_EXEC)
            sqlite3_bind_int64(ins, p, x->exec_new[exec_index(x, sqlite3_column_int64(sel, i))]);
        else if (f & C_SECRET)
            sqlite3_bind_null(ins, p);
        else if (f & C_REPORT)
            bind_report(x, k, ins, p, sel, i);
        else
            sqlite3_bind_value(ins, p, sqlite3_column_value(sel, i));
        p++;
    }
    if ((rc = sqlite3_step(ins)) != SQLITE_DONE) {
        tp_err e = tpd_sqlite_err(rc);
        say(why, whylen, TP_EDB, "cannot import into the database: %s", sqlite3_errmsg(k->db));
        return e == TP_OK || e == TP_ECORRUPT ? TP_EDB : e;
    }
    if (t == T_RUNS) k->run = sqlite3_last_insert_rowid(k->db);
    if (t == T_EXECS) x->exec_new[row] = sqlite3_last_insert_rowid(k->db);
    return TP_OK;
}

/* scan reads every table of x in order, checks every row and the checksum,
 * and with k, copies the rows into k's database. */
static tp_err scan(tpd_export *x, sink *k, char *why, size_t whylen)
{
    XXH3_state_t *h = XXH3_createState();
    sqlite3_stmt *sel = NULL, *ins = NULL;
    uint8_t sum[16];
    tpd_str sql;
    tp_err err = TP_OK;
    int rc;
    tpd_str_init(&sql);
    x->nexec = 0;
    x->blobs.n = x->refs.n = 0;
    if (h == NULL || XXH3_128bits_reset(h) != XXH_OK) {
        err = say(why, whylen, TP_ENOMEM, "out of memory");
        goto out;
    }
    for (int t = 0; t < NTABLES; t++) {
        const xtable *tb = &tables[t];
        uint64_t rows = 0;
        select_sql(&sql, tb, false);
        if (sql.oom) {
            err = say(why, whylen, TP_ENOMEM, "out of memory");
            goto out;
        }
        if ((rc = sqlite3_prepare_v2(x->db, tpd_str_cstr(&sql), -1, &sel, NULL)) != SQLITE_OK) {
            err = say(why, whylen, TP_ECORRUPT, "not a TrainParity export (table %s: %s)", tb->name,
                      sqlite3_errmsg(x->db));
            goto out;
        }
        if (k && tb->import) {
            insert_sql(&sql, tb, false);
            if ((rc = sqlite3_prepare_v2(k->db, tpd_str_cstr(&sql), -1, &ins, NULL)) != SQLITE_OK) {
                err = say(why, whylen, TP_EDB, "cannot import into the database: %s",
                          sqlite3_errmsg(k->db));
                goto out;
            }
        }
        hash_table_begin(h, tb);
        while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
            if ((err = check_types(tb, sel, "inconsistent TrainParity export", why, whylen)) !=
                    TP_OK ||
                (err = check_row(x, (xtab)t, sel, rows, why, whylen)) != TP_OK)
                goto out;
            for (int i = 0; i < tb->ncols; i++) hash_col(h, sel, i);
            if (k && (err = sink_row(x, k, (xtab)t, sel, ins, rows, why, whylen)) != TP_OK)
                goto out;
            rows++;
        }
        if (rc != SQLITE_DONE) {
            err = xfail(x, rc, why, whylen);
            goto out;
        }
        hash_table_end(h, rows);
        if (t == T_RUNS && rows != 1) {
            err = say(why, whylen, TP_ECORRUPT, "inconsistent TrainParity export: no run %lld",
                      (long long)x->run);
            goto out;
        }
        if (t == T_BYTES && rows != x->blobs.n) {
            err = say(why, whylen, TP_ECORRUPT,
                      "inconsistent TrainParity export: %llu blobs rows, %llu with bytes",
                      (unsigned long long)x->blobs.n, (unsigned long long)rows);
            goto out;
        }
        sqlite3_finalize(sel);
        sqlite3_finalize(ins);
        sel = ins = NULL;
    }
    hash_final(h, sum);
    if (memcmp(sum, x->checksum, sizeof sum) != 0) {
        err = say(why, whylen, TP_ECORRUPT,
                  "damaged TrainParity export: its content does not match its checksum");
        goto out;
    }
    digests_sort(&x->refs);
    for (size_t i = 0; i < x->refs.n; i++) {
        if (digests_find(&x->blobs, x->refs.d[i]) < 0) {
            char hex[33];
            hex16(hex, x->refs.d[i]);
            err = say(why, whylen, TP_ECORRUPT,
                      "incomplete TrainParity export: the bytes of blob %s are missing", hex);
            goto out;
        }
    }
out:
    sqlite3_finalize(sel);
    sqlite3_finalize(ins);
    tpd_str_free(&sql);
    if (h) XXH3_freeState(h);
    return err;
}

/* read_info reads export_info: the format, schema, run and checksum. */
static tp_err read_info(tpd_export *x, char *why, size_t whylen)
{
    static const char sql[] =
        "SELECT format, schema, run_id, checksum FROM export_info ORDER BY rowid";
    sqlite3_stmt *st = NULL;
    tp_err err = TP_OK;
    int rc = sqlite3_prepare_v2(x->db, sql, -1, &st, NULL), rows = 0;
    if (rc != SQLITE_OK)
        return say(why, whylen, TP_ECORRUPT, "not a TrainParity export (export_info: %s)",
                   sqlite3_errmsg(x->db));
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && err == TP_OK) {
        int64_t format = sqlite3_column_int64(st, 0), schema = sqlite3_column_int64(st, 1);
        rows++;
        if (sqlite3_column_type(st, 0) != SQLITE_INTEGER ||
            sqlite3_column_type(st, 1) != SQLITE_INTEGER ||
            sqlite3_column_type(st, 2) != SQLITE_INTEGER ||
            sqlite3_column_type(st, 3) != SQLITE_BLOB || sqlite3_column_bytes(st, 3) != 16 ||
            format != TPD_EXPORT_FORMAT) {
            err = say(why, whylen, TP_ECORRUPT, "damaged TrainParity export (export_info)");
        } else if (schema > TPD_STORE_VERSION) {
            err = say(why, whylen, TP_EVERSION,
                      "the export holds database version %lld, newer than this "
                      "trainparity-daemon reads (%d); use a newer build",
                      (long long)schema, TPD_STORE_VERSION);
        } else if (schema != TPD_STORE_VERSION) {
            err = say(why, whylen, TP_EVERSION,
                      "the export holds database version %lld; this trainparity-daemon imports "
                      "version %d only",
                      (long long)schema, TPD_STORE_VERSION);
        } else {
            x->run = sqlite3_column_int64(st, 2);
            memcpy(x->checksum, sqlite3_column_blob(st, 3), 16);
        }
    }
    if (err == TP_OK && rc != SQLITE_DONE) err = xfail(x, rc, why, whylen);
    if (err == TP_OK && rows != 1)
        err = say(why, whylen, TP_ECORRUPT, "damaged TrainParity export (export_info)");
    sqlite3_finalize(st);
    return err;
}

/* quick_check runs SQLite's quick_check over the whole file. */
static tp_err quick_check(tpd_export *x, char *why, size_t whylen)
{
    sqlite3_stmt *st = NULL;
    tp_err err = TP_OK;
    int rc = sqlite3_prepare_v2(x->db, "PRAGMA quick_check(1)", -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *r = (const char *)sqlite3_column_text(st, 0);
        if (r == NULL || strcmp(r, "ok") != 0) {
            char msg[200];
            size_t n = 0;
            /* one line, without SQLite's "*** in database main ***" */
            if (r && strncmp(r, "*** ", 4) == 0 && strstr(r, "***\n")) r = strstr(r, "***\n") + 4;
            for (; r && *r && n + 1 < sizeof msg; r++) msg[n++] = *r == '\n' ? ' ' : *r;
            msg[n] = '\0';
            err = say(why, whylen, TP_ECORRUPT, "damaged TrainParity export (%s)",
                      n ? msg : "quick_check");
        }
    } else {
        err = xfail(x, rc, why, whylen);
    }
    sqlite3_finalize(st);
    return err;
}

tp_err tpd_export_open(tpd_export **xp, const char *path, char *why, size_t whylen)
{
    tpd_export *x = NULL;
    char dummy[8];
    tpd_str uri;
    tp_err err;
    int rc;
    if (why == NULL || whylen == 0) why = dummy, whylen = sizeof dummy;
    why[0] = '\0';
    if ((err = check_header(path, why, whylen)) != TP_OK) return err;
    tpd_str_init(&uri);
    file_uri(&uri, path);
    if (uri.oom || (x = calloc(1, sizeof *x)) == NULL) {
        err = say(why, whylen, TP_ENOMEM, "out of memory");
        goto fail;
    }
    rc = sqlite3_open_v2(tpd_str_cstr(&uri), &x->db,
                         SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        err = say(why, whylen, TP_EIO, "cannot open %s: %s", path,
                  x->db ? sqlite3_errmsg(x->db) : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_extended_result_codes(x->db, 1);
    sqlite3_db_config(x->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    sqlite3_db_config(x->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
    sqlite3_db_config(x->db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL);
#ifdef SQLITE_DBCONFIG_ENABLE_VIEW
    sqlite3_db_config(x->db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, NULL);
#endif
    if ((rc = sqlite3_exec(x->db, "PRAGMA cell_size_check = ON", NULL, NULL, NULL)) != SQLITE_OK) {
        err = xfail(x, rc, why, whylen);
        goto fail;
    }
    if ((err = quick_check(x, why, whylen)) != TP_OK ||
        (err = read_info(x, why, whylen)) != TP_OK || (err = scan(x, NULL, why, whylen)) != TP_OK)
        goto fail;
    tpd_str_free(&uri);
    *xp = x;
    return TP_OK;
fail:
    tpd_str_free(&uri);
    tpd_export_close(x);
    return err;
}

tp_err tpd_export_import(tpd_export *x, tpd_store *s, int64_t *run, char *why, size_t whylen)
{
    char dir[4096], dummy[8];
    sink k;
    tp_err err;
    if (why == NULL || whylen == 0) why = dummy, whylen = sizeof dummy;
    why[0] = '\0';
    if (tpd_store_readonly(s) || tpd_store_in_txn(s))
        return say(why, whylen, TP_EINVAL, "the database is read-only or in a transaction");
    memset(&k, 0, sizeof k);
    k.s = s;
    k.db = tpd_store_db(s);
    tpd_str_init(&k.report);
    if ((err = tpd_blobs_dir_for(tpd_store_path(s), dir, sizeof dir)) != TP_OK ||
        (err = tpd_blobs_open(&k.blobs, dir)) != TP_OK) {
        say(why, whylen, err, "cannot locate the blob store");
        goto out;
    }
    if ((err = tpd_store_begin(s)) != TP_OK) {
        say(why, whylen, err, "cannot start a transaction: %s", tpd_store_errmsg(s));
        goto out;
    }
    if ((err = scan(x, &k, why, whylen)) == TP_OK && k.report.oom)
        err = say(why, whylen, TP_ENOMEM, "out of memory");
    if (err != TP_OK) {
        tpd_store_rollback(s);
        goto out;
    }
    if ((err = tpd_store_commit(s)) != TP_OK) {
        say(why, whylen, err, "cannot commit the import: %s", tpd_store_errmsg(s));
        goto out;
    }
    *run = k.run;
out:
    tpd_blobs_close(k.blobs);
    tpd_str_free(&k.report);
    return err;
}

void tpd_export_close(tpd_export *x)
{
    if (x == NULL) return;
    if (x->db) sqlite3_close_v2(x->db);
    free(x->exec_old);
    free(x->exec_new);
    digests_free(&x->blobs);
    digests_free(&x->refs);
    free(x);
}
