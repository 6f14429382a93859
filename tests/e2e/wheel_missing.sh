#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# wheel_missing.sh -- `pip install .` (here `pip wheel .`, the same build)
# where the build dependencies are out of sight: it stops with one message
# that names each missing Debian package and the commands that install
# them, and never runs sudo (a sudo on PATH that records being called).
# The dependencies are hidden from CMake's searches and pkg-config, not
# removed.
. "$(dirname "$0")/lib.sh"
tp_setup
: "${TP_PYTHON:?set TP_PYTHON to the project Python}"
root=$(cd "$(dirname "$0")/../.." && pwd)

mkdir bin
printf '#!/bin/sh\ntouch %s/sudo-ran\nexit 1\n' "$WORK" >bin/sudo
chmod +x bin/sudo
hide="/usr/include;/usr/include/libxml2;/usr/lib/x86_64-linux-gnu;/lib/x86_64-linux-gnu;/usr/lib;/lib"
PATH="$WORK/bin:$PATH" "$TP_PYTHON" -m pip wheel --no-build-isolation --no-deps \
    -C build-dir="$WORK/build" -C cmake.define.CMAKE_IGNORE_PATH="$hide" \
    -C cmake.define.PKG_CONFIG_EXECUTABLE=/nonexistent -C cmake.define.TP_NNG_SOURCE="$WORK/no-nng" \
    -w "$WORK/dist" "$root" >out 2>&1 && fail "pip wheel succeeded with the dependencies hidden"
[ -e sudo-ran ] && fail "the build ran sudo"
ls "$WORK"/dist/*.whl >/dev/null 2>&1 && fail "a wheel was written"
grep -q 'TrainParity cannot be built here' out || fail "no clear message: $(tail -40 out)"
for deb in libmsgpack-dev libxxhash-dev libjansson-dev libsqlite3-dev libxml2-dev zlib1g-dev \
    liblzma-dev libicu-dev; do
    grep -q "^ *$deb  (" out || fail "the message does not name $deb: $(tail -40 out)"
done
grep -q 'apt-get install -y --no-install-recommends libmsgpack-dev' out ||
    fail "the message gives no apt-get command: $(tail -40 out)"
grep -q 'tools/scripts/deps.sh' out || fail "the message does not say how to get nng's source"
exit 0
