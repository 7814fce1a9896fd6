"""The power experiment's waveforms as docs/power_waveforms.md documents them, the sensitivity sweep's
scaling (nandlab.sensitivity, waveforms.WaveformScales) and the paper's values beside a run's
(nandlab.power_paper): the doc's tables parsed and checked against the code's constants and the
waveforms the code builds; scaled waveforms against the arithmetic the scales imply; on the harness,
the peak of two dies whose programs the bus staggers, against the sum of their waveforms."""

import json
import math
import re
import subprocess
from pathlib import Path

import pytest

from nandlab import experiment, power_paper, sensitivity, tokens
from nandlab.gateware.power.channel import transfer_timing, BUS_UNIT_NS
from nandlab.nand_model import waveforms as wf
from nandlab.nand_model.current import PhaseTables
from nandlab.nand_model.parts import get_part
from nandlab.testing import run_cli as nandlab

DOC = Path(__file__).resolve().parents[1] / "docs" / "power_waveforms.md"
PART = get_part("MTPM-MLC")


def _tables():
    """The doc's Markdown tables: {first header cell: [[cells], ...]}."""
    tables, cur = {}, None
    for line in DOC.read_text().splitlines():
        if not line.startswith("|"):
            cur = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cur is None:
            cur = tables.setdefault(cells[0], [])
        elif not set(cells[0]) <= set("-"):
            cur.append(cells)
    return tables


def _params():
    return {row[0].strip("`"): float(row[1]) for row in _tables()["id"]}


@pytest.mark.unit
def test_doc_parameters_are_the_codes():
    """Every row of the parameter table equals the code's value, every level of LEVELS has its rows,
    and every row has a source (a paper section/table/figure, ONFI, derived or assumed)."""
    doc = _params()
    want = {"RESOLUTION_NS": wf.RESOLUTION_NS, "MERGE_INTERVAL_NS": wf.MERGE_INTERVAL_NS, "RAMP_NS": wf.RAMP_NS,
            "MSB_VERIFIES": wf.MSB_VERIFIES, "VERIFY_SHARE_NO_MSB": wf.VERIFY_SHARE_NO_MSB,
            "READ_SPLIT.0": wf.READ_SPLIT[0], "READ_SPLIT.1": wf.READ_SPLIT[1],
            "ERASE_SPLIT.0": wf.ERASE_SPLIT[0], "ERASE_SPLIT.1": wf.ERASE_SPLIT[1],
            "BUS_CURRENT": wf.BUS_CURRENT, "BUS_UNIT_NS": BUS_UNIT_NS}
    for name, levels in wf.LEVELS.items():
        for k, (level, share) in enumerate(levels):
            want[f"LEVELS.{name}.{k + 1}.level"] = level
            want[f"LEVELS.{name}.{k + 1}.share"] = share
    for attr in ("t_prog_lsb", "t_prog_msb", "t_r", "t_bers", "ispp_loops", "page_size", "spare_size"):
        want[f"MTPM-MLC.{attr}"] = getattr(PART, attr)
    execution, verify = wf.program_loop_times_us(PART)
    want["program.execution_us"], want["program.verify_us"] = round(execution, 6), round(verify, 6)
    t = transfer_timing(PART, "nvddr5", 200e6)
    want["nvddr5.rate"] = t["rate_in"] / 1e6
    want["nvddr5.t_page"] = t["t_in"]
    want["nvddr5.i_bus"] = t["i_bus"]
    from nandlab.cli import make_parser
    want["clock_mhz"] = make_parser().parse_args(["experiment", "power"]).clock_mhz
    assert set(doc) == set(want), (set(doc) ^ set(want))
    for key, value in want.items():
        assert doc[key] == pytest.approx(value, abs=1e-9), key
    for row in _tables()["id"]:
        assert re.search(r"paper|ONFI|derived|assumed|definition|SoC", row[3]), row
    assert t["t_out"] == t["t_in"] and math.isclose(t["t_in"] / 200e6, (16384 + 1952) / 200e6)


@pytest.mark.unit
def test_doc_segments_are_the_waveforms_the_dies_play():
    """The segment table is MTPM-MLC's atomic operations as waveforms.operation() builds them (R_A3: the
    bus transfer instead, not listed), every segment of each, in order."""
    doc = {}
    for name, seg, start, dur, i0, i1 in _tables()["atomic"]:
        doc.setdefault(name, []).append((int(seg), int(start), int(dur), float(i0), float(i1)))
    got = {}
    for kind in ("program_lsb", "read", "erase"):
        for atomic in wf.operation(PART, kind):
            if atomic.name in got or atomic.name == "R_A3":
                continue
            t, rows = 0, []
            for k, s in enumerate(atomic.segments):
                rows.append((k, t, s.duration_ns, s.i0, s.i1))
                t += s.duration_ns
            got[atomic.name] = rows
    assert doc == got


@pytest.mark.unit
def test_scales_one_is_the_fixed_waveform():
    """Factor 1 leaves the part itself (so the harness build, its digest and results are the unswept
    run's); any other factor makes a scaled copy and leaves the part alone."""
    assert wf.scaled_part(PART, wf.WaveformScales()) is PART and wf.scaled_part(PART, None) is PART
    assert wf.levels(PART) is wf.LEVELS
    q = wf.scaled_part(PART, wf.WaveformScales(level2=2))
    assert q is not PART and not hasattr(PART, "waveform_scales") and wf.levels(PART) is wf.LEVELS


@pytest.mark.unit
def test_scaled_waveforms_follow_the_scales():
    """precharge x2: the pre-charge twice as long, the pulse shorter by as much, P_A1 as long; level2 x2:
    the pulse at I_max, P_A1 one sub-atomic operation of 15 tokens then the settle's 2 (500 ns merge);
    transfer x2: twice the bus current at the same time; rate x0.5: twice the time at half the current."""
    base = wf.operation(PART, "program_lsb")[0]
    pre = wf.operation(wf.scaled_part(PART, wf.WaveformScales(precharge=2)), "program_lsb")[0]
    d = lambda a: [s.duration_ns for s in a.segments]
    assert pre.duration_ns == base.duration_ns == 64400
    assert d(pre)[1] + wf.RAMP_NS == pytest.approx(2 * (d(base)[1] + wf.RAMP_NS), abs=wf.RESOLUTION_NS)
    assert d(pre)[1] + d(pre)[2] == pytest.approx(d(base)[1] + d(base)[2], abs=wf.RESOLUTION_NS)
    l2 = wf.scaled_part(PART, wf.WaveformScales(level2=2))
    a = wf.operation(l2, "program_lsb")[0]
    assert [s.i1 for s in a.segments] == [1.0, 1.0, 1.0, 0.12] and d(a) == d(base)
    table = tokens.compile_tables(l2, 4, 4)
    assert [rt for _, rt, _ in table.phases["program_lsb"]] == [15, 2, 7, 5, 2]
    assert [rt for _, rt, _ in tokens.compile_tables(PART, 4, 4).phases["program_lsb"]] == [15, 8, 2, 7, 5, 2]
    half = wf.operation(wf.scaled_part(PART, wf.WaveformScales(level2=0.5)), "program_lsb")[0]
    assert half.segments[2].i1 == 0.25
    # Only P_A1 changes: every other operation is the fixed one.
    for kind in ("read", "erase"):
        assert wf.operation(l2, kind) == wf.operation(PART, kind)
    t = transfer_timing(PART, "nvddr5", 200e6)
    tx = transfer_timing(wf.scaled_part(PART, wf.WaveformScales(transfer=2)), "nvddr5", 200e6)
    assert (tx["t_in"], tx["i_bus"]) == (t["t_in"], math.ceil(2 * 0.08 * 4096))
    tr = transfer_timing(wf.scaled_part(PART, wf.WaveformScales(rate=0.5)), "nvddr5", 200e6)
    assert (tr["t_in"], tr["t_out"], tr["i_bus"]) == (2 * t["t_in"], 2 * t["t_out"], math.ceil(0.04 * 4096))
    with pytest.raises(ValueError, match="level2 scale 3 is out of range"):
        wf.scaled_part(PART, wf.WaveformScales(level2=3))


@pytest.mark.unit
@pytest.mark.parametrize("args, message", [
    (["--sweep", "level2", "--scales", "3"], "--scales: 3 is out of range for --sweep level2 (0.25..2"),
    (["--sweep", "precharge", "--scales", "0.5,x"], "is not a comma-separated list of numbers"),
    (["--sweep", "precharge", "--scales", "1,1"], "repeats a factor"),
    (["--sweep", "level2", "--scales", "nan"], "nan is out of range"),
    (["--scales", "1,2"], "--scales: only with --sweep precharge|level2|transfer|rate"),
    (["--sweep", "tg", "--figure", "x.png"], "--figure: only with --sweep"),
    (["--sweep", "transfer", "--no-channel"], "--no-channel has none"),
    (["--sweep", "rate", "--figure", "/nonexistent/x.png"], "does not exist"),
    (["--sweep", "rate", "--figure", "x.svg"], "the figure is a PNG"),
])
def test_sweep_refuses_bad_options(args, message):
    """The command's checks (run before anything is built), in this process."""
    from nandlab.cli import check_command_line
    from nandlab.errors import NandLabError
    with pytest.raises(NandLabError, match=re.escape(message)):
        check_command_line(["experiment", "power"] + args)


@pytest.mark.unit
def test_sweep_refusal_from_the_command_line():
    """From the shell: one error line, no traceback, nothing built."""
    out = nandlab("experiment", "power", "--sweep", "level2", "--scales", "0.5,3")
    assert out.returncode != 0
    errors = [l for l in out.stderr.splitlines() if l.startswith("nandlab: error")]
    assert len(errors) == 1 and "--scales: 3 is out of range for --sweep level2" in errors[0], out.stderr
    assert "Traceback" not in out.stderr and "verilating" not in out.stderr


def _fake(policies, ratios, cycles, peaks, violations=None):
    """Results as the harness gives them: cycles[policy][ratio], max (I_max / 4096) per policy."""
    return [{"policy": p, "ratio": q, "cycles": cycles[p][q], "max": peaks[p], "violations": (violations or {}).get(p, 0),
             "ops": 10, "reads": 5, "read_cycles": 50 * (1 + i), "progs": 5, "prog_cycles": 100 * (1 + i),
             "erases": 0, "waited": 0, "windows": 100, "rings": 1}
            for i, p in enumerate(policies) for q in ratios]


@pytest.mark.unit
def test_sweep_summary_and_figure(tmp_path):
    """A point's numbers are its runs' (throughput = NPM's cycles / the policy's, peaks = max / 4096 / PB);
    the figure is a PNG."""
    table = tokens.compile_tables(PART, 4, 4)
    ratios = [0, 50]
    cyc = {"npm": {0: 100, 50: 200}, "ppm": {0: 110, 50: 210}, "kmtpm_sub": {0: 125, 50: 250}}
    pk = {"npm": 4096 * 6, "ppm": 4096 * 5, "kmtpm_sub": 4096 * 4}
    points = [(f, _fake(list(cyc), ratios, cyc, pk), table) for f in (0.5, 1.0)]
    s = sensitivity.point_summary(*points[0])
    assert s["kmtpm_sub_vs_npm"] == pytest.approx((100 / 125 + 200 / 250) / 2)
    assert s["peak_pb"]["npm"] == {"r50": 1.5, "max": 1.5} and s["peak_pb"]["ppm"]["r50"] == 1.25
    params = dict(part="MTPM-MLC", dies=8, tg=4, alpha=4, clock_mhz=200, ops=50, seed=1, time_scale=10,
                  interface="nvddr5", channel=True)
    text = sensitivity.format_sweep("level2", points, params)
    assert "TG 4, alpha 4, 200 MHz" in text and "time scale 1/10" in text
    assert len([l for l in text.splitlines() if l.strip().startswith(("0.5 ", "1 "))]) == 2
    fig = sensitivity.figure("level2", points, params, tmp_path / "s.png")
    assert Path(fig).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    obj = json.loads(sensitivity.dumps("level2", points, params))
    assert [p["factor"] for p in obj["points"]] == [0.5, 1.0]


@pytest.mark.unit
def test_paper_values_beside_a_run():
    """power_paper.compare: each row's number recomputed from the runs, the paper's value the shared
    table's (reproduce reads the same one)."""
    from nandlab import reproduce
    assert reproduce.MTPM_PAPER is power_paper.MTPM_PAPER
    table = tokens.compile_tables(PART, 4, 4)
    pols = ["npm", "ppm", "dcc", "mtpm", "kmtpm_atomic", "kmtpm_sub"]
    ratios = [0, 25, 50, 75, 100]
    cyc = {p: {q: 100 + 10 * i + q for q in ratios} for i, p in enumerate(pols)}
    pk = {p: 4096 * (6 - i) for i, p in enumerate(pols)}
    res = _fake(pols, ratios, cyc, pk)
    rows = {r["key"]: r for r in power_paper.compare(res, table)}
    thr = lambda p: sum(cyc["npm"][q] / cyc[p][q] for q in ratios) / 5
    assert rows["thr_kmtpm_sub"]["ours"] == pytest.approx(thr("kmtpm_sub"))
    assert rows["thr_kmtpm_sub"]["paper"] == pytest.approx(0.9379)
    assert rows["kmtpm_sub_minus_dcc"]["ours"] == pytest.approx(thr("kmtpm_sub") - thr("dcc"))
    assert rows["npm_peak_r50"]["ours"] == 6 / 4 and rows["ppm_peak_r50"]["ours"] == 5 / 4
    assert rows["violations_token"]["ours"] == 0
    assert rows["prog_lat_kmtpm_sub"]["ours"] == pytest.approx(600 / 400 - 1)
    params = dict(part="MTPM-MLC", dies=8, ops=5000, clock_mhz=200, time_scale=1, ratios=ratios)
    assert power_paper.setup_differences(params, table) == []
    diffs = power_paper.setup_differences(dict(params, time_scale=10, dies=4), table)
    assert any("/ 10" in d for d in diffs) and any("4 dies" in d for d in diffs)
    text = power_paper.format_compare(list(rows.values()), diffs)
    assert "0.938" in text and "1.532" in text and "Setup differs" in text


def _native_peak(tmp_path, scales, trace, dies=2, clock=200e6):
    """NPM on the C++ harness with the channel: the largest summed current (I_max / 4096) of `trace`."""
    part = wf.scaled_part(PART, scales)
    chan = experiment.channel_config(part, "nvddr5", clock, 1)
    table = experiment.experiment_table(part, 4, 1, chan)
    (exe, _) = experiment.build_native(part, dies, clock, 1, 4, log=lambda *a: None, channel=chan)
    runs = []
    for record in (0, 40000):
        spec = experiment.harness_spec(dies, 4, 1, table, {0: trace}, ["npm"], skip=True, record=record)
        path = tmp_path / f"spec-{scales.precharge}-{scales.level2}-{record}.json"
        path.write_text(json.dumps(spec))
        out = subprocess.run([str(exe), str(path), "0"], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout))
    # Recording (Fig. 11: the first cycles one by one, each 40 ns window's peak) changes no counter.
    trace = runs[1].pop("trace")
    assert runs[0] == runs[1] and len(trace) == 40000 // 8 and max(trace) <= runs[0]["max"]
    return runs[0]["max"], PhaseTables(part, clock, 1), chan


def _model_peak(tables, chan, offset):
    """The sum of two LSB programs' waveforms (PhaseTables.expand, the die's reference current) with the
    second die's array `offset` cycles after the first's and its data input (the bus current) in the
    t_in cycles before its array, during the first die's array."""
    import numpy as np
    one = np.array(tables.expand("program_lsb"), dtype=np.int64)
    total = np.zeros(offset + len(one), dtype=np.int64)
    total[:len(one)] += one
    total[offset:] += one
    total[max(0, offset - chan["t_in"] - 2):offset - 2] += chan["i_bus"]
    return int(total.max())


@pytest.mark.cocotb
@pytest.mark.slow           # four 2-die harness builds (~40 s each)
@pytest.mark.parametrize("scales, closed_form", [
    (wf.WaveformScales(), 4096 + 2048),                   # die 1's pre-charge on die 0's pulse (0.5)
    (wf.WaveformScales(level2=2), 4096 + 4096),           # ... on a pulse at I_max
    (wf.WaveformScales(level2=0.5), 4096 + 1720),         # die 0's pre-charge on die 1's verify (0.42) now
    (wf.WaveformScales(precharge=2), 4096 + 4096),        # the two pre-charges overlap
], ids=["fixed", "level2x2", "level2x0.5", "precharge2"])
def test_peak_follows_the_waveform_arithmetic(tmp_path, scales, closed_form):
    """Two dies, one LSB program each, NPM, one NV-DDR 5 bus at 200 MHz: die 1's data input waits for die
    0's, so its program starts one page transfer (91.68 us) later, 14.68 us into die 0's second loop
    (77 us a loop): the peak is the sum of the two waveforms at that offset, whatever the few cycles
    of handshake (the model is checked over 0..16 of them)."""
    peak, tables, chan = _native_peak(tmp_path, scales, [(0, "program_lsb"), (1, "program_lsb")])
    models = {_model_peak(tables, chan, chan["t_in"] + k) for k in range(17)}
    assert models == {closed_form}
    assert peak == closed_form


@pytest.mark.cocotb
@pytest.mark.slow           # one harness build and two runs of each
def test_sweep_at_one_is_the_unswept_run(tmp_path):
    """`--sweep level2 --scales 1` runs the unswept experiment: the same counters for every run."""
    common = ["--json", "--ops", "40", "--ratios", "0,50", "--time-scale", "40", "--policies", "npm,ppm,kmtpm_sub",
              "--jobs", "2"]
    base = nandlab("experiment", "power", *common, timeout=900)
    assert base.returncode == 0, base.stderr
    sweep = nandlab("experiment", "power", *common, "--sweep", "level2", "--scales", "1", "--figure",
                    str(tmp_path / "s.png"), timeout=900)
    assert sweep.returncode == 0, sweep.stderr
    b, s = json.loads(base.stdout), json.loads(sweep.stdout)
    key = lambda r: (r["policy"], r["ratio"])
    assert sorted(s["runs"]["1"], key=key) == sorted(b["runs"], key=key)
    assert s["points"][0]["kmtpm_sub_vs_npm"] == b["throughput_vs_npm"]["kmtpm_sub"]["mean"]
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"
    rows = {r["key"]: r for r in b["paper"]["rows"]}
    assert rows["npm_peak_r50"]["paper"] == pytest.approx(1.5318)
    assert rows["npm_peak_r50"]["ours"] == s["points"][0]["peak_pb"]["npm"]["r50"]
