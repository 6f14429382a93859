/* SPDX-License-Identifier: MIT
 * errbuf.c -- formatting of the tools' error messages. */
#include <stdarg.h>
#include <stdio.h>

#include "tools/base/errbuf.h"

tp_err tpt_seterr(char *err, tp_err rc, const char *fmt, ...)
{
    va_list ap;
    if (err == NULL) return rc;
    va_start(ap, fmt);
    vsnprintf(err, TPT_ERR_LEN, fmt, ap);
    va_end(ap);
    return rc;
}
