"""`nandlab plot RECORDING`: figures of a telemetry recording (the CSV `nandlab.telemetry` writes).

Like Fig. 11 of the MTPM paper: the summed current normalised to the power budget over time with
the budget line at 1.0 and the periods that went over it marked; and a per-die stacked view of the
mean currents under the budget line.
"""

import csv
import math
import re
from pathlib import Path

from nandlab.errors import NandLabError

BUDGET_COLOR = "#d62728"


NEED = ("time_us", "total_max", "total_mean", "pb", "violations")
MAX_VALUE = 1e15            # far beyond any recording (microseconds, currents in I_max, counts)
_DIE_MEAN = re.compile(r"^die(\d+)_mean$")


def read_recording(path):
    """Columns of a recording CSV as lists of finite floats; refuses a file that is not one, naming the
    line: not text, lacking a column, a row with more or fewer fields than the header, a value that is
    not a finite number, a power budget (pb) that is not positive."""
    path = Path(path)
    if not path.exists():
        raise NandLabError(f"{path}: no such recording")
    if path.is_dir():
        raise NandLabError(f"{path} is a directory, not a recording (a CSV file)")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise NandLabError(f"cannot read {path}: {e.strerror or e}") from None
    return parse_recording(data, path)


def parse_recording(data, name="<recording>"):
    """Columns of recording CSV `data` (bytes), checked as `read_recording` says."""
    import io
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise NandLabError(f"{name}: not a telemetry recording (not text)") from None
    try:
        return _read_columns(csv.reader(io.StringIO(text, newline="")), name)
    except csv.Error as e:
        raise NandLabError(f"{name}: not a telemetry recording ({e})") from None


def _read_columns(reader, path):
    header = next(reader, None)
    missing = sorted(set(NEED) - set(header or []))
    if missing:
        raise NandLabError(f"{path}: not a telemetry recording (line 1 lacks the columns {', '.join(missing)})")
    twice = sorted({k for k in header if header.count(k) > 1})
    if twice:
        raise NandLabError(f"{path}, line 1: the column {twice[0]} appears twice")
    cols = {k: [] for k in header}
    for row in reader:
        line = reader.line_num
        if not row:
            continue
        if len(row) != len(header):
            raise NandLabError(f"{path}, line {line}: {len(row)} fields where the header has {len(header)}")
        for k, v in zip(header, row):
            try:
                x = float(v)
            except ValueError:
                raise NandLabError(f"{path}, line {line}: {k} = {_short(v)!r} is not a number") from None
            if not math.isfinite(x):
                raise NandLabError(f"{path}, line {line}: {k} = {v.strip()} is not a finite number")
            if abs(x) > MAX_VALUE:
                raise NandLabError(f"{path}, line {line}: {k} = {v.strip()} is out of range (at most {MAX_VALUE:g} "
                                   "either way)")
            cols[k].append(x)
        if cols["pb"][-1] <= 0:
            raise NandLabError(f"{path}, line {line}: pb = {row[header.index('pb')].strip()}: the power budget "
                               "must be positive")
    if not cols["time_us"]:
        raise NandLabError(f"{path}: the recording has no frames")
    return cols


def _short(text, n=24):
    return text if len(text) <= n else text[:n] + "..."


def figure_data(cols):
    """What the figures draw, normalised to the budget: time, peak, mean, frames over the budget, and each
    die's mean (by die number); refuses values whose ratios overflow."""
    t, pb = cols["time_us"], cols["pb"]
    peak = [m / p for m, p in zip(cols["total_max"], pb)]
    mean = [m / p for m, p in zip(cols["total_mean"], pb)]
    over = [(x, y) for x, y, v in zip(t, peak, cols["violations"]) if v > 0]
    dies = sorted((int(m.group(1)), m.group(0)) for m in map(_DIE_MEAN.match, cols) if m)
    stacks = [[m / p for m, p in zip(cols[name], pb)] for _, name in dies]
    dies = [n for n, _ in dies]
    stacked = [sum(v) for v in zip(*stacks)] if stacks else []
    if not all(map(math.isfinite, [max(t) - min(t), *peak, *mean, *stacked])):
        raise NandLabError("the recording's values are too large to draw (currents over the budget overflow)")
    return {"t": t, "peak": peak, "mean": mean, "over": over, "dies": dies, "stacks": stacks}


def plot_recording(path, out_prefix=None, title=None):
    """Writes <prefix>_current.png and <prefix>_dies.png; returns their paths and the figures. `title`
    (the run's parameters) goes above both figures' own titles."""
    cols = read_recording(path)
    out_prefix = Path(out_prefix) if out_prefix else Path(path).with_suffix("")
    if not out_prefix.parent.is_dir():
        raise NandLabError(f"cannot write {out_prefix}_*.png: no directory {out_prefix.parent}")
    d = figure_data(cols)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig1, fig2 = _current_figure(plt, d), _dies_figure(plt, d)
    if title:
        for fig in (fig1, fig2):
            fig.suptitle(title, fontsize=9)
            fig.tight_layout()
    paths = [Path(f"{out_prefix}_current.png"), Path(f"{out_prefix}_dies.png")]
    try:
        for fig, p in zip((fig1, fig2), paths):
            fig.savefig(p, dpi=120)
    except OSError as e:
        raise NandLabError(f"cannot write {p}: {e.strerror or e}") from None
    finally:
        plt.close(fig1)
        plt.close(fig2)
    return paths, (fig1, fig2)


def _current_figure(plt, d):
    t, peak, mean, over = d["t"], d["peak"], d["mean"], d["over"]
    fig1, ax = plt.subplots(figsize=(10, 4))
    ax.plot(t, peak, lw=0.8, color="#1f77b4", label="summed current, peak per frame")
    ax.plot(t, mean, lw=0.8, color="#7fb3d5", label="summed current, mean per frame")
    ax.axhline(1.0, color=BUDGET_COLOR, lw=1.5, ls="--", label="power budget (PB)")
    if over:
        ax.scatter([x for x, _ in over], [y for _, y in over], s=10, color=BUDGET_COLOR, marker="x", zorder=3,
                   label=f"over budget ({len(over)} frames)")
    ax.set_xlabel("time (us)")
    ax.set_ylabel("current / PB")
    ax.set_ylim(min(min(peak + mean) * 1.1, 0), max(max(peak) * 1.1, 1.2))
    ax.set_title("NAND current against the power budget")
    ax.legend(loc="upper right", fontsize=8)
    fig1.tight_layout()
    return fig1


def _dies_figure(plt, d):
    fig2, ax2 = plt.subplots(figsize=(10, 4))
    if d["dies"]:
        ax2.stackplot(d["t"], *d["stacks"], labels=[f"die {n}" for n in d["dies"]], alpha=0.85)
    ax2.axhline(1.0, color=BUDGET_COLOR, lw=1.5, ls="--", label="power budget (PB)")
    ax2.set_xlabel("time (us)")
    ax2.set_ylabel("mean current / PB")
    ax2.set_title("Per-die current (stacked)")
    ax2.legend(loc="upper right", fontsize=7, ncol=2)
    fig2.tight_layout()
    return fig2


def summary(cols):
    """Peak, mean and violations of a recording, as text lines."""
    pb = max(cols["pb"]) if cols["pb"] else 0
    peak = max(cols["total_max"])
    lines = [f"frames {len(cols['time_us'])} over {cols['time_us'][-1] - cols['time_us'][0]:.1f} us",
             f"peak summed current {peak:.3f} x I_max = {peak / pb:.3f} x PB (PB = {pb:.3f} x I_max)" if pb else
             f"peak summed current {peak:.3f} x I_max",
             f"windows over the budget {int(sum(cols['violations']))} of {int(sum(cols.get('windows', [0])))}"]
    return lines
