"""Bit-bang master of the phased NAND bus: every CSR write sets the bus levels until the next one.

For bring-up: firmware or the host (through the bridge) can drive emulated dies, or a real chip
through the pin PHY, one ONFI cycle at a time, before and beside the channel controller. It is
slow (a few CSR accesses per byte) and async-SDR only; the dies' timing checkers count the
violations a careless sequence makes.
"""

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRStorage, CSRStatus, CSRField


class NandLabBusBitbang(LiteXModule):
    def __init__(self, bus):
        targets = len(bus.ce_n)
        if targets > 16:
            raise ValueError(f"{targets} targets: the bit-bang master selects up to 16")
        # CE# bits from bit 16 (up to 16 targets), the levels below them.
        self._ctrl = CSRStorage(fields=[
            CSRField("cle", size=1, offset=8,  description="CLE level."),
            CSRField("ale", size=1, offset=9,  description="ALE level."),
            CSRField("we",  size=1, offset=10, description="1: WE# low. A 1 -> 0 change is the latching rising edge."),
            CSRField("re",  size=1, offset=11, description="1: RE# low. A 0 -> 1 change asks for the next byte."),
            CSRField("wp",  size=1, offset=12, description="1: WP# low (write protect)."),
            CSRField("oe",  size=1, offset=13, description="Drive DQ with `dq`."),
            CSRField("ce",  size=targets, offset=16, description="Select targets (drives CE# low), one bit per target."),
        ], description="NAND bus levels, held until the next write.")
        self._dq = CSRStorage(8, description="Byte driven on DQ when `oe` is set.")
        self._dq_in = CSRStatus(8, description="Byte the selected target drives on DQ.")
        self._rb = CSRStatus(len(bus.rb_n), description="R/B# of every LUN (1 = ready).")

        # # #

        f = self._ctrl.fields
        self.comb += [
            bus.ce_n.eq(~f.ce),
            bus.cle.eq(f.cle),
            bus.ale.eq(f.ale),
            bus.we_n.eq(Replicate(~f.we, 2)),
            bus.re_n.eq(Replicate(~f.re, 2)),
            bus.wp_n.eq(~f.wp),
            bus.dq_o.eq(Replicate(self._dq.storage, 2)),
            bus.dq_oe.eq(f.oe),
            bus.dqs_o.eq(0),
            bus.dqs_oe.eq(0),
        ]
        self.sync += [
            self._dq_in.status.eq(bus.dq_i[8:16]),
            self._rb.status.eq(bus.rb_n),
        ]
