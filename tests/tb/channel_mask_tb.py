"""Plays the host's levels of tests/test_channel_mask.py cycle for cycle into the top holding the plain
and the masked channel, and records what the two answer (DQ, DQS, R/B# every cycle) and the dies'
statistics at the end, as JSON; asserts the two equal."""

import json
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

ANSWERS = ("dq_i", "dqs_i", "rb_n")
READY_WAIT = 1500      # Cycles at most for every die to be ready again: the scaled part's longest array time.


@cocotb.test()
async def play(dut):
    plan = json.loads(open(os.environ["NANDLAB_MASK_STIMULUS"]).read())
    dies = plan["dies"]
    seen = dict(cycles=0, dq=0, busy=0, differ=[])

    async def cycle(writes):
        # Levels set at the falling edge are taken at the next rising edge; the answers read after it.
        await FallingEdge(dut.sys_clk)
        for name, value in writes.items():
            getattr(dut, name).value = value
        await RisingEdge(dut.sys_clk)
        await ReadOnly()
        pairs = [(int(getattr(dut, f"plain_{n}").value), int(getattr(dut, f"masked_{n}").value)) for n in ANSWERS]
        seen["cycles"] += 1
        seen["dq"] += pairs[0][0] != 0
        seen["busy"] += pairs[2][0] != 2**dies - 1
        if any(a != b for a, b in pairs) and len(seen["differ"]) < 5:
            seen["differ"].append((seen["cycles"], pairs))
        return pairs

    dut.sys_rst.value = 0
    cocotb.start_soon(Clock(dut.sys_clk, 10, unit="ns").start())
    for writes in plan["cycles"]:
        await cycle(writes)
    # Until every die is ready again, then a few cycles for the counters.
    for _ in range(READY_WAIT):
        if (await cycle({}))[2][0] == 2**dies - 1:
            break
    for _ in range(16):
        await cycle({})
    seen["stats"] = [(int(getattr(dut, f"plain{i}_stats").value), int(getattr(dut, f"masked{i}_stats").value))
                     for i in range(dies)]
    with open(os.environ["NANDLAB_MASK_SEEN"], "w") as f:
        json.dump(seen, f)
    # The masked channel answers as the plain one in every cycle and leaves every die the same counts (how much
    # traffic there was: the test judges from the record).
    assert seen["differ"] == [], f"answers (plain, masked) differ at (cycle, [DQ, DQS, R/B#]): {seen['differ']}"
    assert all(p == m for p, m in seen["stats"]), f"die statistics (plain, masked): {seen['stats']}"
