/* SPDX-License-Identifier: MIT
 * secret.h -- the daemon's secrets: execution keys made from the kernel's
 * random source, and comparisons of secrets (tokens, keys) whose time does
 * not depend on where two strings first differ. */
#ifndef TP_DAEMON_STORE_SECRET_H
#define TP_DAEMON_STORE_SECRET_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/control.h"
#include "proto/tp_err.h"

/* tpd_secret_new writes TP_EXEC_KEY_LEN lowercase hex digits (128 bits from
 * getrandom, or /dev/urandom where the call is missing) and a NUL into out.
 * Errors: TP_EIO (no random source answered; out is then untouched). */
tp_err tpd_secret_new(char out[TP_EXEC_KEY_LEN + 1]);

/* tpd_secret_eq reports whether a (alen bytes) and b (blen bytes) are equal.
 * Its time depends on the lengths only, never on the bytes: a caller
 * learns nothing from it about how much of a guess was right.  A NULL
 * pointer is equal to nothing. */
bool tpd_secret_eq(const void *a, size_t alen, const void *b, size_t blen);

#endif
