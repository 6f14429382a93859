/* SPDX-License-Identifier: MIT
 * config.h -- the agent's configuration, read once from the environment in
 * the constructor (see proto/control.h for the variables). */
#ifndef TP_AGENT_CONFIG_H
#define TP_AGENT_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

typedef struct tpa_config {
    bool active;           /* TRAINPARITY_EXEC is set: observe and send */
    int64_t run;           /* TRAINPARITY_RUN */
    int64_t exec;          /* TRAINPARITY_EXEC */
    char daemon[512];      /* ingest URL, "" for none */
    char control[512];     /* control URL, "" for none */
    char spool[512];       /* spool directory, "" for none */
    char role[64];         /* execution role label */
    char token[128];       /* shared token for tcp:// */
    char exec_key[65];     /* TRAINPARITY_EXEC_KEY: the execution's key, "" for none */
    bool capture_values;   /* TRAINPARITY_CAPTURE=values */
    int64_t capture_until; /* TRAINPARITY_CAPTURE_UNTIL: values at steps up to it, -1 all */
    bool update_norm;      /* TRAINPARITY_UPDATE_NORM=1 */
    int64_t update_every;  /* TRAINPARITY_UPDATE_EVERY: the norms every Nth step, 1 when unset */
    int64_t interrupt_at;  /* TRAINPARITY_INTERRUPT_AT, -1 when unset */
    bool debug;            /* TRAINPARITY_DEBUG=1 */
    int send_timeout_ms;   /* TRAINPARITY_SEND_TIMEOUT_MS, default 1000 */
    int hash_threads;      /* TRAINPARITY_HASH_THREADS, 0 when unset (team.h) */
    char *sample_id;       /* TRAINPARITY_SAMPLE_ID (--sample-id), NULL when unset or "" */
    bool loss_counts;      /* TRAINPARITY_LOSS_COUNTS=1 (the accumulation check) */
    bool disable_dropout;  /* TRAINPARITY_DISABLE_DROPOUT=1 */
    bool induction;        /* TRAINPARITY_DIGEST=induction: state tensors at boundaries only */
    bool device_digest;    /* TRAINPARITY_DEVICE_DIGEST (default 1): CUDA tensors on the GPU */
    int64_t full_from;     /* TRAINPARITY_FULL_STEPS=LO-HI: every snapshot full from LO */
    int64_t full_to;       /* to HI (inclusive); both -1 when unset or malformed */
    int64_t full_every;    /* TRAINPARITY_FULL_EVERY: induction's full snapshot every Kth step,
                            * 0: none; default TPA_FULL_EVERY */
    int64_t pid_tag;       /* this pid space's tag against TRAINPARITY_PIDNS (tp_pid_tag) */
} tpa_config;

/* tpa_pid is pid as the agent sends it: tagged with its pid space when that
 * is not the tool's (proto/control.h), so that processes on other hosts or
 * in other containers are never taken for each other. */
#define tpa_pid(pid) ((pid) > 0 ? (int64_t)(pid) | tpa_cfg.pid_tag : (int64_t)(pid))

/* The default of TRAINPARITY_FULL_EVERY. */
#define TPA_FULL_EVERY 100

/* tpa_cfg is filled by tpa_config_load() in the constructor, then read-only.
 * It is the one parser of TRAINPARITY_* variables: the glue reads them through
 * _tp.config() (bridge.c; agent/glue/config.py). */
extern tpa_config tpa_cfg;

/* tpa_config_load reads the environment into tpa_cfg. */
void tpa_config_load(void);

#endif
