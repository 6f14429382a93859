/* SPDX-License-Identifier: MIT
 * glue.h -- the embedded glue, the modules of agent/glue/: their sources in
 * the order boot.c executes them, in a table that agent/CMakeLists.txt
 * generates from its list of modules. */
#ifndef TP_AGENT_GLUE_H
#define TP_AGENT_GLUE_H

typedef struct tpa_glue_module {
    const char *name;   /* "__init__" (the package itself), "core", ... */
    const char *source; /* the module's text, NUL-terminated */
} tpa_glue_module;

/* tpa_glue_table lists the package first, then its modules in boot order
 * (each imports only modules before it); a NULL name ends it. */
extern const tpa_glue_module tpa_glue_table[];

#endif
