"""`nandlab experiment power --sweep grid`: budget violations and throughput at every accepted (TG, alpha).

Issue 18 asks for "0 violations for every token policy and for DCC across all traces, alpha 1..8 and
TG 2..5". The token policies run at every (TG, alpha) point; DCC does not use the ring, so its runs
depend on alpha only and run once per alpha (at the default TG). Where DCC cannot run at all (its cap,
alpha x I_max less the channel's bus current, lies below one operation's peak) the grid says so with
that limit instead of a number: no operation could ever start, which is a configuration error, not a
budget violation.
"""

import json

from nandlab.errors import NandLabError

GRID_POLICIES = ("mtpm", "kmtpm_atomic", "kmtpm_sub", "dcc")


def points(rings=1):
    """Every (TG, alpha) the ring accepts whose alpha splits into `rings` per-channel shares."""
    from nandlab.gateware.power.common import ALPHA_RANGE, TG_RANGE
    return [(tg, a) for a in range(ALPHA_RANGE[0], ALPHA_RANGE[1] + 1) if a % rings == 0
            for tg in range(TG_RANGE[0], TG_RANGE[1] + 1)]


def _cells(results, table, policies):
    """Each policy's numbers at one point: throughput / NPM (mean over the ratios), violations, peak / PB."""
    from nandlab.experiment import throughput_vs_npm
    pb = table.pb * results[0].get("rings", 1) * 4096
    thr = throughput_vs_npm(results)
    out = {}
    for p in policies:
        mine = [r for r in results if r["policy"] == p]
        out[p] = {"throughput_vs_npm": thr[p]["mean"], "violations": sum(r["violations"] for r in mine),
                  "cons_errors": sum(r.get("cons_errors", 0) for r in mine),
                  "peak_pb": max(r["max"] for r in mine) / pb, "tt": table.tt}
    return out


def run(policies, dcc_tg, log=print, rings=1, **common):
    """The grid: {"points": [{"tg", "alpha", "policies": {policy: cell or {"impossible": why}}}], ...}.
    `policies`: the token policies and DCC variants asked for (npm is the baseline and always runs)."""
    from nandlab import experiment
    from nandlab.gateware.power.common import DCC_POLICIES
    token = [p for p in policies if p not in DCC_POLICIES and p != "npm"]
    dccs = [p for p in policies if p in DCC_POLICIES]
    grid = points(rings)
    if not grid:
        raise NandLabError(f"--sweep grid: no alpha in 1..8 splits into {rings} per-channel rings")
    cells = {pt: {} for pt in grid}
    if token:
        log(f"grid: {len(token)} token policies at {len(grid)} (TG, alpha) points")
        out = experiment.run_points(grid, policies=["npm"] + token, log=log, **common)
        for pt, (res, table) in out.items():
            cells[pt].update(_cells(res, table, token))
    for alpha in sorted({a for _, a in grid}) if dccs else []:
        log(f"grid: DCC at alpha {alpha} (the same at every TG)")
        try:
            (res, table), = experiment.run_points([(dcc_tg, alpha)], policies=["npm"] + dccs, log=log,
                                                  **common).values()
            dcc_cells = _cells(res, table, dccs)
        except NandLabError as e:
            if not str(e).startswith("DCC:"):
                raise
            dcc_cells = {p: {"impossible": str(e)} for p in dccs}
        for pt in grid:
            if pt[1] == alpha:
                cells[pt].update(dcc_cells)
    rows = [{"tg": tg, "alpha": a, "policies": cells[(tg, a)]} for tg, a in grid]
    return {"sweep": "grid", "points": rows, "summary": summary(rows, token + dccs)}


def summary(rows, policies):
    """Per policy: points run, points impossible, total violations and conservation errors, worst peak / PB."""
    out = {}
    for p in policies:
        ran = [r["policies"][p] for r in rows if "impossible" not in r["policies"][p]]
        out[p] = {"points": len(ran), "impossible": len(rows) - len(ran),
                  "violations": sum(c["violations"] for c in ran),
                  "cons_errors": sum(c["cons_errors"] for c in ran),
                  "worst_peak_pb": max((c["peak_pb"] for c in ran), default=None),
                  "throughput_vs_npm": {"min": min((c["throughput_vs_npm"] for c in ran), default=None),
                                        "max": max((c["throughput_vs_npm"] for c in ran), default=None)}}
    return out


def format_grid(result, params):
    """The grid as a table (throughput / NPM, violations per cell) and the summary per policy."""
    from nandlab.sensitivity import describe
    policies = list(result["summary"])
    lines = [f"Budget grid, TG x alpha ({describe({**params, 'tg': '2..5', 'alpha': '1..8'})}): "
             "throughput / NPM (mean over the read ratios) / violating 40 ns windows",
             f"{'TG':>3} {'alpha':>5}" + "".join(f"{p:>20}" for p in policies)]
    for row in result["points"]:
        cells = []
        for p in policies:
            c = row["policies"][p]
            cells.append("impossible" if "impossible" in c else f"{c['throughput_vs_npm']:.3f} / {c['violations']}")
        lines.append(f"{row['tg']:>3} {row['alpha']:>5}" + "".join(f"{c:>20}" for c in cells))
    lines.append("")
    lines.append(f"{'policy':<14}{'points':>7}{'impossible':>11}{'violations':>11}{'cons. err.':>11}"
                 f"{'worst peak/PB':>14}")
    for p, s in result["summary"].items():
        peak = "-" if s["worst_peak_pb"] is None else f"{s['worst_peak_pb']:.3f}"
        lines.append(f"{p:<14}{s['points']:>7}{s['impossible']:>11}{s['violations']:>11}{s['cons_errors']:>11}"
                     f"{peak:>14}")
    why = sorted({c["impossible"] for r in result["points"] for c in r["policies"].values() if "impossible" in c})
    lines += [f"impossible: {w}" for w in why]
    return "\n".join(lines)


def figure(result, params, path):
    """Throughput / NPM against alpha, a line per TG, one panel per policy; the title carries the setup
    and each panel its violations over the grid."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from nandlab.sensitivity import describe
    policies = list(result["summary"])
    cols = min(4, len(policies))
    rows = -(-len(policies) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.4 * rows + 0.4), sharey=True, squeeze=False)
    for ax in axes.flat[len(policies):]:
        ax.set_visible(False)
    for ax, p in zip(axes.flat, policies):
        drawn = {}                 # DCC's series are the same at every TG: one line, labelled with them all
        for tg in sorted({r["tg"] for r in result["points"]}):
            pts = [(r["alpha"], r["policies"][p]) for r in result["points"] if r["tg"] == tg]
            pts = tuple((a, c["throughput_vs_npm"]) for a, c in pts if "impossible" not in c)
            if pts:
                drawn.setdefault(pts, []).append(tg)
        for pts, tgs in drawn.items():
            ax.plot(*zip(*pts), marker="o", markersize=3, label="TG " + ", ".join(map(str, tgs)))
        ax.legend(fontsize=7)
        s = result["summary"][p]
        ax.set_title(f"{p}: {s['violations']} violations, {s['points']} points", fontsize=9)
        ax.set_xlabel("alpha (budget PB / I_max)")
        ax.grid(alpha=0.3)
    for row in axes:
        row[0].set_ylabel("throughput / NPM's (1), mean over the ratios")
    fig.suptitle(f"Budget grid ({describe({**params, 'tg': '2..5', 'alpha': '1..8'})})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def dumps(result, params, figure_path):
    return json.dumps({**result, "params": params, "figure": str(figure_path)}, sort_keys=True)
