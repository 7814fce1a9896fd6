"""The power harness's channel: data input and data output hold a shared bus per channel, under the ring.

The MTPM paper's device is one channel of eight ways (Table IV): the dies share one bus, so their
page transfers are serialised. Without it (the harness before issue 18) the dies played array
operations only and all started in lock-step at t = 0. Here each die's operation is, in order:

  program  data input (the page into the die's register: `t_in` cycles on the bus), then the array
           phases (nand_model/current.py);
  read     the array phases (R_A1, R_A2), then data output (R_A3, Table I: `t_out` cycles on the bus);
  erase    the array phases only.

A transfer phase first waits for its channel's bus (`PowerChannelBus`, round robin between the
dies asking), then, holding the bus, presents its OI to the die's ring node and waits for OE as
any first phase of an atomic operation does (the paper's Fig. 8 handshake), then moves the page and
releases the bus. Data output is the read's third atomic operation, R_A3 (OI 0x51), as the paper
counts it (Table III: a read is 3 atomic operations). The paper's program is 20 atomic operations
(10 loops x 2): it gives data input no token cost. Built `din_tokens` (the default), data input is
a phase of its own under the ring anyway (D_IN, OI 0x81): its bus current is part of the die's
current, and a phase that draws current without tokens can put the sum over PB (a die moving a
page while four others are in pre-charge at exactly I_max). Without `din_tokens` data input runs
as soon as the die has the bus, as the paper counts it.

While a page moves the die draws the bus current `i_bus` (flat): the die emulator's bus unit
(nand_model/die/power.py: waveforms.BUS_CURRENT per byte moved in a cycle of the SoC's 100 MHz
clock) at the interface's byte rate (`transfer_timing`). Command and address cycles, tWHR/tADL and
the controller's own latency are not modelled (tens of ns against the ~90 us of a 16 KiB page at
NV-DDR mode 5). A die's array and its transfer never overlap, so a die's current is either.

DCC (nandlab.dcc) gates the start of the array phases (`pending` / `hold`): a program's array
phases after its data input, a read's or an erase's at once. Its model holds array current only;
it keeps one transfer's current per bus out of its cap (nandlab.experiment.run_points), which
bounds the transfers since a bus moves one page at a time.

Lock-step: the first operations are still taken by every die at t = 0. Programs then queue for
the bus (their array phases start a page time apart); reads' array phases start together, as a
controller issuing a burst of reads would start them (their command cycles, ~70 ns each at NV-DDR
mode 5, are not modelled and would not separate R_A2's ~8 us peaks): on R100 NPM's peak is those
8 reads at t = 0. Nothing else staggers the dies.

The skip (gateware/power/skip.py) stays exact: a transfer is a flat segment (`room`: the cycles
left), a die waiting for OE or for a bus another die holds is quiet, and the bus only changes hands
in cycles that are not (the end of a transfer, a request while the bus is free).
"""

import math
from functools import reduce
from operator import or_

from migen import *

from litex.gen import LiteXModule

from nandlab.gateware.power.common import CHANNEL_INTERFACES, DEFAULT_CHANNEL_INTERFACE
from nandlab.nand_model import waveforms as wf
from nandlab.nand_model.current import ATOMIC_IDS, I_FRAC_BITS, ACC_FRAC, OP_READ_ARRAY, OP_PROGRAM_LSB, \
    OP_PROGRAM_MSB

OI_DOUT = (ATOMIC_IDS["R_A3"] << 4) | 1     # Data output: the read's third atomic operation (Table I).
D_IN_ID = max(ATOMIC_IDS.values()) + 1      # Data input: no atomic operation of the paper's (see above).
OI_DIN  = (D_IN_ID << 4) | 1

# The die emulator's bus unit (waveforms.BUS_CURRENT, 0.04 I_max: an assumption of waveforms.py, not
# sourced) is per byte moved in one cycle of the SoC's clock (nand_model/die/power.py); the SoC runs at
# 100 MHz (soc/targets/sim.py, arty.py): a byte costs BUS_CURRENT x 10 ns of charge, so a bus moving
# R bytes/s draws BUS_CURRENT x R x 10 ns (0.08 I_max at NV-DDR mode 5's 200 MB/s, as the emulator
# draws moving 2 bytes a cycle at 100 MHz). Assumed flat over the page.
BUS_UNIT_NS = 10

INTERFACES, DEFAULT_INTERFACE = CHANNEL_INTERFACES, DEFAULT_CHANNEL_INTERFACE


def transfer_timing(part, interface, sys_clk_freq, time_scale=1):
    """{"t_in", "t_out": cycles of a page (data + spare) in and out, "i_bus": the die's current while
    it moves (I_max / 4096), "rate_in", "rate_out": bytes/s} of `interface` ("nvddr5", "sdr0", ...)
    at `sys_clk_freq`: the ONFI controller's beats rounded to the clock (its transfer_bytes_per_s),
    times divided by `time_scale` as the array's are."""
    from nandlab.gateware.onfi import common as onfi
    from nandlab.gateware.onfi.controller.common import mode_beats
    if interface not in INTERFACES:
        raise ValueError(f"interface '{interface}' is not one of {', '.join(INTERFACES)}")
    kind, mode = (onfi.IF_NVDDR, int(interface[5:])) if interface.startswith("nvddr") else \
        (onfi.IF_ASYNC_SDR, int(interface[3:]))
    per_beat = 2 if kind == onfi.IF_NVDDR else 1
    beats = mode_beats(kind, mode, sys_clk_freq)
    nbytes = part.page_size + part.spare_size
    # The sensitivity sweep's factors (waveforms.WaveformScales; 1.0 leaves every number as it was).
    scales = wf.scales_of(part)
    out = {}
    for d, key in (("in", "w"), ("out", "r")):
        b, _ = beats[key]
        out[f"rate_{d}"] = per_beat * sys_clk_freq / b * scales.rate
        out[f"t_{d}"] = max(1, int(round(-(-nbytes // per_beat) * b / time_scale / scales.rate)))
    # Flat current at the faster direction's rate, rounded up to the monitor's unit.
    rate = max(out["rate_in"], out["rate_out"])
    unit = wf.BUS_CURRENT * scales.transfer
    out["i_bus"] = max(1, math.ceil(unit * rate * BUS_UNIT_NS * 1e-9 * (1 << I_FRAC_BITS) - 1e-9))
    return out


def transfer_rts(i_bus, tg):
    """{OI: RT} of the transfer phases at granularity `tg` (eq. 1, from the current the gateware draws)."""
    rt = wf.tokens(i_bus / (1 << I_FRAC_BITS), tg)
    return {OI_DIN: rt, OI_DOUT: rt}


class PowerChannelBus(LiteXModule):
    """One channel's bus between `n` dies: a die raises `req` and owns the bus from the cycle `grant`
    is high until it pulses `release` (the last cycle of its transfer). Round robin: after die k the
    search starts at k + 1. The owner is registered; a free bus is given in the cycle after a request
    is seen, and a released bus is free in the next cycle (never given in the cycle of a release)."""
    def __init__(self, n):
        self.req     = [Signal(name=f"req{i}") for i in range(n)]
        self.release = [Signal(name=f"release{i}") for i in range(n)]
        self.grant   = [Signal(name=f"grant{i}") for i in range(n)]
        self.busy    = Signal()
        self.owner   = Signal(max=max(n, 2))
        self.quiet   = Signal()       # Nothing changes in the next cycles until a release or a request.

        # # #

        nxt = Signal(max=max(n, 2))
        pick = Signal(max=max(n, 2))
        cases = {}
        for s in range(n):
            order = [(s + k) % n for k in range(n)]
            expr = C(order[-1])
            for k in reversed(order[:-1]):
                expr = Mux(self.req[k], k, expr)
            cases[s] = pick.eq(expr)
        any_req = reduce(or_, self.req, C(0))
        self.comb += [
            Case(nxt, cases),
            self.quiet.eq(self.busy | ~any_req),
            *[self.grant[i].eq(self.busy & (self.owner == i)) for i in range(n)],
        ]
        self.sync += [
            If(reduce(or_, self.release, C(0)),
                self.busy.eq(0),
            ).Elif(~self.busy & any_req,
                self.busy.eq(1), self.owner.eq(pick),
                nxt.eq(Mux(pick == n - 1, 0, pick + 1)),
            ),
        ]


# States of a die's operation in the channel.
S_IDLE, S_BUSW, S_XREQ, S_XRUN, S_APEND, S_ARRAY = range(6)


class PowerChannelDie(LiteXModule):
    """A die's operation with its transfers: data input, the array (the sequencer `seq`), data output.
    Presents the power hook's signals (oi, request, ... current: gateware/power/hook.py) for both."""
    def __init__(self, seq, t_in, t_out, i_bus, din_tokens=True, with_skip=False):
        # Queue side (the harness).
        self.avail   = Signal()           # An operation is waiting in the die's queue (`op_in`).
        self.op_in   = Signal(2)
        self.take    = Signal()           # Pulse: the operation is taken.
        self.op_end  = Signal()           # Pulse: the operation (with its transfers) is over.
        self.cur_op  = Signal(2)
        self.hold    = Signal()           # DCC: the array phases wait while high.
        self.pending = Signal()           # The array phases are due (they start when `hold` is low).
        self.active  = Signal()           # Between `take` and `op_end`.
        # Bus side.
        self.bus_req = Signal()
        self.bus_grant = Signal()
        self.bus_release = Signal()
        # Power hook side (names as the sequencer's: hook.connect takes either).
        self.oi, self.oi_next = Signal(8), Signal(8)
        self.oi_first, self.request = Signal(), Signal()
        self.phase_end, self.atomic_end = Signal(), Signal()
        self.oe = Signal()
        self.current = Signal.like(seq.current)
        self.state = Signal(3)            # S_* (tests look at it).
        self.xfer = Signal()              # A page is moving (the die holds the bus and draws i_bus).

        # # #

        count = Signal(max(t_in, t_out).bit_length() + 1)
        out = Signal()                    # The transfer is the read's data output.
        state = self.state
        in_ring = Signal()                # The transfer goes through the ring node.
        xoi = Signal(8)
        last = Signal()
        x_ring = Signal()
        self.comb += [
            in_ring.eq(out | din_tokens),
            xoi.eq(Mux(out, OI_DOUT, OI_DIN)),
            last.eq((state == S_XRUN) & (count == 1)),
            self.xfer.eq(state == S_XRUN),
            x_ring.eq(((state == S_XREQ) | (state == S_XRUN)) & in_ring),
            self.active.eq(state != S_IDLE),
            self.take.eq((state == S_IDLE) & self.avail),
            self.pending.eq(state == S_APEND),
            self.bus_req.eq((state == S_BUSW) & ~self.bus_grant),
            self.bus_release.eq(last),
            seq.start.eq((state == S_APEND) & ~self.hold),
            seq.op.eq(self.cur_op),
            seq.oe.eq(self.oe),
            self.op_end.eq((last & out) | ((state == S_ARRAY) & ~seq.busy & (self.cur_op != OP_READ_ARRAY))),
            # The hook: the transfer's phase, else the sequencer's.
            self.oi.eq(Mux(x_ring, xoi, seq.oi)),
            self.oi_first.eq(Mux(x_ring, 1, seq.oi_first)),
            self.request.eq(Mux(state == S_XREQ, 1, seq.request)),
            self.phase_end.eq(seq.phase_end | (last & in_ring)),
            self.atomic_end.eq(seq.atomic_end | (last & in_ring)),
            self.current.eq(Mux(self.xfer, i_bus, seq.current)),
            # What `oi` is in the next cycle.
            self.oi_next.eq(seq.oi_next),
            If((state == S_BUSW) & self.bus_grant & in_ring, self.oi_next.eq(xoi)),
            If(state == S_XREQ, self.oi_next.eq(xoi)),
            If(state == S_XRUN, self.oi_next.eq(Mux(last | ~in_ring, 0, xoi))),
        ]
        is_prog = (self.op_in == OP_PROGRAM_LSB) | (self.op_in == OP_PROGRAM_MSB)
        fsm = [
            Case(state, {
                S_IDLE: If(self.avail,
                    self.cur_op.eq(self.op_in), out.eq(0),
                    state.eq(Mux(is_prog, S_BUSW, S_APEND)),
                ),
                S_BUSW: If(self.bus_grant,
                    If(in_ring, state.eq(S_XREQ)
                    ).Else(state.eq(S_XRUN), count.eq(t_in)),
                ),
                S_XREQ: If(self.oe,
                    state.eq(S_XRUN), count.eq(Mux(out, t_out, t_in)),
                ),
                S_XRUN: [
                    count.eq(count - 1),
                    If(last, state.eq(Mux(out, S_IDLE, S_APEND))),
                ],
                S_APEND: If(~self.hold, state.eq(S_ARRAY)),
                S_ARRAY: If(~seq.busy,
                    If(self.cur_op == OP_READ_ARRAY, out.eq(1), state.eq(S_BUSW)
                    ).Else(state.eq(S_IDLE)),
                ),
            }),
        ]
        if not with_skip:
            self.sync += fsm
            return
        # The skip: a cycle with `skip` > 0 stands for that many cycles of a transfer (the count moves
        # on) or of a wait (nothing moves); the sequencer skips on its own.
        self.skip  = Signal(32)
        self.room  = Signal(max(len(seq.room), len(count)))
        self.quiet = Signal()
        self.acc   = Signal.like(seq.acc)
        self.slope = Signal.like(seq.slope)
        self.running = Signal()
        self.comb += [
            seq.skip.eq(self.skip),
            self.room.eq(Mux(state == S_XRUN, count - 1, Mux(state == S_ARRAY, seq.room, 2**len(self.room) - 1))),
            self.acc.eq(Mux(self.xfer, i_bus << ACC_FRAC, seq.acc)),
            self.slope.eq(Mux(self.xfer, 0, seq.slope)),
            self.running.eq(self.xfer | seq.running),
            # APEND: the driver holds off (a pending start) or stops at the DCC start.
            self.quiet.eq(((state == S_IDLE) & ~self.avail) |
                          ((state == S_BUSW) & ~self.bus_grant) |
                          ((state == S_XREQ) & ~self.oe) |
                          ((state == S_XRUN) & ~last) |
                          (state == S_APEND) |
                          ((state == S_ARRAY) & seq.busy & seq.quiet)),
            If(self.skip != 0, self.oi_next.eq(self.oi)),
        ]
        self.sync += If(self.skip != 0,
            If(state == S_XRUN, count.eq(count - self.skip)),
        ).Else(*fsm)
