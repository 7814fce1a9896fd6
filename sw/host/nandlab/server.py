"""`nandlab server`: litex_server on a target's host bridge, watched so that a bridge that cannot work
ends the command with one line saying why instead of a traceback or a server that never serves.

litex_server's own output is passed through as it comes. It is ended (and the command fails) when it
exits with an error, or when its bridge thread dies while the process lives on: that is what JTAGbone
does when OpenOCD finds no probe or no board (the server would otherwise wait for ever).
"""

import re
import subprocess
import sys
import tempfile
import threading
from collections import deque
from pathlib import Path

from nandlab.errors import NandLabError, MissingToolError

# litex_server's JTAG and UART bridges run in threads; an exception there leaves the server running
# with nothing behind it.
_THREAD_DIED = "Exception in thread"
_OPENOCD_FAILED = "Error occured during OpenOCD's call"
_CHAINED = ("During handling of the above exception", "The above exception was the direct cause")
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b.*")


class _Watch:
    """litex_server's output, passed to our stderr, the last lines kept, a dead bridge noticed."""
    def __init__(self, proc):
        self.proc = proc
        self.tail = deque(maxlen=40)
        self.dead_bridge = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        in_traceback = False
        for raw in iter(self.proc.stdout.readline, b""):
            line = raw.decode(errors="replace").rstrip()
            self.tail.append(line)
            if line.startswith(_THREAD_DIED) or _OPENOCD_FAILED in line:
                self.dead_bridge.set()
            # Python tracebacks stay out of our output (their last line is in the error we raise).
            before, tb, _ = line.partition("Traceback (most recent call last):")
            if tb or line.startswith(_THREAD_DIED):
                in_traceback, line = True, before.rstrip() if tb else ""
            elif in_traceback and _EXCEPTION_LINE.match(line):
                in_traceback, line = False, ""
            elif in_traceback or line.startswith(_CHAINED):
                line = ""
            if line:
                print(line, file=sys.stderr, flush=True)

    def reason(self):
        """The most telling line of what litex_server and OpenOCD printed."""
        lines = [l.strip() for l in self.tail if l.strip()]
        for prefix in ("Error:", "serial.serialutil.SerialException:", "ConnectionRefusedError:", "OSError:"):
            found = [l for l in lines if l.startswith(prefix)]
            if found:
                return found[0]
        return lines[-1] if lines else "no output"


def litex_server_command(target, bridge_port, ip, udp, port):
    """litex_server's command line and the bridge it uses ('uart', 'jtag' or 'udp')."""
    exe = str(Path(sys.executable).parent / "litex_server")
    if target == "sim":
        cmd, bridge = [exe, "--uart", "--uart-port", f"socket://localhost:{bridge_port}"], "uart"
    else:
        from nandlab.soc import targets
        board = targets.get_board(target)
        if getattr(board, "OPENOCD_CONFIG", None) and not udp:
            # JTAGbone through OpenOCD (the board's default bridge).
            cmd, bridge = [exe, "--jtag", "--jtag-config", str(board.OPENOCD_CONFIG)], "jtag"
        else:
            cmd, bridge = [exe, "--udp", "--udp-ip", ip], "udp"
    return cmd + ["--bind-port", str(port)], bridge


def run(cmd, bridge, target, bridge_port):
    """Run litex_server until it ends (0 at Ctrl-C); raise with the reason when its bridge fails."""
    with tempfile.TemporaryDirectory(prefix="nandlab-server-") as work:
        return _run(cmd, bridge, target, bridge_port, work)


def _run(cmd, bridge, target, bridge_port, work):
    # Its own process group: OpenOCD (JTAGbone) ends with it. In a directory of its own: LiteX writes
    # OpenOCD's stream.cfg where it runs.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, cwd=work)
    watch = _Watch(proc)
    try:
        while proc.poll() is None and not watch.dead_bridge.wait(0.2):
            pass
    except KeyboardInterrupt:
        _end(proc)
        return 0                        # Ctrl-C: the way to stop a server
    except BaseException:
        _end(proc)
        raise
    dead = proc.poll() is None
    _end(proc)
    watch.thread.join(timeout=2)
    if not dead and proc.returncode in (0, -2):
        return 0
    reason = watch.reason()
    if bridge == "jtag":
        raise MissingToolError(f"litex_server's JTAG bridge failed ({reason}): is the {target} board attached and "
                               "powered, with its JTAG probe's USB cable accessible?")
    if bridge == "uart":
        raise NandLabError(f"litex_server cannot reach the simulator's bridge on TCP {bridge_port} ({reason}): "
                           "start 'nandlab sim' first (its --bridge-port)")
    raise NandLabError(f"litex_server exited with status {proc.returncode} ({reason})")


def _end(proc):
    """End litex_server and what it started (its process group)."""
    import os
    import signal
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=5)
            break
        except subprocess.TimeoutExpired:
            continue
    proc.wait()
