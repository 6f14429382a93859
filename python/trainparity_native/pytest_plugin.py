# SPDX-License-Identifier: MIT
"""pytest_plugin.py -- the `trainparity` fixture.

    def test_resume(trainparity):
        trainparity.resume("python train.py", resume_args="--resume")

Each check runs trainparity-run in the test's own temporary directory and
returns the Report; unless its outcome is the one expected (expect="PASS"
by default; "FAIL" for a test that a fault is caught), the test fails with
the check's text report as its message.  expect=None returns the Report
whatever it says.  The command runs from the directory given as cwd=, else
from the test's temporary directory (copy the script there, or pass
absolute paths).

Options: --trainparity-bin PATH (default: $TRAINPARITY_BIN, then the
package's own trainparity-run, then trainparity-run on PATH)."""
import pytest

from trainparity_native.runner import Runner


def pytest_addoption(parser):
    group = parser.getgroup("trainparity")
    group.addoption("--trainparity-bin", default=None, metavar="PATH",
                    help="the trainparity-run program (default: $TRAINPARITY_BIN, "
                    "then the package's own, then PATH)")


class Checks:
    """The fixture's object: one method per check, each asserting the
    expected outcome."""

    def __init__(self, binary, cwd):
        self.binary = binary
        self.cwd = cwd

    def _check(self, name, cmd, expect, cwd, **opts):
        runner = Runner(binary=self.binary, cwd=str(cwd or self.cwd))
        report = getattr(runner, name)(cmd, **opts)
        if expect is not None and report.outcome != expect:
            pytest.fail("trainparity %s: %s, expected %s\n\n%s%s" %
                        (name, report.outcome, expect, report.text,
                         report.stderr[-2000:] if report.outcome == "ERROR" else ""),
                        pytrace=False)
        return report

    def resume(self, cmd, expect="PASS", cwd=None, **opts):
        return self._check("resume", cmd, expect, cwd, **opts)

    def accum(self, cmd, micro, reference, expect="PASS", cwd=None, **opts):
        return self._check("accum", cmd, expect, cwd, micro=micro, reference=reference, **opts)

    def coverage(self, cmd, policy, expect="PASS", cwd=None, **opts):
        return self._check("coverage", cmd, expect, cwd, policy=policy, **opts)

    def health(self, cmd, expect="PASS", cwd=None, **opts):
        return self._check("health", cmd, expect, cwd, **opts)

    def compare(self, cmd, against, expect="PASS", cwd=None, **opts):
        return self._check("compare", cmd, expect, cwd, against=against, **opts)

    def record(self, cmd, name=None, cwd=None, **opts):
        """records cmd (name="golden" for compare); fails the test unless
        the command and its record succeeded"""
        runner = Runner(binary=self.binary, cwd=str(cwd or self.cwd))
        report = runner.record(cmd, name=name, **opts)
        if report.status != 0:
            pytest.fail("trainparity record exited %d\n\n%s%s" %
                        (report.status, report.text, report.stderr[-2000:]), pytrace=False)
        return report


@pytest.fixture
def trainparity(request, tmp_path):
    """the checks, run in this test's temporary directory"""
    return Checks(request.config.getoption("trainparity_bin"), tmp_path)
