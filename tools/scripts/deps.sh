#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# deps.sh -- puts nng's Debian source into .deps/nng, patched as Debian
# builds it, for the static link (cmake/TPDeps.cmake): Debian's libnng.a is
# not position-independent, so it cannot go into the agent, a shared object.
# The version is the one of libnng-dev when it is installed, so that the
# source and Debian's headers agree.  No root: apt reads a source list and
# keeps its lists in .deps/apt, not the system's.  Then our own patches to
# it (tools/scripts/nng-patches/*.patch, in name order: a fix nng 1.5.2
# lacks), each applied once.  Needs apt-get, dpkg-source (dpkg-dev) and
# patch (which dpkg-dev depends on); re-running it when .deps/nng is there
# and patched does nothing.
set -euo pipefail
cd "$(dirname "$0")/../.."

say() { printf 'deps: %s\n' "$*" >&2; }

# patch_tree DIR: applies each of our patches that DIR lacks; one that
# reverses cleanly is there already.
patch_tree() {
    local p
    for p in tools/scripts/nng-patches/*.patch; do
        patch -d "$1" -p1 -R -s -f --dry-run <"$p" >/dev/null 2>&1 && continue
        patch -d "$1" -p1 -s -f -N --no-backup-if-mismatch <"$p" >/dev/null 2>&1 ||
            { say "cannot apply $p to $1: is it nng 1.5.2?"; exit 1; }
        say "applied $(basename "$p") to $1"
    done
}

dest=.deps/nng
[ -f "$dest/CMakeLists.txt" ] && { patch_tree "$dest"; exit 0; }
for tool in apt-get dpkg-source patch; do
    command -v "$tool" >/dev/null 2>&1 ||
        { say "$tool is missing (Debian: apt-get install dpkg-dev)"; exit 1; }
done

# The deb lines of the system's sources (deb822 or one-line), as deb-src.
uris=() suites=()
for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk '/^Types:.*deb( |$)/{d=1} /^$/{d=0} d&&/^URIs:/{u=$2} d&&/^Suites:/{s=$2; print u, s; d=0}' "$f"
done >.deps.tmp 2>/dev/null || true
[ -f /etc/apt/sources.list ] &&
    awk '$1=="deb"{i=2; if ($2 ~ /^\[/) while ($i !~ /\]$/) i++; if ($2 ~ /^\[/) i++; print $i, $(i+1)}' \
        /etc/apt/sources.list >>.deps.tmp
mkdir -p .deps/apt/lists/partial .deps/apt/cache/archives/partial
: >.deps/apt/sources.list
key=/usr/share/keyrings/debian-archive-keyring.gpg
while read -r uri suite; do
    case "$suite" in *-security|*-updates|*-backports) continue ;; esac
    printf 'deb-src [signed-by=%s] %s %s main\n' "$key" "$uri" "$suite" >>.deps/apt/sources.list
done <.deps.tmp
rm -f .deps.tmp
[ -s .deps/apt/sources.list ] || { say "no Debian source found in /etc/apt"; exit 1; }

apt=(-o Dir::Etc::SourceList="$PWD/.deps/apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
     -o Dir::State::Lists="$PWD/.deps/apt/lists" -o Dir::Cache="$PWD/.deps/apt/cache"
     -o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)")
ver=$(dpkg-query -W -f='${Version}' libnng-dev 2>/dev/null || true)
say "fetching nng${ver:+ $ver}'s Debian source into $dest"
apt-get "${apt[@]}" update -qq
rm -rf .deps/src && mkdir -p .deps/src
(cd .deps/src && apt-get "${apt[@]}" source -qq "nng${ver:+=$ver}" >/dev/null 2>&1) ||
    { say "apt-get source nng failed"; exit 1; }
src=$(find .deps/src -mindepth 1 -maxdepth 1 -type d -name 'nng-*' | head -n 1)
[ -n "$src" ] && [ -f "$src/CMakeLists.txt" ] || { say "no nng source tree in .deps/src"; exit 1; }
patch_tree "$src"
rm -rf "$dest" && mv "$src" "$dest" && rm -rf .deps/src
