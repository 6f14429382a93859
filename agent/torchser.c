/* SPDX-License-Identifier: MIT
 * torchser.c -- interposed libtorch serialization symbols (see torchser.h).
 *
 * Defined under both libstdc++ ABIs (std::__cxx11::basic_string and the old
 * COW string) and for both getRecord signatures (torch 1.x takes the name
 * only; torch 2.x adds std::optional<c10::Allocator*>, passed in two
 * registers).  The real function is found with RTLD_NEXT, or, because torch
 * loads its libraries RTLD_LOCAL, in the scope of the caller's library
 * (dladdr of the return address, dlopen RTLD_NOLOAD, dlsym).  getRecord
 * returns std::tuple<at::DataPtr, size_t> through a hidden pointer; libstdc++
 * lays it out as the size_t at offset 0 and the DataPtr (data first) at 8. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "agent/torchser.h"
#include "digest/digest.h"

#define EXPORT __attribute__((visibility("default")))

static __thread tpa_reccol *col;
static volatile int reached_write, reached_read;

void tpa_torchser_collect(tpa_reccol *c)
{
    col = c;
}

const char *tpa_torchser_status(void)
{
    if (reached_write && reached_read) return "writer+reader";
    if (reached_write) return "writer";
    if (reached_read) return "reader";
    return "none";
}

static void *resolve(const char *sym, void *caller, void *self)
{
    void *p = dlsym(RTLD_NEXT, sym);
    Dl_info di;
    if ((p == NULL || p == self) && dladdr(caller, &di) && di.dli_fname) {
        void *h = dlopen(di.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
        if (h != NULL) {
            p = dlsym(h, sym);
            dlclose(h);
        }
    }
    return p == self ? NULL : p;
}

/* The two string layouts.  cxx11: {char *p; size_t len; ...}.  COW: a
 * pointer to the characters, preceded by {len, capacity, refcount}. */
typedef struct str11 {
    const char *p;
    size_t len;
} str11;

static void note(const char *name, size_t nlen, const void *data, size_t size)
{
    tpa_reccol *c = col;
    tp_record *r;
    if (c == NULL) return;
    if (c->n >= c->max) {
        c->overflow = true;
        return;
    }
    r = &c->recs[c->n];
    if (nlen >= TP_RECORD_NAME) nlen = TP_RECORD_NAME - 1;
    memcpy(r->name, name, nlen);
    r->name[nlen] = '\0';
    r->size = size;
    tp_digest_bytes(data, size, r->d);
    c->n++;
}

static size_t cow_len(const char *p)
{
    return ((const size_t *)(const void *)p)[-3];
}

typedef void (*write_fn)(void *, const void *, const void *, size_t, bool);
typedef void *(*get1_fn)(void *, void *, const void *);
typedef void *(*get2_fn)(void *, void *, const void *, uint64_t, uint64_t);

/* ---- writeRecord ---- */

#define WR11                                                                                       \
    _ZN6caffe29serialize19PyTorchStreamWriter11writeRecordERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEPKvmb
#define WRCOW _ZN6caffe29serialize19PyTorchStreamWriter11writeRecordERKSsPKvmb
#define GR11                                                                                       \
    _ZN6caffe29serialize19PyTorchStreamReader9getRecordERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE
#define GRCOW _ZN6caffe29serialize19PyTorchStreamReader9getRecordERKSs
#define GA11                                                                                       \
    _ZN6caffe29serialize19PyTorchStreamReader9getRecordERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESt8optionalIPN3c109AllocatorEE
#define GACOW _ZN6caffe29serialize19PyTorchStreamReader9getRecordERKSsSt8optionalIPN3c109AllocatorEE
#define S2(x) #x
#define S(x)  S2(x)

EXPORT void WR11(void *self, const str11 *name, const void *data, size_t size, bool compress);
EXPORT void WRCOW(void *self, const char *const *name, const void *data, size_t size,
                  bool compress);
EXPORT void *GR11(void *sret, void *self, const str11 *name);
EXPORT void *GRCOW(void *sret, void *self, const char *const *name);
EXPORT void *GA11(void *sret, void *self, const str11 *name, uint64_t a0, uint64_t a1);
EXPORT void *GACOW(void *sret, void *self, const char *const *name, uint64_t a0, uint64_t a1);

void WR11(void *self, const str11 *name, const void *data, size_t size, bool compress)
{
    static write_fn real;
    if (real == NULL) real = (write_fn)resolve(S(WR11), __builtin_return_address(0), (void *)WR11);
    reached_write = 1;
    note(name->p, name->len, data, size);
    real(self, name, data, size, compress);
}

void WRCOW(void *self, const char *const *name, const void *data, size_t size, bool compress)
{
    static write_fn real;
    if (real == NULL)
        real = (write_fn)resolve(S(WRCOW), __builtin_return_address(0), (void *)WRCOW);
    reached_write = 1;
    note(*name, cow_len(*name), data, size);
    real(self, name, data, size, compress);
}

/* ---- getRecord ---- */

static void noted_get(const void *sret, const char *name, size_t nlen)
{
    size_t size = *(const size_t *)sret;
    const void *data = *(const void *const *)((const char *)sret + 8);
    reached_read = 1;
    if (data != NULL || size == 0) note(name, nlen, data, size);
}

void *GR11(void *sret, void *self, const str11 *name)
{
    static get1_fn real;
    void *r;
    if (real == NULL) real = (get1_fn)resolve(S(GR11), __builtin_return_address(0), (void *)GR11);
    r = real(sret, self, name);
    noted_get(sret, name->p, name->len);
    return r;
}

void *GRCOW(void *sret, void *self, const char *const *name)
{
    static get1_fn real;
    void *r;
    if (real == NULL) real = (get1_fn)resolve(S(GRCOW), __builtin_return_address(0), (void *)GRCOW);
    r = real(sret, self, name);
    noted_get(sret, *name, cow_len(*name));
    return r;
}

void *GA11(void *sret, void *self, const str11 *name, uint64_t a0, uint64_t a1)
{
    static get2_fn real;
    void *r;
    if (real == NULL) real = (get2_fn)resolve(S(GA11), __builtin_return_address(0), (void *)GA11);
    r = real(sret, self, name, a0, a1);
    noted_get(sret, name->p, name->len);
    return r;
}

void *GACOW(void *sret, void *self, const char *const *name, uint64_t a0, uint64_t a1)
{
    static get2_fn real;
    void *r;
    if (real == NULL) real = (get2_fn)resolve(S(GACOW), __builtin_return_address(0), (void *)GACOW);
    r = real(sret, self, name, a0, a1);
    noted_get(sret, *name, cow_len(*name));
    return r;
}
