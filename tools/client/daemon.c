/* SPDX-License-Identifier: MIT
 * daemon.c -- find the daemon named by the environment, or reuse or start
 * the project's private one and hold it (attach/detach); notice that it
 * died and start it again.
 *
 * The client's watch (client.h) asks alive() between slices of every call;
 * when it says the daemon is gone, revive() starts a fresh private one (or
 * finds the one another trainparity-run already started) and the call is
 * sent again.  Once revive gives up, dead[] holds why and every later call
 * fails at once. */
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
#include <unistd.h>

#include "proto/control.h"
#include "tools/base/cli.h"
#include "tools/client/ctl.h"
#include "tools/client/daemon.h"
#include "tools/base/errbuf.h"
#include "tools/base/paths.h"
#include "tools/client/token.h"

extern char **environ;

#define URL_MAX     (PATH_MAX + 16)
#define PROBE_MS    300 /* a daemon already running answers a ping within this */
#define EXTERNAL_MS 5000
#define STOP_MS     5000 /* detach (or shutdown) to exit */
#define KILL_MS     2000 /* SIGTERM to exit */
#define TRIES       3    /* attempts to find or start a daemon and attach to it */

struct tpt_daemon {
    char ingest[URL_MAX];
    char control[URL_MAX];
    char ctlpath[URL_MAX]; /* the control socket's file (private) */
    char db[PATH_MAX];
    char log[PATH_MAX];
    char net_ingest[URL_MAX];  /* tpt_daemon_listen's URL, "" when none */
    char net_control[URL_MAX]; /* ... and its control URL */
    char tokpath[PATH_MAX];    /* the project's token file */
    char token[TPT_TOKEN_MAX]; /* the token the agents carry, "" when none */
    bool token_env;            /* it is $TRAINPARITY_TOKEN */
    tpt_client *client;
    bool external;   /* named by TRAINPARITY_DAEMON: never restarted */
    pid_t child;     /* the daemon we started and have not reaped, 0 when none */
    pid_t serving;   /* the private daemon attached to, 0 when not known */
    bool attached;   /* we hold it (detach at close) */
    bool connecting; /* in connect_private: a call that finds it gone just fails */
    bool closing;    /* in tpt_daemon_close: nothing is restarted */
    int restarts;
    char dead[TPT_ERR_LEN]; /* why it is gone for good; "" while usable */
    tpt_ping_info ping;
};

static const char *g_listen; /* tpt_daemon_listen's URL, NULL when none */

void tpt_daemon_listen(const char *url)
{
    g_listen = url;
}

/* pid_gone reports whether process pid has ended: no such process, or a
 * zombie that its parent (another trainparity-run) has not reaped yet. */
static bool pid_gone(pid_t pid)
{
    char path[64], buf[512], *p;
    size_t n;
    FILE *f;

    if (kill(pid, 0) != 0 && errno == ESRCH) return true;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if ((f = fopen(path, "r")) == NULL) return false;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')'); /* "pid (comm) S ...": the state follows the name */
    return p != NULL && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
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
    char *argv[] = {bin,  "serve", "--db", d->db, "--listen", d->ingest,
                    NULL, NULL,    NULL,   NULL,  NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none;
    int rv;
    tp_err rc;

    if ((rc = tpt_find_daemon(bin, sizeof(bin), err)) != TP_OK) return rc;
    if (d->net_ingest[0] != '\0') {
        argv[6] = "--listen", argv[7] = d->net_ingest;
        /* a token from the environment reaches the daemon through it */
        if (!d->token_env) argv[8] = "--token-file", argv[9] = d->tokpath;
    }
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

/* gone reports whether the private daemon in use has died, saying how in
 * why; a daemon we started is reaped here. */
static bool gone(tpt_daemon *d, char *why)
{
    long long quiet;
    char how[64];
    pid_t w;
    int st;

    if (d->child > 0) {
        if ((w = waitpid(d->child, &st, WNOHANG)) == 0) return false;
        if (w < 0 && errno != ECHILD) return false;
        if (w == d->child)
            describe_exit(st, how, sizeof how);
        else
            snprintf(how, sizeof how, "has gone");
        tpt_seterr(why, TP_ECLOSED, "the daemon (pid %d) %s", (int)d->child, how);
        d->child = 0;
        d->serving = 0;
        return true;
    }
    if (d->serving > 0 && pid_gone(d->serving)) {
        tpt_seterr(why, TP_ECLOSED, "the daemon (pid %d) has gone", (int)d->serving);
        d->serving = 0;
        return true;
    }
    if (d->serving == 0 && d->attached && !d->connecting &&
        (quiet = tpt_client_silence(d->client)) >= TPT_SILENCE_MS) {
        tpt_seterr(why, TP_ECLOSED, "the daemon at %s has gone: no connection to it for %lld s",
                   d->ingest, quiet / 1000);
        return true;
    }
    return false;
}

/* alive is the client's watch: TP_OK while the daemon may still answer. */
static tp_err alive(void *arg, char *why)
{
    tpt_daemon *d = arg;
    long long quiet;

    if (d->dead[0] != '\0') return tpt_seterr(why, TP_ECLOSED, "%s", d->dead);
    if (d->external) {
        if ((quiet = tpt_client_silence(d->client)) < TPT_SILENCE_MS) return TP_OK;
        return tpt_seterr(why, TP_ECLOSED,
                          "the daemon at %s (%s) has gone: no connection to it for %lld s",
                          d->ingest, TP_ENV_DAEMON, quiet / 1000);
    }
    return gone(d, why) ? TP_ECLOSED : TP_OK;
}

/* await answers the first ping from the daemon we started, or says why not:
 * TP_ECHILD when it exited first and no other daemon answers. */
static tp_err await(tpt_daemon *d, char *err)
{
    long long deadline = tpt_now_ms() + TPT_DAEMON_START_MS;
    char how[64], said[256];
    pid_t w;
    int st;

    tpt_client_timeout(d->client, 100);
    for (;;) {
        if (tpt_ping(d->client, &d->ping, NULL) == TP_OK) break;
        /* (a watch that found it dead has reaped it: child 0, status unknown) */
        st = 0;
        w = d->child > 0 ? waitpid(d->child, &st, WNOHANG) : -1;
        if (w == d->child || w < 0) {
            d->child = 0;
            /* Another trainparity-run may have started one at the same time;
             * ours then could not listen.  Use theirs. */
            tpt_client_timeout(d->client, PROBE_MS);
            if (tpt_ping(d->client, &d->ping, NULL) == TP_OK) break;
            if (w > 0)
                describe_exit(st, how, sizeof(how));
            else
                snprintf(how, sizeof how, "exited");
            last_line(d->log, said, sizeof said);
            return tpt_seterr(err, TP_ECHILD, "%s %s before it answered%s%s (%s)", TPT_DAEMON_BIN,
                              how, said[0] ? ": " : "", said, d->log);
        }
        if (tpt_now_ms() > deadline)
            return tpt_seterr(err, TP_ETIMEDOUT, "%s did not answer at %s within %d ms; see %s",
                              TPT_DAEMON_BIN, d->control, TPT_DAEMON_START_MS, d->log);
        tpt_sleep_ms(10);
    }
    return TP_OK;
}

/* reap waits up to ms for our child to exit; 1 when it did (status in *st,
 * or 0 when someone else reaped it). */
static int reap(pid_t pid, int ms, int *st)
{
    long long deadline = tpt_now_ms() + ms;
    pid_t w;
    for (;;) {
        w = waitpid(pid, st, WNOHANG);
        if (w == pid) return 1;
        if (w < 0 && errno == ECHILD) {
            *st = 0;
            return 1;
        }
        if (tpt_now_ms() > deadline) return 0;
        tpt_sleep_ms(10);
    }
}

/* drop_loser waits for the daemon we started when another one answered in
 * its place: two tools started one at once and ours could not listen. */
static void drop_loser(tpt_daemon *d)
{
    int st;
    if (!reap(d->child, STOP_MS, &st)) {
        kill(d->child, SIGKILL);
        reap(d->child, KILL_MS, &st);
    }
    d->child = 0;
}

/* connect_private finds the daemon answering at the private sockets, or
 * starts one, and attaches to it.  A daemon that goes away meanwhile (the
 * last holder of a shared one just left, or two tools started one at once
 * and ours lost) is tried again, up to TRIES times. */
static tp_err connect_private(tpt_daemon *d, char *err)
{
    struct stat st;
    int64_t n;
    bool owner;
    tp_err rc = TP_OK;
    int i;

    d->connecting = true;
    for (i = 0; i < TRIES; i++) {
        if (i > 0) tpt_sleep_ms(100 * i);
        d->serving = 0;
        d->ping.pid = -1;
        tpt_client_timeout(d->client, PROBE_MS);
        /* Only a socket can answer: do not wait for a ping when there is none. */
        if (!(stat(d->ctlpath, &st) == 0 && S_ISSOCK(st.st_mode) &&
              tpt_ping(d->client, &d->ping, NULL) == TP_OK)) {
            if ((rc = spawn(d, err)) != TP_OK) break;
            if ((rc = await(d, err)) == TP_ECHILD) continue;
            if (rc != TP_OK) break;
        }
        if (d->child > 0 && d->ping.pid != d->child) drop_loser(d);
        owner = d->child > 0;
        /* A pid we cannot see (another pid namespace) is not watched: the
         * connection is, as for an external daemon. */
        if (d->ping.pid > 0 && !pid_gone((pid_t)d->ping.pid)) d->serving = (pid_t)d->ping.pid;
        tpt_client_timeout(d->client, TPT_CALL_TIMEOUT_MS);
        rc = tpt_attach(d->client, getpid(), owner, &n, err);
        if (rc == TP_OK) {
            d->attached = true;
            break;
        }
        if (rc != TP_ECLOSED) break;
    }
    tpt_client_timeout(d->client, TPT_CALL_TIMEOUT_MS);
    d->connecting = false;
    return rc;
}

/* revive is the client's watch: the daemon is gone (why); start another. */
static tp_err revive(void *arg, const char *why, char *err);

/* watch has every call of d's client watched by alive and revive. */
static void watch(tpt_daemon *d)
{
    tpt_watch w;
    w.alive = alive;
    w.revive = revive;
    w.arg = d;
    tpt_client_watch(d->client, &w);
}

static tp_err revive(void *arg, const char *why, char *err)
{
    tpt_daemon *d = arg;
    char said[TPT_ERR_LEN];
    tp_err rc;

    if (d->dead[0] != '\0') return tpt_seterr(err, TP_ECLOSED, "%s", d->dead);
    if (d->connecting) return tpt_seterr(err, TP_ECLOSED, "%s", why);
    d->attached = false;
    if (d->external) {
        tpt_seterr(d->dead, TP_ECLOSED, "%s; a daemon that %s names is never restarted", why,
                   TP_ENV_DAEMON);
    } else if (d->closing) {
        tpt_seterr(d->dead, TP_ECLOSED, "%s (see %s)", why, d->log);
    } else if (d->restarts >= TPT_RESTARTS) {
        tpt_seterr(d->dead, TP_ECLOSED, "%s, after %d restarts; giving up (see %s)", why,
                   d->restarts, d->log);
    } else {
        d->restarts++;
        tpt_error("%s; restarting it on the same database (%d of %d; log: %s)", why, d->restarts,
                  TPT_RESTARTS, d->log);
        if ((rc = connect_private(d, said)) == TP_OK) return TP_OK;
        tpt_seterr(d->dead, TP_ECLOSED, "%s; cannot restart it, giving up: %s", why, said);
    }
    return tpt_seterr(err, TP_ECLOSED, "%s", d->dead);
}

static tp_err use_external(tpt_daemon *d, const char *url, char *err)
{
    const char *ctl = getenv(TP_ENV_CONTROL);
    char why[TPT_ERR_LEN];
    tp_err rc;

    d->external = true;
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
    watch(d);
    if ((rc = tpt_ping(d->client, &d->ping, why)) == TP_ETIMEDOUT)
        return tpt_seterr(err, rc, "no daemon answers at %s (%s=%s) within %d ms", d->control,
                          TP_ENV_DAEMON, url, EXTERNAL_MS);
    if (rc != TP_OK)
        return tpt_seterr(err, rc, "daemon at %s (%s=%s): %s", d->control, TP_ENV_DAEMON, url, why);
    tpt_client_timeout(d->client, TPT_CALL_TIMEOUT_MS);
    return TP_OK;
}

/* network takes tpt_daemon_listen's URL and the token for it. */
static tp_err network(tpt_daemon *d, char *err)
{
    if (strlen(g_listen) >= sizeof(d->net_ingest) || tp_url_local(g_listen) ||
        tp_url_control(g_listen, d->net_control, sizeof(d->net_control)) != TP_OK)
        return tpt_seterr(err, TP_EINVAL,
                          "--listen %s: give tcp://HOST:PORT, HOST this host's name or address "
                          "as the other hosts reach it",
                          g_listen);
    strcpy(d->net_ingest, g_listen);
    return tpt_token_get(d->tokpath, true, d->token, &d->token_env, err);
}

/* check_network makes sure the private daemon now serving also listens at
 * the network URL: one another command started without it does not. */
static tp_err check_network(tpt_daemon *d, char *err)
{
    tpt_client *c = NULL;
    tpt_ping_info far;
    char why[TPT_ERR_LEN];
    tp_err rc;

    if ((rc = tpt_client_open(&c, d->net_control, PROBE_MS)) == TP_OK &&
        (rc = tpt_client_token(c, d->token)) == TP_OK)
        rc = tpt_ping(c, &far, why);
    tpt_client_close(c);
    if (rc == TP_OK && far.pid == d->ping.pid) return TP_OK;
    return tpt_seterr(err, TP_EINVAL,
                      "--listen %s: the project's daemon (pid %lld) already serves other commands "
                      "%s; run this check once they have ended, or from another folder",
                      d->net_ingest, (long long)d->ping.pid,
                      rc == TP_OK ? "and another daemon answers there"
                                  : "and does not answer there with this token");
}

static tp_err use_private(tpt_daemon *d, char *err)
{
    char state[PATH_MAX], sock[PATH_MAX];
    tp_err rc;

    if ((rc = tpt_state_dir(NULL, state, sizeof(state), err)) != TP_OK) return rc;
    if ((rc = socket_dir(state, sock, sizeof(sock), err)) != TP_OK) return rc;
    snprintf(d->tokpath, sizeof(d->tokpath), "%s/token", state);
    if (g_listen != NULL) {
        if ((rc = network(d, err)) != TP_OK) return rc;
    } else if (tpt_token_get(d->tokpath, false, d->token, &d->token_env, NULL) != TP_OK) {
        /* a daemon that another command started with --listen wants the
         * token in every batch; without one, there is none to carry */
        d->token[0] = '\0';
    }
    snprintf(d->db, sizeof(d->db), "%s/runs.db", state);
    snprintf(d->log, sizeof(d->log), "%s/daemon.log", state);
    snprintf(d->ingest, sizeof(d->ingest), "ipc://%s/ingest.ipc", sock);
    snprintf(d->ctlpath, sizeof(d->ctlpath), "%s/ingest.ipc.ctl", sock);
    if ((rc = tp_url_control(d->ingest, d->control, sizeof(d->control))) != TP_OK)
        return tpt_seterr(err, rc, "cannot derive the control URL of %s", d->ingest);
    if ((rc = tpt_client_open(&d->client, d->control, PROBE_MS)) != TP_OK)
        return tpt_seterr(err, rc, "cannot open %s: %s", d->control, tp_strerror(rc));
    watch(d);
    if ((rc = connect_private(d, err)) != TP_OK) return rc;
    return d->net_ingest[0] != '\0' ? check_network(d, err) : TP_OK;
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

tp_err tpt_daemon_check(tpt_daemon *d, char *err)
{
    char why[TPT_ERR_LEN];
    if (d->dead[0] != '\0') return tpt_seterr(err, TP_ECLOSED, "%s", d->dead);
    if (d->external || !gone(d, why)) return TP_OK;
    return revive(d, why, err);
}

/* await_exit waits up to ms for a daemon that is not our child to exit. */
static int await_exit(pid_t pid, int ms)
{
    long long deadline = tpt_now_ms() + ms;
    while (!pid_gone(pid)) {
        if (tpt_now_ms() > deadline) return 0;
        tpt_sleep_ms(10);
    }
    return 1;
}

/* stop waits for the daemon that said it exits (pid; ours when it is
 * d->child), SIGTERM then SIGKILL if it will not. */
static tp_err stop(tpt_daemon *d, pid_t pid, char *err)
{
    bool ours = pid == d->child;
    char how[64];
    int st = 0;

    if (ours ? reap(pid, STOP_MS, &st) : await_exit(pid, STOP_MS)) {
        if (ours) d->child = 0;
        if (!ours || (WIFEXITED(st) && WEXITSTATUS(st) == 0)) return TP_OK;
        describe_exit(st, how, sizeof(how));
        return tpt_seterr(err, TP_EIO, "%s %s; see %s", TPT_DAEMON_BIN, how, d->log);
    }
    kill(pid, SIGTERM);
    if (!(ours ? reap(pid, KILL_MS, &st) : await_exit(pid, KILL_MS))) {
        kill(pid, SIGKILL);
        if (ours) reap(pid, KILL_MS, &st);
    }
    if (ours) d->child = 0;
    return tpt_seterr(err, TP_ETIMEDOUT, "%s did not shut down; killed it (see %s)", TPT_DAEMON_BIN,
                      d->log);
}

tp_err tpt_daemon_close(tpt_daemon *d, char *err)
{
    char why[TPT_ERR_LEN];
    bool exiting = false;
    pid_t pid;
    tp_err rc = TP_OK;

    if (d == NULL) return TP_OK;
    d->closing = true;
    pid = d->child > 0 ? d->child : d->serving;
    if (d->client != NULL && d->attached) {
        /* The others holding it keep it; the last one out stops it.  A
         * daemon too busy to answer drops us once we have exited. */
        tpt_client_timeout(d->client, STOP_MS);
        rc = tpt_detach(d->client, getpid(), NULL, &exiting, why);
        if (rc == TP_ECLOSED)
            rc = tpt_seterr(err, TP_EIO, "%s", why);
        else
            rc = TP_OK;
        if (exiting && pid > 0) rc = stop(d, pid, err);
    } else if (d->child > 0) {
        /* Started but never attached to (the open failed): ours alone. */
        if (d->client != NULL) {
            tpt_client_timeout(d->client, STOP_MS);
            tpt_shutdown(d->client, NULL);
        }
        rc = stop(d, d->child, err);
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
    return d->net_ingest[0] != '\0' ? d->net_ingest : d->ingest;
}

const char *tpt_daemon_control(const tpt_daemon *d)
{
    return d->net_ingest[0] != '\0' ? d->net_control : d->control;
}

bool tpt_daemon_on_network(const tpt_daemon *d)
{
    return !tp_url_local(tpt_daemon_ingest(d));
}

const char *tpt_daemon_token(const tpt_daemon *d)
{
    return d->token;
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
