"""Current monitor: the summed current of the dies against the power budget, per window.

Every cycle the dies' currents (units of I_max / 4096, nand_model/current.py) are summed. Per
window of the shared time base (40 ns by default) the largest sum is the window's sample; a sample
above PB (alpha x I_max, from the ring's applied alpha) is a violation. The monitor keeps the
number of windows, the violations, the largest sample and a histogram of samples in 16 bins of
I_max / 2 (the last bin takes everything from 7.5 I_max up), and streams every window's sample
(`source`) for telemetry. Counters restart on `clear` or `restart` (the start of a telemetry capture)
and count windows only while `run` is high (the SoC lowers it when a capture stops, so that the
monitor and the recording cover the same windows).

Built `with_skip` (the power harness, gateware/power/skip.py), a cycle with `skip` high loads the
state after a skipped stretch instead: the window statistics of the stretch (added), the open
window's maximum, the registered sum and the window strobe, as the harness's driver computed them
from the dies' current ramps. The per-die maxima and the stream stand still over a skip: they only
feed telemetry, which the harness does not have.
"""

from functools import reduce
from operator import add

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from nandlab.nand_model.current import I_FRAC_BITS
from nandlab.gateware.power.common import ALPHA_RANGE, STOPPED_ALPHA

HIST_BINS = 16
HIST_SHIFT = I_FRAC_BITS - 1          # A bin is I_max / 2.


def monitor_layout(n, width):
    return [("total_max", width), ("violation", 1), ("currents", n * (I_FRAC_BITS + 2))]


class CurrentMonitor(LiteXModule):
    def __init__(self, currents, strobe, with_skip=False, budget_max=ALPHA_RANGE[1]):
        n = len(currents)
        # Wide enough for the sum of n dies (each < 4 I_max) and for the largest budget, `budget_max` x I_max
        # (with one or two dies the sum alone is 15 bits, and 8 x 4096 would wrap to 0; a ring per channel
        # each at alpha = 8 gives channels x 8).
        width = max(I_FRAC_BITS + 2 + max(n - 1, 1).bit_length(), (budget_max << I_FRAC_BITS).bit_length())
        self.width = width
        self.pb          = Signal(width, reset=STOPPED_ALPHA << I_FRAC_BITS)
        self.clear       = Signal()
        self.restart     = Signal()               # Clear from the telemetry's capture start.
        self.run         = Signal(reset=1)        # Count windows (telemetry captures gate it).
        self.total       = Signal(width)          # This cycle's sum (registered).
        self.windows     = Signal(32)
        self.violations  = Signal(32)
        self.max_sample  = Signal(width)
        self.histogram   = [Signal(32, name=f"hist{i}") for i in range(HIST_BINS)]
        self.source      = stream.Endpoint(monitor_layout(n, width))
        self.dropped     = Signal(32)             # Samples the stream could not take.

        # # #

        clr = Signal()
        self.comb += clr.eq(self.clear | self.restart)
        stmts = [self.total.eq(reduce(add, currents))]
        self.win_max = win_max = Signal(width)
        die_max = [Signal(I_FRAC_BITS + 2, name=f"die_max{i}") for i in range(n)]
        die_q   = [Signal(I_FRAC_BITS + 2, name=f"die_q{i}") for i in range(n)]
        stmts += [die_q[i].eq(c) for i, c in enumerate(currents)]
        sample = Signal(width)
        self.comb += sample.eq(Mux(self.total > win_max, self.total, win_max))
        bin_ = Signal(max=HIST_BINS)
        self.comb += bin_.eq(Mux((sample >> HIST_SHIFT) >= HIST_BINS - 1, HIST_BINS - 1, sample >> HIST_SHIFT))
        # The window closing this cycle (the sum lags the currents by one cycle: the strobe too).
        self.strobe_q = strobe_q = Signal()
        stmts += [strobe_q.eq(strobe)]
        stmts += [
            If(strobe_q | clr,
                win_max.eq(0),
                *[die_max[i].eq(0) for i in range(n)],
            ).Else(
                win_max.eq(sample),
                *[If(die_q[i] > die_max[i], die_max[i].eq(die_q[i])) for i in range(n)],
            ),
            If(clr,
                self.windows.eq(0), self.violations.eq(0), self.max_sample.eq(0),
                *[h.eq(0) for h in self.histogram],
            ).Elif(strobe_q & self.run,
                self.windows.eq(self.windows + 1),
                If(sample > self.pb, self.violations.eq(self.violations + 1)),
                If(sample > self.max_sample, self.max_sample.eq(sample)),
                Case(bin_, {i: self.histogram[i].eq(self.histogram[i] + 1) for i in range(HIST_BINS)}),
            ),
        ]
        # Stream: one sample per window; counted when the sink is not ready in time.
        stmts += [
            If(self.source.valid & self.source.ready, self.source.valid.eq(0)),
            If(strobe_q,
                If(self.source.valid & ~self.source.ready,
                    self.dropped.eq(self.dropped + 1),
                ).Else(
                    self.source.valid.eq(1),
                    self.source.total_max.eq(sample),
                    self.source.violation.eq(sample > self.pb),
                    self.source.currents.eq(Cat(*[Mux(die_q[i] > die_max[i], die_q[i], die_max[i]) for i in range(n)])),
                ),
            ),
            If(clr, self.dropped.eq(0)),
        ]
        self.sync += If(self._skip_input(n), *self._skip_loads()).Else(*stmts) if with_skip else stmts

    def _skip_input(self, n):
        """The load of a skipped stretch (with_skip): `skip` and the state after it."""
        width = self.width
        self.skip            = Signal()           # Load this cycle instead of counting it.
        self.skip_total      = Signal(width)      # The sum registered in the stretch's last cycle.
        self.skip_win_max    = Signal(width)      # The open window's maximum after the stretch.
        self.skip_strobe_q   = Signal()           # A window closes in the cycle after the stretch.
        self.skip_windows    = Signal(32)         # Windows that closed in the stretch,
        self.skip_violations = Signal(32)         # ...those above PB,
        self.skip_max        = Signal(width)      # ...their largest sample,
        self.skip_hist       = [Signal(32, name=f"skip_hist{i}") for i in range(HIST_BINS)]   # ...per bin.
        return self.skip

    def _skip_loads(self):
        return [
            self.total.eq(self.skip_total),
            self.win_max.eq(self.skip_win_max),
            self.strobe_q.eq(self.skip_strobe_q),
            self.windows.eq(self.windows + self.skip_windows),
            self.violations.eq(self.violations + self.skip_violations),
            If(self.skip_max > self.max_sample, self.max_sample.eq(self.skip_max)),
            *[h.eq(h + a) for h, a in zip(self.histogram, self.skip_hist)],
        ]

    def add_csr(self):
        from litex.soc.interconnect.csr import CSRStorage, CSRStatus, CSR
        self._clear = CSR()
        self._clear.description = "Write to restart the monitor's counters."
        self._windows    = CSRStatus(32, description="Windows sampled.")
        self._violations = CSRStatus(32, description="Windows whose largest summed current was above PB.")
        self._max        = CSRStatus(32, description="Largest summed current of a window (I_max / 4096).")
        self._pb         = CSRStatus(32, description="Power budget in use (I_max / 4096).")
        self._hist_sel   = CSRStorage(4, description="Histogram bin shown in `hist` (bin k: k/2..(k+1)/2 I_max).")
        self._hist       = CSRStatus(32, description="Windows in the selected histogram bin.")
        self._dropped    = CSRStatus(32, description="Window samples the telemetry stream could not take.")
        self.comb += [
            self.clear.eq(self._clear.re),
            self._windows.status.eq(self.windows),
            self._violations.status.eq(self.violations),
            self._max.status.eq(self.max_sample),
            self._pb.status.eq(self.pb),
            self._hist.status.eq(Array(self.histogram)[self._hist_sel.storage]),
            self._dropped.status.eq(self.dropped),
        ]
