/* SPDX-License-Identifier: MIT
 * spool.h -- hand an execution's spool files to the daemon.
 *
 * When the agent cannot reach the daemon it writes <spool>/<exec>-*.spool
 * (proto/SCHEMA.md).  After the execution ends each such file is ingested
 * through the control command "ingest" and then moved to <spool>/done/, so
 * that no file is ingested twice: a daemon on this host reads the file
 * itself; one on another host (a network control URL) is sent its frames. */
#ifndef TP_TOOLS_CLIENT_SPOOL_H
#define TP_TOOLS_CLIENT_SPOOL_H

#include <stdint.h>

#include "proto/tp_err.h"
#include "tools/client/client.h"
#include "tools/client/ctl.h"

/* tpt_spool_ingest ingests and moves every spool file of exec found in the
 * directory spool (absolute), in name order, adding the daemon's counts to
 * *sum and the number of files to *nfiles (both may be NULL).  A missing
 * directory has no files.  It stops at the first file the daemon could not
 * ingest and leaves that file where it is.  Errors (with err): those of
 * tpt_ingest, TP_EIO (cannot read the directory or move a file). */
tp_err tpt_spool_ingest(tpt_client *c, const char *spool, int64_t exec, tpt_ingest_info *sum,
                        int *nfiles, char *err);

/* tpt_spool_pending counts into *n the spool files of exec still in the
 * directory spool (not ingested: tpt_spool_ingest moves those it ingests).
 * A missing directory has none.  Errors (with err): TP_EIO, TP_ENOMEM. */
tp_err tpt_spool_pending(const char *spool, int64_t exec, int *n, char *err);

#endif
