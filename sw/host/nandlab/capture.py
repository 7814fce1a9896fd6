"""A telemetry capture on the simulated SoC (`make sim`, `nandlab sim --workload US`).

Boots the simulator, connects to its telemetry socket, formats the FTL over every die, sets the
power policy through the host bridge (nandlab.control.PowerControl), starts a capture (`telemetry
restart`), runs host I/O through the FTL (`ftl workload`: random reads and writes, 32 requests in
flight, every read checked), stops the capture, and checks the recording against the on-chip
counters read through the host bridge (RemoteClient): windows, budget violations and the largest
summed current must be equal, and every frame of the capture must have arrived. Writes the
recording (CSV and VCD) and the figures, prints a summary with the FTL's counters.
"""

import re

import sys
import threading
import time
from pathlib import Path

from nandlab import telemetry
from nandlab.errors import NandLabError
from nandlab.gateware.power.common import DEFAULT_TG
from nandlab.telemetry import I_UNIT


class LiveStatus:
    """One status line, rewritten in place on a terminal (frames, drops, peak against PB)."""
    def __init__(self, stream=sys.stderr):
        self.stream = stream
        self.tty = stream.isatty()
        self.frames = 0
        self.peak = 0.0
        self.over = 0
        self.pb = 1.0
        self.lock = threading.Lock()
        self.last = 0.0

    def reset(self):
        with self.lock:
            self.frames = self.over = 0
            self.peak = 0.0

    def add(self, f):
        with self.lock:
            self.frames += 1
            self.pb = (f["pb"] / I_UNIT) or 1.0
            self.peak = max(self.peak, f["total_max"] / I_UNIT)
            self.over += f["violations"]

    def show(self, stats, force=False):
        now = time.monotonic()
        if not force and now - self.last < 0.5:
            return
        self.last = now
        with self.lock:
            text = (f"telemetry: {self.frames} frames, {stats.gaps} missing ({stats.chip_dropped} dropped on chip), "
                    f"{stats.bad_crc} corrupt; peak {self.peak / self.pb:.2f} x PB; {self.over} windows over PB")
        if self.tty:
            self.stream.write("\r" + text[:150].ljust(150))
            if force:
                self.stream.write("\n")
        elif force:
            self.stream.write(text + "\n")
        self.stream.flush()


def run(gateware, run_dir, bridge_port, us=2000, read_pct=30, policy="kmtpm_sub", alpha=2, tg=DEFAULT_TG,
        out_dir=None, clock_hz=100e6, log=print, timeout=1800):
    """The capture; returns (summary lines, recording paths, ok)."""
    from litex import RemoteClient
    from nandlab.control import PowerControl
    from nandlab.simulator import SimConsole, BridgeServer, telemetry_port
    from nandlab import plots
    out_dir = Path(out_dir or Path(run_dir).parent / "recordings")
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    csv_path, vcd_path = out_dir / f"capture-{stamp}.csv", out_dir / f"capture-{stamp}.vcd"
    status = LiveStatus()
    capture = []
    recorders = []

    def on_frame(f):
        if capture and f["seq"] <= capture[-1]["seq"]:
            capture.clear()                    # the restart: frames before it are not the capture's
            status.reset()
            for r in recorders:
                r.close()
            recorders[:] = [telemetry.CsvRecorder(csv_path, clock_hz), telemetry.VcdRecorder(vcd_path, clock_hz,
                                                                                             f["dies"])]
        if not recorders:
            recorders[:] = [telemetry.CsvRecorder(csv_path, clock_hz), telemetry.VcdRecorder(vcd_path, clock_hz,
                                                                                             f["dies"])]
        capture.append(f)
        status.add(f)
        for r in recorders:
            r.add(f)

    with SimConsole(gateware, run_dir) as console:
        console.boot(timeout=120)
        log("firmware booted; connecting to the telemetry stream")
        rx = telemetry.TcpReceiver(telemetry_port(run_dir), on_frame, log=log).start()
        try:
            with BridgeServer(bridge_port, log_path=Path(run_dir) / "litex_server.log") as server:
                bus = RemoteClient(port=server.bind_port, csr_csv=str(Path(gateware).parent / "csr.csv"))
                bus.open()
                try:
                    log("formatting the FTL over every die (factory bad-block scan) ...")
                    out = console.command("ftl format", timeout=timeout)
                    if "ftl formatted" not in out:
                        raise NandLabError(f"ftl format failed:\n{out}")
                    state = PowerControl(bus).configure(policy, tg=tg, alpha=alpha)
                    log(f"power: {policy}, TG {tg}, alpha {alpha}: {state.describe()}")
                    console.command("telemetry restart")
                    log(f"capture started: host I/O through the FTL ({read_pct} % reads, 32 requests in "
                        f"flight) for {us} us of SoC time")
                    done = threading.Event()
                    result = {}

                    def work():
                        try:
                            result["out"] = console.command(f"ftl workload {us} {read_pct} 32", timeout=timeout)
                        except NandLabError as e:
                            result["error"] = e
                        done.set()

                    threading.Thread(target=work, daemon=True).start()
                    while not done.wait(0.25):
                        status.show(rx.decoder.stats)
                    if "error" in result:
                        raise result["error"]
                    log("\n" + result["out"].rstrip())
                    console.command("telemetry stop")
                    ftl_stats = parse_ftl_stats(console.command("ftl stats"))
                    chip = {name: getattr(bus.regs, name).read() for name in (
                        "telemetry_seq", "telemetry_dropped", "power_monitor_windows",
                        "power_monitor_violations", "power_monitor_max", "power_monitor_pb")}
                finally:
                    bus.close()
            budget = console.budget(60)       # (simulator processor time: the frames still in flight)
            while not budget.expired() and not (capture and capture[-1]["seq"] == chip["telemetry_seq"] - 1):
                status.show(rx.decoder.stats)
                time.sleep(0.2)
        finally:
            rx.stop()
            for r in recorders:
                r.close()
        status.show(rx.decoder.stats, force=True)

    got = len(capture)
    windows = sum(f["windows"] for f in capture)
    viol = sum(f["violations"] for f in capture)
    peak = max((f["total_max"] for f in capture), default=0)
    pb = chip["power_monitor_pb"]
    checks = [
        ("frames received", got, chip["telemetry_seq"]),
        ("frames dropped on chip", chip["telemetry_dropped"], 0),
        ("windows", windows, chip["power_monitor_windows"]),
        ("windows over the budget", viol, chip["power_monitor_violations"]),
        (f"largest summed current (I_max/{I_UNIT})", peak, chip["power_monitor_max"]),
    ]
    lines = [f"Capture: {policy}, TG {tg}, PB = {pb / I_UNIT:g} x I_max, {us} us of SoC time, "
             f"{capture[-1]['dies'] if capture else 0} dies",
             f"{'':<38}{'recording':>12}{'on chip':>12}"]
    ok = True
    for name, a, b in checks:
        mark = "" if a == b else "   <- differs"
        ok &= a == b
        lines.append(f"{name:<38}{a:>12}{b:>12}{mark}")
    lines.append(f"peak summed current {peak / I_UNIT:.3f} x I_max = {peak / max(pb, 1):.3f} x PB; "
                 f"{viol} of {windows} windows over the budget")
    paths = [csv_path, vcd_path]
    if capture:
        figs, _ = plots.plot_recording(csv_path)
        paths += figs
    lines += ftl_summary(ftl_stats, result["out"])
    ok &= "; 0 sectors differ" in result["out"] and " 0 failed" in result["out"]
    lines.append("recording: " + ", ".join(str(p) for p in paths))
    return lines, paths, ok


def parse_ftl_stats(text):
    """`ftl stats` (name value lines) as a dict of numbers."""
    out = {}
    for name, value in re.findall(r"^(\w+)\s+([\d.]+)\s*$", text, re.M):
        out[name] = float(value) if "." in value else int(value)
    return out


def ftl_summary(st, workload):
    """The summary's FTL lines: the workload's result and the FTL's counters."""
    w = re.search(r"ftl workload: (.*)", workload)
    lines = [f"FTL: {w.group(1) if w else workload.strip()}"]
    if st:
        lines.append(f"FTL counters: host page writes {st.get('host_page_writes', 0)}, NAND programs "
                     f"{st.get('nand_programs', 0)} (+{st.get('meta_programs', 0)} metadata), reads "
                     f"{st.get('nand_reads', 0)}, erases {st.get('nand_erases', 0)}, GC moves {st.get('gc_moves', 0)}, "
                     f"WAF {st.get('waf', 0)}, ECC bits corrected {st.get('ecc_corrected', 0)}, uncorrectable "
                     f"{st.get('uncorrectable', 0)}, bad blocks {st.get('bad_factory', 0)} factory + "
                     f"{st.get('bad_grown', 0)} grown, in flight at most {st.get('max_in_flight', 0)}")
    return lines
