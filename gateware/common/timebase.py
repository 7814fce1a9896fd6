"""Time base shared by the NAND cores: a free-running cycle timestamp and a window strobe.

The current monitor compares the summed die current with the budget once per window (40 ns by
default, as the MTPM paper measures) and telemetry stamps each sample with the timestamp, so
both take their notion of time from this one block.
"""

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRStorage, CSRStatus, CSR, CSRField


class NandLabTimebase(LiteXModule):
    """Cycle timestamp plus a strobe at the last cycle of every window.

    Parameters
    ----------
    sys_clk_freq : float
        System clock, to turn `window_ns` into cycles.
    window_ns : float
        Default window length; the CSR can change it at run time.
    timestamp_width : int
        Width of the free-running cycle counter.
    """
    def __init__(self, sys_clk_freq, window_ns=40, timestamp_width=48, window_width=16):
        default_cycles = max(1, round(window_ns * 1e-9 * sys_clk_freq))
        if default_cycles >= 2**window_width:
            raise ValueError(f"window of {window_ns} ns is {default_cycles} cycles, "
                             f"above the {window_width}-bit window counter limit ({2**window_width - 1})")
        self.default_cycles = default_cycles
        self.window_cycles  = Signal(window_width, reset=default_cycles) # Cycles per window (0 acts as 1).
        self.timestamp      = Signal(timestamp_width)                    # Cycles since reset.
        self.strobe         = Signal()                                   # High on a window's last cycle.
        self.window_count   = Signal(32)                                 # Completed windows.

        # # #

        count = Signal(window_width)
        last  = Signal()
        self.comb += [
            last.eq(count >= Mux(self.window_cycles == 0, 0, self.window_cycles - 1)),
            self.strobe.eq(last),
        ]
        self.sync += [
            self.timestamp.eq(self.timestamp + 1),
            If(last,
                count.eq(0),
                self.window_count.eq(self.window_count + 1),
            ).Else(
                count.eq(count + 1),
            ),
        ]

    def add_csr(self):
        self._window = CSRStorage(len(self.window_cycles), reset=self.default_cycles,
            description="Window length in system clock cycles (0 is treated as 1).")
        self._latch = CSR()
        self._latch.description = "Write to capture `timestamp` and `windows` atomically."
        self._timestamp = CSRStatus(64, description="Cycle timestamp captured by the last `latch` write.")
        self._windows   = CSRStatus(32, description="Windows completed, captured by the last `latch` write.")

        # # #

        self.comb += self.window_cycles.eq(self._window.storage)
        self.sync += If(self._latch.re,
            self._timestamp.status.eq(self.timestamp),
            self._windows.status.eq(self.window_count),
        )
