/* SPDX-License-Identifier: MIT
 * testdir.h -- scratch directories for tests: made private under $TMPDIR
 * (or /tmp) and removed with everything in them. */
#ifndef TP_TESTS_TESTDIR_H
#define TP_TESTS_TESTDIR_H

#include <stddef.h>

/* td_make creates a fresh 0700 directory and writes its path into out. */
void td_make(char *out, size_t n);
/* td_remove removes dir and its contents. */
void td_remove(const char *dir);
/* td_path writes dir/name into out and returns out. */
char *td_path(char *out, size_t n, const char *dir, const char *name);

#endif
