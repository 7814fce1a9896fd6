"""Bus performance counters: where the soft CPU's cycles go.

For each watched Wishbone master, two free-running 32-bit counters: `busy`, the cycles with a
request outstanding (CYC and STB high: for the CPU's instruction bus a cache refill, for its data
bus a cache refill or a write-through store, for a DMA master a transfer), and `acks`, the words
moved. The firmware reads them before and after a piece of work; the differences say how many of
its cycles the CPU spent waiting on memory (`ftl bench`, `perf`), the rest being execution.
"""

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRStatus


class BusPerf(LiteXModule):
    """Counters for `masters`, a list of (name, wishbone.Interface); CSRs `<name>_busy`, `<name>_acks`."""
    def __init__(self, masters, width=32):
        self.names = [name for name, _ in masters]
        for name, bus in masters:
            busy = CSRStatus(width, name=f"{name}_busy", description=f"Cycles with a {name} request outstanding.")
            acks = CSRStatus(width, name=f"{name}_acks", description=f"Words {name} moved (acknowledged cycles).")
            setattr(self, f"_{name}_busy", busy)
            setattr(self, f"_{name}_acks", acks)
            self.sync += [
                If(bus.cyc & bus.stb, busy.status.eq(busy.status + 1)),
                If(bus.cyc & bus.stb & bus.ack, acks.status.eq(acks.status + 1)),
            ]
