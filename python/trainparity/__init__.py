# SPDX-License-Identifier: MIT
"""trainparity -- run TrainParity's checks from Python.

    from trainparity import Runner
    report = Runner().resume(["python", "train.py"], resume_args="--resume")
    assert report.outcome == "PASS", report.text

Each check runs the C tool (`trainparity-run CHECK ... --json F -- CMD`) and
returns a Report: the parsed JSON report (docs/report-schema.md), the text
report and the exit status.  The pytest plugin (trainparity.pytest_plugin)
gives tests a `trainparity` fixture built on this."""
from trainparity.runner import Report, Runner, TrainParityError

__all__ = ["Report", "Runner", "TrainParityError"]
