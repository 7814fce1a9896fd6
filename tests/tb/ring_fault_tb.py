"""cocotb driver of the token-ring fault bench (gateware/power/faultbench.py).

Configuration from the environment: RING_FAULT_SPEC = JSON {"seed", "runs": [[policy, alpha, faults],
...], "kinds": bitmask}. For each run: reset, apply the policy with packet protection, load the
seed, start the dies and the fault scheduler, run Verilator freely until the bench is done, then
write the counters to RING_FAULT_OUT (one JSON object per run, a list). The checks are in
tests/test_ring_faults.py (and the CLI): this file only collects.
"""

import json
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer

from nandlab.gateware.power.common import POLICIES
from nandlab.gateware.power.common import FAULT_KINDS, FAULT_CAUSES

PERIOD_NS = 10
CHUNK = 200_000          # Cycles simulated between looks at `done`.


def val(dut, name):
    return int(getattr(dut, name).value)


async def one_run(dut, seed, policy, alpha, faults, kinds, nodes, protect=1):
    dut.sys_rst.value = 1
    for name in ("apply", "load", "go", "req_protect"):
        getattr(dut, name).value = 0
    dut.target.value = faults
    dut.kinds.value = kinds
    await Timer(3 * PERIOD_NS, unit="ns")
    await RisingEdge(dut.sys_clk)
    dut.sys_rst.value = 0
    dut.req_mode.value, dut.req_tg.value, dut.req_alpha.value = POLICIES.index(policy), 4, alpha
    dut.req_protect.value = protect
    dut.seed.value = seed
    dut.apply.value, dut.load.value = 1, 1
    await RisingEdge(dut.sys_clk)
    dut.apply.value, dut.load.value = 0, 0
    for _ in range(100):
        await RisingEdge(dut.sys_clk)
        if val(dut, "running"):
            break
    assert val(dut, "running") and val(dut, "protect") == protect, "the ring did not start"
    nbits = val(dut, "nbits")
    dut.go.value = 1
    limit = max(faults, 1) * 40_000 + (1_000_000 if protect else 0)
    simulated = 0
    while not val(dut, "done") and simulated < limit:
        await Timer(CHUNK * PERIOD_NS, unit="ns")
        simulated += CHUNK
    dut.go.value = 0
    res = {"policy": policy, "alpha": alpha, "tt": val(dut, "tt"), "packet_bits": nbits, "nodes": nodes,
           "seed": seed, "target": faults, "done": val(dut, "done"), "stuck": val(dut, "stuck"),
           "faults": val(dut, "faults"), "recoveries": val(dut, "recoveries"), "cycles": val(dut, "cycles"),
           "ops_done": val(dut, "ops_done"),
           "injected": {k: val(dut, f"injected_{k}") for k in FAULT_KINDS[1:]},
           "detected": {c: val(dut, f"detected_{c}") for c in FAULT_CAUSES},
           "over_budget": val(dut, "over_budget"), "over_tokens": val(dut, "over_tokens"),
           "conservation": val(dut, "conservation"), "ppz_two": val(dut, "ppz_two"),
           "max_need": val(dut, "max_need")}
    return res


@cocotb.test()
async def ring_faults(dut):
    spec = json.loads(os.environ["RING_FAULT_SPEC"])
    cocotb.start_soon(Clock(dut.sys_clk, PERIOD_NS, unit="ns").start())
    out = []
    for k, (policy, alpha, faults) in enumerate(spec["runs"]):
        out.append(await one_run(dut, spec["seed"] + k, policy, alpha, faults, spec.get("kinds", 7),
                                 spec["nodes"], spec.get("protect", 1)))
        with open(os.environ["RING_FAULT_OUT"], "w") as f:
            json.dump(out, f)
