"""Channel controller: multi-plane operations per plane architecture and way interleaving, cocotb on
Verilator against emulated dies (tests/tb/controller_planes_tb.py)."""

import sys

import pytest

from nandlab.gateware.onfi.sim_top import NandLabChannelSimTop
from nandlab.testing import run_cocotb, TB_DIR

sys.path.insert(0, str(TB_DIR))
from controller_planes_tb import planes_test_config  # noqa: E402


def _run(tmp_path, ways, overlap_ways, mem_bytes, testcase=None):
    top = NandLabChannelSimTop(planes_test_config(), ways=ways, mem_bytes=mem_bytes)
    return run_cocotb(top, top.ios, "nandlab_channel", "controller_planes_tb", tmp_path, testcase=testcase,
                      extra_env={"NANDLAB_TB_WAYS": str(ways), "NANDLAB_TB_MEM_BYTES": str(mem_bytes),
                                 "NANDLAB_TB_OVERLAP_WAYS": ",".join(map(str, overlap_ways))})


@pytest.mark.cocotb
def test_controller_planes(tmp_path):
    """Multi-plane cases under CNFM, DW-NFM and SDW-NFM on 4 ways (exact results, whole pages), the
    regressions for a no-status descriptor's result and multi-plane read registers, interleaving at
    1, 2 and 4 ways."""
    assert _run(tmp_path, ways=4, overlap_ways=(1, 2, 4), mem_bytes=128 * 1024) == 4


@pytest.mark.cocotb
@pytest.mark.slow
def test_controller_interleaving_16_ways(tmp_path):
    """Interleaving at 8 and 16 ways on a channel of 16 dies (the build takes minutes)."""
    assert _run(tmp_path, ways=16, overlap_ways=(8, 16), mem_bytes=256 * 1024,
                testcase="way_interleaving_overlaps_array_time") == 1
