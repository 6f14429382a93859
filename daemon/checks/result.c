/* SPDX-License-Identifier: MIT
 * result.c -- verdict results. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/result.h"
#include "tp_version.h"

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

json_t *tpd_report_new(const char *check, int64_t run, tpd_outcome oc)
{
    return json_pack("{s:i, s:s, s:s, s:I, s:s}", "schema_version", TPD_REPORT_SCHEMA,
                     "trainparity_version", TP_VERSION, "check", check, "run", (json_int_t)run,
                     "outcome", tpd_outcome_name(oc));
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
    if (w->items == NULL && (w->items = json_array()) == NULL) w->oom = true;
    if (w->items != NULL &&
        !tpd_jpush(w->items, json_pack("{s:s, s:o}", "kind", kind, "text", tpd_json_str(line))))
        w->oom = true;
    w->n++;
}

void tpd_why_add(tpd_why *w, const char *kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tpd_why_vadd(w, kind, fmt, ap);
    va_end(ap);
}

json_t *tpd_why_json(const tpd_why *w)
{
    if (w->oom) return NULL;
    return w->items ? json_incref(w->items) : json_array();
}

void tpd_why_free(tpd_why *w)
{
    json_decref(w->items);
    w->items = NULL;
    w->oom = false;
    tpd_str_free(&w->text);
    w->n = 0;
}
