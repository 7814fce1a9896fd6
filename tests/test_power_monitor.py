"""The current monitor's budget comparison at the ends of its range: with one or two dies the summed
current needs 15 bits, but the largest budget (alpha 8: 8 x 4096) needs 16; it must not wrap."""

import pytest

from migen import *

from nandlab.gateware.power.common import ALPHA_RANGE
from nandlab.gateware.power.monitor import CurrentMonitor
from nandlab.nand_model.current import I_FRAC_BITS


def _run(n, pb, current, windows=4, period=10):
    """n dies each drawing `current` (I_max / 4096) for `windows` windows of `period` cycles against `pb`:
    (windows, violations, largest sample, pb read back)."""
    currents = [Signal(I_FRAC_BITS + 2) for _ in range(n)]
    strobe = Signal()
    dut = CurrentMonitor(currents, strobe)
    out = {}

    def gen():
        yield dut.pb.eq(pb)
        for c in currents:
            yield c.eq(current)
        yield
        yield dut.clear.eq(1)
        yield
        yield dut.clear.eq(0)
        for w in range(windows):
            for i in range(period):
                yield strobe.eq(i == period - 1)
                yield
        yield strobe.eq(0)
        for _ in range(3):
            yield
        out.update(windows=(yield dut.windows), violations=(yield dut.violations),
                   max=(yield dut.max_sample), pb=(yield dut.pb))

    run_simulation(dut, gen())
    return out


@pytest.mark.unit
@pytest.mark.parametrize("n", [1, 2, 8])
def test_largest_budget_does_not_wrap(n):
    pb = ALPHA_RANGE[1] << I_FRAC_BITS
    current = 3 << I_FRAC_BITS                         # 3 x I_max a die
    got = _run(n, pb, current)
    assert got["pb"] == pb and got["windows"] >= 3
    total = n * current
    assert got["max"] == total
    assert got["violations"] == (got["windows"] if total > pb else 0), got


@pytest.mark.unit
def test_a_sum_over_the_budget_is_a_violation_in_every_window():
    got = _run(2, 2 << I_FRAC_BITS, 3 << I_FRAC_BITS)   # 6 I_max against 2 I_max
    assert got["violations"] == got["windows"] >= 3
