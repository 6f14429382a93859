/* SPDX-License-Identifier: MIT
 * netguard.c -- connection caps and receive limits for network listeners.
 *
 * The guarded connections are a table of (pipe id, remote address) of at
 * most max_conns rows: NNG_PIPE_EV_ADD_PRE adds a row or closes the pipe,
 * NNG_PIPE_EV_REM_POST removes the pipe's row if it has one (a refused
 * pipe has none, whether or not nng reports its removal).  Counting the
 * rows of one address is a scan: the table is a few dozen rows, and it is
 * touched once per connection, never per message.
 *
 * A connection whose message carried the token is proven
 * (tpd_netguard_proven): its row leaves the table, so that the caps bound
 * the peers that have not shown the token, never the agents of a large
 * job.  A message that arrives on it later is still checked as any other.
 *
 * Connections are never closed for what they send, only refused at
 * NNG_PIPE_EV_ADD_PRE (no receive has started yet) or, by nng itself, at a
 * length header over the listener's limit.  Closing a receiving pipe is
 * unsafe on nng before 1.6.0 (Debian bookworm has 1.5.2): the pending
 * receive is lost (upstream #1636) and no pipe is reaped after it; and a
 * push socket of an unpatched 1.5.2 whose peer keeps closing its connection
 * can crash the sender, here an agent inside a training process (the nng
 * built here is patched: tools/scripts/nng-patches/push0-closed-pipe.patch;
 * a build on Debian's shared library is not).  The bound does not need it:
 * a connection holds at most one message at a time. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "daemon/serve/netguard.h"

#define MAX_LISTENERS 32

typedef struct addr {
    uint16_t family;
    uint8_t b[16]; /* the IP address; zeros past its length */
} addr;

typedef struct conn {
    uint32_t pipe;
    addr from;
} conn;

struct tpd_netguard {
    nng_socket sock;
    pthread_mutex_t mu;
    unsigned max_conns, max_per_addr;
    int listeners[MAX_LISTENERS]; /* ids of the guarded listeners */
    int nlisteners;
    int locals[MAX_LISTENERS]; /* ids of the local (unguarded) listeners */
    int nlocals;
    conn *conns; /* max_conns rows */
    unsigned nconns;
    bool told_total, told_addr; /* each cap is logged once */
    tpd_log_fn log;
    void *log_arg;
};

/* guarded tells whether listener l is one of g's; g->mu is held. */
static bool guarded(const tpd_netguard *g, nng_listener l)
{
    int id = nng_listener_id(l);
    for (int i = 0; id > 0 && i < g->nlisteners; i++)
        if (g->listeners[i] == id) return true;
    return false;
}

/* remote reads p's peer address into *a; -1 when it has none. */
static int remote(nng_pipe p, addr *a)
{
    nng_sockaddr sa;
    memset(a, 0, sizeof *a);
    if (nng_pipe_get_addr(p, NNG_OPT_REMADDR, &sa) != 0) return -1;
    a->family = sa.s_family;
    switch (sa.s_family) {
    case NNG_AF_INET:
        memcpy(a->b, &sa.s_in.sa_addr, 4);
        break;
    case NNG_AF_INET6:
        memcpy(a->b, sa.s_in6.sa_addr, 16);
        break;
    case NNG_AF_ZT:
        memcpy(a->b, &sa.s_zt.sa_nwid, 8);
        memcpy(a->b + 8, &sa.s_zt.sa_nodeid, 8);
        break;
    default: /* no address to tell peers apart: they share one budget */
        break;
    }
    return 0;
}

static void addr_text(const addr *a, char *out, size_t n)
{
    if (a->family == NNG_AF_INET && inet_ntop(AF_INET, a->b, out, (socklen_t)n)) return;
    if (a->family == NNG_AF_INET6 && inet_ntop(AF_INET6, a->b, out, (socklen_t)n)) return;
    snprintf(out, n, "an address of family %u", (unsigned)a->family);
}

/* admit decides on a new pipe of a guarded listener; NULL admits it, else
 * the reason it is refused (the caller closes it).  g->mu is held. */
static const char *admit(tpd_netguard *g, uint32_t id, const addr *a, bool *tell)
{
    unsigned same = 0;
    if (g->nconns >= g->max_conns) {
        *tell = !g->told_total;
        g->told_total = true;
        return "connections in all";
    }
    for (unsigned i = 0; i < g->nconns; i++)
        if (memcmp(&g->conns[i].from, a, sizeof *a) == 0) same++;
    if (same >= g->max_per_addr) {
        *tell = !g->told_addr;
        g->told_addr = true;
        return "connections from that address";
    }
    g->conns[g->nconns].pipe = id;
    g->conns[g->nconns].from = *a;
    g->nconns++;
    return NULL;
}

static void on_pipe(nng_pipe p, nng_pipe_ev ev, void *arg)
{
    tpd_netguard *g = arg;
    uint32_t id = (uint32_t)nng_pipe_id(p);
    const char *why = NULL;
    bool tell = false, has_addr;
    nng_listener l;
    addr a;
    if (ev == NNG_PIPE_EV_REM_POST) {
        pthread_mutex_lock(&g->mu);
        for (unsigned i = 0; i < g->nconns; i++) {
            if (g->conns[i].pipe == id) {
                g->conns[i] = g->conns[--g->nconns];
                break;
            }
        }
        pthread_mutex_unlock(&g->mu);
        return;
    }
    if (ev != NNG_PIPE_EV_ADD_PRE) return;
    l = nng_pipe_listener(p); /* nng's calls outside the guard's lock */
    has_addr = remote(p, &a) == 0;
    pthread_mutex_lock(&g->mu);
    if (!guarded(g, l)) {
        pthread_mutex_unlock(&g->mu);
        return;
    }
    why = has_addr ? admit(g, id, &a, &tell) : "no remote address";
    pthread_mutex_unlock(&g->mu);
    if (why == NULL) return;
    nng_pipe_close(p);
    if (tell && g->log) {
        char from[64], line[256];
        addr_text(&a, from, sizeof from);
        snprintf(line, sizeof line,
                 "connection from %s refused: it would pass the cap of %u %s; further "
                 "refusals are not logged",
                 from, strcmp(why, "connections in all") == 0 ? g->max_conns : g->max_per_addr,
                 why);
        g->log(g->log_arg, line);
    }
}

tp_err tpd_netguard_create(tpd_netguard **gp, nng_socket s, unsigned max_conns,
                           unsigned max_per_addr, tpd_log_fn log, void *log_arg)
{
    tpd_netguard *g;
    if (gp == NULL || max_conns == 0 || max_per_addr == 0) return TP_EINVAL;
    if ((g = calloc(1, sizeof *g)) == NULL) return TP_ENOMEM;
    if ((g->conns = calloc(max_conns, sizeof *g->conns)) == NULL) {
        free(g);
        return TP_ENOMEM;
    }
    if (pthread_mutex_init(&g->mu, NULL) != 0) {
        free(g->conns);
        free(g);
        return TP_ENOMEM;
    }
    g->sock = s;
    g->max_conns = max_conns;
    g->max_per_addr = max_per_addr;
    g->log = log;
    g->log_arg = log_arg;
    if (nng_pipe_notify(s, NNG_PIPE_EV_ADD_PRE, on_pipe, g) != 0 ||
        nng_pipe_notify(s, NNG_PIPE_EV_REM_POST, on_pipe, g) != 0) {
        nng_pipe_notify(s, NNG_PIPE_EV_ADD_PRE, NULL, NULL);
        nng_pipe_notify(s, NNG_PIPE_EV_REM_POST, NULL, NULL);
        tpd_netguard_destroy(g);
        return TP_ENET;
    }
    *gp = g;
    return TP_OK;
}

void tpd_netguard_destroy(tpd_netguard *g)
{
    if (g == NULL) return;
    pthread_mutex_destroy(&g->mu);
    free(g->conns);
    free(g);
}

tp_err tpd_netguard_listen(tpd_netguard *g, const char *url, size_t recvmax, char *why,
                           size_t whylen)
{
    nng_listener l;
    int rv;
    if ((recvmax > 0 ? g->nlisteners : g->nlocals) == MAX_LISTENERS) {
        snprintf(why, whylen, "cannot listen on %s: more than %d %s listeners", url, MAX_LISTENERS,
                 recvmax > 0 ? "network" : "local");
        return TP_EINVAL;
    }
    if ((rv = nng_listener_create(&l, g->sock, url)) != 0) goto fail;
    if (recvmax > 0) {
        /* before the start: nng hands each connection the limit its
         * listener has when the connection is accepted */
        if ((rv = nng_listener_set_size(l, NNG_OPT_RECVMAXSZ, recvmax)) != 0) {
            nng_listener_close(l);
            goto fail;
        }
        pthread_mutex_lock(&g->mu);
        g->listeners[g->nlisteners++] = nng_listener_id(l);
        pthread_mutex_unlock(&g->mu);
    } else {
        pthread_mutex_lock(&g->mu);
        g->locals[g->nlocals++] = nng_listener_id(l);
        pthread_mutex_unlock(&g->mu);
    }
    if ((rv = nng_listener_start(l, 0)) != 0) {
        nng_listener_close(l); /* its id is never reused: a stale row is harmless */
        goto fail;
    }
    return TP_OK;
fail:
    snprintf(why, whylen, "cannot listen on %s: %s", url, nng_strerror(rv));
    return TP_ENET;
}

bool tpd_netguard_local(tpd_netguard *g, nng_msg *m)
{
    int id = nng_listener_id(nng_pipe_listener(nng_msg_get_pipe(m)));
    bool local = false;
    pthread_mutex_lock(&g->mu);
    for (int i = 0; id > 0 && i < g->nlocals; i++)
        if (g->locals[i] == id) local = true;
    pthread_mutex_unlock(&g->mu);
    return local;
}

void tpd_netguard_proven(tpd_netguard *g, nng_msg *m)
{
    uint32_t id = (uint32_t)nng_pipe_id(nng_msg_get_pipe(m));
    pthread_mutex_lock(&g->mu);
    for (unsigned i = 0; i < g->nconns; i++) {
        if (g->conns[i].pipe == id) {
            g->conns[i] = g->conns[--g->nconns];
            break;
        }
    }
    pthread_mutex_unlock(&g->mu);
}
