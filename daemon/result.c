/* SPDX-License-Identifier: MIT
 * result.c -- verdict results. */
#include <stdlib.h>
#include <string.h>

#include "daemon/result.h"

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
