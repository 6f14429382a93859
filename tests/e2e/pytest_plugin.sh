#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pytest_plugin.sh -- the pytest plugin of the trainparity package
# (python/, installed into the venv by tools/setup.sh) against the real
# tool, agent and daemon: tests/pytest/test_plugin.py.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent
: "${TP_PYTHON:?set TP_PYTHON to the project Python}"
root=$(cd "$(dirname "$0")/../.." && pwd)
"$TP_PYTHON" -c 'import trainparity.pytest_plugin' 2>err || fail "the trainparity package is not installed: $(cat err)"
PYTHONDONTWRITEBYTECODE=1 "$TP_PYTHON" -m pytest -q -p pytester -p no:cacheprovider \
    --basetemp "$WORK/pytest" --trainparity-bin "$TP_RUN" "$root/tests/pytest" >out 2>&1 ||
    fail "pytest: $(tail -60 out)"
grep -Eq '^5 passed' out || fail "not every plugin test ran: $(tail -5 out)"
exit 0
