"""Figures of `nandlab ftl experiment`: write amplification against over-provisioning with the analytic
curve, greedy against cost-benefit GC under 80/20 writes, and the erase-count spread with and without
static wear levelling. Every axis names its quantity and unit; every title the run's parameters."""

from pathlib import Path

from nandlab import ftl_waf_model as wm

WAF_LABEL = "write amplification (NAND page programs / host page writes)"



def _save(plt, fig, out, name):
    """The figure as out/name (PNG), closed; returns its path."""
    fig.tight_layout()
    path = Path(out) / name
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path

def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _geo(d):
    planes = f"x {d['planes']} planes " if d["planes"] > 1 else ""
    return f"{d['dies']} dies {planes}x {d['blocks']} blocks x {d['pages']} pages x {d['page_bytes']} B"


def waf_figure(runs, table, out):
    plt = _plt()
    main = [d for n, d in runs.items() if n.startswith("waf/") and "error" not in d]
    if not main:
        return None
    ref = main[0]
    np_ = wm.np_for(ref)
    seeds = sorted({d["seed"] for d in main})
    ops = sorted(table)
    fig, (ax, dev) = plt.subplots(2, 1, figsize=(9, 7.5), sharex=True, gridspec_kw=dict(height_ratios=[3, 1.3]))
    grid = [x / 10 for x in range(30, 451, 5)]
    ax.plot(grid, [wm.waf_greedy(1 + x / 100, np_) for x in grid], color="#1f77b4",
            label=f"Desnoyers Eq. 12, greedy, Np = {np_}, alpha = 1 + OP (nominal)")
    ax.plot(grid, [wm.waf_agarwal(x / 100) for x in grid], color="0.55", ls=":",
            label="(1 + OP) / (2 OP), large-erase-unit limit (Agarwal and Marrow)")
    x = [op / 10 for op in ops]
    ax.plot(x, [table[op][f"model_{wm.PRIMARY}"] for op in ops], color="#1f77b4", ls="--", marker="x",
            label="Eq. 12 at alpha from the measured free pool (primary mapping)")
    ax.errorbar(x, [table[op]["waf"] for op in ops],
                yerr=[[table[op]["waf"] - table[op]["waf_min"] for op in ops],
                      [table[op]["waf_max"] - table[op]["waf"] for op in ops]],
                fmt="o", color="#d62728", capsize=3, label="FTL measured" + (f" (mean, min-max of {len(seeds)} seeds)" if len(seeds) > 1 else ""))
    small = [d for n, d in runs.items() if n.startswith("waf-np63/") and "error" not in d]
    if small:
        ax.plot([d["op_permille"] / 10 for d in small], [d["waf"] for d in small], "s", mfc="none", color="#2ca02c",
                label=f"FTL measured, {_geo(small[0])} (Np = {wm.np_for(small[0])})")
        ax.plot([d["op_permille"] / 10 for d in small], [waf_model(d) for d in small], "+", color="#2ca02c", ms=10,
                label="Eq. 12 for that geometry (primary mapping)")
    ax.set_ylabel(WAF_LABEL)
    ax.set_ylim(1, min(12, max(t["waf"] for t in table.values()) * 1.5))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7.5)
    dev.axhspan(-10, 10, color="#2ca02c", alpha=0.12, label="+-10 % acceptance band")
    dev.axhline(0, color="0.4", lw=0.8)
    dev.plot(x, [100 * table[op]["deviation"] for op in ops], "o-", color="#d62728", label="vs primary mapping")
    dev.plot(x, [100 * (table[op]["waf"] / table[op]["model_nominal"] - 1) for op in ops], "^:", color="0.35",
             label="vs nominal alpha = 1 + OP")
    dev.set_xlabel("over-provisioning OP = (physical - logical) / logical (%)")
    dev.set_ylabel("measured / model - 1 (%)")
    dev.grid(alpha=0.3)
    dev.legend(fontsize=7.5)
    seed_text = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}-{seeds[-1]}"
    caps = ref["host_page_writes"] / ref["logical_pages"]
    fig.suptitle(f"FTL write amplification, greedy GC, uniform random 1-page writes; {seed_text}\n"
                 f"{_geo(ref)} (superblock {ref['slots_per_superblock']} pages, Np = {np_})\n"
                 f"sequential fill + {ref_precondition(ref)} capacities of random writes, then {caps:.1f} capacities "
                 f"measured ({ref['ops']} writes at OP {ref['op_permille'] / 10:g} %)", fontsize=9)
    return _save(plt, fig, out, "waf_vs_op.png")


def ref_precondition(d):
    return max(d.get("precondition", 1) - 1, 0)


def waf_model(d):
    return wm.waf_greedy(wm.alpha_for(d), wm.np_for(d))


def hotcold_figure(runs, out, seed):
    plt = _plt()
    ops = sorted({d["op_permille"] for n, d in runs.items() if n.startswith("hotcold/") and "error" not in d})
    if not ops:
        return None
    fig, ax = plt.subplots(figsize=(8, 5))
    kinds = [("uniform, greedy", lambda op: runs.get(f"waf/op{op}/s{seed}")),
             ("80/20, greedy", lambda op: runs.get(f"hotcold/op{op}/greedy")),
             ("80/20, cost-benefit", lambda op: runs.get(f"hotcold/op{op}/cost-benefit"))]
    colors = ["#7f7f7f", "#1f77b4", "#ff7f0e"]
    width = 0.25
    ref = None
    for i, op in enumerate(ops):
        for k, (label, get) in enumerate(kinds):
            d = get(op)
            if not d or "error" in d:
                continue
            ref = ref or (d if k else None)
            ax.bar(i + (k - 1) * width, d["waf"], width, color=colors[k], label=label if i == 0 else None)
            ax.text(i + (k - 1) * width, d["waf"] * 0.5, f"{d['waf']:.2f}", ha="center", va="center", fontsize=8,
                    color="white", fontweight="bold")
            if k == 0:
                ax.plot([i + (k - 1.5) * width, i + (k - 0.5) * width], [waf_model(d)] * 2, color="k", lw=2,
                        label="Desnoyers Eq. 12 (uniform, greedy)" if i == 0 else None)
            if k == 1:
                m = wm.waf_greedy_hotcold(wm.alpha_for(d), wm.np_for(d), 0.8, 0.2)
                ax.plot([i + (k - 1.5) * width, i + (k - 0.5) * width], [m] * 2, color="k", lw=2, ls="--",
                        label="Desnoyers Eq. 16 (hot/cold, greedy)" if i == 0 else None)
    ax.set_xticks(range(len(ops)), [f"OP {op / 10:g} %" for op in ops])
    ax.set_xlabel("over-provisioning (physical - logical) / logical")
    ax.set_ylabel(WAF_LABEL)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    if ref:
        ax.set_title(f"Greedy vs cost-benefit GC, 80 % of writes to 20 % of the pages (one write stream)\n"
                     f"{_geo(ref)}; seed {ref['seed']}; fill, {ref['warmup']} warm-up writes, {ref['ops']} "
                     f"measured (OP {ref['op_permille'] / 10:g} %)", fontsize=9.5)
    return _save(plt, fig, out, "gc_hotcold.png")


def spread_figure(runs, out):
    plt = _plt()
    on, off = runs.get("wl/on"), runs.get("wl/off")
    if not on or not off or "error" in on or "error" in off:
        return None
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for d, label, color in ((on, "static WL on", "#2ca02c"), (off, "static WL off", "#d62728")):
        s = d["erase_series"]
        x = [p[0] / 1e3 for p in s]
        ax.plot(x, [p[2] - p[1] for p in s], color=color, label=f"{label} (max sampled {d['erase_spread_max']})")
        ax2.plot(x, [p[2] for p in s], color=color, label=f"{label}: most-erased superblock")
        ax2.plot(x, [p[1] for p in s], color=color, ls="--", label=f"{label}: least-erased superblock")
    ax.axhline(on["wl_threshold"], color="k", ls=":", label=f"threshold {on['wl_threshold']} erases")
    ax.set_ylabel("erase-count spread, max - min (erases)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax2.set_xlabel("host write requests (thousands, one 512 B page each)")
    ax2.set_ylabel("erase count (erases per superblock)")
    ax2.legend(fontsize=7.5, ncol=2)
    ax2.grid(alpha=0.3)
    fig.suptitle(f"Erase-count spread under 80/20 hot/cold writes, greedy GC, OP {on['op_permille'] / 10:g} %\n"
                 f"{_geo(on)}; seed {on['seed']}; {on['ops']} writes after a sequential fill; "
                 f"WL threshold {on['wl_threshold']}", fontsize=9.5)
    return _save(plt, fig, out, "erase_spread.png")


def make_figures(runs, table, out, seed):
    return [str(p) for p in (waf_figure(runs, table, out), hotcold_figure(runs, out, seed), spread_figure(runs, out))
            if p]
