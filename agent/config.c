/* SPDX-License-Identifier: MIT
 * config.c -- reads TRAINPARITY_* variables into tpa_cfg. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config.h"
#include "proto/control.h"

tpa_config tpa_cfg;

static void copy_env(char *dst, size_t n, const char *name)
{
    const char *v = getenv(name);
    dst[0] = '\0';
    if (v != NULL && strlen(v) < n) memcpy(dst, v, strlen(v) + 1);
}

static bool env_one(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && strcmp(v, "1") == 0;
}

static int64_t env_int(const char *name, int64_t dflt)
{
    const char *v = getenv(name);
    char *end;
    long long x;
    if (v == NULL || *v == '\0') return dflt;
    x = strtoll(v, &end, 10);
    return *end == '\0' ? (int64_t)x : dflt;
}

/* full_steps reads TRAINPARITY_FULL_STEPS, "LO-HI" with 0 <= LO <= HI. */
static void full_steps(void)
{
    const char *v = getenv(TP_ENV_FULL_STEPS);
    long long lo, hi;
    int n = 0;
    tpa_cfg.full_from = tpa_cfg.full_to = -1;
    if (v != NULL && sscanf(v, "%lld-%lld%n", &lo, &hi, &n) == 2 && v[n] == '\0' && lo >= 0 &&
        hi >= lo) {
        tpa_cfg.full_from = lo;
        tpa_cfg.full_to = hi;
    }
}

void tpa_config_load(void)
{
    const char *cap = getenv(TP_ENV_CAPTURE), *sid = getenv(TP_ENV_SAMPLE_ID);
    char pidns[160];
    free(tpa_cfg.sample_id);
    memset(&tpa_cfg, 0, sizeof tpa_cfg);
    tpa_cfg.exec = env_int(TP_ENV_EXEC, 0);
    tpa_cfg.run = env_int(TP_ENV_RUN, 0);
    tpa_cfg.active = tpa_cfg.exec > 0;
    copy_env(tpa_cfg.daemon, sizeof tpa_cfg.daemon, TP_ENV_DAEMON);
    copy_env(tpa_cfg.control, sizeof tpa_cfg.control, TP_ENV_CONTROL);
    if (tpa_cfg.control[0] == '\0' && tpa_cfg.daemon[0] != '\0' &&
        tp_url_control(tpa_cfg.daemon, tpa_cfg.control, sizeof tpa_cfg.control) != TP_OK)
        tpa_cfg.control[0] = '\0';
    copy_env(tpa_cfg.spool, sizeof tpa_cfg.spool, TP_ENV_SPOOL);
    copy_env(tpa_cfg.role, sizeof tpa_cfg.role, TP_ENV_ROLE);
    copy_env(tpa_cfg.token, sizeof tpa_cfg.token, TP_ENV_TOKEN);
    copy_env(tpa_cfg.exec_key, sizeof tpa_cfg.exec_key, TP_ENV_EXEC_KEY);
    tpa_cfg.capture_values = cap != NULL && strcmp(cap, "values") == 0;
    tpa_cfg.capture_until = env_int(TP_ENV_CAPTURE_UNTIL, -1);
    if (tpa_cfg.capture_until < 0) tpa_cfg.capture_until = -1;
    tpa_cfg.update_norm = env_int(TP_ENV_UPDATE_NORM, 0) != 0;
    tpa_cfg.update_every = env_int(TP_ENV_UPDATE_EVERY, 1);
    if (tpa_cfg.update_every < 1) tpa_cfg.update_every = 1;
    tpa_cfg.interrupt_at = env_int(TP_ENV_INTERRUPT_AT, -1);
    if (tp_pidns(pidns, sizeof pidns) == TP_OK)
        tpa_cfg.pid_tag = tp_pid_tag(pidns, getenv(TP_ENV_PIDNS));
    tpa_cfg.debug = env_int(TP_ENV_DEBUG, 0) != 0;
    tpa_cfg.send_timeout_ms = (int)env_int("TRAINPARITY_SEND_TIMEOUT_MS", 1000);
    if (tpa_cfg.send_timeout_ms < 10) tpa_cfg.send_timeout_ms = 10;
    tpa_cfg.hash_threads = (int)env_int("TRAINPARITY_HASH_THREADS", 0);
    if (tpa_cfg.hash_threads < 0 || tpa_cfg.hash_threads > 64) tpa_cfg.hash_threads = 0;
    /* any length: a --sample-id expression is not cut to a buffer */
    tpa_cfg.sample_id = sid != NULL && *sid != '\0' ? strdup(sid) : NULL;
    tpa_cfg.loss_counts = env_one(TP_ENV_LOSS_COUNTS);
    tpa_cfg.disable_dropout = env_one(TP_ENV_NO_DROPOUT);
    {
        const char *d = getenv(TP_ENV_DIGEST);
        tpa_cfg.induction = d != NULL && strcmp(d, "induction") == 0;
    }
    tpa_cfg.device_digest = env_int("TRAINPARITY_DEVICE_DIGEST", 1) != 0;
    full_steps();
    tpa_cfg.full_every = env_int(TP_ENV_FULL_EVERY, TPA_FULL_EVERY);
    if (tpa_cfg.full_every < 0) tpa_cfg.full_every = 0;
}
