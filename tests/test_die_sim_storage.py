"""The die with its array behind the simulator's pads (storage="sim", the nandstore litex_sim module's
backend) is the block RAM die, cycle for cycle."""

import sys
from pathlib import Path

import pytest

from nandlab.testing import run_cocotb, die_test_config

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bus_traces  # noqa: E402
from test_die import DieTop, WISHBONE_SUBSET  # noqa: E402


@pytest.mark.cocotb
@pytest.mark.parametrize("mode, tests", [("0", WISHBONE_SUBSET),                                # async SDR
                                         pytest.param("0", None, marks=pytest.mark.slow, id="0-all"),
                                         pytest.param("1", None, marks=pytest.mark.slow, id="1-all")])  # NV-DDR
def test_die_sim_storage_bus_identical(tmp_path, monkeypatch, mode, tests):
    """The array behind the simulator's pads, served as the nandstore module serves them (tests/tb/
    die_tb.py's SimStorage: asynchronous reads, write then read once a cycle), on an idle-gated die as
    the simulated SoC builds it (but for its one-step erase, sim_fast_erase, off here): the die suite
    passes and the bus is the block RAM die's, cycle for cycle. make test compares in async SDR over the
    Wishbone-storage subset of the suite (tests/test_die.py runs the whole suite in sync SDR and NV-DDR
    on block RAM), make test-slow the whole suite in async SDR and NV-DDR."""
    traces = {}
    expect = len(tests) if tests else 13
    for storage, gated in (("bram", False), ("sim", True)):
        traces[storage] = tmp_path / f"traces_{storage}" / "die"
        monkeypatch.setenv("NANDLAB_BUS_TRACE", str(traces[storage]))
        top = DieTop(die_test_config(), storage=storage, idle_gating=gated)
        assert run_cocotb(top, top.ios, "nandlab_die", "die_tb", tmp_path / storage,
                          extra_env={"NANDLAB_TB_MODE": mode}, testcase=tests) == expect
    n, cycles, bad = bus_traces.compare(traces["bram"].parent, traces["sim"].parent)
    assert n >= expect and cycles > 10_000 and bad == []
    # The gate skipped cycles and clocked the die in others: not a gate stuck open or shut (the
    # idle gate's own test, tests/test_idlegate.py, is the same comparison on block RAM dies). The
    # Wishbone subset keeps the die busy almost throughout (30 of 141 218 cycles skipped, measured);
    # the whole suite idles for thousands.
    ticks, total = bus_traces.gate_ticks(traces["sim"], n)
    assert 0 < ticks < total - (1000 if tests is None else 10), (ticks, total)
