/* SPDX-License-Identifier: MIT
 * arena.c -- chunks of at least 64 KiB, chained; large requests get a chunk
 * of their own, and a large array alone in its chunk grows in place.
 * Interned copies are found again through an open-addressing table of
 * their hashes, kept beside the chunks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "daemon/base/arena.h"

#define CHUNK (64u * 1024u)
#define ALIGN 16u

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} chunk;

typedef struct interned {
    const unsigned char *p; /* NULL: an empty slot */
    size_t n;
    uint64_t h;
} interned;

struct tpd_arena {
    chunk *head;
    interned *tab; /* the interned copies; a power of two slots, at most half full */
    size_t ntab, nused;
};

tpd_arena *tpd_arena_create(void)
{
    return calloc(1, sizeof(tpd_arena));
}

void tpd_arena_destroy(tpd_arena *a)
{
    if (a == NULL) return;
    for (chunk *c = a->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(a->tab);
    free(a);
}

void *tpd_arena_alloc(tpd_arena *a, size_t n)
{
    chunk *c = a->head;
    void *p;
    n = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (n == 0) n = ALIGN;
    if (c == NULL || c->cap - c->used < n) {
        size_t cap = n > CHUNK ? n : CHUNK;
        c = malloc(sizeof(chunk) + cap);
        if (c == NULL) return NULL;
        c->used = 0;
        c->cap = cap;
        c->next = a->head;
        a->head = c;
    }
    p = c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

char *tpd_arena_strndup(tpd_arena *a, const char *s, size_t n)
{
    char *d;
    if (s == NULL) return NULL;
    d = tpd_arena_alloc(a, n + 1);
    if (d == NULL) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *tpd_arena_strdup(tpd_arena *a, const char *s)
{
    return s ? tpd_arena_strndup(a, s, strlen(s)) : NULL;
}

/* rehash doubles the table (or makes its first 256 slots). */
static int rehash(tpd_arena *a)
{
    size_t n = a->ntab ? a->ntab * 2 : 256;
    interned *t = calloc(n, sizeof *t);
    if (t == NULL) return -1;
    for (size_t i = 0; i < a->ntab; i++) {
        size_t k = a->tab[i].h & (n - 1);
        if (a->tab[i].p == NULL) continue;
        while (t[k].p != NULL) k = (k + 1) & (n - 1);
        t[k] = a->tab[i];
    }
    free(a->tab);
    a->tab = t;
    a->ntab = n;
    return 0;
}

const void *tpd_arena_intern(tpd_arena *a, const void *p, size_t n)
{
    uint64_t h = XXH3_64bits(p, n);
    unsigned char *d;
    size_t k;
    if ((a->nused + 1) * 2 > a->ntab && rehash(a) != 0) return NULL;
    for (k = h & (a->ntab - 1); a->tab[k].p != NULL; k = (k + 1) & (a->ntab - 1))
        if (a->tab[k].h == h && a->tab[k].n == n && memcmp(a->tab[k].p, p, n) == 0)
            return a->tab[k].p;
    if ((d = tpd_arena_alloc(a, n + 1)) == NULL) return NULL;
    if (n) memcpy(d, p, n);
    d[n] = '\0';
    a->tab[k].p = d;
    a->tab[k].n = n;
    a->tab[k].h = h;
    a->nused++;
    return d;
}

/* own_chunk finds the chunk that holds the array arr of n bytes and nothing
 * else (a chunk of its own, made for a request over CHUNK): the link that
 * points to it, or NULL. */
static chunk **own_chunk(tpd_arena *a, const void *arr, size_t n)
{
    n = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    for (chunk **pp = &a->head; *pp; pp = &(*pp)->next)
        if ((*pp)->data == arr) return (*pp)->used == n ? pp : NULL;
    return NULL;
}

void *tpd_arena_fit(tpd_arena *a, void *arr, size_t *cap, size_t n, size_t sz)
{
    size_t bytes = (n * sz + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    chunk **pp, *c;
    if (arr == NULL || n >= *cap || bytes <= CHUNK || (pp = own_chunk(a, arr, *cap * sz)) == NULL)
        return arr;
    if ((c = realloc(*pp, sizeof(chunk) + bytes)) == NULL) return arr;
    c->used = c->cap = bytes;
    *pp = c;
    *cap = n;
    return c->data;
}

void *tpd_arena_grow(tpd_arena *a, void *arr, size_t *cap, size_t need, size_t sz)
{
    size_t ncap = *cap ? *cap : 16;
    chunk **pp;
    void *n;
    if (need <= *cap) return arr;
    while (ncap < need) ncap *= 2;
    if (ncap > (SIZE_MAX - sizeof(chunk) - ALIGN) / sz) return NULL;
    /* a large array alone in its chunk grows in place (realloc): the
     * doubling leaves no old copies behind, which for a long run's
     * timeline would hold as much again as the timeline itself */
    if (arr && *cap * sz > CHUNK && (pp = own_chunk(a, arr, *cap * sz)) != NULL) {
        size_t old = (*pp)->used, bytes = (ncap * sz + ALIGN - 1) & ~(size_t)(ALIGN - 1);
        chunk *c = realloc(*pp, sizeof(chunk) + bytes);
        if (c == NULL) return NULL;
        memset(c->data + old, 0, bytes - old);
        c->used = c->cap = bytes;
        *pp = c;
        *cap = ncap;
        return c->data;
    }
    n = tpd_arena_alloc(a, ncap * sz);
    if (n == NULL) return NULL;
    if (arr) memcpy(n, arr, *cap * sz);
    *cap = ncap;
    return n;
}
