"""Per-die peak current for adaptive token tables in the SoC (issue 18 b; docs/power_deviation.md).

For every die: the largest current it drew inside a phase (OI != 0) since the last `clear`, and the
OI of the phase it drew it in. `oi_filter` != 0 counts only that phase's cycles (a phase at a time);
0 counts every phase. The host's adaptation step (nandlab.control.PowerControl.adapt) reads them,
flags a phase whose peak is above what its RT covers, re-compiles that die's RT from the peak and
writes it into the die's ring node only (the rings' `table_keep`), as the power harness's driver
does (gateware/power/harness_deviation.h) per OI. Cost per die: one current and one OI register
and a comparator.
"""

from migen import *

from litex.gen import LiteXModule

from nandlab.gateware.power.common import OI_BITS


class DiePeaks(LiteXModule):
    """`currents` and `ois`: per die, its current and its phase's OI in the same cycle.

    With `rts` (per die, the RT its ring node holds for that OI, in the same cycle) and `tg` (the
    ring's TG), each die also keeps where it drew most above what its RT pays for: the excess
    current x (2^TG - 1) - RT x 4096 (I_max = 4096, a token I_max / (2^TG - 1)), largest since the
    last clear and above 0, with the current and the OI it was drawn at (`over`, `over_oi`). A die
    whose waveform matches its table never has one; after its RT for that phase is raised, the next
    largest shows (`power adapt` takes one phase per die and step)."""
    def __init__(self, currents, ois, rts=None, tg=None):
        n = len(currents)
        self.clear     = Signal()
        self.oi_filter = Signal(OI_BITS)
        self.peak      = [Signal(len(c), name=f"peak{i}") for i, c in enumerate(currents)]
        self.peak_oi   = [Signal(OI_BITS, name=f"peak_oi{i}") for i in range(n)]
        self.with_over = rts is not None
        if self.with_over:
            self.over    = [Signal(len(c), name=f"over{i}") for i, c in enumerate(currents)]
            self.over_oi = [Signal(OI_BITS, name=f"over_oi{i}") for i in range(n)]

        # # #

        for cur, oi, peak, poi in zip(currents, ois, self.peak, self.peak_oi):
            counts = (oi != 0) & ((self.oi_filter == 0) | (oi == self.oi_filter))
            self.sync += If(self.clear,
                peak.eq(0), poi.eq(0),
            ).Elif(counts & (cur > peak),
                peak.eq(cur), poi.eq(oi),
            )
        if self.with_over:
            for i, (cur, oi, rt) in enumerate(zip(currents, ois, rts)):
                self._over(i, cur, oi, rt, tg)

    def _over(self, i, cur, oi, rt, tg):
        """Die i's largest excess over its RT (see the class)."""
        bits = len(cur) + 8 + 2
        excess, best = Signal((bits, True), name=f"excess{i}"), Signal((bits, True), name=f"excess_max{i}")
        cur_q, oi_q = Signal.like(cur), Signal.like(oi)
        # current x (2^TG - 1) as a shift and a subtraction: no multiplier; registered, then compared
        # (the board's clock: the shift, two subtractions and the comparison are one carry chain too many).
        self.sync += [excess.eq((cur << tg) - cur - (rt << 12)), cur_q.eq(cur), oi_q.eq(oi)]
        self.sync += If(self.clear,
            best.eq(0), self.over[i].eq(0), self.over_oi[i].eq(0),
        ).Elif((oi_q != 0) & (excess > best),
            best.eq(excess), self.over[i].eq(cur_q), self.over_oi[i].eq(oi_q),
        )

    def add_csr(self):
        from litex.soc.interconnect.csr import CSRStorage, CSRStatus, CSR, CSRField
        self._sel = CSRStorage(8, description="Die (channel x dies + die) shown in `peak`.")
        self._peak = CSRStatus(fields=[
            CSRField("current", size=len(self.peak[0]), description="Largest current of the die in a phase since "
                                                                    "the last clear (I_max / 4096)."),
            CSRField("oi", size=OI_BITS, offset=16, description="The phase (OI) it was drawn in (0: none yet)."),
        ], description="Peak current of the die `sel` picks.")
        if self.with_over:
            self._over_peak = CSRStatus(fields=[
                CSRField("current", size=len(self.over[0]), description="The die's current where it drew most above "
                                                                        "what its RT pays for, since the last clear "
                                                                        "(I_max / 4096; 0: never above)."),
                CSRField("oi", size=OI_BITS, offset=16, description="The phase (OI) it was drawn in."),
            ], description="Where the die `sel` picks drew most above its ring node's RT.")
        self._oi = CSRStorage(OI_BITS, description="Count only this phase (OI); 0: every phase.")
        self._clear = CSR()
        self._clear.description = "Write to clear every die's peak."
        sel = self._sel.storage
        self.comb += [
            self._peak.fields.current.eq(Array(self.peak)[sel]),
            self._peak.fields.oi.eq(Array(self.peak_oi)[sel]),
            self.oi_filter.eq(self._oi.storage),
            self.clear.eq(self._clear.re),
        ]
        if self.with_over:
            self.comb += [
                self._over_peak.fields.current.eq(Array(self.over)[sel]),
                self._over_peak.fields.oi.eq(Array(self.over_oi)[sel]),
            ]
