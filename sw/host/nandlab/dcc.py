"""DCC baseline (dynamic current capping, Chang, Cheng and Lin, ASP-DAC 2017; the slides in the papers
folder): corner-based current models and the scheduler that starts each operation at the earliest
time at which the summed models stay under the cap.

The scheduler itself is C (`sw/firmware/dcc.c`: the firmware links it, the experiment harness
compiles it into its Verilator main). This module builds its models from the die's waveform tables
(`PhaseTables`, the tables the emulator plays, so model and die cannot disagree) and holds an
independent, brute-force reference of the scheduler that the tests compare the C code with.

A model is a staircase of (cycles, level) pieces, level in I_max / 4096, starting in the cycle the
harness starts the operation (the die's first decision cycle follows it). Every piece bounds the
die's current from above over its cycles, so a schedule under the cap is a die current under it.
How coarse the corners are is the model's granularity:

* ``segment``: a corner at every junction of the waveform's linear segments (a ramp counts at its
  top): the model is the die's current up to the ramps - the slides' corner-based piecewise-linear
  model, DCC with a perfect model - the default;
* ``atomic``: one flat piece per atomic operation at its peak (a program loop is P_A1 then one or three
  P_A2): the few corners per operation a controller's table holds (the MTPM paper puts DCC at 82
  bytes of operation information) - the "flat" model (policies dcc_flat, dcc_fw_flat);
* ``operation``: one piece per operation at its peak.
"""

from nandlab.errors import NandLabError
from nandlab.nand_model.current import ACC_FRAC, OPS

GRANULARITIES = ["segment", "atomic", "operation"]
DEFAULT_GRANULARITY = "segment"


def _phase_pieces(phase):
    """[(cycles, level)] of one phase: its decision cycle at 0, then each segment at its top."""
    out = [(1, 0)]
    for n, i0, slope in phase.segments:
        first, last = i0 >> ACC_FRAC, (i0 + (n - 1) * slope) >> ACC_FRAC
        out.append((n, max(first, last)))
    return out


def _merge(pieces):
    out = []
    for n, level in pieces:
        if n == 0:
            continue
        if out and out[-1][1] == level:
            out[-1] = (out[-1][0] + n, level)
        else:
            out.append((n, level))
    return out


def corner_model(tables, op, granularity=DEFAULT_GRANULARITY):
    """The staircase model of operation `op` (read, program_lsb, program_msb, erase)."""
    if granularity not in GRANULARITIES:
        raise NandLabError(f"DCC model granularity '{granularity}' is not one of {', '.join(GRANULARITIES)}")
    phases = tables.phases(op)
    # The start cycle itself: the die leaves IDLE; its current is 0.
    pieces = [(1, 0)]
    if granularity == "segment":
        for ph in phases:
            pieces += _phase_pieces(ph)
    elif granularity == "atomic":
        group = []
        for ph in phases + [None]:
            if group and (ph is None or ph.first):
                flat = [p for g in group for p in _phase_pieces(g)]
                pieces.append((sum(n for n, _ in flat), max(level for _, level in flat)))
                group = []
            if ph is not None:
                group.append(ph)
    else:
        flat = [p for ph in phases for p in _phase_pieces(ph)]
        pieces.append((sum(n for n, _ in flat), max(level for _, level in flat)))
    return _merge(pieces)


def models(tables, granularity=DEFAULT_GRANULARITY):
    """Models of every operation kind, in the die's op-code order (nand_model.current.OPS)."""
    return [corner_model(tables, op, granularity) for op in OPS]


def check_cap(model_list, cap):
    """Refuse a cap below a model's peak: that operation could never start."""
    for op, m in zip(OPS, model_list):
        peak = max(level for _, level in m)
        if peak > cap:
            raise NandLabError(f"DCC: a {op} peaks at {peak / 4096:.3f} I_max, above the cap of {cap / 4096:.3f} "
                               f"I_max: it could never start")


class ReferenceScheduler:
    """Brute force, cycle by cycle: the earliest start at which the summed staircases stay under the
    cap, by trying every start. Slow; for checking the C scheduler on small models."""
    def __init__(self, cap, model_list):
        check_cap(model_list, cap)
        self.cap = cap
        self.models = [[lv for n, lv in m for _ in range(n)] for m in model_list]
        self.res = []          # (start, op)

    def load(self, t):
        total = 0
        for s, op in self.res:
            m = self.models[op]
            if s <= t < s + len(m):
                total += m[t - s]
        return total

    def schedule(self, op, now):
        m = self.models[op]
        s = now
        while any(self.load(s + k) + lv > self.cap for k, lv in enumerate(m)):
            s += 1
        self.res.append((s, op))
        return s
