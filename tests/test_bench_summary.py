"""`nandlab bench all`'s summary (nandlab.bench_summary): every benchmark's headline figure beside what it
is compared with, the ratio computed from the benchmarks' own results; `--json` one object on stdout."""

import json

import pytest

from nandlab import bench, bench_ftl


@pytest.fixture
def fake(monkeypatch):
    """The benchmarks replaced by their results' shapes (as each returns them), nothing simulated."""
    sim = dict(loads={"idle shell": "", "dies: nand workload": "nand workload 2000 30"},
               results=[dict(dies=8, idle_gating=True, **{"idle shell": dict(cycles_per_s=1_500_000),
                                                          "dies: nand workload": dict(cycles_per_s=900_000)}),
                        dict(dies=8, idle_gating=False, **{"idle shell": dict(cycles_per_s=500_000),
                                                           "dies: nand workload": dict(cycles_per_s=450_000)}),
                        dict(dies=0, idle_gating=True, **{"idle shell": dict(cycles_per_s=2_000_000),
                                                          "dies: nand workload": None})])
    monkeypatch.setattr(bench, "bench_soc", lambda verbose: (print("soc table"), [("idle", 1_000_000, 2.0)])[1])
    monkeypatch.setattr(bench, "bench_sim", lambda verbose: sim)
    monkeypatch.setattr(bench, "bench_telemetry", lambda verbose: [dict(dies=4, frames=500, cycles=10_000_000)])
    monkeypatch.setattr(bench, "bench_interface", lambda verbose: [
        dict(cell="SLC", direction="read", ways=16, conv=40.0, sync=60.0, ddr=110.0),
        dict(cell="SLC", direction="read", ways=4, conv=40.0, sync=60.0, ddr=100.0)])
    monkeypatch.setattr(bench, "bench_ecp5", lambda verbose, **kw: [
        dict(board="colorlight_i5", config="1 ch x 1 dies", target_mhz=50.0, fmax_mhz=52.5, lut4=19000, ff=8000,
             bram=36, bram_total=56)])
    monkeypatch.setattr(bench, "bench_power", lambda verbose: dict(runs=60, results_identical=True, results=[
        dict(mode="skip", wall_s=30.0), dict(mode="no skip", wall_s=300.0)]))
    monkeypatch.setattr(bench_ftl, "bench_ftl", lambda verbose: dict(kib=128, rows=[
        dict(dies=4, ftl_write_kbps=73600, raw_write_kbps=91700, ftl_read_kbps=65000, raw_read_kbps=79600)]))


def test_summary_ratios_come_from_the_same_run(fake, capsys):
    from nandlab.bench_summary import bench_all
    report = bench_all(as_json=True)
    assert capsys.readouterr().out == ""             # the benchmarks' own tables go to stderr
    rows = {(r["bench"], r["measure"]): r for r in report["summary"]}
    assert rows[("sim", "8 dies, idle shell")]["ratio"] == 3.0
    assert rows[("sim", "8 dies, dies: nand workload")]["ratio"] == 2.0
    assert rows[("sim", "0 dies, idle shell")]["ratio"] is None          # no ungated build of 0 dies
    assert ("sim", "0 dies, dies: nand workload") not in rows
    assert rows[("soc", "idle")]["value"] == 500_000 and rows[("soc", "idle")]["ratio"] == 0.005
    assert rows[("telemetry", "4 dies, frames per simulated ms")]["value"] == 5.0
    assert rows[("interface", "SLC read, 16 way(s), NV-DDR mode 5")]["reference"] == 117.59
    assert rows[("interface", "SLC read, 16 way(s), NV-DDR / async SDR")]["value"] == 2.75
    assert not any(m.startswith("SLC read, 4 way") for _, m in rows)
    assert rows[("ecp5", "colorlight_i5 (1 ch x 1 dies) system clock Fmax")]["ratio"] == 1.05
    assert rows[("power", "experiment power, 60 runs, wall with the skip")]["ratio"] == 0.1
    assert rows[("ftl", "4 dies, 128 KiB sequential write through the FTL")]["ratio"] == round(73.6 / 91.7, 3)
    json.dumps(report)


def test_summary_table_printed(fake, capsys):
    from nandlab.bench_summary import bench_all
    bench_all()
    out = capsys.readouterr().out
    assert "soc table" in out and "| ftl | 4 dies, 128 KiB sequential read through the FTL | 65 | MB/s |" in out, out


@pytest.mark.parametrize("what", ["soc", "telemetry", "interface", "ecp5"])
def test_every_bench_takes_json(fake, capsys, what):
    """`nandlab bench soc|telemetry|interface|ecp5 --json`: one JSON object on stdout, the rows the bench
    returned (soc's tuples as named fields), its printed table on stderr."""
    report = bench.run(what, as_json=True)
    out = capsys.readouterr()
    assert out.out == "" and report["bench"] == what
    if what == "soc":
        assert "soc table" in out.err
        assert report["rows"] == [dict(workload="idle", cycles=1_000_000, wall_s=2.0)]
    else:
        assert report["rows"] == getattr(bench, f"bench_{what}")(False)
    json.loads(json.dumps(report))
