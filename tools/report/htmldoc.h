/* SPDX-License-Identifier: MIT
 * htmldoc.h -- appending elements, attributes and text to a libxml2 tree,
 * with one failure flag for the whole document.
 *
 * Every helper takes a NULL parent or node as a no-op and sets bad when an
 * allocation fails, so that a builder calls them without checking each and
 * looks at bad once, at the end, before it writes the document. */
#ifndef TP_TOOLS_REPORT_HTMLDOC_H
#define TP_TOOLS_REPORT_HTMLDOC_H

#include <libxml/tree.h>
#include <stdbool.h>

typedef struct tpt_htmldoc {
    xmlDocPtr doc; /* the document the nodes are made for */
    bool bad;      /* an allocation failed: the document is not to be written */
} tpt_htmldoc;

/* tpt_text appends s to n as text (escaped when written).  Bytes that are
 * not UTF-8 (a file name in the command) become '?'.  NULL s: nothing. */
void tpt_text(tpt_htmldoc *d, xmlNodePtr n, const char *s);

/* tpt_textf is tpt_text with a format, cut at 1023 bytes. */
void tpt_textf(tpt_htmldoc *d, xmlNodePtr n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* tpt_el appends element name to parent, with text when not NULL, and
 * returns it: NULL (and d->bad) when it could not. */
xmlNodePtr tpt_el(tpt_htmldoc *d, xmlNodePtr parent, const char *name, const char *text);

/* tpt_elc is tpt_el with a class. */
xmlNodePtr tpt_elc(tpt_htmldoc *d, xmlNodePtr parent, const char *name, const char *cls,
                   const char *text);

/* tpt_attr sets n's attribute name to value. */
void tpt_attr(tpt_htmldoc *d, xmlNodePtr n, const char *name, const char *value);

/* tpt_attrf is tpt_attr with a format, cut at 255 bytes. */
void tpt_attrf(tpt_htmldoc *d, xmlNodePtr n, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
