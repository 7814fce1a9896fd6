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


@pytest.mark.cocotb
def test_controller_ecc(tmp_path):
    top = NandLabChannelSimTop(die_test_config(), ways=2, ecc=ECC)
    n = run_cocotb(top, top.ios, "nandlab_channel_ecc", "controller_ecc_tb", tmp_path,
                   extra_env={"NANDLAB_TB_WAYS": "2"})
    assert n == 6


@pytest.mark.unit
def test_ecc_that_does_not_fit_the_spare_is_refused():
    """A code whose parity does not fit the part's spare fails at build time, naming the limit."""
    part = NandLabSLC()
    bus = wishbone.Interface(data_width=32)
    with pytest.raises(ValueError, match="spare bytes"):
        NandLabChannelController(NandBus(targets=1), bus, 100e6, part, ecc=dict(data_bytes=512, t=40, m=13))
