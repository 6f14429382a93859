/* SPDX-License-Identifier: MIT
 * netguard.h -- bounds on what peers of a network listener (tcp://, any URL
 * that is not ipc:// or inproc://) can make the daemon hold before their
 * token is checked.
 *
 * nng receives each message whole before the daemon sees it, and its TCP
 * transport allocates a message as soon as the 8-byte length header
 * arrives; the token inside is checked only after that.  Unguarded, anyone
 * who can connect holds up to the socket's receive limit per connection,
 * on as many connections as they open.  A guard watches one nng socket:
 *  - its network listeners get their own receive limit (NNG_OPT_RECVMAXSZ,
 *    set before the listener starts): a longer message closes its
 *    connection when its length header arrives, before anything is
 *    allocated;
 *  - every connection through one of them is counted, in all and per
 *    remote address (the IP address, not the port); one past either cap is
 *    closed before the socket uses it (NNG_PIPE_EV_ADD_PRE).
 * A connection whose message is malformed or lacks the token stays open
 * (netguard.c says why); its message is dropped by the daemon.  One whose
 * message carried the token stops counting (tpd_netguard_proven): the caps
 * are on connections that have not shown it.
 * The pull and rep protocols read a connection's next message only once
 * the daemon took the last one, so the network peers of a socket hold at
 * most max_conns messages of at most the listener's limit, plus the one
 * the daemon is handling (daemon/serve/serve.c states the numbers).  Local
 * listeners are neither limited nor counted: only the local user reaches
 * them.
 *
 * Threads: the pipe callbacks run on nng's threads; the guard's state is
 * under its own mutex.  The log function, when given, is called from those
 * threads (one line the first time each cap refuses a connection). */
#ifndef TP_DAEMON_SERVE_NETGUARD_H
#define TP_DAEMON_SERVE_NETGUARD_H

#include <nng/nng.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/serve/serve.h"
#include "proto/tp_err.h"

typedef struct tpd_netguard tpd_netguard; /* opaque */

/* tpd_netguard_create guards socket s: at most max_conns connections
 * through its network listeners in all, max_per_addr from one address
 * (both at least 1).  log (NULL: silent) receives the refusals.  The guard must outlive the
 * socket: close the socket first, then destroy the guard.
 * Errors: TP_EINVAL, TP_ENOMEM, TP_ENET (nng refused the callbacks). */
tp_err tpd_netguard_create(tpd_netguard **gp, nng_socket s, unsigned max_conns,
                           unsigned max_per_addr, tpd_log_fn log, void *log_arg);

/* tpd_netguard_destroy frees g; its socket must be closed.  NULL: no-op. */
void tpd_netguard_destroy(tpd_netguard *g);

/* tpd_netguard_listen creates and starts a listener on g's socket at url.
 * recvmax > 0 makes it a guarded network listener whose messages are at
 * most recvmax bytes; 0 leaves the listener as the socket configures it
 * (ipc://).  why receives a one-line reason.  Errors: TP_ENET (nng: bad
 * URL, address in use...), TP_EINVAL (more than 32 guarded listeners). */
tp_err tpd_netguard_listen(tpd_netguard *g, const char *url, size_t recvmax, char *why,
                           size_t whylen);

/* tpd_netguard_local tells whether message m came through one of g's local
 * listeners (those made with recvmax 0: ipc://, inproc://).  A message whose
 * connection has closed since, or that came any other way, is not local:
 * the answer errs towards asking for the token. */
bool tpd_netguard_local(tpd_netguard *g, nng_msg *m);

/* tpd_netguard_proven tells g that message m carried the token: its
 * connection no longer counts towards the caps, which bound what peers
 * without the token can hold.  A connection of a local listener, or one
 * already gone, is left as it is. */
void tpd_netguard_proven(tpd_netguard *g, nng_msg *m);

#endif
