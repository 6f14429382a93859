/* SPDX-License-Identifier: MIT
 * devjob.c -- device digests from the agent's side (see devjob.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "agent/devjob.h"
#include "agent/log.h"

#define P tpa_py

/* devdigest.h numbers the element kinds as digest/digest.h does (NVRTC cannot
 * include it): tpa_dev_enqueue hands one to the other. */
#define SAME(k) ((int)TPA_DEV1_##k == (int)TP_DT_##k)
_Static_assert(SAME(OTHER) && SAME(F32) && SAME(F64) && SAME(F16) && SAME(BF16) && SAME(I8) &&
                   SAME(I16) && SAME(I32) && SAME(I64) && SAME(U8) && SAME(U16) && SAME(U32) &&
                   SAME(U64) && SAME(BOOL),
               "devdigest.h's element kinds are tp_dtype's");
#undef SAME

static struct {
    int (*open)(char *, size_t);
    int (*enqueue)(const void *, size_t, int, int, void *, char *, size_t);
    int (*collect)(tpa_dev1_part *, size_t, char *, size_t);
} L;
static int state; /* 0: not tried, 1: on, -1: off */
/* The thread that digests on the device: the first to meet a CUDA tensor.
 * The library's slots are one list, collected by one job at a time, and a
 * job waits for them with the GIL released; another thread's tensors are
 * copied to the host instead. */
static pthread_t owner;

/* lib_path: libtpagent_cuda.so beside this library. */
static int lib_path(char *out, size_t n)
{
    Dl_info di;
    const char *slash;
    int len;
    if (!dladdr((void *)&tpa_dev_ready, &di) || di.dli_fname == NULL) return -1;
    slash = strrchr(di.dli_fname, '/');
    if (slash == NULL)
        len = snprintf(out, n, "libtpagent_cuda.so");
    else
        len =
            snprintf(out, n, "%.*s/libtpagent_cuda.so", (int)(slash - di.dli_fname), di.dli_fname);
    return len >= 0 && (size_t)len < n ? 0 : -1;
}

static bool off(const char *why)
{
    TPA_LOG("device digests off (CUDA tensors are copied to the host): %s", why);
    state = -1;
    return false;
}

bool tpa_dev_ready(void)
{
    char path[4096], why[256];
    void *h;
    if (state != 0) return state > 0;
    if (!tpa_cfg.device_digest) return off("TRAINPARITY_DEVICE_DIGEST=0");
    if (lib_path(path, sizeof path) != 0) return off("cannot locate libtpagent_cuda.so");
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) return off(dlerror());
    *(void **)&L.open = dlsym(h, "tpcu_open");
    *(void **)&L.enqueue = dlsym(h, "tpcu_enqueue");
    *(void **)&L.collect = dlsym(h, "tpcu_collect");
    if (L.open == NULL || L.enqueue == NULL || L.collect == NULL)
        return off("libtpagent_cuda.so lacks its functions");
    why[0] = 0;
    if (L.open(why, sizeof why) != 0) return off(why);
    TPA_LOG("device digests on (%s)", path);
    owner = pthread_self();
    state = 1;
    return true;
}

int tpa_dev_stream(int dev, void **stream)
{
    PyObject *mods = P.PyImport_GetModuleDict(), *cuda, *fn, *arg, *s, *h;
    long long v;
    cuda = mods ? P.PyDict_GetItemString(mods, "torch.cuda") : NULL;
    if (cuda == NULL) {
        P.PyErr_SetString(*P.Exc_RuntimeError, "torch.cuda is not imported");
        return -1;
    }
    fn = P.PyObject_GetAttrString(cuda, "current_stream");
    if (fn == NULL) return -1;
    arg = P.PyTuple_New(1);
    if (arg != NULL) P.PyTuple_SetItem(arg, 0, P.PyLong_FromLongLong(dev)); /* steals */
    s = arg ? P.PyObject_CallObject(fn, arg) : NULL;
    P.Py_DecRef(fn);
    if (arg) P.Py_DecRef(arg);
    if (s == NULL) return -1;
    h = P.PyObject_GetAttrString(s, "cuda_stream");
    P.Py_DecRef(s);
    if (h == NULL) return -1;
    v = P.PyLong_AsLongLong(h);
    P.Py_DecRef(h);
    if (P.PyErr_Occurred()) return -1;
    *stream = (void *)(uintptr_t)v;
    return 0;
}

int tpa_dev_enqueue(const void *p, size_t nbytes, tp_dtype dt, int dev, void *stream)
{
    char why[256];
    int slot;
    if (state <= 0 || !pthread_equal(owner, pthread_self())) return -1;
    why[0] = 0;
    slot = L.enqueue(p, nbytes, (int)dt, dev, stream, why, sizeof why);
    if (slot < 0) TPA_LOG("device digest not launched (a host copy instead): %s", why);
    return slot;
}

int tpa_dev_collect(tpa_dev1_part *out, size_t n)
{
    char why[256];
    if (state <= 0 || !pthread_equal(owner, pthread_self())) return -1;
    why[0] = 0;
    if (L.collect(out, n, why, sizeof why) == 0) return 0;
    TPA_LOG("device digests lost (host copies instead): %s", why);
    return -1;
}

void tpa_dev_finish(const char *dtype_name, const int64_t *shape, int ndim, size_t nbytes,
                    tp_dtype dt, const tpa_dev1_part *r, uint8_t out[16], tp_stats *st)
{
    tp_digest_device(dtype_name, shape, ndim, nbytes, r->lane, out);
    if (dt == TP_DT_OTHER) {
        st->sum = st->l2 = st->maxabs = NAN;
        st->nonfinite = 0;
        return;
    }
    st->sum = r->sum;
    st->l2 = sqrt(r->sq);
    st->maxabs = r->mx;
    st->nonfinite = r->nf;
}
