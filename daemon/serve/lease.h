/* SPDX-License-Identifier: MIT
 * lease.h -- the processes that hold the daemon: trainparity-run attaches
 * (control command "attach") while it uses the project's private daemon and
 * detaches when it is done; a daemon that an attached process started (its
 * "owner") exits once no attached process is left.
 *
 * A holder is a pid of this host and pid namespace, remembered with its
 * start time (/proc/<pid>/stat) so that a pid reused by another process
 * does not keep the daemon.  A holder that no longer exists (killed, or a
 * zombie) is dropped at the next prune, so a tool killed by SIGKILL does not
 * keep the daemon forever.  A daemon nobody owns (started by hand, or the
 * one TRAINPARITY_DAEMON names) never ends because of its lease.
 * Serve thread only. */
#ifndef TP_DAEMON_SERVE_LEASE_H
#define TP_DAEMON_SERVE_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/tp_err.h"

#define TPD_LEASE_MAX      4096 /* holders at most */
#define TPD_LEASE_PRUNE_MS 1000 /* tpd_control_tick prunes this often */

typedef struct tpd_lease tpd_lease; /* opaque */

/* tpd_lease_create makes an empty, unowned lease.  Errors: TP_ENOMEM. */
tp_err tpd_lease_create(tpd_lease **lp);

/* tpd_lease_destroy frees l.  NULL is a no-op. */
void tpd_lease_destroy(tpd_lease *l);

/* tpd_lease_attach makes pid a holder (again: no change); owner says that
 * pid started the daemon, which from now on exits when the last holder has
 * gone.  Errors: TP_EINVAL (pid < 1), TP_ENOENT (no such process),
 * TP_EFULL (TPD_LEASE_MAX holders). */
tp_err tpd_lease_attach(tpd_lease *l, int64_t pid, bool owner);

/* tpd_lease_detach drops pid (not a holder: no change) and every holder
 * that no longer exists; returns the holders left. */
int tpd_lease_detach(tpd_lease *l, int64_t pid);

/* tpd_lease_prune drops every holder that no longer exists; returns the
 * holders left. */
int tpd_lease_prune(tpd_lease *l);

/* tpd_lease_count is the number of holders (as of the last change). */
int tpd_lease_count(const tpd_lease *l);

/* tpd_lease_over reports whether the daemon is owned and no holder is
 * left: time for it to exit. */
bool tpd_lease_over(const tpd_lease *l);

#endif
