"""Random descriptor streams, invalid ones included, into the channel controller: cocotb on Verilator
against emulated dies and a shadow model (tests/tb/controller_fuzz_tb.py)."""

import json

import pytest

from nandlab.gateware.onfi.sim_top import NandLabChannelSimTop
from nandlab.testing import run_cocotb, die_test_config

ECC = dict(data_bytes=512, t=8, m=13)


def _fuzz(tmp_path, testcase=None, **plan):
    top = NandLabChannelSimTop(die_test_config(), ways=4, ecc=ECC)
    out = tmp_path / "fuzz.json"
    run_cocotb(top, top.ios, "nandlab_channel_fuzz", "controller_fuzz_tb", tmp_path, testcase=testcase,
               extra_env={"NANDLAB_TB_WAYS": "4", "NANDLAB_FUZZ_PLAN": json.dumps(plan),
                          "NANDLAB_FUZZ_OUT": str(out)})
    result = json.loads(out.read_text())
    print(json.dumps(result, indent=1))
    return result


@pytest.mark.cocotb
def test_controller_fuzz(tmp_path):
    """A few hundred descriptors (seed 1): every one completes as the shadow says. In the same build, the
    directed tests of what the fuzz found: an NV-DDR read the die never answers completes TIMEOUT
    (`silent_die_times_out`), an ERASE or READ queued right after a cache program or cache read waits for
    ARDY and does what it says (`cache_program_then_any`)."""
    r = _fuzz(tmp_path, seed=1, batches=12)
    assert r["descriptors"] >= 200
    assert r["results"].get("OK", 0) > 50 and len(r["results"]) >= 6


@pytest.mark.cocotb
@pytest.mark.slow
def test_controller_fuzz_long(tmp_path):
    """>= 10 000 descriptors over several seeds' worth of batches (seed 2)."""
    r = _fuzz(tmp_path, "random_descriptor_streams", seed=2, batches=460)
    assert r["descriptors"] >= 10_000
