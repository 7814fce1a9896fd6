"""Integration: build the sim SoC, boot the firmware, use its shell and the host bridge (RemoteClient)."""

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nandlab import env
from nandlab.simulator import SimConsole, BridgeServer, prepare_run_dir, free_tcp_port, PROMPT

from nandlab.testing import build_target, run_cli as nandlab
from nandlab.nand_model.die import TIMING_CHECKS

pytestmark = pytest.mark.sim

SIM_DIR = env.BUILD_DIR / "sim"
# A wall-clock limit on a whole `nandlab sim` run only guards against a hang: the CLI bounds its own waits
# in simulator processor time (SimConsole.expect), which a busy machine does not shorten.
HANG_GUARD_S = 3600
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


def test_dma_sync_range_makes_a_dma_seen(soc):
    """hal_dma_sync_range, which replaced the whole data-cache flush at each read completion (issue 17): a DMA
    into a buffer whose lines the CPU's data cache holds is not seen without a sync (so the check can fail),
    and after the sync every byte is what a read with the whole cache flushed gave: a tag's 8 bytes (one
    line evicted), 256 (lines evicted one by one) and 2048 (past the limit: the whole cache flushed)."""
    assert "dies up" in soc.command("ctl bringup", timeout=300)
    for n in (8, 256, 2048):
        out = soc.command(f"ctl dmasync 0 {n}", timeout=120)
        m = re.search(r"dmasync die=0 bytes=(\d+) stale=(\d+) wrong=(\d+)", out)
        assert m and int(m[1]) == n and int(m[2]) > 0 and int(m[3]) == 0, out


def test_ftl_refuses_bad_input_and_loses_nothing(soc):
    """Issue 15's bad input on the SoC's FTL: a never-formatted device, a sector past the end, a request
    over the largest one, a mount with another sector size (the device's geometry); each refused with
    its reason, and the sector written before them still reads back with its pattern."""
    out = soc.command("ftl mount", timeout=600)
    assert "no valid anchor record: the device is not formatted" in out, out
    assert "ftl formatted: " in soc.command("ftl format", timeout=900)
    assert "ftl write: sectors 0..0" in soc.command("ftl write 0 1 7", timeout=300)
    sectors = int(re.search(r"capacity: (\d+) sectors", soc.command("ftl info")).group(1))
    out = soc.command(f"ftl write {sectors} 1")
    assert f"error: sectors {sectors} + 1: the device has 0..{sectors - 1}" in out, out
    out = soc.command("ftl write 0 100000")
    assert "error: 100000 sectors: one command moves at most" in out, out
    soc.command("ftl config sector 512")
    out = soc.command("ftl mount", timeout=600)
    assert "geometry mismatch: formatted with sector bytes = 4096, this configuration has 512" in out, out
    soc.command("ftl config sector 4096")
    assert "ftl mounted: " in soc.command("ftl mount", timeout=600)
    out = soc.command("ftl check 0 1 7", timeout=300)
    assert "check sector=0 count=1 first=1 second=0 neither=0" in out, out


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


def test_shell_numbers_and_usage(soc):
    """Numbers are 0..0xffffffff, nothing else (a sign wrapped to 4294967295 before); a command that
    only prints its usage fails like any other error (a script's exit status says so)."""
    from nandlab.simulator import command_failed
    assert "error: count '-1' is not a number" in soc.command("mr 0x40000000 -1")
    assert "error: address '0x100000000' is over 32 bits" in soc.command("mr 0x100000000")
    assert "error: value '4294967296' is over 32 bits" in soc.command(f"mw {MAIN_RAM + 0x18000:#x} 4294967296")
    assert "error: count '+2' is not a number" in soc.command("mw 0x40018000 1 +2")
    assert "run past 0xffffffff" in soc.command("mr 0xfffffff0 8")
    for line, usage in (("mr", "mr <addr> [count]"), ("mw 1", "mw <addr> <value> [count]"), ("csr", "csr list"),
                        ("nand", "nand dies"), ("ctl", "ctl bringup")):
        out = soc.command(line)
        assert out.startswith(f"error: usage: {usage}") and command_failed(out), (line, out)
    assert not command_failed(soc.command("help"))


def test_bus_error_in_mr_and_mw_is_reported(soc):
    """Nothing answers at 0 (no ROM in the sim SoC): LiteX's bus timeout acks with all ones, which mr
    printed as data; now the bus error counter says it was no data."""
    out = soc.command("mr 0x0 2", timeout=120)
    assert "error: bus error reading 0x00000000" in out and "0xffffffff" not in out, out
    assert "error: bus error writing" in soc.command("mw 0x8 1", timeout=120)
    assert soc.command(f"mr {MAIN_RAM:#x}").startswith(f"0x{MAIN_RAM:08x}: 0x")          # RAM still reads


def test_waits_count_simulator_time_not_wall_clock(soc):
    """A busy machine (here: the simulator stopped for 8 s) stretches the wall-clock time a command
    takes, not the simulator processor time it is allowed: a 4 s budget is not used up."""
    import os
    import signal
    import threading
    os.kill(soc.proc.pid, signal.SIGSTOP)
    threading.Timer(8, os.kill, (soc.proc.pid, signal.SIGCONT)).start()
    t0 = time.monotonic()
    assert "target: sim" in soc.command("version", timeout=4)
    assert time.monotonic() - t0 >= 7


def test_time_base_advances(soc):
    def cycles():
        return int(soc.command("time").split()[1], 16)
    a = cycles()
    b = cycles()
    assert b > a


def test_idle_cpu_sleeps_and_wakes(soc):
    """At the idle shell the CPU's clock is stopped (gateware/common/cpuidle.py) for nearly every cycle,
    and what must wake it does: console input (the UART's interrupt: the second `time` is typed while the
    CPU sleeps) and the host bridge's cycles (a command through the mailbox)."""
    def sample():
        out = soc.command("time")
        return int(out.split()[1], 16), int(re.search(r"cpu slept: (\d+) cycles", out).group(1))
    c0, s0 = sample()
    time.sleep(3)
    c1, s1 = sample()
    cycles, slept = c1 - c0, (s1 - s0) % 2**32
    assert cycles > 100_000, "the simulator hardly ran"
    assert 0.9 * cycles < slept < cycles, (cycles, slept)
    out = nandlab("ftl", "remote", "config", "sector", "512", "--port", str(soc.server.bind_port),
                  "--build-dir", str(SIM_DIR), timeout=HANG_GUARD_S)
    assert out.returncode == 0 and out.stdout.startswith("ftl config: sector 512"), (out.stdout, out.stderr)


def test_cli_non_interactive_run(gateware):
    out = nandlab("sim", "--non-interactive", "--quiet", "--bridge-port", "0", "--no-server",
                  "--run", "version; csr read timebase_window", timeout=HANG_GUARD_S)
    assert out.returncode == 0, out.stderr
    assert "target: sim" in out.stdout
    assert "timebase_window = 0x00000004" in out.stdout  # 40 ns at 100 MHz.
    bad = nandlab("sim", "--non-interactive", "--quiet", "--bridge-port", "0", "--no-server",
                  "--run", "frob", timeout=HANG_GUARD_S)
    assert bad.returncode == 1 and "unknown command" in bad.stdout
    # A command that prints only its usage line (here: no address) fails the run too (issue 19, item 8).
    usage = nandlab("sim", "--non-interactive", "--quiet", "--bridge-port", "0", "--no-server",
                    "--run", "version; mr", timeout=HANG_GUARD_S)
    assert usage.returncode == 1 and "usage: mr" in usage.stdout, usage.stdout[-2000:]


def test_sigterm_to_interactive_sim_ends_litex_server(gateware):
    """SIGTERM to an interactive `nandlab sim` (on a terminal: a pty here) ends the simulator and the
    litex_server it started beside it, whose port is free again."""
    import os
    import pty
    import signal
    import socket
    import sys
    import threading
    master, slave = pty.openpty()
    ports = [str(free_tcp_port()) for _ in range(4)]
    proc = subprocess.Popen([sys.executable, "-m", "nandlab.cli", "sim", "--server-port", ports[0], "--bridge-port",
                             ports[1], "--telemetry-port", ports[2], "--nand-port", ports[3]],
                            stdin=slave, stdout=slave, stderr=subprocess.PIPE, text=True, cwd=env.REPO)
    os.close(slave)
    threading.Thread(target=lambda: _drain(master), daemon=True).start()

    def listening():
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", int(ports[0]))) == 0
    try:
        deadline = time.monotonic() + 300
        while not listening() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
        assert listening(), proc.stderr.read() if proc.poll() is not None else "litex_server never listened"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    time.sleep(1)
    assert not listening(), "litex_server still holds its port"
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p).find(f"--bind-port {ports[0]}") >= 0]


def _drain(fd):
    import os
    try:
        while os.read(fd, 4096):
            pass
    except OSError:
        pass


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_cli_csr_without_server_is_clear(gateware):
    port = free_tcp_port()
    out = nandlab("csr", "read", "ctrl_scratch", "--port", str(port))
    assert out.returncode == 2
    assert "no litex_server" in out.stderr and "Traceback" not in out.stderr


def test_ftl_remote_runs_the_shell_over_the_bridge(soc):
    """`nandlab ftl remote` runs an ftl command on the firmware's shell through litex_server (the
    mailbox of remote.c): its output and exit status come back, and the console shows it as typed."""
    import json
    port = str(soc.server.bind_port)
    out = nandlab("ftl", "remote", "info", "--port", port, "--build-dir", str(SIM_DIR))
    assert out.returncode == 1 and "error: no FTL mounted" in out.stdout, (out.stdout, out.stderr)
    out = nandlab("ftl", "remote", "config", "sector", "512", "--port", port, "--build-dir", str(SIM_DIR))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ftl config: sector 512, op"), out.stdout
    # The console saw both commands and their output, and its prompt came back.
    console = soc.expect("ftl config: sector 512", 60)
    assert "ftl info" in console and "ftl config sector 512" in console, console
    soc.expect(PROMPT, 60)
    assert "ftl config: sector 4096" in soc.command("ftl config sector 4096")   # the console still works
    out = nandlab("ftl", "remote", "config", "op", "70", "--json", "--port", port, "--build-dir", str(SIM_DIR))
    r = json.loads(out.stdout)
    assert out.returncode == 0 and r["status"] == 0 and r["command"] == "ftl config op 70", out.stdout
    assert "op 70 per mille" in r["output"]
    out = nandlab("ftl", "remote", "x" * 300, "--port", port, "--build-dir", str(SIM_DIR))
    assert out.returncode == 2 and "at most 255" in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_streamed_replay_on_a_running_soc(soc, tmp_path):
    """`nandlab replay --server` on a SoC already running behind litex_server (this simulator, as a board
    behind `nandlab server`): its shell driven through the bridge's mailbox. 60 requests through a
    window of 4 ring entries, smaller than the queue depth (8): the host refills over the simulated UART
    bridge while the run goes on; every request's result comes back in order, every read checks out,
    the host's and the firmware's counts agree, no more than the window is ever in flight, and the
    firmware counts the times it waited for the host."""
    import csv
    import json
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_replay import small_mqsim_trace
    t = small_mqsim_trace(tmp_path / "s.mqsim", n=60, seed=21)
    out_dir = tmp_path / "out"
    out = nandlab("replay", str(t), "--format", "mqsim", "--qd", "8", "--window", "4", "--out", str(out_dir),
                  "--server", str(soc.server.bind_port), "--build-dir", str(SIM_DIR), "--json", timeout=3600)
    assert out.returncode == 0, out.stderr[-3000:]
    s = json.loads(out.stdout)
    st, fw = s["stats"], s["firmware"]
    assert s["replay"]["soc"].startswith("running, litex_server at localhost:") and not s["telemetry"]["recorded"]
    assert st["requests"] == fw["n"] == 60 and st["errors"] == 0 and st["mismatches"] == 0
    assert st["counts"]["agree"]
    sm = st["stream"]
    assert sm["window"] == 4 == fw["window"] and sm["host_refills"] >= 1 and fw["max_in_flight"] <= 4
    assert sm["underruns"] == fw["underruns"] >= 1                      # a freed slot finds no record yet
    assert fw["stall_cycles"] > 0 and sm["stall_us"] == pytest.approx(fw["stall_cycles"] / 100)
    assert st["die_operations"]["program"]["operations"] == fw["ftl_nand_programs"] + fw["ftl_meta_programs"]
    with open(out_dir / "requests.csv") as f:
        ids = [int(r["id"]) for r in csv.DictReader(f)]
    assert ids == list(range(60))
    # The console saw the command the replay sent through the mailbox, and its prompt came back.
    soc.expect("ftl replay stream 60 8 4", 60)
    soc.expect(PROMPT, 60)


def test_profiler_names_where_the_cpu_was(soc):
    """The firmware's sampling profiler (prof, timer 0) over a command that spends its time printing:
    every sample lands in the image's code, and the host names the printing functions as the top."""
    from nandlab.profile import parse_dump, attribute, symbols
    assert "sampling every 1000 cycles" in soc.command("prof start 1000")
    soc.command("csr list", timeout=300)
    head, counts = parse_dump(soc.command("prof dump", timeout=300))
    assert head["samples"] > 50 and head["outside"] == 0 and sum(counts.values()) == head["samples"], head
    rows = attribute(head, counts, symbols(SIM_DIR / "software" / "firmware" / "firmware.elf"))
    top = {r["function"] for r in rows[:5]}
    assert top & {"uart_write", "litex_putc", "vfprintf", "__ultoa_invert"}, rows[:8]
    assert "error: prof start: a period of at least 1000" in soc.command("prof start 10")


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
    assert "page 2048+64 B, 64 pages/block, 1024 blocks/LUN, 2 plane(s)" in out
    assert "MPNFM: plane 1 has 512+16 B pages" in out     # nandlab's vendor extension, read in C
    assert "error: die 9 out of range 0..3" in soc.command("nand id 9")
    # The firmware kept to the ONFI timings: every die's timing checker stayed at zero.
    bus = _remote(soc.server)
    try:
        for die in range(NAND_DIES):
            for check in TIMING_CHECKS:
                assert getattr(bus.regs, f"nand_die{die}_viol_{check}").read() == 0, (die, check)
        state = bus.regs.nand_die2_state.read()
        assert (state >> 16) & 0xFF == 0xE0   # ONFI status: ready, not protected.
    finally:
        bus.close()
    # After 'ctl bringup' the dies are in NV-DDR: the bit-bang master (async SDR) says so instead of
    # finding every die absent.
    assert f"{NAND_DIES} of {NAND_DIES} dies up, NV-DDR mode 5" in soc.command("ctl bringup", timeout=300)
    for line in ("nand scan", "nand id 1", "nand workload 10"):
        out = soc.command(line)
        assert "error: the dies are in NV-DDR mode 5" in out and "absent" not in out, (line, out)
    assert "async SDR mode 0" in soc.command("ctl mode async 0", timeout=120)
    assert soc.command("nand scan", timeout=300).count("ONFI signature present") == NAND_DIES


def test_firmware_drives_the_dies_through_the_controller(soc):
    """The firmware's driver on the channel controller: RESET, READ ID, READ PARAMETER PAGE (CRC,
    copies) on every die, SET FEATURES to the fastest mode both sides have (NV-DDR mode 5), pages
    written by DMA through the BCH ECC, read back and compared, bit flips injected by a die corrected
    (the counts per codeword follow the die's flip positions); the dies' timing checkers stay at
    zero. Ends back in async SDR mode 0 for the bit-bang tests."""
    from nandlab.nand_model.reference import flip_position
    from nandlab.soc.targets.sim import NAND_DIES, NAND_PAGES
    out = soc.command("ctl bringup", timeout=300)
    assert out.count("ONFI NANDLAB NL-SLC-2K, 2048+64 B pages, 64 pages/block, 1024 blocks") == NAND_DIES, out
    assert f"{NAND_DIES} of {NAND_DIES} dies up, NV-DDR mode 5" in out, out
    out = soc.command("ctl test 2", timeout=600)
    assert f"NV-DDR mode 5, {NAND_DIES * 2 * 2048} bytes written and read back, 0 bytes differ" in out, out
    assert "ECC (BCH t=8 per 512 B): 0 bits corrected, max 0 in a codeword, 0 codewords uncorrectable" in out, out
    out = soc.command("ctl read 1 1 1 16", timeout=120)
    assert "read OK" in out and len(out.split("\n")[1].split()) == 16, out
    assert "error: die 9 out of range 0..3" in soc.command("ctl read 9 0 0")
    assert "error: block 1024 out of range 0..1023" in soc.command("ctl erase 0 1024")
    assert "error: interface 'ddr3' unknown" in soc.command("ctl mode ddr3 1")
    bus = _remote(soc.server)
    try:
        assert bus.regs.nand_ctrl_bytes_in.read() >= NAND_DIES * 2 * 2048
        for die in range(NAND_DIES):
            assert (bus.regs.nand_die0_state.read() >> 4) & 3 == 1          # NV-DDR
            for check in TIMING_CHECKS:
                assert getattr(bus.regs, f"nand_die{die}_viol_{check}").read() == 0, (die, check)
        # Die 1 flips 12 bits on every read of block 1 page 1 (positions from the reference model):
        # ECC corrects them, each codeword counting its own.
        flips, per_cw = 12, [0] * 4
        for i in range(flips):
            col = flip_position(i, 2048 + 64)[0]
            assert col < 2048        # (all in the data area: codeword = column // 512)
            per_cw[col // 512] += 1
        bus.regs.nand_die1_flip.write((1 << (NAND_PAGES - 1).bit_length() | 1) | flips << 24)   # block 1 page 1
        out = soc.command("ctl test 2", timeout=600)
        bus.regs.nand_die1_flip.write(0)
        assert "0 bytes differ" in out, out
        assert (f"die 1 block 1 page 1:  ECC: {flips} bits corrected, max {max(per_cw)} in a codeword, 0 uncorrectable; "
                f"per codeword: {' '.join(map(str, per_cw))}") in out, out
        assert f"{flips} bits corrected, max {max(per_cw)} in a codeword, 0 codewords uncorrectable" in out, out
        assert bus.regs.nand_ctrl_ecc_fixed.read() > 0
        check_multiplane_with_ecc(soc, bus)
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


def check_multiplane_with_ecc(soc, bus):
    """Multi-plane programs and reads through the ECC ('ctl planes'), under the plane architecture the
    dies enforce ('die arch'): CNFM takes one page address on both planes and refuses two; DW-NFM takes
    two pages of one type (SLC: any two); both refuse two blocks of one plane (plane = block & 1). The
    dies' own counters (planecount) and refusal reasons say what ran; 'die ops' prints the same."""
    from nandlab import planecount
    from nandlab.nand_model.reference import REASON_PLANE_ADDR, REASON_PLANE_REPEAT
    reasons = lambda: [getattr(bus.regs, f"nand_die1_fail_reason{r}").read() for r in (REASON_PLANE_ADDR,
                                                                                     REASON_PLANE_REPEAT)]
    before, refused = planecount.read(bus.regs), reasons()
    try:
        assert "die 1: CNFM" in soc.command("die arch CNFM")
        cases = [("2 1 3 1", True), ("4 1 7 2", False), ("4 0 6 0", False)]
        for arch in ("CNFM", "DW-NFM"):
            assert f"die 1: {arch}" in soc.command(f"die arch {arch}")
            for pages, accepted in cases:
                out = soc.command(f"ctl planes 1 {pages}", timeout=300)
                if accepted:
                    assert re.search(r"program OK, status 0x[ec]0; read OK", out), (arch, pages, out)
                    assert "4096 bytes written and read back, 0 bytes differ" in out, (arch, pages, out)
                else:
                    assert "error: the die refused the combination" in out, (arch, pages, out)
            cases[1] = ("4 1 7 2", True)           # DW-NFM: any two pages of one type
        counts = planecount.delta(before, planecount.read(bus.regs))[1]
        assert counts["mp"]["program"][2] == counts["mp"]["read"][2] == 3, counts
        assert [a - b for a, b in zip(reasons(), refused)] == [1, 2]
        out = soc.command("die ops")
        assert re.search(r"^die 1: read \d+ 2-page \d+; program \d+ 2-page \d+; erase \d+$", out, re.M), out
        # The run-time time scale: the control register's time_scale_shift field, on every die.
        from nandlab.nand_model.die.core import CONTROL_TIME_SHIFT
        offset, size = CONTROL_TIME_SHIFT
        assert "die 3: time shift 3 (array times / 10 / 2^3)" in soc.command("die time-shift 3")
        assert (bus.regs.nand_die3_control.read() >> offset) & ((1 << size) - 1) == 3
        assert "error: time shift '21': 0 (the build's array times) .. 20" in soc.command("die time-shift 21")
    finally:
        soc.command("die arch CNFM")
        soc.command("die time-shift 0")


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
        # The bit-bang master starts the four erases one after another (five bit-banged cycles of CSR
        # writes and delays each), so their 0.72 I_max pre-charge steps (13.5 us at time scale 10) need
        # not coincide: the sum's peak moves with the firmware's speed (above 2 x I_max at ba59932, 1.87 x
        # at 3610d6a with the same gateware); four overlapping erases exceed 1.25 x I_max.
        assert viol > 0 and peak > 1.25 * 4096 and windows > 1000, results
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


def test_ring_fault_injection_in_the_soc(soc):
    """The SoC's ring is built with packet protection and injectors (off until written): with protect
    applied, a dropped, a duplicated and a corrupted packet are each detected (audit, sequence bit,
    parity) and recovered from; the ring runs on with its configuration and the dies stay under the
    budget; protect off again gives the paper's packet back."""
    import time
    from nandlab.soc.targets.sim import NAND_DIES
    bus = _remote(soc.server)
    regs = bus.regs
    try:
        # (Each write is read back: bridge writes are posted, the shell command must come after them.)
        regs.power_ring_fault_ctl.write(1)                      # protect, taken on the next apply
        assert regs.power_ring_fault_ctl.read() == 1
        out = soc.command("power set kmtpm_sub tg 4 alpha 1", timeout=120)
        assert "TT = 15 tokens" in out, out
        assert regs.power_ring_fault_status.read() & 1
        assert (regs.power_ring_status.read() >> 16) & 0xF == 1 + 4 + 2      # packet bits
        for n, (kind, pos) in enumerate(((1, 0), (2, 0), (3, 3)), 1):      # drop, duplicate, flip bit 3
            regs.power_ring_fault_ctl.write(1 | kind << 4 | pos << 8 | (n % NAND_DIES) << 16 | 1 << 24)
            for _ in range(200):
                if regs.power_ring_recoveries.read() == n and regs.power_ring_status.read() & 1:
                    break
                time.sleep(0.05)
            assert regs.power_ring_recoveries.read() == n
        assert [regs.power_ring_injected_drop.read(), regs.power_ring_injected_dup.read(),
                regs.power_ring_injected_flip.read()] == [1, 1, 1]
        assert [regs.power_ring_detected_audit.read(), regs.power_ring_detected_seq.read(),
                regs.power_ring_detected_parity.read()] == [1, 1, 1]
        out = soc.command("power")
        assert "ring: running, mode kmtpm_sub, TT 15" in out, out
        soc.command("power clear")
        out = soc.command("nand erase all 5", timeout=600)
        assert out.count("erase block 5: ok") == NAND_DIES, out
        assert regs.power_monitor_violations.read() == 0
    finally:
        regs.power_ring_fault_ctl.write(0)
        assert regs.power_ring_fault_ctl.read() == 0
        out = soc.command("power set npm", timeout=120)
        assert "power: npm, TG 4, alpha 4: TT = 60 tokens" in out, out
        assert not regs.power_ring_fault_status.read() & 1
        assert (regs.power_ring_status.read() >> 16) & 0xF == 1 + 6         # TT = 60: the paper's 7 bits
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
        budget = soc.budget(60)           # simulator processor time, not wall-clock (a busy machine)
        while not budget.expired() and not (frames and frames[-1]["seq"] == produced - 1):
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
        budget, last = console.budget(60), sent()
        while not budget.expired():
            time.sleep(0.2)
            now = sent()
            if now > last + 8:
                break
            last = now
        console.command("telemetry stop")
        show = console.command("telemetry show")
        assert "(stopped)" in show, show
        produced, dropped = (int(x) for x in re.search(r"produced (\d+), sent \d+, dropped (\d+)", show).groups())
        budget = console.budget(60)
        while not budget.expired() and not (frames and frames[-1]["seq"] == produced - 1):
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


# The dies' arrays outside the model (the nandstore module) -------------------------------------------

def _pattern(seed, n):
    """The bytes `ctl write ... SEED` programs (cmds_ctl.c's pattern())."""
    x, out = (seed * 2654435761 + 1) & 0xFFFFFFFF, bytearray()
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
        out.append(x >> 16 & 0xFF)
    return bytes(out)


def _ctl_read(soc, die, block, page, n=32, raw=False):
    """The bytes `ctl read` shows (through the ECC unless `raw`)."""
    out = soc.command(f"ctl read {die} {block} {page} {n}" + (" raw" if raw else ""), timeout=120)
    assert "read OK" in out, out
    return bytes(int(b, 16) for line in out.splitlines()[1:] if line.startswith("  ") and "ECC" not in line
                 for b in line.split())


def test_nand_arrays_outside_the_model(soc, tmp_path):
    """The dies' arrays in the nandstore module, at the sim geometry: pages programmed far beyond the
    old 8 x 4 read back, an erase gives FFh and frees the stored page, factory bad-block markers read
    as the block RAM backend's (and a bad block refuses to erase); the arrays survive a SoC reset
    (LiteX ctrl_reset through the bridge: the CPU, controllers and dies restart); an image saved,
    the device changed, the image loaded: the old pages are back; an image of another geometry is
    refused with the mismatch named, through the API and the CLI, and changes nothing."""
    from nandlab.nand_model.common import DieConfig
    from nandlab.nand_model.die.common import bad_block_markers
    from nandlab.nand_model.parts import get_part
    from nandlab.nandimage import NandStore, read_pages, read_header, Geometry
    from nandlab.errors import NandLabError
    from nandlab.simulator import nand_port, BANNER
    from nandlab.soc.targets.sim import NAND_DIES, NAND_BLOCKS, NAND_PAGES, NAND_PART, sim_bad_blocks
    store = NandStore(nand_port(soc.run_dir))
    last = NAND_DIES - 1
    pages = [(0, 1000, NAND_PAGES - 1, 7), (last, 2, 0, 9)]       # die, block, page, seed
    assert f"{NAND_DIES} of {NAND_DIES} dies up" in soc.command("ctl bringup", timeout=300)
    markers = 2 * NAND_DIES
    assert f"{markers} pages in {markers} blocks stored" in store.stats()
    for die, block, page, seed in pages:
        assert "erase OK" in soc.command(f"ctl erase {die} {block}", timeout=120)
        assert "program OK" in soc.command(f"ctl write {die} {block} {page} {seed}", timeout=120)
        assert _ctl_read(soc, die, block, page) == _pattern(seed, 32)
    assert f"{markers + 2} pages in {markers + 2} blocks stored" in store.stats()

    # Factory bad blocks: the marker the block RAM backend's initial contents have (bad_block_markers).
    part = get_part(NAND_PART).scaled(blocks_per_lun=NAND_BLOCKS, pages_per_block=NAND_PAGES)
    bad = sim_bad_blocks(NAND_BLOCKS)(0)
    [(word, value)] = [(w, v) for w, v in bad_block_markers(DieConfig(part, bad_blocks=bad)).items()
                       if w // (528 * NAND_PAGES) == bad[0]]
    spare = _ctl_read(soc, 0, bad[0], 0, 2052, raw=True)
    assert spare == b"\xff" * 2048 + value.to_bytes(4, "little") and spare[2048] == 0
    assert _ctl_read(soc, 0, bad[0] - 1, 0, 2052, raw=True) == b"\xff" * 2052
    assert "erase NAND_FAIL" in soc.command(f"ctl erase 0 {bad[0]}", timeout=120)
    assert _ctl_read(soc, 0, bad[0], 0, 2052, raw=True)[2048] == 0

    # SoC reset: everything on chip restarts, the arrays stay.
    bus = _remote(soc.server)
    try:
        bus.regs.ctrl_scratch.write(0x5a5a)
        bus.regs.ctrl_reset.write(1)                               # soc_rst
        soc.expect(BANNER, 60)
        soc.expect(PROMPT, 60)
        assert bus.regs.ctrl_scratch.read() == 0x12345678          # the SoC's registers were reset
    finally:
        bus.close()
    assert int(soc.command("time").split()[1], 16) < 10_000_000
    assert "error: run 'ctl bringup' first" in soc.command("ctl read 0 1 1")
    assert f"{NAND_DIES} of {NAND_DIES} dies up" in soc.command("ctl bringup", timeout=300)
    for die, block, page, seed in pages:
        assert _ctl_read(soc, die, block, page) == _pattern(seed, 32)

    # Image: the stored pages only, with the geometry.
    image = tmp_path / "device.img"
    assert f"saved {markers + 2} pages" in store.save(image)
    header = read_header(image)
    assert header.geometry == Geometry(NAND_DIES, NAND_BLOCKS, NAND_PAGES, 2048, 64)
    assert image.stat().st_size == 64 + (markers + 2) * (8 + 2112)
    saved = read_pages(image)
    for die, block, page, seed in pages:
        assert saved[die, block, page][:2048] == _pattern(seed, 2048)
    assert saved[0, bad[0], 0][2048] == 0
    # Changed: one page erased (its storage freed), another rewritten.
    assert "erase OK" in soc.command("ctl erase 0 1000", timeout=120)
    assert _ctl_read(soc, 0, 1000, NAND_PAGES - 1, raw=True) == b"\xff" * 32
    assert f"{markers + 1} pages in {markers + 1} blocks stored" in store.stats()
    soc.command(f"ctl erase {last} 2", timeout=120)
    soc.command(f"ctl write {last} 2 0 11", timeout=120)
    assert _ctl_read(soc, last, 2, 0) == _pattern(11, 32)
    assert f"loaded {markers + 2} pages" in store.load(image)
    for die, block, page, seed in pages:
        assert _ctl_read(soc, die, block, page) == _pattern(seed, 32)

    # Another geometry: refused, named, nothing changed (API and CLI).
    other = bytearray(image.read_bytes())
    other[20:24] = (8).to_bytes(4, "little")                      # blocks per die
    (tmp_path / "other.img").write_bytes(other)
    with pytest.raises(NandLabError, match=r"has another geometry: blocks per die 8 \(the simulator's: 1024\)"):
        store.load(tmp_path / "other.img")
    port = str(nand_port(soc.run_dir))
    out = nandlab("nand", "image", "load", str(tmp_path / "other.img"), "--port", port)
    assert out.returncode == 2 and "blocks per die 8 (the simulator's: 1024)" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert _ctl_read(soc, 0, 1000, NAND_PAGES - 1) == _pattern(7, 32)
    out = nandlab("nand", "image", "save", str(tmp_path / "cli.img"), "--port", port)
    assert out.returncode == 0 and f"saved {markers + 2} pages" in out.stdout, out.stderr
    assert read_pages(tmp_path / "cli.img") == saved


def test_sim_starts_from_a_nand_image(gateware, tmp_path):
    """`nandlab sim --nand-image FILE` loads the image before the first cycle (an image written here,
    from the format's description); an image of another geometry is refused before anything runs."""
    from nandlab.nandimage import HEADER, RECORD, MAGIC, VERSION
    from nandlab.soc.targets.sim import NAND_DIES, NAND_BLOCKS, NAND_PAGES
    page = (b"nandlab image page" + b"\x00" * 14) + b"\xff" * (2112 - 32)

    def image(path, blocks):
        path.write_bytes(HEADER.pack(MAGIC, VERSION, 64, NAND_DIES, blocks, NAND_PAGES, 2048, 64, 2112, 1)
                         + RECORD.pack(1, 900 * NAND_PAGES + 5) + page)
        return str(path)

    out = nandlab("sim", "--non-interactive", "--quiet", "--bridge-port", "0", "--no-server", "--nand-image",
                  image(tmp_path / "a.img", NAND_BLOCKS), "--run", "ctl bringup; ctl read 1 900 5 32 raw; "
                  "ctl read 1 900 4 16 raw", timeout=HANG_GUARD_S)
    assert out.returncode == 0, out.stderr
    shown = out.stdout.split("die 1 block 900 page 5: read OK")[1].split("\n")
    assert " ".join(shown[1:3]).split() == [f"{b:02x}" for b in page[:32]], out.stdout
    assert "die 1 block 900 page 4: read OK\n  " + " ".join(["ff"] * 16) in out.stdout.replace("\r", "")
    bad = nandlab("sim", "--non-interactive", "--nand-image", image(tmp_path / "b.img", 512), "--run", "version")
    assert bad.returncode == 2 and "blocks per die 512 (the simulator's: 1024)" in bad.stderr, bad.stderr
    assert "generating" not in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_sim_storage_soc_matches_block_ram():
    """The simulated SoC with its dies' arrays in the nandstore module and with them in block RAM (8 dies
    of 8 x 4 pages, two builds): one shell session prints the same in both, down to the controller's
    throughput measured in cycles and the bit-bang workload's operation counts."""
    session = "nand workload 2000 30; ctl bringup; ctl test 4; ctl test 2 5; ctl read 3 5 1 16; irq test 2"
    outs = {}
    for storage in ("bram", "sim"):
        out = nandlab("sim", "--dies", "8", "--nand-blocks", "8", "--nand-pages", "4", "--nand-storage", storage,
                      "--non-interactive", "--quiet", "--bridge-port", "0", "--no-server", "--run", session,
                      timeout=1800)
        assert out.returncode == 0, out.stderr
        outs[storage] = out.stdout
    assert "65536 bytes written and read back, 0 bytes differ" in outs["bram"] and " KB/s" in outs["bram"]
    assert outs["sim"] == outs["bram"]


def _ftl_read_check(soc, first, count, seed, timeout):
    out = soc.command(f"ftl read {first} {count} {seed}", timeout=timeout)
    m = re.search(r"(\d+) of (\d+) sectors differ", out)
    assert m, out
    return int(m.group(1)), out


@pytest.mark.slow
def test_ftl_survives_a_power_cut(soc):
    """(Slow, 7 minutes: make test cuts power to the same FTL code on the host model, tests/test_ftl_host.py's
    power-cut tests, and runs the FTL on this SoC in tests/test_replay.py.) The FTL over every die through the channel controller: format (factory bad blocks found: two
    per simulated die), sectors written and acknowledged, then a second write cut short by a SoC
    reset while its programs are in flight (ctrl_reset through the bridge: CPU, controller and dies
    restart; the arrays keep what was programmed). After the reboot `ftl mount` recovers from the
    pages' tags, and every acknowledged sector reads back with its pattern (checked by the firmware
    against the pattern of its seed), the recovery counted as a scan."""
    from nandlab.simulator import BANNER
    from nandlab.soc.targets.sim import NAND_DIES
    out = soc.command("ftl format", timeout=900)
    assert "ftl formatted" in out, out
    stats = soc.command("ftl stats")
    assert re.search(rf"^bad_factory\s+{2 * NAND_DIES}$", stats, re.M), stats
    out = soc.command("ftl write 0 128 3", timeout=600)
    assert "ftl write: sectors 0..127" in out, out
    bus = _remote(soc.server)
    try:
        before = bus.regs.nand_ctrl_completed.read()
        soc.send("ftl write 4096 256 4\r")
        # Cut once the second write has programs completed and more in flight.
        # (A budget of the simulator's processor time: a busy machine slows the wait, not the test's verdict.)
        budget = soc.budget(600)
        while bus.regs.nand_ctrl_completed.read() < before + 40:
            assert not budget.expired(), "the second write did not start"
            time.sleep(0.2)
        bus.regs.ctrl_reset.write(1)
        soc.expect(BANNER, 120)
        soc.expect(PROMPT, 120)
    finally:
        bus.close()
    out = soc.command("ftl mount", timeout=900)
    assert "ftl mounted" in out, out
    bad, out = _ftl_read_check(soc, 0, 128, 3, timeout=600)
    assert bad == 0, out
    stats = soc.command("ftl stats")
    assert re.search(r"^recovery_kind\s+2$", stats, re.M) and re.search(r"^lost_pages\s+0$", stats, re.M), stats
    # The device goes on: the cut range written again and read back.
    assert "ftl write: sectors 4096..4351" in soc.command("ftl write 4096 256 5", timeout=600)
    bad, out = _ftl_read_check(soc, 4096, 256, 5, timeout=600)
    assert bad == 0, out


@pytest.mark.slow
def test_profile_guided_build_runs_the_same_firmware(gateware, tmp_path):
    """NANDLAB_SIM_PGO=1 (`pgo=True`): the instrumented compile, its training run and the second compile
    give a simulator whose console says what the plain build's says for the same commands (the SoC
    identifier line aside); both builds are of the default SoC."""
    from nandlab.simulator import prepare_run_dir
    from nandlab.soc.targets import sim as simtarget
    lines = []
    pgo_dir = simtarget.build_all(env.BUILD_DIR / "sim-pgo-test", pgo=True)
    assert list((pgo_dir / "obj_dir").glob("*.gcda")), "no profile was written"
    assert "-fprofile-use" in (pgo_dir / "obj_dir" / "Vsim.mk").read_text()
    session = ("nand workload 300 30", "ctl bringup", "ctl test 2")
    for gw in (gateware, pgo_dir):
        with SimConsole(gw, prepare_run_dir(gw, tmp_path / gw.parent.name)) as console:
            console.boot(timeout=600)
            lines.append([console.command(c, timeout=1800) for c in session])
    assert lines[0] == lines[1] and "error" not in " ".join(lines[0]), lines
