"""Die emulator: cocotb on Verilator in async SDR and NV-DDR, scored against the reference model."""

import sys

import pytest
from migen import Cat
from nandlab.gateware.common.idlegate import QuiescenceGate, share_gate_latches
from nandlab.nand_model.die import NandLabDie, TIMING_CHECKS
from nandlab.nand_model.reference import REASON_NAMES
from nandlab.testing import run_cocotb, TB_DIR, PortedTop

sys.path.insert(0, str(TB_DIR))
from nandlab.testing import die_test_config as make_config  # noqa: E402


# The die's inputs from the bus and its controls, and what it drives on the bus.
BUS_INPUTS = ("ce_n", "cle", "ale", "we_n", "re_n", "wp_n", "dq_o", "dq_oe", "dqs_o", "dqs_oe")
CONTROLS = ("inject_program_fail", "inject_erase_fail", "flip_row", "flip_count", "flip_rate", "time_scale_shift",
            "oe", "arch", "mpnfm")


def die_trace(die):
    """What the die drives, packed (tests/tb/bus_trace.py)."""
    bus = die.bus
    return Cat(bus.dq_i, bus.dqs_i, bus.rb_n, die.busy, die.status, die.oi, die.oi_first, die.phase_end, die.current,
               die.data_interface, die.timing_mode)


class DieTop(PortedTop):
    """The die with its bus and controls as plainly named top-level ports."""
    def __init__(self, config, storage="bram", idle_gating=False):
        PortedTop.__init__(self)
        self.die = die = NandLabDie(config, storage=storage, storage_base=0x1000)
        self.idle_gating = idle_gating
        if idle_gating:
            # As the simulated SoC builds its dies (tests/test_idlegate.py compares the traces).
            self.gate = QuiescenceGate(die, "die_clk", count_ticks=True)
            self.port("gate_ticks", self.gate.ticks, True)
        bus = die.bus
        port = self.port
        for name in BUS_INPUTS:
            port(name, getattr(bus, name), False)
        for name in ("dq_i", "dqs_i", "rb_n"):
            port(name, getattr(bus, name), True)
        for name in CONTROLS:
            port(name, getattr(die, name), False)
        for name in ("busy", "data_interface", "timing_mode", "status", "oi", "oi_first", "phase_end", "current", "reg_overruns"):
            port(name, getattr(die, name), True)
        for n in TIMING_CHECKS:
            port(f"viol_{n}", die.violations[n], True)
        port("bus_trace", die_trace(die), True)
        for i in range(len(REASON_NAMES)):
            port(f"reason{i}", die.reasons[i], True)
        for n, sig in die.ops.items():
            port(f"ops_{n}", sig, True)
        for op, counts in die.mp_ops.items():
            for k, sig in counts.items():
                port(f"mp_{op}{k}", sig, True)
        if storage == "wishbone":
            for name in ("cyc", "stb", "we", "adr", "dat_w", "sel"):
                port(f"wb_{name}", getattr(die.storage_bus, name), True)
            for name in ("ack", "dat_r"):
                port(f"wb_{name}", getattr(die.storage_bus, name), False)
        if storage == "sim":
            for name in ("rd_en", "rd_adr", "wr_en", "wr_adr", "wr_data"):
                port(f"sim_{name}", getattr(die.storage_pads, name), True)
            port("sim_rd_data", die.storage_pads.rd_data, False)

    def finalize(self, *args, **kwargs):
        # Gated: the gate's latch in the shared falling-edge domain, as the simulated SoC builds it.
        if not self.finalized:
            PortedTop.finalize(self, *args, **kwargs)
            if self.idle_gating:
                share_gate_latches(self, self._fragment)


MODES = {"async": "0", "nvddr": "1", "sync": "3"}


def run_die_suite(tmp_path, modes):
    """The whole die suite once per bus mode, on one build of the die; asserts every test ran."""
    top = DieTop(make_config())
    n = run_cocotb(top, top.ios, "nandlab_die", "die_tb", tmp_path,
                   extra_env=[{"NANDLAB_TB_MODE": MODES[m]} for m in modes])
    assert n == len(modes) * 13


@pytest.mark.cocotb
def test_die(tmp_path):
    """The die suite in sync SDR, then NV-DDR, on one build (async SDR: make test runs the suite in that
    mode on this die in tests/test_die_sim_storage.py, the block RAM side of its comparison)."""
    run_die_suite(tmp_path, ("sync", "nvddr"))


@pytest.mark.cocotb
@pytest.mark.slow
def test_die_async(tmp_path):
    run_die_suite(tmp_path, ("async",))


# The die suite's tests that move array data in every way the storage port does (format at reset,
# program, read, erase, failed operations, cache operations, random flips, both MPNFM page sizes):
# a third of the suite's time.
WISHBONE_SUBSET = ["read_id_and_parameter_page", "program_read_erase", "failures_and_fault_injection",
                   "cache_read_and_program", "random_flips_at_a_rate", "mpnfm_two_page_sizes"]


@pytest.mark.cocotb
@pytest.mark.parametrize("tests", [WISHBONE_SUBSET, pytest.param(None, marks=pytest.mark.slow, id="all")])
def test_die_wishbone_storage(tmp_path, tests):
    """The die suite (async SDR; make test: WISHBONE_SUBSET, make test-slow: all of it) with the array
    behind a Wishbone master, served by a memory model with random wait states that starts full of
    garbage (the die formats it at reset)."""
    top = DieTop(make_config(), storage="wishbone")
    n = run_cocotb(top, top.ios, "nandlab_die", "die_tb", tmp_path, extra_env={"NANDLAB_TB_MODE": "0"},
                   testcase=tests)
    assert n == (len(tests) if tests else 13)
