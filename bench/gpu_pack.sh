#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gpu_pack.sh BUILD -- packs into .gpu/ at the repository root (ignored by
# git) what a GPU machine without this machine's packages needs to run
# BUILD's tools, so that carrying .gpu alone is enough there:
#   .gpu/build/bin, .gpu/build/lib  trainparity-run, trainparity-daemon,
#                    libtpagent.so and, when built, libtpagent_cuda.so
#   .gpu/lib         every shared library those (and xmllint) link outside
#                    glibc, libstdc++, libgcc and the dynamic loader (ldd's
#                    whole tree), the real files under the names the
#                    binaries ask for; one over 4 MiB xz-compressed as
#                    NAME.xz (ICU's data: 30 MiB, 7 packed)
#   .gpu/bin/xmllint fixture.sh checks the JUnit reports with it
# There: bash bench/gpu_check.sh .gpu/build OUTDIR.  Prints what it copied
# and the total size, which must stay well under the 64 MiB a carry holds.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 1 ] || { echo "usage: gpu_pack.sh BUILD" >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 2
gpu=$root/.gpu
limit=$((64 << 20))

rm -rf "$gpu" && mkdir -p "$gpu/build/bin" "$gpu/build/lib" "$gpu/lib" "$gpu/bin" || exit 1
bins=()
for f in bin/trainparity-run bin/trainparity-daemon lib/libtpagent.so lib/libtpagent_cuda.so; do
    if [ ! -e "$build/$f" ]; then
        case $f in
        lib/libtpagent_cuda.so) echo "note: $build/$f is not built (no device digests there)" ;;
        *) echo "gpu_pack: $build/$f is not built" >&2; exit 1 ;;
        esac
        continue
    fi
    cp -L "$build/$f" "$gpu/build/$f" || exit 1
    bins+=("$build/$f")
done
if xl=$(command -v xmllint); then
    cp -L "$xl" "$gpu/bin/xmllint" && bins+=("$xl")
else
    echo "note: no xmllint here to pack"
fi

# glibc's libraries, libstdc++, libgcc and the loader: the GPU machine's own
keep() {
    case $1 in
    linux-vdso.so* | linux-gate.so* | ld-linux*.so* | libc.so* | libm.so* | libmvec.so* | \
        libpthread.so* | libdl.so* | librt.so* | libutil.so* | libresolv.so* | libnsl.so* | \
        libanl.so* | libBrokenLocale.so* | libstdc++.so* | libgcc_s.so*) return 1 ;;
    esac
    return 0
}

status=0
for b in "${bins[@]}"; do
    while read -r name arrow path _; do
        [ "$arrow" = "=>" ] || continue
        keep "$name" || continue
        if [ "$path" = "not" ]; then
            echo "gpu_pack: $b: $name not found here" >&2
            status=1
            continue
        fi
        [ -e "$gpu/lib/$name" ] || [ -e "$gpu/lib/$name.xz" ] && continue
        real=$(readlink -f "$path") || { status=1; continue; }
        size=$(stat -c %s "$real")
        # the large ones (ICU's data: 30 MiB) compressed; gpu_check.sh unpacks them
        if [ "$size" -gt $((4 << 20)) ] && command -v xz >/dev/null; then
            xz -T0 -c "$real" >"$gpu/lib/$name.xz" || status=1
        else
            cp "$real" "$gpu/lib/$name" || status=1
        fi
        printf '  %-28s %8d KiB  %s\n' "$name" $((size / 1024)) "$real"
    done < <(ldd "$b")
done

total=$(du -sb "$gpu" | cut -f1)
printf 'gpu_pack: %s: %d files, %.1f MiB in all (the build folder itself: %.1f MiB)\n' \
    "$gpu" "$(find "$gpu" -type f | wc -l)" "$(echo "$total / 1048576" | bc -l)" \
    "$(echo "$(du -sb "$build" | cut -f1) / 1048576" | bc -l)"
if [ "$total" -ge $((limit * 3 / 4)) ]; then
    echo "gpu_pack: over 48 MiB: too close to the 64 MiB a carry may hold" >&2
    status=1
fi
echo "carry .gpu (alone: it holds the build's programs); there run:"
echo "  bash bench/gpu_check.sh .gpu/build \$OUT"
exit $status
