/* SPDX-License-Identifier: MIT
 * tpcuda.c -- libtpagent_cuda.so (see tpcuda.h): the CUDA runtime torch
 * loaded, the kernel images built in, and the launches.
 *
 * Per device: a buffer for the chunks' results of one tensor at a time
 * (the kernels of successive tensors on one stream run in order, so they
 * share it), and CAP result slots on the device and, pinned, on the host. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "agent/cuda/tpcuda.h"

#define CAP    8192 /* result slots between two collects */
#define DEVS   16
#define GROUPS 8

extern const char tpcu_img_sm80[], tpcu_img_sm90[], tpcu_img_ptx80[];

/* The runtime's functions used, resolved from the loaded library. */
static struct {
    __typeof__(cudaGetDevice) *get_device;
    __typeof__(cudaSetDevice) *set_device;
    __typeof__(cudaDeviceGetAttribute) *attr;
    __typeof__(cudaLibraryLoadData) *lib_load;
    __typeof__(cudaLibraryGetKernel) *get_kernel;
    __typeof__(cudaLaunchKernel) *launch;
    __typeof__(cudaMalloc) *malloc_dev;
    __typeof__(cudaFree) *free_dev;
    __typeof__(cudaMallocHost) *malloc_host;
    __typeof__(cudaMemcpyAsync) *copy;
    __typeof__(cudaStreamSynchronize) *sync;
    __typeof__(cudaGetErrorString) *err_str;
} R;

static const char *kernel_names[] = {
    "tpa_dev1_chunks_other", "tpa_dev1_chunks_f32", "tpa_dev1_chunks_f64", "tpa_dev1_chunks_f16",
    "tpa_dev1_chunks_bf16",  "tpa_dev1_chunks_i8",  "tpa_dev1_chunks_i16", "tpa_dev1_chunks_i32",
    "tpa_dev1_chunks_i64",   "tpa_dev1_chunks_u8",  "tpa_dev1_chunks_u16", "tpa_dev1_chunks_u32",
    "tpa_dev1_chunks_u64",   "tpa_dev1_chunks_bool"};
#define NKINDS (int)(sizeof kernel_names / sizeof kernel_names[0])

typedef struct device {
    bool ready, bad; /* bad: the kernels cannot run here (why) */
    char why[160];
    cudaKernel_t chunks[NKINDS], final;
    tpa_dev1_part *parts; /* device: one tensor's chunk results */
    size_t nparts;
    tpa_dev1_part *res;  /* device: CAP slots */
    tpa_dev1_part *host; /* pinned: CAP slots */
    void *last;          /* the stream the last launch used, */
    bool launched;       /* if any */
} device;

static device D[DEVS];
static struct {
    int dev;
    void *stream;
} G[GROUPS]; /* the streams launched on since the last collect */
static int ngroups;
static struct {
    int dev;
    size_t at; /* index among its device's slots */
} S[CAP];
static size_t nslots, per_dev[DEVS];
static bool opened;

static int fail(char *why, size_t n, const char *what, cudaError_t e)
{
    if (why && n) snprintf(why, n, "%s: %s", what, R.err_str ? R.err_str(e) : "CUDA error");
    return -1;
}

static int say(char *why, size_t n, const char *text)
{
    if (why && n) snprintf(why, n, "%s", text);
    return -1;
}

/* find_runtime: dl_iterate_phdr callback keeping the first libcudart.so*. */
static int find_runtime(struct dl_phdr_info *info, size_t size, void *data)
{
    const char *base = strrchr(info->dlpi_name, '/');
    (void)size;
    base = base ? base + 1 : info->dlpi_name;
    if (strncmp(base, "libcudart.so", 12) != 0) return 0;
    snprintf(data, 4096, "%s", info->dlpi_name);
    return 1;
}

#define RESOLVE(field, name)                                                                       \
    do {                                                                                           \
        *(void **)&R.field = dlsym(h, #name);                                                      \
        if (R.field == NULL) return say(why, whylen, "the CUDA runtime lacks " #name);             \
    } while (0)

int tpcu_open(char *why, size_t whylen)
{
    static char path[4096];
    void *h;
    if (opened) return 0;
    path[0] = 0;
    dl_iterate_phdr(find_runtime, path);
    if (path[0] == 0)
        return say(why, whylen, "no CUDA runtime (libcudart) is loaded in this process");
    h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (h == NULL) return say(why, whylen, "the loaded CUDA runtime cannot be opened");
    RESOLVE(get_device, cudaGetDevice);
    RESOLVE(set_device, cudaSetDevice);
    RESOLVE(attr, cudaDeviceGetAttribute);
    RESOLVE(lib_load, cudaLibraryLoadData);
    RESOLVE(get_kernel, cudaLibraryGetKernel);
    RESOLVE(launch, cudaLaunchKernel);
    RESOLVE(malloc_dev, cudaMalloc);
    RESOLVE(free_dev, cudaFree);
    RESOLVE(malloc_host, cudaMallocHost);
    RESOLVE(copy, cudaMemcpyAsync);
    RESOLVE(sync, cudaStreamSynchronize);
    RESOLVE(err_str, cudaGetErrorString);
    opened = true;
    return 0;
}

const char *tpcu_images(void)
{
    return "sm_80 sm_90 compute_80";
}

/* image picks the kernel image for compute capability cc (major * 10 +
 * minor): a cubin runs on its own major version from its minor up. */
static const void *image(int cc)
{
    if (cc == 90) return tpcu_img_sm90;
    if (cc >= 80 && cc < 90) return tpcu_img_sm80;
    if (cc > 90) return tpcu_img_ptx80; /* compiled by the driver */
    return NULL;
}

static int device_load(device *d, int dev, char *why, size_t whylen);

/* device_ready readies device dev (the current device) once; a device whose
 * kernels cannot run (no image for it, no memory) stays refused, with the
 * same reason. */
static int device_ready(int dev, char *why, size_t whylen)
{
    device *d = &D[dev];
    if (d->ready) return 0;
    if (d->bad) return say(why, whylen, d->why);
    if (device_load(d, dev, why, whylen) == 0) {
        d->ready = true;
        return 0;
    }
    d->bad = true;
    snprintf(d->why, sizeof d->why, "%s", why && whylen ? why : "the kernels cannot run");
    return -1;
}

/* device_load loads the kernels for device dev and allocates its slots. */
static int device_load(device *d, int dev, char *why, size_t whylen)
{
    int major = 0, minor = 0;
    const void *img;
    cudaLibrary_t lib;
    cudaError_t e;
    if ((e = R.attr(&major, cudaDevAttrComputeCapabilityMajor, dev)) != cudaSuccess ||
        (e = R.attr(&minor, cudaDevAttrComputeCapabilityMinor, dev)) != cudaSuccess)
        return fail(why, whylen, "compute capability", e);
    img = image(major * 10 + minor);
    if (img == NULL) {
        if (why && whylen)
            snprintf(why, whylen, "no kernel image for compute capability %d.%d (built: %s)", major,
                     minor, tpcu_images());
        return -1;
    }
    if ((e = R.lib_load(&lib, img, NULL, NULL, 0, NULL, NULL, 0)) != cudaSuccess)
        return fail(why, whylen, "loading the digest kernels", e);
    for (int k = 0; k < NKINDS; k++)
        if ((e = R.get_kernel(&d->chunks[k], lib, kernel_names[k])) != cudaSuccess)
            return fail(why, whylen, kernel_names[k], e);
    if ((e = R.get_kernel(&d->final, lib, "tpa_dev1_final")) != cudaSuccess)
        return fail(why, whylen, "tpa_dev1_final", e);
    if ((e = R.malloc_dev((void **)&d->res, CAP * sizeof(tpa_dev1_part))) != cudaSuccess)
        return fail(why, whylen, "result slots", e);
    if ((e = R.malloc_host((void **)&d->host, CAP * sizeof(tpa_dev1_part))) != cudaSuccess)
        return fail(why, whylen, "pinned result slots", e);
    return 0;
}

/* room makes d's chunk buffer hold n results.  cudaFree waits for the
 * device, so no launch still reads the old buffer. */
static int room(device *d, size_t n, char *why, size_t whylen)
{
    cudaError_t e;
    if (n <= d->nparts) return 0;
    if (d->parts) R.free_dev(d->parts);
    d->parts = NULL, d->nparts = 0;
    if (n < 4096) n = 4096;
    if ((e = R.malloc_dev((void **)&d->parts, n * sizeof(tpa_dev1_part))) != cudaSuccess)
        return fail(why, whylen, "chunk results", e);
    d->nparts = n;
    return 0;
}

static dim3 dim3_of(unsigned long long x)
{
    dim3 d;
    d.x = (unsigned)x, d.y = 1, d.z = 1;
    return d;
}

static int group_of(int dev, void *stream)
{
    for (int g = 0; g < ngroups; g++)
        if (G[g].dev == dev && G[g].stream == stream) return g;
    if (ngroups == GROUPS) return -1;
    G[ngroups].dev = dev, G[ngroups].stream = stream;
    return ngroups++;
}

static int launch(device *d, const void *dptr, size_t nbytes, int dt, void *stream,
                  tpa_dev1_part *out, char *why, size_t whylen)
{
    unsigned long long n = nbytes, nchunks = (n + TPA_DEV1_CHUNK - 1) / TPA_DEV1_CHUNK;
    const void *p = dptr;
    tpa_dev1_part *parts = d->parts;
    void *a1[] = {&p, &n, &parts}, *a2[] = {&parts, &nchunks, &out};
    cudaError_t e;
    /* Another stream of this device may still read the chunk buffer. */
    if (d->launched && d->last != stream && (e = R.sync(d->last)) != cudaSuccess)
        return fail(why, whylen, "waiting for the previous stream", e);
    d->last = stream;
    d->launched = true;
    if (nchunks > 0 && (e = R.launch((const void *)d->chunks[dt], dim3_of(nchunks),
                                     dim3_of(TPA_DEV1_THREADS), a1, 0, stream)) != cudaSuccess)
        return fail(why, whylen, "launching the digest", e);
    if ((e = R.launch((const void *)d->final, dim3_of(1), dim3_of(TPA_DEV1_THREADS), a2, 0,
                      stream)) != cudaSuccess)
        return fail(why, whylen, "launching the digest", e);
    return 0;
}

int tpcu_enqueue(const void *dptr, size_t nbytes, int dt, int dev, void *stream, char *why,
                 size_t whylen)
{
    device *d;
    int cur = 0, rc = -1;
    cudaError_t e;
    if (!opened) return say(why, whylen, "tpcu_open was not called");
    if (dev < 0 || dev >= DEVS) return say(why, whylen, "device index out of range");
    if (dt < 0 || dt >= NKINDS) dt = TPA_DEV1_OTHER;
    if (nslots == CAP || per_dev[dev] == CAP) return say(why, whylen, "result slots full");
    if (group_of(dev, stream) < 0) return say(why, whylen, "too many streams in one event");
    if ((e = R.get_device(&cur)) != cudaSuccess) return fail(why, whylen, "current device", e);
    if (cur != dev && (e = R.set_device(dev)) != cudaSuccess)
        return fail(why, whylen, "setting the device", e);
    d = &D[dev];
    if (device_ready(dev, why, whylen) == 0 &&
        room(d, (nbytes + TPA_DEV1_CHUNK - 1) / TPA_DEV1_CHUNK, why, whylen) == 0 &&
        launch(d, dptr, nbytes, dt, stream, d->res + per_dev[dev], why, whylen) == 0) {
        S[nslots].dev = dev, S[nslots].at = per_dev[dev]++;
        rc = (int)nslots++;
    }
    if (cur != dev) R.set_device(cur);
    return rc;
}

static void reset(void)
{
    nslots = 0;
    ngroups = 0;
    memset(per_dev, 0, sizeof per_dev);
}

int tpcu_collect(tpa_dev1_part *out, size_t n, char *why, size_t whylen)
{
    int cur = 0, rc = 0;
    cudaError_t e;
    if (nslots == 0) return 0;
    if (!opened || (e = R.get_device(&cur)) != cudaSuccess) {
        reset();
        return opened ? fail(why, whylen, "current device", e) : say(why, whylen, "not open");
    }
    /* Each device's slots are copied on the stream it launched on last and
     * waited for; with other streams too, every launch is waited for first. */
    for (int g = 0; g < ngroups && ngroups > 1 && rc == 0; g++)
        if ((e = R.sync(G[g].stream)) != cudaSuccess) rc = fail(why, whylen, "waiting", e);
    for (int dev = 0; dev < DEVS && rc == 0; dev++) {
        device *d = &D[dev];
        if (per_dev[dev] == 0) continue;
        if ((e = R.set_device(dev)) != cudaSuccess ||
            (e = R.copy(d->host, d->res, per_dev[dev] * sizeof(tpa_dev1_part),
                        cudaMemcpyDeviceToHost, d->last)) != cudaSuccess ||
            (e = R.sync(d->last)) != cudaSuccess)
            rc = fail(why, whylen, "copying the digests", e);
    }
    if (rc == 0)
        for (size_t i = 0; i < nslots && i < n; i++) out[i] = D[S[i].dev].host[S[i].at];
    R.set_device(cur);
    reset();
    return rc;
}
