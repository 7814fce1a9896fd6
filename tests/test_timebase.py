"""Time base: fast Migen run_simulation checks and the same block as Verilog under cocotb/Verilator."""

import pytest
from migen import run_simulation

from nandlab.gateware.common.timebase import NandLabTimebase
from nandlab.testing import run_cocotb


def _strobe_cycles(window, cycles):
    """Cycles (from 0) at which the strobe is high, per the block's definition."""
    n = max(window, 1)
    return [c for c in range(cycles) if c % n == n - 1]


@pytest.mark.unit
def test_default_window_is_40ns_at_100mhz():
    assert NandLabTimebase(100e6).default_cycles == 4
    assert NandLabTimebase(200e6).default_cycles == 8
    assert NandLabTimebase(1e6).default_cycles == 1  # never 0 cycles


@pytest.mark.unit
def test_window_limit_is_named():
    with pytest.raises(ValueError, match="window counter limit"):
        NandLabTimebase(100e6, window_ns=1e6)


@pytest.mark.unit
@pytest.mark.parametrize("window", [1, 3, 4, 7])
def test_strobe_and_counters_migen(window):
    dut = NandLabTimebase(100e6)
    seen = []
    stamps = []

    def gen():
        yield dut.window_cycles.eq(window)
        yield  # Value lands; counting restarts from reset state below.
        for cycle in range(60):
            if (yield dut.strobe):
                seen.append(cycle)
            stamps.append((yield dut.timestamp))
            yield
        assert (yield dut.window_count) == len(seen)

    run_simulation(dut, gen())
    # The first cycle ran with the reset window (4): compare from the first strobe after it.
    assert stamps == list(range(1, 61))
    period = [b - a for a, b in zip(seen, seen[1:])]
    assert period and all(p == window for p in period), (window, seen)


@pytest.mark.cocotb
def test_timebase_cocotb(tmp_path):
    dut = NandLabTimebase(100e6)
    ios = [dut.window_cycles, dut.timestamp, dut.strobe, dut.window_count]
    assert run_cocotb(dut, ios, "nandlab_timebase", "timebase_tb", tmp_path) >= 2
