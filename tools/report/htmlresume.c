/* SPDX-License-Identifier: MIT
 * htmlresume.c -- the resume check's section of the HTML page: R's state
 * right after loading I's checkpoint against I's at the save, group by
 * group, from the report's evidence.state_after_load. */
#include <jansson.h>
#include <libxml/tree.h>
#include <string.h>

#include "tools/report/htmldoc.h"
#include "tools/report/htmlsec.h"
#include "tools/report/reportval.h"

/* restored_words says how a group was restored after the load. */
static const char *restored_words(const char *how)
{
    if (how == NULL) return "-";
    if (!strcmp(how, "checkpoint")) return "from the checkpoint";
    if (!strcmp(how, "elsewhere")) return "from a state no file of I's holds";
    if (!strcmp(how, "reseeded")) return "re-seeded";
    if (!strcmp(how, "no")) return "not restored";
    return how;
}

void tpt_html_state_after_load(tpt_htmldoc *pg, xmlNodePtr body, const json_t *r)
{
    const json_t *ev = json_object_get(r, "evidence"),
                 *sal = json_object_get(ev, "state_after_load");
    const json_t *g, *ex;
    size_t i, k;
    xmlNodePtr sec = tpt_el(pg, body, "section", NULL), t, tr, p;
    tpt_attr(pg, sec, "id", "state-after-load");
    tpt_el(pg, sec, "h2", "State after loading");
    if (!json_is_array(sal)) {
        tpt_el(pg, sec, "p",
               json_is_null(sal)
                   ? "Not compared: the check did not get as far as a load of I's "
                     "checkpoint by R."
                   : "The report does not say (a daemon older than state_after_load).");
        return;
    }
    p = tpt_elc(pg, sec, "p", "note", NULL);
    tpt_textf(pg, p,
              "R's state at its first step after loading the checkpoint (R's step %lld) against "
              "I's at the aligned step %lld, when it saved",
              (long long)json_integer_value(json_object_get(ev, "resumed_from_step")),
              (long long)json_integer_value(json_object_get(ev, "aligned_step")));
    tpt_text(pg, p, " (I's snapshot at the start of that step; \"at the save\" where noted).");
    t = tpt_el(pg, sec, "table", NULL);
    tr = tpt_el(pg, t, "tr", NULL);
    tpt_el(pg, tr, "th", "group");
    tpt_el(pg, tr, "th", "after loading");
    tpt_el(pg, tr, "th", "components differing");
    tpt_el(pg, tr, "th", "restored after the load");
    tpt_el(pg, tr, "th", "examples (after loading / when saved)");
    json_array_foreach(sal, i, g)
    {
        const json_t *eq = json_object_get(g, "equal");
        xmlNodePtr td, ul;
        tr = tpt_el(pg, t, "tr", NULL);
        tpt_attr(pg, tr, "data-component", tpt_jstr(g, "component"));
        tpt_el(pg, tr, "th", tpt_jstr(g, "component"));
        if (json_is_boolean(eq))
            tpt_elc(pg, tr, "td", json_is_true(eq) ? "eq-true" : "eq-false",
                    json_is_true(eq) ? "equal" : "differs");
        else
            tpt_elc(pg, tr, "td", "eq-null", "not compared");
        td = tpt_el(pg, tr, "td", NULL);
        if (json_is_boolean(eq)) {
            tpt_textf(pg, td, "%lld of %lld",
                      (long long)json_integer_value(json_object_get(g, "differ")),
                      (long long)json_integer_value(json_object_get(g, "compared")));
            if (tpt_jstr(g, "reference") && !strcmp(tpt_jstr(g, "reference"), "save"))
                tpt_text(pg, td, " (at the save)");
        } else {
            tpt_text(pg, td, "I's snapshot holds none");
        }
        td = tpt_el(pg, tr, "td", restored_words(tpt_jstr(g, "restored")));
        if (tpt_jstr(g, "restored_by")) {
            tpt_text(pg, td, ", by ");
            tpt_el(pg, td, "code", tpt_jstr(g, "restored_by"));
        }
        td = tpt_el(pg, tr, "td", NULL);
        if (json_array_size(json_object_get(g, "examples")) == 0) continue;
        ul = tpt_el(pg, td, "ul", NULL);
        json_array_foreach(json_object_get(g, "examples"), k, ex)
        {
            tpt_line l = {.n = 0};
            xmlNodePtr li = tpt_el(pg, ul, "li", NULL);
            tpt_el(pg, li, "code", tpt_jstr(ex, "path"));
            tpt_put_val(&l, json_object_get(ex, "after_load"));
            tpt_lprintf(&l, " / ");
            tpt_put_val(&l, json_object_get(ex, "saved"));
            tpt_text(pg, li, ": ");
            tpt_elc(pg, li, "span", "mono", l.s);
        }
    }
}
