/* SPDX-License-Identifier: MIT
 * pidns.c -- which pid space a process lives in, and the process ids that
 * tell processes of different pid spaces apart (proto/control.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proto/control.h"

tp_err tp_pidns(char *out, size_t n)
{
    char boot[64] = "", ns[64];
    ssize_t k;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    int w;
    if (f != NULL) {
        if (fgets(boot, sizeof boot, f) == NULL) boot[0] = '\0';
        fclose(f);
        boot[strcspn(boot, "\n")] = '\0';
    }
    if ((k = readlink("/proc/self/ns/pid", ns, sizeof ns - 1)) <= 0 || boot[0] == '\0')
        return TP_EIO;
    ns[k] = '\0';
    w = snprintf(out, n, "%s/%s", boot, ns);
    return w < 0 || (size_t)w >= n ? TP_EINVAL : TP_OK;
}

int64_t tp_pid_tag(const char *mine, const char *tools)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a 64 */
    if (mine == NULL || tools == NULL || tools[0] == '\0' || strcmp(mine, tools) == 0) return 0;
    for (const char *p = mine; *p != '\0'; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h &= (UINT64_C(1) << TP_PID_TAG_BITS) - 1;
    return (int64_t)(h != 0 ? h : 1) << TP_PID_BITS;
}
