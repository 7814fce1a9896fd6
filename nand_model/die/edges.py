"""Bus front end of the die: WE#/RE#/DQS edges of the phased NAND bus as command, address and data events."""

from migen import *

from litex.gen import LiteXModule

from nandlab.gateware.onfi import common as onfi
from nandlab.gateware.onfi.common import phase_edges


class NandLabDieBusEdges(LiteXModule):
    """Events of one cycle (two bus phases) on the die's bus, in the data interface in use.

    `prev`: the previous cycle's last-phase WE#, RE#, DQ and DQS (signals, in that order) kept by the
    owner instead of registers here (see NandLabDie's `bus_prev`)."""
    def __init__(self, bus, data_interface, prev=None):
        self.selected   = Signal()       # CE# low.
        self.nvddr      = Signal()
        self.sync_sdr   = Signal()
        # At most one command/address latch per cycle (a WE#/CLK rising edge).
        self.latch_byte = Signal(8)
        self.cmd_ev     = Signal()
        self.addr_ev    = Signal()
        # Data in: async, a byte per WE# rising edge with CLE = ALE = 0; NV-DDR, a byte per DQS edge;
        # sync SDR, a byte per CLK rising edge of a data cycle with W/R# high.
        self.din_valid  = [Signal(name=f"din_valid{p}") for p in range(2)]
        self.din_byte   = [Signal(8, name=f"din_byte{p}") for p in range(2)]
        # Data out: async, a byte per RE# falling edge; NV-DDR, a byte per phase with W/R# low;
        # sync SDR, a byte per CLK rising edge of a data cycle with W/R# low.
        self.dout_req   = [Signal(name=f"dout_req{p}") for p in range(2)]
        # The edges tRHW runs between: the end of a data output cycle (async: RE# rising; NV-DDR / sync
        # SDR: any data output phase, the last one counts) and the start of a command or address cycle
        # (async: WE# falling with CLE or ALE high; clocked: the CLK edge that latches it), a cycle late:
        # a checker's count of cycles since `dout_end` then equals the cycles between the two edges.
        self.dout_end       = Signal()
        self.cmd_addr_start = Signal()

        # # #

        selected, nvddr, sync_sdr = self.selected, self.nvddr, self.sync_sdr
        self.comb += [
            selected.eq(~bus.ce_n[0]),
            nvddr.eq(data_interface == onfi.IF_NVDDR),
            sync_sdr.eq(data_interface == onfi.IF_SYNC_SDR),
        ]
        if prev is None:
            prev_we, prev_re, prev_dqs = Signal(reset=1), Signal(reset=1), Signal()
            prev_dq  = Signal(8)
            self.sync += [
                prev_we.eq(bus.we_n[-1]),
                prev_re.eq(bus.re_n[-1]),
                prev_dq.eq(bus.dq_o[8:16]),
                prev_dqs.eq(bus.dqs_o[-1]),
            ]
        else:
            prev_we, prev_re, prev_dq, prev_dqs = prev
        we_rise, we_fall = phase_edges(bus.we_n, prev_we)
        re_rise, re_fall = phase_edges(bus.re_n, prev_re)
        dqs_rise, dqs_fall = phase_edges(bus.dqs_o, prev_dqs)
        dq_phase  = [bus.dq_o[0:8], bus.dq_o[8:16]]
        dq_before = [prev_dq, dq_phase[0]]   # DQ as the phase's WE# edge latches it.

        latch      = Signal()
        data_cycle = Signal()   # NV-DDR / sync SDR data cycle: CLE = ALE = 1.
        self.comb += [
            latch.eq(we_rise[0] | we_rise[1]),
            self.latch_byte.eq(Mux(we_rise[0], dq_before[0], dq_before[1])),
            data_cycle.eq((nvddr | sync_sdr) & bus.cle & bus.ale),
            self.cmd_ev.eq(selected & latch & bus.cle & ~bus.ale),
            self.addr_ev.eq(selected & latch & bus.ale & ~bus.cle),
            If(nvddr | sync_sdr,
                self.dout_end.eq(self.dout_req[0] | self.dout_req[1]),
            ).Else(
                self.dout_end.eq(selected & (re_rise[0] | re_rise[1])),
            ),
        ]
        self.sync += If(nvddr | sync_sdr,
            self.cmd_addr_start.eq(self.cmd_ev | self.addr_ev),
        ).Else(
            self.cmd_addr_start.eq(selected & (we_fall[0] | we_fall[1]) & (bus.cle ^ bus.ale)),
        )
        for p in range(2):
            self.comb += If(nvddr,
                self.din_valid[p].eq(selected & data_cycle & bus.re_n[p] & (dqs_rise[p] | dqs_fall[p])),
                self.din_byte[p].eq(dq_phase[p]),
                self.dout_req[p].eq(selected & data_cycle & ~bus.re_n[p]),
            ).Elif(sync_sdr,
                self.din_valid[p].eq(selected & data_cycle & bus.re_n[p] & we_rise[p]),
                self.din_byte[p].eq(dq_before[p]),
                self.dout_req[p].eq(selected & data_cycle & ~bus.re_n[p] & we_rise[p]),
            ).Else(
                self.din_valid[p].eq(selected & ~bus.cle & ~bus.ale & we_rise[p]),
                self.din_byte[p].eq(dq_before[p]),
                self.dout_req[p].eq(selected & re_fall[p]),
            )
