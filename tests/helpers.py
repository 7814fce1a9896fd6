"""Helpers shared by the tests: run the nandlab CLI as a user would, build the sim SoC once."""

import subprocess
import sys

from nandlab import env

NANDLAB = [sys.executable, "-m", "nandlab.cli"]


def nandlab(*args, timeout=1800, **kw):
    """Run `nandlab ARGS`; returns the CompletedProcess (text)."""
    return subprocess.run(NANDLAB + list(args), capture_output=True, text=True, timeout=timeout,
        cwd=env.REPO, **kw)


def build_target(name, *extra):
    """`nandlab build --target NAME`; the CLI serialises concurrent builds of one target."""
    return nandlab("build", "--target", name, *extra)
