"""Helpers shared by the tests: run the nandlab CLI as a user would, build the sim SoC once."""

import fcntl
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

from nandlab import env

NANDLAB = [sys.executable, "-m", "nandlab.cli"]


def nandlab(*args, timeout=1800, **kw):
    """Run `nandlab ARGS`; returns the CompletedProcess (text)."""
    return subprocess.run(NANDLAB + list(args), capture_output=True, text=True, timeout=timeout,
        cwd=env.REPO, **kw)


@contextmanager
def build_lock(name):
    """Serialise builds of one target across pytest-xdist workers."""
    env.BUILD_DIR.mkdir(parents=True, exist_ok=True)
    with open(env.BUILD_DIR / f".{name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def build_target(name, *extra):
    with build_lock(name):
        out = nandlab("build", "--target", name, *extra)
    return out
