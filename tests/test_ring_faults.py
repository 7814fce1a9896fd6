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
def test_ring_faults_10k(tmp_path):
    """10,000 faults (2,500 per policy: PPM, MTPM, KMTPM atomic and sub-atomic; drop, duplicate, flip
    drawn evenly) on a 4-node ring at TT = 30 (half the dies' summed peak): every one detected (flips
    by the parity, duplicates by the sequence bit, drops by the audit) and recovered from; in every
    cycle the summed RTs <= TT, never more than TT tokens or one key; exactly TT and one key while
    running outside a fault's episode. About 6 M cycles, 40 s with the build."""
    s = ringfaults.run(10_000, seed=19, build_dir=tmp_path)
    _assert_clean(s)
    assert s["injected"] == 10_000
    # What finds what (documented in gateware/power/ring.py).
    assert s["detected_by_check"] == {"parity": s["injected_by_kind"]["flip"], "seq": s["injected_by_kind"]["dup"],
                                      "audit": s["injected_by_kind"]["drop"]}


@pytest.mark.cocotb
@pytest.mark.slow
def test_ring_faults_100k(tmp_path):
    s = ringfaults.run(100_000, seed=1919, build_dir=tmp_path)
    _assert_clean(s)
    assert s["injected"] == 100_000


@pytest.mark.cocotb
def test_ring_faults_unprotected_are_caught_by_the_checks(tmp_path):
    """Negative control: the same duplicates on the paper's packets (no sequence or parity bit) go
    unnoticed, the ring never recovers, and the bench's checks see tokens and keys multiply and the
    budget broken: the checks of the tests above can fail."""
    s = ringfaults.run(20, seed=3, build_dir=tmp_path, policies=["kmtpm_sub"], kinds=0b010, protect=False)
    assert s["detected"] == 0 and s["recoveries"] == 0
    assert s["token_or_key_excess_cycles"] > 0
    assert s["budget_violation_cycles"] > 0 and s["max_summed_rt"] > s["tt"]
    assert ringfaults.check(s) != []


@pytest.mark.unit
@pytest.mark.parametrize("args, message", [
    (["--faults", "0"], "--faults 0: must be 1 or more"),
    (["--seed", "-1"], "--seed -1: must be in 0..2^31-1"),
    (["--alpha", "4"], "ring-faults needs alpha < 4"),
    (["--alpha", "0"], "alpha = 0 is out of range"),
    (["--policies", "npm"], "--policies: npm: choose from"),
    (["--policies", ","], "--policies: none given"),
])
def test_ring_faults_cli_refuses_before_building(args, message):
    from nandlab.cli import check_command_line
    from nandlab.errors import NandLabError
    with pytest.raises(NandLabError, match=message.replace("^", r"\^").replace("+", r"\+")):
        check_command_line(["experiment", "ring-faults", *args])


@pytest.mark.unit
def test_ring_faults_cli_defaults():
    from nandlab.cli import check_command_line
    args = check_command_line(["experiment", "ring-faults"])
    assert (args.faults, args.alpha) == (10_000, ringfaults.ALPHA)
    args = check_command_line(["experiment", "power"])
    assert args.alpha == 4 and args.policies.split(",")[0] == "npm"
