"""The SoC's token rings over every channel's dies, behind one set of CSRs (`power_ring_*`).

`topology` (the SoC's `power_topology`, common.TOPOLOGIES) lays the rings out:

  single       one ring through every die of every channel (the MTPM paper's scenario 1);
  per_channel  a ring per channel; the configuration (mode, TG, alpha) is each ring's, so the SoC's
               budget is rings x alpha x I_max (the paper's scenario 2: give each ring alpha / channels);
  exchange     a ring per channel with an exchange node on each (gateware/power/exchange.py): alpha is
               the global budget, TT the global token total, each ring starts with its home share
               TT // rings and borrows what the others do not use. A table whose largest RT is above
               the home share is refused (ERR_RT): two rings each waiting for more than its share
               while holding it would wait for ever.

With one channel the three are the same ring. The default, per_channel, keeps each ring as the paper
and the proofs have it, with packet protection and its fault injectors (`with_faults`); the exchange
node forwards the paper's packets only, so an exchange build has no packet protection.

One configuration goes to every ring in the same cycle (the exchange needs it: every ring drains,
clears and injects together), and so does a token-table write, except to the nodes whose bit of
`table_keep` is set (per-die tables, docs/power_deviation.md). Node registers are numbered over all
channels (channel x dies + die). Per ring (`ring_sel`): its home share, the tokens its dies use now
and the most they used since the last apply (a ring above its share runs on borrowed tokens), and
its exchange node's counters. `tokens` is the global sum of tokens held, in flight and in use;
`cons_errors` counts the cycles in which, every ring running, it differed from the global TT.
"""

from functools import reduce
from operator import add, and_, or_

from migen import *

from litex.gen import LiteXModule

from nandlab.gateware.power.common import (TOPOLOGIES, DEFAULT_TOPOLOGY, DEFAULT_TG, DEFAULT_ALPHA, TOKEN_BITS,
    OI_BITS, FAULT_KINDS, FAULT_CAUSES, TG_RANGE, ALPHA_RANGE, ERR_RT)
from nandlab.gateware.power.ring import PowerRing, add_ring_csrs
from nandlab.gateware.power.ringfault import fault_ctl_fields, fault_status_fields
from nandlab.gateware.power.exchange import PowerExchange, share_factor


def check_topology(topology, channels):
    """Refuse a topology the SoC cannot build (ValueError saying why)."""
    if topology not in TOPOLOGIES:
        raise ValueError(f"power topology '{topology}' unknown; valid: {', '.join(TOPOLOGIES)}")
    if topology == "exchange" and channels < 2:
        raise ValueError(f"power topology 'exchange' shares a budget between the rings of several channels; "
                         f"this SoC has {channels} channel: use 'single' or 'per_channel', or more channels")


class PowerRings(LiteXModule):
    """The rings of `channels` channels of `dies` dies each, laid out by `topology`; `oi_ahead`, `tx_ahead`
    and `with_faults` as PowerRing's (no faults in an exchange build). Exposes what the SoC's monitor and
    telemetry need of a ring: `nodes` (every die's, in die order), `running` (every ring runs),
    `mode`, `alpha`, and `budget` (the SoC's budget in I_max)."""
    def __init__(self, channels, dies, topology=DEFAULT_TOPOLOGY, oi_ahead=False, with_faults=False, tx_ahead=False):
        check_topology(topology, channels)
        n = channels * dies
        xchg = topology == "exchange"
        sizes = [n] if topology == "single" or channels == 1 else [dies] * channels
        self.topology, self.size = topology, sizes[0]
        self.with_faults = with_faults and not xchg
        self.rings = rings = [PowerRing(s, oi_ahead=oi_ahead, tx_ahead=tx_ahead, with_faults=self.with_faults,
                                   with_exchange=xchg)
                              for s in sizes]
        for k, r in enumerate(rings):
            self.add_module(name=f"ring{k}", module=r)
        self.nodes = [nd for r in rings for nd in r.nodes]
        # Configuration (CSRs), to every ring.
        self.req_mode    = Signal(3)
        self.req_tg      = Signal(3, reset=DEFAULT_TG)
        self.req_alpha   = Signal(4, reset=DEFAULT_ALPHA)
        self.apply       = Signal()
        self.table_we    = Signal()
        self.table_adr   = Signal(OI_BITS)
        self.table_dat   = Signal(TOKEN_BITS)
        self.table_clear = Signal()
        self.pause       = Signal()
        self.table_keep  = Signal(n)          # Bit i set: node i keeps its table on a write.
        # State.
        self.running   = Signal()
        self.error     = Signal(2)
        self.mode, self.tg, self.alpha = rings[0].mode, rings[0].tg, rings[0].alpha
        self.tt, self.nbits, self.table_max = rings[0].tt, rings[0].nbits, rings[0].table_max
        self.budget    = Signal(8)            # x I_max: alpha, rings x alpha with a ring per channel.
        self.global_tt = Signal(TOKEN_BITS + 4)
        self.tokens    = Signal(TOKEN_BITS + 4)
        self.cons_errors = Signal(32)
        self.share   = [Signal(TOKEN_BITS, name=f"share{k}") for k in range(len(rings))]
        self.ut      = [Signal(TOKEN_BITS + 4, name=f"ut{k}") for k in range(len(rings))]
        self.ut_peak = [Signal(TOKEN_BITS + 4, name=f"ut_peak{k}") for k in range(len(rings))]
        self.lent    = [Signal(32, name=f"lent{k}") for k in range(len(rings))]
        self.borrowed = [Signal(32, name=f"borrowed{k}") for k in range(len(rings))]

        # # #

        apply, share_err = self._share_check(xchg)
        for k, r in enumerate(rings):
            self.comb += [getattr(r, a).eq(getattr(self, a)) for a in ("req_mode", "req_tg", "req_alpha",
                          "table_we", "table_adr", "table_dat", "table_clear", "pause")]
            self.comb += [r.apply.eq(apply), r.table_keep.eq(self.table_keep[k * self.size:(k + 1) * self.size])]
        per_ring = topology == "per_channel" and len(rings) > 1
        self.budget_max = ALPHA_RANGE[1] * (len(rings) if per_ring else 1)    # (the monitor's width)
        self.comb += [
            self.running.eq(reduce(and_, [r.running for r in rings])),
            self.error.eq(Mux(share_err, ERR_RT, reduce(or_, [r.error for r in rings]))),
            self.budget.eq(self.alpha * (len(rings) if per_ring else 1)),
        ]
        if xchg:
            self.exchange = PowerExchange(rings)
            self.comb += [self.tokens.eq(self.exchange.tokens), self.global_tt.eq(self.tt)]
            for k, xn in enumerate(self.exchange.xnodes):
                self.comb += [self.share[k].eq(rings[k].inject_tt), self.lent[k].eq(xn.lent),
                              self.borrowed[k].eq(xn.borrowed)]
        else:
            self.comb += [
                self.tokens.eq(reduce(add, [nd.ht + nd.ut + nd.tx_tokens for nd in self.nodes])),
                self.global_tt.eq(reduce(add, [r.tt for r in rings])),
            ]
            self.comb += [self.share[k].eq(r.tt) for k, r in enumerate(rings)]
        # Registered: the adder trees stay off the rings' paths.
        tok_q, tt_q, run_q = Signal.like(self.tokens), Signal.like(self.global_tt), Signal()
        self.sync += [
            tok_q.eq(self.tokens), tt_q.eq(self.global_tt), run_q.eq(self.running),
            If(self.apply, self.cons_errors.eq(0)
            ).Elif(run_q & (tok_q != tt_q), self.cons_errors.eq(self.cons_errors + 1)),
        ]
        for k, r in enumerate(rings):
            self.sync += [
                self.ut[k].eq(reduce(add, [nd.ut for nd in r.nodes])),
                If(r.nodes[0].clear, self.ut_peak[k].eq(0)
                ).Elif(self.ut[k] > self.ut_peak[k], self.ut_peak[k].eq(self.ut[k])),
            ]
        if self.with_faults:
            self._fault_controls()

    def _share_check(self, xchg):
        """With exchange, an apply whose largest RT is above a ring's home share, TT // rings, is refused
        (error ERR_RT, the rings keep their configuration): two rings each waiting for a phase above its
        share, each holding its share, would wait for ever (neither is idle, so neither lends).
        Returns (the apply the rings get, the refusal's error flag)."""
        share_err = Signal()
        if not xchg:
            return self.apply, share_err
        req_tt, product, over = Signal(TOKEN_BITS + 4), Signal(TOKEN_BITS + 21), Signal()
        in_range = ((self.req_tg >= TG_RANGE[0]) & (self.req_tg <= TG_RANGE[1]) &
                    (self.req_alpha >= ALPHA_RANGE[0]) & (self.req_alpha <= ALPHA_RANGE[1]))
        self.comb += [
            req_tt.eq(self.req_alpha * ((1 << self.req_tg) - 1)),
            product.eq(req_tt * share_factor(len(self.rings))),      # (a signal of its own width: see exchange.py)
            over.eq(in_range & (self.table_max > (product >> 16))),
        ]
        self.sync += If(self.apply, share_err.eq(over))
        return self.apply & ~over, share_err

    def _fault_controls(self):
        """Packet protection to every ring, the injector's hop numbered over all nodes."""
        self.req_protect = Signal()
        self.inj_hop, self.inj_kind, self.inj_pos, self.inj_arm = Signal(8), Signal(2), Signal(4), Signal()
        for k, r in enumerate(self.rings):
            first = k * self.size
            self.comb += [
                r.req_protect.eq(self.req_protect), r.inj_kind.eq(self.inj_kind), r.inj_pos.eq(self.inj_pos),
                r.inj_hop.eq(self.inj_hop - first),
                r.inj_arm.eq(self.inj_arm & (self.inj_hop >= first) & (self.inj_hop < first + self.size)),
            ]

    def add_csr(self):
        add_ring_csrs(self, "Power ring configuration (every ring's); written values take effect on apply.",
                      "Token table entry: written on each write of this CSR into every node table_keep leaves.",
                      "Power ring state (running: every ring runs; TT: a ring's, or the global TT with exchange).",
                      "Node (channel x dies + die) shown in node_state / node_waited / node_grants.",
                      table_keep="Bit i set: node i (channel x dies + die) keeps its token table on a table "
                                 "write (0, the reset: every node takes it).")
        self._add_ring_csr()
        if self.with_faults:
            self._add_fault_csr()

    def _add_ring_csr(self):
        from litex.soc.interconnect.csr import CSRStorage, CSRStatus, CSRField
        self._tokens = CSRStatus(16, description="Global sum of tokens held, in flight and in use (= the global "
                                                 "TT while the rings run).")
        self._cons_errors = CSRStatus(32, description="Cycles, every ring running, in which `tokens` differed "
                                                      "from the global TT (cleared on apply).")
        self._ring_sel = CSRStorage(8, description=f"Ring shown in ring_status / ring_lent / ring_borrowed "
                                                   f"(0..{len(self.rings) - 1}: the channel's; one ring: 0).")
        self._ring_status = CSRStatus(fields=[
            CSRField("running", size=1, description="The ring runs."),
            CSRField("ut", size=8, offset=8, description="Tokens its dies use now."),
            CSRField("ut_peak", size=8, offset=16, description="Most tokens its dies used at once since the last apply."),
            CSRField("share", size=8, offset=24, description="Its home share: its TT, or TT // rings with exchange."),
        ], description="State of the ring ring_sel picks.")
        self._ring_lent = CSRStatus(32, description="Tokens its exchange node gave to the pool (0 without exchange).")
        self._ring_borrowed = CSRStatus(32, description="Tokens its exchange node took from the pool.")
        sel = self._ring_sel.storage
        pick = lambda sigs: Array(sigs)[sel]
        self.comb += [
            self._tokens.status.eq(self.tokens),
            self._cons_errors.status.eq(self.cons_errors),
            self._ring_status.fields.running.eq(pick([r.running for r in self.rings])),
            self._ring_status.fields.ut.eq(pick(self.ut)),
            self._ring_status.fields.ut_peak.eq(pick(self.ut_peak)),
            self._ring_status.fields.share.eq(pick(self.share)),
            self._ring_lent.status.eq(pick(self.lent)),
            self._ring_borrowed.status.eq(pick(self.borrowed)),
        ]

    def _add_fault_csr(self):
        """PowerRingFaults' CSRs over every ring: counters summed, state OR-ed."""
        from litex.soc.interconnect.csr import CSRStorage, CSRStatus
        self._fault_ctl = CSRStorage(fields=fault_ctl_fields(),
            description="Packet protection (applied with the configuration) and the hops' fault injector.")
        self._fault_status = CSRStatus(fields=fault_status_fields(), description="Packet protection state.")
        rings = self.rings
        self.comb += [
            self.req_protect.eq(self._fault_ctl.fields.protect),
            self.inj_hop.eq(self._fault_ctl.fields.hop),
            self.inj_kind.eq(self._fault_ctl.fields.kind),
            self.inj_pos.eq(self._fault_ctl.fields.pos),
            self.inj_arm.eq(self._fault_ctl.fields.arm),
            self._fault_status.fields.protect.eq(rings[0].protect),
            self._fault_status.fields.pending.eq(reduce(or_, [r.inj_pending for r in rings])),
            self._fault_status.fields.recovering.eq(reduce(or_, [r.recovering for r in rings])),
        ]
        total = lambda sigs: reduce(add, sigs)
        for k, kind in enumerate(FAULT_KINDS[1:]):
            csr = CSRStatus(32, name=f"injected_{kind}", description=f"Packets the injector hit with '{kind}'.")
            setattr(self, f"_injected_{kind}", csr)
            self.comb += csr.status.eq(total([r.injected[k] for r in rings]))
        for k, cause in enumerate(FAULT_CAUSES):
            csr = CSRStatus(32, name=f"detected_{cause}", description=f"Faults found first by the {cause} check.")
            setattr(self, f"_detected_{cause}", csr)
            self.comb += csr.status.eq(total([r.detected[k] for r in rings]))
        self._recoveries = CSRStatus(32, description="Recoveries (drain, clear, inject) after a fault.")
        self.comb += self._recoveries.status.eq(total([r.recoveries for r in rings]))
