/* SPDX-License-Identifier: MIT
 * secret.c -- random execution keys and constant-time comparison. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/random.h>
#include <unistd.h>

#include "daemon/store/secret.h"

#define KEY_BYTES (TP_EXEC_KEY_LEN / 2)

/* fill reads n random bytes: getrandom, else /dev/urandom. */
static int fill(uint8_t *p, size_t n)
{
    size_t got = 0;
    int fd;
    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) break;
        got += (size_t)r;
    }
    if (got == n) return 0;
    if ((fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)) < 0) return -1;
    got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    return got == n ? 0 : -1;
}

tp_err tpd_secret_new(char out[TP_EXEC_KEY_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    uint8_t raw[KEY_BYTES];
    if (fill(raw, sizeof raw) != 0) return TP_EIO;
    for (size_t i = 0; i < sizeof raw; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[TP_EXEC_KEY_LEN] = '\0';
    return TP_OK;
}

bool tpd_secret_eq(const void *a, size_t alen, const void *b, size_t blen)
{
    const volatile uint8_t *pa = a, *pb = b;
    size_t n = alen < blen ? alen : blen;
    uint8_t d = alen != blen;
    if (a == NULL || b == NULL) return false;
    for (size_t i = 0; i < n; i++) d |= pa[i] ^ pb[i];
    return d == 0;
}
