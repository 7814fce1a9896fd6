"""NAND pin PHY: phase mapping and latencies in simulation (behavioural DDR models), the primitives by
yosys synthesis for 7-series and ECP5, the socket pin maps in the generated board projects, and the
channel controller reading through the PHY's latencies.

Simulation convention: cycle c lies between sys rising edges c and c+1; a `sys_fall` generator's
tick c reads the levels at the end of phase 0 of cycle c, a `sys` generator's tick c reads the
end of phase 1 of cycle c-1 (and bus outputs of cycle c-1).
"""

import random
import re

import pytest

from migen import *
from migen.genlib.record import DIR_M_TO_S
from migen.sim import passive

from nandlab import env
from nandlab.gateware.onfi.common import NandBus
from nandlab.gateware.onfi.pinphy import (DQS_LANE, LANES, NandLabPinPHY, family_of, sim_pads)

FAMILIES = ["xc7", "ecp5"]
CLOCKS = {"sys": 10, "sys_fall": (10, 5)}


class _SimTop(Module):
    """PHY on simulated pads. The chip drives `chip_dq`/`chip_dqs` (from a generator, or from
    `chip(pads)` -> (dq, dqs) expressions: a chip without delay); a pin reads what the PHY drives
    while its output enable is on (the chip is then expected to be quiet)."""
    def __init__(self, family, targets=2, luns=1, chip=None):
        self.clock_domains.cd_sys = ClockDomain()
        self.clock_domains.cd_sys_fall = ClockDomain()
        self.bus = NandBus(targets=targets, luns=luns)
        self.pads = pads = sim_pads(targets)
        self.submodules.phy = NandLabPinPHY(pads, self.bus, family=family, sim=True)
        self.chip_dq = Signal(8)
        self.chip_dqs = Signal()
        if chip is not None:
            dq, dqs = chip(pads)
            self.comb += self.chip_dq.eq(dq), self.chip_dqs.eq(dqs)
        self.comb += [
            pads.dq_i.eq(Mux(pads.dq_oe, pads.dq_o, self.chip_dq)),
            pads.dqs_i.eq(Mux(pads.dqs_oe, pads.dqs_o, self.chip_dqs)),
        ]


OUT_PINS = ["ce_n", "cle", "ale", "we_n", "re_n", "wp_n", "dq_o", "dq_oe", "dqs_o", "dqs_oe"]


def _expected_pins(bus_levels, phase):
    """Pin levels a cycle of bus levels gives in `phase` (0/1)."""
    b = bus_levels
    per_phase = lambda v, w: (v >> (w * phase)) & (2**w - 1)
    return {"ce_n": b["ce_n"], "cle": b["cle"], "ale": b["ale"], "wp_n": b["wp_n"],
            "we_n": per_phase(b["we_n"], 1), "re_n": per_phase(b["re_n"], 1),
            "dq_o": per_phase(b["dq_o"], 8), "dqs_o": per_phase(b["dqs_o"], 1),
            "dq_oe": b["dq_oe"], "dqs_oe": b["dqs_oe"]}


@pytest.mark.unit
@pytest.mark.parametrize("family", FAMILIES)
def test_output_phases(family):
    """Phase 0 of every fast output is the first half of the pin cycle, phase 1 the second; every
    output, whole-cycle or not, is on the pins `output_latency` cycles after the bus."""
    rng = random.Random(1)
    top = _SimTop(family)
    n = 40
    widths = {"ce_n": 2, "cle": 1, "ale": 1, "we_n": 2, "re_n": 2, "wp_n": 1, "dq_o": 16, "dq_oe": 1,
              "dqs_o": 2, "dqs_oe": 1}
    levels = [{k: rng.getrandbits(w) for k, w in widths.items()} for _ in range(n)]
    seen = {}

    def drive():
        for c in range(n):
            for k, v in levels[c].items():
                yield getattr(top.bus, k).eq(v)
            yield

    def monitor(phase):
        c = 0
        while True:
            pins = {}
            for k in OUT_PINS:
                pins[k] = yield getattr(top.pads, k)
            seen[(c - (phase == 1), phase)] = pins
            c += 1
            yield

    run_simulation(top, {"sys": [drive(), passive(monitor)(1)], "sys_fall": [passive(monitor)(0)]},
                   clocks=CLOCKS)
    lat = top.phy.output_latency
    assert lat == 1
    checked = 0
    for c in range(n - 1):
        for phase in (0, 1):
            got = seen[(c + lat, phase)]
            want = _expected_pins(levels[c], phase)
            # One output enable per cycle: it follows the registered bus level for both phases.
            assert got == want, (family, c, phase, got, want)
            checked += 1
    assert checked == 2 * (n - 1)


def _run_chip(top, n, bus_levels, chip=None, extra=()):
    """Drive the bus with `bus_levels(c)` for n cycles and, if given, the chip pins with
    `chip(c, phase)` -> (dq, dqs) for phase `phase` of pin cycle c; returns the bus inputs seen per
    cycle (bus cycle c: the value after edge c)."""
    seen = {}

    def drive():
        for c in range(n):
            for k, v in bus_levels(c).items():
                yield getattr(top.bus, k).eq(v)
            yield
            seen[c] = {"dq_i": (yield top.bus.dq_i), "dqs_i": (yield top.bus.dqs_i)}

    def chip_driver(phase):
        # A write at sys tick c holds for phase 0 of cycle c, at sys_fall tick c for its phase 1;
        # the DDR samplers at those edges still see the level before.
        c = 0
        while True:
            dq, dqs = chip(c, phase)
            yield top.chip_dq.eq(dq)
            yield top.chip_dqs.eq(dqs)
            c += 1
            yield

    gens = {"sys": [drive(), *extra], "sys_fall": []}
    if chip is not None:
        gens["sys"].append(passive(chip_driver)(0))
        gens["sys_fall"].append(passive(chip_driver)(1))
    run_simulation(top, gens, clocks=CLOCKS)
    return seen


IDLE = {"ce_n": 0, "we_n": 3, "re_n": 3, "dq_oe": 0, "dqs_oe": 0}


@pytest.mark.unit
@pytest.mark.parametrize("family", FAMILIES)
def test_input_phases_and_latency(family):
    """Bytes a chip puts on DQ/DQS in phase 0 and 1 of a pin cycle reach bus.dq_i/dqs_i in the same
    phases, `input_latency` cycles later, for both families' DDR input pairing."""
    rng = random.Random(2)
    top = _SimTop(family)
    n = 40
    out = {(c, p): (rng.getrandbits(8), rng.getrandbits(1)) for c in range(n + 8) for p in (0, 1)}
    seen = _run_chip(top, n, lambda c: IDLE, chip=lambda c, p: out[(c, p)])
    lat = top.phy.input_latency
    assert lat == 2
    for c in range(n - lat):
        dq, dqs = seen[c + lat]["dq_i"], seen[c + lat]["dqs_i"]
        assert (dq & 0xFF, dqs & 1) == out[(c, 0)], (family, c)
        assert (dq >> 8, dqs >> 1) == out[(c, 1)], (family, c)


@pytest.mark.unit
@pytest.mark.parametrize("family", FAMILIES)
def test_read_latency_round_trip(family):
    """A chip without delay outputs a byte while CE#0 and RE# are low: it shows on bus.dq_i in exactly
    the phases the controller pulled RE# low, `read_latency` cycles later; cycles in which the PHY
    drives DQ itself read 0."""
    rng = random.Random(3)
    top = _SimTop(family, chip=lambda pads: (Mux((pads.ce_n[0] == 0) & (pads.re_n == 0), 0xC3, 0), 0))
    n = 60
    re = [rng.getrandbits(2) for _ in range(n)]
    oe = [int(rng.random() < 0.2) for _ in range(n)]
    levels = lambda c: {"ce_n": 0b10, "we_n": 3, "re_n": re[c], "dq_o": 0x5A5A, "dq_oe": oe[c], "dqs_oe": 0}
    seen = _run_chip(top, n, levels)
    lat = top.phy.read_latency
    assert lat == top.phy.output_latency + top.phy.input_latency == 3
    driven = 0
    for c in range(n - lat):
        got = seen[c + lat]["dq_i"]
        if oe[c]:
            driven += 1
            assert got == 0, (family, c)
        else:
            want = sum((0xC3 if not (re[c] >> p) & 1 else 0) << (8 * p) for p in (0, 1))
            assert got == want, (family, c, hex(got), hex(want))
    assert 0 < driven < n - lat


@pytest.mark.unit
def test_rb_synchroniser_and_luns():
    """R/B# of each target reaches all its LUN bits of bus.rb_n through two flops."""
    top = _SimTop("xc7", targets=2, luns=2)
    trace = {}

    def drive():
        for c in range(12):
            yield top.pads.rb_n.eq(0b01 if 3 <= c < 7 else 0b11)
            yield
            trace[c] = (yield top.bus.rb_n)

    run_simulation(top, {"sys": drive()}, clocks=CLOCKS)
    assert top.phy.rb_latency == 2
    # Pads set at tick c are seen by the synchroniser from edge c+1: bus value of cycle c+2.
    for c in range(12):
        pad = 0b01 if 3 <= c - 2 < 7 else 0b11
        want = (0b11 if pad & 1 else 0) | (0b1100 if pad & 2 else 0)
        if c >= 2:
            assert trace[c] == want, (c, trace[c], want)


@pytest.mark.unit
@pytest.mark.parametrize("family,taps,wraps", [("xc7", 32, True), ("ecp5", 128, False)])
def test_delay_tap_shadows(family, taps, wraps):
    """Lane-masked load/inc/dec keep a per-lane tap count that wraps (IDELAYE2) or stops (DELAYF)."""
    top = _SimTop(family)
    phy = top.phy
    assert phy.delay_taps == taps
    result = {}

    def pulse(sig):
        yield sig.eq(1)
        yield
        yield sig.eq(0)

    def drive():
        yield phy.dly_sel.eq(2**LANES - 1)
        yield phy.dly_value.eq(5)
        yield from pulse(phy.dly_load)
        yield phy.dly_sel.eq(1 << 3)
        for _ in range(3):
            yield from pulse(phy.dly_inc)
        yield phy.dly_sel.eq(1 << DQS_LANE)
        for _ in range(taps + 2):
            yield from pulse(phy.dly_dec)
        yield
        result["taps"] = []
        for t in phy.dly_taps:
            result["taps"].append((yield t))

    run_simulation(top, {"sys": drive()}, clocks=CLOCKS)
    start = 5 if family == "xc7" else 0       # ECP5's load returns to 0.
    assert result["taps"][0] == start and result["taps"][7] == start
    assert result["taps"][3] == start + 3
    assert result["taps"][DQS_LANE] == ((start - taps - 2) % taps if wraps else 0)


@pytest.mark.unit
def test_snapshot_freezes_at_dqs_change():
    """Snapshot mode dqs: after arm it keeps the samples of the first cycle in which DQS changes;
    live mode follows the samples, including the bytes the PHY drives itself."""
    top = _SimTop("ecp5")
    phy = top.phy
    got = {}
    # DQS rises in phase 1 of pin cycle 20; the bytes count phases.
    chip = lambda c, p: ((2 * c + p) & 0xFF, int(c > 20 or c == 20 and p == 1))

    def arm():
        yield phy.snap_mode.eq(1)
        yield phy.snap_arm.eq(1)
        yield
        yield phy.snap_arm.eq(0)
        for _ in range(35):
            yield
        got["dq"], got["dqs"], got["done"] = (yield phy.snap_dq), (yield phy.snap_dqs), (yield phy.snap_done)
        yield phy.snap_mode.eq(0)
        yield
        yield
        got["live"] = (yield phy.snap_dq)

    _run_chip(top, 40, lambda c: {**IDLE, "dq_o": 0x7E7E, "dq_oe": int(c >= 30)}, chip=chip, extra=[arm()])
    assert got["done"] == 1
    assert got["dqs"] == 0b10
    assert got["dq"] == (40 | 41 << 8)
    assert got["live"] == 0x7E7E


# Synthesis of the primitive path --------------------------------------------------------------------

class _SynthTop(Module):
    """The PHY on a board's socket pins, its bus driven by a counter and its inputs folded into an
    LED, so that yosys keeps every pin's cells."""
    def __init__(self, platform, io, clk, led):
        from functools import reduce
        from operator import xor
        from litex.build.io import CRG
        family = family_of(platform)
        self.submodules.crg = CRG(platform.request(clk))
        self.clock_domains.cd_idelay = ClockDomain()
        self.comb += self.cd_idelay.clk.eq(ClockSignal()), self.cd_idelay.rst.eq(ResetSignal())
        platform.add_extension(io)
        pads = platform.request("nand_socket")
        bus = NandBus(targets=len(pads.ce_n))
        self.submodules.phy = phy = NandLabPinPHY(pads, bus, family=family, with_idelayctrl=True)
        phy.add_csr()
        outs = [getattr(bus, name) for name, _, direction in bus.layout if direction == DIR_M_TO_S]
        count = Signal(len(Cat(*outs)))
        self.sync += count.eq(count + 1)
        self.comb += Cat(*outs).eq(count)
        self.comb += platform.request(led).eq(reduce(xor, Cat(bus.dq_i, bus.dqs_i, bus.rb_n, phy.snap_dq,
                                                             *phy.dly_taps)))


def _synth(platform, io, clk, led, family, name):
    from nandlab.resources import synthesize
    workdir = env.BUILD_DIR / "test" / name
    workdir.mkdir(parents=True, exist_ok=True)
    top = _SynthTop(platform, io, clk, led)
    verilog = workdir / f"{name}.v"
    verilog.write_text(str(platform.get_verilog(top, name=name)))
    return synthesize(verilog, name, family, workdir)["cells"], verilog.read_text()


@pytest.mark.board
def test_xc7_primitives():
    """7-series: ODDR on every output (and DQ/DQS enables), IOBUF + IDELAYE2 + IDDR on DQ0-7/DQS, one
    IDELAYCTRL; the Arty socket map."""
    from litex_boards.platforms import digilent_arty
    from nandlab.soc.targets.nand_socket import arty_nand_socket_io
    cells, verilog = _synth(digilent_arty.Platform(toolchain="vivado"), arty_nand_socket_io(), "clk100",
                            "user_led", "xc7", "pinphy_xc7")
    outputs = 2 + 5                                    # CE# x2, CLE, ALE, WE#, RE#, WP#.
    assert cells.get("ODDR") == outputs + 2 * LANES    # Data and enable of each bidirectional pin.
    assert cells.get("IDDR") == LANES and cells.get("IOBUF") == LANES
    assert cells.get("IDELAYE2") == LANES and cells.get("IDELAYCTRL") == 1
    assert re.search(r'IDELAY_TYPE\s*\("VAR_LOAD"\)', verilog)
    assert re.search(r'DDR_CLK_EDGE\s*\("SAME_EDGE"\)', verilog)    # The pairing the PHY realigns.


@pytest.mark.board
def test_ecp5_primitives():
    """ECP5: ODDRX1F on every output and DQ/DQS, TRELLIS_IO (BB) + DELAYF + IDDRX1F on DQ0-7/DQS;
    the Colorlight i5 socket map."""
    from litex_boards.platforms import colorlight_i5
    from nandlab.soc.targets.nand_socket import colorlight_i5_nand_socket_io
    cells, _ = _synth(colorlight_i5.Platform(board="i5", revision="7.0", toolchain="trellis"),
                      colorlight_i5_nand_socket_io(), "clk25", "user_led_n", "ecp5", "pinphy_ecp5")
    outputs = 1 + 4                                    # CE#, CLE, ALE, WE#, RE# (WP# strapped).
    assert cells.get("ODDRX1F") == outputs + LANES
    assert cells.get("IDDRX1F") == LANES and cells.get("DELAYF") == LANES
    assert cells.get("TRELLIS_IO", 0) + cells.get("BB", 0) == LANES


# Board targets with the socket ------------------------------------------------------------------------

def _assert_socket_controller(csr):
    """The socket's channel controller (beside the emulated channel's) and the mux between it and the
    bit-bang master, in a board's csr.csv."""
    assert "csr_register,nand_socket_mux_select," in csr
    assert "csr_register,nand_socket_ctrl_desc0," in csr and "csr_register,nand_socket_ctrl_ev_enable," in csr
    assert "csr_register,nand_ctrl_desc0," in csr
    irqs = dict(re.findall(r"^constant,(nand_socket_ctrl|nand_ctrl)_interrupt,(\d+)", csr, re.M))
    assert len(set(irqs.values())) == 2, irqs


@pytest.mark.board
def test_arty_socket_in_vivado_project():
    """`--nand-socket` puts the socket pins (LVCMOS33) in the XDC and the bit-bang + PHY CSRs in csr.csv,
    and a channel controller beside the bit-bang master (a mux chooses) with its DMA and interrupt."""
    from nandlab.testing import build_target
    out = build_target("arty", "--no-compile", "--nand-socket")
    assert out.returncode == 0, out.stderr
    xdc = (env.BUILD_DIR / "arty" / "gateware" / "digilent_arty.xdc").read_text()
    pins = {"nand_socket_dq[0]": "E15", "nand_socket_dq[7]": "J15", "nand_socket_dqs": "U12",
            "nand_socket_we_n": "V12", "nand_socket_re_n": "V10", "nand_socket_cle": "V11",
            "nand_socket_ale": "U14", "nand_socket_wp_n": "V14", "nand_socket_ce_n[0]": "T13",
            "nand_socket_ce_n[1]": "G13", "nand_socket_rb_n[0]": "U13", "nand_socket_rb_n[1]": "B11"}
    for port, loc in pins.items():
        assert re.search(rf"LOC {loc} \[get_ports \{{{re.escape(port)}\}}\]", xdc), port
        assert re.search(rf"IOSTANDARD LVCMOS33 \[get_ports \{{{re.escape(port)}\}}\]", xdc), port
    assert "D4" not in " ".join(pins.values())         # Pmod JD pin 1 stays the telemetry UART.
    csr = (env.BUILD_DIR / "arty" / "csr.csv").read_text()
    assert "nand_socket_bitbang_ctrl" in csr and "nand_socket_phy_dly_ctl" in csr
    assert "constant,nandlab_nand_socket_read_latency,3" in csr
    assert "constant,nandlab_nand_socket_delay_taps,32" in csr
    _assert_socket_controller(csr)
    soc_h = (env.BUILD_DIR / "arty" / "software" / "include" / "generated" / "soc.h").read_text()
    firmware = " ".join(p.read_text() for p in env.FIRMWARE_DIR.glob("*.[ch]"))
    used = set(re.findall(r"\bNANDLAB_NAND_SOCKET_[A-Z0-9_]*[A-Z0-9]\b", firmware))
    assert "NANDLAB_NAND_SOCKET_TARGETS" in used
    for name in sorted(used - {"NANDLAB_NAND_SOCKET_FAMILY_ECP5"}):   # What the firmware uses, the build generates
        assert re.search(rf"^#define {name}\b", soc_h, re.M), name  # (one family: the board's).
    assert "#define NANDLAB_NAND_SOCKET_FAMILY_XC7" in soc_h
    verilog = (env.BUILD_DIR / "arty" / "gateware" / "digilent_arty.v").read_text()
    assert "IDELAYE2" in verilog and "IOBUF" in verilog
    # DQS leaves a quarter cycle late (NV-DDR data input): its ODDR on the PLL's 90-degree sys clock.
    assert re.search(r"\.C +\(sys90_clk\),\s*\.CE \(1'd1\),\s*\.D1 \(nand_socket_bus_dqs_o\[0\]\)", verilog)
    outs = dict(re.findall(r"\.CLKOUT(\d)_DIVIDE +\((\S+)\)", verilog))
    phases = dict(re.findall(r"\.CLKOUT(\d)_PHASE +\((\S+)\)", verilog))
    assert any(outs[o] == outs["0"] and phases[o] == "7'd90" for o in outs)      # (CLKOUT0: sys)
    assert "constant,nandlab_nand_socket_dqs_shift_ps,2500" in csr
    assert len(re.findall(r"^IDELAYCTRL ", verilog, re.M)) == 1   # The DDR3 clocking's; the PHY adds none.


@pytest.mark.board
def test_colorlight_socket_in_open_flow_project():
    from nandlab.testing import build_target
    out = build_target("colorlight_i5", "--no-compile", "--nand-socket")
    assert out.returncode == 0, out.stderr
    gw = env.BUILD_DIR / "colorlight_i5" / "gateware"
    lpf = (gw / "colorlight_i5.lpf").read_text()
    pins = {"nand_socket_dq[0]": "C17", "nand_socket_dq[7]": "D20", "nand_socket_dqs": "C1",
            "nand_socket_we_n": "C2", "nand_socket_re_n": "E3", "nand_socket_cle": "E2",
            "nand_socket_ale": "D2", "nand_socket_ce_n": "B1", "nand_socket_rb_n": "A3"}
    for port, site in pins.items():
        assert f'LOCATE COMP "{port}" SITE "{site}"' in lpf, port
        assert re.search(rf'IOBUF PORT "{re.escape(port)}" .*IO_TYPE=LVCMOS33', lpf), port
    assert 'LOCATE COMP "telemetry_uart_tx" SITE "D1"' in lpf
    csr = (env.BUILD_DIR / "colorlight_i5" / "csr.csv").read_text()
    assert "nand_socket_phy_snap" in csr and "constant,nandlab_nand_socket_delay_taps,128" in csr
    _assert_socket_controller(csr)
    verilog = (gw / "colorlight_i5.v").read_text()
    assert "DELAYF" in verilog and "IDDRX1F" in verilog and "ODDRX1F" in verilog


@pytest.mark.board
def test_ecp5_place_and_route_packs_io_logic(capfd, monkeypatch):
    """nextpnr-ecp5 packs each socket pin's DDR registers and delay line into the pin's I/O logic
    (one IOLOGIC/SIOLOGIC per pin: DELAYF + IDDRX1F + ODDRX1F on DQ/DQS, ODDRX1F on the outputs)."""
    from litex_boards.platforms import colorlight_i5
    from nandlab.soc.targets import parse_nextpnr_log
    from nandlab.soc.targets.nand_socket import colorlight_i5_nand_socket_io
    platform = colorlight_i5.Platform(board="i5", revision="7.0", toolchain="trellis")
    top = _SynthTop(platform, colorlight_i5_nand_socket_io(), "clk25", "user_led_n")
    monkeypatch.chdir(env.REPO)             # YoWASP tools see the working tree, not /tmp.
    build_dir = env.BUILD_DIR / "test" / "pinphy_pnr"
    platform.build(top, build_dir=str(build_dir), build_name="pinphy_pnr")
    out = capfd.readouterr()
    log = out.out + out.err
    util = parse_nextpnr_log(log)["utilisation"]
    assert util["IOLOGIC"]["used"] + util["SIOLOGIC"]["used"] == 5 + LANES, util
    assert len(re.findall(r"IOLOGIC component DELAYF\S* connected to PIO", log)) == LANES
    assert (build_dir / "pinphy_pnr.bit").stat().st_size > 0


# The controller behind the PHY's latencies -----------------------------------------------------------

class _LatencyChannel(Module):
    """The channel controller and an emulated die, the bus between them delayed as the pin PHY delays it
    (`phy`: outputs by `output_latency` cycles, DQ/DQS/R/B# back by `input_latency`; the die stands for a
    chip without pin delay; the controller built with the PHY's `read_latency`), or direct. DMA into a
    small memory."""
    def __init__(self, phy):
        from litex.soc.interconnect import wishbone
        from nandlab.gateware.onfi.common import NandChannel, nand_bus_layout
        from nandlab.gateware.onfi.controller import NandLabChannelController
        from nandlab.gateware.onfi.pinphy import INPUT_LATENCY, OUTPUT_LATENCY
        from nandlab.nand_model.die import NandLabDie, TIMING_CHECKS
        from nandlab.testing import die_test_config
        config = die_test_config()
        self.submodules.die = NandLabDie(config)
        self.timing_checks = TIMING_CHECKS
        die_bus, ctl_bus = NandBus(), NandBus()
        self.submodules.channel = NandChannel(die_bus, [self.die.bus])
        wb = wishbone.Interface(data_width=32, adr_width=30)
        self.read_latency = OUTPUT_LATENCY + INPUT_LATENCY if phy else 0
        # R/B# comes back as late as DQ (output then input latency): the controller allows for it as it does
        # behind the PHY (add_nand_socket), or it would sample R/B# before the die's tWB-max fall shows.
        self.submodules.ctl = NandLabChannelController(ctl_bus, wb, config.sys_clk_freq, config.part,
                                                       read_latency=self.read_latency, rb_latency=self.read_latency)
        self.mem = Memory(32, 64)
        port = self.mem.get_port(write_capable=True, we_granularity=8)
        self.specials += self.mem, port
        self.comb += port.adr.eq(wb.adr), port.dat_w.eq(wb.dat_w), wb.dat_r.eq(port.dat_r)
        self.comb += port.we.eq(Replicate(wb.cyc & wb.stb & wb.we & ~wb.ack, 4) & wb.sel)
        self.sync += wb.ack.eq(wb.cyc & wb.stb & ~wb.ack)
        for name, width, direction in nand_bus_layout():
            src, dst = (ctl_bus, die_bus) if direction == DIR_M_TO_S else (die_bus, ctl_bus)
            n = (OUTPUT_LATENCY if direction == DIR_M_TO_S else INPUT_LATENCY) if phy else 0
            sig = getattr(src, name)
            for _ in range(n):
                reg = Signal(width)
                self.sync += reg.eq(sig)
                sig = reg
            self.comb += getattr(dst, name).eq(sig)


# (interface, timing mode): async SDR with the byte taken after RE# has risen (mode 0) and before (5),
# sync SDR, NV-DDR with a beat of five cycles (0) and of one (5).
LATENCY_MODES = [(0, 0), (0, 5), (3, 5), (1, 0), (1, 5)]


def _reads_in_every_mode(phy):
    """RESET, then in every mode of LATENCY_MODES: SET FEATURES, READ ID (4 bytes by DMA), READ STATUS.
    Returns {mode: (results, ID bytes, status)} and the die's timing violations."""
    from nandlab.gateware.onfi.controller import OPS
    top = _LatencyChannel(phy)
    c, got = top.ctl, {}

    def op(name, col=0, length=0, param=0):
        for sig, v in ((c.d_op, OPS[name]), (c.d_col, col), (c.d_len, length), (c.d_param, param), (c.submit, 1)):
            yield sig.eq(v)
        yield
        yield c.submit.eq(0)
        for _ in range(5000):
            yield
            if (yield c.cpl_valid):
                result, status = (yield c.cpl_result), (yield c.cpl_status)
                yield c.cpl_pop.eq(1)
                yield
                yield c.cpl_pop.eq(0)
                return result, status
        return None, None

    def gen():
        assert (yield from op("RESET"))[0] == 0
        for interface, mode in LATENCY_MODES:
            yield top.mem[0].eq(0)
            results = [(yield from op("SET_FEATURES", col=0x01, param=interface << 4 | mode))[0]]
            yield c.interface.eq(interface)
            yield c.timing_mode.eq(mode)
            yield
            results.append((yield from op("READ_ID", col=0x20, length=4))[0])
            result, status = yield from op("READ_STATUS")
            results.append(result)
            got[(interface, mode)] = (results, (yield top.mem[0]).to_bytes(4, "little"), status)
        got["violations"] = {}
        for n in top.timing_checks:
            got["violations"][n] = yield top.die.violations[n]

    run_simulation(top, gen())
    return got


@pytest.mark.unit
# (The direct controller, the control, is slow: make test reads every mode directly in test_controller.py.)
@pytest.mark.parametrize("phy", [pytest.param(False, marks=pytest.mark.slow), True], ids=["direct", "pin_phy_latency"])
def test_controller_reads_behind_the_pin_phy(phy):
    """READ ID and READ STATUS in async SDR modes 0 and 5, sync SDR mode 5 and NV-DDR modes 0 and 5
    through the socket's latencies (the controller on `--nand-socket`, built with the PHY's
    read_latency): what the controller reads must be the chip's bytes, the die's timing checks clean.
    (Without read_latency the pin PHY variant loses bytes in async SDR 5, sync SDR and NV-DDR 0; without
    rb_latency it reads while the die is still busy after SET FEATURES.)"""
    got = _reads_in_every_mode(phy)
    wrong = {m: v for m, v in got.items() if m != "violations" and v != ([0, 0, 0], b"ONFI", 0xE0)}
    assert not wrong, wrong
    assert not any(got["violations"].values()), got["violations"]
