"""A die's ring node shared between its array phases and the channel controller's data transfers (issue 18).

In the SoC the die emulator's sequencer asks its ring node for the tokens of each array phase (OI/OE,
gateware/power/hook.py), and the die draws the bus current (waveforms.BUS_CURRENT per byte moved in a
cycle) whenever the channel controller moves bytes to or from it. `PowerTransferArbiter` sits between
the die and its hook and puts those transfers under the ring as the CPU-less harness does
(gateware/power/channel.py): a transfer is an atomic operation of its own, data input (D_IN, OI 0x81)
or data output (R_A3, OI 0x51), whose RT the firmware loads with the array's (nandlab.tokens
`with_transfers`).

The controller (gateware/onfi/controller/sequencer.py, "Power" in the controller's package docstring)
raises `x_request` before the first data beat of a bus turn's transfer (DIN, DIN_PARAM, DOUT or STATUS
micro-op) and moves nothing until `x_grant`; it pulses `x_end` when the turn's data is over (a few
cycles after, so the last byte has reached the die). Between the two the node holds the transfer's
tokens. When the ring does not govern (`free`: NPM, not draining) the controller does not ask at
all: no cycle is added and the node sees the array only.

One node serves one phase at a time, so the die's array and its transfers take turns at the node
(`owner`): the array keeps it while it is inside an atomic operation or waiting for one's grant; a
waiting transfer takes it at the array's next atomic boundary (its `atomic_end`, or while the array
is idle), and the array's next request then waits until the transfer ends. They overlap only on a
cache operation (15h, 31h), whose array works while the bus moves the next page; under a token policy
that overlap is given up, under NPM it stays. The node is handed over only in a cycle in which neither
side has a request pending at it, so its two-cycle decision (request, RT read, grant) always belongs
to the side that is presented.

No deadlock: a transfer waits for its tokens while the controller holds the channel's bus, but no
token holder needs that bus to give its tokens back. Tokens are held by (a) array phases, which end
on the die's own timers, (b) transfers already granted, which own their channel's bus (a channel
moves one way's data at a time) or have left it and are counting down their release, and end without
any token, and (c) nodes waiting with the key (MTPM), which the ring's own argument covers: they are
granted once (a) and (b) return enough. A transfer waiting for its own die's array waits for an
atomic boundary, which the array reaches on its timers. So every wait ends, as the ring's does for
array phases alone. (Tokens never go to a transfer without its bus: the request is raised only by the
controller running that way.)
"""

from migen import *

from litex.gen import LiteXModule

from nandlab.gateware.power.channel import OI_DIN, OI_DOUT, transfer_rts
from nandlab.gateware.power.common import OI_BITS
from nandlab.gateware.power.hook import HANDSHAKE
from nandlab.nand_model import waveforms as wf
from nandlab.nand_model.current import I_FRAC_BITS

# The most a die emulator draws moving data: two bytes a cycle (NV-DDR) of its bus unit
# (nand_model/die/power.py), in I_max / 4096. A transfer's RT is taken from it, whatever the mode.
SOC_I_BUS = 2 * int(round(wf.BUS_CURRENT * (1 << I_FRAC_BITS)))


def soc_transfer_rts(tg):
    """{OI: RT} of the SoC's transfers at granularity `tg` (eq. 1 over SOC_I_BUS)."""
    return transfer_rts(SOC_I_BUS, tg)

# States of the transfer side.
X_IDLE, X_WAIT, X_RUN = range(3)


class PowerTransferArbiter(LiteXModule):
    """Presents the power hook's signals (oi, oi_next, oi_first, request, phase_end, atomic_end, oe,
    current: NandLabPowerHook.connect takes it as a die) for `die`'s array phases and for the transfers
    the controller asks for (`x_*`)."""
    def __init__(self, die):
        # Controller side.
        self.x_request = Signal()         # Asks for a transfer's tokens (held until `x_grant`).
        self.x_out     = Signal()         # With x_request: data output (else data input).
        self.x_grant   = Signal()         # Pulse: granted; the bytes may move.
        self.x_end     = Signal()         # Pulse: the transfer is over (its tokens go back).
        self.free      = Signal()         # In: the ring does not govern (NPM, not draining).
        # Node side (the hook's fields).
        for name, bits in HANDSHAKE:
            setattr(self, name, Signal(bits, name=name))
        self.oe      = Signal()
        self.current = Signal.like(die.current)
        # Observation.
        self.owner   = Signal()           # 1: the node serves the transfer side.
        self.x_state = Signal(2)

        # # #

        x_state, owner = self.x_state, self.owner
        x_oi = Signal(OI_BITS)            # The transfer's OI, latched with its request.
        arr_in = Signal()                 # The array is inside an atomic operation.
        x_wants, arr_quiet, owner_next = Signal(), Signal(), Signal()
        x_state_next, x_oi_next = Signal(2), Signal(OI_BITS)
        x_ends = Signal()
        self.comb += [
            x_wants.eq((x_state == X_WAIT) | ((x_state == X_IDLE) & self.x_request)),
            x_ends.eq((x_state == X_RUN) & self.x_end),
            # The array has nothing pending at the node: idle, or ending its atomic operation now.
            arr_quiet.eq((~arr_in & ~die.request) | die.atomic_end),
            owner_next.eq(Mux(owner, ~x_ends & ~((x_state == X_IDLE) & ~self.x_request), x_wants & arr_quiet)),
            # The transfer side's state and OI in the next cycle (the node reads its table a cycle early).
            x_state_next.eq(x_state),
            Case(x_state, {
                X_IDLE: If(self.x_request, x_state_next.eq(X_WAIT)),
                X_WAIT: If(owner & self.oe, x_state_next.eq(X_RUN)),
                X_RUN:  If(self.x_end, x_state_next.eq(X_IDLE)),
            }),
            x_oi_next.eq(Mux(x_state_next == X_IDLE, 0,
                             Mux(x_state == X_IDLE, Mux(self.x_out, OI_DOUT, OI_DIN), x_oi))),
            # The node: the owner's handshake; the other side waits.
            If(owner,
                self.oi.eq(Mux(x_state == X_IDLE, 0, x_oi)),
                self.oi_first.eq(1),
                self.request.eq(x_state == X_WAIT),
                self.phase_end.eq(x_ends),
                self.atomic_end.eq(x_ends),
                die.oe.eq(0),
            ).Else(
                self.oi.eq(die.oi),
                self.oi_first.eq(die.oi_first),
                self.request.eq(die.request),
                self.phase_end.eq(die.phase_end),
                self.atomic_end.eq(die.atomic_end),
                die.oe.eq(self.oe),
            ),
            self.oi_next.eq(Mux(owner_next, x_oi_next, die.oi_next)),
            self.x_grant.eq(owner & (x_state == X_WAIT) & self.oe),
            self.current.eq(die.current),
        ]
        self.sync += [
            owner.eq(owner_next),
            x_state.eq(x_state_next),
            If(x_state == X_IDLE, x_oi.eq(Mux(self.x_out, OI_DOUT, OI_DIN))),
            If(die.atomic_end, arr_in.eq(0)
            ).Elif(~owner & die.request & die.oi_first & self.oe, arr_in.eq(1)),
        ]
