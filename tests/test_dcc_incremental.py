"""The incremental DCC scheduler (sw/firmware/dcc.c) gives, decision by decision, the start the first one
(tests/c/dcc_rebuild: the summed staircase rebuilt at every decision) gives, on the harness's models at
both granularities, every read mix and cap, and on small random models with the edge cases (zero-cycle
and zero-level pieces, `now` going back, operations ending exactly at `now`, DCC_MAX_RES full, times
far from 0); its kept staircase is the sum of its reservations and never above the cap."""

import random
import sys
from pathlib import Path

import pytest

from nandlab import dcc, env
from nandlab.nand_model.current import PhaseTables
from nandlab.nand_model.parts import get_part

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import dcc_lib  # noqa: E402

FW = env.REPO / "sw" / "firmware"
REF = env.REPO / "tests" / "c" / "dcc_rebuild"
PIECES, RES = 512, 16           # room for the segment models (320 pieces); the firmware's reservations


def _build(tmp, name, include, source, defines):
    return dcc_lib.build(tmp, name, include, source, [f"-DDCC_MAX_PIECES={PIECES}", f"-DDCC_MAX_RES={RES}", *defines])


# dcc.c searches a model of at most DCC_FEW_PIECES active pieces piece by piece and a longer one from E's
# hot intervals: "as built" (the harness's segment models take the second way, the small random ones the
# first), and "hot" (-DDCC_FEW_PIECES=0: every model the second way).
SEARCHES = {"as built": [], "hot": ["-DDCC_FEW_PIECES=0"]}


@pytest.fixture(scope="module", params=list(SEARCHES))
def libs(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dcc_incremental")
    return _build(tmp, "new", FW, FW / "dcc.c", ["-DINCREMENTAL", *SEARCHES[request.param]]), \
        _build(tmp, "ref", REF, REF / "dcc.c", [])


def _init(so, cap, model_list):
    return dcc_lib.init(so, cap, model_list)


def _both(libs, cap, model_list):
    new, ref = libs
    rc = _init(new, cap, model_list)
    assert rc == _init(ref, cap, model_list)
    return rc


def _decide(libs, op, now, where):
    """One decision on both; the same start (or error), and the kept staircase consistent."""
    new, ref = libs
    got, want = new.shim_schedule(op, now), ref.shim_schedule(op, now)
    assert got == want, (where, op, now)
    assert new.shim_check() == 0, (where, op, now)
    return got


def _bench_run(libs, reads, seed, ops, page):
    """`dcc bench`'s sequence (sw/firmware/cmds_dcc.c): 8 dies, each asking when free, a program's data
    input before its decision and a read's data output after its array, so `now` goes back and forth."""
    rng = random.Random(seed)
    free_at, msb, programs = [0] * 8, [False] * 8, 0
    for n in range(ops):
        die = min(range(8), key=lambda i: free_at[i])
        if rng.randrange(100) < reads:
            op = 0
        else:
            programs += 1
            op = 3 if programs % 50 == 0 else 2 if msb[die] else 1
            msb[die] = not msb[die] if op != 3 else msb[die]
        now = free_at[die] + (page if op in (1, 2) else 0)
        start = _decide(libs, op, now, (reads, seed, n))
        assert start >= now
        free_at[die] = start + libs[0].shim_length(op) + (page if op == 0 else 0)


@pytest.mark.unit
@pytest.mark.parametrize("granularity", ["segment", "atomic"])
def test_same_starts_as_the_rebuilding_scheduler_on_the_harness_models(libs, granularity):
    """MTPM-MLC at 200 MHz (time scale 1 and 10), caps alpha 1..8, R0..R100, two seeds each."""
    part = get_part("MTPM-MLC")
    for scale in (1, 10):
        models = dcc.models(PhaseTables(part, 200e6, scale), granularity)
        page = 18336 // scale
        for alpha in range(1, 9):
            assert _both(libs, alpha << 12, models) == 0
            for reads in (0, 25, 50, 75, 100):
                for seed in (1, 2):
                    assert _both(libs, alpha << 12, models) == 0      # dcc_init resets
                    _bench_run(libs, reads, seed * 100 + alpha, 60 if granularity == "segment" else 120, page)


def _random_models(rng, cap):
    out = []
    for _ in range(rng.randint(1, 4)):
        out.append([(rng.choice([0, 0, 1, 2, 3, 7, 20]), rng.choice([0, rng.randint(0, cap), cap]))
                    for _ in range(rng.randint(0, 8))])
    return out


@pytest.mark.unit
def test_same_starts_on_random_models_and_edge_cases(libs):
    """Zero-cycle and zero-level pieces, empty models, `now` going back, operations ending exactly at
    `now` (the next decision at a reservation's end), and DCC_MAX_RES full: the same start or the same
    DCC_ERR_FULL, decision by decision; times from 0 and from far beyond 2^32."""
    rng = random.Random(18)
    for trial in range(300):
        cap = rng.randint(1, 40)
        models = _random_models(rng, cap)
        assert _both(libs, cap, models) == 0
        t0 = rng.choice([0, 0, 1 << 33, (1 << 40) + 12345])
        now, ends, full = t0, [], 0
        for step in range(rng.randint(10, 80)):
            pick = rng.random()
            if pick < 0.3 and ends:
                now = rng.choice(ends)                      # exactly at a reservation's end
            elif pick < 0.45:
                now = max(t0, now - rng.randint(0, 30))     # back
            else:
                now += rng.choice([0, 0, 1, 2, 5, 11, 40])
            op = rng.randrange(len(models))
            s = _decide(libs, op, now, (trial, step))
            if s == -4:
                full += 1
                continue
            assert s >= now
            ends.append(s + libs[0].shim_length(op))


def _segment_like(rng, cap):
    """A model shaped like the segment models (dcc.py): phases, each a one-cycle zero then ramps and
    plateaus at a few levels, repeated as a program's loops, up to a few hundred pieces."""
    levels = [rng.randint(1, cap) for _ in range(rng.randint(2, 6))]
    loop = []
    for _ in range(rng.randint(1, 5)):
        loop.append((1, 0))
        for _ in range(rng.randint(1, 4)):
            loop.append((rng.choice([1, 2, 3, 8, 30, 120]), rng.choice(levels)))
    return [(2, 0)] + loop * rng.randint(1, 300 // len(loop))


@pytest.mark.unit
def test_same_starts_on_random_segment_models(libs):
    """Segment-like models (hundreds of pieces, one-cycle gaps, few levels), several dies asking when
    free as `dcc bench` does (`now` back and forth), caps from tight to loose: the start of the first
    scheduler, decision by decision, and the kept staircase the sum of the reservations."""
    rng = random.Random(1801)
    for trial in range(12):
        cap = rng.randint(20, 200)
        models = [_segment_like(rng, cap) for _ in range(rng.randint(1, 4))]
        assert _both(libs, cap, models) == 0
        free_at = [rng.randint(0, 50) for _ in range(rng.randint(2, 8))]
        for n in range(40):
            die = min(range(len(free_at)), key=lambda i: free_at[i])
            op = rng.randrange(len(models))
            now = free_at[die] + rng.choice([0, 0, 5, 37])
            s = _decide(libs, op, now, (trial, n))
            assert s >= now
            free_at[die] = s + libs[0].shim_length(op) + rng.choice([0, 3])


@pytest.mark.unit
def test_full_then_freed(libs):
    """DCC_MAX_RES operations that never end before `now`: the next is refused, by both; once `now`
    passes the first, both schedule again where they agree."""
    assert _both(libs, 10, [[(100, 1)], [(0, 5)]]) == 0
    starts = [_decide(libs, 0, 0, k) for k in range(RES)]
    assert starts == [0] * 10 + [100] * (RES - 10)        # ten at a time under the cap
    assert _decide(libs, 0, 0, "full") == -4
    assert _decide(libs, 0, 99, "still full") == -4
    assert _decide(libs, 1, 100, "freed") == 100         # a zero-length operation, once the first ten end
    assert _decide(libs, 0, 100, "room") == 100


@pytest.mark.unit
def test_base_moves_and_range_errors(libs):
    """Times are 32-bit from a base: `now` 2^31 past it and `now` far below it move the base (same
    starts as the reference); a queue spanning 2^31 cycles is refused with DCC_ERR_RANGE, a model of
    2^30 cycles with DCC_ERR_TOO_LONG, never a wrapped start."""
    new, _ = libs
    assert _both(libs, 2, [[(1000, 1), (5, 2)], [(3, 2)]]) == 0
    for now in (0, 10, 3 << 30, (3 << 30) + 7, (3 << 30) - 100, 1 << 34, (1 << 34) - (1 << 30), 1 << 34):
        for op in (0, 1, 0):
            _decide(libs, op, now, now)
    long = (1 << 30) - 1
    assert _init(new, 1, [[(long, 1)]]) == 0
    assert new.shim_schedule(0, 0) == 0
    assert new.shim_schedule(0, 0) == long
    assert new.shim_schedule(0, 0) == -6                  # would end at 3 x (2^30 - 1) > 2^31
    assert new.shim_schedule(0, long) == 2 * long         # the first is over: the span fits again
    assert _init(new, 1, [[(1 << 29, 1), (1 << 29, 1)]]) == -7
