"""Channel controller: the ONFI timings of the mode in use, against dies with worst-case tWB and per-mode
checks (cocotb on Verilator, tests/tb/controller_timing_tb.py), and the tables behind them."""

import pytest

from nandlab.gateware.onfi import common as onfi
from nandlab.gateware.onfi.pinphy import OUTPUT_LATENCY, RB_LATENCY
from nandlab.gateware.onfi.sim_top import NandLabChannelSimTop
from nandlab.nand_model.die.timing import die_mode_timings
from nandlab.nand_model.parts import NandPart
from nandlab.testing import run_cocotb, die_test_config

WAYS = 2
# Behind the pin PHY R/B# reaches the controller this many cycles after the bus cycle it answers.
PHY_RB_LATENCY = OUTPUT_LATENCY + RB_LATENCY


@pytest.mark.unit
def test_tables_and_their_lookups():
    """ONFI's SDR mode 0 values (REFERENCE.md, Linux nand_timings.c), mode 5 and NV-DDR; sync SDR takes the
    NV-DDR rows; an unknown mode gets the slowest row; a part's longer time is kept."""
    assert onfi.interface_timings(onfi.IF_ASYNC_SDR, 0) == (200, 120, 40, 70, 400, 500, 200)
    assert onfi.interface_timings(onfi.IF_ASYNC_SDR, 5) == (100, 80, 20, 15, 400, 500, 100)
    assert onfi.interface_timings(onfi.IF_NVDDR, 0).t_cs == 35
    assert onfi.interface_timings(onfi.IF_SYNC_SDR, 3) == onfi.NVDDR_TIMINGS[3]
    assert onfi.interface_timings(onfi.IF_ASYNC_SDR, 9) == onfi.SDR_TIMINGS[0]
    assert onfi.slowest_timings() == onfi.SDR_TIMINGS[0]
    for rows in (onfi.SDR_TIMINGS, onfi.NVDDR_TIMINGS):
        assert len(rows) == onfi.TIMING_MODES
        for slow, fast in zip(rows, rows[1:]):       # A faster mode never needs a longer wait.
            assert all(f <= s for s, f in zip(slow, fast)), (slow, fast)
    part = NandPart(t_whr=150)
    assert onfi.mode_timings(part, onfi.IF_ASYNC_SDR, 0).t_whr == 150
    assert onfi.mode_timings(part, onfi.IF_ASYNC_SDR, 5).t_whr == 150


@pytest.mark.unit
@pytest.mark.parametrize("mhz", [43.5, 50, 60, 75, 100, 200])
def test_async_read_samples_after_trea_and_before_the_byte_goes(mhz):
    """Async SDR: the controller samples a byte at least tREA max (ONFI, Linux nand_timings.c: 40/30/25/20/
    20/16 ns) plus the board's round trip after RE# falls, and no later than the byte is held (tRHOH after
    RE# rises: 0 in mode 0, 15 ns in 1-5; tRLOH after the next fall: 5 ns in EDO modes 4-5), inside the beat;
    the sample point before this rule (the beat's last phase) was after the hold in modes 0-2 at 100 MHz."""
    from nandlab.gateware.onfi.controller.common import mode_beats, sdr_sample_phase
    f = mhz * 1e6
    phase = 1e3 / mhz / 2
    trea, rhoh, rloh = [40, 30, 25, 20, 20, 16], [0, 15, 15, 15, 15, 15], [0, 0, 0, 0, 5, 5]
    for m in range(6):
        b, lo = mode_beats(onfi.IF_ASYNC_SDR, m, f)["r"]
        t = (sdr_sample_phase(m, f) + 1) * phase          # the sample edge, ns after RE# fell
        assert trea[m] + 3 <= t + 1e-9 and t <= 2 * b * phase, (m, t)
        assert t <= max(lo * phase + rhoh[m], 2 * b * phase + rloh[m]) + 1e-9, (m, t)
    if mhz == 100:
        assert [(sdr_sample_phase(m, f) + 1) * 5 for m in range(6)] == [45, 35, 30, 25, 25, 20]
        assert [2 * mode_beats(onfi.IF_ASYNC_SDR, m, f)["r"][0] * 5 for m in range(3)] == [100, 50, 40]   # (old point)


@pytest.mark.unit
def test_controller_and_die_cycles():
    """At 100 MHz: the controller waits each mode's times rounded up, tWB plus R/B#'s latency; the die
    checks the same table's minima and drops R/B# at tWB max (worst case) unless told otherwise."""
    top = NandLabChannelSimTop(die_test_config(), ways=1, rb_latency=PHY_RB_LATENCY)
    c = top.ctl.mode_cycles
    assert c[(onfi.IF_ASYNC_SDR, 0)] == dict(t_whr=12, t_adl=40, t_ccs=50, t_wb=20 + PHY_RB_LATENCY, t_rr=4, t_cs=7,
                                            t_rhw=20)
    assert c[(onfi.IF_NVDDR, 5)] == dict(t_whr=8, t_adl=40, t_ccs=50, t_wb=10 + PHY_RB_LATENCY, t_rr=2, t_cs=2, t_rhw=10)
    die = top.dies[0]
    assert die.checker.limits[(onfi.IF_ASYNC_SDR, 0)]["t_whr"] == 12
    assert die.checker.limits[(onfi.IF_ASYNC_SDR, 0)]["t_cs"] == 7
    assert die.checker.limits[(onfi.IF_NVDDR, 5)]["t_wb"] == 10
    assert set(die_mode_timings(die.config)) == {(i, m) for i in (0, 1, 3) for m in range(6)}


@pytest.mark.cocotb
# flagged: a second controller build (about 4.5 min), the negative control: in make test-slow.
@pytest.mark.parametrize("expect", ["clean", pytest.param("flagged", marks=pytest.mark.slow)])
def test_controller_timing(tmp_path, expect):
    """clean: the controller with ONFI's table and the PHY's R/B# latency allowed for; flagged: with SDR
    mode 5's waits everywhere and no allowance (the behaviour before issue 21), which the dies must catch."""
    if expect == "clean":
        top = NandLabChannelSimTop(die_test_config(), ways=WAYS, rb_latency=PHY_RB_LATENCY)
    else:
        top = NandLabChannelSimTop(die_test_config(), ways=WAYS, rb_latency=PHY_RB_LATENCY, ctl_rb_latency=0,
                                   timings=lambda interface, mode: onfi.SDR_TIMINGS[5])
    n = run_cocotb(top, top.ios, f"nandlab_channel_t_{expect}", "controller_timing_tb", tmp_path,
                   extra_env={"NANDLAB_TB_WAYS": str(WAYS), "NANDLAB_TB_EXPECT": expect})
    assert n == 2
