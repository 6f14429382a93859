/* SPDX-License-Identifier: MIT
 * text.c -- growable text buffer, JSON string escaping, compact numbers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/text.h"

void tpd_str_init(tpd_str *b)
{
    memset(b, 0, sizeof *b);
}

void tpd_str_free(tpd_str *b)
{
    free(b->s);
    memset(b, 0, sizeof *b);
}

void tpd_str_reset(tpd_str *b)
{
    b->len = 0;
    b->oom = 0;
    if (b->s) b->s[0] = '\0';
}

const char *tpd_str_cstr(const tpd_str *b)
{
    return b->s ? b->s : "";
}

/* reserve makes room for n more bytes plus the terminating NUL. */
static int reserve(tpd_str *b, size_t n)
{
    size_t need, cap;
    char *p;
    if (b->oom) return -1;
    if (n > SIZE_MAX - b->len - 1) goto oom;
    need = b->len + n + 1;
    if (need <= b->cap) return 0;
    cap = b->cap ? b->cap : 256;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) goto oom;
        cap *= 2;
    }
    p = realloc(b->s, cap);
    if (p == NULL) goto oom;
    b->s = p;
    b->cap = cap;
    return 0;
oom:
    b->oom = 1;
    return -1;
}

void tpd_str_append(tpd_str *b, const char *p, size_t n)
{
    if (reserve(b, n) != 0) return;
    memcpy(b->s + b->len, p, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void tpd_str_puts(tpd_str *b, const char *s)
{
    tpd_str_append(b, s, strlen(s));
}

void tpd_str_printf(tpd_str *b, const char *fmt, ...)
{
    va_list ap;
    int n;
    char small[256];
    va_start(ap, fmt);
    n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        tpd_str_append(b, small, (size_t)n);
        return;
    }
    if (reserve(b, (size_t)n) != 0) return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void tpd_str_json(tpd_str *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t i, run = 0;
    tpd_str_append(b, "\"", 1);
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[7];
        size_t elen = 2;
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        tpd_str_append(b, s + run, i - run);
        run = i + 1;
        esc[0] = '\\';
        switch (c) {
        case '"':
            esc[1] = '"';
            break;
        case '\\':
            esc[1] = '\\';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        default:
            memcpy(esc, "\\u00", 4);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            elen = 6;
            break;
        }
        tpd_str_append(b, esc, elen);
    }
    tpd_str_append(b, s + run, n - run);
    tpd_str_append(b, "\"", 1);
}

/* utf8_len returns the length of the valid UTF-8 sequence at s (n bytes
 * left), 0 when the bytes there are not one; *cp receives its code point. */
static size_t utf8_len(const unsigned char *s, size_t n, unsigned *cp)
{
    unsigned c = s[0], v, min;
    size_t len;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, v = c & 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, v = c & 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, v = c & 0x07, min = 0x10000;
    else
        return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
    *cp = v;
    return len;
}

/* is_control: C0 but newline and tab, DEL, C1. */
static int is_control(unsigned cp)
{
    return (cp < 0x20 && cp != '\n' && cp != '\t') || (cp >= 0x7f && cp <= 0x9f);
}

int tpd_utf8_clean(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned cp;
        size_t len;
        if (p[i] >= 0x20 && p[i] < 0x7f) { /* the common case */
            i++;
            continue;
        }
        if ((len = utf8_len(p + i, n - i, &cp)) == 0 || is_control(cp)) return 0;
        i += len;
    }
    return 1;
}

void tpd_str_fffd(tpd_str *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, run = 0;
    while (i < n) {
        unsigned cp = 0;
        size_t len = utf8_len(p + i, n - i, &cp);
        if (len > 0) {
            i += len;
            continue;
        }
        tpd_str_append(b, s + run, i - run);
        tpd_str_append(b, "\xef\xbf\xbd", 3);
        run = ++i;
    }
    tpd_str_append(b, s + run, n - run);
}

void tpd_str_utf8(tpd_str *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, run = 0;
    while (i < n) {
        unsigned cp = 0;
        size_t len = utf8_len(p + i, n - i, &cp);
        if (len > 0 && !is_control(cp)) {
            i += len;
            continue;
        }
        tpd_str_append(b, s + run, i - run);
        if (len == 0) { /* a byte that starts no valid sequence */
            tpd_str_append(b, "\xef\xbf\xbd", 3);
            i++;
        } else {
            char esc[6] = {'\\', 'u', '0', '0', hex[cp >> 4], hex[cp & 15]};
            tpd_str_append(b, esc, sizeof esc);
            i += len;
        }
        run = i;
    }
    tpd_str_append(b, s + run, n - run);
}

tp_err tpd_json_strs(tpd_str *b, tp_mpr *r)
{
    tp_mpr save = *r;
    size_t len0 = b->len;
    uint32_t n;
    if (tp_mpr_array(r, &n) != TP_OK) return TP_EPROTO;
    tpd_str_append(b, "[", 1);
    for (uint32_t i = 0; i < n; i++) {
        const char *s;
        uint32_t len;
        if (tp_mpr_str(r, &s, &len) != TP_OK) {
            *r = save;
            b->len = len0;
            if (b->s) b->s[len0] = '\0';
            return TP_EPROTO;
        }
        if (i) tpd_str_append(b, ",", 1);
        tpd_str_json(b, s, len);
    }
    tpd_str_append(b, "]", 1);
    return TP_OK;
}

const char *tpd_fmt_g(char *out, size_t n, double v)
{
    snprintf(out, n, "%.6g", v);
    return out;
}

void tpd_str_jsonz(tpd_str *b, const char *s)
{
    if (s == NULL)
        tpd_str_puts(b, "null");
    else
        tpd_str_json(b, s, strlen(s));
}

char *tpd_str_steal(tpd_str *b)
{
    char *s = b->oom ? NULL : b->s;
    if (b->oom)
        free(b->s);
    else if (s == NULL)
        s = calloc(1, 1);
    tpd_str_init(b);
    return s;
}
