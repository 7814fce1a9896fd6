"""Channel controller with BCH ECC: cocotb on Verilator against emulated dies and bchlib
(tests/tb/controller_ecc_tb.py)."""

import sys
from functools import partial

import pytest
from migen import Signal

from nandlab.gateware.onfi import sim_top
from nandlab.gateware.onfi.controller import NandLabChannelController
from nandlab.gateware.onfi.controller.ecc import ecc_geometry
from nandlab.gateware.onfi.common import NandBus
from nandlab.gateware.onfi.sim_top import NandLabChannelSimTop
from nandlab.nand_model.parts import NandLabSLC, get_part
from nandlab.testing import run_cocotb, die_test_config, TB_DIR

from litex.soc.interconnect import wishbone

sys.path.insert(0, str(TB_DIR))
from controller_ecc_mpnfm_tb import mpnfm_test_config  # noqa: E402

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


@pytest.mark.cocotb
def test_controller_ecc_small_shared_decoder(tmp_path):
    """The same suite through the ECPIX-5's decoder: shared (a port of NandLabSharedBchDecoder) and
    smaller (a Chien search of 4 positions a cycle, a serial Berlekamp-Massey)."""
    from nandlab.soc.targets.ecpix5 import ECC_DECODER
    top = NandLabChannelSimTop(die_test_config(), ways=2, ecc=ECC, shared_decoder=ECC_DECODER)
    n = run_cocotb(top, top.ios, "nandlab_channel_ecc", "controller_ecc_tb", tmp_path,
                   extra_env={"NANDLAB_TB_WAYS": "2"}, testcase=ECC_TESTS)
    assert n == len(ECC_TESTS)


@pytest.mark.unit
def test_ecc_that_does_not_fit_the_spare_is_refused():
    """A code whose parity does not fit the part's spare fails at build time, naming the limit."""
    part = NandLabSLC()
    bus = wishbone.Interface(data_width=32)
    with pytest.raises(ValueError, match="spare bytes"):
        NandLabChannelController(NandBus(targets=1), bus, 100e6, part, ecc=dict(data_bytes=512, t=40, m=13))


@pytest.mark.cocotb
@pytest.mark.slow    # ~2 min with its build; make test is at its 30-minute line (the sim SoC's MPNFM runs use the same paths)
def test_controller_ecc_mpnfm(tmp_path, monkeypatch):
    """The MPNFM paper's part (tests/tb/controller_ecc_mpnfm_tb.py): 32 KiB pages of 64 codewords with the
    completion's summary, and the small pages of plane 1 through SMALL (the controller built
    `with_small_pages`, the dies' MPNFM mode on a port of the top)."""
    monkeypatch.setattr(sim_top, "NandLabChannelController", partial(NandLabChannelController, with_small_pages=True))
    top = NandLabChannelSimTop(mpnfm_test_config(), ways=1, ecc=ECC, mem_bytes=256 * 1024)
    mpnfm = top.port("mpnfm", Signal(), False)
    top.comb += [die.mpnfm.eq(mpnfm) for die in top.dies]
    n = run_cocotb(top, top.ios, "nandlab_channel_ecc_mpnfm", "controller_ecc_mpnfm_tb", tmp_path,
                   extra_env={"NANDLAB_TB_WAYS": "1"})
    assert n == 2


@pytest.mark.unit
def test_ecc_geometry_of_the_plane_papers_parts():
    """Per-codeword counts up to 16 codewords (8 KiB at 512 B), the summary beyond; the free bytes past a
    codeword's size only where the spare has that many; small pages only on an MPNFM part; pages beyond
    the 16-bit column refused naming it."""
    geo = lambda name, **kw: ecc_geometry(ECC, get_part(name), 4, **kw)
    for name, summary, bits, free in (("NL-SLC-2K", False, 16, 6), ("DWSDW-MLC-64G", False, 64, 222),
                                      ("SPNFM-8K", False, 64, 286), ("SPNFM-16K", True, 32, 574),
                                      ("SPNFM-32K", True, 32, 1150), ("MPNFM-32-4", True, 32, 1150)):
        g = geo(name)
        assert (g.summary, g.bits, g.free_max, g.long_free) == (summary, bits, free, free >= 512), name
    g = geo("MPNFM-32-4", small_pages=True)
    assert (g.small.data_bytes, g.small.page_bytes, g.small.free_max, g.small.layout.codewords) == (4096, 4352, 142, 8)
    with pytest.raises(ValueError, match="SPNFM-8K has no small pages"):
        geo("SPNFM-8K", small_pages=True)
    with pytest.raises(ValueError, match="16-bit column"):
        geo("SPNFM-64K")
    bus = wishbone.Interface(data_width=32)
    with pytest.raises(ValueError, match="16-bit column"):
        NandLabChannelController(NandBus(targets=1), bus, 100e6, get_part("SPNFM-64K"))
    with pytest.raises(ValueError, match="needs `ecc`"):
        NandLabChannelController(NandBus(targets=1), bus, 100e6, get_part("MPNFM-32-4"), with_small_pages=True)
