"""cocotb driver of the power harness with its channel: one job of a harness spec, every cycle's
channel state recorded (tests/test_harness_channel.py compares it with a reference model)."""

import json
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, ReadOnly


@cocotb.test()
async def record_channel(dut):
    spec = json.loads(open(os.environ["NANDLAB_EXPERIMENT"]).read())
    out_path = os.environ["NANDLAB_EXPERIMENT_RESULTS"]
    job = spec["jobs"][0]
    n, channels = spec["dies"], spec["channels"]
    cocotb.start_soon(Clock(dut.sys_clk, 10, unit="ns", impl="gpi").start())
    for name in ("load_we", "go", "apply", "table_we", "table_clear"):
        getattr(dut, name).value = 0
    for i in range(n):
        getattr(dut, f"hold{i}").value = 0
    dut.sys_rst.value = 1
    for _ in range(3):
        await RisingEdge(dut.sys_clk)
    dut.sys_rst.value = 0
    await RisingEdge(dut.sys_clk)
    for oi, rt in spec["table"]:
        dut.table_adr.value, dut.table_dat.value, dut.table_we.value = oi, rt, 1
        await RisingEdge(dut.sys_clk)
    dut.table_we.value = 0
    dut.req_mode.value = job["mode"]
    dut.req_tg.value, dut.req_alpha.value = spec["tg"], spec["alpha"]
    dut.apply.value = 1
    await RisingEdge(dut.sys_clk)
    dut.apply.value = 0
    counts = [0] * n
    for die, op in spec["traces"][str(job["ratio"])]:
        dut.load_die.value, dut.load_adr.value, dut.load_op.value, dut.load_we.value = die, counts[die], op, 1
        counts[die] += 1
        await RisingEdge(dut.sys_clk)
    dut.load_we.value = 0
    for i in range(n):
        getattr(dut, f"count{i}").value = counts[i]
    for _ in range(20):
        await RisingEdge(dut.sys_clk)
    assert int(dut.running.value) and int(dut.error.value) == 0
    dut.go.value = 1
    await RisingEdge(dut.sys_clk)
    dut.go.value = 0
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
    with open(out_path, "w") as f:
        json.dump(result, f)
