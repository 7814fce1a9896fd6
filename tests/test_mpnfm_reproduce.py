"""nandlab.mpnfm (`nandlab reproduce mpnfm`): the workloads follow the paper's Table II and Fig. 2, the
runs are valid replays on devices of equal raw capacity, and the rows and figures follow from the runs'
numbers (fed the paper's own ratios, every ratio is 1)."""

from pathlib import Path

import pytest

from nandlab import mpnfm, reproduce, trace
from nandlab.nand_model.parts import get_part


@pytest.mark.unit
@pytest.mark.parametrize("workload", mpnfm.WORKLOADS)
def test_size_models_keep_table_twos_mean(workload):
    _, wlen, _ = trace.MPNFM_TABLE2[workload]
    for model in ("fig2", "mean"):
        sizes = mpnfm.write_sizes(workload, model)
        total = sum(w for _, w in sizes)
        assert total == pytest.approx(1.0)
        assert sum(s * w for s, w in sizes) / mpnfm.SECTOR == pytest.approx(wlen)
    fig2 = mpnfm.write_sizes(workload, "fig2")
    assert sum(w for s, w in fig2 if s < 8192) == pytest.approx(mpnfm.SMALL_SHARE)     # Fig. 2: 89 % below 8 KB
    assert all(s % mpnfm.SECTOR == 0 and s > 0 for s, _ in fig2)


@pytest.mark.unit
def test_runs_are_valid_replays_on_equal_capacity(tmp_path):
    raw = set()
    for dies in mpnfm.DIE_COUNTS:
        for config, (part, on) in mpnfm.CONFIGS.items():
            point = mpnfm.Point(config, "Financial1", dies=dies)
            args = mpnfm.run_args(point, 50, 1, tmp_path / mpnfm.run_name(point))
            assert args.mpnfm == on and args.nand_part == part and args.ftl_sector == 512 and args.qd == mpnfm.QD
            assert args.dies == dies
            p = get_part(part)
            raw.add(args.dies * args.blocks * mpnfm.PAGES * p.page_size)
            lines = (tmp_path / mpnfm.run_name(point) / "requests.mqsim").read_text().split("\n")
            assert len([ln for ln in lines if ln]) == 50
    assert raw == {256 << 20}                      # the paper keeps every NFM at 4 GB (here 1/16 of it)


def fake_results(quick, paper=True):
    main, sens, configs, workloads = mpnfm.plan(quick)
    out = []
    for p in dict.fromkeys(main + sens):
        lat = 1000.0
        if p.config != "MPNFM 32+4 KB":
            ratio = mpnfm.PAPER_LATENCY.get(p.config, (0.5, ""))[0] if paper else 1.0
            lat = 1000.0 / ratio
        out.append({**p._asdict(), "write_latency_us": lat, "write_latency_p50_us": lat / 2, "fc_sectors": 10,
                    "rnm_ratio": 0.5, "nand_erases": 4, "write_nand_wait_us": lat * 0.8})
    return out, configs, workloads


@pytest.mark.unit
@pytest.mark.parametrize("quick", [True, False])
def test_rows_recompute_the_paper_from_its_own_numbers(quick):
    results, configs, workloads = fake_results(quick)
    rows = {r["quantity"]: r for r in mpnfm.rows(results, configs, workloads, reproduce._row)}
    two = rows["MPNFM write latency / SPNFM 2 KB's (mean over workloads)"]
    assert two["paper"] == pytest.approx(0.37) and two["ratio"] == pytest.approx(1.0)
    for q, r in rows.items():
        if q.startswith("MPNFM write latency") and r["paper"]:
            assert r["ratio"] == pytest.approx(1.0), q
    others = [d for d in mpnfm.DIE_COUNTS if d != mpnfm.DIES]
    assert others
    if quick:                               # --quick: no die-count rows
        assert not any(" dies (" in q for q in rows)
    else:
        assert all(rows[f"MPNFM write latency / SPNFM 2 KB's, {d} dies ({workloads[0]})"]["ratio"]
                   == pytest.approx(1.0) for d in others)
    assert rows["MPNFM median write latency / SPNFM 2 KB's (mean over workloads)"]["ratio"] == pytest.approx(1.0)
    assert rows["MPNFM write latency / SPNFM 2 KB's, the NAND's share only (mean over workloads)"]["ratio"] == \
        pytest.approx(1.0)
    flat, _, _ = fake_results(quick, paper=False)
    rows = {r["quantity"]: r for r in mpnfm.rows(flat, configs, workloads, reproduce._row)}
    assert rows["MPNFM write latency / SPNFM 2 KB's (mean over workloads)"]["ours"] == pytest.approx(1.0)


@pytest.mark.unit
def test_figures_are_pngs_with_their_parameters(tmp_path):
    results, configs, workloads = fake_results(True)
    paths = mpnfm.figures(results, configs, workloads, 50, tmp_path)
    assert len(paths) == 2 and all(Path(p).read_bytes()[:4] == b"\x89PNG" for p in paths)
