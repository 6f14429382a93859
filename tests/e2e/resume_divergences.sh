#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# resume_divergences.sh -- the JSON report lists every component that differs
# at the first divergent step, with both values, and for tensors whose values
# were captured (--capture values) the largest element-wise errors, which
# this test recomputes from the captured bytes.  model_not_restored.py: at
# step 4 every model tensor, the loss and every gradient differ.
TP_NAME=resume_divergences
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${TP_PYTHON:?}
tp_setup daemon agent
cp "$root"/fixtures/resume/*.py . || fail "cannot copy the fixtures"

expect_status 1 "$TP_RUN" resume --capture values --resume-args --resume --json report.json \
    -- "$py" model_not_restored.py
expect_grep '^first divergence  step 4 \(R.s step 0\)  model\.0\.weight$' "$WORK/out"
expect_grep '^    captured values    max \|error\| [0-9.e-]+, max relative error [0-9.e-]+$' "$WORK/out"
expect_grep '^    [0-9]+ other components differ at this step: model\.0\.bias, ' "$WORK/out"
"$py" - "$WORK/.trainparity/runs.db.blobs" <<'PY' || fail "report: $(cat report.json)"
import json, os, sys
import numpy as np

blobs = sys.argv[1]
r = json.load(open("report.json"))
fd, divs = r["first_divergence"], r["divergences"]
# the first divergence comes first, with the same values
assert divs and divs[0]["path"] == fd["path"], (fd, divs[:1])
assert divs[0]["A"] == fd["A"] and divs[0]["R"] == fd["R"], divs[0]
paths = [d["path"] for d in divs]
want = ["model.0.weight", "model.0.bias", "model.3.weight", "model.3.bias", "loss"]
want += ["grad.0.weight", "grad.0.bias", "grad.3.weight", "grad.3.bias"]
for p in want:
    assert p in paths, (p, paths)
assert len(paths) == len(set(paths)), paths


def values(v):
    h = v["digest"]
    raw = open(os.path.join(blobs, h[:2], h[2:]), "rb").read()
    dt = np.dtype(v["dtype"].replace("torch.", "")).newbyteorder("<")
    return np.frombuffer(raw, dtype=dt).astype(np.float64).reshape(v["shape"])


checked = 0
for d in divs:
    a, b = d["A"], d["R"]
    assert a is not None and b is not None, d
    if a["kind"] != "tensor":
        # a value has no element-wise errors
        assert "max_abs_error" not in d and "max_rel_error" not in d, d
        assert a["value"] != b["value"], d
        continue
    va, vb = values(a), values(b)
    err = np.abs(vb - va)
    nz = va != 0
    abs_err, rel_err = err.max(), (err[nz] / np.abs(va[nz])).max()
    assert abs_err > 0, d
    assert abs(d["max_abs_error"] - abs_err) <= 1e-12 * abs_err, (d, abs_err)
    assert abs(d["max_rel_error"] - rel_err) <= 1e-12 * rel_err, (d, rel_err)
    checked += 1
assert checked >= 8, (checked, divs)
PY
exit 0
