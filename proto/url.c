/* SPDX-License-Identifier: MIT
 * url.c -- the daemon's URLs: the control URL derived from the ingest URL,
 * and which of them other hosts can reach. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/control.h"

tp_err tp_url_control(const char *ingest, char *out, size_t n)
{
    int w;
    if (ingest == NULL || out == NULL) return TP_EINVAL;
    if (strncmp(ingest, "ipc://", 6) == 0) {
        w = snprintf(out, n, "%s.ctl", ingest);
    } else if (strncmp(ingest, "tcp://", 6) == 0) {
        const char *colon = strrchr(ingest + 6, ':');
        char *end;
        long port;
        if (colon == NULL) return TP_EINVAL;
        port = strtol(colon + 1, &end, 10);
        if (*end != '\0' || port <= 0 || port >= 65535) return TP_EINVAL;
        w = snprintf(out, n, "%.*s:%ld", (int)(colon - ingest), ingest, port + 1);
    } else {
        return TP_EINVAL;
    }
    if (w < 0 || (size_t)w >= n) return TP_EINVAL;
    return TP_OK;
}

bool tp_url_local(const char *url)
{
    return strncmp(url, "ipc://", 6) == 0 || strncmp(url, "inproc://", 9) == 0;
}
