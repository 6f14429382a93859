/* SPDX-License-Identifier: MIT
 * schema_gen.c -- writes what proto/events.def declares in the two other
 * languages that need it:
 *   schema_gen python OUT       the glue's body builders (agent/glue's
 *                               `events` module, embedded at build time)
 *   schema_gen markdown         the key tables of proto/SCHEMA.md, to stdout
 *   schema_gen check SCHEMA.md  exit 1 when the page's tables are stale
 *   schema_gen update SCHEMA.md rewrite them in place
 * and what proto/params.def declares in docs/params.md's table, and
 * proto/control.def in docs/control.md's:
 *   schema_gen params-check PAGE, params-update PAGE  (as check and update)
 *   schema_gen control-check PAGE, control-update PAGE
 * The tables sit between the BEGIN and END marker lines of the page; the
 * prose around them is the page's own. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctype.h>
#include <math.h>

#include "proto/control.h"
#include "proto/event.h"
#include "proto/params.h"

#define BEGIN "<!-- BEGIN tables generated from proto/events.def: edit that file, not these -->\n"
#define END   "<!-- END generated tables -->\n"
#define BEGIN_PARAMS                                                                               \
    "<!-- BEGIN table generated from proto/params.def: edit that file, not this -->\n"
#define BEGIN_CONTROL                                                                              \
    "<!-- BEGIN tables generated from proto/control.def: edit that file, not these -->\n"

/* ---- growable text ---- */

/* text is proto's growable buffer, kept NUL-terminated (the NUL is not
 * counted in len) so that pages can be searched as strings. */
typedef tp_buf text;

static void put(text *t, const char *s, size_t n)
{
    tp_buf_append(t, s, n);
    tp_buf_append(t, "", 1);
    if (t->oom) {
        fputs("schema_gen: out of memory\n", stderr);
        exit(2);
    }
    t->len--;
}

static void puts_(text *t, const char *s)
{
    put(t, s, strlen(s));
}

static void printf_(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void printf_(text *t, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf) {
        fputs("schema_gen: a line too long\n", stderr);
        exit(2);
    }
    put(t, buf, (size_t)n);
}

/* ---- markdown ---- */

/* type_name writes a type mask as SCHEMA.md spells it: str|nil. */
static void type_name(text *t, unsigned types)
{
    static const struct {
        unsigned bit;
        const char *name;
    } names[] = {{TP_T_BOOL, "bool"},         {TP_T_INT, "int"},       {TP_T_UINT, "uint"},
                 {TP_T_F64, "float"},         {TP_T_STR, "str"},       {TP_T_BIN, "bin"},
                 {TP_T_DIGEST, "digest"},     {TP_T_LEAVES, "leaves"}, {TP_T_STRS, "[str]"},
                 {TP_T_INTS, "[int]"},        {TP_T_F64S, "[float]"},  {TP_T_RECORDS, "records"},
                 {TP_T_IDS, "[int]\\|[str]"}, {TP_T_NIL, "nil"}};
    int first = 1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(types & names[i].bit)) continue;
        printf_(t, "%s%s", first ? "" : "\\|", names[i].name);
        first = 0;
    }
}

static void markdown(text *t)
{
    puts_(t, BEGIN);
    puts_(t, "\n| kind | what it reports | keys |\n| --- | --- | --- |\n");
    for (int k = TP_K_NONE + 1; k < TP_K__COUNT; k++)
        printf_(t, "| `%s` | %s | [`%s`](#body-%s) |\n", tp_kinds[k].name, tp_kinds[k].doc,
                tp_bodies[tp_kinds[k].body].name, tp_bodies[tp_kinds[k].body].name);
    for (int b = 0; b < TPB__COUNT; b++) {
        unsigned n = tp_body_nfields((tp_body_id)b);
        printf_(t, "\n<a id=\"body-%s\"></a>\n### Body `%s`: %s\n\nUsed by", tp_bodies[b].name,
                tp_bodies[b].name, tp_bodies[b].doc);
        for (int k = TP_K_NONE + 1, m = 0; k < TP_K__COUNT; k++)
            if ((int)tp_kinds[k].body == b) printf_(t, "%s `%s`", m++ ? "," : "", tp_kinds[k].name);
        puts_(t, ".\n\n| key | type | meaning |\n| --- | --- | --- |\n");
        for (unsigned j = 0; j < n; j++) {
            const tp_field_def *f = &tp_fields[tp_bodies[b].first + j];
            printf_(t, f->required ? "| **%s** | " : "| %s | ", f->key);
            type_name(t, f->types);
            printf_(t, " | %s |\n", f->doc);
        }
    }
    puts_(t, "\n" END);
}

/* params_markdown writes docs/params.md's table: one row per parameter,
 * grouped by check. */
static void params_markdown(text *t)
{
    static const char *const types[] = {"", "integer", "number", "bool", "string", "JSON"};
    puts_(t, BEGIN_PARAMS);
    puts_(t, "\n| check | key | type | default | meaning |\n| --- | --- | --- | --- | --- |\n");
    for (int i = 0; i < TPP_COUNT; i++) {
        const tp_param_info *p = &tp_params[i];
        printf_(t, "| %s | `%s` | %s | ", p->check, p->key, types[p->type]);
        if (isnan(p->dflt))
            puts_(t, "none");
        else if (p->type == TP_P_BOOL)
            puts_(t, p->dflt != 0 ? "true" : "false");
        else
            printf_(t, "%g", p->dflt);
        printf_(t, " | %s |\n", p->meaning);
    }
    puts_(t, "\n" END);
}

/* control_fields writes cmd's arguments (args) or results as a table. */
static void control_fields(text *t, tp_cmd cmd, bool args)
{
    const tp_field_info *f = args ? tp_args : tp_ress;
    int n = args ? TPA_COUNT : TPR_COUNT, rows = 0;
    for (int i = 0; i < n; i++) {
        if (f[i].cmd != cmd) continue;
        if (rows++ == 0)
            printf_(t, "\n| %s | type | meaning |\n| --- | --- | --- |\n",
                    args ? "argument" : "result");
        printf_(t, args && f[i].need ? "| **`%s`** | %s | %s |\n" : "| `%s` | %s | %s |\n",
                f[i].key, tp_ctype_name(f[i].type), f[i].meaning);
    }
    if (rows == 0) printf_(t, "\n%s\n", args ? "No arguments." : "No results.");
}

/* control_markdown writes docs/control.md's tables: for each command its
 * meaning, its arguments (required ones in bold) and its results. */
static void control_markdown(text *t)
{
    puts_(t, BEGIN_CONTROL);
    for (int c = 0; c < TPC_COUNT; c++) {
        const char *m = tp_cmds[c].meaning;
        printf_(t, "\n### `%s`\n\n%c%s.\n", tp_cmds[c].name, toupper((unsigned char)m[0]), m + 1);
        control_fields(t, (tp_cmd)c, true);
        control_fields(t, (tp_cmd)c, false);
    }
    puts_(t, "\n" END);
}

/* ---- python ---- */

static void python(text *t)
{
    puts_(t, "# events.py -- generated from proto/events.def by proto/schema_gen.c; do not\n"
             "# edit.  One body builder per event kind: the required keys are arguments,\n"
             "# the optional ones keyword-only and left out of the body when not given,\n"
             "# so a key events.def does not declare is a TypeError where it is written.\n"
             "# Keys of type leaves are no arguments: emit's items fill them (KEYS and\n"
             "# REQUIRED list every key, leaves too).\n\n_NO = object()\n");
    for (int k = TP_K_NONE + 1; k < TP_K__COUNT; k++) {
        tp_body_id b = tp_kinds[k].body;
        unsigned n = tp_body_nfields(b);
        const tp_field_def *fs = &tp_fields[tp_bodies[b].first];
        int m = 0, kw = 0;
        printf_(t, "\n\ndef %s(", tp_kinds[k].name);
        for (unsigned j = 0; j < n; j++)
            if (fs[j].required && !(fs[j].types & TP_T_LEAVES))
                printf_(t, "%s%s", m++ ? ", " : "", fs[j].key);
        for (unsigned j = 0; j < n; j++)
            if (!fs[j].required && !(fs[j].types & TP_T_LEAVES))
                printf_(t, "%s%s%s=_NO", m++ ? ", " : "", kw++ ? "" : "*, ", fs[j].key);
        printf_(t, "):\n    \"\"\"The body of a `%s` event: %s.\"\"\"\n    b = {", tp_kinds[k].name,
                tp_kinds[k].doc);
        m = 0;
        for (unsigned j = 0; j < n; j++)
            if (fs[j].required && !(fs[j].types & TP_T_LEAVES))
                printf_(t, "%s\"%s\": %s", m++ ? ", " : "", fs[j].key, fs[j].key);
        puts_(t, "}\n");
        for (unsigned j = 0; j < n; j++)
            if (!fs[j].required && !(fs[j].types & TP_T_LEAVES))
                printf_(t, "    if %s is not _NO:\n        b[\"%s\"] = %s\n", fs[j].key, fs[j].key,
                        fs[j].key);
        puts_(t, "    return b\n");
    }
    for (int pass = 0; pass < 2; pass++) {
        printf_(t, "\n\n%s = {\n", pass ? "REQUIRED" : "KEYS");
        for (int k = TP_K_NONE + 1; k < TP_K__COUNT; k++) {
            tp_body_id b = tp_kinds[k].body;
            unsigned n = tp_body_nfields(b);
            const tp_field_def *fs = &tp_fields[tp_bodies[b].first];
            printf_(t, "    \"%s\": frozenset((", tp_kinds[k].name);
            for (unsigned j = 0; j < n; j++)
                if (!pass || fs[j].required) printf_(t, "\"%s\", ", fs[j].key);
            puts_(t, ")),\n");
        }
        puts_(t, "}\n");
    }
}

/* ---- files ---- */

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    text t;
    char buf[8192];
    size_t r;
    tp_buf_init(&t);
    if (f == NULL) {
        perror(path);
        exit(2);
    }
    while ((r = fread(buf, 1, sizeof buf, f)) > 0) put(&t, buf, r);
    fclose(f);
    put(&t, "", 0);
    *n = t.len;
    return (char *)t.data;
}

static void spill(const char *path, const char *s, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(s, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        exit(2);
    }
}

/* page splices the tables gen writes (from begin to END) into the page at
 * path: *out is the page as it should be; returns whether it differs from
 * the file. */
static int page(const char *path, const char *begin, void (*gen)(text *), text *out)
{
    size_t n;
    char *old = slurp(path, &n), *b = strstr(old, begin), *e = b ? strstr(b, END) : NULL;
    text gen_;
    int stale;
    if (b == NULL || e == NULL) {
        fprintf(stderr, "schema_gen: %s lacks the marker lines of the generated tables\n", path);
        exit(2);
    }
    tp_buf_init(&gen_);
    gen(&gen_);
    put(out, old, (size_t)(b - old));
    put(out, (char *)gen_.data, gen_.len);
    e += strlen(END);
    put(out, e, n - (size_t)(e - old));
    stale = out->len != n || memcmp((char *)out->data, old, n) != 0;
    free(old);
    tp_buf_free(&gen_);
    return stale;
}

/* The pages whose tables a declaration other than proto/events.def
 * writes: "params-check PAGE" and so on. */
static const struct decl_page {
    const char *prefix; /* of the command */
    const char *what;   /* the declaration */
    const char *begin;  /* the page's marker line */
    void (*gen)(text *);
} decl_pages[] = {
    {"params-", "proto/params.def", BEGIN_PARAMS, params_markdown},
    {"control-", "proto/control.def", BEGIN_CONTROL, control_markdown},
};

int main(int argc, char **argv)
{
    text t;
    const char *cmd = argc > 1 ? argv[1] : "";
    const struct decl_page *d = NULL;
    const char *what = "proto/events.def", *begin = BEGIN;
    void (*gen)(text *) = markdown;
    for (size_t i = 0; i < sizeof decl_pages / sizeof decl_pages[0]; i++)
        if (strncmp(cmd, decl_pages[i].prefix, strlen(decl_pages[i].prefix)) == 0)
            d = &decl_pages[i];
    tp_buf_init(&t);
    if (d != NULL) {
        cmd += strlen(d->prefix);
        what = d->what, begin = d->begin, gen = d->gen;
    }
    if (d == NULL && strcmp(cmd, "python") == 0 && argc == 3) {
        python(&t);
        spill(argv[2], (char *)t.data, t.len);
    } else if (d == NULL && strcmp(cmd, "markdown") == 0 && argc == 2) {
        markdown(&t);
        fputs((char *)t.data, stdout);
    } else if (strcmp(cmd, "check") == 0 && argc == 3) {
        if (page(argv[2], begin, gen, &t)) {
            fprintf(stderr,
                    "%s: the tables are stale: they differ from %s; run "
                    "`cmake --build BUILD --target schema-doc` to rewrite them\n",
                    argv[2], what);
            return 1;
        }
    } else if (strcmp(cmd, "update") == 0 && argc == 3) {
        if (page(argv[2], begin, gen, &t)) spill(argv[2], (char *)t.data, t.len);
    } else {
        fputs("usage: schema_gen python OUT | markdown | check SCHEMA.md | update SCHEMA.md |\n"
              "       params-check PAGE | params-update PAGE |\n"
              "       control-check PAGE | control-update PAGE\n",
              stderr);
        return 2;
    }
    tp_buf_free(&t);
    return 0;
}
