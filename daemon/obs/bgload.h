/* SPDX-License-Identifier: MIT
 * bgload.h -- a run loaded on a thread of its own, through a read-only
 * connection of its own to the same database, while the caller loads
 * another run on its connection (a connection is one thread's at a time).
 * Two long runs load in the time of one on a machine with the cores.
 * Where the thread or the connection cannot be had (one core, a database
 * without a file, a file gone), the caller loads the run itself, after. */
#ifndef TP_DAEMON_OBS_BGLOAD_H
#define TP_DAEMON_OBS_BGLOAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon/obs/obs.h"

typedef struct tpd_bgload {
    pthread_t t;
    bool started; /* the thread runs */
    bool opened;  /* its connection was opened: r, rc and why are the load's */
    const char *path;
    int64_t run;
    tpd_run *r;
    tp_err rc;
    char why[512];
} tpd_bgload;

/* tpd_bgload_start starts loading run from the database at path (NULL:
 * none) on a thread; false when it did not start (the machine has one
 * core, no path, no thread to be had): the caller loads the run itself.
 * path must outlive the load. */
bool tpd_bgload_start(tpd_bgload *b, const char *path, int64_t run);

/* tpd_bgload_finish waits for the load b started.  True when it ran on its
 * own connection: then *out is the run (the caller's to free) and TP_OK
 * returned in *rc, or *rc is tpd_obs_load's error and why says it.  False
 * when its connection could not be opened: the caller loads the run
 * itself. */
bool tpd_bgload_finish(tpd_bgload *b, tpd_run **out, tp_err *rc, char *why, size_t whylen);

#endif
