/* SPDX-License-Identifier: MIT
 * lease.c -- the daemon's holders: pids with their start times, pruned when
 * they are gone. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "daemon/serve/lease.h"

typedef struct holder {
    int64_t pid;
    unsigned long long start; /* /proc start time; 0 when unknown */
} holder;

struct tpd_lease {
    holder *h;
    int n, cap;
    bool owned;
};

/* proc_stat reads pid's state letter and start time (clock ticks since
 * boot) from /proc/<pid>/stat; 0 on success, -1 when it cannot be read. */
static int proc_stat(int64_t pid, char *state, unsigned long long *start)
{
    char path[64], buf[1024], *p;
    size_t len;
    FILE *f;
    int field;

    snprintf(path, sizeof path, "/proc/%lld/stat", (long long)pid);
    if ((f = fopen(path, "r")) == NULL) return -1;
    len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    /* "pid (comm) S ppid ... starttime ...": comm may hold spaces and
     * parentheses, so fields are counted from the last ')'. */
    if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ' || p[2] == '\0') return -1;
    *state = p[2];
    p += 2;
    for (field = 3; field < 22; field++) {
        if ((p = strchr(p, ' ')) == NULL) return -1;
        p++;
    }
    *start = strtoull(p, NULL, 10);
    return 0;
}

/* exists reports whether the process h names is still there: not gone,
 * not a zombie, not another process under a reused pid. */
static bool exists(const holder *h)
{
    unsigned long long start;
    char state;

    if (kill((pid_t)h->pid, 0) != 0 && errno == ESRCH) return false;
    if (proc_stat(h->pid, &state, &start) != 0) return true; /* no /proc: kill's word */
    if (state == 'Z' || state == 'X') return false;
    return h->start == 0 || start == h->start;
}

tp_err tpd_lease_create(tpd_lease **lp)
{
    tpd_lease *l = calloc(1, sizeof *l);
    if (l == NULL) return TP_ENOMEM;
    *lp = l;
    return TP_OK;
}

void tpd_lease_destroy(tpd_lease *l)
{
    if (l == NULL) return;
    free(l->h);
    free(l);
}

tp_err tpd_lease_attach(tpd_lease *l, int64_t pid, bool owner)
{
    holder h = {pid, 0};
    char state;
    int i;

    if (pid < 1 || (pid_t)pid != pid) return TP_EINVAL;
    if (proc_stat(pid, &state, &h.start) != 0) h.start = 0;
    if (!exists(&h)) return TP_ENOENT;
    for (i = 0; i < l->n && l->h[i].pid != pid; i++) {}
    if (i == l->n) {
        if (l->n == TPD_LEASE_MAX) return TP_EFULL;
        if (l->n == l->cap) {
            int cap = l->cap ? l->cap * 2 : 8;
            holder *nh = realloc(l->h, (size_t)cap * sizeof *nh);
            if (nh == NULL) return TP_ENOMEM;
            l->h = nh;
            l->cap = cap;
        }
        l->n++;
    }
    l->h[i] = h;
    if (owner) l->owned = true;
    return TP_OK;
}

int tpd_lease_prune(tpd_lease *l)
{
    int i, k = 0;
    for (i = 0; i < l->n; i++)
        if (exists(&l->h[i])) l->h[k++] = l->h[i];
    l->n = k;
    return k;
}

int tpd_lease_detach(tpd_lease *l, int64_t pid)
{
    int i, k = 0;
    for (i = 0; i < l->n; i++)
        if (l->h[i].pid != pid) l->h[k++] = l->h[i];
    l->n = k;
    return tpd_lease_prune(l);
}

int tpd_lease_count(const tpd_lease *l)
{
    return l->n;
}

bool tpd_lease_over(const tpd_lease *l)
{
    return l->owned && l->n == 0;
}
