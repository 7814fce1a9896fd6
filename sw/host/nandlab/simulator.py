"""Run the compiled litex_sim simulator: interactively on a terminal, or scripted over pipes.

The scripted mode is what tests, benchmarks and `nandlab sim --non-interactive` use: it waits for
the firmware prompt, sends commands one at a time and returns what each printed.
"""

import json
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
        while True:
            data = self.proc.stdout.read1(4096) if hasattr(self.proc.stdout, "read1") else self.proc.stdout.read(1)
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

    def expect(self, text, timeout):
        """Wait until `text` appears in unread output; return everything up to and including it."""
        deadline = time.monotonic() + timeout
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
                left = deadline - time.monotonic()
                if left <= 0:
                    raise NandLabError(f"no {text!r} from the simulated SoC within {timeout:.0f} s; "
                                       f"last output:\n{self._buf[-2000:]}")
                self._cond.wait(min(left, 0.5))

    def boot(self, timeout=120):
        """Wait for the firmware banner and prompt; returns the boot output."""
        out = self.expect(BANNER, timeout)
        return out + self.expect(PROMPT, timeout)

    def send(self, text):
        self.proc.stdin.write(text.encode())
        self.proc.stdin.flush()

    def command(self, line, timeout=60):
        """Run one shell command; returns its output (echo and trailing prompt removed)."""
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


class BridgeServer:
    """`litex_server` on the simulator's UARTBone socket, for RemoteClient on `bind_port`."""
    def __init__(self, bridge_port, bind_port=None, log_path=None):
        self.bridge_port = bridge_port
        self.bind_port   = bind_port or free_tcp_port()
        self.log_path    = log_path
        self.proc        = None

    def __enter__(self):
        log = open(self.log_path, "w") if self.log_path else subprocess.DEVNULL
        exe = Path(sys.executable).parent / "litex_server"
        self.proc = subprocess.Popen([str(exe), "--uart", "--uart-port", f"socket://localhost:{self.bridge_port}",
            "--bind-port", str(self.bind_port)], stdout=log, stderr=subprocess.STDOUT,
            # Off the terminal: the simulator's console owns the keyboard.
            stdin=subprocess.DEVNULL, start_new_session=True)
        # Ready when its port accepts connections.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise NandLabError(f"litex_server exited (status {self.proc.returncode}); see {self.log_path}")
            try:
                with socket.create_connection(("127.0.0.1", self.bind_port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.2)
        raise NandLabError(f"litex_server did not open port {self.bind_port} within 30 s")

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
