"""The power harness's exact skip: the token ring jumps N cycles in one (simulation only).

The harness (gateware/power/harness.py, built `with_skip`) lets its C++ driver (harness_skip.h)
replace N cycles by one when nothing in them can change what happens next: every die is inside a
segment of its waveform (not its last cycle), waits for OE, or is idle; the ring grants nothing and
no token changes hands. The dies then only count down and ramp their current (NandLabDieSequencer's
`skip`), the harness and the monitor add N to their counters (the driver computes the monitor's
window statistics from the dies' ramps), and the ring does what this module does.

The ring never stands still (the key and the free tokens circulate, even in NPM), but while no die
asks for or returns tokens it is a rotation: every packet moves on one bit per cycle, one node per
T_trans = `nbits` cycles, and after P = nodes x nbits cycles each is back where it was. `quiet`
says the coming cycles are such a rotation until a packet reaches a node where it stops:

* every node has settled: no grant now or in the last cycle, no KMTPM linger, and its one-cycle
  registers (the request, its RT and the pre-charge flag) already hold what they will hold;
* packets on neighbouring nodes are more than T_trans apart: a packet never reaches a node still
  sending the one before it, so none waits or merges;
* no node holds tokens or the key outside a packet, except a waiting node that keeps them (`hold`);
* a waiting node that would not let every packet in flight go by (it holds something, a packet
  carries the key, or in KMTPM enough tokens for its RT; MTPM without a key keeps everything)
  `stops` packets: the driver skips no further than the first arrival of a packet at such a node.
  Every other node passes a packet on in the cycle its last bit arrives, as the rotation does.

Nothing else moves, so a skip of N cycles moves every packet on by N mod P bit positions: `hops`
whole nodes and `rem` bits (the driver splits N mod P); a node's receiver follows the packet its
neighbour sends, and a waiting node's `waited` grows by N. The skip cycle freezes every node's own
logic (a clock enable) and loads these values instead. Registers that hold a copy of the last
packet after it has gone (a sender's token count and key, a receiver's shift register and key bit
while no packet comes in) are left as they were: nothing reads them before the next packet
overwrites them.
"""

from functools import reduce
from operator import and_, or_

from migen import *
from migen.fhdl.decorators import CEInserter

from litex.gen import LiteXModule

from nandlab.gateware.power.common import MODE_PPM, MODE_MTPM, MODE_KMTPM_ATOMIC, MODE_KMTPM_SUB, MODE_NPM


def _all(xs):
    return reduce(and_, xs, C(1))


def _any(xs):
    return reduce(or_, xs, C(0))


class PowerRingSkip(LiteXModule):
    """Skip for the rings `rings` (equal sizes, same configuration): `quiet` when a skip is exact;
    a cycle with `skip` (cycles) non-zero moves packets on by `hops` nodes and `rem` bits."""
    def __init__(self, rings, skip):
        m = len(rings[0].nodes)
        assert all(len(r.nodes) == m for r in rings)
        self.hops  = Signal(max=max(m, 2))     # (skip mod nodes x nbits) // nbits
        self.rem   = Signal(4)                 # (skip mod nodes x nbits) % nbits
        self.quiet = Signal()
        self.stops = []                        # Per node: a waiting node where packets stop (the driver
                                               # skips no further than the first one's arrival).

        # # #

        self.comb += self.quiet.eq(_all(self._quiet(r) for r in rings))
        for r in rings:
            for nd in r.nodes:
                assert not nd.tx_ahead, "the jump moves packets in the send registers, not a registered bit"
                CEInserter()(nd)
                self.comb += nd.ce.eq(skip == 0)
            self.sync += If(skip != 0, *self._rotation(r, skip))

    @staticmethod
    def _settled(nd):
        """The node's registers hold their next values and it grants nothing."""
        return (~nd.oe_q & ~nd.linger & ~nd.grant & (nd.req_q == (nd.request & nd.oi_first & ~nd.oe)) &
                (nd.rt_q == nd.rt_now) & (nd.ppz_q == (nd.oi == nd.ppz_oi)))

    def _quiet(self, ring):
        nds = ring.nodes
        m = len(nds)
        busy = [nd.tx_busy for nd in nds]
        apart = _all(~(busy[i] & busy[(i + 1) % m] & (nds[(i + 1) % m].tx_cnt >= nds[i].tx_cnt)) for i in range(m))
        key_flying = Signal()
        self.comb += key_flying.eq(_any(nd.tx_key for nd in nds))
        most = nds[0].tx_tokens       # The largest packet in flight.
        for nd in nds[1:]:
            bigger = Signal.like(most)
            self.comb += bigger.eq(Mux(nd.tx_tokens > most, nd.tx_tokens, most))
            most = bigger
        mode = ring.mode
        ok = []
        for nd in nds:
            empty = (nd.ht == 0) & ~nd.key
            # A waiting node lets every packet in flight go by: it holds nothing, and no packet
            # carries the key (or, in KMTPM, enough tokens for it).
            passes = empty & Mux((mode == MODE_PPM) | (mode == MODE_MTPM), ~key_flying,
                             Mux((mode == MODE_KMTPM_ATOMIC) | (mode == MODE_KMTPM_SUB), ~key_flying & (most < nd.rt_q),
                             mode == MODE_NPM))
            stops = Signal()
            self.comb += stops.eq(nd.req_q & ~passes)
            self.stops.append(stops)
            ok.append(self._settled(nd) & (empty | (stops & nd.hold)))
        return ring.running & apart & _all(ok)

    def _rotation(self, ring, skip):
        """Statements of the skip cycle: each node takes the packet `hops` nodes and `rem` bits behind it."""
        nds, nbits, rem = ring.nodes, ring.nbits, self.rem
        m = len(nds)

        def landing(src, behind):
            """(condition, bits left) of `src`'s packet landing on the node `hops` ahead (`behind`
            False) or `hops` + 1 ahead (True)."""
            if behind:
                return src.tx_busy & (src.tx_cnt <= rem), src.tx_cnt + nbits - rem
            return src.tx_busy & (src.tx_cnt > rem), src.tx_cnt - rem

        def sender(nd, a, b):
            (ca, na), (cb, nb) = landing(a, False), landing(b, True)
            return If(ca, nd.tx_cnt.eq(na), nd.tx_tok_r.eq(a.tx_tok_r), nd.tx_key_r.eq(a.tx_key_r)
                ).Elif(cb, nd.tx_cnt.eq(nb), nd.tx_tok_r.eq(b.tx_tok_r), nd.tx_key_r.eq(b.tx_key_r)
                ).Else(nd.tx_cnt.eq(0))

        def receiver(nd, a, b):
            # The previous node's new packet: `left` bits still to come, all but the key's and the
            # `left` lowest token bits received.
            def rx(src, left):
                return If(left == nbits, nd.rx_cnt.eq(0)
                    ).Else(nd.rx_cnt.eq(nbits - left), nd.rx_sr.eq(src.tx_tok_r >> left), nd.rx_key_r.eq(src.tx_key_r))
            (ca, na), (cb, nb) = landing(a, False), landing(b, True)
            return If(ca, rx(a, na)).Elif(cb, rx(b, nb)).Else(nd.rx_cnt.eq(0))

        stmts = []
        for j, nd in enumerate(nds):
            cases = {}
            for h in range(m):
                src = lambda k: nds[(j - h - k) % m]
                cases[h] = [sender(nd, src(0), src(1)), receiver(nd, src(1), src(2))]
            stmts += [
                Case(self.hops, cases),
                If(nd.req_q & ~nd.grant & ~nd.oe_q, nd.waited.eq(nd.waited + skip)),
            ]
        return stmts
