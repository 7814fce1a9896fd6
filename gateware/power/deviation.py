"""Per-die waveform deviation for the power harness (issue 18 b): a die whose real current differs
from the waveform the token tables were compiled from (process variation, aging).

A deviated die plays its phases at `level_pct` percent more (or less) current and with each
segment `stretch_pct` percent longer; its OIs, and the phase order, stay those of the nominal
die, so the ring node sees the same handshake. The token tables stay compiled from the nominal
waveform (nandlab.tokens): that mismatch is what the host's deviation experiment
(nandlab.deviation) measures, and what its adaptive tables correct through the run-time table
write, per node (`table_keep`: the nodes whose bit is set ignore a table write).
"""

import copy

from migen import Signal


def deviate_segments(segments, level_pct, stretch_pct):
    """(cycles, i0, slope) segments of a phase (nand_model/current.py, 12.12 fixed point) at
    (100 + level_pct) % of their current and (100 + stretch_pct) % of their cycles."""
    out = []
    for n, i0, slope in segments:
        end = i0 + slope * n
        m = max(1, (n * (100 + stretch_pct) + 50) // 100)
        a, b = i0 * (100 + level_pct) // 100, end * (100 + level_pct) // 100
        out.append((m, a, (b - a) // m))
    return out


def deviated_tables(tables, level_pct=0, stretch_pct=0):
    """A copy of `tables` (a PhaseTables) whose every phase is deviated; `tables` itself when both
    are 0 (the nominal die, the very same build)."""
    if not level_pct and not stretch_pct:
        return tables
    out = copy.copy(tables)
    out.ops = {op: ([_phase(ph, level_pct, stretch_pct) for ph in phases], loops)
               for op, (phases, loops) in tables.ops.items()}
    return out


def _phase(ph, level_pct, stretch_pct):
    """`ph` (a current.Phase) with its segments deviated."""
    new = copy.copy(ph)
    new.segments = deviate_segments(ph.segments, level_pct, stretch_pct)
    return new


def die_tables(deviation):
    """The harness's `die_tables` for `deviation` ({die: (level_pct, stretch_pct)}), or None."""
    if not deviation:
        return None
    return lambda tables, i: deviated_tables(tables, *deviation.get(i, (0, 0)))


def keep_wiring(harness, rings):
    """`harness.table_keep` (one bit per die: set, the die's node keeps its table on a write) and the
    statements giving each ring its dies' bits."""
    harness.table_keep = keep = Signal(len(harness.nodes))
    out, k = [], 0
    for r in rings:
        out.append(r.table_keep.eq(keep[k:k + len(r.nodes)]))
        k += len(r.nodes)
    return out
