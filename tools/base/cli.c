/* SPDX-License-Identifier: MIT
 * cli.c -- the tool's clocks, error and progress lines, command display. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/base/cli.h"

static struct timespec started; /* tv_sec 0: never marked */

void tpt_clock_start(void)
{
    clock_gettime(CLOCK_MONOTONIC, &started);
}

int64_t tpt_started_ago_ns(void)
{
    struct timespec now;
    if (started.tv_sec == 0 && started.tv_nsec == 0) return -1;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)(now.tv_sec - started.tv_sec) * 1000000000 + (now.tv_nsec - started.tv_nsec);
}

long long tpt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tpt_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {}
}

void tpt_error(const char *fmt, ...)
{
    va_list ap;
    fputs(TPT_PROG ": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void tpt_progress(const char *tag, const char *fmt, ...)
{
    va_list ap;
    if (!isatty(STDERR_FILENO)) return;
    fprintf(stderr, "[%s] ", tag);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static int plain(const char *w)
{
    if (*w == '\0') return 0;
    return strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                     "-_./=:,+@%") == strlen(w);
}

void tpt_argv_join(char *const argv[], char *out, size_t n)
{
    size_t len = 0, i;
    const char *p;

    if (n == 0) return;
    out[0] = '\0';
    for (i = 0; argv != NULL && argv[i] != NULL; i++) {
        char word[1024];
        size_t w = 0;
        if (plain(argv[i])) {
            snprintf(word, sizeof(word), "%s", argv[i]);
        } else { /* 'it'\''s' */
            word[w++] = '\'';
            for (p = argv[i]; *p != '\0' && w + 5 < sizeof(word); p++) {
                if (*p == '\'') {
                    memcpy(word + w, "'\\''", 4);
                    w += 4;
                } else {
                    word[w++] = *p;
                }
            }
            word[w++] = '\'';
            word[w] = '\0';
        }
        if (len + (i > 0) + strlen(word) + 1 > n) {
            if (n > 4) strcpy(out + (len + 4 < n ? len : n - 4), "...");
            return;
        }
        len += (size_t)snprintf(out + len, n - len, "%s%s", i > 0 ? " " : "", word);
    }
}

int tpt_outcome_status(const char *outcome)
{
    if (outcome == NULL) return TPT_EXIT_ERROR;
    if (!strcmp(outcome, "PASS")) return TPT_EXIT_PASS;
    if (!strcmp(outcome, "FAIL")) return TPT_EXIT_FAIL;
    if (!strcmp(outcome, "ABSTAIN")) return TPT_EXIT_ABSTAIN;
    return TPT_EXIT_ERROR;
}

int tpt_write_report(const char *path, const char *json)
{
    FILE *f = fopen(path, "w");
    int bad;
    if (f == NULL) {
        tpt_error("cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    bad = fputs(json ? json : "{}\n", f) < 0;
    if (fclose(f) != 0) bad = 1; /* closed either way: never twice */
    if (bad) {
        tpt_error("cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}
