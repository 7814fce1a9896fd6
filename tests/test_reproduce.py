"""`nandlab reproduce`: the report's rows are the runs' numbers (recomputed here from the runs' CSV),
the paper's values are the papers' (checked against their text), every section reaches the Markdown,
HTML and JSON, and the CLI refuses bad values before running anything."""

import csv
import json
from pathlib import Path

import pytest

from nandlab import bench, mpnfm, planes, reproduce
from nandlab.testing import run_cli as nandlab

@pytest.mark.unit
def test_paper_values_follow_from_the_papers_percentages():
    """The MTPM paper states percentages (Sections IV-C, V): -6.21 %, -22.44 %, -21.65 % throughput vs NPM,
    +22.85 % over DCC, +53.18 % / +38.01 % over the budget, 3.8 % / 8.21 % overhead at alpha = 8; the
    DDR paper's Table 3 gives MB/s whose 16-way SLC ratios it quotes as 2.45x and 2.75x."""
    P = reproduce.MTPM_PAPER
    assert P["thr_kmtpm_sub"][0] == pytest.approx(0.9379) and P["thr_mtpm"][0] == pytest.approx(0.7756)
    assert P["thr_kmtpm_atomic"][0] == pytest.approx(0.7835)
    assert P["thr_dcc"][0] == pytest.approx(0.9379 - 0.2285) and "derived" in P["thr_dcc"][1]
    assert P["npm_peak_r50"][0] == pytest.approx(1.5318) and P["ppm_peak_r50"][0] == pytest.approx(1.3801)
    assert (P["overhead_kmtpm_sub_a8"][0], P["overhead_dcc_a8"][0]) == (0.038, 0.0821)
    slc = bench.PAPER_TABLE3["SLC"]
    assert round(slc["write"][16][2] / slc["write"][16][0], 2) == reproduce.DDR_PAPER[("write", "P/C")] == 2.45
    assert round(slc["read"][16][2] / slc["read"][16][0], 2) == reproduce.DDR_PAPER[("read", "P/C")] == 2.75


def _csv_rows(path):
    with open(path) as f:
        return [{k: (v if k == "policy" else int(v)) for k, v in r.items()} for r in csv.DictReader(f)]


@pytest.mark.cocotb
def test_power_sections_match_their_runs(tmp_path, monkeypatch):
    """mtpm and dcc on small traces (160 ops, array times / 20): every row recomputed from the CSV of
    the runs; a section that did not run is listed as not reproduced; report files complete."""
    monkeypatch.setitem(reproduce.MTPM_SETUP, "n_ops", 160)
    monkeypatch.setitem(reproduce.MTPM_SETUP, "time_scale", 20)
    out = tmp_path / "rep"
    pending = reproduce.section_pending("Multiple-page-size NFM (MPNFM)", [("q", 0.37, "V-B1")], "not run here")
    monkeypatch.setattr(mpnfm, "section", lambda *a, **k: pending)
    res = reproduce.run(["mtpm", "dcc", "mpnfm"], quick=True, out=out, jobs=2)
    rows = _csv_rows(out / "power_runs.csv")
    assert {(r["tg"], r["alpha"]) for r in rows} == {(4, 4), (4, 8)}        # quick: no sweeps
    base = [r for r in rows if r["alpha"] == 4]
    a8 = [r for r in rows if r["alpha"] == 8]
    assert len(base) == len(a8) == 6 * 5

    def thr(runs, policy):
        npm = {r["ratio"]: r["cycles"] for r in runs if r["policy"] == "npm"}
        mine = {r["ratio"]: r["cycles"] for r in runs if r["policy"] == policy}
        return sum(npm[q] / mine[q] for q in npm) / len(npm)

    got = {r["quantity"]: r for r in res["papers"]["mtpm"]["rows"]}
    assert got["KMTPM sub-atomic throughput / NPM (mean R0..R100)"]["ours"] == pytest.approx(thr(base, "kmtpm_sub"))
    assert got["KMTPM-S minus DCC (throughput / NPM)"]["ours"] == pytest.approx(thr(base, "kmtpm_sub") - thr(base, "dcc"))
    assert got["KMTPM-S overhead at alpha = 8 (1 - throughput / NPM)"]["ours"] == pytest.approx(1 - thr(a8, "kmtpm_sub"))
    progs = lambda p: sum(r["prog_cycles"] for r in base if r["policy"] == p) / sum(r["progs"] for r in base if r["policy"] == p)
    assert got["KMTPM sub-atomic program latency vs MTPM (relative change)"]["ours"] == \
        pytest.approx(progs("kmtpm_sub") / progs("mtpm") - 1)
    viol = got["budget violations, MTPM + KMTPM (all traces, 40 ns windows)"]
    assert viol["ours"] == sum(r["violations"] for r in base if r["policy"] in ("mtpm", "kmtpm_atomic", "kmtpm_sub"))
    assert viol["ours"] == 0                                            # the ring keeps the budget
    npm_peak = got["NPM peak current / PB on R50"]
    assert npm_peak["ours"] > 1 and npm_peak["paper"] == pytest.approx(1.5318)
    for r in got.values():
        if r["ours"] is not None and r["paper"]:
            assert r["ratio"] == pytest.approx(r["ours"] / r["paper"])
    dcc = {r["quantity"]: r for r in res["papers"]["dcc"]["rows"]}
    assert dcc["DCC throughput / NPM (mean R0..R100)"]["ours"] == pytest.approx(thr(base, "dcc"))
    assert dcc["DCC budget violations (all traces)"]["ours"] == 0
    # A section that did not run: listed with the paper's values, not measured, and said so.
    sec = res["papers"]["mpnfm"]
    assert sec["status"] == "not reproduced" and "not run here" in sec["reason"]
    assert all(r["ours"] is None and r["paper"] for r in sec["rows"])
    # Reports: every section, the paper's values, the figures (PNG files that exist).
    md, html = (out / "report.md").read_text(), (out / "report.html").read_text()
    for name in ("mtpm", "dcc", "mpnfm"):
        assert f"## {name}:" in md and f"<h2>{name}:" in html
    assert "| KMTPM sub-atomic throughput / NPM (mean R0..R100) | 0.938 |" in md
    assert "array times / 20" in md or "time_scale" in json.dumps(res["papers"]["mtpm"]["parameters"])
    for f in res["papers"]["mtpm"]["figures"]:
        assert Path(f).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert Path(f).name in md and Path(f).name in html
    assert json.loads((out / "results.json").read_text())["papers"]["mtpm"]["status"] == "reproduced"


@pytest.mark.unit
def test_ddr_rows_from_the_bench(tmp_path, monkeypatch):
    """Fed the paper's own Table 3 as the measurement, every ratio is 1 and the P/C rows are 2.45 / 2.75."""
    def fake_bench(cells, way_counts):
        return [dict(cell=c, direction=d, ways=w, conv=t[0], sync=t[1], ddr=t[2])
                for c in cells for d in ("write", "read") for w in way_counts
                for t in [bench.PAPER_TABLE3[c][d][w]]]
    monkeypatch.setattr(bench, "bench_interface", fake_bench)
    sec = reproduce.section_ddr(True, tmp_path)
    rows = {r["quantity"]: r for r in sec["rows"]}
    assert rows["SLC write, 16 ways: PROPOSED / CONV"]["paper"] == pytest.approx(97.35 / 39.76)
    assert round(rows["SLC write, 16 ways: PROPOSED / CONV"]["paper"], 2) == reproduce.DDR_PAPER[("write", "P/C")]
    assert round(rows["SLC read, 16 ways: PROPOSED / CONV"]["paper"], 2) == reproduce.DDR_PAPER[("read", "P/C")]
    assert all(r["ratio"] == pytest.approx(1.0) for r in sec["rows"])
    assert Path(sec["figures"][0]).read_bytes()[:4] == b"\x89PNG"


@pytest.mark.unit
@pytest.mark.parametrize("args, message", [
    (["tpc"], "argument paper: invalid choice: 'tpc'"),
    (["mtpm", "--jobs", "0"], "--jobs 0: must be 1 or more"),
    (["mtpm", "--scheduler", "nowhere"], "give the scheduler's address as tcp://HOST:PORT"),
    (["mtpm", "--out", "README.md"], "exists and is not a directory"),
])
def test_cli_refuses_bad_values(args, message):
    r = nandlab("reproduce", *args)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr


@pytest.mark.unit
def test_tool_output_goes_to_the_log_not_stdout(tmp_path, monkeypatch, capfd):
    """A section's tools (compilers, simulators) print to file descriptor 1; with --json, standard
    output must hold the one JSON object only: their output lands in tools.log."""
    import subprocess

    def noisy(quick, out):
        print("python-noise")
        subprocess.run(["echo", "child-noise"], check=True)
        return reproduce.section_pending("t", [("q", 1.0, "s")], "why")
    monkeypatch.setattr(reproduce, "section_ddr", noisy)
    reproduce.run(["ddr"], out=tmp_path)
    captured = capfd.readouterr()
    assert "noise" not in captured.out
    log = (tmp_path / "tools.log").read_text()
    assert "python-noise" in log and "child-noise" in log


@pytest.mark.unit
def test_json_is_one_object(monkeypatch, capsys):
    """--json: standard output holds one JSON object (a stand-in section: the real ones run simulations)."""
    from nandlab import cli
    monkeypatch.setattr(mpnfm, "section", lambda *a, **k: reproduce.section_pending("t", [("q", 0.37, "s")], "why"))
    assert cli.main(["reproduce", "mpnfm", "--json", "--out", "build/test-reproduce-json"]) in (0, None)
    obj = json.loads(capsys.readouterr().out)
    assert obj["papers"]["mpnfm"]["status"] == "not reproduced"
    assert obj["papers"]["mpnfm"]["rows"][0]["paper"] == pytest.approx(0.37)


@pytest.mark.unit
def test_ddr_runs_beside_the_soc_sections(tmp_path, monkeypatch):
    """With dwsdw or mpnfm in the run, the ddr section (one core's simulation) starts in a process of its
    own as they start and is collected after them; the report keeps the papers' order."""
    events = []

    class FakeBeside:
        def __init__(self, quick, out):
            events.append(("ddr started", quick))

        def result(self):
            events.append(("ddr collected",))
            return {**reproduce.section_pending("ddr", [("q", 2.45, "s")], "stand-in"), "runtime_s": 1.0}

    def soc_section(name):
        def section(*a, **k):
            events.append((name,))
            return reproduce.section_pending(name, [("q", 1.0, "s")], "stand-in")
        return section
    monkeypatch.setattr(reproduce, "DdrBeside", FakeBeside)
    monkeypatch.setattr(planes, "section", soc_section("dwsdw"))
    monkeypatch.setattr(mpnfm, "section", soc_section("mpnfm"))
    monkeypatch.setattr(reproduce, "section_ddr", lambda *a: pytest.fail("ddr ran in this process"))
    res = reproduce.run(["ddr", "dwsdw", "mpnfm"], quick=True, out=tmp_path)
    assert events == [("ddr started", True), ("dwsdw",), ("mpnfm",), ("ddr collected",)]
    assert list(res["papers"]) == ["ddr", "dwsdw", "mpnfm"] and res["papers"]["ddr"]["rows"][0]["paper"] == 2.45
    # ddr alone: in this process, as before
    monkeypatch.setattr(reproduce, "section_ddr", lambda quick, out: reproduce.section_pending("d", [], "alone"))
    assert reproduce.run(["ddr"], out=tmp_path)["papers"]["ddr"]["reason"] == "alone"
