# SPDX-License-Identifier: MIT
"""trainparity_native -- run TrainParity's checks from Python.

    from trainparity_native import Runner
    report = Runner().resume(["python", "train.py"], resume_args="--resume")
    assert report.outcome == "PASS", report.text

Each check runs the C tool (`trainparity-run CHECK ... --json F -- CMD`) and
returns a Report: the parsed JSON report (docs/report-schema.md), the text
report and the exit status.  The pytest plugin
(trainparity_native.pytest_plugin)
gives tests a `trainparity` fixture built on this."""
from trainparity_native._programs import version as _version
from trainparity_native.runner import Report, Runner, TrainParityError

__version__ = _version()
__all__ = ["Report", "Runner", "TrainParityError", "__version__"]
