/* SPDX-License-Identifier: MIT
 * bgload.c -- a run loaded on a thread and a connection of its own (see
 * bgload.h). */
#include <stdio.h>
#include <unistd.h>

#include "daemon/obs/bgload.h"
#include "daemon/store/store.h"

static void *load(void *arg)
{
    tpd_bgload *b = arg;
    tpd_store *s = NULL;
    b->rc = tpd_store_open(&s, b->path, TPD_STORE_READONLY, b->why, sizeof b->why);
    b->opened = b->rc == TP_OK;
    if (b->opened) b->rc = tpd_obs_load(s, b->run, &b->r, b->why, sizeof b->why);
    tpd_store_close(s);
    return NULL;
}

bool tpd_bgload_start(tpd_bgload *b, const char *path, int64_t run)
{
    b->started = b->opened = false;
    b->path = path;
    b->run = run;
    b->r = NULL;
    b->rc = TP_OK;
    b->why[0] = '\0';
    if (path == NULL || sysconf(_SC_NPROCESSORS_ONLN) < 2) return false;
    b->started = pthread_create(&b->t, NULL, load, b) == 0;
    return b->started;
}

bool tpd_bgload_finish(tpd_bgload *b, tpd_run **out, tp_err *rc, char *why, size_t whylen)
{
    if (!b->started) return false;
    pthread_join(b->t, NULL);
    b->started = false;
    if (!b->opened) return false;
    *out = b->r;
    *rc = b->rc;
    if (b->rc != TP_OK) snprintf(why, whylen, "%s", b->why);
    return true;
}
