/* SPDX-License-Identifier: MIT
 * fuzz_store.c -- the fuzz targets' scratch store (fuzz_store.h). */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/fuzz_store.h"

#define TIDY_EVERY 4096 /* inputs between two sweeps of the blob files */

static char dir[4096];
static tpd_store *store;
static tpd_ingest *ingest;
static unsigned inputs;

static void die(const char *what, const char *why)
{
    fprintf(stderr, "fuzz harness: %s: %s\n", what, why);
    abort();
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)ftw;
    remove(path); /* best effort: go on */
    return 0;
}

/* rm_file removes files only: the blob store made its folders once. */
static int rm_file(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)ftw;
    if (flag == FTW_F) remove(path);
    return 0;
}

static void rm_tree(const char *path)
{
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* at_exit closes the store and removes the process's folder. */
static void at_exit(void)
{
    tpd_ingest_destroy(ingest);
    tpd_store_close(store);
    ingest = NULL;
    store = NULL;
    if (dir[0]) rm_tree(dir);
}

void fuzz_path(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

tpd_store *fuzz_store(void)
{
    const char *tmp = getenv("TMPDIR");
    char db[4200], why[512] = "";
    int64_t run = 0, exec = 0;
    sqlite3_stmt *st = NULL;
    tp_err err;
    if (store) return store;
    snprintf(dir, sizeof dir, "%s/tp-fuzz-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) die("mkdtemp", dir);
    atexit(at_exit);
    fuzz_path(db, sizeof db, "runs.db");
    if ((err = tpd_store_open(&store, db, 0, why, sizeof why)) != TP_OK) die("store", why);
    /* speed over durability: the database lives as long as the process */
    sqlite3_exec(tpd_store_db(store), "PRAGMA synchronous=OFF", NULL, NULL, NULL);
    if (tpd_store_run_create(store, "fuzz", "record", "{}", &run) != TP_OK || run != FUZZ_RUN ||
        tpd_store_exec_create(store, run, "main", "[\"python\",\"train.py\"]", &exec) != TP_OK ||
        exec != FUZZ_EXEC)
        die("store", "cannot create run 1 and execution 1");
    /* a fixed key, so that the seed batches carry the right one */
    if (sqlite3_prepare_v2(tpd_store_db(store), "UPDATE executions SET key = ?1 WHERE id = ?2", -1,
                           &st, NULL) != SQLITE_OK)
        die("store", sqlite3_errmsg(tpd_store_db(store)));
    sqlite3_bind_text(st, 1, FUZZ_KEY, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, exec);
    if (sqlite3_step(st) != SQLITE_DONE) die("store", "cannot set the key");
    sqlite3_finalize(st);
    return store;
}

tpd_ingest *fuzz_ingest(void)
{
    tp_err err;
    if (ingest) return ingest;
    if ((err = tpd_ingest_create(&ingest, fuzz_store(), NULL)) != TP_OK)
        die("ingest", tp_strerror(err));
    return ingest;
}

void fuzz_begin(void)
{
    tp_err err = tpd_store_begin(fuzz_store());
    if (err != TP_OK) die("begin", tpd_store_errmsg(store));
}

void fuzz_end(void)
{
    char blobs[4200];
    tpd_store_rollback(store);
    if (++inputs % TIDY_EVERY != 0) return;
    fuzz_path(blobs, sizeof blobs, "runs.db.blobs");
    nftw(blobs, rm_file, 16, FTW_PHYS);
}
