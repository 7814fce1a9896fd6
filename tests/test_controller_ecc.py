"""Channel controller with BCH ECC: cocotb on Verilator against emulated dies and bchlib
(tests/tb/controller_ecc_tb.py)."""

import pytest

from nandlab.gateware.onfi.controller import NandLabChannelController
from nandlab.gateware.onfi.common import NandBus
from nandlab.gateware.onfi.sim_top import NandLabChannelSimTop
from nandlab.nand_model.parts import NandLabSLC
from nandlab.testing import run_cocotb, die_test_config

from litex.soc.interconnect import wishbone

ECC = dict(data_bytes=512, t=8, m=13)


ECC_TESTS = ["ecc_round_trip_every_interface", "ecc_corrects_up_to_t_and_flags_t_plus_1",
             "ecc_corrects_the_dies_read_flips", "ecc_refuses_impossible_descriptors", "ecc_moves_the_spares_free_bytes"]


@pytest.mark.cocotb
@pytest.mark.parametrize("tests", [ECC_TESTS, pytest.param(None, marks=pytest.mark.slow, id="all")])
def test_controller_ecc(tmp_path, tests):
    """The ECC suite (make test: all but the multi-plane groups, which make test covers end to end on
    the simulated SoC, tests/test_sim_soc.py::check_multiplane_with_ecc; make test-slow: all six)."""
    top = NandLabChannelSimTop(die_test_config(), ways=2, ecc=ECC)
    n = run_cocotb(top, top.ios, "nandlab_channel_ecc", "controller_ecc_tb", tmp_path,
                   extra_env={"NANDLAB_TB_WAYS": "2"}, testcase=tests)
    assert n == (len(tests) if tests else 6)


@pytest.mark.unit
def test_ecc_that_does_not_fit_the_spare_is_refused():
    """A code whose parity does not fit the part's spare fails at build time, naming the limit."""
    part = NandLabSLC()
    bus = wishbone.Interface(data_width=32)
    with pytest.raises(ValueError, match="spare bytes"):
        NandLabChannelController(NandBus(targets=1), bus, 100e6, part, ecc=dict(data_bytes=512, t=40, m=13))
