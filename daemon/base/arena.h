/* SPDX-License-Identifier: MIT
 * arena.h -- a bump allocator: everything a verdict engine loads for one run
 * lives in one arena and is released at once. */
#ifndef TP_DAEMON_BASE_ARENA_H
#define TP_DAEMON_BASE_ARENA_H

#include <stddef.h>

typedef struct tpd_arena tpd_arena; /* opaque */

/* tpd_arena_create makes an empty arena.  NULL when out of memory. */
tpd_arena *tpd_arena_create(void);
/* tpd_arena_destroy frees a and everything allocated from it.  NULL is a no-op. */
void tpd_arena_destroy(tpd_arena *a);
/* tpd_arena_alloc returns n zeroed bytes aligned for any type, or NULL. */
void *tpd_arena_alloc(tpd_arena *a, size_t n);
/* tpd_arena_strndup copies n bytes of s and a NUL; NULL s gives NULL. */
char *tpd_arena_strndup(tpd_arena *a, const char *s, size_t n);
/* tpd_arena_strdup copies a NUL-terminated string; NULL gives NULL. */
char *tpd_arena_strdup(tpd_arena *a, const char *s);
/* tpd_arena_intern is a copy of the n bytes at p, followed by a NUL, that
 * lives as long as a and is the same copy for the same bytes: a run's
 * paths, dtypes and shapes, repeated at every step, are held once.  Aligned
 * for any type.  NULL when out of memory. */
const void *tpd_arena_intern(tpd_arena *a, const void *p, size_t n);
/* tpd_arena_grow reallocates an array of *cap elements of size sz to hold at
 * least need elements (doubling); returns the (possibly moved) array or NULL.
 * A small array's old block stays in the arena until it is destroyed; a
 * large one (over 64 KiB) that has a chunk of its own is reallocated, and
 * pointers into it are then stale. */
void *tpd_arena_grow(tpd_arena *a, void *arr, size_t *cap, size_t need, size_t sz);
/* tpd_arena_fit gives back what a large array (one with a chunk of its own,
 * tpd_arena_grow) holds beyond its first n elements: the doubling's unused
 * end, up to half of it.  Returns the (possibly moved) array, *cap then n;
 * arr unchanged when it is not such an array or the memory cannot be
 * given back.  A later tpd_arena_grow grows it again. */
void *tpd_arena_fit(tpd_arena *a, void *arr, size_t *cap, size_t n, size_t sz);

#endif
