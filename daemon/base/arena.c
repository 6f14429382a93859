/* SPDX-License-Identifier: MIT
 * arena.c -- chunks of at least 64 KiB, chained; large requests get a chunk
 * of their own, and a large array alone in its chunk grows in place. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/arena.h"

#define CHUNK (64u * 1024u)
#define ALIGN 16u

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} chunk;

struct tpd_arena {
    chunk *head;
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
