"""Integration: build the sim SoC, boot the firmware, use its shell and the host bridge (RemoteClient)."""

import re
import subprocess
import time

import pytest

from nandlab import env
from nandlab.simulator import SimConsole, BridgeServer, prepare_run_dir, free_tcp_port, PROMPT

from nandlab.testing import build_target, run_cli as nandlab

pytestmark = pytest.mark.sim

SIM_DIR = env.BUILD_DIR / "sim"
MAIN_RAM = 0x40000000


@pytest.fixture(scope="module")
def gateware():
    out = build_target("sim")
    assert out.returncode == 0, out.stderr
    assert (SIM_DIR / "gateware" / "obj_dir" / "Vsim").exists()
    return SIM_DIR / "gateware"


def test_unchanged_build_is_skipped(gateware):
    """A second build with nothing changed reuses the simulator without generating anything; a
    changed option (here: the die count) is a different build."""
    out = build_target("sim")
    assert out.returncode == 0, out.stderr
    assert "sources and options unchanged" in out.stderr and "generating" not in out.stderr, out.stderr
    from nandlab.soc.targets import sim as simtarget
    assert simtarget._inputs_key(dies=4) == simtarget._inputs_key(dies=4)
    assert simtarget._inputs_key(dies=4) != simtarget._inputs_key(dies=8)


@pytest.fixture
def soc(gateware, tmp_path):
    """A booted simulator (console) with litex_server on its bridge."""
    bridge = free_tcp_port()
    run_dir = prepare_run_dir(gateware, tmp_path / "run", bridge_port=bridge)
    with SimConsole(gateware, run_dir) as console:
        console.boot_output = console.boot(timeout=120)
        with BridgeServer(bridge, log_path=tmp_path / "litex_server.log") as server:
            console.server = server
            yield console


def _remote(server):
    from litex import RemoteClient
    bus = RemoteClient(port=server.bind_port, csr_csv=str(SIM_DIR / "csr.csv"))
    bus.open()
    return bus


def test_banner_names_the_soc(soc):
    boot = soc.boot_output
    assert "nandlab firmware" in boot
    rev = subprocess.run(["git", "-C", str(env.REPO), "describe", "--always", "--dirty", "--abbrev=8"],
        capture_output=True, text=True).stdout.strip()
    assert re.search(r"SoC: nandlab \S+ on sim", boot), boot
    assert f"nandlab {rev} on sim" in boot or "-dirty" in boot  # Built from this checkout.
    assert boot.endswith(PROMPT)


def test_help_lists_the_table(soc):
    out = soc.command("help")
    for cmd in ("help", "version", "csr", "mr", "mw", "time"):
        assert re.search(rf"^\s+{cmd}\s", out, re.M), (cmd, out)


def test_version_reports_clock_from_csr_map(soc):
    out = soc.command("version")
    freq = int(_constant("config_clock_frequency"))
    assert f"sys_clk: {freq} Hz" in out and "target: sim" in out


def _constant(name):
    from nandlab.csrmap import CSRMap
    return CSRMap.from_csv(SIM_DIR / "csr.csv").constants[name]


def test_memory_write_read(soc):
    addr = MAIN_RAM + 0x18000
    assert soc.command(f"mw {addr:#x} 0xdeadbeef 3") == ""
    out = soc.command(f"mr {addr:#x} 4")
    words = out.split(":")[1].split()
    assert words[:3] == ["0xdeadbeef"] * 3


def test_shell_rejects_bad_input(soc):
    assert "unknown command 'bogus'" in soc.command("bogus")
    assert "not a number" in soc.command("mr 0xzz")
    assert "not word aligned" in soc.command("mr 0x40000002")
    assert "no CSR named 'nope'" in soc.command("csr read nope")
    assert "read-only" in soc.command("csr write timebase_timestamp 1")


def test_csr_through_bridge_and_shell_agree(soc):
    bus = _remote(soc.server)
    try:
        # LiteX's scratch register resets to 0x12345678.
        assert bus.regs.ctrl_scratch.read() == 0x12345678
        bus.regs.ctrl_scratch.write(0xcafe0123)
        # Bridge writes are posted: a read through the same bridge orders them before the shell's.
        assert bus.regs.ctrl_scratch.read() == 0xcafe0123
        assert "ctrl_scratch = 0xcafe0123" in soc.command("csr read ctrl_scratch")
        soc.command("csr write timebase_window 13")
        assert bus.regs.timebase_window.read() == 13
        # The address RemoteClient used is the one csr.csv gives, as the firmware's table.
        listing = soc.command("csr list")
        from nandlab.csrmap import CSRMap
        reg = CSRMap.from_csv(SIM_DIR / "csr.csv")["timebase_window"]
        assert re.search(rf"0x{reg.address:08x} timebase_window\s", listing), listing
    finally:
        bus.close()


def test_time_base_advances(soc):
    def cycles():
        return int(soc.command("time").split()[1], 16)
    a = cycles()
    b = cycles()
    assert b > a


def test_cli_non_interactive_run(gateware):
    out = nandlab("sim", "--non-interactive", "--quiet", "--bridge-port", "0", "--no-server",
                  "--run", "version; csr read timebase_window", timeout=600)
    assert out.returncode == 0, out.stderr
    assert "target: sim" in out.stdout
    assert "timebase_window = 0x00000004" in out.stdout  # 40 ns at 100 MHz.
    bad = nandlab("sim", "--non-interactive", "--quiet", "--bridge-port", "0", "--no-server",
                  "--run", "frob", timeout=600)
    assert bad.returncode == 1 and "unknown command" in bad.stdout


def test_cli_csr_without_server_is_clear(gateware):
    port = free_tcp_port()
    out = nandlab("csr", "read", "ctrl_scratch", "--port", str(port))
    assert out.returncode == 2
    assert "no litex_server" in out.stderr and "Traceback" not in out.stderr


def test_cli_csr_through_server(soc):
    out = nandlab("csr", "read", "ctrl_scratch", "--port", str(soc.server.bind_port))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ctrl_scratch = 0x12345678"
    out = nandlab("csr", "write", "timebase_window", "21", "--port", str(soc.server.bind_port))
    assert out.returncode == 0, out.stderr
    out = nandlab("csr", "read", "timebase_window", "--port", str(soc.server.bind_port))
    assert out.stdout.strip() == "timebase_window = 0x15"
    assert "timebase_window = 0x00000015" in soc.command("csr read timebase_window")


def test_firmware_brings_up_the_emulated_dies(soc):
    from nandlab.csrmap import CSRMap
    from nandlab.soc.targets.sim import NAND_DIES
    csrs = CSRMap.from_csv(SIM_DIR / "csr.csv")
    assert int(csrs.constants["nandlab_dies"]) == NAND_DIES
    out = soc.command("nand scan", timeout=300)
    assert out.count("ONFI signature present") == NAND_DIES, out
    out = soc.command("nand param 2", timeout=300)
    # The firmware's C parser (CRC, copy choice) reads the geometry the SoC was built with.
    assert "parameter page copy 0 (CRC ok)" in out
    assert "page 2048+64 B, 4 pages/block, 8 blocks/LUN, 2 plane(s)" in out
    assert "MPNFM: plane 1 has 512+16 B pages" in out     # nandlab's vendor extension, read in C
    assert "error: die 9 out of range 0..3" in soc.command("nand id 9")
    # The firmware kept to the ONFI timings: every die's timing checker stayed at zero.
    bus = _remote(soc.server)
    try:
        for die in range(NAND_DIES):
            for check in ("t_whr", "t_adl", "t_ccs", "t_rr", "t_wb"):
                assert getattr(bus.regs, f"nand_die{die}_viol_{check}").read() == 0, (die, check)
        state = bus.regs.nand_die2_state.read()
        assert (state >> 16) & 0xFF == 0xE0   # ONFI status: ready, not protected.
    finally:
        bus.close()


def test_firmware_drives_the_dies_through_the_controller(soc):
    """The firmware's driver on the channel controller: RESET, READ ID, READ PARAMETER PAGE (CRC,
    copies) on every die, SET FEATURES to the fastest mode both sides have (NV-DDR mode 5), pages
    written by DMA through the BCH ECC, read back and compared, bit flips injected by a die corrected
    (the counts per codeword follow the die's flip positions); the dies' timing checkers stay at
    zero. Ends back in async SDR mode 0 for the bit-bang tests."""
    from nandlab.nand_model.reference import flip_position
    from nandlab.soc.targets.sim import NAND_DIES
    out = soc.command("ctl bringup", timeout=300)
    assert out.count("ONFI NANDLAB NL-SLC-2K, 2048+64 B pages, 4 pages/block, 8 blocks") == NAND_DIES, out
    assert f"{NAND_DIES} of {NAND_DIES} dies up, NV-DDR mode 5" in out, out
    out = soc.command("ctl test 2", timeout=600)
    assert f"NV-DDR mode 5, {NAND_DIES * 2 * 2048} bytes written and read back, 0 bytes differ" in out, out
    assert "ECC (BCH t=8 per 512 B): 0 bits corrected, max 0 in a codeword, 0 codewords uncorrectable" in out, out
    out = soc.command("ctl read 1 1 1 16", timeout=120)
    assert "read OK" in out and len(out.split("\n")[1].split()) == 16, out
    assert "error: die 9 out of range 0..3" in soc.command("ctl read 9 0 0")
    assert "error: block 99 out of range 0..7" in soc.command("ctl erase 0 99")
    assert "error: interface 'ddr3' unknown" in soc.command("ctl mode ddr3 1")
    bus = _remote(soc.server)
    try:
        assert bus.regs.nand_ctrl_bytes_in.read() >= NAND_DIES * 2 * 2048
        for die in range(NAND_DIES):
            assert (bus.regs.nand_die0_state.read() >> 4) & 3 == 1          # NV-DDR
            for check in ("t_whr", "t_adl", "t_ccs", "t_rr", "t_wb"):
                assert getattr(bus.regs, f"nand_die{die}_viol_{check}").read() == 0, (die, check)
        # Die 1 flips 12 bits on every read of block 1 page 1 (positions from the reference model):
        # ECC corrects them, each codeword counting its own.
        flips, per_cw = 12, [0] * 4
        for i in range(flips):
            col = flip_position(i, 2048 + 64)[0]
            assert col < 2048        # (all in the data area: codeword = column // 512)
            per_cw[col // 512] += 1
        bus.regs.nand_die1_flip.write((1 << 2 | 1) | flips << 24)
        out = soc.command("ctl test 2", timeout=600)
        bus.regs.nand_die1_flip.write(0)
        assert "0 bytes differ" in out, out
        assert (f"die 1 block 1 page 1:  ECC: {flips} bits corrected, max {max(per_cw)} in a codeword, 0 uncorrectable; "
                f"per codeword: {' '.join(map(str, per_cw))}") in out, out
        assert f"{flips} bits corrected, max {max(per_cw)} in a codeword, 0 codewords uncorrectable" in out, out
        assert bus.regs.nand_ctrl_ecc_fixed.read() > 0
        # Bring-up failures: die 2's parameter page fails its CRC in every copy (left out, the others
        # keep working); die 1's first copy fails (the next copy is used).
        ctl2, ctl1 = bus.regs.nand_die2_control.read(), bus.regs.nand_die1_control.read()
        bus.regs.nand_die2_control.write(ctl2 | 7 << 24)
        bus.regs.nand_die1_control.write(ctl1 | 1 << 24)
        out = soc.command("ctl bringup", timeout=300)
        assert "die 2: left out: parameter page: no copy with a valid signature and CRC" in out, out
        assert "copy 1" in [l for l in out.splitlines() if l.startswith("die 1:")][0], out
        assert f"{NAND_DIES - 1} of {NAND_DIES} dies up, NV-DDR mode 5" in out, out
        assert f"{(NAND_DIES - 1) * 2048} bytes written and read back, 0 bytes differ" in soc.command("ctl test 1", timeout=600)
        assert "error: die 2 was left out at bring-up" in soc.command("ctl read 2 1 0")
        bus.regs.nand_die2_control.write(ctl2)
        bus.regs.nand_die1_control.write(ctl1)
        # Die 2 is still in async SDR mode 0 (it was never switched): every die back to async SDR.
        assert f"{NAND_DIES} of {NAND_DIES} dies up" in soc.command("ctl bringup", timeout=300)
    finally:
        bus.close()
    assert "async SDR mode 0" in soc.command("ctl mode async 0", timeout=120)


def test_power_ring_keeps_the_dies_under_the_budget(soc):
    """The ring and the monitor beside the emulated dies, driven from the firmware shell and read by
    the host: four dies erasing at once exceed a budget of 1 x I_max without power management (NPM)
    and stay under it with KMTPM sub-atomic; a configuration out of range is refused."""
    from nandlab.soc.targets.sim import NAND_DIES
    bus = _remote(soc.server)
    try:
        results = {}
        for block, mode in ((1, "npm"), (2, "kmtpm_sub"), (3, "mtpm")):
            out = soc.command(f"power set {mode} tg 4 alpha 1", timeout=120)
            assert f"power: {mode}, TG 4, alpha 1: TT = 15 tokens" in out, out
            soc.command("power clear")
            out = soc.command(f"nand erase all {block}", timeout=600)
            assert out.count(f"erase block {block}: ok") == NAND_DIES, out
            results[mode] = (bus.regs.power_monitor_violations.read(), bus.regs.power_monitor_max.read(),
                             bus.regs.power_monitor_windows.read())
            assert bus.regs.power_monitor_pb.read() == 1 << 12
        viol, peak, windows = results["npm"]
        assert viol > 0 and peak > 2 * 4096 and windows > 1000, results      # ~4 x 0.72 I_max at once
        for mode in ("kmtpm_sub", "mtpm"):
            viol, peak, windows = results[mode]
            assert viol == 0 and 0.7 * 4096 < peak <= 4096, results
        out = soc.command("power")
        assert "ring: running, mode mtpm, TT 15" in out and "violations 0" in out, out
        out = soc.command("power nodes")
        assert out.count("node ") == NAND_DIES
        assert "error: TG = 6 is out of range" in soc.command("power set mtpm tg 6")
        assert "error: unknown policy 'fast'" in soc.command("power set fast")
    finally:
        bus.close()


def test_host_configures_the_ring_through_the_bridge(soc):
    """nandlab.control.PowerControl does over the bridge what 'power set' does in the shell: the
    token table of TG loaded, the policy applied and running; the firmware shows what the host set,
    and bad arguments are refused before the ring is touched."""
    from nandlab.control import PowerControl
    from nandlab.errors import NandLabError
    bus = _remote(soc.server)
    try:
        power = PowerControl(bus)
        state = power.configure("kmtpm_atomic", tg=3, alpha=2)
        assert state.running and state.policy == "kmtpm_atomic" and state.tt == 14
        out = soc.command("power")
        assert "ring: running, mode kmtpm_atomic, TT 14" in out and "requested mode kmtpm_atomic TG 3 alpha 2" in out, out
        assert "largest RT 7" in out and power.monitor().pb == 2 << 12
        with pytest.raises(NandLabError, match="unknown policy 'fast'"):
            power.configure("fast")
        with pytest.raises(NandLabError, match="alpha = 9 is out of range"):
            power.configure("mtpm", alpha=9)
        assert power.status() == state
        # And back from the shell.
        assert "power: npm, TG 4, alpha 4: TT = 60 tokens" in soc.command("power set npm", timeout=120)
        assert power.status().policy == "npm"
    finally:
        bus.close()


def test_telemetry_recording_matches_the_monitor(soc, tmp_path):
    """A capture over a mixed workload on every die (NPM at alpha = 1, so the budget is exceeded):
    the host receives every frame of it (sequence 0..N-1, nothing dropped), and the recording's
    windows, violations and largest summed current equal the on-chip monitor's counters exactly;
    the CSV recording has one row per frame."""
    from nandlab import telemetry
    from nandlab.simulator import telemetry_port
    frames = []
    rx = telemetry.TcpReceiver(telemetry_port(soc.run_dir), frames.append).start()
    bus = _remote(soc.server)
    try:
        assert "budget 1 x I_max" in soc.command("power set npm tg 4 alpha 1", timeout=120)
        assert "telemetry: on" in soc.command("telemetry restart")
        out = soc.command("nand workload 1500 30", timeout=900)
        from nandlab.soc.targets.sim import NAND_DIES
        assert out.count(" programs, ") == NAND_DIES and "error" not in out, out
        assert "(stopped)" in soc.command("telemetry stop")
        produced, sent, dropped = (bus.regs.telemetry_seq.read(), bus.regs.telemetry_sent.read(),
                                   bus.regs.telemetry_dropped.read())
        windows, violations, peak = (bus.regs.power_monitor_windows.read(), bus.regs.power_monitor_violations.read(),
                                     bus.regs.power_monitor_max.read())
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (frames and frames[-1]["seq"] == produced - 1):
            time.sleep(0.2)
    finally:
        rx.stop()
        bus.close()
    capture = []
    for f in frames:
        if capture and f["seq"] <= capture[-1]["seq"]:
            capture = []                          # the restart: a new capture from seq 0
        capture.append(f)
    assert produced > 100 and sent == produced and dropped == 0
    assert [f["seq"] for f in capture] == list(range(produced))
    assert rx.decoder.stats.bad_crc == 0 and rx.decoder.stats.gaps == 0
    assert sum(f["windows"] for f in capture) == windows
    assert sum(f["violations"] for f in capture) == violations > 0
    assert max(f["total_max"] for f in capture) == peak > 4096
    rec = telemetry.CsvRecorder(tmp_path / "rec.csv", 100e6)
    for f in capture:
        rec.add(f)
    rec.close()
    import csv
    rows = list(csv.DictReader(open(tmp_path / "rec.csv")))
    assert len(rows) == produced and float(rows[-1]["time_us"]) > float(rows[0]["time_us"])


def test_telemetry_drops_are_counted_when_the_host_reads_slowly(gateware, tmp_path):
    """A host that stops reading during a capture (small receive buffer, the simulator module holding
    2 KiB): the link pushes back, the chip drops whole frames and counts them; once the host reads
    again, every frame missing from the capture is one the chip says it dropped - none lost on the way."""
    import socket
    import threading
    from nandlab import telemetry
    from nandlab.simulator import telemetry_port
    run_dir = prepare_run_dir(gateware, tmp_path / "run", bridge_port=free_tcp_port(), telemetry_buffer=2048)
    d = telemetry.Decoder()
    frames, reading, done = [], threading.Event(), threading.Event()

    def reader(sock):
        sock.settimeout(0.1)
        while not done.is_set():
            if not reading.is_set():
                time.sleep(0.05)
                continue
            try:
                data = sock.recv(65536)
            except socket.timeout:
                continue
            if not data:
                break
            frames.extend(d.feed(data))

    with SimConsole(gateware, run_dir) as console:
        console.boot(timeout=120)
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", telemetry_port(run_dir)))
        t = threading.Thread(target=reader, args=(s,), daemon=True)
        t.start()
        reading.set()
        time.sleep(1)                                            # the link is drained
        assert "telemetry: on" in console.command("telemetry restart")
        reading.clear()                                          # ... and now the host stops reading
        out = console.command("nand workload 300 30", timeout=900)
        assert "error" not in out, out
        reading.set()
        # Stop once the chip sends again: a stop that overtakes the host's first reads finds the link
        # still blocked and drops every frame up to it (a race the faster simulator lost).
        sent = lambda: int(re.search(r"sent (\d+)", console.command("telemetry show")).group(1))
        deadline, last = time.monotonic() + 60, sent()
        while time.monotonic() < deadline:
            time.sleep(0.2)
            now = sent()
            if now > last + 8:
                break
            last = now
        console.command("telemetry stop")
        show = console.command("telemetry show")
        assert "(stopped)" in show, show
        produced, dropped = (int(x) for x in re.search(r"produced (\d+), sent \d+, dropped (\d+)", show).groups())
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (frames and frames[-1]["seq"] == produced - 1):
            time.sleep(0.1)
        done.set()
        t.join(timeout=5)
        s.close()
    capture = []
    for f in frames:
        if capture and f["seq"] <= capture[-1]["seq"]:
            capture = []
        capture.append(f)
    assert dropped > 100, show
    assert capture[-1]["seq"] == produced - 1 and len(capture) + dropped == produced
    assert d.stats.bad_crc == 0 and d.stats.lost_in_transit == 0, d.stats
