/* SPDX-License-Identifier: MIT
 * bridge.c -- the C functions the embedded glue calls (module
 * `_trainparity_agent`).  Each validates its arguments and raises a Python
 * exception on misuse; the glue catches everything, so nothing here ever
 * reaches user code.  All of them run with the GIL held.  Also the bye, which
 * needs no Python, and the end of a process whose execution the agent
 * interrupted elsewhere (end_execution), which runs on a thread of the
 * agent's without the GIL. */
#define _GNU_SOURCE
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/bridge.h"
#include "agent/config.h"
#include "agent/emit.h"
#include "agent/flatten.h"
#include "agent/job.h"
#include "agent/log.h"
#include "agent/pyapi.h"
#include "agent/send.h"
#include "agent/team.h"
#include "agent/torchser.h"
#include "agent/update.h"
#include "digest/ckpt.h"
#include "proto/control.h"
#include "tp_version.h"

#define P           tpa_py
#define MAX_RECORDS 8192
#define BYE_WAIT_MS 40000 /* longer than a bye takes (two drains and a confirm) */
#define GRACE_MS    10000 /* a save under way or an armed process: time before it is ended */

static uint64_t errors;
static atomic_int bye_pid;      /* the process in which bye was said or is being said; 0 before */
static atomic_int bye_done;     /* that bye is over */
static atomic_int armed;        /* a save armed resume's interruption (the glue's S.armed) */
static atomic_int ckpt_io;      /* threads in a torch.save or torch.load, until its event */
static __thread int io_counted; /* this thread is counted in ckpt_io */

/* io_begin counts this thread in ckpt_io from the start of a checkpoint's
 * save or load (rec_begin); io_end when its event is committed, after the
 * save armed the interruption, so that end_execution never sees a save
 * that is over and has not armed yet.  An event never emitted (the glue
 * failed before) keeps the thread counted until its next one: that only
 * delays an end by GRACE_MS. */
static void io_begin(void)
{
    if (!io_counted) {
        io_counted = 1;
        atomic_fetch_add(&ckpt_io, 1);
    }
}

static void io_end(void)
{
    if (io_counted) {
        io_counted = 0;
        atomic_fetch_sub(&ckpt_io, 1);
    }
}

static PyObject *none(void)
{
    P.Py_IncRef(P.None);
    return P.None;
}

static PyObject *arg(PyObject *args, Py_ssize_t i)
{
    return i < P.PyTuple_Size(args) ? P.PyTuple_GetItem(args, i) : NULL;
}

static int type_error(const char *msg)
{
    P.PyErr_SetString(*P.Exc_TypeError, msg);
    return -1;
}

static int is(PyObject *o, PyObject *type)
{
    int r = P.PyObject_IsInstance(o, type);
    if (r < 0) P.PyErr_Clear();
    return r > 0;
}

static const char *text(PyObject *o, Py_ssize_t *n)
{
    if (o == NULL || !is(o, P.Unicode_Type)) return NULL;
    return P.PyUnicode_AsUTF8AndSize(o, n);
}

/* encode_value writes a plain Python value (None, bool, int, float, str,
 * bytes, list/tuple, dict with str keys) as MessagePack. */
static int encode_value(tp_buf *b, PyObject *v, int depth)
{
    if (depth > 16) return type_error("value nested too deep");
    if (v == P.None) {
        tp_mp_nil(b);
    } else if (is(v, P.Bool_Type)) {
        tp_mp_bool(b, v == P.True);
    } else if (is(v, P.Long_Type)) {
        int overflow = 0;
        long long x = P.PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && P.PyErr_Occurred()) return -1;
        if (overflow) return type_error("integer out of range");
        tp_mp_int(b, x);
    } else if (is(v, P.Float_Type)) {
        double x = P.PyFloat_AsDouble(v);
        if (x == -1.0 && P.PyErr_Occurred()) return -1;
        tp_mp_f64(b, x);
    } else if (is(v, P.Unicode_Type)) {
        Py_ssize_t n;
        const char *s = P.PyUnicode_AsUTF8AndSize(v, &n);
        if (s == NULL) return -1;
        tp_mp_str(b, s, (size_t)n);
    } else if (is(v, P.Bytes_Type)) {
        char *p;
        Py_ssize_t n;
        if (P.PyBytes_AsStringAndSize(v, &p, &n) != 0) return -1;
        tp_mp_bin(b, p, (size_t)n);
    } else if (is(v, P.List_Type) || is(v, P.Tuple_Type)) {
        int list = is(v, P.List_Type);
        Py_ssize_t n = list ? P.PyList_Size(v) : P.PyTuple_Size(v);
        tp_mp_array(b, (uint32_t)n);
        for (Py_ssize_t i = 0; i < n; i++)
            if (encode_value(b, list ? P.PyList_GetItem(v, i) : P.PyTuple_GetItem(v, i),
                             depth + 1) != 0)
                return -1;
    } else if (is(v, P.Dict_Type)) {
        Py_ssize_t pos = 0;
        PyObject *k, *x;
        tp_mp_map(b, (uint32_t)P.PyDict_Size(v));
        while (P.PyDict_Next(v, &pos, &k, &x))
            if (encode_value(b, k, depth + 1) != 0 || encode_value(b, x, depth + 1) != 0) return -1;
    } else {
        return type_error("unsupported value in an event body");
    }
    return 0;
}

/* emit(kind, body, key=None, items=None, manifest=False) -> seq, or -1 when
 * disabled.  The large tensors of a state's leaves are hashed together at
 * the end, on every compute thread (job.h); a manifest's are hashed where
 * they are met, since its node digests need them on the way. */
static PyObject *py_emit(PyObject *self, PyObject *args)
{
    PyObject *kind = arg(args, 0), *body = arg(args, 1), *key = arg(args, 2), *items = arg(args, 3),
             *manifest = arg(args, 4);
    Py_ssize_t kn, keyn = 0, pos = 0;
    const char *ks = text(kind, &kn), *keys = NULL;
    PyObject *k, *v;
    tp_kind tk;
    tp_buf b;
    tpa_flat f;
    tpa_job *job = NULL;
    int gnorm;
    uint64_t seq;
    (void)self;
    if (ks == NULL || body == NULL || !is(body, P.Dict_Type)) {
        type_error("emit(kind: str, body: dict, key=None, items=None, manifest=False)");
        return NULL;
    }
    tk = tp_kind_parse(ks, (size_t)kn);
    if (tk == TP_K_NONE) {
        type_error("emit: unknown event kind");
        return NULL;
    }
    if (key != NULL && key != P.None) keys = text(key, &keyn);
    if (keys != NULL && (items == NULL || !is(items, P.List_Type))) {
        type_error("emit: items must be a list of (prefix, object)");
        return NULL;
    }
    if (!tpa_emit_enabled()) return P.PyLong_FromLongLong(-1);
    gnorm = tk == TP_K_STEP && keys != NULL && strcmp(keys, TP_KEY(step, grads)) == 0;
    tp_buf_init(&b);
    tp_mp_map(&b, (uint32_t)(P.PyDict_Size(body) + (keys != NULL) + gnorm));
    while (P.PyDict_Next(body, &pos, &k, &v))
        if (encode_value(&b, k, 0) != 0 || encode_value(&b, v, 0) != 0) goto fail;
    if (keys != NULL) {
        tp_mp_str(&b, keys, (size_t)keyn);
        tpa_flat_begin(&f, &b, manifest != NULL && manifest == P.True);
        if (!f.manifest) f.job = job = tpa_job_create();
        for (Py_ssize_t i = 0; i < P.PyList_Size(items); i++) {
            PyObject *it = P.PyList_GetItem(items, i), *pre, *obj;
            const char *ps;
            Py_ssize_t pn;
            if (!is(it, P.Tuple_Type) || P.PyTuple_Size(it) != 2) {
                type_error("emit: items must be (prefix, object) pairs");
                goto fail;
            }
            pre = P.PyTuple_GetItem(it, 0);
            obj = P.PyTuple_GetItem(it, 1);
            if ((ps = text(pre, &pn)) == NULL) {
                type_error("emit: a prefix must be a str");
                goto fail;
            }
            if (tpa_flat_add(&f, ps, obj) != 0) goto fail;
        }
        tpa_flat_end(&f);
        if (gnorm) {
            tp_mp_cstr(&b, TP_KEY(step, gnorm));
            if (job && tpa_job_count(job) > 0)
                tpa_job_gnorm(job, tpa_put_f64_fixed(&b, 0), f.sq_sum);
            else
                tp_mp_f64(&b, sqrt(f.sq_sum + f.sq_large));
        }
    }
    if (job) tpa_job_run(job, &b);
    tpa_job_destroy(job);
    seq = tpa_emit_commit(tk, &b);
    tp_buf_free(&b);
    if (tk == TP_K_SAVE && seq != TPA_NO_SEQ &&
        P.PyDict_GetItemString(body, TP_KEY(saveload, armed)) == P.True)
        atomic_store(&armed, 1);
    if (tk == TP_K_SAVE || tk == TP_K_LOAD) io_end();
    return P.PyLong_FromLongLong(seq == TPA_NO_SEQ ? -1 : (long long)seq);
fail:
    tpa_job_destroy(job);
    tp_buf_free(&b);
    if (tk == TP_K_SAVE || tk == TP_K_LOAD) io_end();
    return NULL;
}

static PyObject *py_flush(PyObject *self, PyObject *args)
{
    (void)self, (void)args;
    tpa_emit_flush();
    return none();
}

static PyObject *py_set_step(PyObject *self, PyObject *o)
{
    long long v = P.PyLong_AsLongLong(o);
    (void)self;
    if (v == -1 && P.PyErr_Occurred()) return NULL;
    tpa_emit_set_step(v);
    return none();
}

static PyObject *py_set_rank(PyObject *self, PyObject *o)
{
    long long v = P.PyLong_AsLongLong(o);
    (void)self;
    if (v == -1 && P.PyErr_Occurred()) return NULL;
    tpa_emit_set_rank(v);
    return none();
}

/* ---- checkpoint records ---- */

static __thread tpa_reccol *collector;
static __thread int collect_depth;

static PyObject *py_rec_begin(PyObject *self, PyObject *args)
{
    (void)self, (void)args;
    if (collect_depth++ > 0) return none();
    io_begin();
    collector = calloc(1, sizeof *collector);
    if (collector) collector->recs = calloc(MAX_RECORDS, sizeof(tp_record));
    if (collector && collector->recs) {
        collector->max = MAX_RECORDS;
        tpa_torchser_collect(collector);
    } else if (collector) {
        free(collector);
        collector = NULL;
    }
    return none();
}

static PyObject *digest_bytes(const uint8_t d[16])
{
    return P.PyBytes_FromStringAndSize((const char *)d, 16);
}

static PyObject *records_list(const tp_record *r, size_t n)
{
    PyObject *l = P.PyList_New(0);
    for (size_t i = 0; l && i < n; i++) {
        PyObject *t = P.PyTuple_New(3);
        if (t == NULL) break;
        P.PyTuple_SetItem(t, 0, P.PyUnicode_FromString(r[i].name));
        P.PyTuple_SetItem(t, 1, P.PyLong_FromUnsignedLongLong(r[i].size));
        P.PyTuple_SetItem(t, 2, digest_bytes(r[i].d));
        P.PyList_Append(l, t);
        P.Py_DecRef(t);
    }
    return l;
}

/* rec_end() -> (digest | None, [(name, size, digest)], overflow) for the
 * records libtorch wrote or read since rec_begin() on this thread. */
static PyObject *py_rec_end(PyObject *self, PyObject *args)
{
    tpa_reccol *c = collector;
    PyObject *r;
    uint8_t d[16];
    bool have;
    (void)self, (void)args;
    if (collect_depth == 0 || --collect_depth > 0 || c == NULL) return none();
    tpa_torchser_collect(NULL);
    collector = NULL;
    have = tp_records_digest(c->recs, c->n, d);
    r = P.PyTuple_New(3);
    P.PyTuple_SetItem(r, 0, have && !c->overflow ? digest_bytes(d) : none());
    P.PyTuple_SetItem(r, 1, records_list(c->recs, c->n));
    P.PyTuple_SetItem(r, 2, P.PyBool_FromLong(c->overflow));
    free(c->recs);
    free(c);
    return r;
}

static PyObject *ckpt_result(tp_ckpt_digest *cd)
{
    PyObject *r = P.PyTuple_New(4);
    P.PyTuple_SetItem(r, 0, digest_bytes(cd->out));
    P.PyTuple_SetItem(r, 1, P.PyBool_FromLong(cd->zip));
    P.PyTuple_SetItem(r, 2, P.PyLong_FromUnsignedLongLong(cd->nbytes));
    P.PyTuple_SetItem(r, 3, records_list(cd->records, cd->nrecords));
    free(cd->records);
    return r;
}

/* ckpt_file(path) -> (digest, zip, nbytes, records) or None if unreadable */
static PyObject *py_ckpt_file(PyObject *self, PyObject *o)
{
    Py_ssize_t n;
    const char *path = text(o, &n);
    tp_ckpt_digest cd;
    PyThreadState *ts;
    char buf[4096];
    int rc;
    (void)self;
    if (path == NULL || (size_t)n >= sizeof buf) {
        type_error("ckpt_file(path: str)");
        return NULL;
    }
    memcpy(buf, path, (size_t)n + 1);
    ts = P.PyEval_SaveThread();
    rc = tp_ckpt_digest_file(buf, &cd);
    P.PyEval_RestoreThread(ts);
    return rc == 0 ? ckpt_result(&cd) : none();
}

/* ckpt_bytes(b: bytes) -> (digest, zip, nbytes, records) */
static PyObject *py_ckpt_bytes(PyObject *self, PyObject *o)
{
    char *p;
    Py_ssize_t n;
    tp_ckpt_digest cd;
    (void)self;
    if (!is(o, P.Bytes_Type) || P.PyBytes_AsStringAndSize(o, &p, &n) != 0) {
        P.PyErr_Clear();
        type_error("ckpt_bytes(b: bytes)");
        return NULL;
    }
    tp_ckpt_digest_mem((const uint8_t *)p, (size_t)n, &cd);
    return ckpt_result(&cd);
}

static PyObject *py_digest(PyObject *self, PyObject *o)
{
    uint8_t d[16];
    (void)self;
    if (tpa_value_digest(o, d) != 0) return NULL;
    return digest_bytes(d);
}

/* register(tensor_type, marker_type, ndarray_type_or_None) */
static PyObject *py_register(PyObject *self, PyObject *args)
{
    PyObject *slots[3] = {arg(args, 0), arg(args, 1), arg(args, 2)};
    PyObject **dst[3] = {&tpa_types_reg.tensor, &tpa_types_reg.marker, &tpa_types_reg.ndarray};
    (void)self;
    for (int i = 0; i < 3; i++) {
        if (slots[i] == NULL || slots[i] == P.None) continue;
        P.Py_IncRef(slots[i]);
        if (*dst[i]) P.Py_DecRef(*dst[i]);
        *dst[i] = slots[i];
    }
    return none();
}

/* ---- lifecycle ---- */

/* say_bye is tpa_bridge_bye.  Returns 1 when this call said bye, 0 when it
 * was said before, is being said by another thread (waited for: the end of
 * an interrupted execution on the agent's thread and the training thread's
 * own exit can meet, and the process must not exit before the bye is
 * confirmed), or the agent is off (a forked child, a failed boot). */
static int say_bye(const char *reason, int has_code, long long code, const char *exc)
{
    int none = 0, me = (int)getpid();
    tp_buf b;
    if (!atomic_compare_exchange_strong(&bye_pid, &none, me)) {
        for (int i = 0; none == me && i < BYE_WAIT_MS / 10 && !atomic_load(&bye_done); i++)
            usleep(10000);
        return 0; /* in a forked child, the parent's bye is none of its business */
    }
    if (!tpa_emit_enabled()) {
        atomic_store(&bye_done, 1);
        return 0;
    }
    tpa_emit_flush();
    tpa_send_drain(15000);
    tp_buf_init(&b);
    tp_mp_map(&b, 7);
    tp_mp_cstr(&b, TP_KEY(bye, reason));
    tp_mp_cstr(&b, reason);
    tp_mp_cstr(&b, TP_KEY(bye, code));
    if (has_code)
        tp_mp_int(&b, code);
    else
        tp_mp_nil(&b);
    tp_mp_cstr(&b, TP_KEY(bye, sent));
    tp_mp_uint(&b, tpa_emit_count() + 1);
    tp_mp_cstr(&b, TP_KEY(bye, dropped));
    tp_mp_uint(&b, tpa_emit_dropped() + tpa_send_dropped());
    tp_mp_cstr(&b, TP_KEY(bye, errors));
    tp_mp_uint(&b, errors);
    tp_mp_cstr(&b, TP_KEY(bye, spooled));
    tp_mp_bool(&b, tpa_send_spooled());
    tp_mp_cstr(&b, TP_KEY(bye, exc));
    tp_mp_cstr(&b, exc);
    tpa_emit_commit(TP_K_BYE, &b);
    tp_buf_free(&b);
    tpa_emit_flush();
    tpa_emit_disable();
    tpa_send_drain(15000);
    if (tpa_send_confirm(5000) != 0) TPA_LOG("the daemon did not confirm every event");
    tpa_send_stop();
    atomic_store(&bye_done, 1);
    return 1;
}

void tpa_bridge_bye(const char *reason, int has_code, long long code, const char *exc)
{
    (void)say_bye(reason, has_code, code, exc);
}

/* flush_stdio flushes C stdio's f unless another thread holds its lock (the
 * training thread may be blocked writing to it). */
static void flush_stdio(FILE *f)
{
    if (ftrylockfile(f) != 0) return;
    fflush(f);
    funlockfile(f);
}

/* end_execution ends the process when the daemon says its execution is over
 * (tpa_send_on_end): a process of resume's I was interrupted, and this one,
 * another rank or another host's, may be blocked in anything no peer's death
 * interrupts (a sleep, a read, a collective of another group).  It runs on
 * the agent's own thread while the training thread does whatever it does,
 * holding the GIL or not, so it does nothing in Python: the bye as the
 * interrupted process says it (its events confirmed or spooled first), C
 * stdio flushed, exit status TP_INTERRUPT_STATUS.  Python's own buffers of
 * sys.stdout and sys.stderr cannot be flushed without the GIL, which the
 * training thread may hold for good: what they still hold is lost, as when
 * a collective fails and the launcher kills the process.  A checkpoint
 * half written is not cut short, nor a process that a save of its own armed
 * (it ends itself at its next training-step boundary, once a checkpoint
 * written by several saves is complete): each has up to GRACE_MS first.
 * When the process says bye on its own meanwhile (it was interrupted
 * itself, or exits), that thread ends it. */
static void end_execution(void)
{
    for (int i = 0; i < GRACE_MS / 10 && atomic_load(&bye_pid) == 0 &&
                    (atomic_load(&ckpt_io) > 0 || atomic_load(&armed));
         i++)
        usleep(10000);
    if (!say_bye("interrupt", 1, TP_INTERRUPT_STATUS, NULL)) return;
    flush_stdio(stdout);
    flush_stdio(stderr);
    _exit(TP_INTERRUPT_STATUS);
}

/* bye(reason, code=None, exc=None): the last event; drains and confirms. */
static PyObject *py_bye(PyObject *self, PyObject *args)
{
    PyObject *r = arg(args, 0), *c = arg(args, 1), *e = arg(args, 2);
    Py_ssize_t n;
    const char *reason = text(r, &n), *exc = e && e != P.None ? text(e, &n) : NULL;
    long long code = 0;
    int has_code = c != NULL && c != P.None;
    char rbuf[64], ebuf[256];
    PyThreadState *ts;
    (void)self;
    if (reason == NULL) {
        type_error("bye(reason: str, code=None, exc=None)");
        return NULL;
    }
    if (has_code) {
        code = P.PyLong_AsLongLong(c);
        if (code == -1 && P.PyErr_Occurred()) {
            P.PyErr_Clear();
            has_code = 0;
        }
    }
    snprintf(rbuf, sizeof rbuf, "%s", reason);
    if (exc) snprintf(ebuf, sizeof ebuf, "%s", exc);
    ts = P.PyEval_SaveThread();
    tpa_bridge_bye(rbuf, has_code, code, exc ? ebuf : NULL);
    P.PyEval_RestoreThread(ts);
    return none();
}

/* interrupt(): resume's requested end of execution I.  Never returns. */
static PyObject *py_interrupt(PyObject *self, PyObject *args)
{
    (void)self, (void)args;
    P.PyEval_SaveThread();
    tpa_bridge_bye("interrupt", 1, TP_INTERRUPT_STATUS, NULL);
    _exit(TP_INTERRUPT_STATUS);
}

/* error(where, msg): a hook caught an exception of its own. */
static PyObject *py_error(PyObject *self, PyObject *args)
{
    Py_ssize_t n1, n2;
    const char *w = text(arg(args, 0), &n1), *m = text(arg(args, 1), &n2);
    tp_buf b;
    (void)self;
    errors++;
    if (w == NULL || m == NULL) return none();
    TPA_LOG("hook error in %s: %s", w, m);
    tp_buf_init(&b);
    tp_mp_map(&b, 2);
    tp_mp_cstr(&b, TP_KEY(error, where));
    tp_mp_str(&b, w, (size_t)n1);
    tp_mp_cstr(&b, TP_KEY(error, msg));
    tp_mp_str(&b, m, (size_t)(n2 > 4000 ? 4000 : n2));
    tpa_emit_commit(TP_K_ERROR, &b);
    tp_buf_free(&b);
    return none();
}

static void set_item(PyObject *d, const char *k, PyObject *v)
{
    if (v == NULL) {
        P.PyErr_Clear();
        return;
    }
    P.PyDict_SetItemString(d, k, v);
    P.Py_DecRef(v);
}

/* config() -> dict: tpa_cfg as the glue reads it (agent/glue/config.py). */
static PyObject *py_config(PyObject *self, PyObject *args)
{
    PyObject *d = P.PyDict_New();
    (void)self, (void)args;
    if (d == NULL) return NULL;
    set_item(d, "run", P.PyLong_FromLongLong(tpa_cfg.run));
    set_item(d, "exec", P.PyLong_FromLongLong(tpa_cfg.exec));
    set_item(d, "role", P.PyUnicode_FromString(tpa_cfg.role));
    set_item(d, "interrupt_at",
             tpa_cfg.interrupt_at >= 0 ? P.PyLong_FromLongLong(tpa_cfg.interrupt_at) : none());
    set_item(d, "capture", P.PyUnicode_FromString(tpa_cfg.capture_values ? "values" : "digests"));
    set_item(d, "update_norm", P.PyBool_FromLong(tpa_cfg.update_norm));
    set_item(d, "update_every", P.PyLong_FromLongLong(tpa_cfg.update_every));
    set_item(d, "debug", P.PyBool_FromLong(tpa_cfg.debug));
    set_item(d, "sample_id",
             tpa_cfg.sample_id ? P.PyUnicode_FromString(tpa_cfg.sample_id) : none());
    set_item(d, "loss_counts", P.PyBool_FromLong(tpa_cfg.loss_counts));
    set_item(d, "disable_dropout", P.PyBool_FromLong(tpa_cfg.disable_dropout));
    set_item(d, "induction", P.PyBool_FromLong(tpa_cfg.induction));
    set_item(d, "full_from",
             tpa_cfg.full_from >= 0 ? P.PyLong_FromLongLong(tpa_cfg.full_from) : none());
    set_item(d, "full_to", tpa_cfg.full_to >= 0 ? P.PyLong_FromLongLong(tpa_cfg.full_to) : none());
    set_item(d, "full_every", P.PyLong_FromLongLong(tpa_cfg.full_every));
    return d;
}

static PyObject *py_update_begin(PyObject *self, PyObject *o)
{
    (void)self;
    if (!is(o, P.List_Type)) {
        type_error("update_begin(params: list)");
        return NULL;
    }
    return tpa_update_begin(o) == 0 ? none() : NULL;
}

static PyObject *py_update_end(PyObject *self, PyObject *o)
{
    double norm;
    bool changed;
    PyObject *r;
    (void)self;
    if (!is(o, P.List_Type)) {
        type_error("update_end(params: list)");
        return NULL;
    }
    if (tpa_update_end(o, &norm, &changed) != 0) return NULL;
    r = P.PyTuple_New(2);
    P.PyTuple_SetItem(r, 0, P.PyFloat_FromDouble(norm));
    P.PyTuple_SetItem(r, 1, P.PyBool_FromLong(changed));
    return r;
}

static PyObject *py_log(PyObject *self, PyObject *o)
{
    Py_ssize_t n;
    const char *s = text(o, &n);
    (void)self;
    if (s) TPA_LOG("%.*s", (int)n, s);
    return none();
}

static PyObject *py_cxx_status(PyObject *self, PyObject *args)
{
    (void)self, (void)args;
    return P.PyUnicode_FromString(tpa_torchser_status());
}

/* hash_threads(): how many threads hash a snapshot's large tensors (team.h). */
static PyObject *py_hash_threads(PyObject *self, PyObject *args)
{
    (void)self, (void)args;
    return P.PyLong_FromLongLong(tpa_team_size());
}

/* wire_pid(pid): pid as the agent sends it (config.h tpa_pid): a hello's
 * ppid names its parent as the parent names itself. */
static PyObject *py_wire_pid(PyObject *self, PyObject *o)
{
    long long v = P.PyLong_AsLongLong(o);
    (void)self;
    if (v == -1 && P.PyErr_Occurred()) return NULL;
    return P.PyLong_FromLongLong(tpa_pid(v));
}

#define V TPA_METH_VARARGS
#define O TPA_METH_O
#define N TPA_METH_NOARGS
static PyMethodDef methods[] = {
    {"emit", py_emit, V, NULL},
    {"flush", py_flush, N, NULL},
    {"set_step", py_set_step, O, NULL},
    {"wire_pid", py_wire_pid, O, NULL},
    {"set_rank", py_set_rank, O, NULL},
    {"rec_begin", py_rec_begin, N, NULL},
    {"rec_end", py_rec_end, N, NULL},
    {"ckpt_file", py_ckpt_file, O, NULL},
    {"ckpt_bytes", py_ckpt_bytes, O, NULL},
    {"digest", py_digest, O, NULL},
    {"register", py_register, V, NULL},
    {"bye", py_bye, V, NULL},
    {"interrupt", py_interrupt, N, NULL},
    {"error", py_error, V, NULL},
    {"config", py_config, N, NULL},
    {"update_begin", py_update_begin, O, NULL},
    {"update_end", py_update_end, O, NULL},
    {"log", py_log, O, NULL},
    {"cxx_status", py_cxx_status, N, NULL},
    {"hash_threads", py_hash_threads, N, NULL},
    {NULL, NULL, 0, NULL},
};

PyObject *tpa_bridge_module(void)
{
    PyObject *m = P.PyModule_New("_trainparity_agent"), *name;
    if (m == NULL) return NULL;
    tpa_send_on_end(end_execution);
    name = P.PyUnicode_FromString("_trainparity_agent");
    for (PyMethodDef *d = methods; d->ml_name; d++) {
        PyObject *fn = P.PyCFunction_NewEx(d, NULL, name);
        if (fn == NULL || P.PyObject_SetAttrString(m, d->ml_name, fn) != 0) {
            if (fn) P.Py_DecRef(fn);
            P.Py_DecRef(name);
            P.Py_DecRef(m);
            return NULL;
        }
        P.Py_DecRef(fn);
    }
    P.Py_DecRef(name);
    if ((name = P.PyUnicode_FromString(TP_VERSION)) == NULL ||
        P.PyObject_SetAttrString(m, "version", name) != 0) {
        if (name) P.Py_DecRef(name);
        P.Py_DecRef(m);
        return NULL;
    }
    P.Py_DecRef(name);
    return m;
}
