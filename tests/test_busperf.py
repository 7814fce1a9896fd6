"""The CPU's bus counters (gateware/common/busperf.py) against a Wishbone slave with a known wait."""

import random

import pytest
from migen import Module, Signal, If, run_simulation

from litex.soc.interconnect import wishbone

from nandlab.gateware.common.busperf import BusPerf


class _Bench(Module):
    """A master's bus watched by BusPerf, answered by a slave that acks `wait` cycles after the request."""
    def __init__(self, wait):
        self.bus = wishbone.Interface()
        self.submodules.perf = BusPerf([("cpu", self.bus)])
        count = Signal(8)
        self.sync += [
            self.bus.ack.eq(0),
            If(self.bus.cyc & self.bus.stb & ~self.bus.ack,
                If(count == wait, self.bus.ack.eq(1), count.eq(0)).Else(count.eq(count + 1))),
        ]


@pytest.mark.unit
@pytest.mark.parametrize("wait", [0, 3])
def test_counters_count_request_cycles_and_words(wait):
    dut = _Bench(wait)
    rng = random.Random(wait)
    gaps = [rng.randrange(0, 5) for _ in range(20)]
    expected = {"busy": 0, "acks": 0}

    def master():
        for gap in gaps:
            for _ in range(gap):
                yield
            yield dut.bus.cyc.eq(1)
            yield dut.bus.stb.eq(1)
            yield
            cycles = 1
            while not (yield dut.bus.ack):
                yield
                cycles += 1
            yield dut.bus.cyc.eq(0)
            yield dut.bus.stb.eq(0)
            expected["busy"] += cycles
            expected["acks"] += 1
        yield
        yield
        assert (yield dut.perf._cpu_acks.status) == expected["acks"] == len(gaps)
        assert (yield dut.perf._cpu_busy.status) == expected["busy"]
        # Each request is outstanding for the slave's wait plus the cycle of its ack and one of setup.
        assert expected["busy"] == len(gaps) * (wait + 2)

    run_simulation(dut, master())
