"""The write side of the pin-level die model: NV-DDR data input as the die's pins see it.

In NV-DDR data input the host drives DQ and DQS; the die takes DQ at each DQS edge and needs it stable
from tDS before the edge to tDH after it (ONFI's NV-DDR table; Linux nand_timings.c carries the same
numbers: NVDDR_TDS_PS / NVDDR_TDH_PS). At the die's pins every lane arrives with its own skew (the
FPGA's output and the board's trace: `wskew`, ps, 0 .. SKEW_MAX_PS), and the pin PHY drives DQS a
quarter cycle after the phase it belongs to (`dqs_shift`, the PHY's `dqs_out_shift_ps`). The bus levels
change only at phase boundaries, so, as on the read side, the model computes in integer ps once per
cycle: for each phase in which DQS toggles, the edge reaches the die `dqs_shift + wskew[DQS]` after the
phase's start, and DQ lane i changes at phase boundaries + wskew[i]. Relative to lane i's own time the
edge is at `rel = dqs_shift + wskew[DQS] - wskew[i]`, which must lie in (-P, P) (the checks below: a
skew within a phase). The die then takes

* rel >= 0: the level of the edge's phase; setup = rel (if the lane changed at the phase's start),
  hold = P - rel (if it changes at the next);
* rel < 0: the level of the phase before; setup = P + rel, hold = -rel (the same conditions a phase
  earlier).

A margin below tDS / tDH (with the lane changing there) makes the bit unknown: the die takes a
pseudo-random bit and the model counts a violation (`din_setup` / `din_hold`, counters). A hold after an
edge in the cycle's second phase depends on the next cycle's first phase: the model takes it from
`dq_next` (the levels the pins will have next cycle: the PHY's output registers' inputs); without it,
such a hold is counted a cycle late and does not change the die's bit.

Off (`enable` = 0, the reset) the die takes the bus as the controller drives it, as before.
"""

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRField, CSRStatus, CSRStorage

# ONFI NV-DDR modes 0-5 (Linux drivers/mtd/nand/raw/nand_timings.c, onfi_nvddr_timings).
NVDDR_TDS_PS = [5000, 3000, 2000, 1500, 1100, 900]
NVDDR_TDH_PS = [5000, 2500, 1700, 1300, 1100, 900]
PS_BITS = 16
DQ_LANES = 8


def write_margins(rel_ps, phase_ps, k, n):
    """(setup, hold) in ps of a DQ lane at a DQS edge in phase `k` of an `n`-phase byte, `rel_ps` after
    the lane's own phase start (rel = dqs_shift + wskew[DQS] - wskew[lane]): the byte starts at phase 0
    and ends after phase n - 1 (the lane changes at both ends)."""
    t = k * phase_ps + rel_ps              # From the byte's start, in the lane's time.
    return t, n * phase_ps - t


def write_ok(mode, late, dq_skew, dqs_skew, sys_clk_freq=100e6, shift_cycles=None):
    """Whether NV-DDR `mode`'s data input meets the die's tDS and tDH with the controller's DQS placement
    (`late`: din_dqs_phases), the PHY's DQS shift (default the pin PHY's quarter cycle) and the DQ lanes'
    / DQS's write skew (ps)."""
    from nandlab.gateware.onfi import common as onfi
    from nandlab.gateware.onfi.controller.common import din_dqs_phases, mode_beats
    from nandlab.gateware.onfi.pinphy import DQS_OUT_SHIFT_CYCLES
    shift_cycles = DQS_OUT_SHIFT_CYCLES if shift_cycles is None else shift_cycles
    p = int(round(1e12 / sys_clk_freq / 2))
    b, lo = mode_beats(onfi.IF_NVDDR, mode, sys_clk_freq)["w"]
    k0, k1 = din_dqs_phases(mode, sys_clk_freq, late)
    rel = int(round(shift_cycles * 2 * p)) + dqs_skew - dq_skew
    return all(s >= NVDDR_TDS_PS[mode] and h >= NVDDR_TDH_PS[mode]
               for k, n in ((k0, lo), (k1 - lo, 2 * b - lo)) for s, h in [write_margins(rel, p, k, n)])


class NandLabPinWrite(LiteXModule):
    """`dq_o` / `dqs_o` / `dqs_oe` (the pins' phase levels, as the controller drives them) to `dq_die` (what the
    die takes at its DQS edges), with per-lane write skew and the die's tDS / tDH (module documentation)."""
    def __init__(self, dq_o, dqs_o, dqs_oe, dq_die, phase_ps, dqs_shift_ps, dq_next=None):
        self.wskew  = [Signal(PS_BITS, name=f"wskew{i}") for i in range(DQ_LANES + 1)]
        self.tds    = Signal(PS_BITS, reset=NVDDR_TDS_PS[5])
        self.tdh    = Signal(PS_BITS, reset=NVDDR_TDH_PS[5])
        self.shift  = Signal(PS_BITS, reset=dqs_shift_ps)
        self.enable = Signal()
        self.viol_setup = Signal(32)
        self.viol_hold  = Signal(32)
        self.dqs_shift_ps = dqs_shift_ps

        # # #

        p = phase_ps
        lfsr = Signal(16, reset=0xB5AD)
        self.sync += lfsr.eq(Mux(lfsr[0], (lfsr >> 1) ^ 0xB400, lfsr >> 1))
        dqs_prev = Signal()
        self.sync += dqs_prev.eq(dqs_o[1])
        edge = [dqs_oe & (dqs_o[0] != dqs_prev), dqs_oe & (dqs_o[1] != dqs_o[0])]
        # Each lane's last four phase levels: [-2, -1] of the last cycle, [0, 1] of this one.
        setup_bad, hold_bad, late_bad = Signal(2 * DQ_LANES), Signal(2 * DQ_LANES), Signal(DQ_LANES)
        for i in range(DQ_LANES):
            prev = Signal(2, name=f"wprev{i}")
            self.sync += prev.eq(Cat(dq_o[i], dq_o[8 + i]))
            lv = [prev[0], prev[1], dq_o[i], dq_o[8 + i]]          # Phases -2, -1, 0, 1 of this cycle.
            if dq_next is not None:
                lv.append(dq_next[i])                               # Phase 0 of the next cycle.
            rel = Signal((PS_BITS + 3, True), name=f"wrel{i}")
            self.comb += rel.eq(self.shift + self.wskew[DQ_LANES] - self.wskew[i])
            late_q = Signal(name=f"wlate_q{i}")       # Edge in phase 1, rel >= 0, hold short: next cycle.
            late_v = Signal(name=f"wlate_v{i}")
            for e in range(2):
                at = 2 + e                                  # This phase's index in lv.
                before = rel < 0
                # The level the die takes, and whether it changed at its start / changes at its end.
                level = Mux(before, lv[at - 1], lv[at])
                changed = Mux(before, lv[at - 1] != lv[at - 2], lv[at] != lv[at - 1])
                setup = Mux(before, p + rel, rel)
                hold = Mux(before, -rel, p - rel)
                if e == 0:
                    changes = Mux(before, lv[at] != lv[at - 1], lv[at + 1] != lv[at])
                    hold_known = 1
                elif dq_next is not None:
                    changes = Mux(before, lv[at] != lv[at - 1], lv[at + 1] != lv[at])
                    hold_known = 1
                else:
                    changes = Mux(before, lv[at] != lv[at - 1], 0)
                    hold_known = before
                s_bad = edge[e] & self.enable & changed & (setup < self.tds)
                h_bad = edge[e] & self.enable & changes & (hold < self.tdh)
                self.comb += [setup_bad[2 * i + e].eq(s_bad), hold_bad[2 * i + e].eq(h_bad)]
                self.comb += dq_die[8 * e + i].eq(Mux(s_bad | h_bad, lfsr[(3 * i + e) % 16],
                                                      Mux(self.enable & edge[e], level, dq_o[8 * e + i])))
                if e == 1 and dq_next is None:
                    self.sync += [
                        late_q.eq(edge[1] & self.enable & ~hold_known & (hold < self.tdh)),
                        late_v.eq(lv[at]),
                    ]
            self.comb += late_bad[i].eq(late_q & (dq_o[i] != late_v))
        # Per DQS edge (either phase; a late hold is its edge's, counted a cycle later).
        per_phase = lambda bad, e: Cat(*[bad[2 * i + e] for i in range(DQ_LANES)]) != 0
        self.sync += [
            self.viol_setup.eq(self.viol_setup + per_phase(setup_bad, 0) + per_phase(setup_bad, 1)),
            self.viol_hold.eq(self.viol_hold + per_phase(hold_bad, 0) + per_phase(hold_bad, 1) + (late_bad != 0)),
        ]

    def add_csr(self):
        """`lane<i>_wskew` (DQ0-7, DQS; ps), `din_timing` (tDS, tDH), `din_dqs` (the PHY's DQS delay, enable), and
        the two violation counters. For testbenches: the firmware's write training must not read them."""
        names = [f"DQ{i}" for i in range(DQ_LANES)] + ["DQS"]
        for i, name in enumerate(names):
            csr = CSRStorage(PS_BITS, name=f"lane{i}_wskew", description=f"{name}: write skew at the die, ps.")
            setattr(self, f"_lane{i}_wskew", csr)
            self.comb += self.wskew[i].eq(csr.storage)
        self._din_timing = CSRStorage(fields=[
            CSRField("tds", size=PS_BITS, reset=NVDDR_TDS_PS[5], description="Die's data setup to DQS (tDS), ps."),
            CSRField("tdh", size=PS_BITS, offset=PS_BITS, reset=NVDDR_TDH_PS[5], description="Data hold (tDH), ps."),
        ], name="din_timing", description="The die's NV-DDR data input timing.")
        self._din_dqs = CSRStorage(fields=[
            CSRField("shift", size=PS_BITS, reset=self.dqs_shift_ps,
                     description="DQS after its phase's start at the PHY's pin, ps (the PHY's quarter cycle)."),
            CSRField("enable", size=1, offset=PS_BITS, description="Apply the write timing (0: the die takes the bus "
                                                                   "as driven)."),
        ], name="din_dqs", description="The write side of the pin model.")
        self._din_setup = CSRStatus(32, name="din_setup", description="Counter: DQS edges with a tDS violation.")
        self._din_hold  = CSRStatus(32, name="din_hold", description="Counter: DQS edges with a tDH violation.")
        self.comb += [
            self.tds.eq(self._din_timing.fields.tds), self.tdh.eq(self._din_timing.fields.tdh),
            self.shift.eq(self._din_dqs.fields.shift), self.enable.eq(self._din_dqs.fields.enable),
            self._din_setup.status.eq(self.viol_setup), self._din_hold.status.eq(self.viol_hold),
        ]
