/* SPDX-License-Identifier: MIT
 * proto_test.c -- the wire schema: round trips of every event kind with
 * every field, a table of malformed messages, truncation at every byte and a
 * randomized mutation loop (decode must answer, never crash). */
#define _DEFAULT_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "proto/control.h"
#include "proto/event.h"
#include "tests/unit/batches.h"

/* ---- round trips ---- */

static tp_batch decode_ok(const tp_buf *b)
{
    tp_batch out;
    char why[256] = "";
    tp_err rc = tp_batch_decode(b->data, b->len, &out, why, sizeof why);
    ck_assert_msg(rc == TP_OK, "decode: %s (%s)", tp_strerror(rc), why);
    return out;
}

static const tp_event *find_kind(const tp_batch *b, tp_kind k, int nth)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->ev[i].kind == k && nth-- == 0) return &b->ev[i];
    ck_abort_msg("no event of kind %s", tp_kind_name(k));
    return NULL;
}

/* fld is e's field named key (-1, which every reader refuses, when its
 * kind has none): the wire names the tests write, as readers' field ids. */
static tp_field fld(const tp_event *e, const char *key)
{
    return (tp_field)tp_field_of(tp_kinds[e->kind].body, key, (uint32_t)strlen(key));
}

static void assert_str(const tp_event *e, tp_field key, const char *want)
{
    const char *s;
    uint32_t n;
    ck_assert_int_eq(tp_body_str(e, key, &s, &n), TP_OK);
    ck_assert_int_eq(n, strlen(want));
    ck_assert(memcmp(s, want, n) == 0);
}

static void assert_int(const tp_event *e, tp_field key, int64_t want)
{
    int64_t v;
    ck_assert_int_eq(tp_body_int(e, key, &v), TP_OK);
    ck_assert_int_eq(v, want);
}

static void assert_f64(const tp_event *e, tp_field key, double want)
{
    double v;
    ck_assert_int_eq(tp_body_f64(e, key, &v), TP_OK);
    ck_assert_double_eq(v, want);
}

/* assert_strs checks that e's key is the array of the n strings want. */
static void assert_strs(const tp_event *e, const char *key, uint32_t n, const char *const *want)
{
    tp_mpr r;
    uint32_t got, len;
    const char *s;
    ck_assert_int_eq(tp_body_find(e, fld(e, key), &r), TP_OK);
    ck_assert_int_eq(tp_mpr_array(&r, &got), TP_OK);
    ck_assert_uint_eq(got, n);
    for (uint32_t i = 0; i < n; i++) {
        ck_assert_int_eq(tp_mpr_str(&r, &s, &len), TP_OK);
        ck_assert_msg(len == strlen(want[i]) && memcmp(s, want[i], len) == 0, "%s[%u]: %.*s", key,
                      i, (int)len, s);
    }
}

/* assert_ints checks that e's key is the array of the n integers want. */
static void assert_ints(const tp_event *e, const char *key, uint32_t n, const int64_t *want)
{
    tp_mpr r;
    uint32_t got;
    int64_t v;
    ck_assert_int_eq(tp_body_find(e, fld(e, key), &r), TP_OK);
    ck_assert_int_eq(tp_mpr_array(&r, &got), TP_OK);
    ck_assert_uint_eq(got, n);
    for (uint32_t i = 0; i < n; i++) {
        ck_assert_int_eq(tp_mpr_int(&r, &v), TP_OK);
        ck_assert_int_eq(v, want[i]);
    }
}

/* The tables proto/events.def makes: every kind has a body and a wire name
 * that parses back, every body's keys are unique and at most 64 (the
 * validator's bit set), a field is read only from its own kind's events. */
START_TEST(test_proto_schema_tables)
{
    tb t;
    tp_batch b;
    tp_mpr r;
    double v;
    for (int k = TP_K_NONE + 1; k < TP_K__COUNT; k++) {
        const char *name = tp_kind_name((tp_kind)k);
        ck_assert_ptr_nonnull(name);
        ck_assert_int_eq(tp_kind_parse(name, strlen(name)), k);
        ck_assert_uint_gt(tp_body_nfields(tp_kinds[k].body), 0);
    }
    for (int bd = 0; bd < TPB__COUNT; bd++) {
        unsigned n = tp_body_nfields((tp_body_id)bd);
        ck_assert_uint_le(n, 64);
        for (unsigned i = 0; i < n; i++) {
            const tp_field_def *f = &tp_fields[tp_bodies[bd].first + i];
            ck_assert_int_eq(f->body, bd);
            ck_assert_int_eq(tp_field_of((tp_body_id)bd, f->key, (uint32_t)strlen(f->key)),
                             (int)(tp_bodies[bd].first + i));
            ck_assert_ptr_nonnull(f->doc);
        }
    }
    ck_assert_int_eq(tp_field_of(TPB_step, "nope", 4), -1);
    ck_assert_str_eq(TP_KEY(step, unorm), "unorm");
    ck_assert_str_eq(tp_fields[TPF_saveload_armed].key, "armed");

    tb_begin(&t, 1, 2, 3, -1, NULL);
    tb_backward(&t, 0, 0, 0.5, 1);
    tb_end(&t);
    b = decode_ok(&t.buf);
    ck_assert_int_eq(tp_body_f64(&b.ev[0], TPF_backward_loss, &v), TP_OK);
    ck_assert_double_eq(v, 0.5);
    /* a step's key on a backward event: the reader's bug, not the body's */
    ck_assert_int_eq(tp_body_f64(&b.ev[0], TPF_step_unorm, &v), TP_EINVAL);
    ck_assert_int_eq(tp_body_find(&b.ev[0], TPF__COUNT, &r), TP_EINVAL);
    tp_batch_free(&b);
    tb_free(&t);
}
END_TEST

START_TEST(test_proto_roundtrip_every_kind)
{
    tb t;
    tp_batch b;
    const tp_event *e;
    tp_mpr f;
    uint32_t n;
    bool bv;
    uint8_t d[16], want[16];
    const uint8_t *p;
    tb_begin(&t, 7, 8, 4242, 1, "secret");
    ck_assert_int_eq(tb_all(&t, 0), 16);
    tb_backward_scaled(&t, 16, 1, 0.75, 1, 1);
    tb_bye(&t, 17, 18, 0);
    tb_end(&t);
    ck_assert(!t.buf.oom);
    b = decode_ok(&t.buf);
    ck_assert_int_eq(b.hdr.run, 7);
    ck_assert_int_eq(b.hdr.exec, 8);
    ck_assert_int_eq(b.hdr.pid, 4242);
    ck_assert_int_eq(b.hdr.rank, 1);
    ck_assert_int_eq(b.hdr.tok_len, 6);
    ck_assert(memcmp(b.hdr.tok, "secret", 6) == 0);
    ck_assert_int_eq(b.n, 18);
    for (size_t i = 0; i < b.n; i++) {
        ck_assert_int_eq(b.ev[i].seq, i);
        ck_assert_int_eq(b.ev[i].time_ns, 1000 + i);
        ck_assert_int_eq(tp_body_validate(b.ev[i].kind, b.ev[i].body, b.ev[i].body_len, NULL, 0),
                         TP_OK);
    }
    for (int k = TP_K_HELLO; k < TP_K__COUNT; k++) find_kind(&b, (tp_kind)k, 0);

    e = find_kind(&b, TP_K_HELLO, 0);
    assert_str(e, fld(e, "python"), "3.11.7");
    assert_str(e, fld(e, "torch"), "2.13.0");
    assert_str(e, fld(e, "cwd"), "/home/u/proj");
    assert_str(e, fld(e, "role"), "main");
    assert_int(e, fld(e, "world"), 2);
    assert_int(e, fld(e, "interrupt_at"), 4);
    ck_assert_int_eq(tp_body_str(e, fld(e, "numpy"), (const char **)&p, &n), TP_ENOENT); /* nil */
    ck_assert_int_eq(tp_body_find(e, fld(e, "argv"), &f), TP_OK);
    ck_assert_int_eq(tp_mpr_array(&f, &n), TP_OK);
    ck_assert_int_eq(n, 4);

    e = find_kind(&b, TP_K_BYE, 0);
    assert_str(e, fld(e, "reason"), "exit");
    assert_int(e, fld(e, "code"), 0);
    ck_assert_int_eq(tp_body_bool(e, fld(e, "spooled"), &bv), TP_OK);
    ck_assert(!bv);

    e = find_kind(&b, TP_K_SNAPSHOT, 0);
    assert_str(e, fld(e, "why"), "backward");
    ck_assert_int_eq(tp_body_find(e, fld(e, "leaves"), &f), TP_OK);
    ck_assert_int_eq(tp_mpr_array(&f, &n), TP_OK);
    ck_assert_int_eq(n, 3 + 6);
    for (uint32_t i = 0; i < n; i++) {
        tp_leaf l;
        ck_assert_int_eq(tp_leaf_read(&f, &l), TP_OK);
        if (i < 3) {
            char path[64];
            snprintf(path, sizeof path, "model.layer%u.weight", i);
            ck_assert_int_eq(l.kind, 't');
            ck_assert_int_eq(l.path_len, strlen(path));
            ck_assert(memcmp(l.path, path, l.path_len) == 0);
            ck_assert(l.dtype_len == 7 && memcmp(l.dtype, "float32", 7) == 0);
            ck_assert_int_eq(l.ndim, 2);
            ck_assert_int_eq(l.shape[0], 64);
            ck_assert_int_eq(l.shape[1], 32 + i % 4);
            tb_digest(want, (uint64_t)i * 7919u);
            ck_assert(memcmp(l.digest, want, 16) == 0);
            ck_assert_double_eq(l.stats.sum, 0.5 * i);
            ck_assert_double_eq(l.stats.l2, 1.5 + i);
            ck_assert_double_eq(l.stats.maxabs, 0.25);
            ck_assert_int_eq(l.stats.nonfinite, i == 1);
            ck_assert(l.device_len == 3 && memcmp(l.device, "cpu", 3) == 0);
            ck_assert_int_eq(l.blob, i == 0);
        }
    }
    f = (tp_mpr){0};
    ck_assert_int_eq(tp_body_find(e, fld(e, "leaves"), &f), TP_OK);
    tp_mpr_array(&f, &n);
    {
        tp_leaf l;
        for (int i = 0; i < 3; i++) tp_leaf_read(&f, &l);
        tp_leaf_read(&f, &l);
        ck_assert(l.kind == 'v' && l.vtype == TP_V_FLOAT && l.f == 0.1);
        tp_leaf_read(&f, &l);
        ck_assert(l.vtype == TP_V_INT && l.i == 3);
        tp_leaf_read(&f, &l);
        ck_assert(l.vtype == TP_V_BOOL && l.b);
        tp_leaf_read(&f, &l);
        ck_assert(l.vtype == TP_V_STR && l.s_len == 3 && memcmp(l.s, "SGD", 3) == 0);
        tp_leaf_read(&f, &l);
        ck_assert(l.vtype == TP_V_NIL);
        tp_leaf_read(&f, &l);
        ck_assert(l.kind == 'd' && l.nitems == 5056);
        tb_digest(want, 42);
        ck_assert(memcmp(l.digest, want, 16) == 0);
    }

    e = find_kind(&b, TP_K_BACKWARD, 0);
    assert_f64(e, fld(e, "loss"), 2.5);
    assert_int(e, fld(e, "count"), 1);
    assert_str(e, fld(e, "dtype"), "float32");
    ck_assert_int_eq(tp_body_bool(e, fld(e, "scaled"), &bv), TP_ENOENT); /* left out */
    e = find_kind(&b, TP_K_BACKWARD, 1);
    ck_assert_int_eq(e->seq, 16);
    ck_assert_int_eq(tp_body_bool(e, fld(e, "scaled"), &bv), TP_OK);
    ck_assert(bv);
    assert_int(e, fld(e, "mean_over"), 32);
    assert_str(e, fld(e, "dtype"), "float16");

    e = find_kind(&b, TP_K_STEP, 0);
    assert_str(e, fld(e, "phase"), "pre");
    assert_f64(e, fld(e, "gnorm"), 1.25);
    ck_assert_int_eq(tp_body_f64(e, fld(e, "unorm"), &(double){0}), TP_ENOENT);
    ck_assert_int_eq(tp_body_find(e, fld(e, "lrs"), &f), TP_OK);
    ck_assert_int_eq(tp_mpr_array(&f, &n), TP_OK);
    ck_assert_int_eq(n, 2);
    e = find_kind(&b, TP_K_STEP, 1);
    assert_str(e, fld(e, "phase"), "post");
    assert_f64(e, fld(e, "unorm"), 0.01);

    e = find_kind(&b, TP_K_SCHED, 0);
    assert_str(e, fld(e, "cls"), "StepLR");
    e = find_kind(&b, TP_K_SAVE, 0);
    tb_digest(want, 99);
    ck_assert_int_eq(tp_body_digest(e, fld(e, "digest"), d), TP_OK);
    ck_assert(memcmp(d, want, 16) == 0);
    assert_str(e, fld(e, "via"), "records");
    assert_int(e, fld(e, "bytes"), 4096);
    ck_assert_int_eq(tp_body_bool(e, fld(e, "armed"), &bv), TP_OK);
    ck_assert(bv);
    e = find_kind(&b, TP_K_LOAD, 0);
    assert_str(e, fld(e, "name"), "ckpt.pt");
    e = find_kind(&b, TP_K_RESTORE, 0);
    assert_str(e, fld(e, "obj"), "model");
    assert_int(e, fld(e, "load"), 7);
    e = find_kind(&b, TP_K_BATCH, 0);
    assert_int(e, fld(e, "dataset_len"), 100);
    ck_assert_int_eq(tp_body_find(e, fld(e, "ids"), &f), TP_OK);
    ck_assert_int_eq(tp_mpr_array(&f, &n), TP_OK);
    ck_assert_int_eq(n, 3);
    e = find_kind(&b, TP_K_AMP, 0);
    assert_f64(e, fld(e, "scale"), 65536.0);
    e = find_kind(&b, TP_K_CLIP, 0);
    assert_f64(e, fld(e, "max"), 1.0); /* an int read as a float */
    e = find_kind(&b, TP_K_BLOB, 0);
    ck_assert_int_eq(tp_body_find(e, fld(e, "data"), &f), TP_OK);
    ck_assert_int_eq(tp_mpr_bin(&f, &p, &n), TP_OK);
    ck_assert_int_eq(n, 100);
    ck_assert_int_eq(p[0], 0x5a);
    e = find_kind(&b, TP_K_ERROR, 0);
    assert_str(e, fld(e, "msg"), "ValueError: boom");
    e = find_kind(&b, TP_K_ZERO_GRAD, 0);
    assert_str(e, fld(e, "which"), "optimizer");
    assert_int(e, fld(e, "opt"), 0);
    ck_assert_int_eq(tp_body_bool(e, fld(e, "set_to_none"), &bv), TP_OK);
    ck_assert(bv);
    e = find_kind(&b, TP_K_COVER, 0);
    assert_int(e, fld(e, "opt"), 1);
    assert_str(e, fld(e, "cls"), "Adam");
    assert_strs(e, "params", 2, (const char *const[]){"model.0.weight", "model.0.bias"});
    assert_ints(e, "ids", 2, (const int64_t[]){101, 102});
    assert_ints(e, "groups", 2, (const int64_t[]){0, 1});
    assert_strs(e, "shapes", 2, (const char *const[]){"16x8", "16"});
    assert_strs(e, "graded", 2, (const char *const[]){"model.0.weight", "<Linear>.weight"});
    assert_ints(e, "graded_ids", 2, (const int64_t[]){101, 201});
    assert_strs(e, "graded_shapes", 2, (const char *const[]){"16x8", "4x16"});
    ck_assert_int_eq(tp_body_str(e, fld(e, "params"), (const char **)&p, &n), TP_EPROTO);
    tp_batch_free(&b);
    tp_batch_free(NULL);
    tb_free(&t);
}
END_TEST

START_TEST(test_proto_empty_batch_and_kind_names)
{
    tb t;
    tp_batch b;
    tb_begin(&t, 1, 2, 3, -1, NULL);
    tb_end(&t);
    b = decode_ok(&t.buf);
    ck_assert_int_eq(b.n, 0);
    ck_assert_ptr_null(b.hdr.tok);
    ck_assert_int_eq(b.hdr.rank, -1);
    tp_batch_free(&b);
    tb_free(&t);
    for (int k = TP_K_HELLO; k < TP_K__COUNT; k++) {
        const char *name = tp_kind_name((tp_kind)k);
        ck_assert_ptr_nonnull(name);
        ck_assert_int_eq(tp_kind_parse(name, strlen(name)), k);
    }
    ck_assert_ptr_null(tp_kind_name(TP_K_NONE));
    ck_assert_int_eq(tp_kind_parse("bogus", 5), TP_K_NONE);
}
END_TEST

START_TEST(test_proto_url_control)
{
    char out[128];
    ck_assert_int_eq(tp_url_control("ipc:///a/b.ipc", out, sizeof out), TP_OK);
    ck_assert_str_eq(out, "ipc:///a/b.ipc.ctl");
    ck_assert_int_eq(tp_url_control("tcp://127.0.0.1:5555", out, sizeof out), TP_OK);
    ck_assert_str_eq(out, "tcp://127.0.0.1:5556");
    ck_assert_int_eq(tp_url_control("ws://x", out, sizeof out), TP_EINVAL);
    ck_assert_int_eq(tp_url_control("ipc:///a/b.ipc", out, 8), TP_EINVAL);
}
END_TEST

/* A tensor leaf of 11 elements has digest kind "xxh3"; one of 12 carries
 * its kind, which tp_enc_leaf_tensor_kind writes. */
START_TEST(test_proto_leaf_digest_kind)
{
    static const char *const kinds[] = {NULL, "dev1", "none", "xxh3", "abcdefg8"};
    static const char *const want[] = {"xxh3", "dev1", "none", "xxh3", "abcdefg8"};
    const int64_t shape[2] = {2, 3};
    tp_stats st = {1.5, 2.5, 0.75, 0};
    uint8_t d[16];
    tp_buf b;
    tp_mpr r;
    uint32_t n;
    tb_digest(d, 7);
    tp_buf_init(&b);
    tp_mp_array(&b, 5);
    for (int i = 0; i < 5; i++)
        tp_enc_leaf_tensor_kind(&b, "model.w", 7, "float32", shape, 2, d, &st, "cuda:0", i == 1,
                                kinds[i]);
    ck_assert(!b.oom);
    tp_mpr_init(&r, b.data, b.len);
    ck_assert_int_eq(tp_mpr_array(&r, &n), TP_OK);
    for (int i = 0; i < 5; i++) {
        tp_leaf l;
        tp_mpr at = r;
        uint32_t m;
        ck_assert_int_eq(tp_mpr_array(&at, &m), TP_OK);
        ck_assert_uint_eq(m, kinds[i] ? 12 : 11);
        ck_assert_int_eq(tp_leaf_read(&r, &l), TP_OK);
        ck_assert_int_eq(l.kind, 't');
        ck_assert_uint_eq(l.dkind_len, strlen(want[i]));
        ck_assert(memcmp(l.dkind, want[i], l.dkind_len) == 0);
        ck_assert(memcmp(l.digest, d, 16) == 0);
        ck_assert(l.device_len == 6 && memcmp(l.device, "cuda:0", 6) == 0);
        ck_assert_int_eq(l.blob, i == 1);
        ck_assert_int_eq(l.ndim, 2);
        ck_assert_int_eq(l.shape[1], 3);
    }
    ck_assert_uint_eq(tp_mpr_left(&r), 0);
    /* tp_enc_leaf_tensor writes the 11 elements it always wrote */
    {
        tp_buf a;
        tp_buf_init(&a);
        tp_enc_leaf_tensor(&a, "model.w", 7, "float32", shape, 2, d, &st, "cuda:0", false);
        tp_buf_reset(&b);
        tp_enc_leaf_tensor_kind(&b, "model.w", 7, "float32", shape, 2, d, &st, "cuda:0", false,
                                NULL);
        ck_assert_uint_eq(a.len, b.len);
        ck_assert(memcmp(a.data, b.data, a.len) == 0);
        tp_buf_free(&a);
    }
    tp_buf_free(&b);
}
END_TEST

/* ---- malformed messages ---- */

static void key(tp_buf *b, const char *k)
{
    tp_mp_cstr(b, k);
}

static void raw(tp_buf *b, const char *bytes, size_t n)
{
    tp_buf_append(b, bytes, n);
}

/* env writes a valid envelope without key skip (NULL: none), leaving extra
 * more entries to the caller; "events" is an empty array. */
static void env(tp_buf *b, const char *skip, uint32_t extra)
{
    static const char *const keys[] = {"v", "run", "exec", "pid", "rank", "events"};
    uint32_t n = 6 + extra - (skip != NULL);
    tp_mp_map(b, n);
    for (int i = 0; i < 6; i++) {
        if (skip && strcmp(skip, keys[i]) == 0) continue;
        key(b, keys[i]);
        if (i == 0)
            tp_mp_uint(b, 1);
        else if (i == 5)
            tp_mp_array(b, 0);
        else
            tp_mp_int(b, 5);
    }
}

/* one_event writes an envelope whose events array holds one event, whose
 * [seq, time, step, kind, body] the caller writes. */
static void one_event(tp_buf *b)
{
    env(b, "events", 1);
    key(b, "events");
    tp_mp_array(b, 1);
}

/* ev_head writes a valid event head of kind k; the caller writes the body. */
static void ev_head(tp_buf *b, const char *kind)
{
    one_event(b);
    tp_mp_array(b, 5);
    tp_mp_uint(b, 0);
    tp_mp_uint(b, 1);
    tp_mp_int(b, 0);
    tp_mp_cstr(b, kind);
}

/* error_body writes an error event whose "where" value the caller writes. */
static void error_where(tp_buf *b)
{
    ev_head(b, "error");
    tp_mp_map(b, 2);
    key(b, "msg");
    tp_mp_cstr(b, "m");
    key(b, "where");
}

/* snapshot_leaf writes a snapshot whose one leaf the caller writes. */
static void snapshot_leaf(tp_buf *b)
{
    ev_head(b, "snapshot");
    tp_mp_map(b, 2);
    key(b, "why");
    tp_mp_cstr(b, "final");
    key(b, "leaves");
    tp_mp_array(b, 1);
}

/* tensor_leaf writes a tensor leaf with a digest of dlen bytes and ndim
 * dimensions of size dim. */
static void tensor_leaf(tp_buf *b, uint32_t dlen, uint32_t ndim, int64_t dim, uint32_t pathlen)
{
    uint8_t d[32] = {0};
    char *path = malloc(pathlen);
    memset(path, 'p', pathlen);
    tp_mp_array(b, 11);
    tp_mp_cstr(b, "t");
    tp_mp_str(b, path, pathlen);
    tp_mp_cstr(b, "float32");
    tp_mp_array(b, ndim);
    for (uint32_t i = 0; i < ndim; i++) tp_mp_int(b, dim);
    tp_mp_bin(b, d, dlen);
    tp_mp_f64(b, 1);
    tp_mp_f64(b, 1);
    tp_mp_f64(b, 1);
    tp_mp_uint(b, 0);
    tp_mp_cstr(b, "cpu");
    tp_mp_bool(b, false);
    free(path);
}

/* tensor_leaf_kind writes a tensor leaf of n elements (11 or more), valid
 * up to its 11th: then the str dkind of dlen bytes (an integer when dkind
 * is NULL), then integers. */
static void tensor_leaf_kind(tp_buf *b, uint32_t n, const char *dkind, uint32_t dlen)
{
    uint8_t d[16] = {0};
    tp_mp_array(b, n);
    tp_mp_cstr(b, "t");
    tp_mp_cstr(b, "model.w");
    tp_mp_cstr(b, "float32");
    tp_mp_array(b, 1);
    tp_mp_int(b, 3);
    tp_mp_bin(b, d, 16);
    tp_mp_f64(b, 1);
    tp_mp_f64(b, 1);
    tp_mp_f64(b, 1);
    tp_mp_uint(b, 0);
    tp_mp_cstr(b, "cuda:0");
    tp_mp_bool(b, false);
    if (n > 11 && dkind != NULL) tp_mp_str(b, dkind, dlen);
    if (n > 11 && dkind == NULL) tp_mp_int(b, 1);
    for (uint32_t i = 12; i < n; i++) tp_mp_int(b, 0);
}

static void m_empty(tp_buf *b)
{
    (void)b;
}
static void m_not_map(tp_buf *b)
{
    tp_mp_array(b, 0);
}
static void m_map_count_huge(tp_buf *b)
{
    raw(b, "\xdf\xff\xff\xff\xff", 5);
}
static void m_events_count_huge(tp_buf *b)
{
    env(b, "events", 1);
    key(b, "events");
    raw(b, "\xdd\xff\xff\xff\xff", 5);
}
static void m_events_count_over(tp_buf *b)
{
    env(b, "events", 1);
    key(b, "events");
    tp_mp_array(b, 3); /* fixarray of 3, one byte left */
    tp_mp_nil(b);
}
static void m_str_past_end(tp_buf *b)
{
    tp_mp_map(b, 1);
    raw(b,
        "\xd9\xc8"
        "ab",
        4);
}
static void m_bin_past_end(tp_buf *b)
{
    error_where(b);
    raw(b, "\xc6\x7f\xff\xff\xff", 5);
}
static void m_key_not_str(tp_buf *b)
{
    env(b, NULL, 1);
    tp_mp_int(b, 1);
    tp_mp_nil(b);
}
static void m_v_str(tp_buf *b)
{
    env(b, "v", 1), key(b, "v"), tp_mp_cstr(b, "1");
}
static void m_v_negative(tp_buf *b)
{
    env(b, "v", 1), key(b, "v"), tp_mp_int(b, -1);
}
static void m_v_float(tp_buf *b)
{
    env(b, "v", 1), key(b, "v"), tp_mp_f64(b, 1.0);
}
static void m_run_str(tp_buf *b)
{
    env(b, "run", 1), key(b, "run"), tp_mp_cstr(b, "7");
}
static void m_run_huge(tp_buf *b)
{
    env(b, "run", 1), key(b, "run"), tp_mp_uint(b, UINT64_MAX);
}
static void m_exec_nil(tp_buf *b)
{
    env(b, "exec", 1), key(b, "exec"), tp_mp_nil(b);
}
static void m_pid_float(tp_buf *b)
{
    env(b, "pid", 1), key(b, "pid"), tp_mp_f64(b, 3.5);
}
static void m_rank_bool(tp_buf *b)
{
    env(b, "rank", 1), key(b, "rank"), tp_mp_bool(b, true);
}
static void m_tok_int(tp_buf *b)
{
    env(b, NULL, 1), key(b, "tok"), tp_mp_int(b, 1);
}
static void m_tok_twice(tp_buf *b)
{
    env(b, NULL, 2), key(b, "tok"), tp_mp_cstr(b, "a"), key(b, "tok"), tp_mp_cstr(b, "b");
}
static void m_events_map(tp_buf *b)
{
    env(b, "events", 1), key(b, "events"), tp_mp_map(b, 0);
}
static void m_events_twice(tp_buf *b)
{
    env(b, NULL, 1), key(b, "events"), tp_mp_array(b, 0);
}
static void m_run_twice(tp_buf *b)
{
    env(b, NULL, 1), key(b, "run"), tp_mp_int(b, 1);
}
static void m_unknown_key(tp_buf *b)
{
    env(b, NULL, 1), key(b, "extra"), tp_mp_int(b, 1);
}
static void m_missing_v(tp_buf *b)
{
    env(b, "v", 0);
}
static void m_missing_pid(tp_buf *b)
{
    env(b, "pid", 0);
}
static void m_missing_events(tp_buf *b)
{
    env(b, "events", 0);
}
static void m_trailing(tp_buf *b)
{
    env(b, NULL, 0), tp_mp_nil(b);
}
static void m_version_2(tp_buf *b)
{
    env(b, "v", 1), key(b, "v"), tp_mp_uint(b, 2);
}
static void m_event_not_array(tp_buf *b)
{
    one_event(b), tp_mp_map(b, 0);
}
static void m_event_4(tp_buf *b)
{
    one_event(b);
    tp_mp_array(b, 4), tp_mp_uint(b, 0), tp_mp_uint(b, 0), tp_mp_int(b, 0), tp_mp_cstr(b, "error");
}
static void m_event_seq_negative(tp_buf *b)
{
    one_event(b);
    tp_mp_array(b, 5), tp_mp_int(b, -1), tp_mp_uint(b, 0), tp_mp_int(b, 0);
    tp_mp_cstr(b, "error"), tp_mp_map(b, 0);
}
static void m_event_time_str(tp_buf *b)
{
    one_event(b);
    tp_mp_array(b, 5), tp_mp_uint(b, 0), tp_mp_cstr(b, "t"), tp_mp_int(b, 0);
    tp_mp_cstr(b, "error"), tp_mp_map(b, 0);
}
static void m_event_step_float(tp_buf *b)
{
    one_event(b);
    tp_mp_array(b, 5), tp_mp_uint(b, 0), tp_mp_uint(b, 0), tp_mp_f64(b, 0);
    tp_mp_cstr(b, "error"), tp_mp_map(b, 0);
}
static void m_kind_int(tp_buf *b)
{
    one_event(b);
    tp_mp_array(b, 5), tp_mp_uint(b, 0), tp_mp_uint(b, 0), tp_mp_int(b, 0);
    tp_mp_int(b, 3), tp_mp_map(b, 0);
}
static void m_kind_unknown(tp_buf *b)
{
    ev_head(b, "bogus"), tp_mp_map(b, 0);
}
static void m_body_not_map(tp_buf *b)
{
    ev_head(b, "error"), tp_mp_array(b, 0);
}
static void m_body_unknown_key(tp_buf *b)
{
    ev_head(b, "error");
    tp_mp_map(b, 3), key(b, "where"), tp_mp_cstr(b, "w"), key(b, "msg"), tp_mp_cstr(b, "m");
    key(b, "color"), tp_mp_cstr(b, "red");
}
static void m_body_missing_key(tp_buf *b)
{
    ev_head(b, "error"), tp_mp_map(b, 1), key(b, "where"), tp_mp_cstr(b, "w");
}
static void m_body_duplicate_key(tp_buf *b)
{
    ev_head(b, "error");
    tp_mp_map(b, 3), key(b, "where"), tp_mp_cstr(b, "w"), key(b, "where"), tp_mp_cstr(b, "x");
    key(b, "msg"), tp_mp_cstr(b, "m");
}
static void m_body_wrong_type(tp_buf *b)
{
    error_where(b), tp_mp_int(b, 1);
}
static void m_body_key_not_str(tp_buf *b)
{
    ev_head(b, "error"), tp_mp_map(b, 1), tp_mp_int(b, 1), tp_mp_cstr(b, "w");
}
static void m_body_nil_required(tp_buf *b)
{
    ev_head(b, "backward"), tp_mp_map(b, 2), key(b, "loss"), tp_mp_nil(b);
    key(b, "count"), tp_mp_nil(b);
}
static void m_body_bool_for_uint(tp_buf *b)
{
    ev_head(b, "backward"), tp_mp_map(b, 2), key(b, "loss"), tp_mp_f64(b, 1);
    key(b, "count"), tp_mp_bool(b, true);
}
static void m_body_trailing_in_event(tp_buf *b)
{
    one_event(b);
    tp_mp_array(b, 5), tp_mp_uint(b, 0), tp_mp_uint(b, 0), tp_mp_int(b, 0);
    tp_mp_cstr(b, "error"), tp_mp_map(b, 2), key(b, "where"), tp_mp_cstr(b, "w");
    key(b, "msg"); /* value missing: the message ends */
}
static void m_leaf_arity(tp_buf *b)
{
    snapshot_leaf(b), tp_mp_array(b, 2), tp_mp_cstr(b, "t"), tp_mp_cstr(b, "p");
}
static void m_leaf_value_arity(tp_buf *b)
{
    snapshot_leaf(b), tp_mp_array(b, 4), tp_mp_cstr(b, "v"), tp_mp_cstr(b, "p");
    tp_mp_int(b, 1), tp_mp_int(b, 2);
}
static void m_leaf_kind(tp_buf *b)
{
    snapshot_leaf(b), tp_mp_array(b, 3), tp_mp_cstr(b, "x"), tp_mp_cstr(b, "p"), tp_mp_int(b, 1);
}
static void m_leaf_not_array(tp_buf *b)
{
    snapshot_leaf(b), tp_mp_cstr(b, "t");
}
static void m_leaf_digest15(tp_buf *b)
{
    snapshot_leaf(b), tensor_leaf(b, 15, 1, 3, 4);
}
static void m_leaf_digest17(tp_buf *b)
{
    snapshot_leaf(b), tensor_leaf(b, 17, 1, 3, 4);
}
static void m_leaf_shape_negative(tp_buf *b)
{
    snapshot_leaf(b), tensor_leaf(b, 16, 1, -1, 4);
}
static void m_leaf_dims_17(tp_buf *b)
{
    snapshot_leaf(b), tensor_leaf(b, 16, 17, 1, 4);
}
static void m_leaf_path_empty(tp_buf *b)
{
    snapshot_leaf(b), tensor_leaf(b, 16, 1, 1, 0);
}
static void m_leaf_path_long(tp_buf *b)
{
    snapshot_leaf(b), tensor_leaf(b, 16, 1, 1, 5000);
}
static void m_leaf_value_array(tp_buf *b)
{
    snapshot_leaf(b), tp_mp_array(b, 3), tp_mp_cstr(b, "v"), tp_mp_cstr(b, "p");
    tp_mp_array(b, 0);
}
static void m_leaf_13(tp_buf *b)
{
    snapshot_leaf(b), tensor_leaf_kind(b, 13, "dev1", 4);
}
static void m_leaf_dkind_empty(tp_buf *b)
{
    snapshot_leaf(b), tensor_leaf_kind(b, 12, "", 0);
}
static void m_leaf_dkind_9(tp_buf *b)
{
    snapshot_leaf(b), tensor_leaf_kind(b, 12, "deviceabc", 9);
}
static void m_leaf_dkind_upper(tp_buf *b)
{
    snapshot_leaf(b), tensor_leaf_kind(b, 12, "DEV1", 4);
}
static void m_leaf_dkind_nul(tp_buf *b)
{
    snapshot_leaf(b), tensor_leaf_kind(b, 12, "de\0v", 4);
}
static void m_leaf_dkind_int(tp_buf *b)
{
    snapshot_leaf(b), tensor_leaf_kind(b, 12, NULL, 0);
}
static void m_digest_leaf_15(tp_buf *b)
{
    uint8_t d[15] = {0};
    snapshot_leaf(b), tp_mp_array(b, 4), tp_mp_cstr(b, "d"), tp_mp_cstr(b, "rng");
    tp_mp_bin(b, d, 15), tp_mp_uint(b, 1);
}
static void m_save_digest15(tp_buf *b)
{
    uint8_t d[15] = {0};
    ev_head(b, "save");
    tp_mp_map(b, 4), key(b, "api"), tp_mp_cstr(b, "torch"), key(b, "target"), tp_mp_cstr(b, "path");
    key(b, "via"), tp_mp_cstr(b, "none"), key(b, "digest"), tp_mp_bin(b, d, 15);
}
static void m_records_arity(tp_buf *b)
{
    ev_head(b, "save");
    tp_mp_map(b, 4), key(b, "api"), tp_mp_cstr(b, "torch"), key(b, "target"), tp_mp_cstr(b, "path");
    key(b, "via"), tp_mp_cstr(b, "none"), key(b, "records"), tp_mp_array(b, 1);
    tp_mp_array(b, 2), tp_mp_cstr(b, "data.pkl"), tp_mp_uint(b, 1);
}
/* IDs are integers or strings, one kind per batch */
static void m_ids_mixed(tp_buf *b)
{
    ev_head(b, "batch");
    tp_mp_map(b, 5), key(b, "loader"), tp_mp_uint(b, 0), key(b, "epoch"), tp_mp_uint(b, 0);
    key(b, "pos"), tp_mp_uint(b, 0), key(b, "worker"), tp_mp_nil(b);
    key(b, "ids"), tp_mp_array(b, 2), tp_mp_int(b, 1), tp_mp_cstr(b, "a");
}
/* zero_grad: "which" is required, set_to_none a bool or nil, opt an index */
static void m_zero_grad_no_which(tp_buf *b)
{
    ev_head(b, "zero_grad");
    tp_mp_map(b, 1), key(b, "set_to_none"), tp_mp_bool(b, true);
}
static void m_zero_grad_set_to_none_int(tp_buf *b)
{
    ev_head(b, "zero_grad");
    tp_mp_map(b, 2), key(b, "which"), tp_mp_cstr(b, "module");
    key(b, "set_to_none"), tp_mp_int(b, 1);
}
static void m_zero_grad_opt_negative(tp_buf *b)
{
    ev_head(b, "zero_grad");
    tp_mp_map(b, 2), key(b, "which"), tp_mp_cstr(b, "optimizer");
    key(b, "opt"), tp_mp_int(b, -1);
}
/* cover_ev writes a cover event without key skip (NULL: none), key bad's
 * value of the wrong type: ids strings, shapes integers, groups a string. */
static void cover_ev(tp_buf *b, const char *skip, const char *bad)
{
    static const char *const keys[] = {"opt",    "cls",    "params",     "ids",          "groups",
                                       "shapes", "graded", "graded_ids", "graded_shapes"};
    ev_head(b, "cover");
    tp_mp_map(b, 9 - (skip != NULL));
    for (int i = 0; i < 9; i++) {
        const char *k = keys[i];
        bool wrong = bad != NULL && strcmp(bad, k) == 0;
        if (skip != NULL && strcmp(skip, k) == 0) continue;
        key(b, k);
        if (i == 0)
            tp_mp_uint(b, 0);
        else if (i == 1)
            tp_mp_cstr(b, "SGD");
        else if (wrong && strcmp(k, "groups") == 0)
            tp_mp_cstr(b, "0");
        else if (strcmp(k, "ids") == 0 || strcmp(k, "groups") == 0 || strcmp(k, "graded_ids") == 0)
            tp_mp_array(b, 1), wrong ? tp_mp_cstr(b, "140230") : tp_mp_int(b, 140230);
        else
            tp_mp_array(b, 1), wrong ? tp_mp_int(b, 16) : tp_mp_cstr(b, "16");
    }
}
static void m_cover_no_params(tp_buf *b)
{
    cover_ev(b, "params", NULL);
}
static void m_cover_no_graded_ids(tp_buf *b)
{
    cover_ev(b, "graded_ids", NULL);
}
static void m_cover_ids_strs(tp_buf *b)
{
    cover_ev(b, NULL, "ids");
}
static void m_cover_graded_ids_strs(tp_buf *b)
{
    cover_ev(b, NULL, "graded_ids");
}
static void m_cover_shapes_ints(tp_buf *b)
{
    cover_ev(b, NULL, "shapes");
}
static void m_cover_params_ints(tp_buf *b)
{
    cover_ev(b, NULL, "params");
}
static void m_cover_groups_str(tp_buf *b)
{
    cover_ev(b, NULL, "groups");
}
static void m_cover_opt_negative(tp_buf *b)
{
    ev_head(b, "cover");
    tp_mp_map(b, 9), key(b, "opt"), tp_mp_int(b, -1), key(b, "cls"), tp_mp_cstr(b, "SGD");
    for (int i = 0; i < 7; i++)
        key(b, (const char *[]){"params", "ids", "groups", "shapes", "graded", "graded_ids",
                                "graded_shapes"}[i]),
            tp_mp_array(b, 0);
}
/* backward: scaled is a bool */
static void m_backward_scaled_int(tp_buf *b)
{
    ev_head(b, "backward"), tp_mp_map(b, 3), key(b, "loss"), tp_mp_f64(b, 1);
    key(b, "count"), tp_mp_uint(b, 1), key(b, "scaled"), tp_mp_int(b, 1);
}
static void m_deep(tp_buf *b)
{
    error_where(b);
    for (int i = 0; i < 40; i++) tp_mp_array(b, 1);
    tp_mp_nil(b);
}
static void m_deep_100000(tp_buf *b)
{
    error_where(b);
    for (int i = 0; i < 100000; i++) tp_mp_map(b, 1), tp_mp_nil(b);
    tp_mp_nil(b);
}
static void m_reserved_c1(tp_buf *b)
{
    error_where(b), raw(b, "\xc1", 1);
}
static void m_reserved_c1_value(tp_buf *b)
{
    env(b, "run", 1), key(b, "run"), raw(b, "\xc1", 1);
}
static void m_fixext(tp_buf *b)
{
    error_where(b), raw(b, "\xd4\x01\x00", 3);
}
static void m_ext8(tp_buf *b)
{
    error_where(b), raw(b, "\xc7\x01\x05\x00", 4);
}
static void m_ext_in_skip(tp_buf *b)
{
    ev_head(b, "error"), raw(b, "\x81\xa1w\xd5\x01\x00\x00", 7);
}
static void m_float_truncated(tp_buf *b)
{
    ev_head(b, "backward"), tp_mp_map(b, 2), key(b, "count"), tp_mp_uint(b, 1);
    key(b, "loss"), raw(b, "\xcb\x00\x00", 3);
}

typedef struct bad_case {
    const char *name;
    void (*build)(tp_buf *b);
    tp_err want;
} bad_case;

#define BAD(fn)                                                                                    \
    {                                                                                              \
#fn, fn, TP_EPROTO                                                                         \
    }
static const bad_case bad_cases[] = {
    BAD(m_empty),
    BAD(m_not_map),
    BAD(m_map_count_huge),
    BAD(m_events_count_huge),
    BAD(m_events_count_over),
    BAD(m_str_past_end),
    BAD(m_bin_past_end),
    BAD(m_key_not_str),
    BAD(m_v_str),
    BAD(m_v_negative),
    BAD(m_v_float),
    BAD(m_run_str),
    BAD(m_run_huge),
    BAD(m_exec_nil),
    BAD(m_pid_float),
    BAD(m_rank_bool),
    BAD(m_tok_int),
    BAD(m_tok_twice),
    BAD(m_events_map),
    BAD(m_events_twice),
    BAD(m_run_twice),
    BAD(m_unknown_key),
    BAD(m_missing_v),
    BAD(m_missing_pid),
    BAD(m_missing_events),
    BAD(m_trailing),
    {"m_version_2", m_version_2, TP_EVERSION},
    BAD(m_event_not_array),
    BAD(m_event_4),
    BAD(m_event_seq_negative),
    BAD(m_event_time_str),
    BAD(m_event_step_float),
    BAD(m_kind_int),
    BAD(m_kind_unknown),
    BAD(m_body_not_map),
    BAD(m_body_unknown_key),
    BAD(m_body_missing_key),
    BAD(m_body_duplicate_key),
    BAD(m_body_wrong_type),
    BAD(m_body_key_not_str),
    BAD(m_body_nil_required),
    BAD(m_body_bool_for_uint),
    BAD(m_body_trailing_in_event),
    BAD(m_leaf_arity),
    BAD(m_leaf_value_arity),
    BAD(m_leaf_kind),
    BAD(m_leaf_not_array),
    BAD(m_leaf_digest15),
    BAD(m_leaf_digest17),
    BAD(m_leaf_shape_negative),
    BAD(m_leaf_dims_17),
    BAD(m_leaf_path_empty),
    BAD(m_leaf_path_long),
    BAD(m_leaf_value_array),
    BAD(m_leaf_13),
    BAD(m_leaf_dkind_empty),
    BAD(m_leaf_dkind_9),
    BAD(m_leaf_dkind_upper),
    BAD(m_leaf_dkind_nul),
    BAD(m_leaf_dkind_int),
    BAD(m_digest_leaf_15),
    BAD(m_save_digest15),
    BAD(m_records_arity),
    BAD(m_ids_mixed),
    BAD(m_zero_grad_no_which),
    BAD(m_zero_grad_set_to_none_int),
    BAD(m_zero_grad_opt_negative),
    BAD(m_cover_no_params),
    BAD(m_cover_no_graded_ids),
    BAD(m_cover_ids_strs),
    BAD(m_cover_graded_ids_strs),
    BAD(m_cover_shapes_ints),
    BAD(m_cover_params_ints),
    BAD(m_cover_groups_str),
    BAD(m_cover_opt_negative),
    BAD(m_backward_scaled_int),
    BAD(m_deep),
    BAD(m_deep_100000),
    BAD(m_reserved_c1),
    BAD(m_reserved_c1_value),
    BAD(m_fixext),
    BAD(m_ext8),
    BAD(m_ext_in_skip),
    BAD(m_float_truncated),
};
#define NBAD ((int)(sizeof bad_cases / sizeof bad_cases[0]))

START_TEST(test_proto_malformed_table)
{
    const bad_case *c = &bad_cases[_i];
    tp_buf b;
    tp_batch out, sentinel;
    char why[256] = "";
    uint8_t *copy;
    tp_err rc;
    tp_buf_init(&b);
    c->build(&b);
    ck_assert_msg(!b.oom, "%s: builder ran out of memory", c->name);
    /* an exact-size copy, so that a read past the end is caught by ASan */
    copy = malloc(b.len ? b.len : 1);
    if (b.len) memcpy(copy, b.data, b.len);
    memset(&out, 0xab, sizeof out);
    sentinel = out;
    rc = tp_batch_decode(copy, b.len, &out, why, sizeof why);
    ck_assert_msg(rc == c->want, "%s: got %s, want %s (%s)", c->name, tp_strerror(rc),
                  tp_strerror(c->want), why);
    ck_assert_msg(why[0] != '\0', "%s: no reason given", c->name);
    ck_assert_msg(memcmp(&out, &sentinel, sizeof out) == 0, "%s: output written on error", c->name);
    free(copy);
    tp_buf_free(&b);
}
END_TEST

/* The cover cases of the table fail for their one fault: the same builder
 * with none decodes, and each reason names the key at fault. */
START_TEST(test_proto_malformed_cover_reasons)
{
    static const struct {
        const char *skip, *bad, *named;
    } cases[] = {
        {"params", NULL, "params"}, {"graded_ids", NULL, "graded_ids"},
        {NULL, "ids", "ids"},       {NULL, "graded_ids", "graded_ids"},
        {NULL, "shapes", "shapes"}, {NULL, "params", "params"},
        {NULL, "groups", "groups"},
    };
    tp_buf b;
    tp_batch out;
    char why[256] = "";
    tp_buf_init(&b);
    cover_ev(&b, NULL, NULL);
    ck_assert_msg(tp_batch_decode(b.data, b.len, &out, why, sizeof why) == TP_OK, "%s", why);
    ck_assert_int_eq(out.n, 1);
    ck_assert_int_eq(out.ev[0].kind, TP_K_COVER);
    tp_batch_free(&out);
    tp_buf_free(&b);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        why[0] = '\0';
        tp_buf_init(&b);
        cover_ev(&b, cases[i].skip, cases[i].bad);
        ck_assert_int_eq(tp_batch_decode(b.data, b.len, &out, why, sizeof why), TP_EPROTO);
        ck_assert_msg(strstr(why, cases[i].named) != NULL, "case %zu: %s", i, why);
        tp_buf_free(&b);
    }
}
END_TEST

START_TEST(test_proto_oversized_message)
{
    /* address space only: the decoder must refuse before reading a byte */
    size_t len = (size_t)TP_MAX_MESSAGE + 1;
    void *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    tp_batch out;
    char why[128] = "";
    ck_assert(p != MAP_FAILED);
    ck_assert_int_eq(tp_batch_decode(p, len, &out, why, sizeof why), TP_EPROTO);
    ck_assert(strstr(why, "exceeds") != NULL);
    munmap(p, len);
    ck_assert_int_eq(tp_batch_decode(NULL, 0, &out, NULL, 0), TP_EPROTO);
}
END_TEST

START_TEST(test_proto_truncated_every_offset)
{
    tb t;
    tb_begin(&t, 1, 2, 3, 0, "tok");
    tb_all(&t, 0);
    tb_end(&t);
    for (size_t len = 0; len < t.buf.len; len++) {
        uint8_t *copy = malloc(len ? len : 1);
        tp_batch out;
        char why[256] = "";
        tp_err rc;
        memcpy(copy, t.buf.data, len);
        rc = tp_batch_decode(copy, len, &out, why, sizeof why);
        ck_assert_msg(rc == TP_EPROTO, "prefix of %zu bytes: %s", len, tp_strerror(rc));
        ck_assert_msg(why[0], "prefix of %zu bytes: no reason", len);
        free(copy);
    }
    tb_free(&t);
}
END_TEST

/* exercise reads everything a consumer would read from a decoded batch. */
static void exercise(const tp_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        static const char *const keys[] = {"leaves", "grads", "manifest"};
        const tp_event *e = &b->ev[i];
        int64_t iv;
        double dv;
        const char *s;
        uint32_t n;
        uint8_t d[16];
        tp_body_int(e, fld(e, "rank"), &iv);
        tp_body_f64(e, fld(e, "loss"), &dv);
        tp_body_str(e, fld(e, "python"), &s, &n);
        tp_body_digest(e, fld(e, "digest"), d);
        for (int k = 0; k < 3; k++) {
            tp_mpr r;
            tp_leaf l;
            if (tp_body_find(e, fld(e, keys[k]), &r) != TP_OK || tp_mpr_array(&r, &n) != TP_OK)
                continue;
            for (uint32_t j = 0; j < n; j++) ck_assert_int_eq(tp_leaf_read(&r, &l), TP_OK);
        }
    }
}

/* same_get checks that e answers getter f alike with its key index and
 * without: the same result, and the same value where there is one. */
static void same_get(tp_event *e, const tp_body_ix *ix, tp_field f)
{
    tp_mpr r[2];
    int64_t iv[2] = {0, 0};
    double dv[2] = {0, 0};
    bool bv[2] = {false, false};
    const char *sv[2] = {NULL, NULL};
    uint32_t sn[2] = {0, 0};
    uint8_t d[2][16];
    tp_err find[2], in[2], fl[2], bo[2], st[2], di[2];
    memset(d, 0, sizeof d);
    for (int k = 0; k < 2; k++) {
        e->ix = k ? ix : NULL;
        find[k] = tp_body_find(e, f, &r[k]);
        in[k] = tp_body_int(e, f, &iv[k]);
        fl[k] = tp_body_f64(e, f, &dv[k]);
        bo[k] = tp_body_bool(e, f, &bv[k]);
        st[k] = tp_body_str(e, f, &sv[k], &sn[k]);
        di[k] = tp_body_digest(e, f, d[k]);
    }
    e->ix = NULL;
    ck_assert_int_eq(find[0], find[1]);
    if (find[0] == TP_OK) ck_assert_ptr_eq(r[0].p, r[1].p);
    ck_assert_int_eq(in[0], in[1]);
    ck_assert_int_eq(fl[0], fl[1]);
    ck_assert_int_eq(bo[0], bo[1]);
    ck_assert_int_eq(st[0], st[1]);
    ck_assert_int_eq(di[0], di[1]);
    ck_assert(iv[0] == iv[1] && bv[0] == bv[1] && sv[0] == sv[1] && sn[0] == sn[1]);
    ck_assert(memcmp(&dv[0], &dv[1], sizeof dv[0]) == 0);
    ck_assert(memcmp(d[0], d[1], 16) == 0);
}

/* The key index (tp_body_index) changes no getter's answer: every field
 * of every kind, present, absent or nil, read with it and without. */
START_TEST(test_proto_body_index)
{
    tb t;
    tp_batch b;
    tb_begin(&t, 7, 8, 4242, 1, "secret");
    tb_all(&t, 0);
    tb_backward_scaled(&t, 16, 1, 0.75, 1, 1);
    tb_end(&t);
    ck_assert(!t.buf.oom);
    b = decode_ok(&t.buf);
    for (size_t i = 0; i < b.n; i++) {
        tp_event *e = &b.ev[i];
        tp_body_id body = tp_kinds[e->kind].body;
        tp_body_ix ix;
        ck_assert_int_eq(tp_body_index(e, &ix), TP_OK);
        ck_assert(ix.have != 0);
        for (unsigned f = 0; f < TPF__COUNT; f++) same_get(e, &ix, (tp_field)f);
        /* a field of another body: refused either way */
        same_get(e, &ix, (tp_field)(tp_bodies[body].first == 0 ? TPF__COUNT - 1 : 0));
    }
    tp_batch_free(&b);
    tb_free(&t);
}
END_TEST

/* tp_mpr_skip steps over exactly one value of every type, nested, and
 * refuses what the typed readers refuse, leaving the reader where it was. */
START_TEST(test_proto_skip)
{
    tp_buf b;
    tp_mpr r;
    uint8_t big[70000];
    size_t one;
    memset(big, 7, sizeof big);
    tp_buf_init(&b);
    /* one value: an array of every type, with each width of header */
    tp_mp_array(&b, 21);
    tp_mp_nil(&b);
    tp_mp_bool(&b, true);
    tp_mp_int(&b, 5);
    tp_mp_int(&b, -3);
    tp_mp_int(&b, -100);
    tp_mp_int(&b, 1000);
    tp_mp_int(&b, -70000);
    tp_mp_int(&b, INT64_MIN);
    tp_mp_uint(&b, UINT64_MAX);
    tp_mp_f64(&b, 0.5);
    tp_mp_str(&b, "abc", 3);
    tp_mp_str(&b, (const char *)big, 40);
    tp_mp_str(&b, (const char *)big, 300);
    tp_mp_str(&b, (const char *)big, sizeof big);
    tp_mp_bin(&b, big, 16);
    tp_mp_bin(&b, big, 300);
    tp_mp_bin(&b, big, sizeof big);
    tp_mp_map(&b, 2);
    tp_mp_cstr(&b, "k");
    tp_mp_array(&b, 20);
    for (int i = 0; i < 20; i++) tp_mp_int(&b, i);
    tp_mp_cstr(&b, "m");
    tp_mp_map(&b, 0);
    tp_mp_array(&b, 0);
    tp_mp_map(&b, 20);
    for (int i = 0; i < 20; i++) {
        tp_mp_int(&b, i);
        tp_mp_nil(&b);
    }
    tp_mp_array(&b, 1);
    tp_mp_f64(&b, 1.0);
    one = b.len;
    tp_mp_int(&b, 9); /* the value after it */
    ck_assert(!b.oom);
    tp_mpr_init(&r, b.data, b.len);
    ck_assert_int_eq(tp_mpr_skip(&r), TP_OK);
    ck_assert_uint_eq((size_t)(r.p - b.data), one);
    /* every prefix of the value is refused, the reader left at its start */
    for (size_t len = 0; len < one; len++) {
        tp_mpr_init(&r, b.data, len);
        ck_assert_msg(tp_mpr_skip(&r) == TP_EPROTO, "prefix of %zu bytes", len);
        ck_assert_ptr_eq(r.p, b.data);
    }
    /* the reserved byte, an extension type, an array that claims more
     * values than bytes remain */
    {
        static const uint8_t bad[][6] = {{0x91, 0xc1},
                                         {0x91, 0xd4, 1, 1},
                                         {0xc7, 1, 1, 1},
                                         {0xdc, 0x00, 0x05, 1, 2, 3},
                                         {0x83, 1, 1, 1, 1, 1}};
        static const size_t len[] = {2, 4, 4, 6, 6};
        for (size_t i = 0; i < sizeof len / sizeof len[0]; i++) {
            tp_mpr_init(&r, bad[i], len[i]);
            ck_assert_msg(tp_mpr_skip(&r) == TP_EPROTO, "case %zu", i);
            ck_assert_ptr_eq(r.p, bad[i]);
        }
    }
    /* nesting: TP_MP_MAX_DEPTH arrays around a value pass, one more does not */
    for (int extra = 0; extra < 2; extra++) {
        tp_buf_reset(&b);
        for (int i = 0; i < TP_MP_MAX_DEPTH + extra; i++) tp_mp_array(&b, 1);
        tp_mp_int(&b, 1);
        tp_mpr_init(&r, b.data, b.len);
        ck_assert_int_eq(tp_mpr_skip(&r), extra ? TP_EPROTO : TP_OK);
        ck_assert_ptr_eq(r.p, extra ? b.data : b.data + b.len);
    }
    tp_buf_free(&b);
}
END_TEST

START_TEST(test_proto_mutations)
{
    const char *env_iters = getenv("TP_FUZZ_ITERS");
    int iters = env_iters ? atoi(env_iters) : 4000;
    unsigned seed = 12345;
    tb t;
    int ok = 0;
    tb_begin(&t, 1, 2, 3, 0, NULL);
    tb_all(&t, 0);
    tb_end(&t);
    for (int it = 0; it < iters; it++) {
        size_t len = t.buf.len;
        uint8_t *copy = malloc(len);
        tp_batch out;
        char why[256];
        int flips = 1 + rand_r(&seed) % 4;
        memcpy(copy, t.buf.data, len);
        for (int f = 0; f < flips; f++) {
            size_t at = (size_t)rand_r(&seed) % len;
            switch (rand_r(&seed) % 4) {
            case 0:
                copy[at] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
                break;
            case 1:
                copy[at] = (uint8_t)rand_r(&seed);
                break;
            case 2:
                copy[at] = (uint8_t[]){0xc1, 0xdd, 0xdf, 0xc6, 0xff, 0x00}[rand_r(&seed) % 6];
                break;
            default:
                len = at + 1;
                break; /* truncate */
            }
        }
        if (tp_batch_decode(copy, len, &out, why, sizeof why) == TP_OK) {
            exercise(&out);
            tp_batch_free(&out);
            ok++;
        }
        free(copy);
    }
    ck_assert_int_lt(ok, iters); /* the loop did reject things */
    tb_free(&t);
}
END_TEST

static Suite *proto_suite(void)
{
    Suite *s = suite_create("proto");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_proto_schema_tables);
    tcase_add_test(tc, test_proto_roundtrip_every_kind);
    tcase_add_test(tc, test_proto_empty_batch_and_kind_names);
    tcase_add_test(tc, test_proto_url_control);
    tcase_add_test(tc, test_proto_leaf_digest_kind);
    tcase_add_loop_test(tc, test_proto_malformed_table, 0, NBAD);
    tcase_add_test(tc, test_proto_malformed_cover_reasons);
    tcase_add_test(tc, test_proto_oversized_message);
    tcase_add_test(tc, test_proto_truncated_every_offset);
    tcase_add_test(tc, test_proto_mutations);
    tcase_add_test(tc, test_proto_body_index);
    tcase_add_test(tc, test_proto_skip);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(proto_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
