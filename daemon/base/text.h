/* SPDX-License-Identifier: MIT
 * text.h -- a growable text buffer for the daemon's query output, replies and
 * JSON fragments (argv arrays).  Writes never fail loudly: an allocation
 * failure sets a sticky oom flag that the caller checks once at the end. */
#ifndef TP_DAEMON_BASE_TEXT_H
#define TP_DAEMON_BASE_TEXT_H

#include <stddef.h>

#include "proto/mp.h"
#include "proto/tp_err.h"

typedef struct tpd_str {
    char *s; /* NUL-terminated once anything was written; NULL before */
    size_t len;
    size_t cap;
    int oom; /* sticky: set when a grow failed */
} tpd_str;

/* tpd_str_init makes b empty; no allocation until the first write. */
void tpd_str_init(tpd_str *b);
/* tpd_str_free releases b's memory and makes it empty again. */
void tpd_str_free(tpd_str *b);
/* tpd_str_reset empties b, keeping its memory. */
void tpd_str_reset(tpd_str *b);
/* tpd_str_cstr returns b's text ("" when empty); valid until the next write. */
const char *tpd_str_cstr(const tpd_str *b);

void tpd_str_append(tpd_str *b, const char *p, size_t n);
void tpd_str_puts(tpd_str *b, const char *s);
void tpd_str_printf(tpd_str *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* tpd_str_json appends s (n bytes) as a JSON string literal, escaped. */
void tpd_str_json(tpd_str *b, const char *s, size_t n);

/* tpd_utf8_clean reports whether s (n bytes) is valid UTF-8 without control
 * characters other than newline and tab: text fit for a reply as it is. */
int tpd_utf8_clean(const char *s, size_t n);
/* tpd_str_utf8 appends s (n bytes) made clean: each byte that starts no
 * valid sequence becomes U+FFFD, each control character (C0 but newline and
 * tab, DEL, C1) the escape \u00NN, the rest stays as it is.  Both are valid
 * inside a JSON string too, so JSON text stays JSON. */
void tpd_str_utf8(tpd_str *b, const char *s, size_t n);

/* tpd_str_fffd appends s (n bytes) as valid UTF-8: each byte that starts no
 * valid sequence becomes U+FFFD; control characters stay as they are. */
void tpd_str_fffd(tpd_str *b, const char *s, size_t n);

/* tpd_str_jsonz appends the NUL-terminated s as a JSON string; NULL appends
 * null. */
void tpd_str_jsonz(tpd_str *b, const char *s);
/* tpd_str_steal hands b's text to the caller (free() it; "" when empty, NULL
 * when a grow failed) and makes b empty. */
char *tpd_str_steal(tpd_str *b);

/* tpd_json_strs reads a MessagePack array of strings from r and appends it to
 * b as a JSON array.  TP_EPROTO (r unchanged) when r is not an array of str. */
tp_err tpd_json_strs(tpd_str *b, tp_mpr *r);

/* tpd_fmt_g formats v compactly (%.6g) into out (at least 32 bytes). */
const char *tpd_fmt_g(char *out, size_t n, double v);

#endif
