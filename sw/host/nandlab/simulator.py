"""Run the compiled litex_sim simulator: interactively on a terminal, or scripted over pipes.

The scripted mode is what tests, benchmarks and `nandlab sim --non-interactive` use: it waits for
the firmware prompt, sends commands one at a time and returns what each printed.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from nandlab.errors import NandLabError

PROMPT = "nandlab> "
BANNER = "nandlab firmware"


def command_failed(output):
    """Whether a firmware shell command's output says it failed: a line starting with `error:` (the
    shell's convention; usage lines too are `error: usage: ...`) or a bare `usage:` line."""
    return re.search(r"^\s*(error|usage):", output, re.M) is not None


def free_tcp_port():
    """A TCP port that is free on localhost right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prepare_run_dir(gateware_dir, run_dir, bridge_port=None, telemetry_port=None, telemetry_buffer=None,
                    nand_port=None, nand_image=None):
    """A directory to run one simulator instance from.

    Vsim reads sim_config.js, the memory .init files and ./modules/ from its working directory,
    so each instance gets its own copies: several simulations (with their own bridge, telemetry and
    NAND control ports) can run side by side from one compiled simulator. The telemetry port is in
    `telemetry_port(run_dir)`, the NAND arrays' control port (image save and load) in
    `nand_port(run_dir)`; `nand_image` is an image file the NAND arrays start from.
    """
    gateware_dir, run_dir = Path(gateware_dir).resolve(), Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    for init in gateware_dir.glob("*.init"):
        shutil.copy(init, run_dir / init.name)
    modules = run_dir / "modules"
    if modules.is_symlink() or modules.exists():
        modules.unlink()
    modules.symlink_to(gateware_dir / "modules")
    config = json.loads((gateware_dir / "sim_config.js").read_text())
    for module in config:
        if not isinstance(module, dict):
            continue
        if module.get("module") == "serial2tcp" and bridge_port is not None:
            module["args"]["port"] = int(bridge_port)
        if module.get("module") == "telemetry2tcp":
            # Every instance its own port (several simulations side by side).
            module["args"]["port"] = int(telemetry_port or free_tcp_port())
            if telemetry_buffer:
                module["args"]["buffer"] = int(telemetry_buffer)   # bytes the module holds for a slow reader
        if module.get("module") == "nandstore":
            module["args"]["port"] = int(nand_port or free_tcp_port())
            module["args"].pop("image", None)
            if nand_image:
                module["args"]["image"] = str(Path(nand_image).resolve())
    (run_dir / "sim_config.js").write_text(json.dumps(config, indent=4))
    return run_dir


def _module_port(run_dir, name, what):
    for module in json.loads((Path(run_dir) / "sim_config.js").read_text()):
        if isinstance(module, dict) and module.get("module") == name:
            return int(module["args"]["port"])
    raise NandLabError(f"{run_dir}: this simulator has no {what}")


def telemetry_port(run_dir):
    """The TCP port the simulator in `run_dir` streams telemetry on."""
    return _module_port(run_dir, "telemetry2tcp", "telemetry module")


def nand_port(run_dir):
    """The TCP control port of the simulator in `run_dir`'s NAND arrays (nandlab.nandimage.NandStore)."""
    return _module_port(run_dir, "nandstore", "NAND arrays outside the model (built with NAND storage 'bram')")


def run_interactive(gateware_dir, run_dir):
    """Run the simulator on this terminal (Ctrl-C to stop); returns its exit status."""
    vsim = Path(gateware_dir).resolve() / "obj_dir" / "Vsim"
    settings = None
    if sys.stdin.isatty():
        import termios
        settings = termios.tcgetattr(sys.stdin.fileno())
    try:
        return subprocess.call([str(vsim)], cwd=run_dir)
    except KeyboardInterrupt:
        return 0
    finally:
        if settings is not None:
            import termios
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSAFLUSH, settings)


STALL_S = 600          # wall seconds without any simulator progress before a wait gives up


def process_cpu_seconds(pid):
    """User + system processor seconds process `pid` has used (Linux /proc), or None when unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


class SimBudget:
    """A deadline in a running simulator's processor time (SimConsole.budget): `expired()` once the
    simulator has used `seconds` of it, or made no progress for STALL_S wall seconds. Where processor
    time cannot be read (not Linux), wall-clock time stands in."""
    def __init__(self, console, seconds):
        self.console, self.seconds = console, seconds
        self.t0 = self.progress_t = time.monotonic()
        self.cpu0 = self.progress = console.cpu_seconds()

        self.stalled = False

    def used(self):
        cpu = self.console.cpu_seconds()
        if cpu is None or self.cpu0 is None:
            return time.monotonic() - self.t0
        now = time.monotonic()
        if cpu > self.progress:
            self.progress, self.progress_t = cpu, now
        elif now - self.progress_t > STALL_S:
            self.stalled = True
            return float("inf")
        return cpu - self.cpu0

    def expired(self):
        return self.used() >= self.seconds

    def describe(self):
        wall = time.monotonic() - self.t0
        if self.stalled:
            return f"{wall:.0f} s: the simulator made no progress for {STALL_S} s (stopped?)"
        return f"{self.seconds:g} s of simulator processor time ({wall:.0f} s wall-clock)"


class SimConsole:
    """The simulator as a child process with its console on pipes.

    Use as a context manager; `boot()` waits for the banner and first prompt, `command()` sends one
    line and returns its output (without the echo and the next prompt).
    """
    def __init__(self, gateware_dir, run_dir, echo=None):
        self.gateware_dir = Path(gateware_dir).resolve()
        self.run_dir = Path(run_dir)
        self.echo    = echo        # Callable receiving console text as it arrives (or None).
        self.proc    = None
        self._buf    = ""
        self._pos    = 0           # Start of unread console output in _buf.
        self._cond   = threading.Condition()
        self._reader = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.close()

    def start(self):
        vsim = self.gateware_dir / "obj_dir" / "Vsim"
        if not vsim.exists():
            raise NandLabError(f"simulator {vsim} not built; run 'nandlab sim' first")
        self.proc = subprocess.Popen([str(vsim)], cwd=self.run_dir,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0)
        self.started = time.monotonic()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        stdout = self.proc.stdout
        while True:
            try:
                data = stdout.read1(4096) if hasattr(stdout, "read1") else stdout.read(1)
            except (OSError, ValueError):
                data = b""                     # closed under us at the end (close())
            if not data:
                break
            text = data.decode("utf-8", errors="replace")
            if self.echo is not None:
                self.echo(text)
            with self._cond:
                self._buf += text.replace("\r", "")  # The firmware ends lines with CR LF.
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    @property
    def output(self):
        with self._cond:
            return self._buf

    def unread(self):
        """Console output that no `expect()` has returned yet (without consuming it)."""
        with self._cond:
            return self._buf[self._pos:]

    def cpu_seconds(self):
        """Processor time the simulator has used so far (user + system): the measure of how far it got.

        Waits on simulated work are bounded in it rather than in wall-clock time: the simulator runs
        flat out whenever it is scheduled, so a machine busy with other work stretches the wall-clock
        time a command takes, not its processor time."""
        return process_cpu_seconds(self.proc.pid) if self.proc is not None else 0.0

    def budget(self, seconds):
        """A deadline `seconds` of simulator processor time from now (see `cpu_seconds`)."""
        return SimBudget(self, seconds)

    def expect(self, text, timeout):
        """Wait until `text` appears in unread output; return everything up to and including it. Raises
        when the simulator has used `timeout` seconds of processor time meanwhile (`cpu_seconds`), or
        has made no progress at all for STALL_S seconds (it was stopped)."""
        budget = self.budget(timeout)
        with self._cond:
            while True:
                idx = self._buf.find(text, self._pos)
                if idx >= 0:
                    end = idx + len(text)
                    chunk = self._buf[self._pos:end]
                    self._pos = end
                    return chunk
                if self.proc.poll() is not None and not self._reader.is_alive():
                    raise NandLabError(f"simulator exited (status {self.proc.returncode}) before printing {text!r}; "
                                       f"output so far:\n{self._buf[-2000:]}")
                if budget.expired():
                    raise NandLabError(f"no {text!r} from the simulated SoC within {budget.describe()}; "
                                       f"last output:\n{self._buf[-2000:]}")
                self._cond.wait(0.5)

    def boot(self, timeout=120):
        """Wait for the firmware banner and prompt; returns the boot output."""
        out = self.expect(BANNER, timeout)
        return out + self.expect(PROMPT, timeout)

    def send(self, text):
        self.proc.stdin.write(text.encode())
        self.proc.stdin.flush()

    def command(self, line, timeout=60):
        """Run one shell command; returns its output (echo and trailing prompt removed). `timeout` is in
        seconds of simulator processor time (see `expect`)."""
        self.send(line + "\r")
        out = self.expect(PROMPT, timeout)
        out = out[:-len(PROMPT)]
        first, _, rest = out.partition("\n")
        return rest if first.strip() == line.strip() else out

    def close(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        self.proc = None


def _served_note(port):
    from nandlab import env
    return env.BUILD_DIR / "servers" / f"{int(port)}.json"


def note_served(port, csr_csv):
    """Note that this process's simulator (whose CSR map is `csr_csv`) serves litex_server on `port`:
    `nandlab csr` then uses that map for that port."""
    path = _served_note(port)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"csr_csv": str(Path(csr_csv).resolve()), "pid": os.getpid()}))


def forget_served(port):
    try:
        note = json.loads(_served_note(port).read_text())
        if note.get("pid") == os.getpid():
            _served_note(port).unlink()
    except (OSError, ValueError):
        pass


def served_csr_csv(port):
    """The CSR map of the simulator serving litex_server on `port` (None: no live note of one)."""
    try:
        note = json.loads(_served_note(port).read_text())
        os.kill(int(note["pid"]), 0)
        path = Path(note["csr_csv"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return path if path.is_file() else None


class BridgeServer:
    """`litex_server` on the simulator's UARTBone socket, for RemoteClient on `bind_port`."""
    def __init__(self, bridge_port, bind_port=None, log_path=None):
        self.bridge_port = bridge_port
        self.bind_port   = bind_port or free_tcp_port()
        self.log_path    = log_path
        self.proc        = None
        self._lock       = threading.Lock()   # __enter__ may run in a thread while __exit__ runs
        self._closed     = False

    def __enter__(self):
        log = open(self.log_path, "w") if self.log_path else subprocess.DEVNULL
        exe = Path(sys.executable).parent / "litex_server"
        with self._lock:
            if self._closed:
                raise NandLabError("the simulation ended before litex_server started")
            self.proc = subprocess.Popen([str(exe), "--uart", "--uart-port", f"socket://localhost:{self.bridge_port}",
                "--bind-port", str(self.bind_port)], stdout=log, stderr=subprocess.STDOUT,
                # Off the terminal: the simulator's console owns the keyboard.
                stdin=subprocess.DEVNULL, start_new_session=True)
        # Ready when its port accepts connections.
        # (a host process starting: wall-clock time, generous for a busy machine)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise NandLabError(f"litex_server exited (status {self.proc.returncode}); see {self.log_path}")
            try:
                with socket.create_connection(("127.0.0.1", self.bind_port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.2)
        raise NandLabError(f"litex_server did not open port {self.bind_port} within 120 s")

    def __exit__(self, *exc):
        with self._lock:
            self._closed = True
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
