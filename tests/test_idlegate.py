"""Idle gating (nandlab.gateware.common.idlegate) changes nothing but the work: the die test suite
run on a gated die gives the same bus, cycle for cycle, as on the plain die, and the gate did skip
cycles.

Slow: make test checks the same on the dies the simulated SoC builds (their arrays in the nandstore
module, gated), against plain block RAM dies, in tests/test_die_sim_storage.py."""

import sys
from pathlib import Path

import pytest

from nandlab.testing import run_cocotb, TB_DIR, die_test_config

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bus_traces  # noqa: E402
from test_die import DieTop  # noqa: E402


@pytest.mark.cocotb
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["0", "1"])   # async SDR, NV-DDR
def test_gated_die_bus_identical(tmp_path, monkeypatch, mode):
    traces = {}
    for gated in (False, True):
        name = "gated" if gated else "plain"
        traces[name] = tmp_path / f"traces_{name}" / "die"
        monkeypatch.setenv("NANDLAB_BUS_TRACE", str(traces[name]))
        top = DieTop(die_test_config(), idle_gating=gated)
        assert run_cocotb(top, top.ios, "nandlab_die", "die_tb", tmp_path / name,
                          extra_env={"NANDLAB_TB_MODE": mode}) == 12
    n, cycles, bad = bus_traces.compare(traces["plain"].parent, traces["gated"].parent)
    assert n >= 12 and cycles > 10_000 and bad == []
    # The gate skipped cycles and clocked the die in others: not a gate stuck open or shut. (The
    # suite keeps its die busy: it is clocked in about 98 % of the cycles; in the simulated SoC a
    # die waiting for commands is not clocked at all.)
    ticks, total = bus_traces.gate_ticks(traces["gated"], n)
    assert 0 < ticks < total - 1000, (ticks, total)
