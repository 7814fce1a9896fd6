"""A die that waits with the bus quiet, gated against ungated (tests/test_idlegate.py's twin top): the plain die
`dut` and its idle-gated twin see the same bus and controls; every cycle what they drive must be the same.

The die suite keeps its die busy (clocked in ~99 % of the cycles), so a gate that loses a tick when the block
wakes from a long rest passes it. Here the die sits for long stretches with nothing moving: a program held at
its first array phase by the power hook (OE low) with the bus deselected, then an erase's full array phases
waited out on R/B# alone, then reads checking the data."""

import os
import random

import cocotb
from cocotb.triggers import RisingEdge

from die_tb import setup, program_page, read_page, erase_block, addr_bytes, row, PB

HOLD = 6000          # Cycles the program waits for OE with the bus deselected,
SETTLE = 2000        # the first of them while the timing checker's counters run up to their ceiling (~500 cycles).


class TwinWatch:
    """Counts the cycles in which the gated twin drove something else than the plain die."""
    def __init__(self, dut):
        self.dut, self.cycles, self.differ, self.first = dut, 0, 0, None

    async def run(self):
        dut = self.dut
        while True:
            await RisingEdge(dut.sys_clk)
            self.cycles += 1
            if dut.bus_trace.value != dut.twin_trace.value:
                self.differ += 1
                self.first = self.first if self.first is not None else self.cycles


@cocotb.test()
async def quiet_waits_gated_as_plain(dut):
    watch = TwinWatch(dut)
    cocotb.start_soon(watch.run())
    host = await setup(dut)
    rng = random.Random(7)
    r = row(3, 1)
    data = bytes(rng.randrange(256) for _ in range(PB))
    # The program starts, then waits at its first phase for the power grant: R/B# low, nothing moves.
    dut.oe.value = 0
    await host.command(0x80)
    await host.address(*addr_bytes(0, r))
    await host.write_data(data)
    await host.command(0x10)
    await host.idle(host.ns(host.t["t_wb"]))    # (R/B# falls as late as tWB max)
    await host.deselect()
    ticks = []
    for i in range(HOLD):
        if i == SETTLE:
            ticks.append(int(dut.gate_ticks.value))
        _, _, rb = await host.cycle()
        assert rb & 1 == 0
    held_ticks = int(dut.gate_ticks.value) - ticks[0]
    dut.oe.value = 1
    run = (host.cycles, int(dut.gate_ticks.value))
    await host.wait_ready(honour=False)
    run_cycles, run_ticks = host.cycles - run[0], int(dut.gate_ticks.value) - run[1]
    await host.idle(host.ns(host.t["t_rr"]))
    assert await host.read_status() & 0x61 == 0x60
    assert await read_page(host, r) == data
    # An erase's array phases waited out on R/B# alone, then the block reads erased.
    await host.deselect()
    assert await erase_block(host, 3) & 0x01 == 0
    assert await read_page(host, r) == b"\xff" * PB
    await host.idle(50)
    assert watch.differ == 0, f"the gated die differed in {watch.differ} of {watch.cycles} cycles (first {watch.first})"
    # The gate was shut while the die waited (a gate stuck open would also give the same bus).
    assert held_ticks == 0, held_ticks
    assert watch.cycles > HOLD
    if os.environ.get("NANDLAB_TB_SEQ_APART") == "1":
        # Through the program's array phases (tPROG unscaled) the die was clocked only around the start and
        # the end (its engine moving the page, R/B# rising), not every cycle with its sequencer.
        assert run_cycles > 10_000 and run_ticks < 100, (run_cycles, run_ticks)
    dut._log.info(f"program's phases: {run_cycles} cycles, the gated die clocked in {run_ticks}")
    dut._log.info(f"{watch.cycles} cycles, gated die clocked {int(dut.gate_ticks.value)}, {held_ticks} in the hold")
