"""Progress output for long build steps: one status line per step, tool chatter sent to a log file."""

import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from nandlab.errors import NandLabError


def say(msg):
    print(f"[nandlab] {msg}", file=sys.stderr, flush=True)


@contextmanager
def step(title, log_path, verbose=False):
    """Run a step with its stdout/stderr (including child processes) appended to `log_path`.

    On failure the last lines of the log are shown and the error names the log.
    """
    say(f"{title} ...")
    t0 = time.monotonic()
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    if verbose:
        yield
        say(f"{title}: done ({time.monotonic() - t0:.1f} s)")
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log_path, "a") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        except BaseException as e:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            if isinstance(e, NandLabError) or not isinstance(e, Exception):
                raise           # (Ctrl-C, SIGTERM, exit: not the step's failure)
            tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-25:])
            raise NandLabError(f"{title} failed: {e}\n--- last lines of {log_path} ---\n{tail}") from e
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
    say(f"{title}: done ({time.monotonic() - t0:.1f} s)")
