/* SPDX-License-Identifier: MIT
 * words.h -- splitting an argument string into words the way a POSIX shell
 * would for plain words, '...', "..." and backslashes (no expansion). */
#ifndef TP_TOOLS_BASE_WORDS_H
#define TP_TOOLS_BASE_WORDS_H

#include "proto/tp_err.h"

/* tpt_words splits s into a NULL-terminated array appended after the n
 * words of head (which are copied as they are).  *out is one allocation:
 * free() it.  Errors (with err): TP_EINVAL (an unterminated quote),
 * TP_ENOMEM. */
tp_err tpt_words(char *const head[], int n, const char *s, char ***out, char *err);

#endif
