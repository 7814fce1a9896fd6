"""`nandlab bench all` (`make bench`): every benchmark in one run, then one table of the headline figures,
each beside what it is compared with and the ratio, both measured in the same run (or a fixed
reference: the DDR paper's Table 3, a board's clock target, the simulator's nominal clock).

With `--json` the benchmarks' own tables go to standard error and standard output carries one JSON
object: the summary rows and every benchmark's full results.
"""

import contextlib
import sys


def _row(bench, measure, value, unit, versus=None, reference=None):
    """A summary row: `value` (in `unit`) against `reference` (`versus` says what it is)."""
    ratio = round(value / reference, 3) if value is not None and reference else None
    return dict(bench=bench, measure=measure, value=value, unit=unit, versus=versus, reference=reference, ratio=ratio)


def _soc_rows(rows, nominal_hz):
    return [_row("soc", name, round(cycles / wall), "cycles/s", "nominal sys_clk", nominal_hz)
            for name, cycles, wall in rows]


def _sim_rows(report):
    out = []
    base = {r["dies"]: r for r in report["results"] if not r["idle_gating"]}
    for r in (r for r in report["results"] if r["idle_gating"]):
        for load in report["loads"]:
            if not r.get(load):
                continue
            ungated = base.get(r["dies"], {}).get(load)
            out.append(_row("sim", f"{r['dies']} dies, {load}", r[load]["cycles_per_s"], "cycles/s",
                            "idle gating off, same run" if ungated else None,
                            ungated["cycles_per_s"] if ungated else None))
    return out


def _telemetry_rows(rows, nominal_hz):
    return [_row("telemetry", f"{r['dies']} dies, frames per simulated ms", round(r["frames"] / (r["cycles"] / nominal_hz * 1e3), 1),
                 "frames/ms", None, None) for r in rows]


def _interface_rows(rows):
    from nandlab.bench import PAPER_TABLE3
    out = []
    for r in rows:
        if r["ways"] not in (1, 16):
            continue
        paper = PAPER_TABLE3[r["cell"]][r["direction"]].get(r["ways"])
        out.append(_row("interface", f"{r['cell']} {r['direction']}, {r['ways']} way(s), NV-DDR mode 5",
                        round(r["ddr"], 2), "MB/s", "the DDR paper's Table 3", paper[2] if paper else None))
        out.append(_row("interface", f"{r['cell']} {r['direction']}, {r['ways']} way(s), NV-DDR / async SDR",
                        round(r["ddr"] / r["conv"], 3), "x", "the paper's ratio", round(paper[2] / paper[0], 3) if paper else None))
    return out


def _ecp5_rows(rows):
    out = []
    for r in rows:
        out.append(_row("ecp5", f"{r['board']} ({r['config']}) system clock Fmax", r["fmax_mhz"], "MHz", "target",
                        r["target_mhz"]))
        out.append(_row("ecp5", f"{r['board']} block RAM", r["bram"], "DP16KD", "the device's", r["bram_total"]))
        out.append(_row("ecp5", f"{r['board']} LUT4", r["lut4"], "LUT4", None, None))
        out.append(_row("ecp5", f"{r['board']} flip-flops", r["ff"], "FF", None, None))
    return out


def _power_rows(report):
    skip, slow = (next(r for r in report["results"] if r["mode"] == m) for m in ("skip", "no skip"))
    return [_row("power", f"experiment power, {report['runs']} runs, wall with the skip", skip["wall_s"], "s",
                 "cycle by cycle, same run (x = 1 / speed-up)", slow["wall_s"]),
            _row("power", "results identical with and without the skip", int(report["results_identical"]), "bool")]


def _ftl_rows(result):
    out = []
    for r in result["rows"]:
        for d in ("write", "read"):
            out.append(_row("ftl", f"{r['dies']} dies, {result['kib']} KiB sequential {d} through the FTL",
                            round(r[f"ftl_{d}_kbps"] / 1000, 1), "MB/s", "raw controller, same run",
                            round(r[f"raw_{d}_kbps"] / 1000, 1)))
    return out


def bench_all(verbose=False, as_json=False, board=None):
    """Run every benchmark; print (or return, `as_json`) one summary of their headline figures."""
    from nandlab import bench
    from nandlab.bench_ftl import bench_ftl
    from nandlab.soc.targets import sim as simtarget
    nominal = simtarget.SYS_CLK_FREQ
    sections = {}
    with contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext():
        sections["soc"] = bench.bench_soc(verbose)
        sections["sim"] = bench.bench_sim(verbose)
        sections["telemetry"] = bench.bench_telemetry(verbose)
        sections["interface"] = bench.bench_interface(verbose)
        sections["ecp5"] = bench.bench_ecp5(verbose, **({"boards": (board,)} if board else {}))
        sections["power"] = bench.bench_power(verbose)
        sections["ftl"] = bench_ftl(verbose)
    rows = (_soc_rows(sections["soc"], nominal) + _sim_rows(sections["sim"])
            + _telemetry_rows(sections["telemetry"], nominal) + _interface_rows(sections["interface"])
            + _ecp5_rows(sections["ecp5"]) + _power_rows(sections["power"]) + _ftl_rows(sections["ftl"]))
    sections["soc"] = bench.soc_json(sections["soc"])
    report = dict(bench="all", summary=rows, sections=sections)
    if as_json:
        return report
    print_summary(rows)
    return report


def print_summary(rows):
    """The summary as one Markdown table."""
    fmt = lambda v: "-" if v is None else (f"{v:,.0f}" if isinstance(v, (int, float)) and abs(v) >= 1000 else f"{v:g}")
    print("\nSummary (every ratio from this run, or against the fixed reference named)")
    print("| bench | measure | value | unit | versus | reference | ratio |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['bench']} | {r['measure']} | {fmt(r['value'])} | {r['unit']} | {r['versus'] or '-'} | "
              f"{fmt(r['reference'])} | {fmt(r['ratio'])} |")
