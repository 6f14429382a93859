/* SPDX-License-Identifier: MIT
 * json.c -- JSON string escaping for reports. */
#include "tools/json.h"

void tpt_json_str(FILE *f, const char *s)
{
    const unsigned char *p;
    if (s == NULL) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (p = (const unsigned char *)s; *p != '\0'; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

void tpt_json_argv(FILE *f, char *const argv[])
{
    int i;
    fputc('[', f);
    for (i = 0; argv != NULL && argv[i] != NULL; i++) {
        if (i > 0) fputs(", ", f);
        tpt_json_str(f, argv[i]);
    }
    fputc(']', f);
}
