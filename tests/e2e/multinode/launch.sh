#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# launch.sh SCRIPT [ARGS...] -- the job: torchrun on both test hosts, two
# ranks each, meeting at a c10d rendezvous on host0.  It is what srun or
# pdsh does for a real job: the same command on every host, the
# environment carried (so the agents on host1 get the daemon's network URL
# and token from trainparity-run).  Exits with the first failing status.
# Told to stop (SIGTERM, SIGINT, SIGHUP), it tells both launchers, as srun
# does.  With MN_PIDNS=1, each host's torchrun runs in a pid namespace of
# its own, as in a container per host: the launchers are pid 1 on both
# hosts and their ranks have the same pids.  With MN_SPOOL_PRIVATE=1, host1
# gets a spool folder of its own (an empty tmpfs over the shared one): what
# its agents spool there, the tool on host0 never sees.  Needs H1 and TP_PY
# (multinode.sh exports them).
set -u
. "$(dirname "$0")/hosts.sh"
H1=${H1:?}
box=()
[ -n "${MN_PIDNS:-}" ] && box=(unshare --pid --fork --mount-proc)
torchrun=("${box[@]}" "$TP_PY" -m torch.distributed.run --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d
    --rdzv-endpoint 10.77.0.1:29400 --rdzv-id job --max-restarts 0)
if [ -n "${MN_SPOOL_PRIVATE:-}" ]; then
    GLOO_SOCKET_IFNAME=t1 on_host1 unshare --mount sh -c \
        'mount -t tmpfs tmpfs "$TRAINPARITY_SPOOL" && exec "$@"' sh \
        "${torchrun[@]}" --local-addr 10.77.0.2 "$@" &
else
    GLOO_SOCKET_IFNAME=t1 on_host1 "${torchrun[@]}" --local-addr 10.77.0.2 "$@" &
fi
one=$!
GLOO_SOCKET_IFNAME=t0 "${torchrun[@]}" --local-addr 10.77.0.1 "$@" &
zero=$!
# told to stop (the check is), both hosts' launchers are, as srun does
trap 'kill -TERM "$zero" "$one" 2>/dev/null' TERM INT HUP
# (a wait the trap cut short returns above 128 with its launcher still there)
until wait "$zero"; st0=$?; [ "$st0" -le 128 ] || ! kill -0 "$zero" 2>/dev/null; do :; done
until wait "$one"; st1=$?; [ "$st1" -le 128 ] || ! kill -0 "$one" 2>/dev/null; do :; done
[ "$st0" != 0 ] && exit "$st0"
exit "$st1"
