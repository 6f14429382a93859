/* SPDX-License-Identifier: MIT
 * junit.h -- a verdict as a JUnit XML report, for CI pages (--junit F). */
#ifndef TP_TOOLS_REPORT_JUNIT_H
#define TP_TOOLS_REPORT_JUNIT_H

#include <stdint.h>

#include "tools/client/ctl.h"
#include "tools/base/opts.h"

/* tpt_junit_write writes run's verdict v, judged for the command of o, to
 * path as JUnit XML: one <testsuite> for the run, one <testcase> for its
 * check; FAIL is a <failure> whose message is the first divergence, ERROR
 * an <error>, ABSTAIN <skipped> with the reason; the text report is the
 * element's text (PASS: <system-out>).  tests/e2e/junit.xsd is the
 * schema it follows.  On failure it says so on stderr and returns -1. */
int tpt_junit_write(const char *path, const tpt_opts *o, int64_t run, const tpt_verdict_info *v);

#endif
