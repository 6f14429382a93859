/* SPDX-License-Identifier: MIT
 * log.h -- agent diagnostics on stderr, only with TRAINPARITY_DEBUG=1.  The
 * agent is otherwise silent: the training process's output is the user's. */
#ifndef TP_AGENT_LOG_H
#define TP_AGENT_LOG_H

#include <stdio.h>
#include <unistd.h>

#include "agent/config.h"

#define TPA_LOG(...)                                                                               \
    do {                                                                                           \
        if (tpa_cfg.debug) {                                                                       \
            fprintf(stderr, "[trainparity-agent %d] ", (int)getpid());                             \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

#endif
