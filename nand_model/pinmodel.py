"""Pin-level die model: emulated dies behind the pin PHY's simulated pins, with per-lane skew, the chip's output timings and the delay lines.

Why a sampled model and not a fast clock
========================================
What a DDR input register captures depends on where, inside a 5 ns phase, a lane's data eye lies
(tens of ps: a delay tap is 78 ps on IDELAYE2, 25 ps on DELAYF). An oversampled pin clock at tap
resolution would need 64-200 evaluations of the whole Verilated SoC per system cycle; Verilator
`--timing` delays would need the model to own simulated time, which litex_sim advances from its
clocker module one clock edge at a time, and the delays change at run time (taps, per-run skew).
But every level in this system changes only at phase boundaries: the die's outputs are per phase of
the sys clock, and the sample points are the two clock edges. So the model computes, once per cycle and in integer ps,
which phase's level each DDR input register sees at each edge and whether it falls inside that
level's valid window; the pins reach the PHY as those samples (`pinphy.sim_pads(phased=True)`).
That is exact for the piecewise-constant waveform below, costs a few adders per lane, and
the taps are read from the PHY's own tap registers, so the calibration CSRs move the sample point.

The timing of a lane
====================
The die launches a byte (a DQS level) at the start of each phase. On lane i it is valid at the
FPGA pin from `delay + start` to `delay + end` after that phase boundary (ps), where

* `delay` = the chip's output delay (tDQSCK in NV-DDR: CLK to DQS) + the lane's board skew;
* `start` = the lane's tDQSQ (DQ valid after DQS, 0 .. tDQSQ max; 0 on DQS itself);
* `end`   = its data hold tQH (tHP - tQHS .. tHP; on DQS the level time tDQSH/L, 0.8 .. 1 phase).

Outside that window the level is in transition: in NV-DDR data output (each phase a new byte) the
sample is unknown, a pseudo-random bit; elsewhere (async/sync SDR hold a byte over several phases,
the bus is idle) it is the level before the transition. The delay line delays the pin by
`taps x tap_ps` before the register, so the sample at an edge reads the pin that much earlier: at
r = P - delay - taps x tap_ps after the boundary of the phase ending at the edge (P = half the sys
period), i.e. in the level launched `back` whole phases before that phase, at f = r + back x P in
(0, P] of it (`lane_sample`); inside the window when start <= f <= end.

What reads right: the controller takes an NV-DDR byte where it sees DQS toggle
(gateware/onfi/controller/beat_engine.py, `_nvddr_answers`: a toggle in any phase of the data output
takes that phase's byte for the oldest outstanding ask; an ask stays outstanding for the read latency
plus tDQSCK max and the board, 26 ns, and one with no answer by then is asked again). A chip whose DQ
and DQS are all whole phases late, up to that limit, is therefore read right in every NV-DDR mode. Only
two things matter:

* DQS at its tap samples its level inside its window (`dqs_phase`); the toggles it shows are then
  those of the phase launched `back` whole phases before, whatever the mode;
* a DQ lane at its tap samples, inside its window, the byte of the same launched phase as the
  toggle DQS's sample shows (`reads_right`: the same `back`). Any other phase, or an unknown
  sample, is wrong.

The latest sample the model takes (`max_lane_delay` plus the longest delay line) is at most
HISTORY - 2 phases back, within the lateness the controller absorbs (controller/common.py, `dqs_late_phases`).

The taps only move a lane's sample earlier in its data, less than a phase over the whole line
(2.4 ns on IDELAYE2, 3.2 ns on DELAYF). A draw whose lanes' eyes sit in different launched phases
at every tap DQS can take has no way to train (`trainable`: a lane straddles a phase boundary the
taps cannot bridge). The firmware's procedure (sw/firmware/train.c, three passes) is modelled by
`training`; `expected_window` / `expected_windows` give the windows it should find, `training(...).error`
the reason it should fail. Untrained (every tap 0) a DQ lane reads right only when DQS's and its
samples at tap 0 are both valid and of the same phase.

Ranges (`random_lane_timings`), NV-DDR, per mode (ONFI NV-DDR table: tDQSQ max 5.0/2.5/1.7/1.3/1.0/
0.85 ns, tQHS max 6.0/3.0/2.0/1.5/1.2/1.0 ns, modes 0-5): the emulated die gives a byte per phase
whatever the mode, so below mode 5 the mode's tDQSQ/tQHS are scaled by P / (tCK/2) to the phase.
The chip's output delay is drawn in OUT_DELAY_MIN_PS .. OUT_DELAY_MAX_PS: ONFI's tDQSCK, 3 .. 25 ns in
every NV-DDR mode (Linux drivers/mtd/nand/raw/nand_timings.c, onfi_nvddr_timings: tDQSCK_min 3000,
tDQSCK_max 25000 ps), up to 5 phases at 100 MHz; each lane's board skew in 0 .. SKEW_MAX_PS. The model keeps
HISTORY phases of die output, enough for the latest lane at the last tap (`max_lane_delay`). The lane's
delay applies in async SDR too, where the chip's access time is tREA (`sdr_access`): the async corners
give the lanes ASYNC_OUT_DELAY_PS (`worst_case_lane_timings(out_delay=)`).
"""

import random
from dataclasses import dataclass

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRField, CSRStorage

from nandlab.gateware.onfi.common import NVDDR_TCK_NS
from nandlab.gateware.onfi.pinphy import DELAY_TAP_PS, DELAY_TAPS, DQS_LANE, LANES
from nandlab.nand_model.pinwrite import NandLabPinWrite

NVDDR_TDQSQ_PS = [5000, 2500, 1700, 1300, 1000, 850]
NVDDR_TQHS_PS  = [6000, 3000, 2000, 1500, 1200, 1000]
OUT_DELAY_MIN_PS = 3000      # ONFI NV-DDR tDQSCK min / max, every mode (Linux nand_timings.c, onfi_nvddr_timings).
OUT_DELAY_MAX_PS = 25000
ASYNC_OUT_DELAY_PS = 2000    # Async SDR corners: tREA (sdr_access) is the chip's access time; this, the lanes'.
SKEW_MAX_PS      = 1000
DQS_LEVEL_MIN    = 0.8       # tDQSH / tDQSL min (0.4 tCK) of the half period.
HISTORY          = 8         # Phases of die output the model keeps (max_lane_delay).
PS_BITS          = 16        # Per-lane parameters in ps (CSR fields).
LANE_NAMES       = [f"DQ{i}" for i in range(8)] + ["DQS"]


@dataclass(frozen=True)
class LaneTiming:
    """When lane's level is valid at the FPGA pin, after the phase boundary that launches it (ps)."""
    delay: int
    start: int
    end:   int


def phase_ps(sys_clk_freq):
    return int(round(1e12 / sys_clk_freq / 2))


def ideal_lanes(sys_clk_freq=100e6):
    """A chip and board without delay or skew, eyes the whole phase: the emulated channel's timing."""
    p = phase_ps(sys_clk_freq)
    return [LaneTiming(1, 0, p)] * LANES


def random_lane_timings(seed, mode=5, sys_clk_freq=100e6):
    """One chip and board drawn from the ranges (module documentation), reproducible from `seed`."""
    rng = random.Random(seed)
    p = phase_ps(sys_clk_freq)
    scale = p / (NVDDR_TCK_NS[mode] * 500)          # The emulated byte is a phase, the chip's tCK/2.
    tdqsq, tqhs = int(NVDDR_TDQSQ_PS[mode] * scale), int(NVDDR_TQHS_PS[mode] * scale)
    out = rng.randint(OUT_DELAY_MIN_PS, OUT_DELAY_MAX_PS)
    lanes = []
    for lane in range(LANES):
        delay = out + rng.randint(0, SKEW_MAX_PS)
        if lane == DQS_LANE:
            lanes.append(LaneTiming(delay, 0, rng.randint(int(DQS_LEVEL_MIN * p), p)))
        else:
            lanes.append(LaneTiming(delay, rng.randint(0, tdqsq), rng.randint(p - tqhs, p)))
    return lanes


def sdr_worst_case(mode):
    """(sdr_access, sdr_hold) CSR values of async SDR `mode`'s worst case: tREA at its maximum, tRHOH and
    tRLOH at their minima (ONFI), enabled."""
    from nandlab.gateware.onfi.common import SDR_TREA_NS, SDR_TRHOH_NS, SDR_TRLOH_NS
    return SDR_TREA_NS[mode] * 1000 | SDR_TRHOH_NS[mode] * 1000 << PS_BITS, SDR_TRLOH_NS[mode] * 1000 | 1 << PS_BITS


def worst_case_lane_timings(mode=5, late="dq", sys_clk_freq=100e6, out_delay=OUT_DELAY_MAX_PS):
    """The corner of the ranges (module documentation) for NV-DDR `mode`: the chip's output delay at its
    maximum (tDQSCK max; `out_delay` another, e.g. ASYNC_OUT_DELAY_PS where tDQSCK does not apply), the board
    skew at its maximum on the DQ lanes (`late` = "dq") or on DQS ("dqs") and 0 on the others, every DQ window
    its narrowest (tDQSQ max to tHP - tQHS max) and DQS's level time its shortest."""
    if late not in ("dq", "dqs"):
        raise ValueError(f"late '{late}': dq or dqs")
    p = phase_ps(sys_clk_freq)
    scale = p / (NVDDR_TCK_NS[mode] * 500)
    tdqsq, tqhs = int(NVDDR_TDQSQ_PS[mode] * scale), int(NVDDR_TQHS_PS[mode] * scale)
    dq_skew, dqs_skew = (SKEW_MAX_PS, 0) if late == "dq" else (0, SKEW_MAX_PS)
    dq = LaneTiming(out_delay + dq_skew, tdqsq, p - tqhs)
    return [dq] * DQS_LANE + [LaneTiming(out_delay + dqs_skew, 0, int(DQS_LEVEL_MIN * p))]


def lane_sample(t, taps, family, sys_clk_freq=100e6):
    """(back, valid): at a clock edge, lane `t` at `taps` samples the level launched `back` whole phases
    before the phase that ends at that edge, inside its valid window (`valid`) or in its transition."""
    p = phase_ps(sys_clk_freq)
    r = p - t.delay - taps * DELAY_TAP_PS[family]
    back = 0 if r > 0 else -r // p + 1
    f = r + back * p
    return back, back <= HISTORY - 2 and t.start <= f <= t.end


def dqs_phase(dqs, taps, family, sys_clk_freq=100e6):
    """The launched phase (whole phases back, as `lane_sample`) whose toggles the controller counts when DQS's
    lane `dqs` is at `taps`, or None when its sample is off DQS's level (in its transition: unknown, so the
    controller counts toggles that are not there)."""
    back, valid = lane_sample(dqs, taps, family, sys_clk_freq)
    return back if valid else None


def reads_right(dq, dqs, taps, dqs_taps, family, sys_clk_freq=100e6):
    """Whether DQ lane `dq` at `taps` reads right with the DQS lane `dqs` at `dqs_taps`: it samples, inside its
    valid window, the byte of the same launched phase whose toggle DQS's sample shows (`dqs_phase`)."""
    want = dqs_phase(dqs, dqs_taps, family, sys_clk_freq)
    back, valid = lane_sample(dq, taps, family, sys_clk_freq)
    return want is not None and valid and back == want


def _longest_run(passes):
    """train.c's window(): the longest run of passing taps (the first of equals) as (first, last), or None."""
    best, start = None, None
    for k, ok in enumerate(list(passes) + [False]):
        if ok and start is None:
            start = k
        elif not ok and start is not None:
            if best is None or k - 1 - start > best[1] - best[0]:
                best = (start, k - 1)
            start = None
    return best


@dataclass(frozen=True)
class Training:
    """What the firmware's read training (sw/firmware/train.c, `train_die`) finds on lanes of the model: per
    lane (DQ0-7, DQS) the taps that pass (DQ: pass 3, DQS: pass 2, as `train eye` reports them), the window
    (None: none) and the centre set; `error` is the firmware's reason when it fails (None: trained)."""
    passes:  tuple
    windows: tuple
    taps:    tuple
    error:   str = None


def training(lanes, family, sys_clk_freq=100e6):
    """The firmware's passes on `lanes`, with the model's reads (`reads_right`) in place of the reads:
    1. every lane at the same tap: each DQ lane's window (with DQS moving along), centres set;
    2. DQS alone, the DQ lanes with a pass-1 window at their centres: at each tap, which of them read right;
       each run of taps with the same nonempty set is a candidate window (DQS shows one launched phase there);
    3. for each candidate, longest first (the first of equals), DQS at its centre, the DQ lanes swept
       together: each DQ lane's own window; the first candidate that gives every DQ lane one is kept."""
    n = DELAY_TAPS[family]
    dq, dqs = lanes[:DQS_LANE], lanes[DQS_LANE]

    def right(b, k, s):
        return reads_right(dq[b], dqs, k, s, family, sys_clk_freq)

    def result(passes, windows, taps, error=None):
        return Training(tuple(tuple(p) for p in passes), tuple(windows), tuple(taps), error)

    w1 = [_longest_run([right(b, k, k) for k in range(n)]) for b in range(DQS_LANE)]
    need = {b: (w[0] + w[1]) // 2 for b, w in enumerate(w1) if w}
    if not need:
        return result([[False] * n] * LANES, [None] * LANES, [-1] * LANES,
                      "no tap at which any DQ lane reads right with DQS at the same tap")
    sets = [frozenset(b for b, c in need.items() if right(b, c, k)) for k in range(n)]
    runs, k = [], 0
    while k < n:
        e = k
        while e + 1 < n and sets[e + 1] == sets[k]:
            e += 1
        if sets[k]:
            runs.append((k, e))
        k = e + 1
    if not runs:
        return result([[False] * n] * LANES, w1 + [None], [-1] * LANES, "lane DQS: no window")
    for lo, hi in sorted(runs, key=lambda w: -(w[1] - w[0])):        # (sorted is stable: first of equals)
        s = (lo + hi) // 2
        p3 = [[right(b, k, s) for k in range(n)] for b in range(DQS_LANE)]
        w3 = [_longest_run(p) for p in p3]
        taps = [(w[0] + w[1]) // 2 if w else 0 for w in w3] + [s]
        p2 = [sets[k] == sets[lo] for k in range(n)]
        if all(w3):
            return result(p3 + [p2], w3 + [(lo, hi)], taps)
    return result(p3 + [p2], w3 + [(lo, hi)], taps,
                  "no DQS window at which every DQ lane has one: a lane straddles a phase boundary the taps cannot bridge")


def expected_windows(lanes, family, sys_clk_freq=100e6):
    """Per lane (DQ0-7, DQS), the (first, last) tap of the window the firmware's training should find on
    `lanes` (`training`), or None where it finds none."""
    return list(training(lanes, family, sys_clk_freq).windows)


def expected_window(lanes, lane, family, sys_clk_freq=100e6):
    """Lane `lane`'s window of `expected_windows`."""
    return expected_windows(lanes, family, sys_clk_freq)[lane]


def trainable(lanes, family, sys_clk_freq=100e6):
    """Whether any taps at all read every DQ lane right: some launched phase that DQS shows at a tap and that
    every DQ lane samples inside its window at a tap. False: a lane straddles a phase boundary the taps
    cannot bridge (or DQS's toggles land where the controller does not count them)."""
    n = DELAY_TAPS[family]
    shown = {dqs_phase(lanes[DQS_LANE], k, family, sys_clk_freq) for k in range(n)} - {None}
    sampled = [{back for back, valid in (lane_sample(t, k, family, sys_clk_freq) for k in range(n)) if valid}
               for t in lanes[:DQS_LANE]]
    return any(all(back in s for s in sampled) for back in shown)


def lanes_from_text(text):
    """Lane timings from "delay:start:end,..." (9 lanes, ps), for explicit runs."""
    parts = text.split(",")
    if len(parts) != LANES:
        raise ValueError(f"pin model lanes '{text}': give {LANES} lanes (DQ0-7, DQS) as delay:start:end in ps")
    lanes = []
    for i, part in enumerate(parts):
        try:
            delay, start, end = (int(v) for v in part.split(":"))
        except ValueError:
            raise ValueError(f"pin model lane {LANE_NAMES[i]} '{part}': delay:start:end, whole ps") from None
        check_lane(LaneTiming(delay, start, end), LANE_NAMES[i])
        lanes.append(LaneTiming(delay, start, end))
    return lanes


def max_lane_delay(sys_clk_freq=100e6):
    """The longest lane delay the model takes: sampled inside its HISTORY phases at every tap of either
    delay line (the sample at the last tap goes back (HISTORY - 2) phases at most)."""
    reach = max((DELAY_TAPS[f] - 1) * DELAY_TAP_PS[f] for f in DELAY_TAPS)
    return (HISTORY - 2) * phase_ps(sys_clk_freq) - reach


def check_lane(t, name, sys_clk_freq=100e6):
    p = phase_ps(sys_clk_freq)
    top = max_lane_delay(sys_clk_freq)
    if not 0 < t.delay <= top:
        raise ValueError(f"pin model lane {name}: delay {t.delay} ps, the model takes 1 .. {top}")
    if not 0 <= t.start <= t.end <= p:
        raise ValueError(f"pin model lane {name}: window {t.start}..{t.end} ps, needs 0 <= start <= end <= {p}")


# (HISTORY holds the latest chip in the ranges at 100 MHz, the fastest system clock the SoC is built for here.)
assert OUT_DELAY_MAX_PS + SKEW_MAX_PS <= max_lane_delay(100e6)


class NandLabPinModel(LiteXModule):
    """The die side of the pins: `pads` (pinphy.sim_pads(phased=True)) to the dies' channel bus
    `die_bus` (a NandBus: controller side of a NandChannel), DQ/DQS back as the samples the PHY's DDR
    input registers take after each lane's delay line (`taps`: the PHY's tap registers, `family`'s
    tap delay). `drive` (per phase): a die gives NV-DDR data output (each phase a new byte), where a
    sample outside a lane's window is unknown. `lanes`: the lane timings at reset (LaneTiming each;
    CSRs `lane<i>_delay` / `lane<i>_window` after add_csr() change them at run time).

    `sdr` (high while the selected die is in async SDR) with the `sdr_access` / `sdr_hold` CSRs enabled: the chip's
    async data output timing on every DQ lane, after the lane's delay: a byte the die gives at RE#'s
    falling edge is on the pins from `trea` after it (tREA: before that, the previous byte for `trloh`,
    then unknown) until `trhoh` after RE# rose (tRHOH; then unknown until the next byte). Disabled (the
    reset), the byte is there from the lane's delay on, as before.

    The write side (NV-DDR data input at the die's pins: per-lane write skew, tDS / tDH, the PHY's DQS
    `dqs_shift_ps`) is `self.write`, a nand_model.pinwrite.NandLabPinWrite, off at reset."""
    def __init__(self, pads, die_bus, taps, family, sys_clk_freq, lanes=None, drive=None, sdr=None, dqs_shift_ps=0,
                 dq_next=None):
        lanes = lanes or ideal_lanes(sys_clk_freq)
        for i, t in enumerate(lanes):
            check_lane(t, LANE_NAMES[i], sys_clk_freq)
        self.lanes, self.sys_clk_freq = lanes, sys_clk_freq
        self.delay = [Signal(PS_BITS, reset=t.delay, name=f"delay{i}") for i, t in enumerate(lanes)]
        self.start = [Signal(PS_BITS, reset=t.start, name=f"start{i}") for i, t in enumerate(lanes)]
        self.end   = [Signal(PS_BITS, reset=t.end,   name=f"end{i}")   for i, t in enumerate(lanes)]
        self.drive = drive if drive is not None else Signal(2)
        self.sdr = sdr if sdr is not None else Signal()
        self.sdr_on = Signal()
        self.trea, self.trhoh, self.trloh = Signal(PS_BITS), Signal(PS_BITS), Signal(PS_BITS)

        # # #

        p = phase_ps(sys_clk_freq)
        tap_ps = DELAY_TAP_PS[family]
        # Controller to die: the pins' levels in each half of the cycle are the die bus's phases.
        self.comb += [
            die_bus.ce_n.eq(pads.ce_n), die_bus.cle.eq(pads.cle), die_bus.ale.eq(pads.ale),
            die_bus.we_n.eq(pads.we_n), die_bus.re_n.eq(pads.re_n), die_bus.wp_n.eq(pads.wp_n),
            die_bus.dq_oe.eq(pads.dq_oe),
            die_bus.dqs_o.eq(pads.dqs_o), die_bus.dqs_oe.eq(pads.dqs_oe),
            pads.rb_n.eq(die_bus.rb_n),
        ]
        # Controller to die, NV-DDR data input: DQ as the die takes it at its DQS edges (nand_model.pinwrite).
        self.write = NandLabPinWrite(pads.dq_o, pads.dqs_o, pads.dqs_oe, die_bus.dq_o, p, dqs_shift_ps, dq_next)
        # Unknown samples: a 32-bit Galois LFSR, a different bit per lane and edge.
        lfsr = Signal(32, reset=0xACE1_2468)
        self.sync += lfsr.eq(Mux(lfsr[0], (lfsr >> 1) ^ 0x8020_0003, lfsr >> 1))
        # Drive history (phases): index 0 = phase 1 of this cycle, 1 = phase 0, 2 = phase 1 of the last...
        drv_reg = Signal(HISTORY)
        drv = Cat(self.drive[1], self.drive[0], drv_reg)
        self.sync += drv_reg.eq(drv[:HISTORY])

        # Async SDR: phases since RE# last fell / rose, as of the end of each phase of this cycle
        # (saturating), from the pins' RE# levels.
        top = 1 << 6
        re_prev = Signal(reset=1)
        n_fall_reg, n_rise_reg = Signal(max=top + 1, reset=top), Signal(max=top + 1, reset=top)
        n_fall = [Signal(max=top + 1, name=f"n_fall{e}") for e in range(2)]
        n_rise = [Signal(max=top + 1, name=f"n_rise{e}") for e in range(2)]
        re_before = [re_prev, pads.re_n[0]]
        for e in range(2):
            last_f, last_r = (n_fall_reg, n_rise_reg) if e == 0 else (n_fall[0], n_rise[0])
            self.comb += [
                n_fall[e].eq(Mux(re_before[e] & ~pads.re_n[e], 1, Mux(last_f == top, top, last_f + 1))),
                n_rise[e].eq(Mux(~re_before[e] & pads.re_n[e], 1, Mux(last_r == top, top, last_r + 1))),
            ]
        self.sync += [re_prev.eq(pads.re_n[1]), n_fall_reg.eq(n_fall[1]), n_rise_reg.eq(n_rise[1])]
        fall_at = [re_before[e] & ~pads.re_n[e] for e in range(2)]

        for lane in range(LANES):
            if lane == DQS_LANE:
                level = [die_bus.dqs_i[0], die_bus.dqs_i[1]]
                own   = [pads.dqs_o[0], pads.dqs_o[1]]
                oe    = pads.dqs_oe
                s     = [pads.dqs_s[0], pads.dqs_s[1]]
            else:
                level = [die_bus.dq_i[lane], die_bus.dq_i[8 + lane]]
                own   = [pads.dq_o[lane], pads.dq_o[8 + lane]]
                oe    = pads.dq_oe
                s     = [pads.dq_s[lane], pads.dq_s[8 + lane]]
            hist_reg = Signal(HISTORY, name=f"hist{lane}")
            hist = Cat(level[1], level[0], hist_reg)
            self.sync += hist_reg.eq(hist[:HISTORY])
            # r: where, after the boundary of the phase that ends at the edge, the sample falls in the
            # data's time; back = whole phases before that boundary, f in (0, P] the offset in its phase.
            r    = Signal((PS_BITS + 3, True), name=f"r{lane}")
            back = Signal(max=HISTORY, name=f"back{lane}")
            f    = Signal((PS_BITS + 3, True), name=f"f{lane}")
            self.comb += r.eq(p - self.delay[lane] - self.taps_ps(taps[lane], tap_ps))
            chain = If(r > 0, back.eq(0), f.eq(r))
            for k in range(1, HISTORY - 1):
                chain = chain.Elif(r > -k * p, back.eq(k), f.eq(r + k * p))
            chain = chain.Else(back.eq(HISTORY - 2), f.eq(0))     # Out of the history: unknown.
            self.comb += chain
            valid  = Signal(name=f"valid{lane}")
            before = Signal(name=f"before{lane}")
            self.comb += [
                valid.eq((f > 0) & (f >= self.start[lane]) & (f <= self.end[lane])),
                before.eq(f < self.start[lane]),
            ]
            hist_a = Array(hist[k] for k in range(HISTORY + 2))
            drv_a  = Array(drv[k] for k in range(HISTORY + 2))
            # Async SDR: the lane's level before RE#'s last fall (the previous byte).
            prev = Signal(name=f"prev{lane}")
            self.sync += If(fall_at[1], prev.eq(level[0])).Elif(fall_at[0], prev.eq(hist_reg[0]))
            for edge in range(2):        # 0: falling edge (end of phase 0), 1: rising (end of phase 1)
                idx = Signal(max=HISTORY + 2, name=f"idx{lane}_{edge}")
                self.comb += idx.eq(back + (1 - edge))
                at     = hist_a[idx]
                old    = Mux(before, hist_a[idx + 1], at)
                sample = Mux(valid, at, Mux(drv_a[idx], lfsr[(2 * lane + edge) % 32], old))
                if lane != DQS_LANE:
                    sample = self._sdr_sample(sample, level[edge], prev, lane, edge, n_fall[edge], n_rise[edge],
                                              pads.re_n[edge], p, lfsr)
                self.comb += s[edge].eq(Mux(oe, own[edge], sample))

    def _sdr_sample(self, sample, now, prev, lane, edge, n_fall, n_rise, re_high, p, lfsr):
        """A DQ lane's sample at an edge, in async SDR with `sdr_access` on: the die's byte `now` once tREA
        has passed since RE# fell (and not tRHOH past RE#'s rise), the previous byte within tRLOH of the
        fall, else unknown. Times at the pin: the edge minus the lane's delay."""
        t_fall = Signal((PS_BITS + 8, True), name=f"t_fall{lane}_{edge}")
        t_rise = Signal((PS_BITS + 8, True), name=f"t_rise{lane}_{edge}")
        sdr_sample = Signal(name=f"sdr_sample{lane}_{edge}")
        self.comb += [
            t_fall.eq(n_fall * p - self.delay[lane]),
            t_rise.eq(n_rise * p - self.delay[lane]),
            If(t_fall >= self.trea,
                sdr_sample.eq(Mux(re_high & (t_rise >= self.trhoh), lfsr[(2 * lane + edge + 7) % 32], now)),
            ).Elif(t_fall < self.trloh,
                sdr_sample.eq(prev),
            ).Else(
                sdr_sample.eq(lfsr[(2 * lane + edge + 7) % 32]),
            ),
        ]
        return Mux(self.sdr_on & self.sdr, sdr_sample, sample)

    @staticmethod
    def taps_ps(taps, tap_ps):
        return taps * tap_ps

    def add_csr(self):
        """Per lane: `lane<i>_delay` and `lane<i>_window` (start, end), ps. For testbenches (the firmware's
        training must not read them: it finds what they imply)."""
        for i in range(LANES):
            d = CSRStorage(PS_BITS, reset=self.lanes[i].delay, name=f"lane{i}_delay",
                description=f"{LANE_NAMES[i]}: chip output delay + board skew, ps (1 .. {max_lane_delay(self.sys_clk_freq)}).")
            w = CSRStorage(fields=[
                CSRField("start", size=PS_BITS, reset=self.lanes[i].start,
                         description="Valid from this long after delay (tDQSQ), ps."),
                CSRField("end",   size=PS_BITS, offset=PS_BITS, reset=self.lanes[i].end,
                         description="Valid until this long after delay (tQH), ps."),
            ], name=f"lane{i}_window", description=f"{LANE_NAMES[i]}: data valid window after the delay.")
            setattr(self, f"_lane{i}_delay", d)
            setattr(self, f"_lane{i}_window", w)
            self.comb += [
                self.delay[i].eq(d.storage),
                self.start[i].eq(w.fields.start),
                self.end[i].eq(w.fields.end),
            ]
        self.write.add_csr()
        self._sdr_access = CSRStorage(fields=[
            CSRField("trea",  size=PS_BITS, description="Async SDR: RE# low to data valid (tREA), ps."),
            CSRField("trhoh", size=PS_BITS, offset=PS_BITS, description="Data held after RE# high (tRHOH), ps."),
        ], name="sdr_access", description="The chip's async SDR output timing on the DQ lanes (with sdr_hold).")
        self._sdr_hold = CSRStorage(fields=[
            CSRField("trloh",  size=PS_BITS, description="Previous data held after RE# low (tRLOH), ps."),
            CSRField("enable", size=1, offset=PS_BITS, description="Apply sdr_access and trloh (0: the byte "
                                                                    "from the lane's delay on)."),
        ], name="sdr_hold", description="The chip's async SDR output timing, continued.")
        self.comb += [
            self.trea.eq(self._sdr_access.fields.trea), self.trhoh.eq(self._sdr_access.fields.trhoh),
            self.trloh.eq(self._sdr_hold.fields.trloh), self.sdr_on.eq(self._sdr_hold.fields.enable),
        ]
