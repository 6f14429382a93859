#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pytest_plugin.sh -- the pytest plugin of the trainparity_native package
# (python/, on the venv's path by tools/scripts/setup.sh) against the real
# tool, agent and daemon: tests/pytest/test_plugin.py.
. "$(dirname "$0")/lib.sh"
tp_setup daemon agent
: "${TP_PYTHON:?set TP_PYTHON to the project Python}"
root=$(cd "$(dirname "$0")/../.." && pwd)
"$TP_PYTHON" -c 'import trainparity_native.pytest_plugin' 2>err || fail "the trainparity_native package is not on the path: $(cat err)"
PYTHONDONTWRITEBYTECODE=1 "$TP_PYTHON" -m pytest -q -p pytester -p trainparity_native.pytest_plugin -p no:cacheprovider \
    --basetemp "$WORK/pytest" --trainparity-bin "$TP_RUN" "$root/tests/pytest" >out 2>&1 ||
    fail "pytest: $(tail -60 out)"
grep -Eq '^6 passed' out || fail "not every plugin test ran: $(tail -5 out)"
exit 0
