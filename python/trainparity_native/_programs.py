# SPDX-License-Identifier: MIT
"""_programs.py -- the programs the wheel installs inside this package
(bin/trainparity-run, bin/trainparity-daemon, lib/libtpagent.so: the layout
of `cmake --install`, docs/install.md), the console scripts that run them,
and the version.

The console scripts `trainparity-run` and `trainparity-daemon` replace
themselves with the program (exec), so that it finds the daemon and the
agent beside itself, whatever folder the scripts were installed in."""
import os
import re
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def program(name):
    """The path of the package's own program `name`, or None (a source
    checkout, where the programs are in the build folder)."""
    path = os.path.join(_HERE, "bin", name)
    return path if os.access(path, os.X_OK) else None


def _exec(name):
    path = program(name)
    if path is None:
        sys.stderr.write("%s: not installed with the trainparity_native package at %s\n" %
                         (name, _HERE))
        sys.exit(3)
    os.execv(path, [name] + sys.argv[1:])


def run():
    """The console script trainparity-run."""
    _exec("trainparity-run")


def daemon():
    """The console script trainparity-daemon."""
    _exec("trainparity-daemon")


def version():
    """The version: written at install from CMake's project() (_version.py),
    else, in a source checkout, read from that project() line itself."""
    try:
        from trainparity_native._version import VERSION
        return VERSION
    except ImportError:
        pass
    try:
        with open(os.path.join(_HERE, "..", "..", "CMakeLists.txt")) as f:
            m = re.search(r"project\(trainparity VERSION ([0-9][0-9.]*)", f.read())
        return m.group(1) if m else "unknown"
    except OSError:
        return "unknown"
