/* SPDX-License-Identifier: MIT
 * control.h -- the daemon's control protocol (nng req/rep), as declared in
 * proto/control.def, and the environment contract between trainparity-run
 * and the agent.
 *
 * A request is a MessagePack map {"cmd": name, ["tok": token,]
 * ...arguments}; a reply is a map {"ok": bool, ["error": str,] ...results}.
 * Each command's arguments and results are rows of proto/control.def, each
 * named by an identifier: TPC_<cmd> the command, TPA_<cmd>_<key> an
 * argument, TPR_<cmd>_<key> a result (docs/control.md lists them).
 * A daemon that an attached process started (attach's owner) exits once no
 * attached process is left: detached, or found gone (daemon/serve/lease.h).
 * Every string in a reply is valid UTF-8: a byte that is not becomes
 * U+FFFD, a control character other than newline and tab the escape
 * \u00NN (valid in JSON text as well). */
#ifndef TP_PROTO_CONTROL_H
#define TP_PROTO_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/tp_err.h"

/* ---- the protocol's commands (proto/control.def) ---- */

/* The keys around every command's own. */
#define TP_CTL_CMD   "cmd"   /* request: the command's name */
#define TP_CTL_TOK   "tok"   /* request: the shared token (tcp:// sockets) */
#define TP_CTL_OK    "ok"    /* reply: whether the command succeeded */
#define TP_CTL_ERROR "error" /* reply: why not */

typedef enum tp_ctype {
    TP_C_INT = 1, /* an integer */
    TP_C_NUM,     /* a number: an integer or a float */
    TP_C_BOOL,    /* true or false */
    TP_C_STR,     /* a string */
    TP_C_STRS,    /* an array of strings */
    TP_C_INTS,    /* an array of integers */
    TP_C_BIN,     /* bytes (a MessagePack bin) */
} tp_ctype;

#define TP_CMD(id, name, meaning) TPC_##id,
#define TP_ARG(id, key, type, need, meaning)
#define TP_RES(id, key, type, meaning)
typedef enum tp_cmd {
#include "proto/control.def"
    TPC_COUNT
} tp_cmd;
#undef TP_CMD
#undef TP_ARG

#define TP_CMD(id, name, meaning)
#define TP_ARG(id, key, type, need, meaning) TPA_##id##_##key,
typedef enum tp_arg {
#include "proto/control.def"
    TPA_COUNT
} tp_arg;
#undef TP_ARG
#undef TP_RES

#define TP_ARG(id, key, type, need, meaning)
#define TP_RES(id, key, type, meaning) TPR_##id##_##key,
typedef enum tp_res {
#include "proto/control.def"
    TPR_COUNT
} tp_res;
#undef TP_CMD
#undef TP_ARG
#undef TP_RES

typedef struct tp_cmd_info {
    const char *name;    /* "run.create", ...; "<check>.evidence" for TPC_evidence */
    const char *meaning; /* one line, for docs/control.md */
} tp_cmd_info;

/* An argument (need: the command requires it) or a result. */
typedef struct tp_field_info {
    tp_cmd cmd;
    const char *key;
    tp_ctype type;
    bool need;
    const char *meaning;
} tp_field_info;

/* The tables of proto/control.def: TPC_COUNT, TPA_COUNT, TPR_COUNT rows. */
extern const tp_cmd_info tp_cmds[TPC_COUNT];
extern const tp_field_info tp_args[TPA_COUNT];
extern const tp_field_info tp_ress[TPR_COUNT];

#define TPC_NAME(c) (tp_cmds[(c)].name)
#define TPA_KEY(a)  (tp_args[(a)].key)
#define TPR_KEY(r)  (tp_ress[(r)].key)

/* TP_EVIDENCE_SUFFIX ends the name of a check's evidence command: its
 * check's name, then this ("coverage.evidence"). */
#define TP_EVIDENCE_SUFFIX ".evidence"

/* tp_cmd_find is the command named name (n bytes): a check's evidence
 * command is TPC_evidence, with *check (len bytes; may be NULL) its check's
 * name.  -1 when no command has that name. */
int tp_cmd_find(const char *name, size_t n, char *check, size_t len);

/* tp_arg_find is cmd's argument key (n bytes), or -1 when cmd takes none of
 * that name. */
int tp_arg_find(tp_cmd cmd, const char *key, size_t n);

/* tp_ctype_name is "an integer", "a number", "a boolean", "a string", "an
 * array of strings" or "an array of integers", for messages. */
const char *tp_ctype_name(tp_ctype t);

/* ---- the agent's environment ---- */

/* Environment read by the agent (set by trainparity-run). */
#define TP_ENV_DAEMON        "TRAINPARITY_DAEMON"        /* ingest URL */
#define TP_ENV_CONTROL       "TRAINPARITY_CONTROL"       /* control URL (else derived) */
#define TP_ENV_RUN           "TRAINPARITY_RUN"           /* run id */
#define TP_ENV_EXEC          "TRAINPARITY_EXEC"          /* execution id */
#define TP_ENV_EXEC_KEY      "TRAINPARITY_EXEC_KEY"      /* the execution's key (exec.create) */
#define TP_ENV_ROLE          "TRAINPARITY_ROLE"          /* execution role label */
#define TP_ENV_SPOOL         "TRAINPARITY_SPOOL"         /* spool directory */
#define TP_ENV_CAPTURE       "TRAINPARITY_CAPTURE"       /* "digests" | "values" */
#define TP_ENV_CAPTURE_UNTIL "TRAINPARITY_CAPTURE_UNTIL" /* U: values at steps <= U only */
#define TP_ENV_INTERRUPT_AT  "TRAINPARITY_INTERRUPT_AT"  /* optimizer step K */
#define TP_ENV_UPDATE_NORM   "TRAINPARITY_UPDATE_NORM"   /* "1": exact update norms */
#define TP_ENV_UPDATE_EVERY  "TRAINPARITY_UPDATE_EVERY"  /* N: those norms every Nth step */
#define TP_ENV_TOKEN         "TRAINPARITY_TOKEN"         /* shared token for tcp:// */
#define TP_ENV_DEBUG         "TRAINPARITY_DEBUG"         /* "1": agent logs to stderr */
#define TP_ENV_SAMPLE_ID     "TRAINPARITY_SAMPLE_ID"     /* Python expression over a batch */
#define TP_ENV_DIGEST        "TRAINPARITY_DIGEST"     /* "full" | "induction" (docs/induction.md) */
#define TP_ENV_FULL_STEPS    "TRAINPARITY_FULL_STEPS" /* "LO-HI": every tensor digested there */
#define TP_ENV_FULL_EVERY    "TRAINPARITY_FULL_EVERY" /* K: induction's safety net, 0 none */
#define TP_ENV_PIDNS         "TRAINPARITY_PIDNS"      /* the tool's pid space (tp_pidns) */
#define TP_ENV_LOSS_COUNTS   "TRAINPARITY_LOSS_COUNTS"     /* "1": elements a mean loss averages */
#define TP_ENV_NO_DROPOUT    "TRAINPARITY_DISABLE_DROPOUT" /* "1": dropout the identity */

/* The variables a check sets for what it measures.  An execution gets each
 * from the check that runs it or not at all: never from the caller's
 * environment, where one left by an earlier command would steer a record or
 * a compare's C (trainparity-run removes them before adding its own).  The
 * user's knobs (TRAINPARITY_HASH_THREADS, _FULL_EVERY, _DEVICE_DIGEST,
 * _DEBUG, _SEND_TIMEOUT_MS) pass through. */
#define TP_ENV_CHECK_VARS                                                                          \
    TP_ENV_CAPTURE, TP_ENV_CAPTURE_UNTIL, TP_ENV_INTERRUPT_AT, TP_ENV_UPDATE_NORM,                 \
        TP_ENV_UPDATE_EVERY, TP_ENV_SAMPLE_ID, TP_ENV_DIGEST, TP_ENV_FULL_STEPS,                   \
        TP_ENV_LOSS_COUNTS, TP_ENV_NO_DROPOUT

/* An execution's key: 128 random bits as lowercase hex, made by exec.create.
 * Every batch for the execution carries it ("key"); the daemon stores only
 * batches whose (run, exec, key) match an execution it created. */
#define TP_EXEC_KEY_LEN 32

/* Exit status of a process the agent ended on request (resume's execution I). */
#define TP_INTERRUPT_STATUS 0

/* tp_url_control derives the control URL from an ingest URL: "ipc://P" gives
 * "ipc://P.ctl", "tcp://H:N" gives "tcp://H:N+1".  TP_EINVAL for other forms
 * or when out (n bytes) is too small. */
tp_err tp_url_control(const char *ingest, char *out, size_t n);

/* tp_url_local tells whether url is ipc:// or inproc://, which no other host
 * can reach; anything else (tcp://) is a network URL. */
bool tp_url_local(const char *url);

/* The most bytes a control request may have over a network (tcp://)
 * listener: a longer one is closed at its length header. */
#define TP_MAX_NET_REQUEST ((size_t)1 << 20)

/* A process's id on the wire.  A pid names a process only within its pid
 * space: processes on two hosts, or in two containers (a Kubernetes pod
 * each), can have the same pid.  So the agent sends its pid as is when it
 * lives in the pid space of the trainparity-run that started the check
 * (TRAINPARITY_PIDNS, unset: assumed the same), and otherwise ORs a tag of
 * its own pid space above the pid's TP_PID_BITS bits (a Linux pid is below
 * 2^22): pid | tp_pid_tag(its space, the tool's).  Its ppid gets the same
 * tag, which its parent, in the same space, has too. */
#define TP_PID_BITS     22
#define TP_PID_TAG_BITS 41

/* tp_pidns writes this process's pid space into out (n bytes): the boot's
 * id and the pid namespace, "<boot id>/pid:[<inode>]".  TP_EIO when /proc
 * does not say; TP_EINVAL when n is too small. */
tp_err tp_pidns(char *out, size_t n);

/* tp_pid_tag is the tag for a process of pid space mine when the tool's is
 * tools: 0 when they are the same, or tools is NULL or empty (a process
 * started by hand), else a non-zero multiple of 2^TP_PID_BITS below 2^63. */
int64_t tp_pid_tag(const char *mine, const char *tools);

#endif
