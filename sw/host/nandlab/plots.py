"""`nandlab plot RECORDING`: figures of a telemetry recording (the CSV `nandlab.telemetry` writes).

Like Fig. 11 of the MTPM paper: the summed current normalised to the power budget over time with
the budget line at 1.0 and the periods that went over it marked; and a per-die stacked view of the
mean currents under the budget line.
"""

import csv
from pathlib import Path

from nandlab.errors import NandLabError

BUDGET_COLOR = "#d62728"


def read_recording(path):
    """Columns of a recording CSV as lists of floats; refuses a file that is not one, naming the line."""
    path = Path(path)
    if not path.exists():
        raise NandLabError(f"{path}: no such recording")
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        need = {"time_us", "total_max", "total_mean", "pb", "violations"}
        if reader.fieldnames is None or not need <= set(reader.fieldnames):
            raise NandLabError(f"{path}: not a telemetry recording (line 1 lacks the columns "
                               f"{', '.join(sorted(need - set(reader.fieldnames or [])))})")
        cols = {k: [] for k in reader.fieldnames}
        for line, row in enumerate(reader, start=2):
            try:
                for k, v in row.items():
                    cols[k].append(float(v))
            except (TypeError, ValueError):
                raise NandLabError(f"{path}, line {line}: a value is not a number") from None
    if not cols["time_us"]:
        raise NandLabError(f"{path}: the recording has no frames")
    return cols


def plot_recording(path, out_prefix=None):
    """Writes <prefix>_current.png and <prefix>_dies.png; returns their paths and the figures."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cols = read_recording(path)
    out_prefix = Path(out_prefix) if out_prefix else Path(path).with_suffix("")
    t = cols["time_us"]
    pb = [p if p > 0 else 1.0 for p in cols["pb"]]
    peak = [m / p for m, p in zip(cols["total_max"], pb)]
    mean = [m / p for m, p in zip(cols["total_mean"], pb)]
    over = [(x, y) for x, y, v in zip(t, peak, cols["violations"]) if v > 0]

    fig1, ax = plt.subplots(figsize=(10, 4))
    ax.plot(t, peak, lw=0.8, color="#1f77b4", label="summed current, peak per frame")
    ax.plot(t, mean, lw=0.8, color="#7fb3d5", label="summed current, mean per frame")
    ax.axhline(1.0, color=BUDGET_COLOR, lw=1.5, ls="--", label="power budget (PB)")
    if over:
        ax.scatter([x for x, _ in over], [y for _, y in over], s=10, color=BUDGET_COLOR, marker="x", zorder=3,
                   label=f"over budget ({len(over)} frames)")
    ax.set_xlabel("time (us)")
    ax.set_ylabel("current / PB")
    ax.set_ylim(0, max(max(peak) * 1.1, 1.2))
    ax.set_title("NAND current against the power budget")
    ax.legend(loc="upper right", fontsize=8)
    fig1.tight_layout()
    p1 = Path(f"{out_prefix}_current.png")
    fig1.savefig(p1, dpi=120)

    dies = sorted({int(k[3:].split("_")[0]) for k in cols if k.startswith("die") and k.endswith("_mean")})
    fig2, ax2 = plt.subplots(figsize=(10, 4))
    if dies:
        ax2.stackplot(t, *[[m / p for m, p in zip(cols[f"die{d}_mean"], pb)] for d in dies],
                      labels=[f"die {d}" for d in dies], alpha=0.85)
    ax2.axhline(1.0, color=BUDGET_COLOR, lw=1.5, ls="--", label="power budget (PB)")
    ax2.set_xlabel("time (us)")
    ax2.set_ylabel("mean current / PB")
    ax2.set_title("Per-die current (stacked)")
    ax2.legend(loc="upper right", fontsize=7, ncol=2)
    fig2.tight_layout()
    p2 = Path(f"{out_prefix}_dies.png")
    fig2.savefig(p2, dpi=120)
    plt.close(fig1)
    plt.close(fig2)
    return [p1, p2], (fig1, fig2)


def summary(cols):
    """Peak, mean and violations of a recording, as text lines."""
    pb = max(cols["pb"]) if cols["pb"] else 0
    peak = max(cols["total_max"])
    lines = [f"frames {len(cols['time_us'])} over {cols['time_us'][-1] - cols['time_us'][0]:.1f} us",
             f"peak summed current {peak:.3f} x I_max = {peak / pb:.3f} x PB (PB = {pb:.3f} x I_max)" if pb else
             f"peak summed current {peak:.3f} x I_max",
             f"windows over the budget {int(sum(cols['violations']))} of {int(sum(cols.get('windows', [0])))}"]
    return lines
