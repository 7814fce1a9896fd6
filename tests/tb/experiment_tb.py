"""cocotb driver of the power harness: every job of the harness spec (nandlab.experiment.harness_spec,
the C++ main's input too) on one Verilator build."""

import json
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer

from harness_bfm import load_and_go


@cocotb.test()
async def run_jobs(dut):
    spec = json.loads(open(os.environ["NANDLAB_EXPERIMENT"]).read())
    results_path = os.environ["NANDLAB_EXPERIMENT_RESULTS"]
    progress = open(os.path.join(os.path.dirname(results_path), "progress.txt"), "w")
    cocotb.start_soon(Clock(dut.sys_clk, 10, unit="ns", impl="gpi").start())
    n = spec["dies"]
    results = []
    for job in spec["jobs"]:
        assert not job["dcc"], "DCC's scheduler runs in the C++ main only"
        trace = await load_and_go(dut, spec, job)
        while not int(dut.done.value):
            await RisingEdge(dut.done)
        await Timer(1, unit="ns")
        r = {"policy": job["policy"], "ratio": job["ratio"], "cycles": int(dut.cycles.value),
             "ops": sum(int(getattr(dut, f"ops_done{i}").value) for i in range(n)),
             "reads": sum(int(getattr(dut, f"kind_ops{i}_0").value) for i in range(n)),
             "read_cycles": sum(int(getattr(dut, f"kind_cycles{i}_0").value) for i in range(n)),
             "progs": sum(int(getattr(dut, f"kind_ops{i}_1").value) for i in range(n)),
             "prog_cycles": sum(int(getattr(dut, f"kind_cycles{i}_1").value) for i in range(n)),
             "erases": sum(int(getattr(dut, f"kind_ops{i}_2").value) for i in range(n)),
             "waited": sum(int(getattr(dut, f"waited{i}").value) for i in range(n)),
             "violations": int(dut.violations.value), "windows": int(dut.windows.value),
             "max": int(dut.max_sample.value), "cons_errors": int(dut.cons_errors.value)}
        assert r["ops"] == len(trace), (r["ops"], len(trace))
        results.append(r)
        progress.write(json.dumps(r) + "\n")
        progress.flush()
    open(results_path, "w").write(json.dumps(results))
