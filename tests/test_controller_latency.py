"""Channel controller behind a read latency (as behind the pin PHY): cocotb on Verilator against emulated
dies whose DQ/DQS reach the controller L cycles late (tests/tb/controller_latency_tb.py)."""

import pytest

from nandlab.gateware.onfi.sim_top import NandLabChannelSimTop
from nandlab.gateware.onfi.pinphy import OUTPUT_LATENCY, INPUT_LATENCY
from nandlab.testing import run_cocotb, die_test_config

WAYS = 2


@pytest.mark.cocotb
@pytest.mark.parametrize("latency", [OUTPUT_LATENCY + INPUT_LATENCY])
def test_controller_read_latency(tmp_path, latency):
    """Reads in async SDR 0/5, sync SDR 5, NV-DDR 0/5 byte for byte with the dies' timing checkers at
    zero, slow memory, and the NV-DDR mode 5 page rate, with the pin PHY's read latency."""
    top = NandLabChannelSimTop(die_test_config(), ways=WAYS, read_latency=latency)
    n = run_cocotb(top, top.ios, f"nandlab_channel_l{latency}", "controller_latency_tb", tmp_path,
                   extra_env={"NANDLAB_TB_WAYS": str(WAYS), "NANDLAB_TB_READ_LATENCY": str(latency)})
    assert n == 2
