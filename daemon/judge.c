/* SPDX-License-Identifier: MIT
 * judge.c -- dispatch from a run's check to its verdict engine. */
#include <stdio.h>
#include <string.h>

#include "daemon/judge.h"
#include "daemon/obs.h"
#include "daemon/verdict_coverage.h"
#include "daemon/values.h"
#include "daemon/verdict_accum.h"
#include "daemon/verdict_resume.h"

typedef tp_err (*engine_fn)(const tpd_run *r, const tpd_cmp_opts *o, tpd_result *out);

static const struct engine {
    const char *check;
    engine_fn fn;
} engines[] = {
    {"resume", tpd_verdict_resume},
    {"accum", tpd_verdict_accum},
    {"coverage", tpd_verdict_coverage},
};

tp_err tpd_judge(tpd_store *s, int64_t run, const tpd_cmp_opts *o, tpd_result *out, char *why,
                 size_t whylen)
{
    tpd_run *r = NULL;
    tpd_result res;
    tpd_verdict v;
    engine_fn fn = NULL;
    tp_err err = tpd_obs_load(tpd_store_db(s), run, &r, why, whylen);
    if (err != TP_OK) return err;
    /* engines that compare within a tolerance read captured values */
    if ((err = tpd_values_locate(r, tpd_store_path(s))) != TP_OK) {
        snprintf(why, whylen, "%s", tp_strerror(err));
        tpd_obs_free(r);
        return err;
    }
    for (size_t i = 0; i < sizeof engines / sizeof engines[0]; i++)
        if (r->check && strcmp(r->check, engines[i].check) == 0) fn = engines[i].fn;
    if (fn == NULL) {
        snprintf(why, whylen, "run %lld is a '%s' run: there is no verdict for it", (long long)run,
                 r->check ? r->check : "?");
        tpd_obs_free(r);
        return TP_EINVAL;
    }
    err = fn(r, o, &res);
    if (err != TP_OK) {
        snprintf(why, whylen, "%s", tp_strerror(err));
        tpd_obs_free(r);
        return err;
    }
    if (!tpd_store_readonly(s)) {
        int64_t id;
        memset(&v, 0, sizeof v);
        v.run = run;
        v.check_kind = (char *)r->check;
        v.outcome = (char *)tpd_outcome_name(res.outcome);
        v.has_step = res.has_step;
        v.step = res.step;
        v.path = res.path[0] ? res.path : NULL;
        v.report = res.json;
        v.text = res.text;
        err = tpd_store_verdict_insert(s, &v, &id);
        if (err != TP_OK) {
            snprintf(why, whylen, "cannot store the verdict: %s", tpd_store_errmsg(s));
            tpd_result_clear(&res);
            tpd_obs_free(r);
            return err;
        }
    }
    tpd_obs_free(r);
    *out = res;
    return TP_OK;
}
