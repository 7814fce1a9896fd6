"""Bus trace recorder: with NANDLAB_BUS_TRACE=DIR, a testbench writes the top's `bus_trace` port
(the channel's levels and the dies' answers, packed) every cycle it changes, one file per test.

Used to show that a restructuring kept the bus identical cycle for cycle
(`python tests/tools/bus_traces.py record|compare`). Off (and free) unless the variable is set.
"""

import itertools
import os
from pathlib import Path

import cocotb
from cocotb.triggers import RisingEdge

_count = itertools.count()


def start(dut, tag):
    """Record `dut.bus_trace` from now until the current cocotb test ends."""
    out = os.environ.get("NANDLAB_BUS_TRACE")
    if not out:
        return
    # Asked for a trace of a top without the port: fail rather than record nothing.
    assert hasattr(dut, "bus_trace"), f"NANDLAB_BUS_TRACE is set but {dut._name} has no bus_trace port"
    run = os.environ.get("NANDLAB_TB_RUN")        # One of several runs on one build (nandlab.testing.run_cocotb).
    path = Path(out) / f"{tag}.{'r' + run + '.' if run else ''}{next(_count):02d}.trace"
    path.parent.mkdir(parents=True, exist_ok=True)
    cocotb.start_soon(_record(dut, path))


async def _record(dut, path):
    sig, clk = dut.bus_trace, dut.sys_clk
    # An idle-gated top (nandlab.gateware.common.idlegate) also says how often its block was clocked.
    ticks = getattr(dut, "gate_ticks", None)
    last, cycle = None, 0
    try:
        with open(path, "w", buffering=1) as f:
            while True:
                await RisingEdge(clk)
                v = sig.value.to_unsigned() if sig.value.is_resolvable else str(sig.value)
                if v != last:
                    f.write(f"{cycle} {v:x}\n" if isinstance(v, int) else f"{cycle} {v}\n")
                    last = v
                cycle += 1
    finally:
        if ticks is not None:
            path.with_suffix(".ticks").write_text(f"{ticks.value.to_unsigned()} {cycle}\n")
