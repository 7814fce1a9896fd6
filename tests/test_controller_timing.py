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
