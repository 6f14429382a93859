/* SPDX-License-Identifier: MIT
 * ckpt.c -- checkpoint content digests; a bounds-checked reader of the zip
 * central directory (with ZIP64) for torch.save archives, whose records are
 * stored uncompressed. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "digest/ckpt.h"
#include "digest/digest.h"

static int is_content(const char *name)
{
    return strcmp(name, "data.pkl") == 0 || strncmp(name, "data/", 5) == 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool tp_records_digest(const tp_record *r, size_t n, uint8_t out[16])
{
    const char **names;
    XXH3_state_t h;
    XXH128_canonical_t c;
    size_t k = 0;
    bool pkl = false;
    names = malloc((n ? n : 1) * sizeof *names);
    if (names == NULL) return false;
    for (size_t i = 0; i < n; i++)
        if (is_content(r[i].name)) {
            names[k++] = r[i].name;
            pkl |= strcmp(r[i].name, "data.pkl") == 0;
        }
    qsort(names, k, sizeof *names, cmp_name);
    XXH3_128bits_reset(&h);
    for (size_t i = 0; i < k; i++) {
        /* the record struct holds the name first, so find it back */
        const tp_record *rec = (const tp_record *)(const void *)names[i];
        XXH3_128bits_update(&h, rec->name, strlen(rec->name) + 1);
        XXH3_128bits_update(&h, rec->d, 16);
    }
    free(names);
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&h));
    memcpy(out, c.digest, 16);
    return pkl;
}

/* ---- zip ---- */

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* in reports whether [off, off+len) lies inside n bytes. */
static int in(size_t n, uint64_t off, uint64_t len)
{
    return off <= n && len <= n - off;
}

static int find_eocd(const uint8_t *p, size_t n, size_t *at)
{
    size_t lo = n > 22 + 65535 ? n - 22 - 65535 : 0;
    if (n < 22) return -1;
    for (size_t i = n - 22 + 1; i-- > lo;)
        if (le(p + i, 4) == 0x06054b50) {
            *at = i;
            return 0;
        }
    return -1;
}

/* zip64_extra reads the ZIP64 extended information of a central entry. */
static void zip64_extra(const uint8_t *x, size_t xn, uint64_t *usize, uint64_t *csize,
                        uint64_t *off)
{
    size_t i = 0;
    while (i + 4 <= xn) {
        uint64_t id = le(x + i, 2), len = le(x + i + 2, 2);
        const uint8_t *d = x + i + 4;
        size_t k = 0;
        if (i + 4 + len > xn) return;
        if (id == 0x0001) {
            if (*usize == 0xffffffffu && k + 8 <= len) *usize = le(d + k, 8), k += 8;
            if (*csize == 0xffffffffu && k + 8 <= len) *csize = le(d + k, 8), k += 8;
            if (*off == 0xffffffffu && k + 8 <= len) *off = le(d + k, 8);
            return;
        }
        i += 4 + len;
    }
}

/* zip_scan fills cd->records from a stored-only zip; -1 if p is not one. */
static int zip_scan(const uint8_t *p, size_t n, tp_ckpt_digest *cd)
{
    size_t eocd;
    uint64_t entries, cd_off, pos;
    tp_record *recs;
    if (find_eocd(p, n, &eocd) != 0) return -1;
    entries = le(p + eocd + 10, 2);
    cd_off = le(p + eocd + 16, 4);
    if ((entries == 0xffff || cd_off == 0xffffffffu) && eocd >= 20 &&
        le(p + eocd - 20, 4) == 0x07064b50) {
        uint64_t e64 = le(p + eocd - 20 + 8, 8);
        if (!in(n, e64, 56) || le(p + e64, 4) != 0x06064b50) return -1;
        entries = le(p + e64 + 32, 8);
        cd_off = le(p + e64 + 48, 8);
    }
    if (entries == 0 || entries > n / 46 || !in(n, cd_off, entries * 46)) return -1;
    recs = calloc(entries, sizeof *recs);
    if (recs == NULL) return -1;
    pos = cd_off;
    for (uint64_t i = 0; i < entries; i++) {
        uint64_t method, csize, usize, nlen, xlen, clen, loff, data;
        const char *name, *slash;
        if (!in(n, pos, 46) || le(p + pos, 4) != 0x02014b50) goto bad;
        method = le(p + pos + 10, 2);
        csize = le(p + pos + 20, 4);
        usize = le(p + pos + 24, 4);
        nlen = le(p + pos + 28, 2);
        xlen = le(p + pos + 30, 2);
        clen = le(p + pos + 32, 2);
        loff = le(p + pos + 42, 4);
        if (!in(n, pos + 46, nlen + xlen + clen)) goto bad;
        zip64_extra(p + pos + 46 + nlen, xlen, &usize, &csize, &loff);
        if (method != 0 || csize != usize) goto bad; /* torch stores records */
        if (!in(n, loff, 30) || le(p + loff, 4) != 0x04034b50) goto bad;
        data = loff + 30 + le(p + loff + 26, 2) + le(p + loff + 28, 2);
        if (!in(n, data, usize)) goto bad;
        name = (const char *)p + pos + 46;
        slash = memchr(name, '/', nlen);
        if (slash != NULL) {
            nlen -= (uint64_t)(slash + 1 - name);
            name = slash + 1;
        }
        if (nlen >= TP_RECORD_NAME) nlen = TP_RECORD_NAME - 1;
        memcpy(recs[i].name, name, nlen);
        recs[i].size = usize;
        tp_digest_bytes(p + data, usize, recs[i].d);
        pos += 46 + le(p + pos + 28, 2) + xlen + clen;
    }
    cd->records = recs;
    cd->nrecords = entries;
    return 0;
bad:
    free(recs);
    return -1;
}

void tp_ckpt_digest_mem(const uint8_t *p, size_t n, tp_ckpt_digest *cd)
{
    memset(cd, 0, sizeof *cd);
    cd->nbytes = n;
    if (zip_scan(p, n, cd) == 0 && tp_records_digest(cd->records, cd->nrecords, cd->out)) {
        cd->zip = true;
        cd->have = true;
        return;
    }
    free(cd->records);
    cd->records = NULL;
    cd->nrecords = 0;
    tp_digest_bytes(p, n, cd->out);
    cd->have = true;
}

int tp_ckpt_digest_file(const char *path, tp_ckpt_digest *cd)
{
    struct stat st;
    void *m;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    memset(cd, 0, sizeof *cd);
    if (fd < 0) return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    if (st.st_size == 0) {
        close(fd);
        tp_ckpt_digest_mem((const uint8_t *)"", 0, cd);
        return 0;
    }
    m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return -1;
    tp_ckpt_digest_mem(m, (size_t)st.st_size, cd);
    munmap(m, (size_t)st.st_size);
    return 0;
}
