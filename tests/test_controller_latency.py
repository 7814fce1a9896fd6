"""Channel controller behind a read latency (as behind the pin PHY): cocotb on Verilator against emulated
dies whose DQ/DQS reach the controller L cycles late, and 0-6 phases later still (tDQSCK)."""

import pytest

from nandlab.gateware.onfi.sim_top import NandLabChannelSimTop
from nandlab.gateware.onfi.pinphy import OUTPUT_LATENCY, INPUT_LATENCY
from nandlab.testing import run_cocotb, die_test_config

WAYS = 2


@pytest.mark.cocotb
@pytest.mark.parametrize("latency", [0, OUTPUT_LATENCY + INPUT_LATENCY])
def test_controller_late_dqs(tmp_path, latency):
    """NV-DDR modes 0-5 with the dies answering 0-6 phases late (DQ and DQS together; ONFI's tDQSCK up
    to 25 ns and the board's 1 ns at 100 MHz) behind a read latency: page reads byte for byte, also with
    slow memory (pauses for FIFO room), the dies' timing checkers at zero, mode 5 still 2 bytes a cycle,
    a die that never answers still times out (tests/tb/controller_late_tb.py).

    At the pin PHY's latency the same build (answers 0 phases late: the late stage is then a wire) also
    runs the read-latency suite (tests/tb/controller_latency_tb.py): reads in async SDR 0/5, sync SDR 5,
    NV-DDR 0/5 byte for byte with the timing checkers at zero, slow memory, the NV-DDR mode 5 page rate."""
    top = NandLabChannelSimTop(die_test_config(), ways=WAYS, read_latency=latency, dout_late_max=6)
    modules = ["controller_late_tb"] + (["controller_latency_tb"] if latency else [])
    n = run_cocotb(top, top.ios, f"nandlab_channel_late_l{latency}", modules, tmp_path,
                   extra_env={"NANDLAB_TB_WAYS": str(WAYS), "NANDLAB_TB_READ_LATENCY": str(latency)})
    assert n == (5 if latency else 3)
