"""Token-ring fault bench (simulation only): a protected `PowerRing` under a random workload, faults
injected one at a time on random hops at random times, and the ring's invariants checked in every
cycle by counters. Verilator runs it at full speed: the testbench (tests/tb/ring_fault_tb.py) only
configures it, starts it and reads the counters at the end.

Dies: each node's die is a random version of the proofs' die model (tests/formal/ring_props.sv):
program (P_A1 15/8/2, P_A2 7/5/2), read execution (R_A2 13/9/6/3), erase (E_A1 11/9/7/5/3) at
TG = 4 (`nandlab.formal.TABLE_TG4`), phases of 4..35 cycles, a new operation soon after the last
(busy: a die is idle one cycle in four on average).

Faults: after a random pause (0..1023 cycles) in which the ring runs, the scheduler arms the
injector of a random hop with a random kind (drop, duplicate, flip a random bit), waits for the
recovery it must cause, and goes on; `faults` counts the recoveries seen, the ring's own counters
say what was injected and what found it.

Checks (cycles counted where they fail; all must stay 0):
  `over_budget`  sum of the RTs of the running phases > TT (token policies; any cycle, faults and
                 recoveries included). `max_need` is the largest sum seen.
  `over_tokens`  sum(HT) + in flight + sum(UT) > TT or more than one key (any cycle).
  `conservation` sum(HT) + in flight + sum(UT) != TT or keys != 1 while the ring runs and no fault
                 has been injected since the last recovery.
  `ppz_two`      PPM: two dies in the peak-power zone.
"""

from functools import reduce
from operator import add, or_

from migen import *

from litex.gen import LiteXModule

from nandlab.gateware.power.ring import PowerRing
from nandlab.gateware.power.common import MODE_PPM, MODE_KMTPM_SUB, TOKEN_BITS

# The proofs' TG = 4 table (nandlab.formal.TABLE_TG4, checked against the token compiler there).
TABLE_TG4 = {0x11: 15, 0x12: 8, 0x13: 2, 0x21: 7, 0x22: 5, 0x23: 2,
             0x41: 13, 0x42: 9, 0x43: 6, 0x44: 3,
             0x61: 11, 0x62: 9, 0x63: 7, 0x64: 5, 0x65: 3}
# Operations: (phases' OIs, which of them start an atomic operation).
OPS = [([0x11, 0x12, 0x13, 0x21, 0x22, 0x23], [1, 0, 0, 1, 0, 0]),
       ([0x41, 0x42, 0x43, 0x44], [1, 0, 0, 0]),
       ([0x61, 0x62, 0x63, 0x64, 0x65], [1, 0, 0, 0, 0])]


def xorshift32(x):
    """One step of Marsaglia's xorshift32, as expressions."""
    a = Signal(32)
    b = Signal(32)
    c = Signal(32)
    return a, b, c, [a.eq(x ^ (x << 13)[:32]), b.eq(a ^ (a >> 17)), c.eq(b ^ (b << 5)[:32])]


def rt_of(oi):
    return reduce(or_, [Mux(oi == k, v, 0) for k, v in TABLE_TG4.items()], 0)


class RandomDie(LiteXModule):
    def __init__(self, node, seed, go):
        self.ops_done = Signal(32)
        self.need     = Signal(TOKEN_BITS)      # RT the running phase accounts for (by policy).
        self.in_ppz   = Signal()

        # # #

        rng = Signal(32)
        a, b, nxt, steps = xorshift32(rng)
        self.comb += steps
        self.seed_load = Signal()
        self.sync += If(self.seed_load, rng.eq(seed)).Else(rng.eq(nxt))
        st   = Signal(2)       # 0 idle, 1 request, 2 run
        op   = Signal(2)
        ph   = Signal(3)
        left = Signal(6)
        first_ph = Signal(3)   # The phase that started the atomic operation running now.
        ois    = Array(Array(C(o, 8) for o in oi + [0] * (8 - len(oi))) for oi, _ in OPS)
        firsts = Array(Array(C(f, 1) for f in fs + [1] * (8 - len(fs))) for _, fs in OPS)
        nph    = Array(C(len(oi), 3) for oi, _ in OPS)
        oi = Signal(8)
        more, last = Signal(), Signal()
        self.comb += [
            oi.eq(ois[op][ph]),
            node.request.eq(st == 1),
            node.oi.eq(Mux(st == 0, 0, oi)),
            node.oi_first.eq((st != 0) & firsts[op][ph]),
            last.eq((st == 2) & (left == 1)),
            more.eq(ph + 1 < nph[op]),
            node.phase_end.eq(last),
            node.atomic_end.eq(last & (~more | firsts[op][ph + 1])),
            self.in_ppz.eq((st == 2) & (oi == 0x11)),
            self.need.eq(Mux((st != 2) | (node.mode < 2), 0,
                             rt_of(Mux(node.mode == MODE_KMTPM_SUB, oi, ois[op][first_ph])))),
        ]
        pick = Signal(2)
        self.comb += pick.eq(Mux(rng[2:4] == 3, 1, rng[2:4]))
        self.sync += [
            Case(st, {
                0: If(go & (rng[0:2] != 0), st.eq(1), op.eq(pick), ph.eq(0), first_ph.eq(0)),
                1: If(node.oe, st.eq(2), left.eq(4 + rng[4:9])),
                2: [left.eq(left - 1),
                    If(last,
                        If(more,
                            st.eq(1), ph.eq(ph + 1),
                            If(firsts[op][ph + 1], first_ph.eq(ph + 1)),
                        ).Else(st.eq(0), self.ops_done.eq(self.ops_done + 1)),
                    )],
            }),
        ]


class RingFaultBench(LiteXModule):
    def __init__(self, n=4, tx_ahead=False):
        assert n & (n - 1) == 0, "hops are drawn with a mask"
        # Configuration (the testbench applies it, then raises `go`).
        self.ring = ring = PowerRing(n, table=TABLE_TG4, with_faults=True, tx_ahead=tx_ahead)
        self.seed    = Signal(32)
        self.load    = Signal()          # Pulse: load the seed into every generator.
        self.go      = Signal()          # Dies start operations; faults are injected while high.
        self.target  = Signal(32)        # Faults to inject (0: none).
        self.kinds   = Signal(3, reset=0b111)   # Kinds drawn (bit k-1: kind k).
        # Results.
        self.faults       = Signal(32)   # Faults injected and recovered from.
        self.done         = Signal()
        self.cycles       = Signal(40)
        self.stuck        = Signal()     # A fault waited 1 M cycles for its recovery.
        self.over_budget  = Signal(32)
        self.over_tokens  = Signal(32)
        self.conservation = Signal(32)
        self.ppz_two      = Signal(32)
        self.max_need     = Signal(12)
        self.ops_done     = Signal(40)

        # # #

        dies = [RandomDie(node, self.seed ^ (0x9E3779B9 * (i + 1) & 0xFFFFFFFF), self.go)
                for i, node in enumerate(ring.nodes)]
        for i, d in enumerate(dies):
            setattr(self, f"die{i}", d)
            self.comb += d.seed_load.eq(self.load)
        self.comb += self.ops_done.eq(reduce(add, [d.ops_done for d in dies]))

        # Checks.
        total, keys, need = Signal(12), Signal(6), Signal(12)
        ppz = Signal(4)
        nodes = ring.nodes
        self.comb += [
            total.eq(reduce(add, [nd.ht + nd.ut + nd.tx_tokens for nd in nodes])),
            keys.eq(reduce(add, [nd.key + nd.tx_key + nd.key_used for nd in nodes])),
            need.eq(reduce(add, [d.need for d in dies])),
            ppz.eq(reduce(add, [d.in_ppz for d in dies])),
        ]
        episode = Signal()               # A fault hit a packet; no recovery since.
        applied = reduce(or_, [h.applied for h in ring.hops])
        configured = Signal()
        self.sync += [
            If(ring.running, configured.eq(1)),
            If(applied, episode.eq(1)).Elif(ring.injecting, episode.eq(0)),
            If(configured,
                If(need > ring.tt, self.over_budget.eq(self.over_budget + 1)),
                If(need > self.max_need, self.max_need.eq(need)),
                If((total > ring.tt) | (keys > 1), self.over_tokens.eq(self.over_tokens + 1)),
                If((ring.mode == MODE_PPM) & (ppz > 1), self.ppz_two.eq(self.ppz_two + 1)),
            ),
            If(ring.running & ~episode & ~applied & ((total != ring.tt) | (keys != 1)),
                self.conservation.eq(self.conservation + 1)),
            If(self.go & ~self.done, self.cycles.eq(self.cycles + 1)),
        ]

        # Fault scheduler.
        rng = Signal(32)
        a, b, nxt, steps = xorshift32(rng)
        self.comb += steps
        self.sync += If(self.load, rng.eq(self.seed ^ 0x5bd1e995)).Else(rng.eq(nxt))
        wait = Signal(10)
        watch = Signal(21)
        seen = Signal(32)                # ring.recoveries when the fault was armed.
        kind = Signal(2)
        self.comb += kind.eq(rng[10:12])
        fsm = FSM(reset_state="IDLE")
        self.submodules.fsm = fsm
        fsm.act("IDLE",
            If(self.go & (self.target != 0), NextValue(wait, rng[:10]), NextState("PAUSE")),
        )
        fsm.act("PAUSE",
            If(wait != 0, NextValue(wait, wait - 1)
            ).Elif(ring.running & ~ring.recovering & (kind != 0) & (Cat(0, self.kinds) >> kind)[0],
                ring.inj_arm.eq(1),
                NextValue(seen, ring.recoveries), NextValue(watch, 0),
                NextState("WAIT"),
            ),
        )
        self.comb += [
            ring.inj_hop.eq(rng[12:12 + log2_int(n)] if n > 1 else 0),
            ring.inj_kind.eq(kind),
            ring.inj_pos.eq(rng[16:20]),
        ]
        fsm.act("WAIT",
            NextValue(watch, watch + 1),
            If(watch == 2**21 - 1, NextValue(self.stuck, 1), NextState("END")),
            If((ring.recoveries != seen) & ring.running,
                NextValue(self.faults, self.faults + 1),
                If(self.faults + 1 == self.target, NextState("END")
                ).Else(NextValue(wait, rng[:10]), NextState("PAUSE")),
            ),
        )
        fsm.act("END", self.done.eq(1))
