# SPDX-License-Identifier: MIT
"""test_plugin.py -- the pytest plugin (python/trainparity_native) against the real
tool: its checks pass and fail as trainparity-run's do, on fixtures of
fixtures/, and a test whose check does not have the expected outcome fails
with the check's text report as its message; a Runner's timeout stops the
check and the command it runs.  Run by
tests/e2e/pytest_plugin.sh (pytest -p pytester --trainparity-bin ...)."""
import json
import os
import shutil
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def fixture(tmp_path, *names):
    for n in names:
        shutil.copy(os.path.join(ROOT, "fixtures", n), str(tmp_path))


def test_health_passes(trainparity, tmp_path):
    fixture(tmp_path, "health/_health.py", "health/healthy.py")
    report = trainparity.health([sys.executable, "healthy.py"])
    assert report.passed and report.status == 0
    assert report.json["check"] == "health" and report.first_divergence is None
    assert report.text.startswith("run ") and "health: PASS" in report.text


def test_health_fault_fails_where_expected(trainparity, tmp_path):
    fixture(tmp_path, "health/_health.py", "health/exploding.py")
    report = trainparity.health([sys.executable, "exploding.py"], max_grad_norm=100,
                                expect="FAIL")
    assert report.status == 1
    assert report.first_divergence["path"] == "grad_norm"
    assert report.first_divergence["step"] == 4


def test_coverage_fault_fails_where_expected(trainparity, tmp_path):
    fixture(tmp_path, "coverage/cov.py", "coverage/stream_unexpected_id.py")
    report = trainparity.coverage([sys.executable, "stream_unexpected_id.py"],
                                  policy="exactly_once", universe=12, sample_id='batch["id"]',
                                  expect="FAIL")
    assert report.first_divergence["path"] == "coverage.unexpected_id"


def test_unexpected_outcome_fails_with_the_report(pytester):
    """an inner test expects PASS of a run that FAILs: it fails, and its
    message is the check's text report"""
    for n in ("health/_health.py", "health/exploding.py"):
        shutil.copy(os.path.join(ROOT, "fixtures", n), str(pytester.path))
    pytester.makepyfile(test_inner="""
        import os, sys
        def test_inner(trainparity):
            trainparity.health([sys.executable, "exploding.py"], max_grad_norm=100,
                               cwd=os.getcwd())
        """)
    result = pytester.runpytest_subprocess(
        *plugin_args(), "--trainparity-bin", pytester_bin(pytester))
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "trainparity health: FAIL, expected PASS" in out, out
    assert "first failure  step 4  grad_norm" in out, out


def test_refused_options_raise(trainparity, tmp_path):
    from trainparity_native import TrainParityError
    with pytest.raises(TrainParityError, match="refused the options"):
        trainparity.coverage([sys.executable, "x.py"], policy="sometimes")


def test_timeout_stops_the_check_and_its_command(trainparity, tmp_path):
    """a Runner's timeout: the check is told to stop, ends the command it
    runs and runs no other (killed at once, it would leave it running)"""
    import subprocess
    import time
    from trainparity_native import Runner
    (tmp_path / "slow.py").write_text(
        "import os, time\n"
        "open('pids', 'a').write('%d\\n' % os.getpid())\n"
        "time.sleep(120)\n")
    runner = Runner(binary=trainparity.binary, cwd=str(tmp_path), timeout=10)
    with pytest.raises(subprocess.TimeoutExpired):
        runner.run("resume", [sys.executable, "slow.py"])
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 1, ("executions started", pids)  # A only
    deadline = time.time() + 60  # a bound for liveness only
    while time.time() < deadline:
        try:
            os.kill(pids[0], 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    pytest.fail("the command of the stopped check still runs")


def pytester_bin(pytester):
    return pytester._request.config.getoption("trainparity_bin")


def plugin_args():
    """-p for the plugin where no pytest11 entry point registers it (a
    source checkout: python/ on the path; the wheel registers it)."""
    try:
        from importlib.metadata import entry_points
        eps = entry_points()
        eps = eps.select(group="pytest11") if hasattr(eps, "select") else eps.get("pytest11", [])
        if any(ep.value == "trainparity_native.pytest_plugin" for ep in eps):
            return []
    except ImportError:
        pass
    return ["-p", "trainparity_native.pytest_plugin"]
