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
`taps x tap_ps` before the register, so the sample at an edge reads the pin that much earlier.
Sampling the byte of the phase that ends at the edge is right; any other phase, or an unknown
sample, is wrong. The taps at which a lane reads right (`expected_window`) are therefore

    P - delay - end  <=  taps x tap_ps  <=  P - delay - start      (P = half the sys period)

(within the line's taps). Untrained (taps 0) a lane reads right only if its eye spans the clock
edge: delay + start <= P <= delay + end.

The chip's output delay is limited to what the controller's fixed read latency takes: a byte must
arrive within the phase after the one it was launched in (delay + start < P). ONFI allows tDQSCK up
to 20 ns; more than a phase would need whole-phase latency training, which nothing does yet: such
a lane has no window (the model still computes it, from a history of HISTORY phases).

Ranges (`random_lane_timings`), NV-DDR, per mode (ONFI NV-DDR table: tDQSQ max 5.0/2.5/1.7/1.3/1.0/
0.85 ns, tQHS max 6.0/3.0/2.0/1.5/1.2/1.0 ns, modes 0-5): the emulated die gives a byte per phase
whatever the mode, so below mode 5 the mode's tDQSQ/tQHS are scaled by P / (tCK/2) to the phase.
The chip's output delay is drawn in 0 .. OUT_DELAY_MAX_PS, each lane's board skew in
0 .. SKEW_MAX_PS.
"""

import random
from dataclasses import dataclass

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRField, CSRStorage

from nandlab.gateware.onfi.common import NVDDR_TCK_NS
from nandlab.gateware.onfi.pinphy import DELAY_TAP_PS, DELAY_TAPS, DQS_LANE, LANES

NVDDR_TDQSQ_PS = [5000, 2500, 1700, 1300, 1000, 850]
NVDDR_TQHS_PS  = [6000, 3000, 2000, 1500, 1200, 1000]
OUT_DELAY_MAX_PS = 2000
SKEW_MAX_PS      = 1000
DQS_LEVEL_MIN    = 0.8       # tDQSH / tDQSL min (0.4 tCK) of the half period.
HISTORY          = 8         # Phases of die output the model keeps: delays up to HISTORY - 2 phases.
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
    out = rng.randint(0, OUT_DELAY_MAX_PS)
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


def worst_case_lane_timings(mode=5, late="dq", sys_clk_freq=100e6):
    """The corner of the ranges (module documentation) for NV-DDR `mode`: the chip's output delay at its
    maximum, the board skew at its maximum on the DQ lanes (`late` = "dq") or on DQS ("dqs") and 0 on
    the others, every DQ window its narrowest (tDQSQ max to tHP - tQHS max) and DQS's level time its
    shortest."""
    if late not in ("dq", "dqs"):
        raise ValueError(f"late '{late}': dq or dqs")
    p = phase_ps(sys_clk_freq)
    scale = p / (NVDDR_TCK_NS[mode] * 500)
    tdqsq, tqhs = int(NVDDR_TDQSQ_PS[mode] * scale), int(NVDDR_TQHS_PS[mode] * scale)
    dq_skew, dqs_skew = (SKEW_MAX_PS, 0) if late == "dq" else (0, SKEW_MAX_PS)
    dq = LaneTiming(OUT_DELAY_MAX_PS + dq_skew, tdqsq, p - tqhs)
    return [dq] * DQS_LANE + [LaneTiming(OUT_DELAY_MAX_PS + dqs_skew, 0, int(DQS_LEVEL_MIN * p))]


def reads_right(t, taps, family, sys_clk_freq=100e6):
    """Whether a lane of timing `t` at `taps` samples the byte of the phase that ends at the edge,
    inside its valid window."""
    p = phase_ps(sys_clk_freq)
    r = p - t.delay - taps * DELAY_TAP_PS[family]
    return 0 < r <= p and t.start <= r <= t.end


def expected_window(t, family, sys_clk_freq=100e6):
    """(first, last) tap at which lane timing `t` reads right (the taps in between do too), or None."""
    good = [k for k in range(DELAY_TAPS[family]) if reads_right(t, k, family, sys_clk_freq)]
    return (good[0], good[-1]) if good else None


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


def check_lane(t, name, sys_clk_freq=100e6):
    p = phase_ps(sys_clk_freq)
    top = (HISTORY - 2) * p
    if not 0 < t.delay <= top:
        raise ValueError(f"pin model lane {name}: delay {t.delay} ps, the model takes 1 .. {top}")
    if not 0 <= t.start <= t.end <= p:
        raise ValueError(f"pin model lane {name}: window {t.start}..{t.end} ps, needs 0 <= start <= end <= {p}")


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
    reset), the byte is there from the lane's delay on, as before."""
    def __init__(self, pads, die_bus, taps, family, sys_clk_freq, lanes=None, drive=None, sdr=None):
        lanes = lanes or ideal_lanes(sys_clk_freq)
        for i, t in enumerate(lanes):
            check_lane(t, LANE_NAMES[i], sys_clk_freq)
        self.lanes = lanes
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
            die_bus.dq_o.eq(pads.dq_o), die_bus.dq_oe.eq(pads.dq_oe),
            die_bus.dqs_o.eq(pads.dqs_o), die_bus.dqs_oe.eq(pads.dqs_oe),
            pads.rb_n.eq(die_bus.rb_n),
        ]
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
                description=f"{LANE_NAMES[i]}: chip output delay + board skew, ps (1 .. {(HISTORY - 2) * 5000}).")
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
