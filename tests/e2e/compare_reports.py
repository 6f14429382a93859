#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""compare_reports.py BEFORE AFTER [ROOT_BEFORE ROOT_AFTER] -- compares the JSON reports that two
builds wrote for the rows of fixtures/expected.tsv (fixture.sh copies each
report into $TP_REPORT_DIR as <test>.json), apart from what differs between
any two runs: times, pids (and the order of an execution's processes, which
is the order they first reported), and the temporary directories the tests
run in; with the two checkouts' roots given (two builds in two clones),
paths under them are compared from the root.
Prints one line per report that differs, with the first difference, and
exits 1 when any does, or when a report is on one side only."""
import json
import os
import re
import sys

# Keys whose values are times or process ids.
VOLATILE = {"wall_s", "check_s", "executions_s", "ratio", "pid", "ppid"}
# A test's temporary directory (lib.sh: mktemp -d /tmp/tp-e2e-NAME.XXXXXX).
TMP = re.compile(r"[^\s\"']*/tp-e2e-[^/\"' ]*")


# A pid named in a sentence ("pid 1234", "process 1234").
PID = re.compile(r"\b(pid|process) \d+")


def normal(v, root=None, key=None):
    if isinstance(v, dict):
        return {k: ("<volatile>" if k in VOLATILE else normal(x, root, k)) for k, x in v.items()}
    if isinstance(v, list):
        v = [normal(x, root) for x in v]
        # an execution's processes come in the order they first reported
        return sorted(v, key=json.dumps) if key == "processes" else v
    if isinstance(v, str):
        if root:
            v = v.replace(root, "<root>")
        return PID.sub(r"\1 <pid>", TMP.sub("<tmp>", v))
    return v


def first_difference(a, b, at="$"):
    if type(a) is not type(b):
        return "%s: %r != %r" % (at, a, b)
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return "%s.%s: only in %s" % (at, k, "before" if k in a else "after")
            d = first_difference(a[k], b[k], "%s.%s" % (at, k))
            if d:
                return d
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, "%s[%d]" % (at, i))
            if d:
                return d
        if len(a) != len(b):
            return "%s: %d items != %d" % (at, len(a), len(b))
        return None
    return None if a == b else "%s: %r != %r" % (at, a, b)


def main():
    if len(sys.argv) not in (3, 5):
        sys.exit("usage: compare_reports.py BEFORE_DIR AFTER_DIR [ROOT_BEFORE ROOT_AFTER]")
    before, after = sys.argv[1], sys.argv[2]
    ra, rb = sys.argv[3:5] if len(sys.argv) == 5 else (None, None)
    names = sorted(set(os.listdir(before)) | set(os.listdir(after)))
    bad = 0
    for n in names:
        if not n.endswith(".json"):
            continue
        pa, pb = os.path.join(before, n), os.path.join(after, n)
        if not (os.path.exists(pa) and os.path.exists(pb)):
            print("%s: only %s" % (n, "before" if os.path.exists(pa) else "after"))
            bad += 1
            continue
        d = first_difference(normal(json.load(open(pa)), ra), normal(json.load(open(pb)), rb))
        if d:
            print("%s: %s" % (n, d))
            bad += 1
    print("%d reports compared, %d differ" % (len([n for n in names if n.endswith(".json")]), bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
