/* SPDX-License-Identifier: MIT
 * ctl.h -- the daemon's control commands (proto/control.h) as typed calls
 * over a tpt_client.  Each call is one request/reply except tpt_exec_finish,
 * which repeats while the daemon answers "pending".
 *
 * Errors, for every call: those of tpt_client_call (TP_ETIMEDOUT, TP_ENET,
 * TP_EINVAL when the daemon refused, with its reason in err), and TP_EPROTO
 * when a reply lacks a result this page promises.  Outputs are written only
 * on success. */
#ifndef TP_TOOLS_CLIENT_CTL_H
#define TP_TOOLS_CLIENT_CTL_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/control.h"
#include "proto/tp_err.h"
#include "tools/client/client.h"

typedef struct tpt_ping_info {
    char version[64];
    char db[4096]; /* the daemon's database path ("" when not said) */
    int64_t pid;   /* the daemon's pid (-1 when not said) */
} tpt_ping_info;

/* tpt_ping asks the daemon who it is. */
tp_err tpt_ping(tpt_client *c, tpt_ping_info *out, char *err);

/* tpt_run_create creates a run for check ("record", "resume", ...); name may
 * be NULL; params is the check's declared parameters as text (JSON).  The
 * run is dated from tpt_clock_start when it was called (cli.h). */
tp_err tpt_run_create(tpt_client *c, const char *name, const char *check, const char *params,
                      int64_t *run, char *err);

typedef struct tpt_run_info {
    bool found;     /* the rest is valid only when found */
    int64_t run;    /* its id */
    char check[64]; /* its check ("record", ...) */
    char name[256]; /* its name ("" when it has none) */
} tpt_run_info;

/* tpt_run_find looks a stored run up: the run with id run (when name is
 * NULL), or the latest run called name whose check is check (NULL: any).
 * A run that is not there is out->found false, not an error. */
tp_err tpt_run_find(tpt_client *c, int64_t run, const char *name, const char *check,
                    tpt_run_info *out, char *err);

/* tpt_exec_create creates an execution of run with role ("record", "A",
 * "I", ...) and the command argv (NULL-terminated); key receives the
 * execution's key (TP_EXEC_KEY_LEN hex digits and a NUL), which the agent
 * must put in every batch (TP_ENV_EXEC_KEY).  env (NULL-terminated
 * "KEY=VALUE"; NULL for none) are the variables the agents of every host
 * need, given when other hosts follow the check (trainparity-run join).  A
 * reply without a well-formed key is TP_EPROTO. */
tp_err tpt_exec_create(tpt_client *c, int64_t run, const char *role, char *const argv[],
                       char *const env[], int64_t *exec, char key[TP_EXEC_KEY_LEN + 1], char *err);

typedef struct tpt_finish {
    bool complete; /* every process said bye and no sequence has a gap */
    int64_t processes, events, gaps, dropped;
    int64_t unstored;       /* events the daemon received but could not store: they
                             * still wait in its memory (the database fails), or
                             * were lost */
    char unstored_why[256]; /* the daemon's reason ("" when unstored is 0) */
} tpt_finish;

/* tpt_exec_finish tells the daemon that exec's command ended with exit status
 * status or signal sig (-1: not known, sent as nil) and waits up to wait_ms
 * for the daemon to have its events, asking again every 20 ms while it
 * answers {pending: true}.  TP_ETIMEDOUT if it is still pending well after
 * wait_ms.  Events the daemon did not store are out->unstored, not an error
 * here (tpt_exec_run makes them one). */
tp_err tpt_exec_finish(tpt_client *c, int64_t exec, int status, int sig, int wait_ms,
                       tpt_finish *out, char *err);

typedef struct tpt_seen_info {
    int64_t seq; /* last contiguous sequence number, -1 for none */
    bool bye;
} tpt_seen_info;

/* tpt_seen asks what the daemon has stored from process pid of exec. */
tp_err tpt_seen(tpt_client *c, int64_t exec, int64_t pid, tpt_seen_info *out, char *err);

typedef struct tpt_ingest_info {
    int64_t events; /* events stored */
    int64_t bad;    /* malformed batches dropped */
    int64_t frames; /* frames read */
    int64_t dup;    /* batches already stored (an earlier ingest) */
    int64_t torn;   /* files whose last frame was torn (0 or 1 per file) */
} tpt_ingest_info;

/* tpt_ingest has the daemon store the spool file at path (absolute: the
 * daemon's working directory is not ours).  Uses a long timeout (spool files
 * can be large; a daemon that dies meanwhile is noticed by c's watch within
 * TPT_WATCH_MS), then restores c's. */
tp_err tpt_ingest(tpt_client *c, const char *path, tpt_ingest_info *out, char *err);

/* tpt_ingest_frames has the daemon store n bytes of whole spool frames read
 * here (a daemon on another host cannot read our files); as tpt_ingest.
 * The request must fit what the daemon's socket takes (TP_MAX_NET_REQUEST
 * over the network). */
tp_err tpt_ingest_frames(tpt_client *c, const void *frames, size_t n, tpt_ingest_info *out,
                         char *err);

/* tpt_query returns the daemon's text for what ("runs", "run", "steps", ...)
 * about id in *text (NUL-terminated; free() it). */
tp_err tpt_query(tpt_client *c, const char *what, int64_t id, char **text, char *err);

/* tpt_query_json is tpt_query asking for the view's JSON form instead
 * (daemon/store/query.h: one document and a newline). */
tp_err tpt_query_json(tpt_client *c, const char *what, int64_t id, char **text, char *err);

typedef struct tpt_verdict_info {
    char *outcome; /* "PASS", "FAIL", "ABSTAIN", "ERROR" as the daemon says it */
    char *text;    /* human report, or NULL */
    char *json;    /* JSON report, or NULL */
    /* from tpt_verdict_plan: the verdict asks for a narrowing (nothing was
     * stored): rerun A (and B when narrow_b) with every tensor digested
     * from step narrow_from to narrow_to, then judge again
     * (docs/induction.md) */
    bool narrow, narrow_b;
    int64_t narrow_from, narrow_to;
    /* and I and R too, R digesting every tensor from its step
     * narrow_r_from to narrow_r_to */
    bool narrow_r;
    int64_t narrow_r_from, narrow_r_to;
    /* from tpt_verdict_plan, --once: the verdict without the second
     * baseline is not a PASS; it is to run (compare: D; resume: B), then
     * the verdict asked for again (nothing was stored) */
    bool second;
} tpt_verdict_info;

/* The comparison a check declares: exact unless a tolerance was declared. */
typedef struct tpt_tolerance {
    bool declared;
    double rtol, atol;
} tpt_tolerance;

/* tpt_verdict asks the daemon to judge run under tol (NULL: exact).  Free
 * *out with tpt_verdict_info_free. */
tp_err tpt_verdict(tpt_client *c, int64_t run, const tpt_tolerance *tol, tpt_verdict_info *out,
                   char *err);

/* tpt_verdict_plan is tpt_verdict for a check that can narrow (resume): a
 * verdict that asks for a narrowing is not stored, and out says so. */
tp_err tpt_verdict_plan(tpt_client *c, int64_t run, const tpt_tolerance *tol, tpt_verdict_info *out,
                        char *err);

/* tpt_verdict_info_free frees what tpt_verdict allocated in v.  NULL is a
 * no-op. */
void tpt_verdict_info_free(tpt_verdict_info *v);

/* tpt_shutdown asks the daemon to exit now, whoever holds it (it replies
 * first). */
tp_err tpt_shutdown(tpt_client *c, char *err);

/* tpt_attach makes process pid a holder of the daemon; owner: pid started
 * it, and it is to exit once no holder is left.  *attached (may be NULL):
 * the holders now. */
tp_err tpt_attach(tpt_client *c, int64_t pid, bool owner, int64_t *attached, char *err);

/* tpt_detach drops process pid from the daemon's holders.  *attached: the
 * holders left; *exiting: the daemon exits now (it was owned and none is
 * left).  Either may be NULL. */
tp_err tpt_detach(tpt_client *c, int64_t pid, int64_t *attached, bool *exiting, char *err);

#endif
