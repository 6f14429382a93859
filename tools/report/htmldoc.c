/* SPDX-License-Identifier: MIT
 * htmldoc.c -- appending elements, attributes and text to a libxml2 tree
 * (tree.h): escaping and encoding are the library's when the tree is
 * written, so no text is ever pasted into markup here. */
#define _POSIX_C_SOURCE 200809L
#include <libxml/tree.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/report/htmldoc.h"

void tpt_text(tpt_htmldoc *d, xmlNodePtr n, const char *s)
{
    xmlNodePtr t;
    char *copy = NULL;
    if (n == NULL || s == NULL) return;
    if (!xmlCheckUTF8(BAD_CAST s)) {
        if ((copy = strdup(s)) == NULL) {
            d->bad = true;
            return;
        }
        for (unsigned char *p = (unsigned char *)copy; *p; p++)
            if (*p >= 0x80) *p = '?';
        s = copy;
    }
    t = xmlNewDocText(d->doc, BAD_CAST s);
    if (t == NULL || xmlAddChild(n, t) == NULL) {
        xmlFreeNode(t);
        d->bad = true;
    }
    free(copy);
}

void tpt_textf(tpt_htmldoc *d, xmlNodePtr n, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    tpt_text(d, n, buf);
}

xmlNodePtr tpt_el(tpt_htmldoc *d, xmlNodePtr parent, const char *name, const char *text)
{
    xmlNodePtr n;
    if (parent == NULL) return NULL;
    if ((n = xmlNewChild(parent, NULL, BAD_CAST name, NULL)) == NULL) {
        d->bad = true;
        return NULL;
    }
    tpt_text(d, n, text);
    return n;
}

void tpt_attr(tpt_htmldoc *d, xmlNodePtr n, const char *name, const char *value)
{
    if (n != NULL && xmlNewProp(n, BAD_CAST name, BAD_CAST value) == NULL) d->bad = true;
}

void tpt_attrf(tpt_htmldoc *d, xmlNodePtr n, const char *name, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    tpt_attr(d, n, name, buf);
}

xmlNodePtr tpt_elc(tpt_htmldoc *d, xmlNodePtr parent, const char *name, const char *cls,
                   const char *text)
{
    xmlNodePtr n = tpt_el(d, parent, name, text);
    tpt_attr(d, n, "class", cls);
    return n;
}
