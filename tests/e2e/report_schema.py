#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""report_schema.py REPORT... -- validates JSON reports against
docs/report-schema.json (JSON Schema 2020-12, with the jsonschema package of
the project's venv).  Prints every violation, with where it is, and exits 1
when a report has any."""
import json
import os
import sys

import jsonschema

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                      "report-schema.json")


def validator():
    with open(SCHEMA) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def errors(v, report):
    """the violations of report, as lines 'PATH: MESSAGE'"""
    out = []
    for e in sorted(v.iter_errors(report), key=lambda e: list(e.absolute_path)):
        # an if/then names only the branch; its own errors say what is wrong
        for leaf in (e.context or [e]) if e.validator in ("anyOf", "oneOf") else [e]:
            where = "/".join(str(p) for p in leaf.absolute_path) or "(top)"
            out.append("%s: %s" % (where, leaf.message[:300]))
    return out


def main(paths):
    v = validator()
    bad = 0
    for p in paths:
        with open(p) as f:
            found = errors(v, json.load(f))
        for line in found:
            print("%s: %s" % (p, line))
        bad += bool(found)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
