/* SPDX-License-Identifier: MIT
 * tp_err.c -- descriptions of tp_err codes. */
#include "proto/tp_err.h"

const char *tp_strerror(tp_err err)
{
    switch (err) {
    case TP_OK:
        return "no error";
    case TP_ENOMEM:
        return "out of memory";
    case TP_EINVAL:
        return "invalid argument";
    case TP_EPROTO:
        return "malformed message";
    case TP_EVERSION:
        return "unsupported version";
    case TP_EIO:
        return "input/output error";
    case TP_ENOENT:
        return "not found";
    case TP_EDB:
        return "database error";
    case TP_ECORRUPT:
        return "corrupt data";
    case TP_ETIMEDOUT:
        return "timed out";
    case TP_ECLOSED:
        return "closed";
    case TP_EFULL:
        return "queue full";
    case TP_ENET:
        return "messaging error";
    case TP_ECHILD:
        return "cannot start child process";
    }
    return "unknown error";
}
