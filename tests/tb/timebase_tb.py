"""cocotb tests for NandLabTimebase (generated Verilog): strobe period, counters, window changes."""

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, ReadOnly


class TimebaseTB:
    """Owns the clock and reset of the DUT."""
    def __init__(self, dut):
        self.dut = dut
        cocotb.start_soon(Clock(dut.sys_clk, 10, unit="ns").start())

    async def reset(self, window):
        self.dut.window_cycles.value = window
        self.dut.sys_rst.value = 1
        for _ in range(3):
            await RisingEdge(self.dut.sys_clk)
        self.dut.sys_rst.value = 0

    async def strobes(self, cycles):
        """Indices (cycles after reset release) at which the strobe was high."""
        hits = []
        for c in range(cycles):
            await RisingEdge(self.dut.sys_clk)
            await ReadOnly()
            if int(self.dut.strobe.value):
                hits.append(c)
        return hits


@cocotb.test()
async def strobe_period_matches_window(dut):
    tb = TimebaseTB(dut)
    for window in (1, 2, 4, 9):
        await tb.reset(window)
        hits = await tb.strobes(5 * window + 3)
        gaps = {b - a for a, b in zip(hits, hits[1:])}
        assert gaps == {window}, f"window {window}: strobes at {hits}"
        await RisingEdge(dut.sys_clk)


@cocotb.test()
async def zero_window_acts_as_one(dut):
    tb = TimebaseTB(dut)
    await tb.reset(0)
    hits = await tb.strobes(10)
    assert hits == list(range(10)), hits


@cocotb.test()
async def counters_advance(dut):
    tb = TimebaseTB(dut)
    await tb.reset(5)
    await tb.strobes(1)
    t0 = int(dut.timestamp.value)
    w0 = int(dut.window_count.value)
    await tb.strobes(50)
    assert int(dut.timestamp.value) - t0 == 50
    assert int(dut.window_count.value) - w0 == 10
