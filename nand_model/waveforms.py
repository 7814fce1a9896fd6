"""Die current waveforms: every operation as atomic operations, each a few piecewise-linear segments.

Current is in units of I_max (the program pre-charge peak of one die), time in nanoseconds at 40 ns
resolution. One description feeds the die emulator (current output), the token compiler (RTs per
atomic and sub-atomic operation) and the DCC model, so the three cannot disagree.

The default set is SYNTHETIC, shaped on the numbers the MTPM/KMTPM paper publishes, and fixed
here before any power experiment (experiments report their sensitivity to it; never tune it to a
result). Where each number comes from:

* Structure (Table I): program loop = execution (P_A1) + verify (P_A2, once per LSB loop, three
  times per MSB loop, Section IV-A); read = init setup (R_A1) + read execution (R_A2) + data out
  (R_A3); erase = execution (E_A1) + verify (E_A2).
* Times: tPROG LSB/MSB = loops x (execution + verifies) with 10 ISPP loops (Section IV-A). Two
  equations give execution and verify: with 770/1022 us, verify = 12.6 us, execution = 64.4 us.
  Parts without an MSB time take verify = 20 % of a loop (assumption). tR splits 20/80 between
  init setup and read execution (assumption); tBERS 90/10 between execution and verify
  (assumption). Data out lasts one page transfer at the interface rate (given by the caller).
* Peaks: program pre-charge is I_max; read peaks at 85.43 % and erase at 72.29 % of it (paper).
* Sub-atomic steps: levels fall monotonically inside each atomic operation so that the paper's
  500 ns monotone-merge rule yields 6 program, 8 read and 9 erase sub-atomic operations, and
  P_A1 gives 15/8/2 tokens at TG = 4 (Fig. 10). The levels between the published peaks and the
  fraction of each atomic operation a level lasts are assumptions, listed in LEVELS.
"""

import math
from dataclasses import dataclass, field

RESOLUTION_NS = 40
MERGE_INTERVAL_NS = 500

# (level in I_max, fraction of the atomic operation's duration), in time order. Assumptions except
# the peaks (first level of P_A1, R_A2, E_A1), which are the paper's.
LEVELS = {
    "P_A1": [(1.0, 0.15), (0.50, 0.55), (0.12, 0.30)],           # pre-charge, pulse, settle
    "P_A2": [(0.42, 0.30), (0.28, 0.50), (0.08, 0.20)],          # BL pre-charge, sense, discharge
    "R_A1": [(0.30, 0.50), (0.15, 0.50)],                        # BL discharge, buffer init
    "R_A2": [(0.8543, 0.20), (0.60, 0.25), (0.40, 0.25), (0.20, 0.30)],
    "R_A3": [(0.25, 0.50), (0.10, 0.50)],                        # data out (bus current on top)
    "E_A1": [(0.7229, 0.10), (0.60, 0.20), (0.45, 0.25), (0.30, 0.25), (0.15, 0.20)],
    "E_A2": [(0.40, 0.25), (0.30, 0.25), (0.20, 0.25), (0.08, 0.25)],
}
RAMP_NS = 400          # Every atomic operation starts with a linear ramp from 0 to its first level.
BUS_CURRENT = 0.04     # Added per transferred byte-cycle on the bus (data in/out), in I_max.


@dataclass(frozen=True)
class Segment:
    """Current from `i0` to `i1` (linear) over `duration_ns` (a multiple of 40 ns)."""
    duration_ns : int
    i0          : float
    i1          : float

    def at(self, t_ns):
        return self.i0 + (self.i1 - self.i0) * (t_ns / self.duration_ns)

    @property
    def peak(self):
        return max(self.i0, self.i1)


@dataclass
class Atomic:
    name     : str                 # P_A1, R_A2, ...
    segments : list = field(default_factory=list)

    @property
    def duration_ns(self):
        return sum(s.duration_ns for s in self.segments)

    @property
    def peak(self):
        return max(s.peak for s in self.segments)

    def samples(self, step_ns=RESOLUTION_NS):
        """Maximum current in each `step_ns` window (a linear segment peaks at an end)."""
        out = []
        for seg in self.segments:
            for t in range(0, seg.duration_ns, step_ns):
                out.append(max(seg.at(t), seg.at(min(t + step_ns, seg.duration_ns))))
        return out


def _quantize(ns):
    return max(RESOLUTION_NS, int(round(ns / RESOLUTION_NS)) * RESOLUTION_NS)


def _atomic(name, duration_ns):
    """Atomic operation `name` lasting `duration_ns`: its LEVELS with a ramp at the start; the last
    step absorbs the rounding so the total is exact at 40 ns resolution."""
    levels = LEVELS[name]
    # At least one 40 ns step per level.
    total = max(_quantize(duration_ns), RESOLUTION_NS * len(levels))
    ramp = min(RAMP_NS, total // 4 // RESOLUTION_NS * RESOLUTION_NS)
    segs = [Segment(ramp, 0.0, levels[0][0])] if ramp else []
    used = ramp
    for k, (level, frac) in enumerate(levels):
        if k == len(levels) - 1:
            d = total - used
        else:
            room = total - used - RESOLUTION_NS * (len(levels) - 1 - k)
            d = min(_quantize(frac * total - (ramp if k == 0 else 0)), room)
        segs.append(Segment(d, level, level))
        used += d
    assert used == total and all(s.duration_ns > 0 for s in segs), (name, duration_ns)
    return Atomic(name, segs)


def program_loop_times_us(part):
    """(execution, verify) of one ISPP loop in microseconds."""
    loops = part.ispp_loops
    if part.t_prog_lsb is not None and part.t_prog_msb is not None:
        verify = (part.t_prog_msb - part.t_prog_lsb) / (2 * loops)
        execution = part.t_prog_lsb / loops - verify
    else:
        loop = part.t_prog / loops
        verify, execution = 0.2 * loop, 0.8 * loop
    return execution, verify


def operation(part, kind, data_out_ns=None):
    """Atomic operations of one operation, in order: kind is program_lsb, program_msb, read, erase.

    A program is `ispp_loops` loops; each loop is P_A1 then one (LSB) or three (MSB) P_A2.
    """
    if kind in ("program_lsb", "program_msb"):
        execution, verify = program_loop_times_us(part)
        verifies = 3 if kind == "program_msb" else 1
        loop = [_atomic("P_A1", execution * 1000)] + [_atomic("P_A2", verify * 1000) for _ in range(verifies)]
        return loop * part.ispp_loops
    if kind == "read":
        out = data_out_ns if data_out_ns is not None else (part.page_size + part.spare_size) * 10
        return [_atomic("R_A1", 0.2 * part.t_r * 1000), _atomic("R_A2", 0.8 * part.t_r * 1000),
                _atomic("R_A3", out)]
    if kind == "erase":
        return [_atomic("E_A1", 0.9 * part.t_bers * 1000), _atomic("E_A2", 0.1 * part.t_bers * 1000)]
    raise ValueError(f"unknown operation '{kind}'; valid: program_lsb, program_msb, read, erase")


def subatomic_split(atomic, interval_ns=MERGE_INTERVAL_NS):
    """Sub-atomic operations of an atomic operation by the MTPM paper's rule (Section III-D2).

    The maximum current of every `interval_ns` interval is sampled; an interval whose maximum is
    equal to or above the current sub-atomic operation's joins it, a lower one starts a new one.
    Returns [(start_ns, end_ns, peak)] with peaks monotonically decreasing.
    """
    samples = atomic.samples()
    per = interval_ns // RESOLUTION_NS
    out = []
    for k in range(0, len(samples), per):
        peak = max(samples[k:k + per])
        t0, t1 = k * RESOLUTION_NS, min(k + per, len(samples)) * RESOLUTION_NS
        if out and peak >= out[-1][2] - 1e-12:
            # Rising or equal: the interval belongs to the sub-atomic operation being formed.
            s, _, p = out[-1]
            out[-1] = (s, t1, max(p, peak))
        else:
            out.append((t0, t1, peak))
    return out


def tokens(peak, tg):
    """Tokens of a current for one die at granularity TG (eq. 1 with I_token = I_max / (2^TG - 1))."""
    return math.ceil(peak * (2**tg - 1) - 1e-9)
