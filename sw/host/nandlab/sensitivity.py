"""`nandlab experiment power --sweep precharge|level2|transfer|rate`: how the power experiment's conclusions
depend on the waveform quantities that are assumed, not sourced (docs/power_waveforms.md).

Each point scales one quantity (nand_model/waveforms.py, WaveformScales) and runs every policy at every
read ratio on a harness built with that waveform (the die's tables, the token table, DCC's models and
the channel all follow it):

  precharge  P_A1's pre-charge duration (the pulse after it gives or takes the time: tPROG unchanged)
  level2     P_A1's second (post-peak, pulse) level, 0.50 I_max at 1x
  transfer   the bus current while a page moves (0.08 I_max at NV-DDR mode 5 at 1x), same rate
  rate       the bus's byte rate (transfers 1 / x as long, x the current: the same charge per byte)

Reported per point: each policy's throughput normalised to NPM (mean over the read ratios), KMTPM-S / NPM,
the NPM and PPM peaks (largest 40 ns window, x PB) on R50 and over every ratio, and the token policies'
and DCC's violations. Scale 1.0 is the fixed waveform: its harness is the unswept run's, bit for bit.
"""

import json

from nandlab.errors import NandLabError

SWEEPS = {
    "precharge": "P_A1 pre-charge duration",
    "level2": "P_A1 second (post-peak) level",
    "transfer": "bus current of a page transfer",
    "rate": "bus byte rate (current follows)",
}
DEFAULT_SCALES = (0.5, 0.75, 1.0, 1.5, 2.0)
# Policies that must keep the budget.
GUARDED = ("mtpm", "kmtpm_atomic", "kmtpm_sub", "dcc", "dcc_fw", "dcc_flat", "dcc_fw_flat")


def parse_scales(text, what):
    """The factors of `--scales` ("0.5,1,2"), checked against `what`'s range (WaveformScales.RANGES)."""
    from nandlab.nand_model.waveforms import WaveformScales
    if text is None:
        vals = list(DEFAULT_SCALES)
    else:
        try:
            vals = [float(v) for v in text.split(",") if v.strip() != ""]
        except ValueError:
            raise NandLabError(f"--scales: '{text}' is not a comma-separated list of numbers") from None
        if not vals:
            raise NandLabError(f"--scales: '{text}' lists nothing; give factors such as 0.5,1,2")
    lo, hi = WaveformScales.RANGES[what]
    for v in vals:
        if not lo <= v <= hi:       # NaN fails this too
            raise NandLabError(f"--scales: {v:g} is out of range for --sweep {what} ({lo:g}..{hi:g}: "
                               f"{_range_reason(what)})")
    if len(set(vals)) != len(vals):
        raise NandLabError(f"--scales: '{text}' repeats a factor")
    return sorted(vals)


def _range_reason(what):
    return {"precharge": "the pulse after the pre-charge keeps at least 10 % of P_A1",
            "level2": "the level stays at or under the pre-charge peak I_max and over the settle level",
            "transfer": "a factor of 4 either way", "rate": "a factor of 4 either way"}[what]


def scales_for(what, factor):
    from nandlab.nand_model.waveforms import WaveformScales
    return WaveformScales(**{what: factor})


def run(what, factors, tg, alpha, **common):
    """Every policy at every ratio, at each factor of `what`; [(factor, results, table)]. `common` as
    nandlab.experiment.run_points (channel, interface, time_scale, ...)."""
    from nandlab import experiment
    log = common.get("log", print)
    out = []
    for k, f in enumerate(factors):
        log(f"sweep {what}: x{f:g} ({k + 1}/{len(factors)})")
        res, table = experiment.run(tg=tg, alpha=alpha, scales=scales_for(what, f), **common)
        out.append((f, res, table))
    return out


def point_summary(factor, results, table):
    """One point's numbers: throughput / NPM per policy (mean over its ratios), the NPM and PPM peaks
    (x PB; on R50 when it ran, and the largest over every ratio), violations per policy."""
    from nandlab.experiment import throughput_vs_npm
    rings = results[0].get("rings", 1) if results else 1
    pb = table.pb * rings * 4096
    by = {(r["policy"], r["ratio"]): r for r in results}
    ratios = sorted({r["ratio"] for r in results})
    thr = throughput_vs_npm(results)
    peaks = {}
    for p in ("npm", "ppm"):
        if any((p, q) in by for q in ratios):
            peaks[p] = {"r50": by[(p, 50)]["max"] / pb if (p, 50) in by else None,
                        "max": max(by[(p, q)]["max"] for q in ratios) / pb}
    return {"factor": factor, "ratios": ratios, "throughput_vs_npm": {p: v["mean"] for p, v in thr.items()},
            "kmtpm_sub_vs_npm": thr["kmtpm_sub"]["mean"] if "kmtpm_sub" in thr else None,
            "peak_pb": peaks,
            "violations": {p: sum(by[(p, q)]["violations"] for q in ratios) for p in thr},
            "tt": table.tt, "pb_i_max": table.pb * rings}


def format_sweep(what, points, params):
    """The sweep as a text table: one row per factor."""
    rows = [point_summary(f, r, t) for f, r, t in points]
    pols = list(rows[0]["throughput_vs_npm"])
    lines = [f"Sensitivity to the {SWEEPS[what]} (--sweep {what}; {describe(params)})",
             "throughput normalised to NPM (mean over R" + ",".join(map(str, rows[0]["ratios"])) +
             "); peaks = largest 40 ns window / PB; violations = 40 ns windows over PB, all ratios",
             f"{'x':>6}" + "".join(f"{p:>13}" for p in pols) + f"{'NPM pk R50':>11}{'NPM pk max':>11}"
             f"{'PPM pk R50':>11}{'PPM pk max':>11}  violations (" + ", ".join(p for p in pols if p in GUARDED) + ")"]
    cell = lambda v: f"{v:>11.3f}" if v is not None else f"{'-':>11}"
    for r in rows:
        pk = r["peak_pb"]
        line = f"{r['factor']:>6g}" + "".join(f"{r['throughput_vs_npm'][p]:>13.3f}" for p in pols)
        for p in ("npm", "ppm"):
            line += cell(pk.get(p, {}).get("r50")) + cell(pk.get(p, {}).get("max"))
        line += "  " + " / ".join(str(r["violations"][p]) for p in pols if p in GUARDED)
        lines.append(line)
    return "\n".join(lines)


def sweep_json(what, points, params):
    return {"sweep": what, "quantity": SWEEPS[what], "params": params,
            "points": [point_summary(f, r, t) for f, r, t in points],
            "runs": {f"{f:g}": r for f, r, _ in points}}


def describe(params):
    """The parameters a figure's title and a table's heading carry."""
    scale = params.get("time_scale", 1)
    return (f"{params['dies']} dies of {params['part']}, TG {params['tg']}, alpha {params['alpha']}, "
            f"{params['clock_mhz']:g} MHz, {params['ops']} ops/trace, seed {params['seed']}, "
            f"time scale 1/{scale}" + (f", {params['interface']}" if params.get("channel", True) else ", no channel"))


def figure(what, points, params, path):
    """Two panels against the factor: throughput / NPM per policy; NPM and PPM peaks / PB (R50 and max)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [point_summary(f, r, t) for f, r, t in points]
    x = [r["factor"] for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    for p in rows[0]["throughput_vs_npm"]:
        a.plot(x, [r["throughput_vs_npm"][p] for r in rows], marker="o", label=p)
    a.set_xlabel(f"{SWEEPS[what]}: factor on the fixed waveform (1)")
    a.set_ylabel("throughput / NPM's (1), mean over the ratios")
    a.legend(fontsize=8)
    for k, p in enumerate(("npm", "ppm")):
        if p not in rows[0]["peak_pb"]:
            continue
        r50 = [r["peak_pb"][p]["r50"] for r in rows]
        if all(v is not None for v in r50):
            b.plot(x, r50, marker="o", color=f"C{k}", label=f"{p.upper()} peak, R50")
        b.plot(x, [r["peak_pb"][p]["max"] for r in rows], marker="s", linestyle="--", color=f"C{k}",
               label=f"{p.upper()} peak, all ratios")
    b.axhline(1.0, color="k", linewidth=1, label="budget PB")
    b.set_ylim(0, max(2.0, b.get_ylim()[1]))
    b.set_xlabel(f"{SWEEPS[what]}: factor on the fixed waveform (1)")
    b.set_ylabel("peak summed current / PB (1), 40 ns windows")
    b.legend(fontsize=8)
    for ax in (a, b):
        ax.set_xscale("log", base=2)
        ax.set_xticks(x, [f"{v:g}" for v in x])
    fig.suptitle(f"Sensitivity: {SWEEPS[what]} ({describe(params)})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def dumps(what, points, params):
    return json.dumps(sweep_json(what, points, params), sort_keys=True)
