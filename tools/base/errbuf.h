/* SPDX-License-Identifier: MIT
 * errbuf.h -- the tools' error messages: a caller-owned buffer that a failing
 * function fills with one line saying what went wrong (redis' anetSetError). */
#ifndef TP_TOOLS_BASE_ERRBUF_H
#define TP_TOOLS_BASE_ERRBUF_H

#include "proto/tp_err.h"

/* Every tools function that takes `char *err` expects TPT_ERR_LEN bytes (or
 * NULL: no message) and writes it only when it fails. */
#define TPT_ERR_LEN 512

/* tpt_seterr formats a message into err (TPT_ERR_LEN bytes; NULL is ignored)
 * and returns rc, so a failure path can `return tpt_seterr(err, rc, ...)`. */
tp_err tpt_seterr(char *err, tp_err rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
