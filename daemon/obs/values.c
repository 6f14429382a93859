/* SPDX-License-Identifier: MIT
 * values.c -- captured tensor values read back from the blob store (see
 * values.h).  The agent ships a tensor's bytes as they are in memory
 * (contiguous, little-endian on every machine it runs on) under the digest
 * of its leaf, so a leaf's digest names its blob file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/obs/values.h"
#include "daemon/store/blob.h"

tp_err tpd_values_locate(tpd_run *r, const char *db_path)
{
    char dir[4096];
    tp_err rc = tpd_blobs_dir_for(db_path, dir, sizeof dir);
    if (rc != TP_OK) return rc;
    r->blobs = tpd_arena_strdup(r->arena, dir);
    return r->blobs ? TP_OK : TP_ENOMEM;
}

static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 0)
        v = ldexp(m, -24);
    else if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

static double bf16_to_double(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The element size of each dtype the decoder knows, and its kind:
 * 'f' IEEE float, 'h' half, 'b' bfloat16, 'i' signed, 'u' unsigned. */
static const struct {
    const char *name;
    size_t size;
    char kind;
} dtypes[] = {
    {"float32", 4, 'f'}, {"float64", 8, 'f'}, {"float16", 2, 'h'}, {"bfloat16", 2, 'b'},
    {"int8", 1, 'i'},    {"int16", 2, 'i'},   {"int32", 4, 'i'},   {"int64", 8, 'i'},
    {"uint8", 1, 'u'},   {"uint16", 2, 'u'},  {"uint32", 4, 'u'},  {"uint64", 8, 'u'},
    {"bool", 1, 'u'},
};

static uint64_t le_bits(const uint8_t *p, size_t size)
{
    uint64_t u = 0;
    for (size_t i = 0; i < size; i++) u |= (uint64_t)p[i] << (8 * i);
    return u;
}

tp_err tpd_values_decode(const char *dtype, const void *bytes, size_t nbytes, double **out,
                         size_t *n)
{
    const uint8_t *p = bytes;
    size_t size = 0, cnt;
    char kind = 0;
    double *v;
    if (dtype && strncmp(dtype, "torch.", 6) == 0) dtype += 6;
    for (size_t i = 0; dtype && i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strcmp(dtype, dtypes[i].name) == 0) size = dtypes[i].size, kind = dtypes[i].kind;
    if (size == 0) return TP_EINVAL;
    if (nbytes % size != 0) return TP_EPROTO;
    cnt = nbytes / size;
    v = malloc((cnt ? cnt : 1) * sizeof *v);
    if (v == NULL) return TP_ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        uint64_t u = le_bits(p + i * size, size);
        switch (kind) {
        case 'f':
            if (size == 4) {
                uint32_t w = (uint32_t)u;
                float f;
                memcpy(&f, &w, 4);
                v[i] = f;
            } else {
                memcpy(&v[i], &u, 8);
            }
            break;
        case 'h':
            v[i] = half_to_double((uint16_t)u);
            break;
        case 'b':
            v[i] = bf16_to_double((uint16_t)u);
            break;
        case 'i':
            /* sign-extend from the element's width */
            if (size < 8 && (u >> (8 * size - 1)) & 1) u |= ~(uint64_t)0 << (8 * size);
            v[i] = (double)(int64_t)u;
            break;
        default:
            v[i] = (double)u;
        }
    }
    *out = v;
    *n = cnt;
    return TP_OK;
}

/* read_blob reads the blob of tensor v of run r into *out (malloc'ed).  A
 * digest of kind "none" is no content address: it names no blob of v's. */
static tp_err read_blob(const tpd_run *r, const tpd_val *v, uint8_t **out, size_t *n)
{
    static const char hex[] = "0123456789abcdef";
    char h[33], path[4200];
    uint8_t *buf;
    size_t got;
    long len;
    FILE *f;
    if (v->kind != 't' || !v->blob || r->blobs == NULL ||
        strcmp(tpd_val_dkind(v), TP_DKIND_NONE) == 0)
        return TP_ENOENT;
    for (int i = 0; i < 16; i++) {
        h[2 * i] = hex[v->digest[i] >> 4];
        h[2 * i + 1] = hex[v->digest[i] & 15];
    }
    h[32] = '\0';
    snprintf(path, sizeof path, "%s/%.2s/%s", r->blobs, h, h + 2);
    if ((f = fopen(path, "rb")) == NULL) return TP_EIO;
    if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return TP_EIO;
    }
    buf = malloc(len ? (size_t)len : 1);
    if (buf == NULL) {
        fclose(f);
        return TP_ENOMEM;
    }
    got = fread(buf, 1, (size_t)len, f);
    fclose(f);
    if (got != (size_t)len) {
        free(buf);
        return TP_EIO;
    }
    *out = buf;
    *n = got;
    return TP_OK;
}

tp_err tpd_values_bytes(const tpd_run *r, const tpd_val *v, uint8_t **out, size_t *n)
{
    return read_blob(r, v, out, n);
}

tp_err tpd_values_read(const tpd_run *r, const tpd_val *v, double **out, size_t *n)
{
    uint8_t *buf;
    size_t want = 1, got;
    tp_err rc = read_blob(r, v, &buf, &got);
    if (rc != TP_OK) return rc;
    rc = tpd_values_decode(v->dtype, buf, got, out, n);
    free(buf);
    if (rc != TP_OK) return rc;
    for (uint32_t i = 0; i < v->ndim; i++) want *= (size_t)v->shape[i];
    if (*n != want) {
        free(*out);
        *out = NULL;
        return TP_EPROTO;
    }
    return TP_OK;
}

bool tpd_values_within(const double *a, const double *b, size_t n, double rtol, double atol,
                       size_t *worst)
{
    double most = 0;
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        double d, bound = atol + rtol * fabs(b[i]), over;
        if (isnan(a[i]) || isnan(b[i])) {
            if (isnan(a[i]) && isnan(b[i])) continue;
            over = INFINITY;
        } else if (a[i] == b[i]) {
            continue; /* also equal infinities */
        } else {
            d = fabs(a[i] - b[i]);
            if (d <= bound) continue;
            over = isfinite(d) ? d - bound : INFINITY;
        }
        if (ok || over > most) {
            most = over;
            if (worst) *worst = i;
        }
        ok = false;
    }
    return ok;
}

void tpd_values_fit(const double *a, const double *b, size_t n, double *k, double *resid)
{
    double ab = 0, bb = 0, aa = 0, rr = 0;
    for (size_t i = 0; i < n; i++) ab += a[i] * b[i], bb += b[i] * b[i], aa += a[i] * a[i];
    if (bb == 0 || !isfinite(bb) || !isfinite(ab)) {
        *k = 0;
        *resid = 1;
        return;
    }
    *k = ab / bb;
    for (size_t i = 0; i < n; i++) rr += (a[i] - *k * b[i]) * (a[i] - *k * b[i]);
    *resid = aa > 0 ? sqrt(rr / aa) : (rr > 0 ? 1 : 0);
}

void tpd_values_errors(const double *a, const double *b, size_t n, double *max_abs, double *max_rel)
{
    double ma = 0, mr = 0;
    for (size_t i = 0; i < n; i++) {
        double d;
        if (isnan(a[i]) || isnan(b[i])) {
            if (isnan(a[i]) && isnan(b[i])) continue;
            ma = mr = INFINITY;
            continue;
        }
        if (a[i] == b[i]) continue; /* also equal infinities */
        d = fabs(b[i] - a[i]);      /* infinite when either is */
        if (d > ma) ma = d;
        if (!isfinite(d))
            mr = INFINITY;
        else if (a[i] != 0 && d / fabs(a[i]) > mr)
            mr = d / fabs(a[i]);
    }
    *max_abs = ma;
    *max_rel = mr;
}
