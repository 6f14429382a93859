/* SPDX-License-Identifier: MIT
 * json.c -- jansson values from the daemon's text, numbers and digests. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/json.h"
#include "daemon/base/text.h"

json_t *tpd_json_str(const char *s)
{
    json_t *v;
    tpd_str b;
    if (s == NULL) return json_null();
    if ((v = json_string(s)) != NULL) return v;
    tpd_str_init(&b); /* not UTF-8, or out of memory: try once made valid */
    tpd_str_fffd(&b, s, strlen(s));
    v = b.oom ? NULL : json_stringn(tpd_str_cstr(&b), b.len);
    tpd_str_free(&b);
    return v;
}

json_t *tpd_json_lines(const char *s)
{
    json_t *v;
    tpd_str b;
    tpd_str_init(&b);
    while (s != NULL && *s != '\0') {
        size_t n;
        while (*s == ' ' || *s == '\t') s++;
        n = strcspn(s, "\n");
        if (n > 0) {
            if (b.len > 0) tpd_str_puts(&b, "; ");
            tpd_str_append(&b, s, n);
        }
        s += n + (s[n] == '\n');
    }
    v = b.oom ? NULL : tpd_json_str(tpd_str_cstr(&b));
    tpd_str_free(&b);
    return v;
}

json_t *tpd_json_num(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

json_t *tpd_json_int(int64_t x)
{
    return json_integer((json_int_t)x);
}

json_t *tpd_json_bool(bool b)
{
    return json_boolean(b);
}

json_t *tpd_json_hex(const uint8_t *d, int n)
{
    static const char hex[] = "0123456789abcdef";
    char buf[129];
    if (n < 0 || n > 64) return NULL;
    for (int i = 0; i < n; i++) {
        buf[2 * i] = hex[d[i] >> 4];
        buf[2 * i + 1] = hex[d[i] & 15];
    }
    return json_stringn(buf, (size_t)n * 2);
}

bool tpd_jset(json_t *o, const char *key, json_t *v)
{
    if (o == NULL) {
        json_decref(v);
        return false;
    }
    return v != NULL && json_object_set_new(o, key, v) == 0;
}

bool tpd_jpush(json_t *a, json_t *v)
{
    if (a == NULL) {
        json_decref(v);
        return false;
    }
    return v != NULL && json_array_append_new(a, v) == 0;
}

json_t *tpd_jdone(json_t *o, bool bad)
{
    if (!bad && o != NULL) return o;
    json_decref(o);
    return NULL;
}

/* put is jansson's dump callback: appends to a tpd_str, whose sticky oom
 * flag remembers a failed write (json_dumps ignores some). */
static int put(const char *buf, size_t n, void *data)
{
    tpd_str *b = data;
    tpd_str_append(b, buf, n);
    return b->oom ? -1 : 0;
}

char *tpd_json_dump(json_t *v)
{
    tpd_str b;
    int rc;
    tpd_str_init(&b);
    rc = v ? json_dump_callback(v, put, &b, JSON_PRESERVE_ORDER | JSON_COMPACT) : -1;
    json_decref(v);
    if (rc == 0) tpd_str_append(&b, "\n", 1);
    if (rc != 0 || b.oom) {
        tpd_str_free(&b);
        return NULL;
    }
    return tpd_str_steal(&b);
}
