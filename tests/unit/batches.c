/* SPDX-License-Identifier: MIT
 * batches.c -- valid wire batches for tests and benchmarks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/batches.h"

static void key(tp_buf *b, const char *k)
{
    tp_mp_cstr(b, k);
}

void tb_begin(tb *t, int64_t run, int64_t exec, int64_t pid, int64_t rank, const char *tok)
{
    tp_header h;
    memset(&h, 0, sizeof h);
    h.run = run;
    h.exec = exec;
    h.pid = pid;
    h.rank = rank;
    if (tok) {
        h.tok = tok;
        h.tok_len = (uint32_t)strlen(tok);
    }
    tp_buf_init(&t->buf);
    t->off = tp_enc_batch_begin(&t->buf, &h);
    t->n = 0;
}

void tb_begin_key(tb *t, int64_t run, int64_t exec, int64_t pid, int64_t rank, const char *tok,
                  const char *k)
{
    tp_buf *b = &t->buf;
    tp_buf_init(b);
    tp_mp_map(b, 6 + (tok != NULL) + (k != NULL));
    key(b, "v"), tp_mp_uint(b, TP_SCHEMA_VERSION);
    key(b, "run"), tp_mp_int(b, run);
    key(b, "exec"), tp_mp_int(b, exec);
    key(b, "pid"), tp_mp_int(b, pid);
    key(b, "rank"), tp_mp_int(b, rank);
    if (tok) key(b, "tok"), tp_mp_cstr(b, tok);
    if (k) key(b, "key"), tp_mp_cstr(b, k);
    key(b, "events");
    t->off = tp_mp_array32(b);
    t->n = 0;
}

void tb_end(tb *t)
{
    tp_enc_batch_end(&t->buf, t->off, t->n);
}

void tb_free(tb *t)
{
    tp_buf_free(&t->buf);
}

void tb_digest(uint8_t d[16], uint64_t x)
{
    for (int i = 0; i < 16; i++) d[i] = (uint8_t)((x >> (8 * (i % 8))) ^ (uint8_t)(i * 37));
}

static void ev(tb *t, uint64_t seq, int64_t step, tp_kind k)
{
    /* a time that follows seq and stays a valid time for any seq */
    tp_enc_event_begin(&t->buf, seq, 1000 + seq % 1000000000u, step, k);
    t->n++;
}

static void strs(tp_buf *b, int n, const char *const *s)
{
    tp_mp_array(b, (uint32_t)n);
    for (int i = 0; i < n; i++) tp_mp_cstr(b, s[i]);
}

void tb_hello(tb *t, uint64_t seq, int64_t rank)
{
    static const char *const argv[] = {"python", "train.py", "--lr", "0.1"};
    tp_buf *b = &t->buf;
    ev(t, seq, 0, TP_K_HELLO);
    tp_mp_map(b, 16);
    key(b, "schema"), tp_mp_uint(b, TP_SCHEMA_VERSION);
    key(b, "agent"), tp_mp_cstr(b, "0.1.0");
    key(b, "python"), tp_mp_cstr(b, "3.11.7");
    key(b, "torch"), tp_mp_cstr(b, "2.13.0");
    key(b, "numpy"), tp_mp_nil(b);
    key(b, "argv"), strs(b, 4, argv);
    key(b, "cwd"), tp_mp_cstr(b, "/home/u/proj");
    key(b, "exe"), tp_mp_cstr(b, "/usr/bin/python3");
    key(b, "role"), tp_mp_cstr(b, "main");
    key(b, "rank"), tp_mp_int(b, rank);
    key(b, "world"), tp_mp_int(b, 2);
    key(b, "local_rank"), tp_mp_int(b, rank);
    key(b, "ppid"), tp_mp_int(b, 1);
    key(b, "interrupt_at"), tp_mp_int(b, 4);
    key(b, "capture"), tp_mp_cstr(b, "digests");
    key(b, "cxx"), tp_mp_cstr(b, "records");
}

void tb_bye(tb *t, uint64_t seq, uint64_t sent, uint64_t dropped)
{
    tp_buf *b = &t->buf;
    ev(t, seq, 0, TP_K_BYE);
    tp_mp_map(b, 7);
    key(b, "reason"), tp_mp_cstr(b, "exit");
    key(b, "code"), tp_mp_int(b, 0);
    key(b, "sent"), tp_mp_uint(b, sent);
    key(b, "dropped"), tp_mp_uint(b, dropped);
    key(b, "errors"), tp_mp_uint(b, 0);
    key(b, "spooled"), tp_mp_bool(b, false);
    key(b, "exc"), tp_mp_nil(b);
}

/* leaves writes n tensor leaves under prefix, then (if extra) one value
 * leaf of each type and a digest leaf. */
static void leaves(tp_buf *b, const char *prefix, int n, bool extra)
{
    tp_mp_array(b, (uint32_t)(n + (extra ? 6 : 0)));
    for (int i = 0; i < n; i++) {
        char path[96];
        int64_t shape[2] = {64, 32 + i % 4};
        uint8_t d[16];
        tp_stats st = {0.5 * i, 1.5 + i, 0.25, (uint64_t)(i == 1)};
        int len = snprintf(path, sizeof path, "%s.layer%d.weight", prefix, i);
        tb_digest(d, (uint64_t)i * 7919u);
        tp_enc_leaf_tensor(b, path, (size_t)len, "float32", shape, 2, d, &st, "cpu", i == 0);
    }
    if (!extra) return;
    tp_enc_leaf_value_begin(b, "optimizer.group[0].lr", 21);
    tp_mp_f64(b, 0.1);
    tp_enc_leaf_value_begin(b, "scheduler.last_epoch", 20);
    tp_mp_int(b, 3);
    tp_enc_leaf_value_begin(b, "optimizer.group[0].nesterov", 27);
    tp_mp_bool(b, true);
    tp_enc_leaf_value_begin(b, "optimizer.cls", 13);
    tp_mp_cstr(b, "SGD");
    tp_enc_leaf_value_begin(b, "scaler.none", 11);
    tp_mp_nil(b);
    {
        uint8_t d[16];
        tb_digest(d, 42);
        tp_enc_leaf_digest(b, "rng.torch_cpu", 13, d, 5056);
    }
}

void tb_snapshot(tb *t, uint64_t seq, int64_t step, int nleaves)
{
    tb_snapshot_why(t, seq, step, nleaves, "backward", "model");
}

void tb_snapshot_why(tb *t, uint64_t seq, int64_t step, int nleaves, const char *why,
                     const char *prefix)
{
    tp_buf *b = &t->buf;
    ev(t, seq, step, TP_K_SNAPSHOT);
    tp_mp_map(b, 2);
    key(b, "why"), tp_mp_cstr(b, why);
    key(b, "leaves"), leaves(b, prefix, nleaves, true);
}

void tb_backward(tb *t, uint64_t seq, int64_t step, double loss, uint64_t count)
{
    tp_buf *b = &t->buf;
    ev(t, seq, step, TP_K_BACKWARD);
    tp_mp_map(b, 4);
    key(b, "loss"), tp_mp_f64(b, loss);
    key(b, "dtype"), tp_mp_cstr(b, "float32");
    key(b, "count"), tp_mp_uint(b, count);
    key(b, "numel"), tp_mp_uint(b, 1);
}

void tb_backward_scaled(tb *t, uint64_t seq, int64_t step, double loss, uint64_t count, int scaled)
{
    tp_buf *b = &t->buf;
    ev(t, seq, step, TP_K_BACKWARD);
    tp_mp_map(b, 5 + (scaled >= 0));
    key(b, "loss"), tp_mp_f64(b, loss);
    key(b, "dtype"), tp_mp_cstr(b, "float16");
    key(b, "count"), tp_mp_uint(b, count);
    key(b, "numel"), tp_mp_uint(b, 1);
    if (scaled >= 0) key(b, "scaled"), tp_mp_bool(b, scaled != 0);
    key(b, "mean_over"), tp_mp_uint(b, 32);
}

void tb_step(tb *t, uint64_t seq, int64_t step, bool pre, int ngrads, double norm, double lr)
{
    tp_buf *b = &t->buf;
    ev(t, seq, step, TP_K_STEP);
    tp_mp_map(b, pre ? 12 : 9);
    key(b, "phase"), tp_mp_cstr(b, pre ? "pre" : "post");
    key(b, "opt"), tp_mp_uint(b, 0);
    key(b, "cls"), tp_mp_cstr(b, "SGD");
    key(b, "skipped"), tp_mp_bool(b, false);
    key(b, "nparams"), tp_mp_uint(b, 4);
    key(b, "ngrads"), tp_mp_uint(b, (uint64_t)ngrads);
    key(b, "via"), tp_mp_cstr(b, "optimizer");
    if (pre) {
        key(b, "lrs"), tp_mp_array(b, 2), tp_mp_f64(b, lr), tp_mp_f64(b, lr / 10);
        key(b, "grads"), leaves(b, "grad", ngrads, false);
        key(b, "gnorm"), tp_mp_f64(b, norm);
        key(b, "unorm"), tp_mp_nil(b);
        key(b, "changed"), tp_mp_nil(b);
    } else {
        key(b, "unorm"), tp_mp_f64(b, norm);
        key(b, "changed"), tp_mp_bool(b, true);
    }
}

void tb_sched(tb *t, uint64_t seq, int64_t step)
{
    tp_buf *b = &t->buf;
    ev(t, seq, step, TP_K_SCHED);
    tp_mp_map(b, 4);
    key(b, "sched"), tp_mp_uint(b, 0);
    key(b, "cls"), tp_mp_cstr(b, "StepLR");
    key(b, "leaves"), tp_mp_array(b, 1);
    tp_enc_leaf_value_begin(b, "scheduler.last_epoch", 20);
    tp_mp_int(b, step);
    key(b, "metric"), tp_mp_nil(b);
}

void tb_saveload(tb *t, uint64_t seq, int64_t step, tp_kind k)
{
    tp_buf *b = &t->buf;
    uint8_t d[16];
    tb_digest(d, 99);
    ev(t, seq, step, k);
    tp_mp_map(b, 10);
    key(b, "api"), tp_mp_cstr(b, "torch");
    key(b, "target"), tp_mp_cstr(b, "path");
    key(b, "name"), tp_mp_cstr(b, "ckpt.pt");
    key(b, "digest"), tp_mp_bin(b, d, 16);
    key(b, "via"), tp_mp_cstr(b, "records");
    key(b, "records"), tp_mp_array(b, 1), tp_mp_array(b, 3), tp_mp_cstr(b, "data.pkl"),
        tp_mp_uint(b, 1234), tp_mp_bin(b, d, 16);
    key(b, "manifest"), leaves(b, "model", 2, false);
    key(b, "bytes"), tp_mp_uint(b, 4096);
    key(b, "error"), tp_mp_nil(b);
    key(b, "armed"), tp_mp_bool(b, k == TP_K_SAVE);
}

void tb_restore(tb *t, uint64_t seq, int64_t step)
{
    tp_buf *b = &t->buf;
    static const char *const missing[] = {"fc.bias"};
    ev(t, seq, step, TP_K_RESTORE);
    tp_mp_map(b, 7);
    key(b, "what"), tp_mp_cstr(b, "module");
    key(b, "obj"), tp_mp_cstr(b, "model");
    key(b, "op"), tp_mp_cstr(b, "load_state_dict");
    key(b, "load"), tp_mp_int(b, 7);
    key(b, "missing"), strs(b, 1, missing);
    key(b, "unexpected"), strs(b, 0, NULL);
    key(b, "seed"), tp_mp_nil(b);
}

void tb_batchev(tb *t, uint64_t seq, int64_t step)
{
    tp_buf *b = &t->buf;
    ev(t, seq, step, TP_K_BATCH);
    tp_mp_map(b, 13);
    key(b, "loader"), tp_mp_uint(b, 0);
    key(b, "epoch"), tp_mp_uint(b, 1);
    key(b, "pos"), tp_mp_uint(b, (uint64_t)step);
    key(b, "ids"), tp_mp_array(b, 3), tp_mp_int(b, 5), tp_mp_int(b, -1), tp_mp_int(b, 9);
    key(b, "worker"), tp_mp_nil(b);
    key(b, "size"), tp_mp_uint(b, 3);
    key(b, "dataset_len"), tp_mp_int(b, 100);
    key(b, "sampler"), tp_mp_cstr(b, "RandomSampler");
    key(b, "rank"), tp_mp_int(b, 0);
    key(b, "world"), tp_mp_int(b, 1);
    key(b, "total_size"), tp_mp_nil(b);
    key(b, "drop_last"), tp_mp_bool(b, false);
    key(b, "id_source"), tp_mp_cstr(b, "index");
}

void tb_amp(tb *t, uint64_t seq, int64_t step)
{
    tp_buf *b = &t->buf;
    ev(t, seq, step, TP_K_AMP);
    tp_mp_map(b, 4);
    key(b, "op"), tp_mp_cstr(b, "update");
    key(b, "scale"), tp_mp_f64(b, 65536.0);
    key(b, "found_inf"), tp_mp_bool(b, false);
    key(b, "opt"), tp_mp_nil(b);
}

void tb_clip(tb *t, uint64_t seq, int64_t step)
{
    tp_buf *b = &t->buf;
    ev(t, seq, step, TP_K_CLIP);
    tp_mp_map(b, 4);
    key(b, "op"), tp_mp_cstr(b, "norm");
    key(b, "max"), tp_mp_int(b, 1); /* an int where a float is declared */
    key(b, "norm"), tp_mp_f64(b, 0.75);
    key(b, "nparams"), tp_mp_uint(b, 4);
}

void tb_blob(tb *t, uint64_t seq, int64_t step, const uint8_t d[16], size_t n, uint8_t fill)
{
    tp_buf *b = &t->buf;
    uint8_t *data = malloc(n ? n : 1);
    memset(data, fill, n);
    ev(t, seq, step, TP_K_BLOB);
    tp_mp_map(b, 4);
    key(b, "digest"), tp_mp_bin(b, d, 16);
    key(b, "data"), tp_mp_bin(b, data, n);
    key(b, "dtype"), tp_mp_cstr(b, "uint8");
    key(b, "shape"), tp_mp_array(b, 1), tp_mp_int(b, (int64_t)n);
    free(data);
}

void tb_error(tb *t, uint64_t seq, int64_t step)
{
    tp_buf *b = &t->buf;
    ev(t, seq, step, TP_K_ERROR);
    tp_mp_map(b, 2);
    key(b, "where"), tp_mp_cstr(b, "hook.step");
    key(b, "msg"), tp_mp_cstr(b, "ValueError: boom");
}

void tb_cover(tb *t, uint64_t seq, int64_t step)
{
    static const char *const params[] = {"model.0.weight", "model.0.bias"};
    static const char *const shapes[] = {"16x8", "16"};
    static const char *const graded[] = {"model.0.weight", "<Linear>.weight"};
    static const char *const gshapes[] = {"16x8", "4x16"};
    tp_buf *b = &t->buf;
    ev(t, seq, step, TP_K_COVER);
    tp_mp_map(b, 9);
    key(b, "opt"), tp_mp_uint(b, 1);
    key(b, "cls"), tp_mp_cstr(b, "Adam");
    key(b, "params"), strs(b, 2, params);
    key(b, "ids"), tp_mp_array(b, 2), tp_mp_int(b, 101), tp_mp_int(b, 102);
    key(b, "groups"), tp_mp_array(b, 2), tp_mp_int(b, 0), tp_mp_int(b, 1);
    key(b, "shapes"), strs(b, 2, shapes);
    key(b, "graded"), strs(b, 2, graded);
    key(b, "graded_ids"), tp_mp_array(b, 2), tp_mp_int(b, 101), tp_mp_int(b, 201);
    key(b, "graded_shapes"), strs(b, 2, gshapes);
}

void tb_zero_grad(tb *t, uint64_t seq, int64_t step)
{
    tp_buf *b = &t->buf;
    ev(t, seq, step, TP_K_ZERO_GRAD);
    tp_mp_map(b, 3);
    key(b, "which"), tp_mp_cstr(b, "optimizer");
    key(b, "opt"), tp_mp_uint(b, 0);
    key(b, "set_to_none"), tp_mp_bool(b, true);
}

uint64_t tb_all(tb *t, uint64_t seq)
{
    uint8_t d[16];
    tb_digest(d, 0xb10b);
    tb_hello(t, seq++, 0);
    tb_batchev(t, seq++, 0);
    tb_snapshot(t, seq++, 0, 3);
    tb_backward(t, seq++, 0, 2.5, 1);
    tb_clip(t, seq++, 0);
    tb_amp(t, seq++, 0);
    tb_cover(t, seq++, 0);
    tb_step(t, seq++, 0, true, 2, 1.25, 0.1);
    tb_step(t, seq++, 0, false, 0, 0.01, 0.1);
    tb_zero_grad(t, seq++, 1);
    tb_sched(t, seq++, 1);
    tb_saveload(t, seq++, 1, TP_K_SAVE);
    tb_saveload(t, seq++, 1, TP_K_LOAD);
    tb_restore(t, seq++, 1);
    tb_blob(t, seq++, 1, d, 100, 0x5a);
    tb_error(t, seq++, 1);
    return seq;
}
