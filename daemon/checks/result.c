/* SPDX-License-Identifier: MIT
 * result.c -- verdict results. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/result.h"

const char *tpd_outcome_name(tpd_outcome o)
{
    switch (o) {
    case TPD_PASS:
        return "PASS";
    case TPD_FAIL:
        return "FAIL";
    case TPD_ABSTAIN:
        return "ABSTAIN";
    case TPD_ERROR:
        return "ERROR";
    }
    return "ERROR";
}

void tpd_result_clear(tpd_result *r)
{
    if (r == NULL) return;
    free(r->text);
    free(r->json);
    memset(r, 0, sizeof *r);
}

void tpd_why_vadd(tpd_why *w, const char *kind, const char *fmt, va_list ap)
{
    char line[2048];
    vsnprintf(line, sizeof line, fmt, ap);
    tpd_str_printf(&w->text, "  - %s\n", line);
    tpd_str_printf(&w->json, "%s{\"kind\":", w->n ? "," : "");
    tpd_str_jsonz(&w->json, kind);
    tpd_str_puts(&w->json, ",\"text\":");
    tpd_str_jsonz(&w->json, line);
    tpd_str_puts(&w->json, "}");
    w->n++;
}

void tpd_why_add(tpd_why *w, const char *kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tpd_why_vadd(w, kind, fmt, ap);
    va_end(ap);
}

void tpd_why_free(tpd_why *w)
{
    tpd_str_free(&w->text);
    tpd_str_free(&w->json);
    w->n = 0;
}
