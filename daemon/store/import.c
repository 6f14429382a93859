/* SPDX-License-Identifier: MIT
 * import.c -- reading an export: opening and checking all of it, then
 * adding it to another database as a new run (export.h).  The design,
 * shared with writing one (export.c), is in exchange.h. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <jansson.h>

#include "daemon/base/text.h"
#include "daemon/store/blob.h"
#include "daemon/store/export.h"
#include "daemon/store/exchange.h"
#include "daemon/store/pack.h"
#include "proto/event.h"

struct tpd_export {
    sqlite3 *db;
    int64_t run; /* the run's id in the export */
    uint8_t checksum[16];
    /* rebuilt by every scan */
    int64_t *exec_old, *exec_new; /* the executions, in id order */
    size_t nexec, capexec;
    tpd_xdigests blobs; /* the blobs rows (digest, size), in digest order */
    tpd_xdigests refs;  /* the digests the blob events name */
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
        return tpd_xsay(why, whylen, errno == ENOENT ? TP_ENOENT : TP_EIO, "cannot open %s: %s",
                        path, strerror(errno));
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return tpd_xsay(why, whylen, TP_EIO, "%s is not a regular file", path);
    }
    while (got < sizeof h) {
        ssize_t r = read(fd, h + got, sizeof h - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (got < sizeof h || memcmp(h, magic, sizeof magic) != 0)
        return tpd_xsay(why, whylen, TP_ECORRUPT, "%s is not a TrainParity export (%s)", path,
                        sb.st_size == 0 ? "empty file" : "not an SQLite file");
    app = be32(h + 68);
    format = be32(h + 60);
    if (app == TPD_STORE_APP_ID)
        return tpd_xsay(why, whylen, TP_ECORRUPT,
                        "%s is a TrainParity database, not an export of one run "
                        "(make one with: trainparity-daemon export RUN_ID)",
                        path);
    if (app != TPD_EXPORT_APP_ID)
        return tpd_xsay(why, whylen, TP_ECORRUPT,
                        "%s is not a TrainParity export (SQLite application id %#x)", path, app);
    if (format > TPD_EXPORT_FORMAT)
        return tpd_xsay(why, whylen, TP_EVERSION,
                        "%s is an export of format %u, newer than this trainparity-daemon reads "
                        "(%d); use a newer build",
                        path, format, TPD_EXPORT_FORMAT);
    if (format == 0)
        return tpd_xsay(why, whylen, TP_ECORRUPT, "%s is not a TrainParity export (no format)",
                        path);
    page = (uint32_t)h[16] << 8 | h[17];
    if (page == 1) page = 65536;
    pages = be32(h + 28);
    if (page < 512 || (page & (page - 1)) != 0 || h[18] != 1 || h[19] != 1 || pages == 0 ||
        be32(h + 24) != be32(h + 92))
        return tpd_xsay(why, whylen, TP_ECORRUPT, "%s is a damaged TrainParity export (its header)",
                        path);
    want = (uint64_t)page * pages;
    if ((uint64_t)sb.st_size < want)
        return tpd_xsay(why, whylen, TP_ECORRUPT,
                        "%s is a truncated TrainParity export (%lld bytes of %llu)", path,
                        (long long)sb.st_size, (unsigned long long)want);
    if ((uint64_t)sb.st_size > want)
        return tpd_xsay(why, whylen, TP_ECORRUPT,
                        "%s is a damaged TrainParity export (%lld bytes, its header says %llu)",
                        path, (long long)sb.st_size, (unsigned long long)want);
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
    tp_buf packed, back; /* scratch: an event's body packed (pack.h) */
} sink;

static tp_err xfail(tpd_export *x, int rc, char *why, size_t whylen)
{
    tp_err e = tpd_sqlite_err(rc);
    tpd_xsay(why, whylen, TP_ECORRUPT, "damaged TrainParity export: %s", sqlite3_errmsg(x->db));
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
static tp_err check_row(tpd_export *x, tpd_xtab t, sqlite3_stmt *st, uint64_t row, char *why,
                        size_t whylen)
{
    static const char *const outcomes[] = {"PASS", "FAIL", "ABSTAIN", "ERROR"};
    const uint8_t *d;
    ptrdiff_t ix;
    tp_err err;
    switch (t) {
    case TPD_XT_RUNS:
        if (row > 0 || sqlite3_column_int64(st, 0) != x->run)
            return tpd_xsay(why, whylen, TP_ECORRUPT,
                            "inconsistent TrainParity export: it must hold run %lld alone",
                            (long long)x->run);
        return TP_OK;
    case TPD_XT_EXECS:
        if (sqlite3_column_int64(st, 1) != x->run)
            return tpd_xsay(why, whylen, TP_ECORRUPT,
                            "inconsistent TrainParity export: execution %lld is not of run %lld",
                            (long long)sqlite3_column_int64(st, 0), (long long)x->run);
        if (x->nexec > 0 && sqlite3_column_int64(st, 0) <= x->exec_old[x->nexec - 1])
            return tpd_xsay(why, whylen, TP_ECORRUPT,
                            "inconsistent TrainParity export: execution ids out of order");
        if ((err = exec_add(x, sqlite3_column_int64(st, 0))) != TP_OK)
            return tpd_xsay(why, whylen, err, "out of memory");
        return TP_OK;
    case TPD_XT_PROCS:
    case TPD_XT_EVENTS:
    case TPD_XT_GAPS:
        ix = exec_index(x, sqlite3_column_int64(st, t == TPD_XT_GAPS ? 0 : 1));
        if (ix < 0)
            return tpd_xsay(why, whylen, TP_ECORRUPT,
                            "inconsistent TrainParity export: a row of %s names execution %lld, "
                            "which is not in it",
                            tpd_xtables[t].name,
                            (long long)sqlite3_column_int64(st, t == TPD_XT_GAPS ? 0 : 1));
        if (t == TPD_XT_EVENTS) {
            const char *kind = (const char *)sqlite3_column_text(st, 6);
            const uint8_t *body = sqlite3_column_blob(st, 7);
            size_t n = (size_t)sqlite3_column_bytes(st, 7);
            tp_kind k = tp_kind_parse(kind, strlen(kind));
            char bad[256] = "";
            uint8_t dg[16];
            if (k == TP_K_NONE)
                return tpd_xsay(why, whylen, TP_ECORRUPT,
                                "inconsistent TrainParity export: event %lld has the unknown kind "
                                "'%.32s'",
                                (long long)sqlite3_column_int64(st, 0), kind);
            if (k == TP_K_BLOB) {
                if (tpd_xblob_digest(body, n, dg) != TP_OK)
                    return tpd_xsay(why, whylen, TP_ECORRUPT,
                                    "inconsistent TrainParity export: blob event %lld is malformed",
                                    (long long)sqlite3_column_int64(st, 0));
                if ((err = tpd_xdigests_add(&x->refs, dg, -1)) != TP_OK)
                    return tpd_xsay(why, whylen, err, "out of memory");
            } else if (tp_body_validate(k, body, n, bad, sizeof bad) != TP_OK) {
                return tpd_xsay(why, whylen, TP_ECORRUPT,
                                "inconsistent TrainParity export: event %lld: %s",
                                (long long)sqlite3_column_int64(st, 0), bad);
            }
        }
        return TP_OK;
    case TPD_XT_VERDICTS: {
        const char *o = (const char *)sqlite3_column_text(st, 3);
        bool known = false;
        if (sqlite3_column_int64(st, 1) != x->run)
            return tpd_xsay(why, whylen, TP_ECORRUPT,
                            "inconsistent TrainParity export: verdict %lld is not of run %lld",
                            (long long)sqlite3_column_int64(st, 0), (long long)x->run);
        for (size_t i = 0; i < sizeof outcomes / sizeof outcomes[0]; i++)
            known |= strcmp(o, outcomes[i]) == 0;
        if (!known)
            return tpd_xsay(why, whylen, TP_ECORRUPT,
                            "inconsistent TrainParity export: verdict %lld has the outcome '%.16s'",
                            (long long)sqlite3_column_int64(st, 0), o);
        return TP_OK;
    }
    case TPD_XT_BLOBS:
        d = sqlite3_column_blob(st, 0);
        if (sqlite3_column_bytes(st, 0) != 16 || sqlite3_column_int64(st, 1) < 0 ||
            (x->blobs.n > 0 && memcmp(d, x->blobs.d[x->blobs.n - 1], 16) <= 0))
            return tpd_xsay(why, whylen, TP_ECORRUPT,
                            "inconsistent TrainParity export: a malformed blobs row");
        if ((err = tpd_xdigests_add(&x->blobs, d, sqlite3_column_int64(st, 1))) != TP_OK)
            return tpd_xsay(why, whylen, err, "out of memory");
        return TP_OK;
    case TPD_XT_BYTES: {
        char hex[33];
        d = sqlite3_column_blob(st, 0);
        if (sqlite3_column_bytes(st, 0) != 16 || row >= x->blobs.n ||
            memcmp(d, x->blobs.d[row], 16) != 0)
            return tpd_xsay(why, whylen, TP_ECORRUPT,
                            "inconsistent TrainParity export: blob bytes without a blobs row");
        if (sqlite3_column_bytes(st, 1) != x->blobs.size[row]) {
            tpd_xhex16(hex, d);
            return tpd_xsay(why, whylen, TP_ECORRUPT,
                            "inconsistent TrainParity export: blob %s holds %d bytes, its row says "
                            "%lld",
                            hex, sqlite3_column_bytes(st, 1), (long long)x->blobs.size[row]);
        }
        return TP_OK;
    }
    }
    return TP_OK;
}

/* bind_body binds as parameter p of ins the body of the event sel reads
 * (checked by scan), packed as the store keeps it (pack.h). */
static tp_err bind_body(sink *k, sqlite3_stmt *ins, int p, sqlite3_stmt *sel)
{
    const char *kind = (const char *)sqlite3_column_text(sel, 6);
    const uint8_t *stored;
    size_t n;
    tp_err err = tpd_body_stored(tpd_store_leafdict(k->s), tp_kind_parse(kind, strlen(kind)),
                                 sqlite3_column_blob(sel, 7), (size_t)sqlite3_column_bytes(sel, 7),
                                 &k->packed, &k->back, &stored, &n);
    if (err != TP_OK) return err;
    sqlite3_bind_blob64(ins, p, n ? (const void *)stored : "", n, SQLITE_TRANSIENT);
    return TP_OK;
}

/* sink_row inserts the current row of table t (read by sel) into the
 * target, or for blob bytes, writes the blob file. */
static tp_err sink_row(tpd_export *x, sink *k, tpd_xtab t, sqlite3_stmt *sel, sqlite3_stmt *ins,
                       uint64_t row, char *why, size_t whylen)
{
    const tpd_xtable *tb = &tpd_xtables[t];
    int p = 1, rc;
    tp_err err;
    if (t == TPD_XT_BYTES) {
        const void *bytes = sqlite3_column_blob(sel, 1);
        err = tpd_blob_put(k->blobs, sqlite3_column_blob(sel, 0), bytes ? bytes : "",
                           (size_t)sqlite3_column_bytes(sel, 1), NULL);
        return err == TP_OK
                   ? TP_OK
                   : tpd_xsay(why, whylen, err, "cannot write a blob file: %s", tp_strerror(err));
    }
    sqlite3_reset(ins);
    sqlite3_clear_bindings(ins);
    for (int i = 0; i < tb->ncols; i++) {
        unsigned f = tb->cols[i].flags;
        if (f & TPD_XC_ID) continue;
        if (f & TPD_XC_RUN)
            sqlite3_bind_int64(ins, p, k->run);
        else if (f & TPD_XC_EXEC)
            sqlite3_bind_int64(ins, p, x->exec_new[exec_index(x, sqlite3_column_int64(sel, i))]);
        else if (f & TPD_XC_SECRET)
            sqlite3_bind_null(ins, p);
        else if (f & TPD_XC_REPORT)
            bind_report(x, k, ins, p, sel, i);
        else if (t != TPD_XT_EVENTS || i != 7)
            sqlite3_bind_value(ins, p, sqlite3_column_value(sel, i));
        else if ((err = bind_body(k, ins, p, sel)) != TP_OK)
            return tpd_xsay(why, whylen, err, "cannot import an event: %s", tp_strerror(err));
        p++;
    }
    if ((rc = sqlite3_step(ins)) != SQLITE_DONE) {
        tp_err e = tpd_sqlite_err(rc);
        tpd_xsay(why, whylen, TP_EDB, "cannot import into the database: %s", sqlite3_errmsg(k->db));
        return e == TP_OK || e == TP_ECORRUPT ? TP_EDB : e;
    }
    if (t == TPD_XT_RUNS) k->run = sqlite3_last_insert_rowid(k->db);
    if (t == TPD_XT_EXECS) x->exec_new[row] = sqlite3_last_insert_rowid(k->db);
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
        err = tpd_xsay(why, whylen, TP_ENOMEM, "out of memory");
        goto out;
    }
    for (int t = 0; t < TPD_XT_COUNT; t++) {
        const tpd_xtable *tb = &tpd_xtables[t];
        uint64_t rows = 0;
        tpd_xselect_sql(&sql, tb, false);
        if (sql.oom) {
            err = tpd_xsay(why, whylen, TP_ENOMEM, "out of memory");
            goto out;
        }
        if ((rc = sqlite3_prepare_v2(x->db, tpd_str_cstr(&sql), -1, &sel, NULL)) != SQLITE_OK) {
            err = tpd_xsay(why, whylen, TP_ECORRUPT, "not a TrainParity export (table %s: %s)",
                           tb->name, sqlite3_errmsg(x->db));
            goto out;
        }
        if (k && tb->import) {
            tpd_xinsert_sql(&sql, tb, false);
            if ((rc = sqlite3_prepare_v2(k->db, tpd_str_cstr(&sql), -1, &ins, NULL)) != SQLITE_OK) {
                err = tpd_xsay(why, whylen, TP_EDB, "cannot import into the database: %s",
                               sqlite3_errmsg(k->db));
                goto out;
            }
        }
        tpd_xhash_table_begin(h, tb);
        while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
            if ((err = tpd_xcheck_types(tb, sel, "inconsistent TrainParity export", why, whylen)) !=
                    TP_OK ||
                (err = check_row(x, (tpd_xtab)t, sel, rows, why, whylen)) != TP_OK)
                goto out;
            for (int i = 0; i < tb->ncols; i++) tpd_xhash_col(h, sel, i);
            if (k && (err = sink_row(x, k, (tpd_xtab)t, sel, ins, rows, why, whylen)) != TP_OK)
                goto out;
            rows++;
        }
        if (rc != SQLITE_DONE) {
            err = xfail(x, rc, why, whylen);
            goto out;
        }
        tpd_xhash_table_end(h, rows);
        if (t == TPD_XT_RUNS && rows != 1) {
            err = tpd_xsay(why, whylen, TP_ECORRUPT, "inconsistent TrainParity export: no run %lld",
                           (long long)x->run);
            goto out;
        }
        if (t == TPD_XT_BYTES && rows != x->blobs.n) {
            err = tpd_xsay(why, whylen, TP_ECORRUPT,
                           "inconsistent TrainParity export: %llu blobs rows, %llu with bytes",
                           (unsigned long long)x->blobs.n, (unsigned long long)rows);
            goto out;
        }
        sqlite3_finalize(sel);
        sqlite3_finalize(ins);
        sel = ins = NULL;
    }
    tpd_xhash_final(h, sum);
    if (memcmp(sum, x->checksum, sizeof sum) != 0) {
        err = tpd_xsay(why, whylen, TP_ECORRUPT,
                       "damaged TrainParity export: its content does not match its checksum");
        goto out;
    }
    tpd_xdigests_sort(&x->refs);
    for (size_t i = 0; i < x->refs.n; i++) {
        if (tpd_xdigests_find(&x->blobs, x->refs.d[i]) < 0) {
            char hex[33];
            tpd_xhex16(hex, x->refs.d[i]);
            err = tpd_xsay(why, whylen, TP_ECORRUPT,
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
        return tpd_xsay(why, whylen, TP_ECORRUPT, "not a TrainParity export (export_info: %s)",
                        sqlite3_errmsg(x->db));
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && err == TP_OK) {
        int64_t format = sqlite3_column_int64(st, 0), schema = sqlite3_column_int64(st, 1);
        rows++;
        if (sqlite3_column_type(st, 0) != SQLITE_INTEGER ||
            sqlite3_column_type(st, 1) != SQLITE_INTEGER ||
            sqlite3_column_type(st, 2) != SQLITE_INTEGER ||
            sqlite3_column_type(st, 3) != SQLITE_BLOB || sqlite3_column_bytes(st, 3) != 16 ||
            format != TPD_EXPORT_FORMAT) {
            err = tpd_xsay(why, whylen, TP_ECORRUPT, "damaged TrainParity export (export_info)");
        } else if (schema > TPD_STORE_VERSION) {
            err = tpd_xsay(why, whylen, TP_EVERSION,
                           "the export holds database version %lld, newer than this "
                           "trainparity-daemon reads (%d); use a newer build",
                           (long long)schema, TPD_STORE_VERSION);
        } else if (schema < TPD_EXPORT_OLDEST_SCHEMA) {
            err =
                tpd_xsay(why, whylen, TP_EVERSION,
                         "the export holds database version %lld; this trainparity-daemon imports "
                         "versions %d to %d",
                         (long long)schema, TPD_EXPORT_OLDEST_SCHEMA, TPD_STORE_VERSION);
        } else {
            x->run = sqlite3_column_int64(st, 2);
            memcpy(x->checksum, sqlite3_column_blob(st, 3), 16);
        }
    }
    if (err == TP_OK && rc != SQLITE_DONE) err = xfail(x, rc, why, whylen);
    if (err == TP_OK && rows != 1)
        err = tpd_xsay(why, whylen, TP_ECORRUPT, "damaged TrainParity export (export_info)");
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
            err = tpd_xsay(why, whylen, TP_ECORRUPT, "damaged TrainParity export (%s)",
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
        err = tpd_xsay(why, whylen, TP_ENOMEM, "out of memory");
        goto fail;
    }
    rc = sqlite3_open_v2(tpd_str_cstr(&uri), &x->db,
                         SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        err = tpd_xsay(why, whylen, TP_EIO, "cannot open %s: %s", path,
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
        return tpd_xsay(why, whylen, TP_EINVAL, "the database is read-only or in a transaction");
    memset(&k, 0, sizeof k);
    k.s = s;
    k.db = tpd_store_db(s);
    tpd_str_init(&k.report);
    if ((err = tpd_blobs_dir_for(tpd_store_path(s), dir, sizeof dir)) != TP_OK ||
        (err = tpd_blobs_open(&k.blobs, dir)) != TP_OK) {
        tpd_xsay(why, whylen, err, "cannot locate the blob store");
        goto out;
    }
    if ((err = tpd_store_begin(s)) != TP_OK) {
        tpd_xsay(why, whylen, err, "cannot start a transaction: %s", tpd_store_errmsg(s));
        goto out;
    }
    if ((err = scan(x, &k, why, whylen)) == TP_OK && k.report.oom)
        err = tpd_xsay(why, whylen, TP_ENOMEM, "out of memory");
    if (err != TP_OK) {
        tpd_store_rollback(s);
        goto out;
    }
    if ((err = tpd_store_commit(s)) != TP_OK) {
        tpd_xsay(why, whylen, err, "cannot commit the import: %s", tpd_store_errmsg(s));
        goto out;
    }
    *run = k.run;
out:
    tpd_blobs_close(k.blobs);
    tpd_str_free(&k.report);
    tp_buf_free(&k.packed);
    tp_buf_free(&k.back);
    return err;
}

void tpd_export_close(tpd_export *x)
{
    if (x == NULL) return;
    if (x->db) sqlite3_close_v2(x->db);
    free(x->exec_old);
    free(x->exec_new);
    tpd_xdigests_free(&x->blobs);
    tpd_xdigests_free(&x->refs);
    free(x);
}
