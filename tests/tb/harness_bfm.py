"""Shared set-up of the power harness for its cocotb drivers (experiment_tb, channel_tb): reset, the
ring's table, the job's policy with TG and alpha, the job's trace loaded into the dies' queues, go."""

from cocotb.triggers import RisingEdge


async def load_and_go(dut, spec, job):
    """Run one job of a harness spec (nandlab.experiment.harness_spec) up to the cycle after `go`;
    returns the trace loaded."""
    n = spec["dies"]
    trace = spec["traces"][str(job["ratio"])]
    for name in ("load_we", "go", "apply", "table_we", "table_clear", "req_mode"):
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
    for die, op in trace:
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
    return trace
