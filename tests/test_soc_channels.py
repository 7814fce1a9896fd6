"""SoC integration of the channel controllers: the completion interrupt reaches the CPU, N channels, the socket."""

import re

import pytest

from nandlab import env
from nandlab.csrmap import CSRMap
from nandlab.simulator import SimConsole, prepare_run_dir, free_tcp_port
from nandlab.testing import build_target
from nandlab.nand_model.die import TIMING_CHECKS

SIM_DIR = env.BUILD_DIR / "sim"


def _bases(csv):
    return {line.split(",")[1] for line in csv.read_text().splitlines() if line.startswith("csr_base,")}


# Interrupt ------------------------------------------------------------------------------------------

@pytest.mark.sim
def test_controller_interrupt_fires(tmp_path):
    """Completions waited for by interrupt: each of RESET and READ ID raises the controller's interrupt
    once and the handler counts it (the ID is read by DMA as usual); polled waits take none."""
    out = build_target("sim")
    assert out.returncode == 0, out.stderr
    gateware = SIM_DIR / "gateware"
    constants = CSRMap.from_csv(SIM_DIR / "csr.csv").constants
    assert "nand_ctrl_interrupt" in constants
    run_dir = prepare_run_dir(gateware, tmp_path / "run", bridge_port=free_tcp_port())
    with SimConsole(gateware, run_dir) as soc:
        soc.boot(timeout=120)
        assert "interrupt wired, completions polled, 0 interrupts taken" in soc.command("irq")
        assert "completions by interrupt, 0 interrupts taken" in soc.command("irq on")
        out = soc.command("irq test 2", timeout=120)
        assert "die 2: RESET, READ ID OK: 4f 4e 46 49 (ONFI); 2 interrupts during the test" in out, out
        out = soc.command("irq test 0", timeout=120)
        assert "die 0: RESET, READ ID OK: 4f 4e 46 49 (ONFI); 2 interrupts during the test" in out, out
        assert "completions by interrupt, 4 interrupts taken" in soc.command("irq")
        assert "completions polled, 4 interrupts taken" in soc.command("irq off")
        out = soc.command("irq test 1", timeout=120)
        assert "die 1: RESET, READ ID OK: 4f 4e 46 49 (ONFI); 0 interrupts during the test" in out, out
        assert "4 interrupts taken" in soc.command("irq")
        assert "error: die 9 out of range 0..3" in soc.command("irq test 9")


# Channels -------------------------------------------------------------------------------------------

@pytest.mark.unit
def test_two_channels_each_with_dma_and_interrupt():
    """--channels 2: a second channel of dies (nand_ch1_die*) with its own controller (nand_ctrl1), DMA
    master and interrupt; channel 0 keeps its names, its bit-bang master and its mux."""
    from nandlab.soc.targets import sim
    out = env.BUILD_DIR / "test" / "sim_channels2"
    soc = sim.generate_headers(out, dies=2, channels=2)
    bases = _bases(out / "csr.csv")
    assert {"nand_ctrl", "nand_ctrl1", "nand_bus_mux", "nand_bitbang", "nand_die0", "nand_die1",
            "nand_ch1_die0", "nand_ch1_die1"} <= bases, bases
    assert not {"nand_ctrl2", "nand_ch1_die2", "nand_bus_mux1"} & bases
    csrs = CSRMap.from_csv(out / "csr.csv")
    for reg in ("desc0", "submit", "cpl", "ev_enable"):
        assert f"nand_ctrl_{reg}" in csrs.registers and f"nand_ctrl1_{reg}" in csrs.registers, reg
    c = csrs.constants
    assert c["nandlab_channels"] == "2" and c["nandlab_dies"] == "2"
    assert c["nand_ctrl_interrupt"] != c["nand_ctrl1_interrupt"]
    assert int(c["config_cpu_interrupts"]) > max(int(c["nand_ctrl_interrupt"]), int(c["nand_ctrl1_interrupt"]))
    assert {"nand_ctrl_dma", "nand_ctrl1_dma"} <= set(soc.bus.masters)
    assert soc.irq.locs["nand_ctrl"] != soc.irq.locs["nand_ctrl1"]
    header = (out / "software" / "include" / "generated" / "soc.h").read_text()
    assert re.search(r"#define NAND_CTRL1_INTERRUPT \d+", header)


@pytest.mark.unit
def test_default_is_one_channel():
    from nandlab.soc.targets import sim
    out = env.BUILD_DIR / "test" / "sim_channels1"
    soc = sim.generate_headers(out)
    bases = _bases(out / "csr.csv")
    assert "nand_ctrl" in bases and not any(b.startswith(("nand_ctrl1", "nand_ch1")) for b in bases)
    assert [m for m in soc.bus.masters if m.startswith("nand")] == ["nand_ctrl_dma"]
    assert CSRMap.from_csv(out / "csr.csv").constants["nandlab_channels"] == "1"
    assert sim.build_dir_name() == "sim" and sim.build_dir_name(4, 2) == "sim4x2" and sim.build_dir_name(8) == "sim8"


@pytest.mark.unit
def test_channel_count_is_checked():
    from nandlab.soc.targets import sim
    with pytest.raises(ValueError, match="1..8"):
        sim.NandLabSimSoC(nand_channels=0)


@pytest.mark.sim
@pytest.mark.slow
def test_second_channel_runs_from_the_host(tmp_path):
    """A simulated SoC with two channels of one die: the firmware brings up channel 0 through its
    controller while the host drives channel 1's controller through the bridge (RESET, READ ID by DMA
    into main RAM); channel 1's completion raises its own event."""
    from litex import RemoteClient
    from nandlab.simulator import BridgeServer
    from nandlab.soc.targets import sim
    build_dir = env.BUILD_DIR / sim.build_dir_name(1, 2)
    gateware = sim.build_all(build_dir, dies=1, channels=2)
    constants = CSRMap.from_csv(build_dir / "csr.csv").constants
    addr = 0x4001F000                                          # Main RAM the firmware leaves free.
    bridge = free_tcp_port()
    run_dir = prepare_run_dir(gateware, tmp_path / "run", bridge_port=bridge)
    with SimConsole(gateware, run_dir) as soc:
        soc.boot(timeout=120)
        with BridgeServer(bridge, log_path=tmp_path / "litex_server.log") as server:
            bus = RemoteClient(port=server.bind_port, csr_csv=str(build_dir / "csr.csv"))
            bus.open()
            try:
                r = bus.regs
                bus.write(addr, 0)

                def run(op, col=0, length=0, tag=1):
                    r.nand_ctrl1_desc0.write(int(constants[f"nandlab_ctrl_op_{op}"]) | tag << 16)
                    r.nand_ctrl1_desc_col.write(col | length << 16)
                    r.nand_ctrl1_desc_addr.write(addr)
                    r.nand_ctrl1_submit.write(1)
                    for _ in range(200):
                        cpl = r.nand_ctrl1_cpl.read()
                        if cpl & 1:
                            break
                    assert cpl & 1 and (cpl >> 8) & 0xFF == tag, hex(cpl)
                    assert r.nand_ctrl1_ev_status.read() == 1       # The `done` level of channel 1 ...
                    assert r.nand_ctrl_ev_status.read() == 0        # ... not channel 0's.
                    r.nand_ctrl1_cpl_pop.write(1)
                    return (cpl >> 4) & 0xF

                assert run("reset", tag=1) == 0
                assert run("read_id", col=0x20, length=4, tag=2) == 0
                assert bus.read(addr).to_bytes(4, "little") == b"ONFI"
                assert r.nand_ctrl1_bytes_out.read() == 4 and r.nand_ctrl_bytes_out.read() == 0
            finally:
                bus.close()
        out = soc.command("ctl bringup", timeout=300)
        assert "1 of 1 dies up" in out, out


def _counters(status):
    """`ctl status` -> {channel: (bytes to NAND, bytes from NAND)}."""
    got, ch = {}, None
    for line in status.splitlines():
        m = re.match(r"controller(?: ch (\d+))?: ", line)
        if m:
            ch = int(m.group(1) or 0)
        m = re.search(r"bytes to NAND (\d+), from NAND (\d+)", line)
        if m and ch is not None:
            got[ch] = (int(m.group(1)), int(m.group(2)))
    return got


@pytest.mark.sim
@pytest.mark.slow
def test_firmware_drives_every_channel(tmp_path):
    """The firmware's driver on two channels of one die (the build of the test above): `ctl bringup`
    brings up the die of each channel (READ ID, parameter page, NV-DDR mode 5 on both), `ctl ch 1`
    selects channel 1 and `ctl test` moves pages with ECC through channel 1's controller only (its
    byte counters move, channel 0's do not), polled and by channel 1's interrupt; channel 0 still
    works from the same firmware, and a channel out of range is refused."""
    from litex import RemoteClient
    from nandlab.simulator import BridgeServer
    from nandlab.soc.targets import sim
    build_dir = env.BUILD_DIR / sim.build_dir_name(1, 2)
    gateware = sim.build_all(build_dir, dies=1, channels=2)
    bridge = free_tcp_port()
    run_dir = prepare_run_dir(gateware, tmp_path / "run", bridge_port=bridge)
    onfi = "ONFI NANDLAB NL-SLC-2K, 2048+64 B pages, 64 pages/block, 1024 blocks"
    with SimConsole(gateware, run_dir) as soc:
        soc.boot(timeout=120)
        out = soc.command("ctl bringup", timeout=300)
        lines = out.splitlines()
        assert f"die 0: {onfi}, copy 0" in lines and f"ch 1 die 0: {onfi}, copy 0" in lines, out
        assert "1 of 1 dies up, NV-DDR mode 5" in lines, out          # channel 0: as on one channel
        assert "ch 1: 1 of 1 dies up, NV-DDR mode 5" in lines, out
        assert "2 of 2 channels up, 2 of 2 dies" in lines, out
        assert "error: channel 2 out of range 0..1 (this SoC has 2 channels)" in soc.command("ctl ch 2")
        assert "ctl: channel 0 of 0..1, NV-DDR" in soc.command("ctl ch")
        assert "ctl: channel 1 of 0..1, NV-DDR" in soc.command("ctl ch 1")

        before = _counters(soc.command("ctl status"))
        out = soc.command("ctl test 2", timeout=600)
        assert "ctl test: ch 1, NV-DDR mode 5, 4096 bytes written and read back, 0 bytes differ" in out, out
        assert "ECC (BCH t=8 per 512 B): 0 bits corrected, max 0 in a codeword, 0 codewords uncorrectable" in out, out
        status = soc.command("ctl status")
        assert "ctl commands use channel 1" in status, status
        after = _counters(status)
        assert after[0] == before[0], (before, after)
        assert after[1][0] - before[1][0] >= 2 * 2048 and after[1][1] - before[1][1] >= 2 * 2048, (before, after)
        out = soc.command("ctl read 0 1 1 16", timeout=120)
        assert "ch 1 die 0 block 1 page 1: read OK" in out and "0 uncorrectable" in out, out
        assert "error: die 1 out of range 0..0" in soc.command("ctl read 1 1 1")

        # Completions by interrupt: channel 1's own.
        assert "(ch 0: 0, ch 1: 0)" in soc.command("irq on")
        out = soc.command("ctl test 1 2", timeout=600)
        assert "ch 1, NV-DDR mode 5, 2048 bytes written and read back, 0 bytes differ" in out, out
        m = re.search(r"\(ch 0: (\d+), ch 1: (\d+)\)", soc.command("irq"))
        assert m and m.group(1) == "0" and int(m.group(2)) >= 3, m     # erase, program, read
        out = soc.command("irq test 0 1", timeout=120)
        assert "ch 1 die 0: RESET, READ ID OK: 4f 4e 46 49 (ONFI); 2 interrupts during the test" in out, out

        # Channel 0 from the same firmware, by interrupt too.
        assert "ctl: channel 0 of 0..1, NV-DDR" in soc.command("ctl ch 0")
        out = soc.command("ctl test 1 2", timeout=600)
        assert "ctl test: NV-DDR mode 5, 2048 bytes written and read back, 0 bytes differ" in out, out
        m = re.search(r"\(ch 0: (\d+), ch 1: (\d+)\)", soc.command("irq off"))
        assert m and int(m.group(1)) >= 3, m

        # Both dies in NV-DDR, their timing checkers at zero.
        with BridgeServer(bridge, log_path=tmp_path / "litex_server.log") as server:
            bus = RemoteClient(port=server.bind_port, csr_csv=str(build_dir / "csr.csv"))
            bus.open()
            try:
                for die in ("nand_die0", "nand_ch1_die0"):
                    state = getattr(bus.regs, f"{die}_state").read()
                    assert (state >> 4) & 3 == 1 and (state >> 8) & 0xF == 5, (die, hex(state))   # NV-DDR mode 5
                    for check in TIMING_CHECKS:
                        assert getattr(bus.regs, f"{die}_viol_{check}").read() == 0, (die, check)
            finally:
                bus.close()
