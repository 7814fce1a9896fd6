"""`nandlab reproduce mtpm|dcc|ddr|dwsdw|mpnfm|all [--quick] [--json]`: the seed papers' headline numbers
and figures regenerated, with the paper's value beside ours (issue 16).

Each paper is a section: the runs that measure it, rows of (quantity, the paper's value, ours, their
ratio, where the paper's value comes from), PNG figures, and every way the runs differ from the
paper's setup. The report is written as Markdown and HTML (one section per paper) with results.json
and the runs' CSV beside it. The paper's values are fixed here, from the papers' text
(../shared/papers/), before anything is measured.

  mtpm   the MTPM paper's synthetic-trace experiment (Section IV, Table IV): every policy at R0..R100 on
         8 dies of its MLC part, TG 4, alpha 4, 200 MHz, on the CPU-less power harness
         (nandlab.experiment); alpha 8 for the overhead; the TG and alpha sweeps (Figs. 12 and 15) in full
         runs. Runs go to Dask (nandlab.cluster: embedded, or --scheduler).
  dcc    DCC, the baseline of the MTPM paper (the DCC slides' firmware scheduler), from the same runs.
  ddr    the DDR paper's Table 3: page read/write MB/s of CONV, SYNC_ONLY and PROPOSED at 1..16 ways
         (nandlab bench interface's cocotb bench of the channel on emulated dies).
  dwsdw  the DW/SDW-NFM paper's Figs. 6, 7 and 8 on the simulated SoC (nandlab.planes): the FTL and the
         multi-plane scheduler on dies of its MLC part at 1, 2 and 4 ways, each architecture set at run time.
  mpnfm  the MPNFM paper's Figs. 6-8 on the simulated SoC (nandlab.mpnfm): MPNFM's layer over two FTLs on
         its 32 + 4 KiB part against single-page-size parts, write latency, FC and read-and-modify ratio.
"""

import contextlib
import html
import io
import json
import time
from pathlib import Path

from nandlab import env
from nandlab.errors import NandLabError
from nandlab.steps import say

PAPERS = ("mtpm", "dcc", "ddr", "dwsdw", "mpnfm")

MTPM_SOURCE = "MTPM paper"
# The MTPM paper's values and setup: one table, shared with `nandlab experiment power` (nandlab.power_paper).
from nandlab.power_paper import MTPM_PAPER, MTPM_SETUP, by_run, mean_thr  # noqa: E402

# The DDR paper's Table 3 (SLC, 1 channel): PROPOSED / CONV at 16 ways.
DDR_PAPER = {("write", "P/C"): 2.45, ("read", "P/C"): 2.75}

def add_parser(sub):
    p = sub.add_parser("reproduce", help="Regenerate the seed papers' headline numbers and figures, with a report.",
        description="Runs each paper's experiments and writes a report (Markdown and HTML, one section per paper) "
        "with the paper's value, ours and their ratio side by side, the figures (PNG) and every parameter that "
        "differs from the paper. mtpm and dcc: the power harness (Dask: embedded, or --scheduler); ddr: the "
        "interface bench; dwsdw, mpnfm: the simulated SoC (hours in full; --quick is smaller).")
    p.add_argument("paper", choices=PAPERS + ("all",), help="Which paper (all: every one).")
    p.add_argument("--quick", action="store_true", help="Smaller runs (no TG/alpha sweeps, SLC only at 1, 4 and "
                   "16 ways): within 20 minutes on 2 cores. The report says what was left out.")
    p.add_argument("--out", metavar="DIR", help="Report directory (default build/reproduce).")
    p.add_argument("--json", action="store_true", help="Print one JSON object (every section's rows) at the end.")
    p.add_argument("--jobs", type=int, default=None, help="Simulations at once on the embedded cluster "
                   "(default: the number of CPUs).")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="Run the power harness's simulations on this "
                   "Dask cluster (default: $NANDLAB_SCHEDULER, else embedded).")
    p.add_argument("--seed", type=int, default=1, help="Trace seed of the power experiment (default 1).")


def check_args(args):
    import os
    from nandlab import cluster
    if args.jobs is None:
        args.jobs = os.cpu_count() or 1
    if args.jobs < 1:
        raise NandLabError(f"--jobs {args.jobs}: must be 1 or more")
    args.scheduler = cluster.scheduler_address(args.scheduler)
    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        raise NandLabError(f"--out {args.out}: exists and is not a directory")


def _row(quantity, paper, ours, source, unit="", fmt="{:.3f}"):
    ratio = ours / paper if paper not in (None, 0) and ours is not None else None
    return {"quantity": quantity, "paper": paper, "ours": ours, "ratio": ratio, "unit": unit, "source": source,
            "format": fmt}


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(plt, fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# mtpm and dcc ----------------------------------------------------------------------------------------

class PowerRuns:
    """The power harness's runs both power sections read, made once."""

    def __init__(self, quick, jobs, scheduler, seed, out):
        self.quick, self.jobs, self.scheduler, self.seed, self.out = quick, jobs, scheduler, seed, out
        self.points = None
        self.traces = {}        # Fig. 11: {policy: the base point's R50 run's windows}

    def get(self):
        from nandlab import experiment, tokens
        if self.points is not None:
            return self.points
        s = MTPM_SETUP
        want = [(s["tg"], s["alpha"]), (s["tg"], 8)]
        if not self.quick:
            want += [(tg, s["alpha"]) for tg in range(tokens.TG_RANGE[0], tokens.TG_RANGE[1] + 1)]
            want += [(s["tg"], a) for a in range(4, 9)]
        points = list(dict.fromkeys(want))
        say(f"mtpm/dcc: {len(points)} (TG, alpha) points x 6 policies x 5 read ratios on the power harness")
        self.points = experiment.run_points(points, part_name=s["part_name"], dies=s["dies"], n_ops=s["n_ops"],
                                            sys_clk_freq=s["clock_hz"], time_scale=s["time_scale"], seed=self.seed, jobs=self.jobs,
                                            scheduler=self.scheduler, log=say,
                                            workdir=env.BUILD_DIR / "experiment", record=fig11_cycles())
        # Every run recorded its first FIG11_MS (no skip in them, the same counters); Fig. 11 keeps the
        # base point's R50 runs, the rest is dropped.
        for pt, (results, _) in self.points.items():
            for r in results:
                trace = r.pop("trace", None)
                if pt == (s["tg"], s["alpha"]) and r["ratio"] == 50:
                    self.traces[r["policy"]] = trace
        experiment.write_csv(self.out / "power_runs.csv", [(pt, self.points[pt][0]) for pt in points])
        return self.points

    def params(self):
        s = MTPM_SETUP
        scale = f", array times / {s['time_scale']}" if s["time_scale"] != 1 else ""
        return (f"{s['dies']} dies of {s['part_name']}, {s['n_ops']} ops/trace, {s['clock_hz'] / 1e6:.0f} MHz"
                f"{scale}, seed {self.seed}")


def section_mtpm(runs, out):
    from nandlab import experiment, power_paper
    s = MTPM_SETUP
    points = runs.get()
    base, table = points[(s["tg"], s["alpha"])]
    a8, _ = points[(s["tg"], 8)]
    P = MTPM_PAPER
    pb = table.pb * base[0].get("rings", 1)
    # The rows one run measures (power_paper.compare, as `experiment power` prints them); DCC's are section dcc's.
    rows = [_row(r["quantity"], r["paper"], r["ours"], r["source"], r["unit"], r["format"])
            for r in power_paper.compare(base, table) if r["key"] != "thr_dcc"]
    rows.append(_row("KMTPM-S overhead at alpha = 8 (1 - throughput / NPM)", P["overhead_kmtpm_sub_a8"][0],
                     1 - mean_thr(a8, "kmtpm_sub"), P["overhead_kmtpm_sub_a8"][1]))
    figures = [_fig_current(runs, table, out / "mtpm_fig11_current.png"),
               _fig_throughput(base, table, runs, out / "mtpm_fig13_throughput.png"),
               _fig_peaks(base, table, runs, out / "mtpm_peak_current.png")]
    if not runs.quick:
        figures.append(_fig_sweep(points, "tg", runs, out / "mtpm_fig12_tg.png"))
        figures.append(_fig_sweep(points, "alpha", runs, out / "mtpm_fig15_alpha.png"))
    deviations = [
        "CPU-less harness with one shared channel: data input and output at NV-DDR mode 5 (200 MB/s; the paper "
        "gives no rate) under the ring; every die takes its first operation at t = 0.",
        "Current waveforms: the die emulator's MTPM-MLC levels and durations, each with its source or the reason "
        "it is assumed in docs/power_waveforms.md; `nandlab experiment power --sweep precharge|level2|transfer|rate` "
        "measures how the results depend on them.",
        f"Fig. 11: the first {FIG11_MS:g} ms (array times as Table IV's{_scaled()}) of R50, the largest summed "
        "current of each 40 ns window; the paper does not say which stretch its figure shows.",
        f"Read as differences of NPM-normalised throughput: the paper's '+22.85 % over DCC'.",
        "Program latency: the LSB and MSB programs together; the paper's Fig. 16 averages them the same way "
        "(assumed: it does not say).",
    ]
    if runs.quick:
        deviations.append("--quick: the TG and alpha sweeps (Figs. 12 and 15) are not run.")
    return {"title": "MTPM / KMTPM token power management", "status": "reproduced", "rows": rows,
            "figures": [str(f) for f in figures], "deviations": deviations,
            "parameters": {**s, "seed": runs.seed,
                           "tt": table.tt, "pb_i_max": pb, "json": experiment.results_json(base, table, {})}}


def section_dcc(runs, out):
    s = MTPM_SETUP
    points = runs.get()
    base, _ = points[(s["tg"], s["alpha"])]
    a8, _ = points[(s["tg"], 8)]
    P = MTPM_PAPER
    viol = sum(r["violations"] for r in base if r["policy"] == "dcc")
    rows = [_row("DCC throughput / NPM (mean R0..R100)", P["thr_dcc"][0], mean_thr(base, "dcc"), P["thr_dcc"][1]),
            _row("DCC overhead at alpha = 8 (1 - throughput / NPM)", P["overhead_dcc_a8"][0],
                 1 - mean_thr(a8, "dcc"), P["overhead_dcc_a8"][1]),
            _row("DCC budget violations (all traces)", 0, viol, "DCC slides: the summed model never exceeds the cap",
                 "windows", "{:d}")]
    deviations = ["DCC's current model: the slides' corner-based linear segments (the harness's default); the flat "
                  "model, one piece per atomic operation at its peak, is `nandlab experiment power --policies "
                  "...,dcc_flat` (and dcc_fw_flat with the firmware's time).",
                  "DCC's scheduler (sw/firmware/dcc.c) runs between clock ticks, in zero SoC time: its decision "
                  "cost is not charged here. `nandlab experiment power --policies ...,dcc_fw` charges the cycles "
                  "the firmware's 'dcc bench' measured on the VexRiscv, decisions serialised on one CPU "
                  "(nandlab.dcc_fw).",
                  "The slides' own experiments (4 ch x 4 banks, real traces PC..TPCC) are not reproduced: their "
                  "traces are not available; DCC is measured as the MTPM paper's baseline."]
    return {"title": "DCC current capping (the MTPM paper's baseline)", "status": "reproduced", "rows": rows,
            "figures": [], "deviations": deviations, "parameters": {"same runs as": "mtpm"}}


def _policies(results):
    from nandlab.gateware.power.common import ALL_EXPERIMENT_POLICIES
    return [p for p in ALL_EXPERIMENT_POLICIES if any(r["policy"] == p for r in results)]


FIG11_MS = 4.0          # The stretch of R50 that Fig. 11 shows, in ms of the paper's time.
FIG11_POLICIES = ("npm", "ppm", "kmtpm_sub")     # Fig. 11 (a), (b), (c)


def _scaled():
    return f", divided by {MTPM_SETUP['time_scale']}" if MTPM_SETUP["time_scale"] != 1 else ""


def fig11_cycles():
    s = MTPM_SETUP
    return int(round(FIG11_MS * 1e-3 * s["clock_hz"] / s["time_scale"]))


def _fig_current(runs, table, path):
    """Fig. 11: the summed current of the 8 dies over time on R50, per policy, against PB (the runs'
    first FIG11_MS ms, recorded by the harness a 40 ns window at a time)."""
    s = MTPM_SETUP
    results, _ = runs.get()[(s["tg"], s["alpha"])]
    by = by_run(results)
    pb = table.pb * results[0].get("rings", 1) * 4096
    window_ms = 40e-6 * s["time_scale"]         # a window in the paper's time
    plt = _plt()
    fig, axes = plt.subplots(len(FIG11_POLICIES), 1, figsize=(11, 7), sharex=True)
    for ax, (k, p) in zip(axes, enumerate(FIG11_POLICIES)):
        trace = runs.traces[p]
        ax.plot([i * window_ms for i in range(len(trace))], [v / pb for v in trace], linewidth=0.6, color=f"C{k}")
        ax.axhline(1.0, color="k", linestyle="--", linewidth=1, label="budget PB")
        peak = max(trace) / pb
        ax.set_title(f"({'abc'[k]}) {p.upper() if p != 'kmtpm_sub' else 'KMTPM (sub-atomic)'}: peak {peak:.3f} x PB "
                     f"in this stretch, {by[(p, 50)]['max'] / pb:.3f} over the run", fontsize=9)
        ax.set_ylabel("summed current / PB (1)")
        ax.set_ylim(0, max(2.0, peak * 1.1))
        ax.legend(fontsize=8, loc="upper right")
    ts = s["time_scale"]
    axes[-1].set_xlabel("time from the start of the trace (ms)" +
                        (f"; run with times / {ts}, drawn in the paper's time" if ts != 1 else ""))
    fig.suptitle(f"MTPM Fig. 11: summed current on R50, 40 ns windows (TG {table.tg}, alpha {table.alpha}, "
                 f"PB = {table.pb} x I_max; {runs.params()})", fontsize=9)
    return _save(plt, fig, path)


def _fig_throughput(results, table, runs, path):
    plt = _plt()
    by = by_run(results)
    ratios = sorted({r["ratio"] for r in results})
    pols = _policies(results)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    w = 0.8 / len(pols)
    paper = {"kmtpm_sub": "thr_kmtpm_sub", "mtpm": "thr_mtpm", "kmtpm_atomic": "thr_kmtpm_atomic", "dcc": "thr_dcc"}
    for i, p in enumerate(pols):
        vals = [by[("npm", q)]["cycles"] / by[(p, q)]["cycles"] for q in ratios]
        ax.bar([k + i * w for k in range(len(ratios) + 1)], vals + [sum(vals) / len(vals)], w, label=p,
               color=f"C{i}")
        if p in paper:
            ax.plot([len(ratios) + i * w], [MTPM_PAPER[paper[p]][0]], "k_", markersize=14, markeredgewidth=2,
                    label="paper's mean" if p == "dcc" else None)
    ax.set_xticks([k + 0.4 - w / 2 for k in range(len(ratios) + 1)], [f"R{q}" for q in ratios] + ["mean"])
    ax.set_xlabel("trace (read ratio, %)")
    ax.set_ylabel("throughput / NPM's (1)")
    ax.set_title(f"MTPM Fig. 13: throughput per policy (TG {table.tg}, alpha {table.alpha}; {runs.params()});\n"
                 f"black ticks: the paper's mean (DCC's derived)", fontsize=9)
    ax.set_ylim(0, 1.25)
    ax.legend(fontsize=8, ncol=4, loc="upper left")
    return _save(plt, fig, path)


def _fig_peaks(results, table, runs, path):
    plt = _plt()
    by = by_run(results)
    ratios = sorted({r["ratio"] for r in results})
    pb = table.pb * results[0].get("rings", 1)
    fig, ax = plt.subplots(figsize=(8, 4))
    for p in _policies(results):
        ax.plot(ratios, [by[(p, q)]["max"] / 4096 / pb for q in ratios], marker="o", label=p)
    ax.axhline(1.0, color="k", linestyle="--", linewidth=1, label="budget PB")
    ax.plot([50], [MTPM_PAPER["npm_peak_r50"][0]], "k*", markersize=10, label="paper NPM R50")
    ax.plot([50], [MTPM_PAPER["ppm_peak_r50"][0]], "kx", markersize=9, label="paper PPM R50")
    ax.set_xlabel("read ratio (%)")
    ax.set_ylabel("peak summed current / PB (1)")
    ax.set_title(f"Peak current per policy (40 ns windows; TG {table.tg}, alpha {table.alpha}; {runs.params()})",
                 fontsize=9)
    ax.set_ylim(0, max(2.4, ax.get_ylim()[1]))
    ax.legend(fontsize=8, ncol=4, loc="upper center")
    return _save(plt, fig, path)


def _fig_sweep(points, what, runs, path):
    plt = _plt()
    s = MTPM_SETUP
    keys = sorted(pt for pt in points if (pt[1] == s["alpha"] if what == "tg" else pt[0] == s["tg"]))
    x = [pt[0] if what == "tg" else pt[1] for pt in keys]
    fig, ax = plt.subplots(figsize=(7, 4))
    for p in _policies(points[keys[0]][0]):
        ax.plot(x, [mean_thr(points[pt][0], p) for pt in keys], marker="o", label=p)
    ax.set_xlabel("token granularity TG" if what == "tg" else "budget factor alpha (PB = alpha x I_max)")
    ax.set_ylabel("throughput / NPM's (1), mean R0..R100")
    fixed = f"alpha {s['alpha']}" if what == "tg" else f"TG {s['tg']}"
    fig_no = 12 if what == "tg" else 15
    ax.set_title(f"MTPM Fig. {fig_no}: {what} sweep ({fixed}; {runs.params()})", fontsize=9)
    ax.legend(fontsize=8)
    return _save(plt, fig, path)


# ddr -------------------------------------------------------------------------------------------------

def section_ddr(quick, out):
    from nandlab import bench
    cells = ("SLC",) if quick else ("SLC", "MLC")
    ways = (1, 4, 16) if quick else (1, 2, 4, 8, 16)
    say(f"ddr: the interface bench ({', '.join(cells)}; ways {', '.join(map(str, ways))}; cocotb on Verilator)")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        measured = bench.bench_interface(cells=cells, way_counts=ways)
    (out / "ddr_interface.txt").write_text(buf.getvalue())
    t = {(r["cell"], r["direction"], r["ways"]): r for r in measured}
    rows = []
    for cell in cells:
        for direction in ("write", "read"):
            r = t[(cell, direction, 16)]
            paper = bench.PAPER_TABLE3[cell][direction][16]
            src = f"Table 3, {cell}, 16 ways"
            rows.append(_row(f"{cell} {direction}, 16 ways: PROPOSED / CONV", paper[2] / paper[0],
                             r["ddr"] / r["conv"], src, "x"))
            rows.append(_row(f"{cell} {direction}, 16 ways: PROPOSED / SYNC_ONLY", paper[2] / paper[1],
                             r["ddr"] / r["sync"], src, "x"))
            rows.append(_row(f"{cell} {direction}, 16 ways: PROPOSED", paper[2], r["ddr"], src, "MB/s", "{:.1f}"))
    figure = _fig_ddr(measured, cells, ways, out / "ddr_table3.png")
    deviations = ["System clock 100 MHz; CONV = async SDR mode 5 (20 ns), SYNC_ONLY = sync SDR mode 5, PROPOSED = "
                  "NV-DDR mode 5 (the paper's prototype ran its own clocks).",
                  "Emulated dies with the parts' array times and a scaled geometry (4 blocks x 16 pages); "
                  "MB/s in the steady state (nandlab bench interface).",
                  "SLC part: NandLab-SLC; MLC part: the DW/SDW paper's MLC timings (the DDR paper's parts are "
                  "not named in full)."]
    if quick:
        deviations.append("--quick: SLC only, at 1, 4 and 16 ways.")
    return {"title": "Synchronous NV-DDR NAND interface (the DDR paper)", "status": "reproduced", "rows": rows,
            "figures": [str(figure)], "deviations": deviations,
            "parameters": {"cells": list(cells), "ways": list(ways), "measured": measured}}


def _fig_ddr(measured, cells, ways, path):
    from nandlab import bench
    plt = _plt()
    fig, axes = plt.subplots(len(cells), 2, figsize=(10, 3.8 * len(cells)), squeeze=False)
    t = {(r["cell"], r["direction"], r["ways"]): r for r in measured}
    for i, cell in enumerate(cells):
        for j, direction in enumerate(("write", "read")):
            ax = axes[i][j]
            for k, (key, mode) in enumerate((("conv", "CONV"), ("sync", "SYNC_ONLY"), ("ddr", "PROPOSED"))):
                color = f"C{k}"
                ax.plot(ways, [t[(cell, direction, w)][key] for w in ways], marker="o", color=color,
                        label=f"{mode} (ours)")
                ax.plot(ways, [bench.PAPER_TABLE3[cell][direction][w][k] for w in ways], linestyle="--",
                        color=color, label=f"{mode} (paper)")
            ax.set_xscale("log", base=2)
            ax.set_xticks(list(ways), [str(w) for w in ways])
            ax.set_xlabel("ways on the channel")
            ax.set_ylabel("page data rate (MB/s)")
            ax.set_title(f"DDR Table 3: {cell} {direction}s, 1 channel, 100 MHz", fontsize=9)
            ax.legend(fontsize=7)
    return _save(plt, fig, path)


# the plane papers --------------------------------------------------------------------------------------

def section_pending(title, paper_rows, why):
    return {"title": title, "status": "not reproduced", "reason": why,
            "rows": [_row(q, v, None, src) for q, v, src in paper_rows], "figures": [], "deviations": [],
            "parameters": {}}


# report ----------------------------------------------------------------------------------------------

def _cell(value, fmt):
    if value is None:
        return "-"
    try:
        return fmt.format(value)
    except (ValueError, TypeError):
        return f"{value:.3f}" if isinstance(value, float) else str(value)


def report_markdown(sections, quick, out):
    lines = ["# nandlab reproduce: the seed papers", "",
             f"{'Quick runs (--quick)' if quick else 'Full runs'}; generated by `nandlab reproduce` "
             f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}). Ratio = ours / the paper's value.", ""]
    for name, sec in sections.items():
        lines += [f"## {name}: {sec['title']}", ""]
        if sec["status"] != "reproduced":
            lines += [f"**Not reproduced:** {sec['reason']}", ""]
        lines += ["| quantity | paper | ours | ratio | unit | paper's source |", "|---|---|---|---|---|---|"]
        for r in sec["rows"]:
            lines.append(f"| {r['quantity']} | {_cell(r['paper'], r['format'])} | {_cell(r['ours'], r['format'])} | "
                         f"{_cell(r['ratio'], '{:.3f}')} | {r['unit']} | {r['source']} |")
        lines.append("")
        for f in sec["figures"]:
            rel = Path(f).relative_to(out) if Path(f).is_relative_to(out) else f
            lines += [f"![{Path(f).stem}]({rel})", ""]
        if sec["deviations"]:
            lines += ["Differences from the paper's setup:", ""] + [f"- {d}" for d in sec["deviations"]] + [""]
        if "runtime_s" in sec:
            lines += [f"Run time: {sec['runtime_s']:.0f} s.", ""]
    return "\n".join(lines)


def report_html(sections, quick, out):
    e = html.escape
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>nandlab reproduce</title>",
             "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:collapse}"
             "td,th{border:1px solid #999;padding:3px 8px;text-align:right}td:first-child,td:last-child"
             "{text-align:left}img{max-width:100%}</style></head><body>",
             "<h1>nandlab reproduce: the seed papers</h1>",
             f"<p>{'Quick runs (--quick)' if quick else 'Full runs'}. Ratio = ours / the paper's value.</p>"]
    for name, sec in sections.items():
        parts.append(f"<h2>{e(name)}: {e(sec['title'])}</h2>")
        if sec["status"] != "reproduced":
            parts.append(f"<p><b>Not reproduced:</b> {e(sec['reason'])}</p>")
        parts.append("<table><tr><th>quantity</th><th>paper</th><th>ours</th><th>ratio</th><th>unit</th>"
                     "<th>paper's source</th></tr>")
        for r in sec["rows"]:
            parts.append(f"<tr><td>{e(r['quantity'])}</td><td>{_cell(r['paper'], r['format'])}</td>"
                         f"<td>{_cell(r['ours'], r['format'])}</td><td>{_cell(r['ratio'], '{:.3f}')}</td>"
                         f"<td>{e(r['unit'])}</td><td>{e(r['source'])}</td></tr>")
        parts.append("</table>")
        for f in sec["figures"]:
            rel = Path(f).relative_to(out) if Path(f).is_relative_to(out) else f
            parts.append(f"<p><img src='{e(str(rel))}' alt='{e(Path(f).stem)}'></p>")
        if sec["deviations"]:
            parts.append("<p>Differences from the paper's setup:</p><ul>" +
                         "".join(f"<li>{e(d)}</li>" for d in sec["deviations"]) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)


def format_table(sections):
    lines = [f"{'paper':<7}{'quantity':<62}{'paper':>10}{'ours':>10}{'ratio':>8}"]
    for name, sec in sections.items():
        if sec["status"] != "reproduced":
            lines.append(f"{name:<7}not reproduced: {sec['reason']}")
            continue
        for r in sec["rows"]:
            lines.append(f"{name:<7}{r['quantity'][:61]:<62}{_cell(r['paper'], r['format']):>10}"
                         f"{_cell(r['ours'], r['format']):>10}{_cell(r['ratio'], '{:.3f}'):>8}")
    return "\n".join(lines)


@contextlib.contextmanager
def _output_to(path):
    """Standard output, the child processes' too (Verilator's and the compiler's), appended to `path`:
    `--json` prints one object and nothing else."""
    import os
    import sys
    sys.stdout.flush()
    saved = os.dup(1)
    with open(path, "a") as log:
        os.dup2(log.fileno(), 1)
        try:
            with contextlib.redirect_stdout(log):
                yield
        finally:
            log.flush()
            os.dup2(saved, 1)
            os.close(saved)


class DdrBeside:
    """The ddr section in a process of its own, started with the simulated SoC's sections: the interface
    bench simulates on one core, and their builds (the SoC's generation) and their sessions' last runs
    leave a core idle. Its report, figure and tool output go to `out`/ddr."""

    def __init__(self, quick, out):
        import subprocess
        import sys
        self.t0, self.out = time.monotonic(), out / "ddr"
        cmd = [sys.executable, "-m", "nandlab.cli", "reproduce", "ddr", "--json", "--out", str(self.out)]
        say("ddr: the interface bench in a process of its own, beside the simulated SoC's runs")
        self.proc = subprocess.Popen(cmd + (["--quick"] if quick else []), stdout=subprocess.PIPE, text=True,
                                     cwd=env.REPO)

    def result(self):
        stdout, _ = self.proc.communicate()
        if self.proc.returncode != 0:
            raise NandLabError(f"the ddr section's process failed (exit {self.proc.returncode}): its messages "
                               f"are above, its tools' output in {self.out / 'tools.log'}")
        sec = json.loads(stdout)["papers"]["ddr"]
        sec["runtime_s"] = time.monotonic() - self.t0
        return sec


def run(papers, quick=False, out=None, jobs=1, scheduler=None, seed=1):
    """Every paper's section; writes report.md, report.html and results.json into `out`; returns the
    JSON object."""
    out = Path(out or env.BUILD_DIR / "reproduce").absolute()
    out.mkdir(parents=True, exist_ok=True)
    runs = PowerRuns(quick, jobs, scheduler, seed, out)
    from nandlab import mpnfm, planes
    makers = {"mtpm": lambda: section_mtpm(runs, out), "dcc": lambda: section_dcc(runs, out),
              "ddr": lambda: section_ddr(quick, out),
              "dwsdw": lambda: planes.section(quick, out, seed=seed, log=say, jobs=jobs, scheduler=scheduler),
              "mpnfm": lambda: mpnfm.section(quick, out, seed=seed, log=say, jobs=jobs, scheduler=scheduler)}
    sections, beside = {}, None
    try:
        for name in papers:
            if name == "ddr" and {"dwsdw", "mpnfm"} & set(papers):
                continue                                  # run beside them, below
            if name in ("dwsdw", "mpnfm") and "ddr" in papers and beside is None:
                beside = DdrBeside(quick, out)
            t0 = time.monotonic()
            with _output_to(out / "tools.log"):
                sections[name] = sec = makers[name]()
            sec["runtime_s"] = time.monotonic() - t0
            say(f"{name}: {sec['status']} ({sec['runtime_s']:.0f} s)")
    except BaseException:
        if beside:
            beside.proc.kill()
        raise
    if beside:
        sections["ddr"] = beside.result()
        say(f"ddr: {sections['ddr']['status']} ({sections['ddr']['runtime_s']:.0f} s, beside dwsdw and mpnfm)")
    sections = {name: sections[name] for name in papers}
    (out / "report.md").write_text(report_markdown(sections, quick, out))
    (out / "report.html").write_text(report_html(sections, quick, out))
    result = {"quick": quick, "papers": sections,
              "report": {"markdown": str(out / "report.md"), "html": str(out / "report.html")}}
    (out / "results.json").write_text(json.dumps(result, indent=1, sort_keys=True, default=str))
    return result


def cmd_reproduce(args):
    check_args(args)
    papers = list(PAPERS) if args.paper == "all" else [args.paper]
    t0 = time.monotonic()
    result = run(papers, args.quick, args.out, args.jobs, args.scheduler, args.seed)
    result["wall_s"] = time.monotonic() - t0
    if args.json:
        print(json.dumps(result, sort_keys=True, default=str))
    else:
        print(format_table(result["papers"]))
        print(f"\nreport: {result['report']['markdown']} and {result['report']['html']} "
              f"({result['wall_s']:.0f} s)")
    return 0
