"""Channel controller: cocotb on Verilator against emulated dies (tests/tb/controller_tb.py)."""

import pytest

from nandlab.gateware.onfi import controller as ctl
from nandlab.gateware.onfi import common as onfi
from nandlab.gateware.onfi.sim_top import NandLabChannelSimTop
from nandlab.testing import run_cocotb, die_test_config


@pytest.mark.unit
def test_beats_never_faster_than_the_mode():
    """Every mode's beat, rounded to the 100 MHz clock, is at least the ONFI period, with both halves
    at least half of it; the modes the benchmark relies on are exact."""
    for interface in ctl.INTERFACES:
        for mode in range(6):
            for name, (b, lo) in ctl.mode_beats(interface, mode, 100e6).items():
                period = (onfi.SDR_TWC_NS if name == "w" else onfi.SDR_TRC_NS)[mode] \
                    if interface == onfi.IF_ASYNC_SDR else onfi.NVDDR_TCK_NS[mode]
                assert b * 10 >= period and lo * 5 >= period / 2 and (2 * b - lo) * 5 >= period / 2
    assert ctl.transfer_bytes_per_s(onfi.IF_ASYNC_SDR, 5, 100e6) == 50e6
    assert ctl.transfer_bytes_per_s(onfi.IF_SYNC_SDR, 5, 100e6) == 100e6
    assert ctl.transfer_bytes_per_s(onfi.IF_NVDDR, 5, 100e6) == 200e6


@pytest.mark.cocotb
def test_controller(tmp_path):
    top = NandLabChannelSimTop(die_test_config(), ways=4)
    n = run_cocotb(top, top.ios, "nandlab_channel", "controller_tb", tmp_path)
    assert n == 2
