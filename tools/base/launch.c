/* SPDX-License-Identifier: MIT
 * launch.c -- posix_spawnp a command, forward signals to it, wait for it.
 *
 * posix_spawn (not fork) because nng's threads are running: glibc's spawn
 * runs no atfork handlers and execs at once, and reports a failed exec as
 * its return value, so "not found" needs no pipe back from the child.
 * With a tick the wait is a poll on a pidfd (Linux 5.3), so the command's end
 * is seen at once; without pidfds, waitpid(WNOHANG) every 50 ms. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/base/errbuf.h"
#include "tools/base/launch.h"

extern char **environ;

static const int fwd_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define NFWD (sizeof(fwd_signals) / sizeof(fwd_signals[0]))

static volatile sig_atomic_t g_child; /* pid being waited for, 0 when none */
static volatile sig_atomic_t g_stop;  /* the first stopping signal received, 0 when none */

static void forward(int sig, siginfo_t *si, void *uc)
{
    pid_t child = (pid_t)g_child;
    int saved = errno;
    (void)uc;
    /* SIGUSR1 and SIGUSR2 are the command's business (a script that saves
     * when told); the others ask trainparity-run to stop too */
    if (g_stop == 0 && sig != SIGUSR1 && sig != SIGUSR2) g_stop = sig;
    /* SI_KERNEL: the terminal signalled the process group, child included.
     * A signal from the child itself is not bounced back. */
    if (child > 0 && si->si_code != SI_KERNEL && si->si_pid != child) kill(child, sig);
    errno = saved;
}

static size_t key_len(const char *kv)
{
    const char *eq = strchr(kv, '=');
    return eq != NULL ? (size_t)(eq - kv) : strlen(kv);
}

/* build_env returns environ with env's entries replacing or adding keys (of
 * two in env for one key, the later wins; a "KEY" without '=' removes KEY);
 * free() the array, not its strings. */
static char **build_env(char *const env[])
{
    size_t ne = 0, nx = 0, i, j, k = 0;
    char **out;

    while (environ[ne] != NULL) ne++;
    while (env != NULL && env[nx] != NULL) nx++;
    if ((out = malloc((ne + nx + 1) * sizeof(*out))) == NULL) return NULL;
    for (i = 0; i < ne; i++) {
        size_t kl = key_len(environ[i]);
        int replaced = 0;
        for (j = 0; j < nx && !replaced; j++)
            replaced = key_len(env[j]) == kl && strncmp(env[j], environ[i], kl) == 0;
        if (!replaced) out[k++] = environ[i];
    }
    for (j = 0; j < nx; j++) { /* of two entries for one key, the later wins */
        size_t kl = key_len(env[j]), l;
        int later = 0;
        for (l = j + 1; l < nx && !later; l++)
            later = key_len(env[l]) == kl && strncmp(env[l], env[j], kl) == 0;
        if (!later && strchr(env[j], '=') != NULL) out[k++] = env[j];
    }
    out[k] = NULL;
    return out;
}

/* wait_ticking waits for pid like waitpid(pid, st, 0), calling tick every
 * TPT_TICK_MS meanwhile. */
static pid_t wait_ticking(pid_t pid, int *st, const tpt_tick *tick)
{
    struct timespec nap = {0, 50 * 1000000L};
    long long ticked = 0;
    int pfd = -1;
    pid_t w;

#ifdef SYS_pidfd_open
    pfd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
    for (;;) {
        w = waitpid(pid, st, WNOHANG);
        if (w < 0 && errno == EINTR) continue;
        if (w != 0) break;
        if (pfd >= 0) {
            struct pollfd p = {pfd, POLLIN, 0};
            if (poll(&p, 1, TPT_TICK_MS) != 0) continue; /* it ended, or a signal came */
        } else {
            struct timespec ts;
            long long now;
            nanosleep(&nap, NULL);
            clock_gettime(CLOCK_MONOTONIC, &ts);
            now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
            if (now - ticked < TPT_TICK_MS) continue;
            ticked = now;
        }
        tick->fn(tick->arg);
    }
    if (pfd >= 0) {
        int saved = errno;
        close(pfd);
        errno = saved;
    }
    return w;
}

tp_err tpt_launch(char *const argv[], char *const env[], const tpt_tick *tick, tpt_exit *out,
                  int *errnum, char *err)
{
    struct sigaction sa, old[NFWD];
    sigset_t block, prev;
    posix_spawnattr_t at;
    char **envp;
    pid_t pid, w = 0;
    size_t i;
    int rv, st = 0, werr = 0;

    if (argv == NULL || argv[0] == NULL || argv[0][0] == '\0')
        return tpt_seterr(err, TP_EINVAL, "no command to run");
    if ((envp = build_env(env)) == NULL) return tpt_seterr(err, TP_ENOMEM, "out of memory");

    /* Block the forwarded signals until the child's pid is known, so none
     * arrives with nowhere to go; the child starts with the old mask. */
    sigemptyset(&block);
    for (i = 0; i < NFWD; i++) sigaddset(&block, fwd_signals[i]);
    sigprocmask(SIG_BLOCK, &block, &prev);
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = forward;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    for (i = 0; i < NFWD; i++) {
        /* A signal we were started with ignored (nohup, a background job)
         * stays ignored, and so the child inherits it as it would have. */
        sigaction(fwd_signals[i], NULL, &old[i]);
        if (old[i].sa_handler != SIG_IGN) sigaction(fwd_signals[i], &sa, NULL);
    }

    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setsigmask(&at, &prev);
    rv = posix_spawnp(&pid, argv[0], NULL, &at, argv, envp);
    posix_spawnattr_destroy(&at);
    free(envp);
    if (rv == 0) g_child = (sig_atomic_t)pid;
    sigprocmask(SIG_SETMASK, &prev, NULL);

    if (rv == 0) {
        if (tick != NULL && tick->fn != NULL) {
            w = wait_ticking(pid, &st, tick);
        } else {
            do w = waitpid(pid, &st, 0);
            while (w < 0 && errno == EINTR);
        }
        werr = errno;
    }
    g_child = 0;
    for (i = 0; i < NFWD; i++) sigaction(fwd_signals[i], &old[i], NULL);
    if (rv != 0) {
        if (errnum != NULL) *errnum = rv;
        return tpt_seterr(err, TP_ECHILD, "cannot run '%s': %s", argv[0], strerror(rv));
    }
    if (w < 0) return tpt_seterr(err, TP_EIO, "cannot wait for '%s': %s", argv[0], strerror(werr));
    if (WIFSIGNALED(st)) {
        out->status = -1;
        out->signal = WTERMSIG(st);
    } else {
        out->status = WEXITSTATUS(st);
        out->signal = 0;
    }
    return TP_OK;
}

int tpt_launch_stopped(void)
{
    return (int)g_stop;
}

const char *tpt_signal_name(int sig)
{
    switch (sig) {
    case SIGINT:
        return "SIGINT";
    case SIGTERM:
        return "SIGTERM";
    case SIGHUP:
        return "SIGHUP";
    case SIGQUIT:
        return "SIGQUIT";
    default:
        return "a signal";
    }
}

void tpt_die_of(int sig)
{
    struct sigaction dfl;
    sigset_t one;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    fflush(NULL);
    sigaction(sig, &dfl, NULL);
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigprocmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
    _exit(128 + sig); /* a signal that does not end a process by default */
}

int tpt_exit_code(const tpt_exit *e)
{
    return e->signal > 0 ? 128 + e->signal : e->status;
}
