"""nandlab.planes (`nandlab reproduce dwsdw`): the runs it plans are valid replays, and its rows and figures
follow from the runs' numbers (fed the paper's own values, every ratio is 1)."""

import pytest

from nandlab import planes, reproduce


@pytest.mark.unit
@pytest.mark.parametrize("quick", [True, False])
def test_plan_covers_the_papers_grid(quick):
    main, sens, sweep, workloads = planes.plan(quick)
    assert len(main) == 3 * 3 * len(workloads) and {p.ways for p in main} == {1, 2, 4}
    assert {p.arch for p in main} == set(planes.ARCHS) and all(p.depth == 32 and p.stagger == 0 for p in main)
    assert {p.stagger for p in sens} == {2} and {p.arch for p in sens} == set(planes.ARCHS)
    if quick:       # no Fig. 8 sweep in --quick runs (the paper gives no numbers for it)
        assert sweep == []
    else:
        assert {p.depth for p in sweep} == {16, 64, 128, 256} and {p.arch for p in sweep} == {"DW-NFM", "SDW-NFM"}
    assert set(workloads) <= set(planes.WORKLOADS) and len(workloads) == (2 if quick else 6)


@pytest.mark.unit
@pytest.mark.parametrize("ways", [1, 2, 4])
def test_every_run_is_a_valid_replay_with_equal_capacity(tmp_path, ways):
    """The replay's own parser and checks accept each run's arguments (nothing is refused after a
    build), and the dies keep the same capacity at every way count, as Table II does."""
    for arch in planes.ARCHS:
        args = planes.run_args(planes.Point(ways, arch, "Financial1", 128, 2), 100, 1, tmp_path)
        assert args.dies == ways and args.arch == arch and args.sched == 128 and args.qd == 32
        assert args.nand_time_scale == 1 and args.nand_sdw and args.ftl_stagger == 2
    assert ways * planes.pages_for(ways) == planes.PAGES_1WAY


def fake_results(quick, paper=True):
    """Runs whose numbers are the paper's: DW and SDW at the paper's throughput over CNFM, exploitation
    inside the paper's ranges (the stagger-2 runs too)."""
    main, sens, sweep, workloads = planes.plan(quick)
    out = []
    for p in dict.fromkeys(main + sens + sweep):
        ratio = 1.0 if p.arch == "CNFM" else planes.PAPER_RATIO[(p.arch, p.ways)] if paper else 1.0
        lo, hi = planes.PAPER_EXPLOITATION[p.arch]
        out.append({**p._asdict(), "mb_s": 10.0 * ratio * (1 + p.depth / 1000), "exploitation_pages": (lo + hi) / 2,
                    "sched_mean_cycles": 350.0})
    return out, workloads


@pytest.mark.unit
def test_rows_recompute_the_paper_from_its_own_numbers():
    results, workloads = fake_results(True)
    rows = {r["quantity"]: r for r in planes.rows(results, workloads, reproduce._row)}
    assert rows["DW-NFM throughput over CNFM, 1 way(s)"]["paper"] == pytest.approx(1.213)
    assert rows["SDW-NFM throughput over CNFM, 4 way(s)"]["paper"] == pytest.approx(1.34)
    for q, r in rows.items():
        if "throughput over CNFM" in q and "staggered" not in q:
            assert r["ratio"] == pytest.approx(1.0), q
        if "exploitation, 1 way" in q:
            assert r["ratio"] == pytest.approx(1.0), q
    for arch in planes.ARCHS:
        sched = rows[f"scheduler decision / tPROG, {arch} (mean over its runs, 100 MHz)"]
        assert sched["ours"] == pytest.approx(350 / 70000) and sched["paper"] == 0.01
    # Not the paper's numbers: the ratios say so.
    flat, _ = fake_results(True, paper=False)
    rows = {r["quantity"]: r for r in planes.rows(flat, workloads, reproduce._row)}
    assert rows["SDW-NFM throughput over CNFM, 1 way(s)"]["ratio"] == pytest.approx(1 / 1.439)


@pytest.mark.unit
def test_throughput_ratio_is_the_mean_of_per_workload_ratios():
    P = planes.Point
    results = [{**P(1, "CNFM", "A")._asdict(), "mb_s": 10.0}, {**P(1, "DW-NFM", "A")._asdict(), "mb_s": 15.0},
               {**P(1, "CNFM", "B")._asdict(), "mb_s": 20.0}, {**P(1, "DW-NFM", "B")._asdict(), "mb_s": 20.0}]
    assert planes.throughput_ratio(results, "DW-NFM", 1, ["A", "B"]) == pytest.approx((1.5 + 1.0) / 2)
    assert planes.throughput_ratio(results, "DW-NFM", 2, ["A", "B"]) is None       # no run: no number


@pytest.mark.unit
def test_figures_are_pngs_with_the_runs_parameters(tmp_path):
    results, workloads = fake_results(False)
    paths = planes.figures(results, workloads, 150, tmp_path)
    assert len(paths) == 4 and any(p.endswith("dwsdw_fig8_depth.png") for p in paths)
    results, workloads = fake_results(True)         # --quick: no queue-depth sweep, no Fig. 8
    (tmp_path / "q").mkdir()
    quick = planes.figures(results, workloads, 150, tmp_path / "q")
    assert len(quick) == 3 and not any(p.endswith("dwsdw_fig8_depth.png") for p in quick)
    paths += quick
    for p in paths:
        with open(p, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    dev = planes.deviations(150, True)
    assert any("at those times" in d for d in dev) and any("--quick" in d for d in dev)
    assert any("150 requests" in d for d in dev)


@pytest.mark.sim
@pytest.mark.slow
def test_runs_on_the_simulated_soc(tmp_path):
    """Five short runs on one booted 1-die SoC of the paper's part (8 KiB pages: more ECC-free spare than
    the 2 KiB part, which once overran the port's per-slot buffer and hung the replay): every read checks
    out (run_points raises otherwise), and what the dies counted follows the architecture and the
    allocation: with the planes' page addresses synchronised CNFM and DW-NFM pair programs two by two,
    SDW-NFM groups more; with the planes staggered by 2 pages CNFM pairs no program and DW-NFM still does."""
    P = planes.Point
    points = [P(1, "CNFM", "Financial1"), P(1, "DW-NFM", "Financial1"), P(1, "SDW-NFM", "Financial1"),
              P(1, "CNFM", "Financial1", 32, 2), P(1, "DW-NFM", "Financial1", 32, 2)]
    res = {(r["arch"], r["stagger"]): r for r in planes.run_points(points, n=40, out=tmp_path, log=print)}

    def groups(r, more_than):
        return sum(v for k, v in r["program_by_pages"].items() if int(k) > more_than)
    for key in (("CNFM", 0), ("DW-NFM", 0), ("DW-NFM", 2)):
        assert groups(res[key], 1) > 0 and groups(res[key], 2) == 0, (key, res[key]["program_by_pages"])
    assert groups(res[("SDW-NFM", 0)], 2) > 0, res[("SDW-NFM", 0)]["program_by_pages"]
    assert groups(res[("CNFM", 2)], 1) == 0 and res[("CNFM", 2)]["exploitation_pages"] < 0.05
    assert all(r["span"] == 4 and r["requests"] == 40 and r["mb_s"] > 0 for r in res.values())


# Issue 17's acceptance: the scheduler's cost per decision under 1 % of the DW/SDW part's tPROG (700 us).
# The paper states it for its 400 MHz embedded CPU (dw:187); the SoC's VexRiscv runs at planes.CLOCK_HZ
# (100 MHz), where 1 % is 700 cycles. Measured on the simulated SoC (the firmware's own timing of each
# decision, `ftl stats` sched_cycles / sched_decisions over the measured run), at the paper's queue depth
# (32), a write-heavy and a read-heavy workload of the paper's trace table.
SCHED_BUDGET_CYCLES = planes.PAPER_SCHED_SHARE * planes.T_PROG_CYCLES
PAPER_CPU_HZ = 400e6
SCHED_WORKLOADS = ("Financial1", "TPC_E")
SCHED_WAYS = (1, 2, 4)      # the paper's way counts (Table II): one simulator build each
# Requests a measured run: the mean over a run's decisions. 60 requests gave TPC_E 5-8 SDW-NFM decisions, the first of
# them on a cold instruction cache (after the format and preconditioning), so one decision's misses moved a cell by tens of
# cycles; 600 give 100-500 decisions and the steady cost (the reproduce command's full runs take 1000).
SCHED_REQUESTS = 600


@pytest.fixture(scope="module")
def decision_costs(tmp_path_factory):
    P = planes.Point
    points = [P(ways, arch, w) for ways in SCHED_WAYS for w in SCHED_WORKLOADS for arch in planes.ARCHS]
    res = planes.run_points(points, n=SCHED_REQUESTS, out=tmp_path_factory.mktemp("sched_cost"), log=print)
    return {(r["ways"], r["arch"], r["workload"]): r for r in res}


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("workload", SCHED_WORKLOADS)
@pytest.mark.parametrize("arch", planes.ARCHS)
@pytest.mark.parametrize("ways", SCHED_WAYS)
def test_scheduler_decision_under_one_percent_of_tprog_at_the_papers_cpu(decision_costs, ways, arch, workload):
    """The same cycles on the paper's 400 MHz CPU: under 1 % of tPROG (the paper's claim, as it states it)."""
    r = decision_costs[(ways, arch, workload)]
    assert r["sched_decisions"] > 0 and r["sched_mean_cycles"] > 0, r
    assert r["sched_mean_cycles"] / PAPER_CPU_HZ < planes.PAPER_SCHED_SHARE * 700e-6, r["sched_mean_cycles"]


# Under the budget at 100 MHz on the standard VexRiscv (RV32IM), cycles a decision over 600 requests, Financial1 / TPC_E
# (sw/firmware/host/sched_cost.py --n 600, firmware of wip/sdw9's layout): 1 way SDW-NFM 535 / 534, CNFM 442 / 467,
# DW-NFM 441 / 467; 2 ways SDW-NFM 517 / 535, CNFM 444 / 463, DW-NFM 444 / 463; 4 ways SDW-NFM 533 / 551, CNFM 470 / 472,
# DW-NFM 467 / 472. Over 60 requests the same firmware gave SDW-NFM 696 / 629, 635 / 669, 673 / 704 (4 ways TPC_E:
# 8 decisions, the first on a cold cache). The cost is mostly instruction-cache misses, so code moved onto the
# decision's sets can move it (docs/design_plane_papers.md Step 5).
def _sched_cells():
    return [(w, a, wl) for w in SCHED_WAYS for wl in SCHED_WORKLOADS for a in planes.ARCHS]


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("ways, arch, workload", _sched_cells())
def test_scheduler_decision_under_one_percent_of_tprog(decision_costs, ways, arch, workload):
    r = decision_costs[(ways, arch, workload)]
    assert r["sched_decisions"] > 0 and r["sched_mean_cycles"] > 0, r
    assert r["sched_mean_cycles"] < SCHED_BUDGET_CYCLES, (
        f"{ways} way(s) {arch} {workload}: {r['sched_mean_cycles']:.0f} cycles a decision, "
        f"budget {SCHED_BUDGET_CYCLES:.0f}")
