/* SPDX-License-Identifier: MIT
 * json.h -- the little JSON the reports need: strings escaped, numbers and
 * literals written by the caller. */
#ifndef TP_TOOLS_JSON_H
#define TP_TOOLS_JSON_H

#include <stdio.h>

#define TPT_REPORT_SCHEMA 1 /* schema_version of the reports trainparity-run writes */

/* tpt_json_str writes s as a JSON string (NULL writes null) to f. */
void tpt_json_str(FILE *f, const char *s);

/* tpt_json_argv writes argv (NULL-terminated) as a JSON array of strings. */
void tpt_json_argv(FILE *f, char *const argv[]);

#endif
