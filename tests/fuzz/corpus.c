/* SPDX-License-Identifier: MIT
 * corpus.c -- writes the seed corpus of the fuzz targets: fuzz_corpus DIR
 * fills DIR/ingest, DIR/control and DIR/spool (tests/fuzz/corpus is its
 * output, committed; run it again when the wire schema or the commands
 * change).  Batches are the real encoder's (tests/unit/batches.c), for run
 * 1, execution 1 and its key (fuzz_store.h), so that the targets reach the
 * store; a few seeds are near misses (a wrong key, a torn frame). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proto/event.h"
#include "tests/fuzz/fuzz_store.h"
#include "tests/unit/batches.h"

static const char *root;

static void put(const char *target, const char *name, const tp_buf *b)
{
    char path[4096];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", root, target);
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        perror(path);
        exit(1);
    }
    snprintf(path, sizeof path, "%s/%s/%s", root, target, name);
    if (b->oom || (f = fopen(path, "wb")) == NULL ||
        (b->len && fwrite(b->data, 1, b->len, f) != b->len) || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

/* begin starts a batch of execution exec carrying key (NULL: none). */
static void begin(tb *t, int64_t exec, const char *key, const char *tok)
{
    tp_header h = {.run = FUZZ_RUN, .exec = exec, .pid = FUZZ_PID, .rank = 0, .tok = tok};
    if (tok) h.tok_len = (uint32_t)strlen(tok);
    if (key) h.key = key, h.key_len = (uint32_t)strlen(key);
    tp_buf_init(&t->buf);
    t->off = tp_enc_batch_begin(&t->buf, &h);
    t->n = 0;
}

/* ---- ingest: one batch per kind, all kinds, near misses ---- */

typedef void (*one_fn)(tb *t, uint64_t seq);

static void one_hello(tb *t, uint64_t s)
{
    tb_hello(t, s, 0);
}
static void one_bye(tb *t, uint64_t s)
{
    tb_bye(t, s, s + 1, 0);
}
static void one_snapshot(tb *t, uint64_t s)
{
    tb_snapshot(t, s, 0, 3);
}
static void one_backward(tb *t, uint64_t s)
{
    tb_backward(t, s, 0, 2.5, 1);
}
static void one_step(tb *t, uint64_t s)
{
    tb_step(t, s, 0, true, 2, 1.25, 0.1);
}
static void one_sched(tb *t, uint64_t s)
{
    tb_sched(t, s, 1);
}
static void one_save(tb *t, uint64_t s)
{
    tb_saveload(t, s, 1, TP_K_SAVE);
}
static void one_load(tb *t, uint64_t s)
{
    tb_saveload(t, s, 1, TP_K_LOAD);
}
static void one_restore(tb *t, uint64_t s)
{
    tb_restore(t, s, 1);
}
static void one_batch(tb *t, uint64_t s)
{
    tb_batchev(t, s, 0);
}
static void one_amp(tb *t, uint64_t s)
{
    tb_amp(t, s, 0);
}
static void one_clip(tb *t, uint64_t s)
{
    tb_clip(t, s, 0);
}
static void one_blob(tb *t, uint64_t s)
{
    uint8_t d[16];
    tb_digest(d, 0xb10b);
    tb_blob(t, s, 1, d, 64, 0x5a);
}
static void one_error(tb *t, uint64_t s)
{
    tb_error(t, s, 1);
}

static const struct {
    const char *name;
    one_fn fn;
} kinds[] = {
    {"hello", one_hello},       {"bye", one_bye},     {"snapshot", one_snapshot},
    {"backward", one_backward}, {"step", one_step},   {"sched", one_sched},
    {"save", one_save},         {"load", one_load},   {"restore", one_restore},
    {"batch", one_batch},       {"amp", one_amp},     {"clip", one_clip},
    {"blob", one_blob},         {"error", one_error},
};

static void ingest_seeds(tp_buf *spool)
{
    char name[64];
    tb t;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        begin(&t, FUZZ_EXEC, FUZZ_KEY, NULL);
        kinds[i].fn(&t, i);
        tb_end(&t);
        snprintf(name, sizeof name, "kind-%s", kinds[i].name);
        put("ingest", name, &t.buf);
        tb_free(&t);
    }
    begin(&t, FUZZ_EXEC, FUZZ_KEY, NULL);
    tb_bye(&t, tb_all(&t, 0) + 1, 15, 0);
    tb_end(&t);
    put("ingest", "all-kinds", &t.buf);
    /* the spool seeds: this batch framed, and torn */
    for (int k = 0; k < 4; k++) {
        uint8_t hdr[4] = {(uint8_t)(t.buf.len >> 24), (uint8_t)(t.buf.len >> 16),
                          (uint8_t)(t.buf.len >> 8), (uint8_t)t.buf.len};
        tp_buf_append(&spool[k], hdr, 4);
        tp_buf_append(&spool[k], t.buf.data, k == 3 ? t.buf.len / 2 : t.buf.len);
    }
    tb_free(&t);
    begin(&t, FUZZ_EXEC, "ffeeddccbbaa99887766554433221100", "t0k");
    tb_backward(&t, 0, 0, 1.0, 1);
    tb_end(&t);
    put("ingest", "wrong-key", &t.buf);
    tb_free(&t);
    begin(&t, 7, NULL, NULL);
    tb_end(&t);
    put("ingest", "no-key-empty", &t.buf);
    tb_free(&t);
}

/* ---- control: every command, with and without its arguments ---- */

static void req(tp_buf *b, const char *cmd, uint32_t nargs)
{
    tp_buf_init(b);
    tp_mp_map(b, nargs + 1);
    tp_mp_cstr(b, "cmd");
    tp_mp_cstr(b, cmd);
}

static void control_seeds(void)
{
    static const char *const argv[] = {"python", "train.py", "--lr", "0.1"};
    static const char *const bare[] = {"ping",   "run.create", "exec.create", "exec.finish",
                                       "seen",   "query",      "verdict",     "attach",
                                       "detach", "ingest",     "shutdown",    "no.such"};
    char name[64];
    tp_buf b;
    for (size_t i = 0; i < sizeof bare / sizeof bare[0]; i++) {
        req(&b, bare[i], 0);
        snprintf(name, sizeof name, "bare-%s", bare[i]);
        put("control", name, &b);
        tp_buf_free(&b);
    }
    req(&b, "run.create", 3);
    tp_mp_cstr(&b, "name"), tp_mp_cstr(&b, "r");
    tp_mp_cstr(&b, "check"), tp_mp_cstr(&b, "resume");
    tp_mp_cstr(&b, "params"), tp_mp_cstr(&b, "{\"at\": 2, \"rtol\": 0.001}");
    put("control", "run.create", &b);
    tp_buf_free(&b);
    req(&b, "exec.create", 3);
    tp_mp_cstr(&b, "run"), tp_mp_int(&b, FUZZ_RUN);
    tp_mp_cstr(&b, "role"), tp_mp_cstr(&b, "A");
    tp_mp_cstr(&b, "argv"), tp_mp_array(&b, 4);
    for (int i = 0; i < 4; i++) tp_mp_cstr(&b, argv[i]);
    put("control", "exec.create", &b);
    tp_buf_free(&b);
    req(&b, "exec.finish", 4);
    tp_mp_cstr(&b, "exec"), tp_mp_int(&b, FUZZ_EXEC);
    tp_mp_cstr(&b, "status"), tp_mp_int(&b, 0);
    tp_mp_cstr(&b, "signal"), tp_mp_nil(&b);
    tp_mp_cstr(&b, "wait_ms"), tp_mp_int(&b, 0);
    put("control", "exec.finish", &b);
    tp_buf_free(&b);
    req(&b, "seen", 2);
    tp_mp_cstr(&b, "exec"), tp_mp_int(&b, FUZZ_EXEC);
    tp_mp_cstr(&b, "pid"), tp_mp_int(&b, FUZZ_PID);
    put("control", "seen", &b);
    tp_buf_free(&b);
    {
        static const char *const whats[] = {"runs", "run", "steps"};
        for (int i = 0; i < 3; i++) {
            req(&b, "query", 2);
            tp_mp_cstr(&b, "what"), tp_mp_cstr(&b, whats[i]);
            tp_mp_cstr(&b, "id"), tp_mp_int(&b, FUZZ_RUN);
            snprintf(name, sizeof name, "query-%s", whats[i]);
            put("control", name, &b);
            tp_buf_free(&b);
        }
    }
    req(&b, "verdict", 3);
    tp_mp_cstr(&b, "run"), tp_mp_int(&b, FUZZ_RUN);
    tp_mp_cstr(&b, "rtol"), tp_mp_f64(&b, 1e-4);
    tp_mp_cstr(&b, "atol"), tp_mp_int(&b, 0);
    put("control", "verdict", &b);
    tp_buf_free(&b);
    req(&b, "attach", 2);
    tp_mp_cstr(&b, "pid"), tp_mp_int(&b, 1);
    tp_mp_cstr(&b, "owner"), tp_mp_bool(&b, true);
    put("control", "attach", &b);
    tp_buf_free(&b);
    req(&b, "detach", 1);
    tp_mp_cstr(&b, "pid"), tp_mp_int(&b, 1);
    put("control", "detach", &b);
    tp_buf_free(&b);
    req(&b, "ping", 1);
    tp_mp_cstr(&b, "tok"), tp_mp_cstr(&b, "t0k");
    put("control", "ping-tok", &b);
    tp_buf_free(&b);
    req(&b, "seen", 2); /* a duplicate key */
    tp_mp_cstr(&b, "exec"), tp_mp_int(&b, 1);
    tp_mp_cstr(&b, "exec"), tp_mp_int(&b, 2);
    put("control", "duplicate-key", &b);
    tp_buf_free(&b);
}

int main(int argc, char **argv)
{
    tp_buf spool[4], bad;
    uint8_t junk[4] = {0x7f, 0xff, 0xff, 0xff}; /* a length past TP_MAX_MESSAGE */
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_corpus DIR\n");
        return 64;
    }
    root = argv[1];
    if (mkdir(root, 0755) != 0 && errno != EEXIST) {
        perror(root);
        return 1;
    }
    for (int k = 0; k < 4; k++) tp_buf_init(&spool[k]);
    ingest_seeds(spool);
    control_seeds();
    /* spool: one frame; a bad frame between two good ones; an oversized
     * length; a torn last frame; an empty file */
    put("spool", "one-frame", &spool[0]);
    tp_buf_init(&bad);
    tp_buf_append(&bad, "\0\0\0\3\x81\xa1v", 7);
    tp_buf_append(&spool[1], bad.data, bad.len);
    tp_buf_append(&spool[1], spool[2].data, spool[2].len);
    put("spool", "bad-between", &spool[1]);
    tp_buf_append(&spool[2], junk, 4);
    put("spool", "oversized", &spool[2]);
    put("spool", "torn", &spool[3]);
    tp_buf_reset(&bad);
    put("spool", "empty", &bad);
    tp_buf_free(&bad);
    for (int k = 0; k < 4; k++) tp_buf_free(&spool[k]);
    return 0;
}
