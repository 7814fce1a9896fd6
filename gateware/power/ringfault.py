"""Packet faults of the token ring (gateware/power/ring.py, `with_faults`): the injector on a hop,
and the ring controller's part (fault signals, detection, CSRs) as a mixin of `PowerRing`.

Packet faults (`with_faults`, in the SoC; not in the proofs' or the power harness's build). With
`protect` applied, every packet carries two more bits after the token count: a sequence bit
(toggled by the sender at every packet on its hop) and an even parity bit over key, tokens and
sequence bit, so T_trans = 1 + ceil(log2(TT + 1)) + 2 cycles per hop (TT = 60: 7 -> 9 cycles, the
paper's 7-bit packet + 2). The receiving node checks both on the packet's last bit and rejects a
bad packet (its tokens and key are never taken, so they cannot be granted): a flipped bit fails
the parity, a duplicated packet repeats the sequence bit, a lost packet is followed by one with
the same sequence bit as the last one taken. A lost packet that no other packet follows on its hop
is seen by the ring's audit (`PowerRing`: sum(HT) + in flight + sum(UT) = TT and one key, checked
every cycle from the nodes' registers: the nodes all live in the controller, the check is one adder
tree). On any of these the ring recovers as for an apply (drain, clear, inject) with its
configuration unchanged. Without `protect` (the reset) packets and timing are the paper's.
A `RingHopFault` between every two nodes drops, duplicates or corrupts one packet on command.

The measurement: gateware/power/faultbench.py and nandlab.ringfaults.
"""

from functools import reduce
from operator import or_, add

from migen import *

from litex.gen import LiteXModule

from nandlab.gateware.power.common import (TOKEN_BITS, FAULT_KINDS, FAULT_NONE, FAULT_DROP, FAULT_DUP,  # noqa: F401
    FAULT_FLIP, FAULT_CAUSES)


class RingHopFault(LiteXModule):
    """Fault injector on one hop (between a node's sender and the next node's receiver).

    Off (the reset) it is a wire. Armed (`arm` with `kind`), it acts on the next packet that starts
    on the hop: FAULT_DROP removes it, FAULT_DUP sends it twice (the copy right after the original;
    what the sender sends meanwhile is delayed by one packet until the hop is idle again),
    FAULT_FLIP inverts its bit `pos` (0 = the key bit; taken modulo the packet length for packets
    of 6 bits or more). `applied` pulses when the fault starts on a packet. `clear` (the ring's)
    forgets it all.
    """
    def __init__(self):
        self.up_valid, self.up_data = Signal(), Signal()      # From the sender.
        self.dn_valid, self.dn_data = Signal(), Signal()      # To the receiver.
        self.nbits   = Signal(4)
        self.arm     = Signal()
        self.kind    = Signal(2)
        self.pos     = Signal(4)
        self.clear   = Signal()
        self.pending = Signal()
        self.applied = Signal()
        self.applied_kind = Signal(2)
        self.delaying = Signal()       # The hop carries a delayed stream (after a duplicate).

        # # #

        up_cnt = Signal(4)             # Bit of the upstream packet now.
        pkind, ppos = Signal(2), Signal(4)
        act, akind, apos = Signal(), Signal(2), Signal(4)
        start = Signal()
        cur, ckind, cpos = Signal(), Signal(2), Signal(4)
        last = Signal()
        self.comb += [
            start.eq(self.up_valid & (up_cnt == 0)),
            self.applied.eq(start & self.pending),
            self.applied_kind.eq(pkind),
            cur.eq(act | self.applied),
            ckind.eq(Mux(act, akind, pkind)),
            cpos.eq(Mux(act, apos, ppos)),
            last.eq(self.up_valid & (up_cnt == self.nbits - 1)),
        ]
        p1, p2 = Signal(4), Signal(4)
        self.comb += [
            p1.eq(Mux(self.pos >= self.nbits, self.pos - self.nbits, self.pos)),
            p2.eq(Mux(p1 >= self.nbits, p1 - self.nbits, p1)),
        ]
        mod_v, mod_d = Signal(), Signal()
        self.comb += [
            mod_v.eq(self.up_valid & ~(cur & (ckind == FAULT_DROP))),
            mod_d.eq(self.up_data ^ (cur & (ckind == FAULT_FLIP) & (up_cnt == cpos))),
        ]
        # Delay line: dl_x[k] is the (modified) upstream k + 1 cycles ago.
        dl_v, dl_d = Signal(16), Signal(16)
        mask = Signal(16)
        delayed_r = Signal()
        self.comb += [
            mask.eq((C(1, 17) << self.nbits) - 1),
            self.delaying.eq(delayed_r & ((dl_v & mask) != 0)),
            If(self.delaying,
                self.dn_valid.eq((dl_v >> (self.nbits - 1))[0]),
                self.dn_data.eq((dl_d >> (self.nbits - 1))[0]),
            ).Else(
                self.dn_valid.eq(mod_v), self.dn_data.eq(mod_d),
            ),
        ]
        self.sync += [
            If(self.clear,
                self.pending.eq(0), act.eq(0), up_cnt.eq(0), dl_v.eq(0), dl_d.eq(0), delayed_r.eq(0),
            ).Else(
                If(self.arm & (self.kind != FAULT_NONE),
                    self.pending.eq(1), pkind.eq(self.kind), ppos.eq(p2),
                ).Elif(self.applied, self.pending.eq(0)),
                If(self.applied, act.eq(1), akind.eq(pkind), apos.eq(ppos)),
                If(last, act.eq(0)),
                If(self.up_valid, up_cnt.eq(Mux(last, 0, up_cnt + 1))),
                dl_v.eq(Cat(mod_v, dl_v[:-1])), dl_d.eq(Cat(mod_d, dl_d[:-1])),
                delayed_r.eq(self.delaying | (last & cur & (ckind == FAULT_DUP))),
            ),
        ]


class PowerRingFaults:
    """`PowerRing`'s fault part (used when it is built `with_faults`)."""
    def _fault_signals(self, n):
        self.hops = [RingHopFault() for _ in range(n)]
        for i, hop in enumerate(self.hops):
            setattr(self, f"hop{i}", hop)
        self.req_protect = Signal()        # Applied with the configuration.
        self.protect     = Signal()
        self.inj_hop     = Signal(8)       # Injector controls: hop, kind, bit, arm (pulse).
        self.inj_kind    = Signal(2)
        self.inj_pos     = Signal(4)
        self.inj_arm     = Signal()
        self.inj_pending = Signal()        # An armed fault waits for its packet.
        self.recovering  = Signal()        # Draining / clearing after a fault.
        self.injected    = [Signal(32, name=f"injected_{k}") for k in FAULT_KINDS[1:]]
        self.detected    = [Signal(32, name=f"detected_{c}") for c in FAULT_CAUSES]
        self.recoveries  = Signal(32)
        self.audit_bad   = Signal()        # Registered audit result (one cycle late).
        for i, hop in enumerate(self.hops):
            self.comb += [hop.arm.eq(self.inj_arm & (self.inj_hop == i)), hop.kind.eq(self.inj_kind),
                          hop.pos.eq(self.inj_pos)]
        self.comb += self.inj_pending.eq(reduce(or_, [h.pending for h in self.hops]))
        for k in range(1, len(FAULT_KINDS)):
            hit = reduce(or_, [h.applied & (h.applied_kind == k) for h in self.hops])
            self.sync += If(hit, self.injected[k - 1].eq(self.injected[k - 1] + 1))

    def _fault_detection(self, nodes, audit_ext=False):
        """Returns the signal that starts a recovery: a node rejected a packet, or the audit failed
        (the audit is registered: its adder tree stays off the ring's paths). `audit_ext`: the audit's
        result is an input, `audit_ext` (a ring that sees only part of its tokens: the formal node model)."""
        if audit_ext:
            self.audit_ext = Signal()
            self.comb += self.audit_bad.eq(self.audit_ext)
        else:
            total = Signal(TOKEN_BITS + 4)
            keys = Signal(max=3 * len(nodes) + 1)
            self.comb += [
                total.eq(reduce(add, [nd.ht + nd.ut + nd.tx_tokens for nd in nodes])),
                keys.eq(reduce(add, [nd.key + nd.tx_key + nd.key_used for nd in nodes])),
            ]
            self.sync += self.audit_bad.eq(self.running & self.protect & ((total != self.tt) | (keys != 1)))
        bad_par = reduce(or_, [nd.rx_bad_parity for nd in nodes])
        bad_seq = reduce(or_, [nd.rx_bad_seq for nd in nodes])
        fault = Signal()
        self.comb += fault.eq(self.running & self.protect & (bad_par | bad_seq | self.audit_bad))
        self.sync += If(fault,
            If(bad_par, self.detected[0].eq(self.detected[0] + 1)
            ).Elif(bad_seq, self.detected[1].eq(self.detected[1] + 1)
            ).Else(self.detected[2].eq(self.detected[2] + 1)),
        )
        return fault

    def _add_fault_csr(self):
        from litex.soc.interconnect.csr import CSRStorage, CSRStatus
        self._fault_ctl = CSRStorage(fields=fault_ctl_fields(),
            description="Packet protection (applied with the configuration) and the hops' fault injector.")
        self._fault_status = CSRStatus(fields=fault_status_fields(), description="Packet protection state.")
        self.comb += [
            self.req_protect.eq(self._fault_ctl.fields.protect),
            self.inj_hop.eq(self._fault_ctl.fields.hop),
            self.inj_kind.eq(self._fault_ctl.fields.kind),
            self.inj_pos.eq(self._fault_ctl.fields.pos),
            self.inj_arm.eq(self._fault_ctl.fields.arm),
            self._fault_status.fields.protect.eq(self.protect),
            self._fault_status.fields.pending.eq(self.inj_pending),
            self._fault_status.fields.recovering.eq(self.recovering),
        ]
        for kind, sig in zip(FAULT_KINDS[1:], self.injected):
            csr = CSRStatus(32, name=f"injected_{kind}", description=f"Packets the injector hit with '{kind}'.")
            setattr(self, f"_injected_{kind}", csr)
            self.comb += csr.status.eq(sig)
        for cause, sig in zip(FAULT_CAUSES, self.detected):
            csr = CSRStatus(32, name=f"detected_{cause}", description=f"Faults found first by the {cause} check.")
            setattr(self, f"_detected_{cause}", csr)
            self.comb += csr.status.eq(sig)
        self._recoveries = CSRStatus(32, description="Recoveries (drain, clear, inject) after a fault.")
        self.comb += self._recoveries.status.eq(self.recoveries)



def fault_ctl_fields():
    from litex.soc.interconnect.csr import CSRField
    return [
        CSRField("protect", size=1, description="Sequence and parity bits on every packet (taken on apply)."),
        CSRField("kind", size=2, offset=4, description="Fault to inject.",
                 values=[(str(i), k) for i, k in enumerate(FAULT_KINDS)]),
        CSRField("pos", size=4, offset=8, description="Bit a flip inverts (0: the key bit)."),
        CSRField("hop", size=8, offset=16, description="Hop (the node it ends at)."),
        CSRField("arm", size=1, offset=24, pulse=True, description="Arm: the next packet on the hop gets the fault."),
    ]


def fault_status_fields():
    from litex.soc.interconnect.csr import CSRField
    return [
        CSRField("protect", size=1, description="Packet protection applied."),
        CSRField("pending", size=1, offset=1, description="An armed fault waits for a packet."),
        CSRField("recovering", size=1, offset=2, description="The ring recovers from a fault."),
    ]
