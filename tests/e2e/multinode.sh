#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# multinode.sh -- checks of a job on two hosts: two test hosts made of
# namespaces (multinode/hosts.sh), torchrun on both with two ranks each and
# a c10d rendezvous on host0 (multinode/launch.sh, which carries the
# environment to host1 as srun does), the check started on host0 with
# `--listen tcp://10.78.0.1:29600`, so that the agents on host1 reach its
# daemon over the network with the token the environment carries.
#   coverage: exactly_once PASS, also with each host in a pid namespace of
#   its own (pids that collide); no DistributedSampler FAIL (duplicates);
#   health:   replicas PASS; host1's replica drifting FAIL at its gradient;
#   host1 cut off from the daemon after step 3 (its daemon link down, the
#   training link up): with a spool folder the hosts share, what host1's
#   agents spooled is read after the command (PASS); with a folder of
#   host1's own, ERROR naming host1, the rank and where the spool is;
#   resume of a DDP job: ABSTAIN for DDP's reduction order, a scheduler not
#   restored FAIL at scheduler.*;
#   resume's I ended on both hosts, host1's rank blocked in read(2);
#   a PyTorchJob (multinode/pods.py): host1's pod follows the check with
#   `trainparity-run join`, on a disk of its own: resume PASS, each host's
#   checkpoints moved aside on its own disk; a scheduler not restored FAIL;
#   a daemon already serving without the network URL is not taken for one.
# Everything happens in namespaces of the test's own (network, mount, UTS):
# the addresses are those of its veth pairs, torn down with it.  Skipped
# (77) where namespaces cannot be made.
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${TP_MN_INSIDE:-}" ]; then
    for tool in ip unshare nsenter hostname; do
        command -v "$tool" >/dev/null || { echo "SKIP: no $tool"; exit 77; }
    done
    unshare --net --mount --uts true 2>/dev/null ||
        { echo "SKIP: cannot make network, mount and UTS namespaces here"; exit 77; }
    TP_MN_INSIDE=1 exec unshare --net --mount --uts --propagation private bash "$0" "$@"
fi
tp_setup daemon agent
export TP_PY=${TP_PYTHON:-$(dirname "$here")/../.venv/bin/python}
. "$here/multinode/hosts.sh"
hosts_up || fail "cannot make the two test hosts"
export H1
trap 'hosts_down; tp_cleanup' EXIT
cp "$here/multinode/train.py" "$here"/../../fixtures/coverage/cov.py \
    "$here"/../../fixtures/coverage/ranks4.py "$here"/../../fixtures/coverage/ranks2_no_sampler.py .
net=(--listen tcp://10.78.0.1:29600)
job=(bash "$here/multinode/launch.sh")

# check WANT CHECK ARGS...: runs the check over the job, within a liveness
# bound (a check told to stop runs no further execution: SIGKILL only if
# the command will not end), and wants exit status WANT.  The test's own
# bound, in CMakeLists.txt, is above the time the checks take plus one such
# bound: the first check that overruns fails the test, which says where.
check() {
    local want=$1 check=$2
    shift 2
    expect_status "$want" timeout -k 30 300 "$TP_RUN" "$check" "${net[@]}" "$@"
}

check 0 coverage --policy exactly_once -- "${job[@]}" ranks4.py
expect_grep '^coverage: PASS' "$WORK/out"
expect_grep 'world size 4' "$WORK/out"
# ... with each host's job in a pid namespace of its own (a container per
# host): both launchers are pid 1, and every process is still told apart
# (two launchers and four ranks), as the agents tag pids of a pid space that
# is not the tool's.
MN_PIDNS=1 check 0 coverage --policy exactly_once -- "${job[@]}" ranks4.py
expect_grep '^coverage: PASS' "$WORK/out"
"$TP_PY" - "$WORK/.trainparity/runs.db" <<'PY' || fail "processes of a pid space each: see above"
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
procs = db.execute("SELECT pid, rank FROM processes WHERE exec_id ="
                   " (SELECT MAX(id) FROM executions)").fetchall()
assert len(procs) == 6, ("want 2 launchers and 4 ranks, stored", procs)
assert sorted(r for _, r in procs) == [-1, -1, 0, 1, 2, 3], procs
PY
check 1 coverage --policy no_cross_rank_overlap -- "${job[@]}" ranks2_no_sampler.py
expect_grep '^coverage: FAIL' "$WORK/out"
expect_grep 'coverage.cross_rank_duplicate' "$WORK/out"

check 0 health -- "${job[@]}" train.py
expect_grep '^health: PASS' "$WORK/out"
expect_grep '3 other ranks compared with rank 0' "$WORK/out"
check 1 health -- "${job[@]}" train.py --drift
expect_grep '^health: FAIL' "$WORK/out"
expect_grep 'first failure +step 2 +grad\.0\.weight' "$WORK/out"
drifted=$(sed -n 's/^drift on rank \([0-9]*\)$/\1/p' "$WORK/out")
[ -n "$drifted" ] || fail "the job did not say which rank drifted: $(cat "$WORK/out")"
expect_grep "rank $drifted's differs from rank 0's" "$WORK/out"
# ... naming the hosts: the drifting rank is host1's, rank 0 host0's
expect_grep "of rank $drifted on host host1 differs from rank 0's on host host0" "$WORK/out"

# Host1 cut off after step 3; the spool folder shared: nothing is missing.
check 0 health -- "${job[@]}" train.py --cut 3
expect_grep '^health: PASS' "$WORK/out"
ls "$WORK"/.trainparity/spool/done/*.spool >/dev/null 2>&1 ||
    fail "host1's agents spooled nothing to the shared folder"
on_host1 ip link set d1 up || fail "cannot bring host1's daemon link up again"

# ... and a spool folder of host1's own: the events are on a host the tool
# cannot see.
MN_SPOOL_PRIVATE=1 check 3 health -- "${job[@]}" train.py --cut 3
expect_grep '^health: ERROR' "$WORK/out"
expect_grep "process [0-9]+ \(rank [0-9]\) on host host1 ended without reporting its last events" \
    "$WORK/out"
expect_grep "host1:$WORK/\.trainparity/spool/[0-9]+-[0-9]+\.spool" "$WORK/out"

# ... and cut off before the job starts: host1's ranks never reached the
# daemon at all, which the world size the other ranks were launched in shows.
on_host1 ip link set d1 down || fail "cannot take host1's daemon link down"
MN_SPOOL_PRIVATE=1 check 3 health -- "${job[@]}" train.py
expect_grep '^health: ERROR' "$WORK/out"
expect_grep "no event from rank [0-3], [0-3] of the 4 ranks its processes were launched in" \
    "$WORK/out"
on_host1 ip link set d1 up || fail "cannot bring host1's daemon link up again"

# A DDP job's resume across the two hosts: the clean one ABSTAINs at the
# gradients of R's first step, explained as DDP's reduction order (four
# ranks: docs/resume.md), and a scheduler not restored FAILs at its step.
cp "$here"/../../fixtures/resume/_ddp.py "$here"/../../fixtures/resume/ddp4_full_state.py \
    "$here"/../../fixtures/resume/ddp4_scheduler_not_restored.py .
check 2 resume --resume-args --resume -- "${job[@]}" ddp4_full_state.py
expect_grep '^resume: ABSTAIN' "$WORK/out"
expect_grep 'grad\.' "$WORK/out"
expect_grep '_rebuild_buckets' "$WORK/out"
check 1 resume --resume-args --resume -- "${job[@]}" ddp4_scheduler_not_restored.py
expect_grep '^resume: FAIL' "$WORK/out"
expect_grep 'scheduler\.last_epoch' "$WORK/out"

# Resume's I ends on both hosts, host1's blocked rank too (multinode/blocked.py);
# the bound is for liveness only, the blocked rank would wait for ever.
cp "$here/multinode/blocked.py" .
check 0 resume --at 2 -- "${job[@]}" blocked.py
expect_grep '^resume: PASS' "$WORK/out"
blocked=$(sed -n 's/^blocked rank \([0-9]*\)$/\1/p' "$WORK/out" | sort -u)
[ -n "$blocked" ] || fail "no rank said it blocked: $(cat "$WORK/out")"
"$TP_PY" - "$WORK/.trainparity/runs.db" "$blocked" <<'PY' || fail "I's end: see above"
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
(iexec, status), = db.execute(
    "SELECT id, exit_status FROM executions WHERE role = 'I' ORDER BY id DESC LIMIT 1").fetchall()
assert status == 0, ("I's exit", status)
ended = dict(db.execute("SELECT rank, bye_reason FROM processes WHERE exec_id = ? AND rank >= 0",
                        (iexec,)))
for r in (0, int(sys.argv[2])):
    assert ended.get(r) == "interrupt", ("rank", r, "of I ended with", ended.get(r), ended)
PY

# A PyTorchJob: the operator starts every pod with its own command and
# environment, so no launcher of host0's reaches host1.  host0's pod runs
# the check; host1's runs `trainparity-run join`, which runs there each
# execution's command (multinode/pods.py: a checkpoint per rank on its
# host's own disk, resumed when present) and moves aside what it saved
# there when the check does.  host1's disk is its own: a tmpfs over the
# working folder, in a mount namespace of its own, as a pod's volume; the
# operator's variables make torchrun's static rendezvous; the token is the
# job's secret, in both pods' environment.
TRAINPARITY_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
export TRAINPARITY_TOKEN
pod_env() { # pod_env NODE_RANK ADDR IFACE: what the operator sets in a pod
    echo PET_NNODES=2 PET_NODE_RANK="$1" PET_MASTER_ADDR=10.77.0.1 PET_MASTER_PORT=29500 \
        PET_LOCAL_ADDR="$2" GLOO_SOCKET_IFNAME="$3"
}
# pytorchjob WANT ARGS...: resume on host0's pod (exit WANT) while host1's
# pod joins; host1's exit status and the files it moved aside are in
# pod1.status and pod1.out.
pytorchjob() {
    local want=$1 joined
    shift
    # shellcheck disable=SC2046,SC2016
    on_host1 env $(pod_env 1 10.77.0.2 t1) unshare --mount sh -c \
        'mount -t tmpfs tmpfs "$PWD" && cd "$PWD" && cp "$1" . || exit 9
         timeout -k 30 300 "$2" join --wait 120 "$3"; st=$?
         find .trainparity/runs -type f | sort; exit $st' \
        sh "$here/multinode/pods.py" "$TP_RUN" tcp://10.78.0.1:29600 \
        >"$WORK/pod1.out" 2>"$WORK/pod1.err" &
    joined=$!
    rm -rf ckpt
    # shellcheck disable=SC2046
    expect_status "$want" env $(pod_env 0 10.77.0.1 t0) timeout -k 30 300 "$TP_RUN" resume "${net[@]}" \
        -- "$TP_PY" -m torch.distributed.run --nproc-per-node 1 --max-restarts 0 pods.py "$@"
    wait "$joined"
    echo $? >"$WORK/pod1.status"
}
cp "$here/multinode/pods.py" .
pytorchjob 0
expect_grep '^resume: PASS' "$WORK/out"
[ "$(cat "$WORK/pod1.status")" = 0 ] ||
    fail "host1's join exited $(cat "$WORK/pod1.status"): $(cat "$WORK/pod1.err")"
# host1 moved its own rank's checkpoints of A and B aside, on its disk:
# without that, its rank of B would have resumed from A's and B differed.
for role in A B; do
    expect_grep "^\.trainparity/runs/[0-9]+/$role/ckpt/rank1\.pt$" "$WORK/pod1.out"
done
[ -e ckpt/rank1.pt ] && fail "host1's checkpoint is on host0's disk"
"$TP_PY" - "$WORK/.trainparity/runs.db" <<'PY' || fail "the pods' executions: see above"
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
run, = db.execute("SELECT MAX(id) FROM runs").fetchone()
for role, in db.execute("SELECT role FROM executions WHERE run_id = ?", (run,)).fetchall():
    ranks = sorted(r for r, in db.execute(
        "SELECT rank FROM processes p JOIN executions e ON p.exec_id = e.id"
        " WHERE e.run_id = ? AND e.role = ? AND rank >= 0", (run, role)))
    assert ranks == [0, 1], (role, "ranks stored", ranks)
PY
pytorchjob 1 --no-sched
expect_grep '^resume: FAIL' "$WORK/out"
expect_grep 'scheduler\.last_epoch' "$WORK/out"
[ "$(cat "$WORK/pod1.status")" = 0 ] ||
    fail "host1's join exited $(cat "$WORK/pod1.status"): $(cat "$WORK/pod1.err")"
unset TRAINPARITY_TOKEN

# A private daemon that serves without the network URL is not taken for
# one: --listen says so instead of handing host1 a URL nobody listens at.
"$TP_DAEMON" serve --db "$WORK/.trainparity/runs.db" \
    --listen "ipc://$WORK/.trainparity/ingest.ipc" 2>>"$WORK/serve.log" &
serving=$!
wait_for_file "$WORK/.trainparity/ingest.ipc.ctl" 30
expect_status 3 timeout 300 "$TP_RUN" record "${net[@]}" -- true
expect_grep "already serves other commands" "$WORK/err"
kill "$serving"
timeout 60 tail --pid="$serving" -f /dev/null || fail "the daemon did not end on SIGTERM"
wait "$serving"
expect_no_daemon
