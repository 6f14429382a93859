#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# compare_induction.sh -- compare in the induction mode (docs/induction.md):
# C and D digest the state at boundaries, the golden run everything.  A
# change that only the state shows, between boundaries, is named at its
# exact step.  fixtures/compare/ema.py keeps an EMA of its weights in
# buffers, updated outside the optimizer; --ema-fault-at 4 changes its
# warmup, so the average differs while the losses and gradients do not.
# What the script prints without the tool says after which update the
# average first differs; compare in the induction mode (C rerun as C2 with
# full digests over the window) and with --digest full must both name that
# step and the same components.  Unchanged, the script PASSes with light
# steps, and its report says how many steps digested the state.  With
# --ema-noise-at 4 (unseeded noise in the average) C and D differ from each
# other in the state alone: both are rerun (C2, D2) and the ABSTAIN names
# their first difference at its exact step, with --once too (D runs when C
# alone FAILs).  With --ckpt the script resumes
# on its own from the checkpoint it finds: what C saved is moved aside
# before D runs, so D trains from scratch and the check PASSes; a checkpoint
# the golden run left, found by C, is named as the check's ERROR.  record
# digests every tensor unless --digest induction (TRAINPARITY_DIGEST in the
# environment is not read, nor any other check variable), and compare says
# which it was.  Each run
# judged again offline (trainparity-daemon judge) gives its verdict again.
TP_NAME=compare_induction
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${TP_PYTHON:?}
tp_setup daemon agent
cp "$root/fixtures/compare/ema.py" . || fail "cannot copy the fixture"

# the truth, without the agent: the first state whose average differs
env -u LD_PRELOAD "$py" ema.py >clean.txt || fail "clean run failed"
env -u LD_PRELOAD "$py" ema.py --ema-fault-at 4 >fault.txt || fail "faulty run failed"
env -u LD_PRELOAD "$py" ema.py --ema-noise-at 4 >noise1.txt || fail "noisy run failed"
env -u LD_PRELOAD "$py" ema.py --ema-noise-at 4 >noise2.txt || fail "noisy run failed"
truth=$("$py" - <<'PY'
def lines(f):
    return {int(l.split()[1]): (l.split()[3], l.split()[5]) for l in open(f)}
def first(f, g):
    a, b = lines(f), lines(g)
    assert [v[1] for v in a.values()] == [v[1] for v in b.values()], "the losses differ"
    return min(s for s in a if a[s][0] != b[s][0])
print(first("clean.txt", "fault.txt"), first("noise1.txt", "noise2.txt"))
PY
) || fail "cannot read the truth from the script's output"
[ "$truth" = "4 4" ] || fail "the averages first differ in the states after updates $truth, not 4 4"
truth=4

expect_status 0 "$TP_RUN" record --name golden -- "$py" ema.py
expect_status 0 "$TP_RUN" compare --against golden --json pass.json -- "$py" ema.py
expect_grep '^compare: PASS$' "$WORK/out"
expect_grep '^  digests     induction: the model and optimizer state at boundaries \(C at ' "$WORK/out"
grep -q '^  narrowed' "$WORK/out" && fail "a PASS with the state at the end narrowed nothing"

expect_status 1 "$TP_RUN" compare --against golden --json induction.json -- \
    "$py" ema.py --ema-fault-at 4
expect_grep '^compare: FAIL$' "$WORK/out"
expect_grep '^  narrowed    C2 rerun with every tensor digested at steps 1 to 8, ' "$WORK/out"
expect_status 1 "$TP_RUN" compare --against golden --digest full --json full.json -- \
    "$py" ema.py --ema-fault-at 4
grep -q '^  digests' "$WORK/out" && fail "--digest full: a digests line"
expect_status 2 "$TP_RUN" compare --against golden --json noise.json -- \
    "$py" ema.py --ema-noise-at 4
expect_grep '^  narrowed    C2, D2 rerun with every tensor digested at steps 1 to 8, ' "$WORK/out"
# ... and with --once: C alone FAILs, so D runs after all, and the run is
# narrowed and judged as without --once (it FAILed before --once ran D)
expect_status 2 "$TP_RUN" compare --once --against golden --json noise_once.json -- \
    "$py" ema.py --ema-noise-at 4
expect_grep '^  narrowed    C2, D2 rerun with every tensor digested at steps 1 to 8, ' "$WORK/out"
expect_status 0 "$TP_RUN" record --name selfresume -- "$py" ema.py --ckpt ck.pt
rm ck.pt || fail "the golden run saved no checkpoint"
expect_status 0 "$TP_RUN" compare --against selfresume -- "$py" ema.py --ckpt ck.pt
expect_grep '^compare: PASS$' "$WORK/out"
run=$(sed -n 's/^run \([0-9]*\)$/\1/p' "$WORK/out" | head -1)
for role in C D; do
    [ -f ".trainparity/runs/$run/$role/ck.pt" ] || fail "$role's checkpoint was not moved aside"
done
[ -e ck.pt ] && fail "D's checkpoint was left in place"
# A golden run that leaves its checkpoint (record moves nothing): saving
# after every 4th step, it leaves step 8's, and C resuming from it trains
# steps 8 and 9 only.  Without the check, C against G read FAIL at
# model.net.0.weight, step 0 ("initialised or loaded differently"): a
# difference of where C started, not of the script.  Removed, it PASSes.
expect_status 0 "$TP_RUN" record --name stale -- "$py" ema.py --ckpt ck.pt --ckpt-every 4
[ -f ck.pt ] || fail "the golden run left no checkpoint"
expect_status 3 "$TP_RUN" compare --against stale -- "$py" ema.py --ckpt ck.pt --ckpt-every 4
expect_grep '^compare: ERROR$' "$WORK/out"
expect_grep "^  C \(this run\) loaded .*/ck.pt, a checkpoint it did not write and the golden run did not load \(the golden run wrote it" "$WORK/out"
rm ck.pt || fail "no checkpoint to remove"
expect_status 0 "$TP_RUN" compare --against stale -- "$py" ema.py --ckpt ck.pt --ckpt-every 4
expect_grep '^compare: PASS$' "$WORK/out"
expect_status 64 "$TP_RUN" compare --against golden --digest some -- "$py" ema.py
expect_grep "wants induction or full" "$WORK/err"
# record digests everything unless --digest induction says otherwise: a
# TRAINPARITY_DIGEST=induction left in the environment does not make a
# golden run light; --digest induction does, and compare says so.  Nor does
# any other check variable left there reach an execution: the interruption
# resume arms for I would have ended the golden run, and C, at their first
# save from step 2 on, and the record would have measured update norms
left=(env TRAINPARITY_DIGEST=induction TRAINPARITY_INTERRUPT_AT=2 TRAINPARITY_UPDATE_NORM=1)
expect_status 0 "${left[@]}" "$TP_RUN" record --name envset -- "$py" ema.py
expect_status 0 "${left[@]}" "$TP_RUN" compare --once --against envset -- "$py" ema.py
expect_grep '; G every tensor at every step$' "$WORK/out"
expect_status 0 "${left[@]}" "$TP_RUN" record --name envsave -- "$py" ema.py --ckpt envsave.pt
expect_grep '^  9 ' "$WORK/out"
! grep -Eq '^  [0-9]+ +[^ ]+ +1 +[^ ]+ +[0-9]' "$WORK/out" ||
    fail "the record measured update norms: $(grep -E '^  [0-9]' "$WORK/out")"
rm -f envsave.pt
expect_status 0 "${left[@]}" "$TP_RUN" compare --once --against envsave -- "$py" ema.py --ckpt envsave.pt
expect_grep '^compare: PASS$' "$WORK/out"
expect_grep 'executions  G 10 steps, C 10 steps$' "$WORK/out"
expect_status 0 "$TP_RUN" record --digest induction --name light -- "$py" ema.py
expect_status 0 "$TP_RUN" compare --once --against light -- "$py" ema.py
expect_grep '; G at [0-9]+ of 10 steps \(recorded in the induction mode' "$WORK/out"
expect_status 64 "$TP_RUN" record --digest some -- "$py" ema.py
expect_grep "record: --digest wants full or induction, not 'some'" "$WORK/err"

for f in pass.json induction.json full.json noise.json noise_once.json; do
    "$py" "$root/tests/e2e/report_schema.py" "$f" >"$f.schema" 2>&1 ||
        fail "$f does not follow docs/report-schema.json: $(head -20 "$f.schema")"
done
# judged again offline, each run gives its verdict again: the narrowed
# ones from their reruns (C2, D2), which the database holds
for f in pass:0 induction:1 full:1 noise:2 noise_once:2; do
    expect_judged_again "${f%%:*}.json" "${f##*:}"
done
"$py" - "$truth" <<'PY' || fail "reports: $(cat pass.json induction.json full.json)"
import json, sys

truth = int(sys.argv[1])
ok, ind, full = (json.load(open(f)) for f in ("pass.json", "induction.json", "full.json"))
ev = ok["evidence"]["induction"]
# C and D: step 0 (the first of the process) and 9 (the golden run's last)
# whole, 1 to 8 light
assert ev["C"] == {"full_steps": 2, "steps": 10} and ev["D"] == ev["C"], ev
assert ev["narrowed"] is None and ev["unseen"] is None and ev["state_last"] is None, ev
for r in ind, full:
    fd = r["first_divergence"]
    assert r["outcome"] == "FAIL", r["outcome"]
    assert (fd["between"], fd["path"], fd["step"]) == ("G-C", "model.ema_0_weight", truth), fd
    assert not [d for d in r["divergences"] if not d["path"].startswith("model.ema_")], r
assert ind["divergences"] == full["divergences"], (ind["divergences"], full["divergences"])
# the explanation names the buffer, not "the weights": only the EMA differs
for r in ind, full:
    upd = [w["text"] for w in r["explanation"] if w["kind"] == "update"]
    assert len(upd) == 1 and "model.ema_0_weight differs after it" in upd[0], r["explanation"]
    assert "everything compared at step %d matched" % (truth - 1) in upd[0], upd
assert full["evidence"]["induction"] is None, full["evidence"]["induction"]
ev = ind["evidence"]["induction"]
assert ev["narrowed"] == {"from": 1, "to": 8, "reruns": ["C2"]}, ev
assert ev["unseen"] is None, ev
assert ev["C"] == {"full_steps": 10, "steps": 10}, ev
roles = [e["role"] for e in ind["evidence"]["executions"]]
assert roles == ["G", "C2", "D"], roles
for f in "noise.json", "noise_once.json":
    noise = json.load(open(f))
    fd = noise["first_divergence"]
    assert noise["outcome"] == "ABSTAIN", (f, noise["outcome"])
    assert (fd["between"], fd["path"], fd["step"]) == ("C-D", "model.ema_0_weight", 4), (f, fd)
    ev = noise["evidence"]["induction"]
    assert ev["narrowed"] == {"from": 1, "to": 8, "reruns": ["C2", "D2"]}, (f, ev)
    roles = [e["role"] for e in noise["evidence"]["executions"]]
    assert roles == ["G", "C2", "D2"], (f, roles)
    assert noise["evidence"]["determinism"] == "checked", f
PY
exit 0
