/* SPDX-License-Identifier: MIT
 * junit.c -- a verdict as JUnit XML, written with libxml2's xmlTextWriter
 * (escaping and encoding are the library's).  What the case says comes from
 * the verdict's JSON report (docs/report-schema.md): the check, the wall
 * time, the first divergence, the reason. */
#include <jansson.h>
#include <libxml/xmlwriter.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tools/base/cli.h"
#include "tools/report/junit.h"
#include "tools/report/reportval.h"

/* trimmed copies s into out (n bytes) without leading blanks and without
 * what follows its first line. */
static const char *trimmed(const char *s, char *out, size_t n)
{
    size_t k = 0;
    while (*s == ' ' || *s == '\t' || *s == '\n') s++;
    while (s[k] && s[k] != '\n' && k + 1 < n) k++;
    memcpy(out, s, k);
    out[k] = '\0';
    return out;
}

/* where describes the first divergence fd in words: its component and its
 * place (step, or epoch and rank for coverage) and, when the check said it
 * in words, what was observed. */
static void where(const json_t *fd, char *out, size_t n)
{
    const json_t *step = json_object_get(fd, "step"), *epoch = json_object_get(fd, "epoch");
    const json_t *rank = json_object_get(fd, "rank");
    const char *path = tpt_jstr(fd, "path"), *obs = tpt_jstr(fd, "observed");
    size_t w = (size_t)snprintf(out, n, "first divergence: %s", path ? path : "?");
    if (w < n && json_is_integer(step))
        w += (size_t)snprintf(out + w, n - w, " at step %lld", (long long)json_integer_value(step));
    if (w < n && json_is_integer(epoch))
        w += (size_t)snprintf(out + w, n - w, " in epoch %lld",
                              (long long)json_integer_value(epoch));
    if (w < n && json_is_integer(rank))
        w += (size_t)snprintf(out + w, n - w, " on rank %lld", (long long)json_integer_value(rank));
    if (w < n && obs) snprintf(out + w, n - w, ": %s", obs);
}

/* message is what the case's failure, error or skip says in one line: the
 * first divergence on a FAIL; otherwise the report's reason, its first
 * explanation, or the first line of its text after the header. */
static void message(const json_t *r, const tpt_verdict_info *v, char *out, size_t n)
{
    const json_t *fd = json_object_get(r, "first_divergence");
    const json_t *why = json_array_get(json_object_get(r, "explanation"), 0);
    const char *s;
    out[0] = '\0';
    if (json_is_object(fd) && v->outcome && strcmp(v->outcome, "FAIL") == 0) {
        where(fd, out, n);
        return;
    }
    if ((s = tpt_jstr(r, "reason")) != NULL || (s = tpt_jstr(why, "text")) != NULL) {
        trimmed(s, out, n);
        if (out[0]) return;
    }
    if (json_is_object(fd)) {
        where(fd, out, n);
        return;
    }
    s = v->text ? strchr(v->text, '\n') : NULL;
    trimmed(s ? s : (v->outcome ? v->outcome : "no verdict"), out, n);
}

static double wall_s(const json_t *r)
{
    const json_t *w = json_object_get(json_object_get(r, "evidence"), "wall_time");
    return json_number_value(json_object_get(w, "check_s"));
}

/* counts writes the attributes a testsuites and a testsuite element share:
 * one test, whether it failed, erred or was skipped, and its time. */
static int counts(xmlTextWriterPtr w, bool fail, bool error, bool skip, const char *secs)
{
    int bad = 0;
    bad |= xmlTextWriterWriteAttribute(w, BAD_CAST "tests", BAD_CAST "1") < 0;
    bad |= xmlTextWriterWriteAttribute(w, BAD_CAST "failures", BAD_CAST(fail ? "1" : "0")) < 0;
    bad |= xmlTextWriterWriteAttribute(w, BAD_CAST "errors", BAD_CAST(error ? "1" : "0")) < 0;
    bad |= xmlTextWriterWriteAttribute(w, BAD_CAST "skipped", BAD_CAST(skip ? "1" : "0")) < 0;
    bad |= xmlTextWriterWriteAttribute(w, BAD_CAST "time", BAD_CAST secs) < 0;
    return bad ? -1 : 0;
}

/* write_doc writes the document; any writer call that fails makes it fail. */
static int write_doc(xmlTextWriterPtr w, const tpt_opts *o, int64_t run, const tpt_verdict_info *v,
                     const json_t *r)
{
    const char *oc = v->outcome ? v->outcome : "ERROR";
    const char *check = tpt_jstr(r, "check") ? tpt_jstr(r, "check") : "check";
    bool fail = !strcmp(oc, "FAIL"), skip = !strcmp(oc, "ABSTAIN");
    bool error = !fail && !skip && strcmp(oc, "PASS") != 0;
    char cmd[1024], suite[1200], klass[64], msg[1024], secs[32], num[32];
    int bad = 0;
    tpt_argv_join(o->cmd, cmd, sizeof cmd);
    snprintf(suite, sizeof suite, "trainparity %s run %lld", check, (long long)run);
    snprintf(klass, sizeof klass, "trainparity.%s", check);
    snprintf(secs, sizeof secs, "%.3f", wall_s(r));
    message(r, v, msg, sizeof msg);
#define W(call) bad |= (call) < 0
    W(xmlTextWriterStartDocument(w, NULL, "UTF-8", NULL));
    W(xmlTextWriterStartElement(w, BAD_CAST "testsuites"));
    W(xmlTextWriterWriteAttribute(w, BAD_CAST "name", BAD_CAST "trainparity"));
    W(counts(w, fail, error, skip, secs));
    W(xmlTextWriterStartElement(w, BAD_CAST "testsuite"));
    W(xmlTextWriterWriteAttribute(w, BAD_CAST "name", BAD_CAST suite));
    W(counts(w, fail, error, skip, secs));
    W(xmlTextWriterStartElement(w, BAD_CAST "properties"));
    snprintf(num, sizeof num, "%lld", (long long)run);
    W(xmlTextWriterStartElement(w, BAD_CAST "property"));
    W(xmlTextWriterWriteAttribute(w, BAD_CAST "name", BAD_CAST "run"));
    W(xmlTextWriterWriteAttribute(w, BAD_CAST "value", BAD_CAST num));
    W(xmlTextWriterEndElement(w));
    W(xmlTextWriterStartElement(w, BAD_CAST "property"));
    W(xmlTextWriterWriteAttribute(w, BAD_CAST "name", BAD_CAST "outcome"));
    W(xmlTextWriterWriteAttribute(w, BAD_CAST "value", BAD_CAST oc));
    W(xmlTextWriterEndElement(w));
    W(xmlTextWriterEndElement(w)); /* properties */
    W(xmlTextWriterStartElement(w, BAD_CAST "testcase"));
    W(xmlTextWriterWriteAttribute(w, BAD_CAST "classname", BAD_CAST klass));
    W(xmlTextWriterWriteAttribute(w, BAD_CAST "name", BAD_CAST cmd));
    W(xmlTextWriterWriteAttribute(w, BAD_CAST "time", BAD_CAST secs));
    if (fail || error || skip) {
        W(xmlTextWriterStartElement(w, BAD_CAST(fail ? "failure" : error ? "error" : "skipped")));
        W(xmlTextWriterWriteAttribute(w, BAD_CAST "message", BAD_CAST msg));
        if (!skip) W(xmlTextWriterWriteAttribute(w, BAD_CAST "type", BAD_CAST oc));
        W(xmlTextWriterWriteString(w, BAD_CAST(v->text ? v->text : "")));
        W(xmlTextWriterEndElement(w));
    }
    if (!fail && !error) {
        W(xmlTextWriterStartElement(w, BAD_CAST "system-out"));
        W(xmlTextWriterWriteString(w, BAD_CAST(v->text ? v->text : "")));
        W(xmlTextWriterEndElement(w));
    }
    W(xmlTextWriterEndDocument(w)); /* closes every open element */
#undef W
    return bad ? -1 : 0;
}

int tpt_junit_write(const char *path, const tpt_opts *o, int64_t run, const tpt_verdict_info *v)
{
    json_t *r = v->json ? json_loads(v->json, 0, NULL) : NULL;
    xmlBufferPtr b = xmlBufferCreate();
    xmlTextWriterPtr w = b ? xmlNewTextWriterMemory(b, 0) : NULL;
    int rc = -1;
    if (w != NULL) {
        xmlTextWriterSetIndent(w, 1);
        rc = write_doc(w, o, run, v, r);
        xmlFreeTextWriter(w); /* flushes into b */
    }
    json_decref(r);
    if (rc == 0)
        rc = tpt_write_report(path, (const char *)xmlBufferContent(b)); /* says why it failed */
    else
        tpt_error("cannot write %s: out of memory", path);
    xmlBufferFree(b);
    return rc;
}
