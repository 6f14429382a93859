# SPDX-License-Identifier: MIT
"""only_venv.py VENV DIST... -- makes the fresh venv VENV hold the named
distributions and what they require, and nothing else, by linking their
files from the site-packages of the Python running this script (the
project venv): torch in a new venv without downloading it again.  Run by
tests/e2e/wheel.sh.  Prints each distribution linked."""
import os
import re
import sys
from importlib import metadata


def closure(names):
    seen, todo = {}, list(names)
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional or platform-specific requirement
        seen[key] = dist
        for req in dist.requires or []:
            if ";" in req and "extra ==" in req:
                continue
            m = re.match(r"[A-Za-z0-9_.-]+", req)
            if m:
                todo.append(m.group(0))
    return seen


def main():
    venv, names = sys.argv[1], sys.argv[2:]
    site = os.path.join(venv, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
    if not os.path.isdir(site):
        sys.exit("only_venv: %s is not a venv of this Python" % venv)
    for key, dist in sorted(closure(names).items()):
        tops = set()
        for f in dist.files or []:
            parts = f.parts
            if parts and parts[0] != ".." and not parts[0].startswith("__pycache__"):
                tops.add(parts[0])
        for top in sorted(tops):
            src = os.path.join(str(dist.locate_file("")), top)
            dst = os.path.join(site, top)
            if os.path.exists(src) and not os.path.lexists(dst):
                os.symlink(src, dst)
        print("%s %s" % (dist.metadata["Name"], dist.version))


if __name__ == "__main__":
    main()
