"""Die current waveforms: every operation as atomic operations, each a few piecewise-linear segments.

Current is in units of I_max (the program pre-charge peak of one die), time in nanoseconds at 40 ns
resolution. One description feeds the die emulator (current output), the token compiler (RTs per
atomic and sub-atomic operation) and the DCC model, so the three cannot disagree.

The default set is SYNTHETIC, shaped on the numbers the MTPM/KMTPM paper publishes, and fixed
here before any power experiment (experiments report their sensitivity to it; never tune it to a
result). docs/power_waveforms.md lists every number with its source (its tables are checked against
this module); `WaveformScales` is the sensitivity sweep's factors on the assumed ones. In short:

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

import copy
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
# Durations inside operations (assumptions, docs/power_waveforms.md): verifies per MSB loop (LSB: 1),
# a loop's verify share when the part has no MSB time, tR as (init setup, read execution), tBERS as
# (execution, verify).
MSB_VERIFIES = 3
VERIFY_SHARE_NO_MSB = 0.2
READ_SPLIT = (0.2, 0.8)
ERASE_SPLIT = (0.9, 0.1)


@dataclass(frozen=True)
class WaveformScales:
    """Factors on the waveform quantities the sensitivity sweep varies (`nandlab experiment power --sweep`);
    all 1.0 is the fixed set above, bit for bit. A part carries them (`scaled_part`), so the die's tables,
    the token compiler, DCC's models and the channel all see the same waveform.

      precharge  duration of P_A1's pre-charge (its first level's share); the pulse level after it
                 gives or takes the difference, so the loop time (Table IV) stays the same
      level2     P_A1's second (post-peak, pulse) level
      transfer   the bus current of a page transfer (BUS_CURRENT), at the same rate
      rate       the bus's byte rate: transfers take 1 / rate as long and draw rate x the current
                 (the same charge per byte)"""
    precharge : float = 1.0
    level2    : float = 1.0
    transfer  : float = 1.0
    rate      : float = 1.0

    # Ranges that keep the waveform's structure: the pulse keeps >= 10 % of P_A1 (precharge <= 4),
    # level2 stays at or below the pre-charge peak (I_max, eq. 2) and above the settle level.
    RANGES = {"precharge": (0.25, 4.0), "level2": (0.25, 2.0), "transfer": (0.25, 4.0), "rate": (0.25, 4.0)}

    def check(self):
        for name, (lo, hi) in self.RANGES.items():
            v = getattr(self, name)
            if not (math.isfinite(v) and lo <= v <= hi):
                raise ValueError(f"{name} scale {v:g} is out of range {lo:g}..{hi:g}")
        return self


def scaled_part(part, scales):
    """A copy of `part` whose waveforms are scaled by `scales` (a WaveformScales); `part` itself when
    there is nothing to scale."""
    if scales is None or scales == WaveformScales():
        return part
    out = copy.copy(part)
    out.waveform_scales = scales.check()
    return out


def scales_of(part):
    return getattr(part, "waveform_scales", None) or WaveformScales()


def levels(part):
    """LEVELS with `part`'s scales applied (the LEVELS object itself when unscaled)."""
    s = scales_of(part)
    if s.precharge == 1.0 and s.level2 == 1.0:
        return LEVELS
    (peak, pre), (pulse, rest), settle = LEVELS["P_A1"]
    extra = pre * (s.precharge - 1)
    return {**LEVELS, "P_A1": [(peak, pre * s.precharge), (pulse * s.level2, rest - extra), settle]}


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


def _atomic(name, duration_ns, table=LEVELS):
    """Atomic operation `name` lasting `duration_ns`: its levels in `table` (LEVELS, or `levels(part)`)
    with a ramp at the start; the last step absorbs the rounding so the total is exact at 40 ns
    resolution."""
    levels = table[name]
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
        verify, execution = VERIFY_SHARE_NO_MSB * loop, (1 - VERIFY_SHARE_NO_MSB) * loop
    return execution, verify


def operation(part, kind, data_out_ns=None):
    """Atomic operations of one operation, in order: kind is program_lsb, program_msb, read, erase.

    A program is `ispp_loops` loops; each loop is P_A1 then one (LSB) or three (MSB) P_A2.
    """
    table = levels(part)
    if kind in ("program_lsb", "program_msb"):
        execution, verify = program_loop_times_us(part)
        verifies = MSB_VERIFIES if kind == "program_msb" else 1
        loop = [_atomic("P_A1", execution * 1000, table)] + \
            [_atomic("P_A2", verify * 1000, table) for _ in range(verifies)]
        return loop * part.ispp_loops
    if kind == "read":
        out = data_out_ns if data_out_ns is not None else (part.page_size + part.spare_size) * 10
        return [_atomic("R_A1", READ_SPLIT[0] * part.t_r * 1000, table),
                _atomic("R_A2", READ_SPLIT[1] * part.t_r * 1000, table), _atomic("R_A3", out, table)]
    if kind == "erase":
        return [_atomic("E_A1", ERASE_SPLIT[0] * part.t_bers * 1000, table),
                _atomic("E_A2", ERASE_SPLIT[1] * part.t_bers * 1000, table)]
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
