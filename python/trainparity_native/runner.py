# SPDX-License-Identifier: MIT
"""runner.py -- trainparity-run as a Python call: each check's options as
keyword arguments, the command as a list (or a string, split as a shell
would), the report parsed."""
import json
import os
import shlex
import shutil
import subprocess
import tempfile

from trainparity_native._programs import program

# exit status -> outcome (README, "Exit status")
OUTCOMES = {0: "PASS", 1: "FAIL", 2: "ABSTAIN", 3: "ERROR"}


class TrainParityError(Exception):
    """trainparity-run could not judge: a usage error, a missing tool, or
    a check that ended without a report."""


def _report_text(out):
    """the text report at the end of trainparity-run's stdout: from its
    last "run N" line on (what the command printed comes before it)"""
    lines = out.splitlines(True)
    for i in range(len(lines) - 1, -1, -1):
        w = lines[i].split()
        if len(w) == 2 and w[0] == "run" and w[1].isdigit():
            return "".join(lines[i:])
    return out


class Report:
    """A check's result: outcome ("PASS", "FAIL", "ABSTAIN", "ERROR"), the
    JSON report as a dict (json), the text report (text), all that
    trainparity-run printed (output: the command's own output, then the
    report), its stderr and exit status."""

    def __init__(self, status, json_report, output, stderr, argv):
        self.status = status
        self.json = json_report
        self.output = output
        self.text = _report_text(output)
        self.stderr = stderr
        self.argv = argv

    @property
    def outcome(self):
        return self.json.get("outcome") or OUTCOMES.get(self.status, "ERROR")

    @property
    def first_divergence(self):
        """the first divergence ({step, path, ...}) or None"""
        return self.json.get("first_divergence")

    @property
    def passed(self):
        return self.outcome == "PASS"

    def __repr__(self):
        fd = self.first_divergence or {}
        at = " at %s" % fd["path"] if fd.get("path") else ""
        return "<Report %s %s%s>" % (self.json.get("check", "?"), self.outcome, at)


def _words(cmd):
    if isinstance(cmd, str):
        return shlex.split(cmd)
    return [str(w) for w in cmd]


def _options(opts):
    """keyword arguments as options: resume_args="x" -> --resume-args x;
    True -> a flag; False and None -> left out; a list -> repeated"""
    out = []
    for key, value in opts.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            out.append(flag)
        elif isinstance(value, (list, tuple)):
            for v in value:
                out += [flag, str(v)]
        else:
            out += [flag, str(value)]
    return out


class Runner:
    """Runs trainparity-run: the program named by binary, else the
    TRAINPARITY_BIN environment variable, else the one installed with this
    package (the wheel's), else trainparity-run on PATH.
    cwd is where the checks run (their .trainparity/ folder goes there);
    env adds to the environment; timeout (seconds, None: none) bounds each
    check: past it the check is sent SIGTERM, which it passes on to the
    command and stops at (no further execution, no verdict), SIGKILL only
    if it has not ended STOP_WAIT seconds later, and subprocess.TimeoutExpired
    is raised."""

    STOP_WAIT = 30

    def __init__(self, binary=None, cwd=None, env=None, timeout=None):
        self.binary = (binary or os.environ.get("TRAINPARITY_BIN") or program("trainparity-run") or
                       shutil.which("trainparity-run"))
        self.cwd = cwd
        self.env = env
        self.timeout = timeout

    def run(self, check, cmd, **opts):
        """trainparity-run CHECK [options] --json F -- CMD; the Report.
        Raises TrainParityError when the tool is missing, the options are
        refused (exit 64) or no report was written."""
        if not self.binary or not os.access(self.binary, os.X_OK):
            raise TrainParityError("trainparity-run not found: install the trainparity-native "
                                   "wheel, or put trainparity-run on PATH, or set TRAINPARITY_BIN")
        env = dict(os.environ, **(self.env or {}))
        with tempfile.TemporaryDirectory(prefix="trainparity-") as tmp:
            path = os.path.join(tmp, "report.json")
            argv = [self.binary, check] + _options(opts) + ["--json", path, "--"] + _words(cmd)
            p = self._run(argv, env)
            if p.returncode == 64:
                raise TrainParityError("trainparity-run refused the options: %s" % p.stderr.strip())
            try:
                with open(path) as f:
                    report = json.load(f)
            except (OSError, ValueError) as e:
                raise TrainParityError("%s wrote no report (exit %d: %s): %s" %
                                       (check, p.returncode, e, p.stderr.strip()[-2000:]))
        return Report(p.returncode, report, p.stdout, p.stderr, argv)

    def _run(self, argv, env):
        """argv run to its end, or stopped past self.timeout; a
        CompletedProcess.  Killed at once (subprocess.run's way), the tool
        would leave the training command it runs going on."""
        p = subprocess.Popen(argv, cwd=self.cwd, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True)
        try:
            out, err = p.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            out, err = self._stop(p)
            raise subprocess.TimeoutExpired(argv, self.timeout, output=out, stderr=err)
        except BaseException:  # ^C in pytest: the check is told to stop, and waited for
            self._stop(p)
            raise
        return subprocess.CompletedProcess(argv, p.returncode, out, err)

    def _stop(self, p):
        """SIGTERM to p, SIGKILL if it has not ended STOP_WAIT s later;
        what it printed."""
        p.terminate()
        try:
            return p.communicate(timeout=self.STOP_WAIT)
        except subprocess.TimeoutExpired:
            p.kill()
            return p.communicate()

    def resume(self, cmd, **opts):
        """resume parity (at=K, resume_cmd=..., resume_args=..., sample_id=...,
        rtol=, atol=, capture="values"; once=True: B only when R does not
        simply match A)"""
        return self.run("resume", cmd, **opts)

    def accum(self, cmd, micro, reference, **opts):
        """gradient-accumulation parity: cmd runs micro micro-batches per
        update, reference (a shell command line) one full batch"""
        if not isinstance(reference, str):
            reference = " ".join(shlex.quote(w) for w in _words(reference))
        return self.run("accum", cmd, micro=micro, reference=reference, **opts)

    def coverage(self, cmd, policy, **opts):
        """sample coverage under policy (universe=, padding=, epochs=, ...)"""
        return self.run("coverage", cmd, policy=policy, **opts)

    def health(self, cmd, **opts):
        """training health (max_grad_norm=, max_skipped=, min_loss_decrease=,
        lr_expect=, every=)"""
        return self.run("health", cmd, **opts)

    def compare(self, cmd, against, **opts):
        """cmd against the golden run named (or numbered) against (once=True:
        D only when C differs from it)"""
        return self.run("compare", cmd, against=against, **opts)

    def record(self, cmd, name=None, **opts):
        """record cmd as a run (name="golden" makes it a golden run); the
        Report's json is record's report, its status the command's"""
        return self.run("record", cmd, name=name, **opts)
