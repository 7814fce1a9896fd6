"""cocotb driver of the power harness with its channel: one job of a harness spec, every cycle's
channel state recorded (tests/test_harness_channel.py compares it with a reference model)."""

import json
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, ReadOnly

from harness_bfm import load_and_go


@cocotb.test()
async def record_channel(dut):
    spec = json.loads(open(os.environ["NANDLAB_EXPERIMENT"]).read())
    out_path = os.environ["NANDLAB_EXPERIMENT_RESULTS"]
    job = spec["jobs"][0]
    n, channels = spec["dies"], spec["channels"]
    cocotb.start_soon(Clock(dut.sys_clk, 10, unit="ns", impl="gpi").start())
    trace = await load_and_go(dut, spec, job)
    # Per cycle: [die states], [die array busy], [(bus busy, owner)].
    cycles = []
    while True:
        await ReadOnly()
        if int(dut.done.value):
            break
        cycles.append([[int(getattr(dut, f"chstate{i}").value) for i in range(n)],
                       [int(getattr(dut, f"seqbusy{i}").value) for i in range(n)],
                       [[int(getattr(dut, f"bus_busy{c}").value), int(getattr(dut, f"bus_owner{c}").value)]
                        for c in range(channels)]])
        await RisingEdge(dut.sys_clk)
    result = {"cycles": int(dut.cycles.value), "max": int(dut.max_sample.value),
              "violations": int(dut.violations.value),
              "ops": sum(int(getattr(dut, f"ops_done{i}").value) for i in range(n)), "log": cycles}
    assert result["ops"] == len(trace), (result["ops"], len(trace))     # every operation of the trace ran
    with open(out_path, "w") as f:
        json.dump(result, f)
