"""Issue 18 b: dies whose waveform deviates from the compiled one, static vs adaptive token tables
(gateware/power/deviation.py, gateware/power/harness_deviation.h, nandlab.deviation)."""

import pytest

from nandlab import deviation, experiment
from nandlab.errors import NandLabError
from nandlab.gateware.power.deviation import deviate_segments, deviated_tables
from nandlab.nand_model.current import PhaseTables, ACC_FRAC
from nandlab.nand_model.parts import get_part
from nandlab.testing import run_cli as nandlab

RUN = dict(dies=8, n_ops=300, ratios=[50], tg=4, alpha=4, time_scale=10, log=lambda *_: None, jobs=2)
POLICIES = ["npm", "kmtpm_sub", "mtpm"]
IGNORED = deviation.ADDED


@pytest.mark.unit
def test_parse_and_refusals():
    assert deviation.parse("20", 8) == {0: (20, 0), 4: (20, 0)}
    assert deviation.parse("10:30@1,2", 8) == {1: (10, 30), 2: (10, 30)}
    assert deviation.parse("-10", 8) == {0: (-10, 0), 4: (-10, 0)}
    for bad, words in (("x", "whole numbers"), ("10@9", "die 9"), ("500", "outside"), ("0:0", "deviates nothing"),
                       ("10:-5", "stretch"), ("10@a", "comma-separated")):
        with pytest.raises(NandLabError, match=words):
            deviation.parse(bad, 8)


@pytest.mark.unit
def test_deviated_segments_scale_level_and_duration():
    assert deviate_segments([(10, 1000 << ACC_FRAC, 0)], 20, 0) == [(10, 1200 << ACC_FRAC, 0)]
    (n, i0, slope), = deviate_segments([(10, 0, 100 << ACC_FRAC)], 0, 50)
    assert n == 15 and i0 == 0 and 0 <= (1000 << ACC_FRAC) - slope * 15 < 15     # same end, floored slope
    tables = PhaseTables(get_part("MTPM-MLC"), 100e6, 10)
    assert deviated_tables(tables, 0, 0) is tables
    dev = deviated_tables(tables, 10, 0)
    assert [ph.oi for ph in dev.phases("read")] == [ph.oi for ph in tables.phases("read")]
    assert max(dev.expand("program_lsb")) > max(tables.expand("program_lsb")) * 1.09


@pytest.mark.unit
def test_spec_limits_cover_the_nominal_peaks():
    """Each phase's limit is at least its nominal peak (no false detection) and at most what its RT covers
    plus rounding; a raise reaches back to its atomic operation's first phase."""
    part = get_part("MTPM-MLC")
    tables = PhaseTables(part, 100e6, 10)
    table = experiment.experiment_table(part, 4, 4)
    spec = deviation.spec_part(tables, table, True)
    limit = dict((oi, v) for oi, v in spec["limit"])
    for op in ("read", "program_lsb", "erase"):
        for ph in tables.phases(op):
            seg_peak = max(max(i0, i0 + (n - 1) * s) >> ACC_FRAC for n, i0, s in ph.segments)
            assert seg_peak <= limit[ph.oi] <= max(seg_peak, table.rt[ph.oi] * 4096 // 15)
    for oi, *raise_ in spec["prefix"]:
        assert raise_[-1] == oi and table.first[raise_[0]]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """off (no detection), off with adaptive tables, +20 % on dies 0 and 4 with static and adaptive tables."""
    wd = tmp_path_factory.mktemp("dev")
    dev = deviation.parse("20", 8)
    out = {}
    out["off"], _ = experiment.run(policies=POLICIES, workdir=wd, **RUN)
    out["off_adaptive"], _ = experiment.run(policies=POLICIES, workdir=wd, adaptive=True, **RUN)
    out["static"], _ = experiment.run(policies=POLICIES, workdir=wd, deviation=dev, adaptive=False, **RUN)
    out["adaptive"], _ = experiment.run(policies=POLICIES, workdir=wd, deviation=dev, adaptive=True, **RUN)
    return {case: {r["policy"]: r for r in res} for case, res in out.items()}


@pytest.mark.cocotb
def test_adaptive_without_deviation_is_static(runs):
    """Deviation off: the adaptive tables detect nothing, write nothing, and every counter is the static run's."""
    for p in POLICIES:
        a, s = runs["off_adaptive"][p], runs["off"][p]
        assert a["detected"] == [] and a["table_writes"] == 0
        assert {k: v for k, v in a.items() if k not in IGNORED} == s


@pytest.mark.cocotb
def test_deviation_is_real_and_detected(runs):
    """+20 % on dies 0 and 4: static tables violate the budget under KMTPM-S (MTPM, one atomic operation
    start per key visit, may stay under it on a short trace), and the per-die measurement finds
    exactly those two dies."""
    assert runs["static"]["kmtpm_sub"]["violations"] > 0
    for p in ("kmtpm_sub", "mtpm"):
        assert runs["off"][p]["violations"] == 0
        assert runs["static"][p]["detected"] == [0, 4]
        assert runs["static"][p]["table_writes"] == 0
        assert runs["adaptive"][p]["detected"] == [0, 4]


@pytest.mark.cocotb
def test_adaptive_tables_converge(runs):
    """Adaptive: every violation happens before the last table write (none once the tables have
    converged), fewer than with static tables; the token policies still finish every operation."""
    for p in ("kmtpm_sub", "mtpm"):
        a = runs["adaptive"][p]
        assert a["table_writes"] > 0
        assert a["violations"] == a["violations_adapting"], p
        assert a["violations"] <= runs["static"][p]["violations"]
        assert a["ops"] == runs["off"][p]["ops"]
    assert runs["adaptive"]["kmtpm_sub"]["violations"] < runs["static"]["kmtpm_sub"]["violations"]


@pytest.mark.cocotb
def test_skip_is_exact_with_deviation_and_writes(tmp_path):
    """Deviated dies (level and duration) with adaptive tables: the same counters, detections and table
    writes (at the same cycles) with quiet stretches skipped as cycle by cycle."""
    kw = dict(RUN, n_ops=120, time_scale=20, policies=["kmtpm_sub", "kmtpm_atomic"], workdir=tmp_path,
              deviation=deviation.parse("20:30@1,6", 8), adaptive=True)
    stats = []
    skipped, _ = experiment.run(skip=True, skip_stats=stats, **kw)
    stepped, _ = experiment.run(skip=False, **kw)
    assert skipped == stepped
    assert all(r["table_writes"] > 0 and r["detected"] == [1, 6] for r in stepped)
    assert sum(s["skipped_cycles"] for s in stats) > 0.5 * sum(r["cycles"] for r in stepped)


@pytest.mark.cocotb
def test_cli_deviation_experiment(runs):
    """`experiment power --deviation` (the fixture's harness builds, 100 MHz): the four cases, JSON."""
    import json
    r = nandlab("experiment", "power", "--deviation", "20", "--ops", "300", "--ratios", "50", "--policies",
                "npm,kmtpm_sub", "--time-scale", "10", "--clock-mhz", "100", "--jobs", "2", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["no_false_detection"] and out["params"]["deviating_dies"] == [0, 4]
    s = out["summary"]
    assert s["static"]["kmtpm_sub"]["violations"] == runs["static"]["kmtpm_sub"]["violations"] > 0
    assert s["adaptive"]["kmtpm_sub"]["violations_steady"] == 0
    assert s["off"]["kmtpm_sub"]["violations"] == 0 and s["adaptive"]["kmtpm_sub"]["detected"] == [0, 4]


@pytest.mark.unit
def test_cli_refuses_bad_deviation():
    r = nandlab("experiment", "power", "--deviation", "20@12", "--ops", "10", "--ratios", "50")
    assert r.returncode != 0 and "die 12" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.unit
def test_table_keep_writes_one_node():
    """`table_keep`: a write reaches only the nodes whose bit is clear; 0 is the broadcast of before."""
    from migen import run_simulation
    from nandlab.gateware.power.ring import PowerRing
    ring = PowerRing(3)
    seen = {}

    def bench():
        for node in ring.nodes:
            yield node.oi.eq(0x21)
        for keep, rt in ((0b000, 5), (0b101, 9)):       # all nodes 5, then node 1 alone 9
            yield ring.table_keep.eq(keep)
            yield ring.table_adr.eq(0x21)
            yield ring.table_dat.eq(rt)
            yield ring.table_we.eq(1)
            yield
            yield ring.table_we.eq(0)
            yield
        seen["rt"] = []
        for node in ring.nodes:
            seen["rt"].append((yield node.rt_now))

    run_simulation(ring, bench())
    assert seen["rt"] == [5, 9, 5]
