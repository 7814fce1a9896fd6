"""DCC baseline: the corner models bound the die's current, and the C scheduler (sw/firmware/dcc.c)
starts every operation where a brute-force search over every cycle does."""

import random
import sys
from pathlib import Path

import pytest

from nandlab import dcc, env
from nandlab.errors import NandLabError
from nandlab.nand_model.current import OPS, PhaseTables
from nandlab.nand_model.parts import get_part

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import dcc_lib  # noqa: E402

FW = env.REPO / "sw" / "firmware"


@pytest.fixture(scope="module")
def cdcc(tmp_path_factory):
    return dcc_lib.build(tmp_path_factory.mktemp("dcc"), "dcc", FW, FW / "dcc.c", ["-DDCC_MAX_RES=64"])


def c_init(so, cap, model_list):
    return dcc_lib.init(so, cap, model_list)


@pytest.mark.unit
@pytest.mark.parametrize("granularity", dcc.GRANULARITIES)
def test_models_bound_the_die_current(granularity):
    """Every model, at every cycle, is at or above the die's reference current (the emulator's own
    tables, started one cycle after the start pulse), lasts exactly as long, and is as coarse as
    its granularity says."""
    tables = PhaseTables(get_part("MTPM-MLC"), 100e6, 20)
    for op in OPS:
        model = dcc.corner_model(tables, op, granularity)
        flat = [lv for n, lv in model for _ in range(n)]
        die = [0] + tables.expand(op)
        assert len(flat) == len(die), op
        assert all(m >= c for m, c in zip(flat, die)), op
        assert max(flat) == max(die)           # the peak is exact, not padded
        if granularity == "operation":
            assert len(model) == 2
        if granularity == "segment":
            # Tight: above the die by no more than a ramp's rise within one segment.
            assert sum(flat) - sum(die) < 0.05 * sum(die), op
    atomic = dcc.corner_model(tables, "program_lsb", "atomic")
    assert len(atomic) == 1 + 2 * get_part("MTPM-MLC").ispp_loops       # P_A1, P_A2 per loop


@pytest.mark.unit
def test_c_scheduler_matches_brute_force(cdcc):
    """Random staircase models and random arrival times: the C scheduler's start for every operation
    equals the reference's (every start tried, cycle by cycle), and its summed model agrees."""
    rng = random.Random(7)
    for trial in range(40):
        cap = rng.randint(8, 20)
        models = []
        for _ in range(rng.randint(1, 4)):
            models.append([(rng.randint(1, 6), rng.randint(0, cap)) for _ in range(rng.randint(1, 7))])
        assert c_init(cdcc, cap, models) == 0
        ref = dcc.ReferenceScheduler(cap, models)
        now = 0
        for _ in range(30):
            now += rng.choice([0, 0, 1, 2, 5, 11])
            op = rng.randrange(len(models))
            want = ref.schedule(op, now)
            got = cdcc.shim_schedule(op, now)
            assert got == want, (trial, op, now, models, cap)
            for t in range(now, now + 40):
                assert cdcc.shim_at(t) == ref.load(t) <= cap


@pytest.mark.unit
def test_scheduler_delays_past_the_violation(cdcc):
    """Worked by hand, cap 100: A = 50 for 10 cycles then 90 for 10, B = 60 for 5 cycles.
    A at 0. B meets A's 50 (110) and then its 90 (150): delayed past each, to 20. A second A: its 90
    would meet the first A's 90 -> 10; then its 50 meets that 90 -> 20; then B's 60 -> 25, where it fits."""
    a, b = [(10, 50), (10, 90)], [(5, 60)]
    assert c_init(cdcc, 100, [a, b]) == 0
    assert cdcc.shim_schedule(0, 0) == 0
    assert cdcc.shim_schedule(1, 0) == 20
    assert cdcc.shim_schedule(0, 0) == 25


@pytest.mark.unit
def test_models_over_the_cap_are_refused(cdcc):
    assert c_init(cdcc, 10, [[(3, 11)]]) == -3          # DCC_ERR_OVER_CAP
    assert c_init(cdcc, 10, [[(1, 1)]] * 5) == -1       # more kinds than DCC_MAX_MODELS
    assert c_init(cdcc, 10, [[(100, 1)]]) == 0
    assert [cdcc.shim_schedule(0, 0) for _ in range(64)] == [0] * 10 + [100] * 10 + [200] * 10 + \
        [300] * 10 + [400] * 10 + [500] * 10 + [600] * 4
    assert cdcc.shim_schedule(0, 0) == -4               # DCC_ERR_FULL: 64 scheduled, none over
    assert cdcc.shim_schedule(0, 100) == 600            # the first ten are over at 100
    with pytest.raises(NandLabError, match="read peaks at .* above the cap"):
        dcc.check_cap([[(5, 4096)]] + [[(1, 0)]] * 3, 2048)
    with pytest.raises(NandLabError, match="granularity 'fine' is not one of"):
        dcc.corner_model(PhaseTables(get_part("MTPM-MLC"), 100e6, 20), "read", "fine")
