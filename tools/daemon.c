/* SPDX-License-Identifier: MIT
 * daemon.c -- find the daemon named by the environment, or reuse or start
 * the project's private one, and stop it again if we started it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/control.h"
#include "tools/ctl.h"
#include "tools/daemon.h"
#include "tools/errbuf.h"
#include "tools/paths.h"

extern char **environ;

#define URL_MAX     (PATH_MAX + 16)
#define PROBE_MS    300 /* a daemon already running answers a ping within this */
#define EXTERNAL_MS 5000
#define STOP_MS     5000 /* shutdown to exit */
#define KILL_MS     2000 /* SIGTERM to exit */

struct tpt_daemon {
    char ingest[URL_MAX];
    char control[URL_MAX];
    char db[PATH_MAX];
    char log[PATH_MAX];
    tpt_client *client;
    pid_t child; /* the daemon we started, 0 when not ours */
    tpt_ping_info ping;
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {}
}

static tp_err use_external(tpt_daemon *d, const char *url, char *err)
{
    const char *ctl = getenv(TP_ENV_CONTROL);
    char why[TPT_ERR_LEN];
    tp_err rc;

    if (strlen(url) >= sizeof(d->ingest))
        return tpt_seterr(err, TP_EINVAL, "%s is too long", TP_ENV_DAEMON);
    strcpy(d->ingest, url);
    if (ctl != NULL && ctl[0] != '\0') {
        if (strlen(ctl) >= sizeof(d->control))
            return tpt_seterr(err, TP_EINVAL, "%s is too long", TP_ENV_CONTROL);
        strcpy(d->control, ctl);
    } else if (tp_url_control(url, d->control, sizeof(d->control)) != TP_OK) {
        return tpt_seterr(err, TP_EINVAL,
                          "%s=%s is not an ipc:// or tcp://host:port URL (set %s too)",
                          TP_ENV_DAEMON, url, TP_ENV_CONTROL);
    }
    if ((rc = tpt_client_open(&d->client, d->control, EXTERNAL_MS)) != TP_OK)
        return tpt_seterr(err, rc, "cannot use control URL %s: %s", d->control, tp_strerror(rc));
    if ((rc = tpt_client_token(d->client, getenv(TP_ENV_TOKEN))) != TP_OK)
        return tpt_seterr(err, rc, "out of memory");
    if ((rc = tpt_ping(d->client, &d->ping, why)) == TP_ETIMEDOUT)
        return tpt_seterr(err, rc, "no daemon answers at %s (%s=%s) within %d ms", d->control,
                          TP_ENV_DAEMON, url, EXTERNAL_MS);
    if (rc != TP_OK)
        return tpt_seterr(err, rc, "daemon at %s (%s=%s): %s", d->control, TP_ENV_DAEMON, url, why);
    return TP_OK;
}

/* socket_dir picks the directory for the private daemon's sockets: state
 * when the control socket's path fits in sun_path, else a private folder in
 * TMPDIR (or /tmp) named from the project path. */
static tp_err socket_dir(const char *state, char *out, size_t n, char *err)
{
    const size_t max = sizeof(((struct sockaddr_un *)0)->sun_path) - 1;
    const size_t tail = strlen("/ingest.ipc.ctl");
    const char *bases[2] = {getenv("TMPDIR"), "/tmp"};
    unsigned long long h = 1469598103934665603ULL; /* FNV-1a 64 */
    const char *p;
    int i, w;

    if (strlen(state) + tail <= max && strlen(state) < n) {
        strcpy(out, state);
        return TP_OK;
    }
    for (p = state; *p != '\0'; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    for (i = 0; i < 2; i++) {
        if (bases[i] == NULL || bases[i][0] != '/') continue;
        w = snprintf(out, n, "%s/trainparity-%u-%016llx", bases[i], (unsigned)geteuid(), h);
        if (w > 0 && (size_t)w < n && (size_t)w + tail <= max) return tpt_private_dir(out, err);
    }
    return tpt_seterr(err, TP_EINVAL, "no directory short enough for the daemon's socket");
}

static tp_err spawn(tpt_daemon *d, char *err)
{
    char bin[PATH_MAX];
    char *argv[] = {bin, "serve", "--db", d->db, "--listen", d->ingest, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none;
    int rv;
    tp_err rc;

    if ((rc = tpt_find_daemon(bin, sizeof(bin), err)) != TP_OK) return rc;
    sigemptyset(&none);
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, d->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    /* Its own session: a ^C meant for the training command must not take the
     * daemon down before it has stored what the command sent. */
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setsigmask(&at, &none);
    rv = posix_spawn(&d->child, bin, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rv != 0) {
        d->child = 0;
        return tpt_seterr(err, TP_ECHILD, "cannot start %s: %s", bin, strerror(rv));
    }
    return TP_OK;
}

static void describe_exit(int st, char *out, size_t n)
{
    if (WIFEXITED(st))
        snprintf(out, n, "exited with status %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(out, n, "was killed by signal %d", WTERMSIG(st));
    else
        snprintf(out, n, "stopped");
}

/* last_line copies the last non-empty line of the file at path (the
 * daemon's reason for stopping) into out (n bytes); "" when none. */
static void last_line(const char *path, char *out, size_t n)
{
    char line[512];
    FILE *f = fopen(path, "r");
    out[0] = '\0';
    if (f == NULL) return;
    while (fgets(line, sizeof line, f) != NULL) {
        size_t k = strcspn(line, "\n");
        line[k] = '\0';
        if (k > 0) snprintf(out, n, "%.*s", (int)(n > 1 ? n - 1 : 0), line);
    }
    fclose(f);
}

/* await answers the first ping from the daemon we started, or says why not. */
static tp_err await(tpt_daemon *d, char *err)
{
    long long deadline = now_ms() + TPT_DAEMON_START_MS;
    char how[64], said[256];
    pid_t w;
    int st;

    tpt_client_timeout(d->client, 100);
    for (;;) {
        if (tpt_ping(d->client, &d->ping, NULL) == TP_OK) break;
        w = waitpid(d->child, &st, WNOHANG);
        if (w == d->child) {
            d->child = 0;
            /* Another trainparity-run may have started one at the same time;
             * ours then could not listen.  Use theirs. */
            tpt_client_timeout(d->client, PROBE_MS);
            if (tpt_ping(d->client, &d->ping, NULL) == TP_OK) break;
            describe_exit(st, how, sizeof(how));
            last_line(d->log, said, sizeof said);
            return tpt_seterr(err, TP_ECHILD, "%s %s before it answered%s%s (%s)", TPT_DAEMON_BIN,
                              how, said[0] ? ": " : "", said, d->log);
        }
        if (now_ms() > deadline)
            return tpt_seterr(err, TP_ETIMEDOUT, "%s did not answer at %s within %d ms; see %s",
                              TPT_DAEMON_BIN, d->control, TPT_DAEMON_START_MS, d->log);
        sleep_ms(10);
    }
    tpt_client_timeout(d->client, TPT_CALL_TIMEOUT_MS);
    return TP_OK;
}

static tp_err use_private(tpt_daemon *d, char *err)
{
    char state[PATH_MAX], sock[PATH_MAX], ctlpath[PATH_MAX + 16];
    struct stat st;
    tp_err rc;

    if ((rc = tpt_state_dir(NULL, state, sizeof(state), err)) != TP_OK) return rc;
    if ((rc = socket_dir(state, sock, sizeof(sock), err)) != TP_OK) return rc;
    snprintf(d->db, sizeof(d->db), "%s/runs.db", state);
    snprintf(d->log, sizeof(d->log), "%s/daemon.log", state);
    snprintf(d->ingest, sizeof(d->ingest), "ipc://%s/ingest.ipc", sock);
    snprintf(ctlpath, sizeof(ctlpath), "%s/ingest.ipc.ctl", sock);
    if ((rc = tp_url_control(d->ingest, d->control, sizeof(d->control))) != TP_OK)
        return tpt_seterr(err, rc, "cannot derive the control URL of %s", d->ingest);
    if ((rc = tpt_client_open(&d->client, d->control, PROBE_MS)) != TP_OK)
        return tpt_seterr(err, rc, "cannot open %s: %s", d->control, tp_strerror(rc));
    /* Only a socket can answer: do not wait for a ping when there is none. */
    if (stat(ctlpath, &st) == 0 && S_ISSOCK(st.st_mode) &&
        tpt_ping(d->client, &d->ping, NULL) == TP_OK) {
        tpt_client_timeout(d->client, TPT_CALL_TIMEOUT_MS);
        return TP_OK;
    }
    if ((rc = spawn(d, err)) != TP_OK) return rc;
    return await(d, err);
}

tp_err tpt_daemon_open(tpt_daemon **dp, char *err)
{
    const char *url = getenv(TP_ENV_DAEMON);
    tpt_daemon *d;
    tp_err rc;

    if ((d = calloc(1, sizeof(*d))) == NULL) return tpt_seterr(err, TP_ENOMEM, "out of memory");
    if (url != NULL && url[0] != '\0')
        rc = use_external(d, url, err);
    else
        rc = use_private(d, err);
    if (rc != TP_OK) {
        tpt_daemon_close(d, NULL);
        return rc;
    }
    *dp = d;
    return TP_OK;
}

/* reap waits up to ms for the child to exit; 1 when it did (status in *st). */
static int reap(pid_t pid, int ms, int *st)
{
    long long deadline = now_ms() + ms;
    pid_t w;
    for (;;) {
        w = waitpid(pid, st, WNOHANG);
        if (w == pid || (w < 0 && errno == ECHILD)) return 1;
        if (now_ms() > deadline) return 0;
        sleep_ms(10);
    }
}

tp_err tpt_daemon_close(tpt_daemon *d, char *err)
{
    char how[64];
    tp_err rc = TP_OK;
    int st = 0;

    if (d == NULL) return TP_OK;
    if (d->child > 0) {
        if (d->client != NULL) {
            tpt_client_timeout(d->client, STOP_MS);
            tpt_shutdown(d->client, NULL);
        }
        if (!reap(d->child, STOP_MS, &st)) {
            kill(d->child, SIGTERM);
            if (!reap(d->child, KILL_MS, &st)) {
                kill(d->child, SIGKILL);
                reap(d->child, KILL_MS, &st);
            }
            rc = tpt_seterr(err, TP_ETIMEDOUT, "%s did not shut down; killed it (see %s)",
                            TPT_DAEMON_BIN, d->log);
        } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            describe_exit(st, how, sizeof(how));
            rc = tpt_seterr(err, TP_EIO, "%s %s; see %s", TPT_DAEMON_BIN, how, d->log);
        }
    }
    tpt_client_close(d->client);
    free(d);
    return rc;
}

tpt_client *tpt_daemon_client(tpt_daemon *d)
{
    return d->client;
}

const char *tpt_daemon_ingest(const tpt_daemon *d)
{
    return d->ingest;
}

const char *tpt_daemon_control(const tpt_daemon *d)
{
    return d->control;
}

const char *tpt_daemon_db(const tpt_daemon *d)
{
    return d->ping.db;
}

int64_t tpt_daemon_pid(const tpt_daemon *d)
{
    return d->ping.pid;
}

bool tpt_daemon_started(const tpt_daemon *d)
{
    return d->child > 0;
}
