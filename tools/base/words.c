/* SPDX-License-Identifier: MIT
 * words.c -- shell-like word splitting, without expansion. */
#include <stdlib.h>
#include <string.h>

#include "tools/base/errbuf.h"
#include "tools/base/words.h"

/* split writes the words of s NUL-separated into buf (if not NULL) and
 * returns their number, or -1 on an unterminated quote. */
static int split(const char *s, char *buf)
{
    int n = 0;
    size_t k = 0;
    while (*s) {
        int in_word = 0;
        while (*s == ' ' || *s == '\t' || *s == '\n') s++;
        if (*s == '\0') break;
        while (*s && *s != ' ' && *s != '\t' && *s != '\n') {
            in_word = 1;
            if (*s == '\'') {
                const char *e = strchr(s + 1, '\'');
                if (e == NULL) return -1;
                if (buf) memcpy(buf + k, s + 1, (size_t)(e - s - 1));
                k += (size_t)(e - s - 1);
                s = e + 1;
            } else if (*s == '"') {
                s++;
                while (*s && *s != '"') {
                    if (*s == '\\' && s[1] && strchr("\"\\$`", s[1])) s++;
                    if (buf) buf[k] = *s;
                    k++, s++;
                }
                if (*s != '"') return -1;
                s++;
            } else {
                if (*s == '\\' && s[1]) s++;
                if (buf) buf[k] = *s;
                k++, s++;
            }
        }
        if (in_word) {
            if (buf) buf[k] = '\0';
            k++;
            n++;
        }
    }
    return n;
}

tp_err tpt_words(char *const head[], int n, const char *s, char ***out, char *err)
{
    int w = split(s, NULL);
    size_t bytes = strlen(s) + 1, hb = 0;
    char **v, *p;
    if (w < 0) return tpt_seterr(err, TP_EINVAL, "unterminated quote in '%s'", s);
    for (int i = 0; i < n; i++) hb += strlen(head[i]) + 1;
    v = malloc(sizeof(char *) * (size_t)(n + w + 1) + hb + bytes * 2);
    if (v == NULL) return tpt_seterr(err, TP_ENOMEM, "out of memory");
    p = (char *)(v + n + w + 1);
    for (int i = 0; i < n; i++) {
        v[i] = p;
        strcpy(p, head[i]);
        p += strlen(p) + 1;
    }
    split(s, p);
    for (int i = 0; i < w; i++) {
        v[n + i] = p;
        p += strlen(p) + 1;
    }
    v[n + w] = NULL;
    *out = v;
    return TP_OK;
}
