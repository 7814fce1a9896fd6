"""Token-ring fault injection (issue 19): lost, duplicated and corrupted packets between nodes are
detected, the ring recovers with TT tokens and one key, and the budget holds in every cycle
(gateware/power/faultbench.py, nandlab.ringfaults)."""

import pytest

from nandlab import ringfaults


def _assert_clean(s):
    assert ringfaults.check(s) == [], s
    assert all(v > 0 for v in s["injected_by_kind"].values()), s["injected_by_kind"]
    assert s["operations_done"] > 10 * s["injected"]          # the dies kept working
    assert s["max_summed_rt"] > 15                             # dies did run together


@pytest.mark.cocotb
def test_ring_faults_short(tmp_path):
    s = ringfaults.run(400, seed=1, build_dir=tmp_path)
    _assert_clean(s)


@pytest.mark.cocotb
@pytest.mark.slow
def test_ring_faults_10k(tmp_path):
    s = ringfaults.run(10_000, seed=19, build_dir=tmp_path)
    _assert_clean(s)
    assert s["injected"] >= 10_000
